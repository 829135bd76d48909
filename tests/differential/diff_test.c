// SPDX-License-Identifier: Apache-2.0
// tests/differential/diff_test.c: differential test of the c backend against XLA's CPU plugin.
//
// Every op and dtype both backends support is run on `c` and `xla:cpu` with the same
// deterministic inputs (special values, integer extremes, edge pairs, random values), and the
// results are compared: exactly for integer, Bool and IEEE-exact float ops, within the
// documented bounds of docs/differential.md otherwise. Prints every disagreement and ends with
// "N agreed, N disagreed, N skipped"; exits 1 on any disagreement, 77 when no XLA CPU plugin is
// installed (nothing is downloaded).
//
// Usage: diff_test [-v|-vv|-vvv] [--denormals] [--c-config CONFIG] [FILTER]
//   --denormals also feeds denormal floats and compares them strictly (XLA flushes them).
//   FILTER is a substring of "<Op>/<DType>" ("Add/Int32", "Exp/", "/Float16").
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/xla/xla_internal.h"
#include "cml/xla.h"
#include "diff_common.h"

static int dt_usage(void) {
  fprintf(stderr, "usage: diff_test [-v|-vv|-vvv] [--denormals] [--c-config CONFIG] [FILTER]\n");
  return 2;
}

int main(int argc, char** argv) {
  const char* c_config = "c";
  dt.denormals_flushed = true;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "-v") == 0) {
      dt.verbose = 1;
    } else if (strcmp(argv[i], "-vv") == 0) {
      dt.verbose = 2;
    } else if (strcmp(argv[i], "-vvv") == 0) {  // every differing element
      dt.verbose = 3;
    } else if (strcmp(argv[i], "--denormals") == 0) {
      dt.denormals_flushed = false;
    } else if (strcmp(argv[i], "--c-config") == 0 && i + 1 < argc) {
      c_config = argv[++i];
    } else if (argv[i][0] == '-') {
      return dt_usage();
    } else {
      dt.filter = argv[i];
    }
  }
  setvbuf(stdout, NULL, _IOLBF, 0);
  cml_xla_enable_auto_install(false);  // tests never download
  cml__xla_search_t search;
  cml__xla_search_from_env(&search);
  char* path = NULL;
  cml_status_t st = cml__xla_find_plugin(&search, "cpu", &path);
  if (st != CML_OK) {
    printf("skipped: no XLA CPU plugin installed (%s)\n", cml_status_message(st));
    cml_status_free(st);
    return 77;
  }
  free(path);
  st = cml_backend_new_with_config(c_config, &dt.c);
  if (st == CML_OK) st = cml_backend_new_with_config("xla:cpu", &dt.xla);
  if (st != CML_OK) {
    fprintf(stderr, "diff_test: cannot create the backends: %s\n", cml_status_message(st));
    cml_status_free(st);
    cml_backend_release(dt.c);
    return 1;
  }
  printf("differential: %s vs %s\n", cml_backend_config(dt.c), cml_backend_config(dt.xla));

  dt_group_elementwise();
  dt_group_convert();
  dt_group_reduce();
  dt_group_movement();
  dt_group_index();
  dt_group_linalg();
  dt_group_window();
  dt_group_control();
  dt_group_special();

  if (dt.verbose) dt_print_bounds();
  dt_print_known();
  printf("%zu agreed, %zu disagreed, %zu skipped\n", dt.agreed, dt.disagreed, dt.skipped);
  cml_backend_release(dt.c);
  cml_backend_release(dt.xla);
  return dt.disagreed ? 1 : 0;
}
