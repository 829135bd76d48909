// SPDX-License-Identifier: Apache-2.0
// tests/fuzz/fuzz_main.c: the libFuzzer entry point of one target; CMake compiles it once per
// target with -DCML_FUZZ_TARGET=<function> (see tests/fuzz/CMakeLists.txt).
#include <stdint.h>
#include <stdlib.h>

#include "tests/fuzz/fuzz_targets.h"

#ifndef CML_FUZZ_TARGET
#error "define CML_FUZZ_TARGET to one of the cml_fuzz_* entry points"
#endif

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
int LLVMFuzzerInitialize(int* argc, char*** argv);

static void cml_fuzz_at_exit(void) { cml_fuzz_teardown(); }

int LLVMFuzzerInitialize(int* argc, char*** argv) {
  (void)argc;
  (void)argv;
  atexit(cml_fuzz_at_exit);
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  CML_FUZZ_TARGET(data, size);
  return 0;
}
