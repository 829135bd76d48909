// SPDX-License-Identifier: Apache-2.0
// examples/topk/main.c: top-k retrieval with Sort and Gather.
//
// For each query row of |scores| [Q, N], sort (score, index) pairs by descending score (a
// comparator closure; stable, so ties keep the lower index), keep the first K indices and
// gather the matching rows of an embedding table [N, E]. Exits 0 when the result matches a
// plain C selection.
#include <stdio.h>
#include <string.h>

#include "cml/cml.h"

enum { kQ = 3, kN = 8, kK = 3, kE = 4 };

static cml_status_t build(cml_backend_t* backend, cml_executable_t** out_exe) {
  cml_builder_t* b = NULL;
  CML_RETURN_IF_ERROR(cml_builder_create(backend, "topk", &b));
  cml_function_t* f = cml_builder_main(b);
  cml_shape_t ss = cml_shape_make(CML_DTYPE_F32, 2, (int64_t[]){kQ, kN});
  cml_shape_t ts = cml_shape_make(CML_DTYPE_F32, 2, (int64_t[]){kN, kE});
  cml_shape_t is = cml_shape_make(CML_DTYPE_I32, 2, (int64_t[]){kQ, kN});
  cml_value_t scores = cml_parameter(f, "scores", &ss);
  cml_value_t table = cml_parameter(f, "table", &ts);
  cml_value_t index = cml_op_iota(f, &is, 1);

  cml_function_t* cmp = NULL;
  cml_status_t st = cml_function_new_closure(f, &cmp);
  if (st == CML_OK) {
    cml_shape_t fs = cml_shape_scalar(CML_DTYPE_F32), i32 = cml_shape_scalar(CML_DTYPE_I32);
    cml_value_t lhs = cml_parameter(cmp, "lhs_score", &fs);
    cml_value_t rhs = cml_parameter(cmp, "rhs_score", &fs);
    (void)cml_parameter(cmp, "lhs_index", &i32);
    (void)cml_parameter(cmp, "rhs_index", &i32);
    cml_value_t before = cml_op_greater_than(cmp, lhs, rhs);
    st = cml_function_return(cmp, &before, 1);
  }
  if (st == CML_OK) {
    cml_value_t sorted[2] = {0, 0};
    cml_op_sort(f, cmp, 1, true, (cml_value_t[]){scores, index}, 2, sorted);
    cml_value_t top = cml_op_slice(f, sorted[1], (int64_t[]){0, 0}, (int64_t[]){kQ, kK}, NULL, 2);
    cml_gather_dims_t g;
    memset(&g, 0, sizeof g);
    g.index_vector_axis = 2;  // rank(top): each index is a scalar
    g.offset_output_axis_count = 1;
    g.offset_output_axes[0] = 2;
    g.collapsed_slice_axis_count = 1;
    g.collapsed_slice_axes[0] = 0;
    g.start_index_map_count = 1;
    g.start_index_map[0] = 0;
    g.slice_size_count = 2;
    g.slice_sizes[0] = 1;
    g.slice_sizes[1] = kE;
    cml_value_t rows = cml_op_gather(f, table, top, &g);  // [Q, K, E]
    st = cml_function_return(f, (cml_value_t[]){top, rows}, 2);
  }
  if (st == CML_OK) st = cml_builder_compile(b, out_exe);
  cml_builder_destroy(b);
  return st;
}

int main(void) {
  static const float scores[kQ][kN] = {{0.1f, 0.7f, 0.3f, 0.9f, 0.2f, 0.7f, 0.0f, 0.5f},
                                       {5, 4, 3, 2, 1, 0, -1, -2},
                                       {-1, -1, -1, -1, -1, -1, -1, 0}};
  float table[kN][kE];
  for (int n = 0; n < kN; ++n)
    for (int e = 0; e < kE; ++e) table[n][e] = (float)(n * 10 + e);

  cml_backend_t* backend = NULL;
  cml_executable_t* exe = NULL;
  cml_buffer_t* in[2] = {NULL, NULL};
  cml_buffer_t* out[2] = {NULL, NULL};
  int32_t top[kQ][kK];
  float rows[kQ][kK][kE];
  cml_shape_t ss = cml_shape_make(CML_DTYPE_F32, 2, (int64_t[]){kQ, kN});
  cml_shape_t ts = cml_shape_make(CML_DTYPE_F32, 2, (int64_t[]){kN, kE});
  cml_status_t st = cml_backend_new(&backend);
  if (st == CML_OK) st = build(backend, &exe);
  if (st == CML_OK) st = cml_buffer_from_host(backend, 0, &ss, scores, sizeof scores, &in[0]);
  if (st == CML_OK) st = cml_buffer_from_host(backend, 0, &ts, table, sizeof table, &in[1]);
  if (st == CML_OK) st = cml_executable_execute(exe, in, 2, NULL, 0, out);
  if (st == CML_OK) st = cml_buffer_copy_to_host(out[0], top, sizeof top);
  if (st == CML_OK) st = cml_buffer_copy_to_host(out[1], rows, sizeof rows);
  int failures = 0;
  if (st != CML_OK) {
    fprintf(stderr, "topk: %s\n", cml_status_message(st));
    cml_status_free(st);
    failures = 1;
  } else {
    for (int q = 0; q < kQ; ++q) {
      // Plain C: repeatedly pick the best unused index (the first one on ties).
      bool used[kN] = {false};
      printf("query %d:", q);
      for (int k = 0; k < kK; ++k) {
        int best = -1;
        for (int n = 0; n < kN; ++n)
          if (!used[n] && (best < 0 || scores[q][n] > scores[q][best])) best = n;
        used[best] = true;
        bool ok = top[q][k] == best;
        for (int e = 0; e < kE; ++e) ok = ok && rows[q][k][e] == table[best][e];
        printf(" %d%s", top[q][k], ok ? "" : "(MISMATCH)");
        failures += !ok;
      }
      printf("\n");
    }
  }
  for (int i = 0; i < 2; ++i) {
    cml_buffer_release(out[i]);
    cml_buffer_release(in[i]);
  }
  cml_executable_release(exe);
  cml_backend_release(backend);
  return failures ? 1 : 0;
}
