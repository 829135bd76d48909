# SPDX-License-Identifier: Apache-2.0
# cmake/wasm32-wasi.cmake: cross-compiles cml for WebAssembly (wasm32-wasi) with clang,
# wasi-libc and compiler-rt's wasm32 builtins (Debian: apt-get install wasi-libc
# libclang-rt-14-dev-wasm32). Used by scripts/build_wasm.sh:
#
#   cmake -S . -B build-wasm -DCMAKE_TOOLCHAIN_FILE=cmake/wasm32-wasi.cmake \
#         -DCML_BACKEND_XLA=OFF [-DCML_WASM_SIMD128=ON]
#
# The target has no threads and no dynamic loading: cmake/wasm32-wasi/include supplies a
# single-threaded <pthread.h> and a <dlfcn.h> whose dlopen fails. Executables are WASI commands
# (.wasm, run with node:wasi or any WASI runtime); shared libraries become static ones.
set(CMAKE_SYSTEM_NAME Generic)
set(CMAKE_SYSTEM_PROCESSOR wasm32)

set(CML_WASI_SYSROOT "/usr" CACHE PATH "wasi-libc sysroot (Debian installs it under /usr)")
set(CML_WASM_SIMD128 OFF CACHE BOOL "Compile with -msimd128 (WebAssembly SIMD128)")
set(CML_WASM_STACK_SIZE 1048576 CACHE STRING "Linear-memory stack size in bytes")

if(NOT CMAKE_C_COMPILER)
  find_program(CML_WASI_CLANG NAMES clang clang-14 REQUIRED)
  set(CMAKE_C_COMPILER ${CML_WASI_CLANG})
endif()
set(CMAKE_C_COMPILER_TARGET wasm32-wasi)
set(CMAKE_SYSROOT ${CML_WASI_SYSROOT})
set(CMAKE_EXECUTABLE_SUFFIX_C ".wasm")

set(CML_WASI_FLAGS "-isystem ${CMAKE_CURRENT_LIST_DIR}/wasm32-wasi/include")
if(CML_WASM_SIMD128)
  string(APPEND CML_WASI_FLAGS " -msimd128")
endif()
set(CMAKE_C_FLAGS_INIT "${CML_WASI_FLAGS}")
# Memory grows on demand (the compliance suite needs far more than the 16 MiB default start);
# the default 64 KiB stack is too small for the deeper builder/planner frames.
set(CMAKE_EXE_LINKER_FLAGS_INIT
    "-Wl,-z,stack-size=${CML_WASM_STACK_SIZE} -Wl,--initial-memory=33554432 -Wl,--max-memory=2147483648")

# FindThreads: the shim <pthread.h> is "in libc" (no flag, no library to link).
set(CMAKE_HAVE_LIBC_PTHREAD 1)

# The cache variables above must reach try_compile projects too.
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES CML_WASI_SYSROOT CML_WASM_SIMD128
     CML_WASM_STACK_SIZE)

set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
