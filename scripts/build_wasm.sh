#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds cml's pure C backend for WebAssembly (wasm32-wasi) with clang + wasi-libc, through
# CMake and cmake/wasm32-wasi.cmake (docs/wasm.md). Installs clang, lld, wasi-libc and the
# wasm32 compiler-rt builtins with apt-get when they are missing.
#
#   scripts/build_wasm.sh [BUILD_DIR]          (default build-wasm; JOBS=N for parallelism)
#
# Produces, in BUILD_DIR:
#   scalar/   libcml.a, libcml_backendtest.a, cml.wasm (the CLI: `cml test`, `cml info`),
#             example_mlp.wasm, mlp_bench.wasm (web/mlp_bench.c),
#             wasm_limits.wasm (tests/wasm/limits.c)                        -- WASI commands
#   simd128/  the same with -msimd128 (clang's auto-vectorization to WebAssembly SIMD128);
#             CML_WASM_SIMD128=0 leaves it out
#   web/      index.html, cml.js, cml_web.wasm and cml_web_simd128.wasm (WASI reactors exporting
#             web/cml_web.h): serve this folder to run an MLP in the browser
# Prints "SKIPPED: ..." and exits 0 when the toolchain is missing and cannot be installed.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$(pwd)"
out="${1:-build-wasm}"
case "$out" in /*) ;; *) out="$root/$out" ;; esac
jobs="${JOBS:-2}"
sysroot="${CML_WASI_SYSROOT:-/usr}"

#===--- toolchain ---===#
need=()
command -v cmake >/dev/null 2>&1 || need+=(cmake)
command -v clang >/dev/null 2>&1 || need+=(clang)
command -v wasm-ld >/dev/null 2>&1 || need+=(lld)
[ -f "$sysroot/include/wasm32-wasi/stdio.h" ] || need+=(wasi-libc)
builtins_found() {
  local dir
  dir="$(clang -print-resource-dir 2>/dev/null)" || return 1
  [ -f "$dir/lib/wasi/libclang_rt.builtins-wasm32.a" ]
}
if ! command -v clang >/dev/null 2>&1 || ! builtins_found; then
  major="$(clang --version 2>/dev/null | sed -n 's/.*clang version \([0-9]*\).*/\1/p' | head -n1)"
  need+=("libclang-rt-${major:-14}-dev-wasm32")
fi
if [ ${#need[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" = 0 ] || SUDO="sudo"
  if ! command -v apt-get >/dev/null 2>&1 || { [ -n "$SUDO" ] && ! command -v sudo >/dev/null 2>&1; }; then
    echo "SKIPPED: the wasm toolchain is missing (${need[*]}) and apt-get cannot install it"
    exit 0
  fi
  echo "build_wasm: installing ${need[*]}"
  if ! { $SUDO apt-get update -qq &&
         DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}"; }; then
    echo "SKIPPED: apt-get could not install ${need[*]}"
    exit 0
  fi
fi

#===--- libraries and WASI commands ---===#
configure_and_build() {  # DIR SIMD(ON|OFF)
  local dir="$1" simd="$2"
  cmake -S "$root" -B "$dir" -Wno-dev \
    -DCMAKE_TOOLCHAIN_FILE="$root/cmake/wasm32-wasi.cmake" -DCML_WASI_SYSROOT="$sysroot" \
    -DCMAKE_BUILD_TYPE=Release -DCML_WASM_SIMD128="$simd" -DCML_BACKEND_XLA=OFF \
    -DCML_BUILD_TESTS=OFF -DCML_BUILD_BENCH=OFF -DCML_BUILD_EXAMPLES=ON -DCML_BUILD_TOOLS=ON \
    >/dev/null
  cmake --build "$dir" -j"$jobs" --target cml cml_backendtest cml_tool example_mlp
}

# The same flags as CMake's Release build (see cmake/wasm32-wasi.cmake for the link flags).
wasm_cc() {  # SIMD(ON|OFF) ARGS...
  local simd="$1"
  shift
  local extra=()
  [ "$simd" = ON ] && extra+=(-msimd128)
  clang --target=wasm32-wasi --sysroot="$sysroot" -std=c11 -D_GNU_SOURCE -O3 -DNDEBUG "${extra[@]}" \
    -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wundef -Werror \
    -I"$root/include" -I"$root" \
    -Wl,-z,stack-size=1048576 -Wl,--initial-memory=33554432 -Wl,--max-memory=2147483648 "$@"
}

variants=("scalar:OFF")
[ "${CML_WASM_SIMD128:-1}" = 0 ] || variants+=("simd128:ON")
for v in "${variants[@]}"; do
  name="${v%%:*}" simd="${v##*:}"
  echo "== wasm32-wasi ($name)"
  configure_and_build "$out/$name" "$simd"
  wasm_cc "$simd" "$root/web/cml_web.c" "$root/web/mlp_bench.c" "$out/$name/libcml.a" -lm \
    -o "$out/$name/mlp_bench.wasm"
  wasm_cc "$simd" "$root/tests/wasm/limits.c" "$out/$name/libcml.a" -lm \
    -o "$out/$name/wasm_limits.wasm"
done

#===--- the web page: a reactor module + index.html + cml.js ---===#
# cml_web.wasm runs on every WebAssembly engine; the page loads cml_web_simd128.wasm where
# the engine has SIMD128 (Chrome 91+, Firefox 89+, Safari 16.4+, Node 16.4+).
mkdir -p "$out/web"
wasm_cc OFF -mexec-model=reactor -Wl,--strip-debug "$root/web/cml_web.c" "$out/scalar/libcml.a" \
  -lm -o "$out/web/cml_web.wasm"
if [ -f "$out/simd128/libcml.a" ]; then
  wasm_cc ON -mexec-model=reactor -Wl,--strip-debug "$root/web/cml_web.c" \
    "$out/simd128/libcml.a" -lm -o "$out/web/cml_web_simd128.wasm"
fi
cp "$root/web/index.html" "$root/web/cml.js" "$out/web/"

echo "== sizes"
for f in "$out"/scalar/*.wasm "$out"/simd128/*.wasm "$out"/web/*.wasm \
         "$out"/scalar/libcml.a; do
  [ -f "$f" ] && printf '  %-60s %8d bytes\n' "${f#"$root"/}" "$(stat -c %s "$f")"
done
echo "build_wasm: done ($out)"
