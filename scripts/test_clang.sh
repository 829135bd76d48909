#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# scripts/test_clang.sh: the clang step of CI. Builds everything (library, tests, examples, tools,
# benchmarks) with clang and -Werror (CMake preset `clang`, into build-clang/), then runs the unit
# tests, the examples and the compliance suite on the c backend once (ctest --preset clang leaves
# out the compliance_c_* variants, which the gcc build runs, and the `device` entries, which need
# the XLA plugin). It catches code only one compiler accepts (e.g. glibc's CMPLX, gcc-only).
# Installs clang with apt-get when missing.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs="${JOBS:-$(nproc 2>/dev/null || echo 2)}"
scripts/setup.sh clang >/dev/null
echo "-- clang: $(clang --version | head -n 1)"
cmake --preset clang >/dev/null
cmake --build --preset clang -j"$jobs"
ctest --preset clang -j"$jobs"
