#!/usr/bin/env bash
# Remote invocation rates on the MPI backend beside shared memory and raw MPI_Isend/Irecv
# (benchmarks/mpi/mpi_rate.c) under `mpirun -np 2`.  Prints the table; the last line is one
# JSON object.  Needs mpi_rate built: in $BUILD (default build) or in build-mpi (tests/mpi).
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
if ! command -v mpirun >/dev/null; then
  echo '{"benchmark": "mpi_rate", "skipped": "mpirun not found"}'
  exit 0
fi
exe=""
for b in "$BUILD/benchmarks/mpi/mpi_rate" build-mpi/benchmarks-mpi/mpi_rate; do
  [ -x "$b" ] && { exe=$b; break; }
done
if [ -z "$exe" ]; then
  cmake -S tests/mpi -B build-mpi -G Ninja >/dev/null && cmake --build build-mpi --target mpi_rate >/dev/null
  exe=build-mpi/benchmarks-mpi/mpi_rate
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
env -u MPROF_BACKEND mpirun -np 2 --oversubscribe "$exe" "${MPI_RATE_N:-200000}" "${MPI_RATE_SIZE:-32}"
