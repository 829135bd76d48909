#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tests/mpi/train_resume.sh NP PROGRAM [ARGS...]: runs examples/train_distributed (PROGRAM) under
# mpirun with NP processes and a checkpoint every 25 steps, killed (SIGKILL) after step 60; then
# runs it again, which must resume at step 51 from the checkpoint of step 50 and still match the
# single-device reference step by step (the program's own check). Exit 77 without mpirun.
np="$1"
prog="$2"
shift 2
here="$(dirname "$0")"
ckpt="train_resume_$$.ckpt"
rm -f "$ckpt"
sh "$here/run_mpi.sh" "$np" "$prog" --checkpoint "$ckpt" --kill-at 60 "$@" >/dev/null 2>&1
rc=$?
if [ "$rc" = 77 ]; then exit 77; fi
if [ "$rc" = 0 ] || [ ! -f "$ckpt" ]; then
  echo "FAIL: the first run was not killed at step 60 (exit $rc) or left no checkpoint"
  rm -f "$ckpt"
  exit 1
fi
out="$(sh "$here/run_mpi.sh" "$np" "$prog" --checkpoint "$ckpt" "$@")"
rc=$?
rm -f "$ckpt"
echo "$out"
if [ "$rc" != 0 ]; then exit "$rc"; fi
if ! printf '%s\n' "$out" | grep -q '^step  51 '; then
  echo "FAIL: the second run did not resume at step 51"
  exit 1
fi
echo "resumed at step 51 and matched the single-device reference"
