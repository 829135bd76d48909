// SPDX-License-Identifier: Apache-2.0
// tools/cml/test.c: "cml test" (placeholder).
#include <stdio.h>

#include "tools/cml/cli.h"

int cml_cli_test(int argc, char** argv) {
  (void)argc;
  (void)argv;
  fprintf(stderr, "cml test: not available in this build\n");
  return 2;
}
