#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# scripts/fuzz.sh: builds the libFuzzer targets of tests/fuzz/ with clang
# (-fsanitize=fuzzer,address,undefined) and runs each for N seconds.
#
#   scripts/fuzz.sh [-t SECONDS] [-j JOBS] [--merge] [--install-only] [target ...]
#
# Targets: shape_parse dtype_name backend_config graph (default: all). Each run starts from the
# checked-in corpus tests/fuzz/corpus/<target>/ (read-only) plus a work corpus in the build
# directory. Crashes, leaks and invariant violations stop the run and leave the input in
# <build>/fuzz-artifacts/<target>/; replay one with `<build>/tests/fuzz/fuzz_<target> FILE`.
# --merge adds the inputs that bring new coverage to the checked-in corpus (keep it small).
# --install-only installs clang and libFuzzer when missing and stops. Exit status: 0 when every
# run ended cleanly, 1 when a target found a problem (or the build failed), 2 when clang with
# libFuzzer is missing and cannot be installed (scripts/test.sh then reports SKIPPED).
# Environment: CML_FUZZ_BUILD_DIR (default build-fuzzing), CC (default clang).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
seconds=60
jobs=2
merge=0
install_only=0
targets=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    -t) seconds=$2; shift 2 ;;
    -j) jobs=$2; shift 2 ;;
    --merge) merge=1; shift ;;
    --install-only) install_only=1; shift ;;
    -h|--help) sed -n '3,18p' "$0"; exit 0 ;;
    *) targets+=("$1"); shift ;;
  esac
done
[[ ${#targets[@]} -gt 0 ]] || targets=(shape_parse dtype_name backend_config graph)
build=${CML_FUZZ_BUILD_DIR:-$root/build-fuzzing}
cc=${CC:-clang}

# libFuzzer ships with clang's runtime libraries (Debian: libclang-rt-<version>-dev).
have_libfuzzer() {
  command -v "$cc" >/dev/null 2>&1 || return 1
  echo 'int LLVMFuzzerTestOneInput(const char* d, unsigned long n) { (void)d; (void)n; return 0; }' |
    "$cc" -x c -fsanitize=fuzzer -o /dev/null - >/dev/null 2>&1
}
# Installs clang (scripts/setup.sh) and the runtime package matching its major version.
install_libfuzzer() {
  "$root/scripts/setup.sh" clang >/dev/null || return 1
  command -v apt-get >/dev/null 2>&1 || return 1
  local sudo_cmd="" version
  [[ $(id -u) -eq 0 ]] || sudo_cmd="sudo"
  version=$("$cc" --version 2>/dev/null | sed -n 's/.*clang version \([0-9][0-9]*\).*/\1/p' | head -n1)
  # Debian 12: libclang-rt-<v>-dev; older Ubuntu ships libFuzzer in libclang-common-<v>-dev.
  local pkg
  for pkg in "libclang-rt-${version:-14}-dev" "libclang-common-${version:-14}-dev"; do
    DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "$pkg" 2>/dev/null ||
      { $sudo_cmd apt-get update -qq &&
        DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "$pkg"; } || continue
    have_libfuzzer && return 0
  done
  return 1
}
if ! have_libfuzzer; then
  echo "fuzz.sh: clang with libFuzzer not found; installing clang and libclang-rt-<version>-dev" >&2
  install_libfuzzer || true
  have_libfuzzer || { echo "fuzz.sh: clang cannot link -fsanitize=fuzzer" >&2; exit 2; }
fi
[[ $install_only -eq 0 ]] || { echo "fuzz.sh: $("$cc" --version | head -n1) with libFuzzer"; exit 0; }

CC=$cc cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCML_ENABLE_FUZZING=ON \
  -DCML_ENABLE_ASAN=ON -DCML_BUILD_EXAMPLES=OFF -DCML_BUILD_TOOLS=OFF >/dev/null
build_targets=()
for t in "${targets[@]}"; do build_targets+=(--target "fuzz_$t"); done
cmake --build "$build" -j"$jobs" "${build_targets[@]}" || exit 1

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
status=0
for t in "${targets[@]}"; do
  bin="$build/tests/fuzz/fuzz_$t"
  seeds="$root/tests/fuzz/corpus/$t"
  work="$build/fuzz-corpus/$t"
  artifacts="$build/fuzz-artifacts/$t/"
  mkdir -p "$work" "$artifacts"
  echo "=== fuzz_$t for ${seconds}s"
  if ! "$bin" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=4096 -max_len=4096 \
      -print_final_stats=1 -artifact_prefix="$artifacts" "$work" "$seeds"; then
    echo "fuzz.sh: fuzz_$t found a problem; inputs are in $artifacts" >&2
    status=1
  fi
  if [[ $merge -eq 1 ]]; then
    # Edges only (no hit counters): far fewer files for the same coverage.
    "$bin" -merge=1 -use_counters=0 -max_len=4096 "$seeds" "$work"
  fi
done
exit $status
