// SPDX-License-Identifier: Apache-2.0
// web/mlp_bench.c: runs cml_web.c's entry points from the command line, the same source built
// natively and as a WASI command (node scripts/wasi_run.mjs), so the two timings compare.
//
//   mlp_bench [batch in hidden out iterations]      (default 64 256 256 10 200)
//
// Checks the demo model against hand-computed values, then prints one line:
//   mlp 64x256x256x10: compile 1234.5 us, execute 56.7 us (200 runs)
// Exits 0 on success, 1 on a failure.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "web/cml_web.h"

int main(int argc, char** argv) {
  // examples/mlp's first two rows, with y and s computed by hand from its weights.
  const float x[2][CML_WEB_MLP_IN] = {{1.0f, -2.0f, 0.5f}, {0.0f, 1.5f, -1.0f}};
  const float want_y[2][CML_WEB_MLP_OUT] = {{1.775f, 2.8f}, {4.5625f, -1.49375f}};
  const float want_s[2] = {4.575f, 3.06875f};
  float y[2][CML_WEB_MLP_OUT], s[2];
  if (cml_web_mlp(&x[0][0], 2, &y[0][0], s) != 0) {
    fprintf(stderr, "mlp_bench: %s\n", cml_web_error());
    return 1;
  }
  for (int b = 0; b < 2; ++b) {
    for (int k = 0; k < CML_WEB_MLP_OUT; ++k) {
      if (fabsf(y[b][k] - want_y[b][k]) > 1e-5f) {
        fprintf(stderr, "mlp_bench: y[%d][%d] = %.7g, want %.7g\n", b, k, (double)y[b][k],
                (double)want_y[b][k]);
        return 1;
      }
    }
    if (fabsf(s[b] - want_s[b]) > 1e-5f) {
      fprintf(stderr, "mlp_bench: s[%d] = %.7g, want %.7g\n", b, (double)s[b], (double)want_s[b]);
      return 1;
    }
  }
  int sizes[5] = {64, 256, 256, 10, 200};
  if (argc == 6) {
    for (int i = 0; i < 5; ++i) sizes[i] = atoi(argv[i + 1]);
  } else if (argc != 1) {
    fprintf(stderr, "usage: mlp_bench [batch in hidden out iterations]\n");
    return 2;
  }
  double compile_us = 0;
  double us = cml_web_mlp_bench(sizes[0], sizes[1], sizes[2], sizes[3], sizes[4], &compile_us);
  if (us < 0) {
    fprintf(stderr, "mlp_bench: %s\n", cml_web_error());
    return 1;
  }
  printf("backend: %s\n", cml_web_backend());
  printf("mlp %dx%dx%dx%d: compile %.1f us, execute %.1f us (%d runs)\n", sizes[0], sizes[1],
         sizes[2], sizes[3], compile_us, us, sizes[4]);
  return 0;
}
