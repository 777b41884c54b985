#!/usr/bin/env bash
# The measurements still owed on 16 cores, in one call of the device tool, within a deadline.
#
# Here, first:  make demo        (build/workflows/rts.model.json prices the studies' runs: the
#                                 device has no Tcl to fit one)
#               the device setup's packing step (it copies the libraries the programs link,
#               the measuring suite suite.sh and the floor program shm_floor into .device/)
#               benchmarks/device/wheels.sh  (jsonschema's wheels for the device's Python 3.12,
#                                 which the studies' reports need: .device/whl)
# Then the device tool, once: carry ["build", ".device"], timeout_s 600, command
#               bash benchmarks/device/run.sh [--budget SECONDS] [PART ...]
#
# Parts run in the order below (default: all), most wanted first; each gets what is left of
# the budget (default 540 s, under the tool's 600 s limit) and is cut off when it runs out, so
# that whatever finished comes back.  A part that does not fit is skipped and says so.
#   runtime   the suite's micro, msg and weak parts (rt_micro; messaging beside shm_floor;
#             weak scaling at 1-64 PEs, aggregated and not)
#   machine   benchmarks/micro/machine_scaling.py at 1-16 PEs: how far the machine itself lets
#             fixed work per thread scale (copies of noise_floor at once, no runtime) and the
#             weak-scaling command's local fibers alone (no messages), beside the runtime's
#             weak scaling
#   carriers  the same binary with arrived records run from their buffers (MPROF_CARRIERS=1,
#             the default) and as fibers (0), interleaved, 3 runs each: messaging
#             (rt_workload P 0 1000000 16 0) and the weak-scaling command, aggregated (without
#             aggregation the poll makes no carriers), at 2, 8 and 16 PEs
#             (benchmarks/micro/interleave.py)
#   startup   an empty run (rt_workload P 0 0 16 0) at 2, 8 and 16 PEs, bound and unbound,
#             best of 5: how much of the weak-scaling time at 16 PEs is start and end
#   sampler   what the category sampler costs there (a timer signal a PE thread every
#             millisecond): benchmarks/overhead/sampler.py, and the weak-scaling command at 2
#             and 16 PEs with sampling off (MPROF_SAMPLE_US=0) and at the default, interleaved,
#             3 runs each
#   agg       benchmarks/micro/aggregation_scale.py at 2, 4, 8, 16 PEs, bound and unbound:
#             why the buffers went, wakes, fresh buffers against the PE count; bound also at
#             64 and 128 PEs (a thread each: 128 routes records in two hops); at 8 and 16
#             PEs also a busy sender feeding a waiting PE at most every 20, 200 and 1000 us
#             (MPROF_FEED_US), interleaved: fed messages against records per message and time
#   sweeps    the runtime model's sweeps (fit, test, and the 8-PE test set sweep-test8.toml)
#             and PIPE's, into build/workflows/*.db, returned as dbs.tgz
#   spread    benchmarks/micro/replicate_spread.py --groups 2, and the sweeps' own spread;
#             benchmarks/micro/placement.py for 15 s (messaging per band of round trips)
#   apps      the suite's apps part (the applications at 1-16 PEs)
#   studies   the five Chapter 5 studies at --pes 8,16 --size paper --reps 1, cheapest
#             first, until the budget runs out; results (each study's summary.md and
#             summary.json) returned as studies.tgz
# Output under $OUT: run.jsonl (every part's JSON lines, then one {"part", "rc", "s"} line
# each), <part>.log (what each printed besides), dbs.tgz, studies.tgz, and targets.txt (the
# runtime's 16-core targets computed from run.jsonl by benchmarks/device/targets.py).
#
# Back here:  benchmarks/device/collect.sh FILES_AT  (the folder the tool put $OUT's files in):
#   the targets table, the runtime model fitted on the returned sweeps and tested on the 8-PE
#   sweep, PIPE's model, and each returned study's summary, into
#   docs/measurements/sixteen-cores/run-DATE/ (this machine's own sweeps are put back).
set -u
cd "$(dirname "$0")/../.."
self=benchmarks/device/run.sh
# The parts in their order, and the least time worth starting each with.
all=(runtime machine carriers startup sampler agg sweeps spread apps studies)
declare -A need=([runtime]=60 [machine]=15 [carriers]=20 [startup]=10 [sampler]=15 [agg]=30
  [sweeps]=90 [spread]=55 [apps]=60 [studies]=100)
