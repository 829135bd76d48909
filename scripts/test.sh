#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs every test: unit tests, examples and the compliance suite on the c backend (ctest), the
# same built with AddressSanitizer + UndefinedBehaviorSanitizer, and the compliance suite on
# xla:cpu when the XLA CPU plugin is (or can be) installed.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
jobs="$(nproc 2>/dev/null || echo 2)"

echo "== build and test (RelWithDebInfo, -Werror)"
scripts/build.sh build -DCML_WERROR=ON
(cd build && ctest --output-on-failure -j"$jobs")

echo "== install, then build programs against the installed headers"
scripts/test_install.sh build

echo "== build and test under ASan + UBSan"
scripts/build.sh build-asan -DCMAKE_BUILD_TYPE=Debug -DCML_ENABLE_ASAN=ON -DCML_WERROR=ON
(cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
  ctest --output-on-failure -j"$jobs")

if [ -x scripts/test_xla.sh ]; then
  echo "== xla:cpu"
  scripts/test_xla.sh build
fi
echo "== all tests passed"
