#!/usr/bin/env bash
# The five Chapter 5 studies (Wen 1995, section 5.1) at the given PE counts and size, then
# README.md's applications section from their summaries (benchmarks/common/readme.py).
#
#   benchmarks/studies.sh [--pes 8,16] [--size small|paper] [--flush default,4:0] [--only APP,...]
#
# Every other option goes to every study (e.g. --reps 3).  Defaults: --pes 2 --size small.
# On a machine with 16 cores: `benchmarks/studies.sh --pes 8,16 --size paper` (`make studies
# PES=8,16 SIZE=paper`).  Each study builds its program and, when missing, the runtime's cost
# model (build/workflows/rts.model.json, as `make demo` makes it).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-.venv/bin/python}
only="em3d,tripuzzle,eigenvalue,phylogeny,cswec"
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --only) only="$2"; shift 2 ;;
    --only=*) only="${1#--only=}"; shift ;;
    *) args+=("$1"); shift ;;
  esac
done
for app in ${only//,/ }; do
  if [ ! -f "benchmarks/$app/experiments/run.py" ]; then
    echo "studies.sh: no study '$app' (em3d, tripuzzle, eigenvalue, phylogeny, cswec)" >&2
    exit 2
  fi
done
for app in ${only//,/ }; do
  echo "== $app"
  "$PYTHON" "benchmarks/$app/experiments/run.py" "${args[@]}"
done
"$PYTHON" benchmarks/common/readme.py