budget=540
parts=()
one=
while [[ $# -gt 0 ]]; do
  case $1 in
    --one) one=$2; shift 2 ;; # internal: run one part's function (under part's timeout)
    --budget) budget=$2; shift 2 ;;
    --budget=*) budget=${1#--budget=}; shift ;;
    *)
      [[ -v need[$1] ]] || { echo "run.sh: unknown part or option '$1'" >&2; exit 2; }
      parts+=("$1"); shift ;;
  esac
done
[[ ${#parts[@]} == 0 ]] && parts=("${all[@]}")
[[ $budget =~ ^[0-9]+$ ]] || { echo "run.sh: --budget takes seconds, not '$budget'" >&2; exit 2; }
[[ -x build/benchmarks/micro/rt_workload ]] || {
  echo "run.sh: no build/benchmarks/micro/rt_workload: run make build first" >&2; exit 2; }

export LD_LIBRARY_PATH=$PWD/.device/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/device-out}
mkdir -p "$OUT"
export OUT
PY=${PYTHON:-python3}
# The device's Python lacks jsonschema, which `mprof report` needs (the studies); the wheels
# come in .device/whl (benchmarks/device/wheels.sh).
if ! "$PY" -c 'import jsonschema' 2>/dev/null && compgen -G '.device/whl/*.whl' >/dev/null; then
  site=$(mktemp -d)
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$site" \
    .device/whl/*.whl && export PYTHONPATH=$site${PYTHONPATH:+:$PYTHONPATH}
fi
start=$SECONDS
left() { echo $((budget - (SECONDS - start))); }

# Runs one part under what is left of the budget, if that is at least its need; its JSON lines
# go to run.jsonl, the rest to its log.
part() {
  local name=$1
  local t0=$SECONDS rem rc
  rem=$(left)
  if ((rem < need[$name])); then
    echo "{\"part\": \"$name\", \"skipped\": \"$rem s left, needs ${need[$name]}\"}" |
      tee -a "$OUT/run.jsonl"
    return
  fi
  timeout --kill-after=5 "$rem" bash "$self" --one "$name" 2>>"$OUT/$name.log" |
    tee -a "$OUT/$name.log" | grep '^{' >> "$OUT/run.jsonl"
  rc=${PIPESTATUS[0]}
  echo "{\"part\": \"$name\", \"rc\": $rc, \"s\": $((SECONDS - t0))}" | tee -a "$OUT/run.jsonl"
}

startup() {
  "$PY" - <<'PY'
import json, os, subprocess, time
for pin in ("1", "0"):
    for p in (2, 8, 16):
        best = None
        for _ in range(5):
            t = time.perf_counter()
            subprocess.run(["build/benchmarks/micro/rt_workload", str(p), "0", "0", "16", "0"],
                           check=True, capture_output=True,
                           env={**os.environ, "MPROF_PIN": pin, "MPROF_OUT": "/dev/null"})
            dt = time.perf_counter() - t
            best = dt if best is None else min(best, dt)
        print(json.dumps({"startup": "rt_workload P 0 0 16 0", "pin": pin, "pes": p,
                          "best_s": round(best, 4)}), flush=True)
PY
}

carriers() {
  local p rc=0
  for p in 2 8 16; do
    "$PY" benchmarks/micro/interleave.py build build --reps 3 --before-env MPROF_CARRIERS=0 \
      --env MPROF_AGG_BYTES=4096 --tag carriers=msg --tag pes=$p --tag agg=4096 \
      -- $p 0 1000000 16 0 || rc=$?
    "$PY" benchmarks/micro/interleave.py build build --reps 3 --before-env MPROF_CARRIERS=0 \
      --env MPROF_AGG_BYTES=4096 --tag carriers=weak --tag pes=$p --tag agg=4096 \
      -- $p 3000000 300000 16 0 || rc=$?
  done
  return $rc
}

machine() { "$PY" benchmarks/micro/machine_scaling.py --pes 1,2,4,8,16 --reps 3; }

sampler() {
  local p rc=0
  "$PY" benchmarks/overhead/sampler.py --reps 11 || rc=$?
  for p in 2 16; do
    "$PY" benchmarks/micro/interleave.py build build --reps 3 --before-env MPROF_SAMPLE_US=0 \
      --env MPROF_AGG_BYTES=4096 --tag sampler=weak --tag pes=$p --tag agg=4096 \
      -- $p 3000000 300000 16 0 || rc=$?
  done
  return $rc
}

agg() {
  "$PY" benchmarks/micro/aggregation_scale.py --pes 2,4,8,16,64,128 --reps 3 --pin 1 &&
    "$PY" benchmarks/micro/aggregation_scale.py --pes 2,4,8,16 --reps 3 --pin 0 &&
    "$PY" benchmarks/micro/aggregation_scale.py --pes 8,16 --reps 3 --pin 1 --feed-us 20,200,1000
}

sweeps() {
  rm -f build/workflows/*.db
  local rc=0
  "$PY" -m mprof bench workflows/rts/sweep-fit.toml workflows/rts/sweep-test.toml \
    workflows/rts/sweep-test8.toml || rc=$?
  # PIPE's last: the runtime model is what the next run on 16 cores is for
  "$PY" -m mprof bench workflows/pipe/sweep-fit.toml workflows/pipe/sweep-test.toml || rc=$?
  tar czf "$OUT/dbs.tgz" build/workflows/*.db
  echo "{\"sweeps_rc\": $rc}"
  return $rc
}

spread() {
  local dbs=() db
  for db in build/workflows/rts-fit.db build/workflows/rts-test.db build/workflows/rts-test8.db; do
    [[ -f $db ]] && dbs+=("$db")
  done
  "$PY" benchmarks/micro/replicate_spread.py --groups 2 --reps 4 ${dbs[@]:+--db "${dbs[@]}"}
  # the runtime's messaging per band of round trips beside the floor's (on the 2-core VM the
  # bands are the host's placements; here, whether the 16-core machine has such bands at all)
  "$PY" benchmarks/micro/placement.py --seconds 15
}

studies() {
  [[ -f build/workflows/rts.model.json ]] || {
    echo "run.sh: no build/workflows/rts.model.json: run make demo before pack.sh" >&2; return 2; }
  local app rc=0 r
  rm -rf /tmp/device-studies
  # Cheapest first (one run each at 1, 8 and 16 PEs: at the paper's size the 1-PE runs take
  # most of the time), so that a cut-off loses the dearest; EM3D's ran on 16 cores before.
  for app in eigenvalue phylogeny cswec tripuzzle em3d; do
    local extra=()
    [[ $app == cswec ]] && extra=(--callgrind-vectors 0) # the device has no valgrind
    "$PY" "benchmarks/$app/experiments/run.py" --pes 8,16 --size paper --reps 1 \
      --out "/tmp/device-studies/studies/$app" --work "/tmp/device-studies/work/$app" \
      "${extra[@]}"
    r=$?
    echo "{\"study\": \"$app\", \"rc\": $r}"
    ((r)) && rc=$r
    # after each study: a cut-off keeps the finished ones
    tar czf "$OUT/studies.tgz" -C /tmp/device-studies studies
  done
  return $rc
}

# The suite and the floor program come from the packing step (with the libraries the programs
# link).
suite() {
  [[ -f .device/suite.sh ]] || {
    echo "run.sh: no .device/suite.sh: pack the suite into .device/ after make build" >&2
    return 2; }
  bash .device/suite.sh "$@"
}
runtime() { suite micro msg weak; }
apps() { suite apps; }

if [[ -n $one ]]; then
  [[ -v need[$one] ]] || { echo "run.sh: unknown part '$one'" >&2; exit 2; }
  "$one"
  exit
fi

echo "{\"cores\": $(nproc), \"budget_s\": $budget, \"parts\": \"${parts[*]}\"}" |
  tee "$OUT/run.jsonl"
for p in "${parts[@]}"; do
  part "$p"
done
# the targets of the runtime's messaging work from what came back (targets.py's header)
"$PY" benchmarks/device/targets.py --markdown "$OUT/run.jsonl" > "$OUT/targets.txt" 2>&1
cat "$OUT/targets.txt"
