#!/usr/bin/env bash
# tests/mpirun.sh NP COMMAND... — runs COMMAND as NP processes with Open MPI's mpirun, for the tests.
#
# mpirun is $MINIDL_MPIRUN (set by ctest to the one CMake found; empty when the build has no MPI), else
# the one on PATH. Without one: exit 77 (ctest: skipped) saying why. --oversubscribe lets NP exceed the
# cores of a small machine; as root (CI), --allow-run-as-root. Each process gets OMP_NUM_THREADS=1 (NP
# processes share the cores; also, the same thread count in every run gives the same sums).
set -u
np=$1
shift
mpirun=${MINIDL_MPIRUN-$(command -v mpirun)}
if [ -z "$mpirun" ] || ! [ -x "$mpirun" ]; then
  echo "SKIPPED: no mpirun (this build has no MPI, or Open MPI is not installed: make deps)"
  exit 77
fi
# vader's single-copy mode (CMA) needs ptrace rights that containers often lack; the tests' messages are
# small, so plain shared-memory copies lose nothing.
flags=(--oversubscribe -x OMP_NUM_THREADS=1 --mca btl_vader_single_copy_mechanism none)
[ "$(id -u)" -eq 0 ] && flags+=(--allow-run-as-root)
exec "$mpirun" "${flags[@]}" -np "$np" "$@"
