#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# scripts/test_valgrind.sh: the valgrind (memcheck) step of CI, on an existing build (default
# build/, RelWithDebInfo): representative unit tests (core, engine, public API, error and
# out-of-memory paths), the compliance suite's exec/, control/ and movement/ groups on the c
# backend, then the whole suite. Any memcheck error or definite leak fails.
# valgrind has no AVX-512, so the c backend runs its AVX2 (or scalar) kernels here.
#
# Usage: scripts/test_valgrind.sh [BUILD_DIR]   (installs valgrind with apt-get when missing)
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
if [ ! -x "$build/cml" ]; then
  echo "test_valgrind: $build/cml not found: build first (scripts/build.sh $build)" >&2
  exit 2
fi
scripts/setup.sh valgrind >/dev/null

# --fair-sched=yes: the thread pool's workers get their turns (valgrind runs one thread at a time).
vg=(valgrind -q --error-exitcode=9 --leak-check=full --errors-for-leak-kinds=definite
    --show-leak-kinds=definite --fair-sched=yes)
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
tests=(base_test shape_infer_test builder_test buffer_test executable_test registry_test
       c_engine_test c_plan_test c_opt_test api_runtime_test api_errors_test api_models_test oom_test)
for t in "${tests[@]}"; do
  bin="$build/tests/$t"
  if [ ! -x "$bin" ]; then
    echo "test_valgrind: $bin not built" >&2
    exit 2
  fi
  echo "-- valgrind: $t"
  if ! "${vg[@]}" "$bin" >"$log" 2>&1; then
    cat "$log"
    echo "test_valgrind: $t failed under valgrind" >&2
    exit 1
  fi
  tail -n 1 "$log"
done
echo "-- valgrind: cml test --backend c --op '^(exec|control|movement)/'"
"${vg[@]}" "$build/cml" test --backend c --op '^(exec|control|movement)/'
echo "-- valgrind: cml test --backend c (whole suite)"
"${vg[@]}" "$build/cml" test --backend c
echo "test_valgrind: no memcheck errors, no definite leaks"
