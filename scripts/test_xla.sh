#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# scripts/test_xla.sh: the xla:cpu part of CI. Installs XLA's CPU PJRT plugin when it is missing
# (`BUILD_DIR/cml install cpu`), then runs the compliance suite on xla:cpu, the xla ctest entries
# and the differential test (c vs xla:cpu, docs/differential.md).
#
# Usage: scripts/test_xla.sh [BUILD_DIR]     (default: build; BUILD_DIR must be built already)
#
# Exit status: 0 when everything passed, or when the plugin is missing and cannot be installed
# for lack of network, python3 or pip (a SKIPPED message says why: CI does not go red for lack of
# network); non-zero when any test fails, or when the install fails for another reason (e.g. a
# checksum mismatch).
set -uo pipefail
cd "$(dirname "$0")/.."
build_dir="${1:-build}"
cml="$build_dir/cml"
if [ ! -x "$cml" ]; then
  echo "test_xla: $cml not found: build first (scripts/build.sh $build_dir)" >&2
  exit 2
fi

echo "== xla:cpu: the CPU PJRT plugin"
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
if "$cml" install cpu >"$log" 2>&1; then
  echo "plugin: $(tail -n 1 "$log")"
else
  cat "$log" >&2
  # The installer says UNAVAILABLE with "no network?" when pip download fails, "could not run"
  # when python3 or pip is missing, and "did not finish within" when pip download hangs; those
  # skip. Anything else (checksum mismatch, a plugin
  # that fails to load, a full disk) is a failure.
  if grep -qE "failed \(exit [0-9]+; no network\?\)|could not run|is python3 with pip installed|-m pip download.* did not finish within" \
      "$log"; then
    echo "SKIPPED: xla:cpu tests: the XLA CPU plugin is not installed and cannot be installed" \
         "here (no network, python3 or pip; see above)"
    exit 0
  fi
  echo "test_xla: installing the XLA CPU plugin failed (see above)" >&2
  exit 1
fi

# From here on nothing downloads: the plugin is there, and tests must pass.
export GOMLX_NO_AUTO_INSTALL=1
status=0

echo "== xla:cpu: compliance suite (cml test --backend xla:cpu)"
if ! "$cml" test --backend xla:cpu; then
  echo "test_xla: the compliance suite failed on xla:cpu" >&2
  status=1
fi

echo "== xla:cpu: ctest entries (ctest -R xla)"
if ! (cd "$build_dir" && ctest --output-on-failure -R xla); then
  echo "test_xla: xla ctest entries failed" >&2
  status=1
fi

# Run directly rather than through ctest, which counts its "skipped" exit (77) as a pass: with
# the plugin installed the differential test must really run.
diff_test="$build_dir/tests/differential/diff_test"
if [ -x "$diff_test" ]; then
  echo "== xla:cpu: differential test (c vs xla:cpu)"
  "$diff_test"
  rc=$?
  if [ "$rc" -ne 0 ]; then
    echo "test_xla: the differential test failed (exit $rc)" >&2
    status=1
  fi
else
  echo "test_xla: $diff_test not built (needs CML_BACKEND_CPU and CML_BACKEND_XLA)" >&2
  status=1
fi

if [ "$status" -eq 0 ]; then
  echo "== xla:cpu: all passed"
fi
exit "$status"
