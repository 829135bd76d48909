#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs every test (the README's test command; CI runs it through .ci/run on a clean clone).
# Each step is labelled "== [N/M] name" and timed; all steps run even when one fails, and a
# summary at the end lists each step's result and time (docs/testing.md describes the steps).
#   1 build + ctest        RelWithDebInfo, -Werror (build/): unit tests, mpi tests, examples, compliance
#                          suite on c, c:reference, c:avx512=false and the forced-scalar
#                          c:avx512=false,avx2=false (ctest entry compliance_c_scalar)
#   2 scalar via env       the compliance suite with GOMLX_SIMD_AVX512=0 GOMLX_SIMD_AVX2=0
#   3 install              install, then build programs against the installed headers
#   4 asan+ubsan           CMake preset asan (build-asan/): all ctest entries
#   5 tsan                 scripts/test_tsan.sh (build-tsan/): thread-related tests
#   6 valgrind             scripts/test_valgrind.sh build: memcheck on a few tests
#   7 clang                scripts/test_clang.sh (build-clang/): clang -Werror build + tests
#   8 xla:cpu              scripts/test_xla.sh build: SKIPPED without network
#   9 wasm                 scripts/test_wasm.sh: the c backend built for wasm32-wasi, compliance
#                          suite in Node, the MLP example, the browser page (SKIPPED without
#                          the toolchain)
#  10 format               scripts/check_format.sh: sources match .clang-format
#  11 fuzz                 scripts/fuzz.sh (build-fuzzing/, clang + libFuzzer + ASan/UBSan):
#                          every fuzz target for CML_FUZZ_SECONDS (default 60) seconds from the
#                          checked-in corpus; fails on a crash or invariant violation (SKIPPED
#                          only when clang with libFuzzer cannot be installed)
# Steps 1 and 4 leave out the ctest entries labelled `device` (xla_e2e_test, differential): they
# need the XLA CPU plugin, and step 8 runs them once it is installed (on a new machine it is not
# there before step 8, and they would skip anyway).
# CML_TEST_STEPS="1 4" runs only the listed steps (a quick local subset; step 2 and later steps
# need step 1's build/).
set -uo pipefail
cd "$(dirname "$0")/.."

# Disk. A whole run writes several GB (7.3 GB in the clone before debug sections were
# compressed): the build directories of steps 1, 4, 5, 7, 9 and 11 (build-asan/ the largest,
# about 4.3 GB), the XLA plugin, the packages the steps install, the tests' temporary files. A
# machine has been seen with a few hundred MB free, and every step then failed on "No space left
# on device".
# When the repository's file system has less than CML_TEST_MIN_FREE_MB (default 10000) free:
#   1. apt's and pip's download caches are emptied (caches only; nothing installed goes);
#   2. if still short, and the tmpfs /dev/shm has CML_TEST_SHM_MB (default 6000) free, the build
#      directories not yet made here and TMPDIR go there (build-* become links into it; all of
#      it is removed at the end);
#   3. each step's own build directory, made by this run, is removed once the step is done
#      (build/ stays: steps 2, 3, 6 and 8 use it).
# The free space is printed at the start and with the summary.
free_mb() { df -Pm "$1" 2>/dev/null | awk 'NR == 2 { print $4; found = 1 } END { if (!found) print 0 }'; }
need_mb="${CML_TEST_MIN_FREE_MB:-10000}"
shm_need_mb="${CML_TEST_SHM_MB:-6000}"  # build/ + the largest step's build + TMPDIR
low_disk=0
scratch=""
made_dirs=()
echo "test: free space: $(free_mb .) MB here, $(free_mb "${TMPDIR:-/tmp}") MB in ${TMPDIR:-/tmp}," \
  "$(free_mb /dev/shm) MB in /dev/shm (a run needs about ${need_mb} MB)"
if [ "$(free_mb .)" -lt "$need_mb" ]; then
  low_disk=1
  SUDO=""
  [ "$(id -u)" = 0 ] || SUDO="sudo -n"
  if command -v apt-get >/dev/null 2>&1; then $SUDO apt-get clean 2>/dev/null || true; fi
  python3 -m pip cache purge >/dev/null 2>&1 || true
  echo "test: short of disk: emptied apt's and pip's download caches: $(free_mb .) MB free now"
fi
if [ "$low_disk" = 1 ]; then
  for dir in build build-asan build-tsan build-clang build-wasm build-fuzzing; do
    [ -L "$dir" ] && [ ! -e "$dir" ] && rm -f "$dir"  # left by a run that was killed
    [ -e "$dir" ] || made_dirs+=("$dir")
  done
  if [ "$(free_mb .)" -lt "$need_mb" ] && [ "$(free_mb /dev/shm)" -ge "$shm_need_mb" ] &&
     scratch="$(mktemp -d /dev/shm/cml-test.XXXXXX 2>/dev/null)"; then
    for dir in "${made_dirs[@]}"; do
      mkdir "$scratch/$dir" && ln -s "$scratch/$dir" "$dir"
    done
    mkdir -p "$scratch/tmp"
    export TMPDIR="$scratch/tmp"
    echo "test: short of disk: ${made_dirs[*]} and TMPDIR are in $scratch (memory)"
  fi
