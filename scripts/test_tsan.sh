#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# scripts/test_tsan.sh: the ThreadSanitizer step of CI. Builds the CMake preset `tsan` (into
# build-tsan/, only the thread-related targets), then runs under TSan, stopping at the first report:
#   - the thread-related unit tests (ctest --preset tsan: thread pool, engine, plan, optimizer,
#     concurrent executes, concurrent builders, concurrent registration),
#   - the compliance suite's exec/ and control/ groups on the c backend,
#   - the collective cases on c:devices=4 (device slots on threads, the rendezvous),
#   - the whole compliance suite on c:threads=4 (more workers than cores: kernels split work).
# Exit status: non-zero on a build failure, a test failure or any TSan report.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs="${JOBS:-$(nproc 2>/dev/null || echo 2)}"
build=build-tsan

cmake --preset tsan >/dev/null
cmake --build --preset tsan -j"$jobs"

export TSAN_OPTIONS="${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}"
# GCC 12's TSan runtime cannot start on kernels with a large mmap randomization
# (vm.mmap_rnd_bits > 28): "FATAL: ThreadSanitizer: unexpected memory mapping". Then run the
# tests with address randomization off (setarch -R), which such runtimes need.
wrap=()
probe="$("$build/cml" info --backend c 2>&1 >/dev/null || true)"
if grep -q "unexpected memory mapping" <<<"$probe"; then
  if setarch "$(uname -m)" -R true 2>/dev/null; then
    echo "test_tsan: this kernel's mmap randomization breaks TSan; running under setarch -R"
    wrap=(setarch "$(uname -m)" -R)
  else
    echo "test_tsan: TSan cannot start here (mmap randomization) and setarch -R is refused:" >&2
    echo "$probe" >&2
    echo "test_tsan: run 'sysctl vm.mmap_rnd_bits=28' as root, then rerun" >&2
    exit 1
  fi
fi

echo "-- tsan: thread-related unit tests"
"${wrap[@]}" ctest --preset tsan -j"$jobs"
echo "-- tsan: cml test --backend c --op '^(exec|control)/'"
"${wrap[@]}" "$build/cml" test --backend c --op '^(exec|control)/'
echo "-- tsan: cml test --backend c:devices=4,threads=2 --op collective (SPMD slots and rendezvous)"
"${wrap[@]}" "$build/cml" test --backend c:devices=4,threads=2 --op collective
echo "-- tsan: cml test --backend c:threads=4 (whole suite)"
"${wrap[@]}" "$build/cml" test --backend c:threads=4
echo "test_tsan: no data races reported"
