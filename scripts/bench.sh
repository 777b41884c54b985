#!/usr/bin/env bash
# `make bench`: runs every benchmark and prints its figures; the last line of each block is
# one JSON object.  Ratios are measured inside each benchmark's own run (see the sources).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}

echo "== runtime micro-benchmarks (benchmarks/micro/rt_micro.c)"
"$BUILD/benchmarks/micro/rt_micro"

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
echo "== PIPE held-out error: mprof beside Extra-P (benchmarks/exports/extrap_vs_mprof.py)"
python benchmarks/exports/extrap_vs_mprof.py
echo "== OTF2 tracing: cost when off and when on (benchmarks/trace/trace_overhead.py)"
python benchmarks/trace/trace_overhead.py
