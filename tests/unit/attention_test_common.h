// SPDX-License-Identifier: Apache-2.0
// tests/unit/attention_test_common.h: host-side helpers shared by fused_attention_test.c and
// c_attention_segments_test.c: the float dtypes' element size, stores and loads through f64,
// uniform random values from a caller's xorshift state, random operands, the dims of a
// rank-4 attention operand in either layout, the optional inputs' parameters, a backend with a
// builder, and the xla:cpu probe.
#ifndef CML_TESTS_UNIT_ATTENTION_TEST_COMMON_H_
#define CML_TESTS_UNIT_ATTENTION_TEST_COMMON_H_

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "cml/cml.h"

// Uniform in [lo, hi) from the xorshift64 state |*rng| (advanced).
static inline double at_uniform(uint64_t* rng, double lo, double hi) {
  *rng ^= *rng << 13;
  *rng ^= *rng >> 7;
  *rng ^= *rng << 17;
  return lo + (hi - lo) * (double)(*rng >> 11) / 9007199254740992.0;
}

// Bytes per element of f64, f32, f16 or bf16.
static inline size_t at_elem(cml_dtype_t dt) {
  return dt == CML_DTYPE_F64 ? 8 : (dt == CML_DTYPE_F32 ? 4 : 2);
}

// Stores |v| rounded to |dt| as element |i| of |p|.
static inline void at_put(void* p, int64_t i, cml_dtype_t dt, double v) {
  switch (dt) {
    case CML_DTYPE_F64:
      ((double*)p)[i] = v;
      break;
    case CML_DTYPE_F32:
      ((float*)p)[i] = (float)v;
      break;
    case CML_DTYPE_F16:
      ((uint16_t*)p)[i] = cml_f32_to_f16((float)v);
      break;
    default:
      ((uint16_t*)p)[i] = cml_f32_to_bf16((float)v);
      break;
  }
}

// Element |i| of |p| (dtype |dt|) as f64.
static inline double at_get(const void* p, int64_t i, cml_dtype_t dt) {
  switch (dt) {
    case CML_DTYPE_F64:
      return ((const double*)p)[i];
    case CML_DTYPE_F32:
      return ((const float*)p)[i];
    case CML_DTYPE_F16:
      return cml_f16_to_f32(((const uint16_t*)p)[i]);
    default:
      return cml_bf16_to_f32(((const uint16_t*)p)[i]);
  }
}

// |n| elements of |dt| drawn uniformly from [lo, hi) with |*rng| (malloc'ed, at least one
// element's room; NULL when the allocation fails).
static inline void* at_random(uint64_t* rng, int64_t n, cml_dtype_t dt, double lo, double hi) {
  void* p = malloc((size_t)(n > 0 ? n : 1) * at_elem(dt));
  for (int64_t i = 0; p && i < n; ++i) at_put(p, i, dt, at_uniform(rng, lo, hi));
  return p;
}

// Dims of a rank-4 operand of |layout| with |batch|, |h| heads, |s| positions, head dim |d|.
static inline void at_dims(cml_attention_layout_t layout, int64_t batch, int64_t h, int64_t s,
                           int64_t d, int64_t out[4]) {
  const bool bhsd = layout == CML_ATTENTION_LAYOUT_BHSD;
  out[0] = batch;
  out[1] = bhsd ? h : s;
  out[2] = bhsd ? s : h;
  out[3] = d;
}

// A case's optional inputs, with their host data: |mask| 0 none, 1 Bool [B, 1, S, Skv],
// 2 additive [S, Skv] of |dtype|; |bias| [H, S, Skv] of |dtype|; |lens| query_seq_len and
// kv_seq_len, i32 [B].
typedef struct at_options_t {
  cml_dtype_t dtype;
  int64_t batch, heads, seq, kv_seq;
  int mask;
  bool bias, lens;
  const void *mask_data, *bias_data, *qlen, *kvlen;
} at_options_t;

// Adds |o|'s optional inputs to |f| as parameters, sets them in |cfg| and appends their host
// data to ins[*n...] (*n advanced).
static inline void at_add_options(cml_function_t* f, const at_options_t* o, cml_sdpa_config_t* cfg,
                                  const void** ins, size_t* n) {
  cml_shape_t s;
  if (o->mask == 1) {
    s = cml_shape_make(CML_DTYPE_BOOL, 4, (int64_t[]){o->batch, 1, o->seq, o->kv_seq});
    cfg->mask = cml_parameter(f, NULL, &s);
    ins[(*n)++] = o->mask_data;
  } else if (o->mask == 2) {
    s = cml_shape_make(o->dtype, 2, (int64_t[]){o->seq, o->kv_seq});
    cfg->mask = cml_parameter(f, NULL, &s);
    ins[(*n)++] = o->mask_data;
  }
  if (o->bias) {
    s = cml_shape_make(o->dtype, 3, (int64_t[]){o->heads, o->seq, o->kv_seq});
    cfg->bias = cml_parameter(f, NULL, &s);
    ins[(*n)++] = o->bias_data;
  }
  if (o->lens) {
    s = cml_shape_make(CML_DTYPE_I32, 1, (int64_t[]){o->batch});
    cfg->query_seq_len = cml_parameter(f, NULL, &s);
    ins[(*n)++] = o->qlen;
    cfg->kv_seq_len = cml_parameter(f, NULL, &s);
    ins[(*n)++] = o->kvlen;
  }
}

// A backend for |config| (*be) and a builder named |name| on it (*b); on failure neither is
// held (both NULL).
static inline cml_status_t at_open(const char* config, const char* name, cml_backend_t** be,
                                   cml_builder_t** b) {
  *be = NULL;
  *b = NULL;
  cml_status_t st = cml_backend_new_with_config(config, be);
  if (st != CML_OK) return st;
  st = cml_builder_create(*be, name, b);
  if (st != CML_OK) {
    cml_backend_release(*be);
    *be = NULL;
  }
  return st;
}

// Whether the xla:cpu backend loads; when not, prints that the check is skipped and why.
static inline bool at_xla_cpu_available(void) {
  cml_backend_t* probe = NULL;
  cml_status_t st = cml_backend_new_with_config("xla:cpu", &probe);
  if (st != CML_OK) {
    fprintf(stderr, "xla:cpu unavailable, skipped: %s\n", cml_status_message(st));
    cml_status_free(st);
    return false;
  }
  cml_backend_release(probe);
  return true;
}

#endif  // CML_TESTS_UNIT_ATTENTION_TEST_COMMON_H_
