// SPDX-License-Identifier: Apache-2.0
// tools/cml/install.c: "cml install cpu|cuda [--force] [--quiet|--verbose]": installs an XLA
// PJRT plugin into ~/.local/lib/go-xla (see cml/xla.h).
#include <stdio.h>
#include <string.h>

#include "cml/xla.h"
#include "tools/cml/cli.h"

static void cml_cli_install_usage(FILE* out) {
  fprintf(out,
          "usage: cml install cpu|cuda [--force] [--quiet|--verbose]\n"
          "  Installs the XLA PJRT plugin into ~/.local/lib/go-xla (cuda: only with an NVIDIA\n"
          "  GPU) from a pinned, sha256-checked wheel fetched with pip.\n"
          "  --force    reinstall even when a sound copy is installed\n"
          "  --quiet    no progress output; --verbose: always show pip's output\n");
}

int cml_cli_install(int argc, char** argv) {
  const char* plugin = NULL;
  bool force = false;
  int verbosity = 1;
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    if (strcmp(a, "--force") == 0) {
      force = true;
    } else if (strcmp(a, "--quiet") == 0 || strcmp(a, "-q") == 0) {
      verbosity = 0;
    } else if (strcmp(a, "--verbose") == 0 || strcmp(a, "-v") == 0) {
      verbosity = 2;
    } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      cml_cli_install_usage(stdout);
      return 0;
    } else if (a[0] != '-' && !plugin) {
      plugin = a;
    } else {
      fprintf(stderr, "cml install: unexpected argument \"%s\"\n", a);
      cml_cli_install_usage(stderr);
      return 2;
    }
  }
  if (!plugin) {
    cml_cli_install_usage(stderr);
    return 2;
  }
#ifndef CML_HAVE_BACKEND_XLA
  (void)force;
  (void)verbosity;
  fprintf(stderr,
          "cml install: this build has no xla backend (configure with -DCML_BACKEND_XLA=ON)\n");
  return 1;
#else
  char path[4096];
  cml_status_t st = cml_xla_install_plugin(plugin, verbosity, force, path, sizeof path);
  if (st != CML_OK) {
    fprintf(stderr, "cml install: %s\n", cml_status_message(st));
    int code = cml_status_code(st) == CML_STATUS_INVALID_ARGUMENT ? 2 : 1;
    cml_status_free(st);
    return code;
  }
  printf("%s\n", path);
  return 0;
#endif
}
