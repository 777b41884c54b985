#!/usr/bin/env bash
# Remote invocation rates on the MPI backend beside shared memory and raw MPI_Isend/Irecv
# (benchmarks/mpi/mpi_rate.c) under `mpirun -np 2`.  Prints the table; the last line is one
# JSON object.  Needs mpi_rate built: in $BUILD (default build) or in build-mpi (tests/mpi).
#
# --bind-to none: by default mpirun binds each of the two ranks to a core, and the shared-memory
# rows (two PE threads in rank 0) then ran both threads on one core.  MPIRUN_ARGS adds mpirun
# options, e.g. MPIRUN_ARGS="--mca btl self,tcp" for the TCP transport; MPI_RATE_N (200000),
# MPI_RATE_SIZE (32), MPI_RATE_REPS (5) and MPI_RATE_CASES (all) go to mpi_rate.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
if ! command -v mpirun >/dev/null; then
  echo '{"benchmark": "mpi_rate", "skipped": "mpirun not found"}'
  exit 0
fi
exe=${MPI_RATE:-} # the executable, else the first built of these
for b in "$BUILD/benchmarks/mpi/mpi_rate" build-mpi/benchmarks-mpi/mpi_rate; do
  [ -n "$exe" ] && break
  [ -x "$b" ] && { exe=$b; break; }
done
if [ -z "$exe" ]; then
  cmake -S tests/mpi -B build-mpi -G Ninja >/dev/null && cmake --build build-mpi --target mpi_rate >/dev/null
  exe=build-mpi/benchmarks-mpi/mpi_rate
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# shellcheck disable=SC2086 # MPIRUN_ARGS is a list of options
env -u MPROF_BACKEND mpirun -np 2 --oversubscribe --bind-to none ${MPIRUN_ARGS:-} "$exe" \
  "${MPI_RATE_N:-200000}" "${MPI_RATE_SIZE:-32}"
