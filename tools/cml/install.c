// SPDX-License-Identifier: Apache-2.0
// tools/cml/install.c: "cml install" (placeholder).
#include <stdio.h>

#include "tools/cml/cli.h"

int cml_cli_install(int argc, char** argv) {
  (void)argc;
  (void)argv;
  fprintf(stderr, "cml install: not available in this build\n");
  return 2;
}
