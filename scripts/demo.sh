#!/usr/bin/env bash
# `make demo`: the whole workflow on the embedded default (shared memory, SQLite):
#   1. sweep the runtime workload into profile databases (fit set on 2 and 4 PEs, test on 3),
#   2. instantiate the runtime's cost model by SVD with the Tcl modeling script,
#   3. run PIPE once and report its cost profile and latency profile with that model.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
mkdir -p "$BUILD/workflows"

echo "== 1. benchmark sweeps (resumable: points already recorded are skipped)"
mprof bench workflows/rts/sweep-fit.toml
mprof bench workflows/rts/sweep-test.toml

echo
echo "== 2. cost-model instantiation (workflows/rts/model.tcl)"
mprof fit workflows/rts/model.tcl

if [ -x "$BUILD/benchmarks/pipe/pipe" ]; then
  echo
  echo "== 3. PIPE: 4 PEs, M=1000 N=10 T=100 F=15, 100-byte elements, 1000-byte aggregation"
  MPROF_OUT="$BUILD/workflows/pipe-demo.json" "$BUILD/benchmarks/pipe/pipe" 4 1000 10 100 15 100 1000
  if mprof report --help >/dev/null 2>&1; then
    mprof report "$BUILD/workflows/pipe-demo.json" --model "$BUILD/workflows/rts.model.json"
  else
    echo "run profile written to $BUILD/workflows/pipe-demo.json"
  fi
fi
