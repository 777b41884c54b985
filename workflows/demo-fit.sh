#!/usr/bin/env bash
# Small end-to-end demo of the modelling workflow on the runtime alone:
# sweep rt_workload (fit and test sets on 2 PEs, interleaved), instantiate runtime/rts.perf,
# print the Fig 4.10-style result and the saved model.  Needs `make build` first.
# Resumable: points already in build/workflows/*.db are not run again.
set -euo pipefail
cd "$(dirname "$0")/.."
MPROF=${MPROF:-mprof}
if [ ! -x build/benchmarks/micro/rt_workload ]; then
  echo "demo-fit: build/benchmarks/micro/rt_workload is missing; run 'make build' first" >&2
  exit 1
fi
"$MPROF" bench workflows/rts/sweep-fit.toml workflows/rts/sweep-test.toml
"$MPROF" fit workflows/rts/model.tcl
"$MPROF" model show build/workflows/rts.model.json
"$MPROF" model export-c build/workflows/rts.model.json -o build/workflows/rts-model-c
