#!/usr/bin/env bash
# `make bench`: runs every benchmark and prints its figures; the last line of each block is
# one JSON object.  Ratios are measured inside each benchmark's own run (see the sources).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}

echo "== runtime micro-benchmarks (benchmarks/micro/rt_micro.c)"
"$BUILD/benchmarks/micro/rt_micro"
echo "== spawn + dispatch, callgrind instructions per fiber (benchmarks/micro/spawn_instructions.py)"
python benchmarks/micro/spawn_instructions.py --micro "$BUILD/benchmarks/micro/rt_micro"
echo "== remote invocation, callgrind instructions per operation (benchmarks/micro/invoke_instructions.py)"
python benchmarks/micro/invoke_instructions.py --workload "$BUILD/benchmarks/micro/rt_workload" \
  --floor "$BUILD/benchmarks/micro/msg_floor"

if [ -f benchmarks/iface/hook_cost.py ]; then
  echo "== statistic hook cost, callgrind instructions (benchmarks/iface/hook_cost.py)"
  python benchmarks/iface/hook_cost.py
fi
if [ -f benchmarks/fit/fit_bench.py ]; then
  echo "== SVD fit of 100,000 samples x 30 parameters (benchmarks/fit/fit_bench.py)"
  python benchmarks/fit/fit_bench.py
fi
if [ -x benchmarks/mpi/bench.sh ]; then
  echo "== MPI backend"
  benchmarks/mpi/bench.sh
fi

echo "== aggregation at many destinations, a thread per PE (benchmarks/micro/aggregation_scale.py)"
python benchmarks/micro/aggregation_scale.py --workload "$BUILD/benchmarks/micro/rt_workload"

echo "== work against PEs: em3d and tripuzzle at 1-16 PEs, callgrind instructions (benchmarks/apps/work_inflation.py)"
python benchmarks/apps/work_inflation.py --build "$BUILD" --pes 1,4,16 --app em3d
python benchmarks/apps/work_inflation.py --build "$BUILD" --pes 1,4,16 --app tripuzzle

echo "== replicate spread of identical runs beside a plain C loop's (benchmarks/micro/replicate_spread.py)"
db_args=()
for db in "$BUILD/workflows/rts-fit.db" "$BUILD/workflows/rts-test.db"; do
  [ -f "$db" ] && db_args+=("$db") # the sweeps of `make demo`, when it ran
done
python benchmarks/micro/replicate_spread.py --build "$BUILD" ${db_args[@]+--db "${db_args[@]}"}

echo "== messaging costs against the host's placement of two threads (benchmarks/micro/placement.py)"
if [ "$(nproc)" -ge 2 ]; then # a round trip needs two threads on CPUs of their own
  python benchmarks/micro/placement.py --build "$BUILD" --seconds 60
fi

echo "== the machine's own weak scaling up to its cores (benchmarks/micro/machine_scaling.py)"
cores=$(nproc)
pes=1; p=2
while [ "$p" -le "$cores" ]; do pes="$pes,$p"; p=$((p * 2)); done
python benchmarks/micro/machine_scaling.py --build "$BUILD" --pes "$pes"

echo "== more PEs than cores: PIPE at 2/4/8 PEs, local fibers, 64/1024 PEs start-up (benchmarks/oversub/oversub.py)"
python benchmarks/oversub/oversub.py --pipe "$BUILD/benchmarks/pipe/pipe" \
  --workload "$BUILD/benchmarks/micro/rt_workload"

echo "== memory and time against PEs: rt_workload at 32-1024 PEs (benchmarks/memory/pes_memory.py)"
python benchmarks/memory/pes_memory.py --workload "$BUILD/benchmarks/micro/rt_workload"

echo "== statistics and latency accounting overhead, callgrind instructions (benchmarks/overhead/overhead.py)"
python benchmarks/overhead/overhead.py --build "$BUILD"
echo "== the category sampler's cost, CPU time of PIPE with sampling off / on (benchmarks/overhead/sampler.py)"
python benchmarks/overhead/sampler.py --pipe "$BUILD/benchmarks/pipe/pipe"
if [ -f benchmarks/gate/gate_bench.py ]; then
  # quick: 3 detection + 5 A/A trials; GATE_BENCH=full: the targets' 10 + 100 (10-30 min)
  echo "== mprof gate: detection of a 10 % slower lookup, A/A false alarms (benchmarks/gate/gate_bench.py)"
  if [ "${GATE_BENCH:-quick}" = full ]; then
    python benchmarks/gate/gate_bench.py
  else
    python benchmarks/gate/gate_bench.py --quick
  fi
fi
echo "== PIPE held-out error: mprof beside Extra-P (benchmarks/exports/extrap_vs_mprof.py)"
python benchmarks/exports/extrap_vs_mprof.py
echo "== OTF2 tracing: cost when off and when on (benchmarks/trace/trace_overhead.py)"
python benchmarks/trace/trace_overhead.py
