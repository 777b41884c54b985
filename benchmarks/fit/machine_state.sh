#!/usr/bin/env bash
# Which state is the machine in, and how much does it matter?  A loop of: a 2-thread
# cache-line ping-pong (mean round trip), rt_workload on 1 PE without messages, and two
# rt_workload runs on 2 PEs (aggregated; unaggregated 512-byte records).  One JSON object per
# round: busy CPU seconds (CPU less idle CPU) per PE.  docs/fitting.md ("Sweeps on a shared
# machine") reads it.  Needs `make build`.
#   benchmarks/fit/machine_state.sh [ROUNDS]        (default 40)
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${1:-40}
WORKLOAD=build/benchmarks/micro/rt_workload
[ -x "$WORKLOAD" ] || { echo "machine_state: $WORKLOAD missing; run 'make build'" >&2; exit 1; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
cc -O2 -pthread -o "$TMP/pingpong" benchmarks/fit/pingpong.c
PY=${PYTHON:-.venv/bin/python}
busy() {  # busy CPU seconds per PE of the profile in $TMP/run.json, as a JSON list
  "$PY" -c 'import json,sys; d=json.load(open(sys.argv[1]))
print(json.dumps([round(p["cpu_s"] - p["idle_cpu_s"], 4) for p in d["pes"]]))' "$TMP/run.json"
}
run() {  # AGG_BYTES ARGS...
  MPROF_AGG_BYTES=$1 MPROF_OUT="$TMP/run.json" "$WORKLOAD" "${@:2}" >/dev/null
  busy
}
for ((i = 0; i < ROUNDS; i++)); do
  pp=$("$TMP/pingpong")
  local1=$(run 0 1 3000000 0 16 0)
  agg=$(run 4096 2 3000000 300000 16 0)
  big=$(run 0 2 12000000 1200000 512 0)
  echo "{\"t\": \"$(date +%T)\", \"roundtrip_ns\": $pp, \"local_1pe\": $local1," \
       "\"agg_2pe\": $agg, \"unagg512_2pe\": $big}"
done