fi
# prune DIR: removes a build directory this run made, once its step is done (short of disk).
prune() {
  [ "$low_disk" = 1 ] || return 0
  local dir
  for dir in "${made_dirs[@]}"; do
    if [ "$dir" = "$1" ]; then
      if [ -L "$dir" ]; then rm -rf "$(readlink "$dir")" "$dir"; else rm -rf "$dir"; fi
      return 0
    fi
  done
}
cleanup_disk() {
  if [ -n "$scratch" ]; then
    local dir
    for dir in "${made_dirs[@]}"; do [ -L "$dir" ] && rm -f "$dir"; done
    rm -rf "$scratch"
  fi
}
trap cleanup_disk EXIT

scripts/setup.sh || exit 1

# MPI for the multi-process tests (ctest label "mpi", run by steps 1 and 4 under mpirun -np 2
# and 4): openmpi-bin and libopenmpi-dev with apt-get when missing. Without them the library
# builds without MPI and those tests are not there (said here, not an error).
ensure_mpi() {
  if command -v mpirun >/dev/null 2>&1 && command -v mpicc >/dev/null 2>&1; then
    return 0
  fi
  local SUDO=""
  [ "$(id -u)" = 0 ] || SUDO="sudo"
  if ! command -v apt-get >/dev/null 2>&1 || { [ -n "$SUDO" ] && ! command -v sudo >/dev/null 2>&1; }; then
    echo "test: MPI is missing and apt-get cannot install it: the mpi tests are left out"
    return 0
  fi
  echo "test: installing openmpi-bin libopenmpi-dev (the mpi tests)"
  if ! { $SUDO apt-get update -qq &&
         DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq openmpi-bin libopenmpi-dev; }; then
    echo "test: apt-get could not install MPI: the mpi tests are left out"
  fi
}
ensure_mpi
jobs="${JOBS:-$(nproc 2>/dev/null || echo 2)}"
export JOBS="$jobs"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}"

steps_total=11
summary=()
failed=0
log="$(mktemp)"
trap 'rm -f "$log"; cleanup_disk' EXIT

# step N NAME COMMAND...: runs the command, streams its output, records PASS/FAIL/SKIPPED and
# the wall time.
step() {
  local n="$1" name="$2"
  shift 2
  if [ -n "${CML_TEST_STEPS:-}" ] && ! grep -qw "$n" <<<"$CML_TEST_STEPS"; then
    return 0
  fi
  echo
  echo "== [$n/$steps_total] $name"
  local start=$SECONDS result rc
  "$@" 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  if [ "$rc" -ne 0 ]; then
    result=FAIL
    failed=1
  elif grep -q "^SKIPPED: " "$log"; then
    result=SKIPPED
  else
    result=PASS
  fi
  local took=$((SECONDS - start))
  echo "== [$n/$steps_total] $name: $result (${took}s)"
  summary+=("$(printf '  [%d] %-16s %-8s %4ds' "$n" "$name" "$result" "$took")")
}

build_and_ctest() {
  scripts/build.sh build -DCML_WERROR=ON && (cd build && ctest --output-on-failure -j"$jobs" -LE device)
}

# The environment variables must select the scalar kernels, as the config keys do.
scalar_by_env() {
  local info
  info="$(GOMLX_SIMD_AVX512=0 GOMLX_SIMD_AVX2=0 build/cml info --backend c)" || return 1
  echo "$info"
  if ! grep -q "config: c:.*avx512=false,avx2=false" <<<"$info"; then
    echo "test: GOMLX_SIMD_AVX512=0 GOMLX_SIMD_AVX2=0 did not turn the SIMD kernels off" >&2
    return 1
  fi
  GOMLX_SIMD_AVX512=0 GOMLX_SIMD_AVX2=0 build/cml test --backend c
}

asan() {
  cmake --preset asan >/dev/null && cmake --build --preset asan -j"$jobs" &&
    ctest --preset asan -j"$jobs" -LE device
}

# Installs clang and libFuzzer itself (exit status 2 of fuzz.sh: they cannot be installed).
fuzz() {
  local rc=0
  scripts/fuzz.sh --install-only || rc=$?
  if [ "$rc" -eq 2 ]; then
    echo "SKIPPED: clang with libFuzzer (libclang-rt-<version>-dev) cannot be installed here"
    return 0
  fi
  [ "$rc" -eq 0 ] || return "$rc"
  scripts/fuzz.sh -t "${CML_FUZZ_SECONDS:-60}" -j "$jobs"
}

start_all=$SECONDS
step 1 "build + ctest" build_and_ctest
step 2 "scalar via env" scalar_by_env
step 3 "install" scripts/test_install.sh build
step 4 "asan+ubsan" asan
prune build-asan
step 5 "tsan" scripts/test_tsan.sh
prune build-tsan
step 6 "valgrind" scripts/test_valgrind.sh build
step 7 "clang" scripts/test_clang.sh
prune build-clang
# After the c-backend steps: it may download the plugin, and the c backend is its reference.
step 8 "xla:cpu" scripts/test_xla.sh build
step 9 "wasm" scripts/test_wasm.sh
prune build-wasm
step 10 "format" scripts/check_format.sh
step 11 "fuzz" fuzz
prune build-fuzzing

echo
echo "== summary ($((SECONDS - start_all))s in all; $(free_mb .) MB free here at the end)"
printf '%s\n' "${summary[@]}"
if [ "$failed" -ne 0 ]; then
  echo "== FAILED"
  exit 1
fi
echo "== all tests passed"
