#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tests/mpi/run_mpi.sh NP PROGRAM [ARGS...]: runs PROGRAM under mpirun with NP processes on this
# machine (as root too, more processes than cores allowed); exit 77 (skipped) without mpirun.
np="$1"
shift
MPIRUN="${MPIRUN:-$(command -v mpirun || command -v mpiexec)}"
if [ -z "$MPIRUN" ]; then
  echo "skipped: mpirun not found (apt-get install openmpi-bin)"
  exit 77
fi
# Shared memory without the single-copy mechanism (containers refuse it, open-mpi/ompi #4948).
export OMPI_MCA_btl_vader_single_copy_mechanism="${OMPI_MCA_btl_vader_single_copy_mechanism:-none}"
export OMPI_MCA_rmaps_base_oversubscribe=1
exec "$MPIRUN" --allow-run-as-root --oversubscribe -np "$np" "$@"
