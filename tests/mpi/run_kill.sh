#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tests/mpi/run_kill.sh NP PROGRAM: the killed-process scenario. PROGRAM's last process kills
# itself (SIGKILL) in the middle of a loop of SPMD executions; mpirun runs with
# --enable-recovery so that it leaves the others alive, and each of them must report a status
# (DEADLINE_EXCEEDED after CML_MPI_TIMEOUT_MS, or FAILED_PRECONDITION from the notice of a
# survivor that timed out first) and exit by itself within seconds, not hang.
# Exit 77 (skipped) without mpirun.
np="$1"
program="$2"
MPIRUN="${MPIRUN:-$(command -v mpirun || command -v mpiexec)}"
if [ -z "$MPIRUN" ]; then
  echo "skipped: mpirun not found (apt-get install openmpi-bin)"
  exit 77
fi
export OMPI_MCA_btl_vader_single_copy_mechanism="${OMPI_MCA_btl_vader_single_copy_mechanism:-none}"
export CML_MPI_TIMEOUT_MS=2000
log="$(mktemp)"
start=$(date +%s)
timeout 60 "$MPIRUN" --allow-run-as-root --oversubscribe --enable-recovery -np "$np" \
  "$program" kill >"$log" 2>&1
rc=$?
took=$(($(date +%s) - start))
cat "$log"
stopped=$(grep -Ec "stopped after .* with status (DEADLINE_EXCEEDED|FAILED_PRECONDITION)" "$log")
rm -f "$log"
echo "run_kill.sh: mpirun exit $rc after ${took} s; $stopped of $((np - 1)) surviving processes reported a status"
if [ "$rc" -eq 124 ] || [ "$took" -ge 30 ]; then
  echo "FAILED: the surviving processes did not stop within 30 s"
  exit 1
fi
if [ "$stopped" -ne $((np - 1)) ]; then
  echo "FAILED: expected $((np - 1)) processes to report a status"
  exit 1
fi
exit 0
