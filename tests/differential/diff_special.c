// SPDX-License-Identifier: Apache-2.0
// tests/differential/diff_special.c: RNGBitGenerator (Philox: bit-exact, new state included),
// FFT (all four types, 1-D and 2-D, within a relative bound), BatchNorm inference, training
// and gradient (relative bound), and the two barriers (exact identities).
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "diff_common.h"

typedef struct dt_special_ctx_t {
  cml_shape_t shape;  // RNG output shape
  cml_fft_type_t fft;
  int64_t lengths[3];
  size_t length_count;
  int variant;
} dt_special_ctx_t;

static size_t dt_build_rng(cml_function_t* f, const cml_value_t* p, const void* ctx,
                           cml_value_t* outs) {
  const dt_special_ctx_t* s = ctx;
  if (!cml_op_rng_bit_generator(f, p[0], &s->shape, &outs[0], &outs[1])) return 0;
  return 2;
}

static void dt_rng(cml_dtype_t d, const int64_t* dims, int32_t rank, int state_variant) {
  if (!dt_selected("RNGBitGenerator", d)) return;
  dt_case_t c;
  dt_case_init(&c, "RNGBitGenerator", d, (dt_tol_t){DT_EXACT, 0, 0});
  static const uint64_t states[3][3] = {
      {0, 0, 0}, {42, 7, 0}, {0xFFFFFFFFFFFFFFFFull, 0xFFFFFFFFFFFFFFFEull, 1}};
  snprintf(c.variant, sizeof c.variant, "state=%d n=%lld", state_variant,
           (long long)dims[rank - 1]);
  uint64_t* st = dt_case_input(&c, CML_DTYPE_U64, 1, (const int64_t[]){3});
  memcpy(st, states[state_variant], sizeof states[0]);
  dt_special_ctx_t ctx;
  memset(&ctx, 0, sizeof ctx);
  ctx.shape = cml_shape_make(d, rank, dims);
  c.build = dt_build_rng;
  c.ctx = &ctx;
  dt_check(&c);
  dt_case_free(&c);
}

static size_t dt_build_fft(cml_function_t* f, const cml_value_t* p, const void* ctx,
                           cml_value_t* outs) {
  const dt_special_ctx_t* s = ctx;
  outs[0] = cml_op_fft(f, p[0], s->fft, s->lengths, s->length_count);
  return 1;
}

static void dt_fft(cml_dtype_t d, cml_fft_type_t type, const int64_t* dims, int32_t rank,
                   const int64_t* lengths, size_t length_count) {
  if (!dt_selected("FFT", d)) return;
  static const char* const names[4] = {"forward", "inverse", "forward-real", "inverse-real"};
  dt_case_t c;
  // Errors are relative to the transform's scale (~sqrt(n) * |x|): scale 8 covers n <= 64.
  dt_case_init(&c, "FFT", d, (dt_tol_t){DT_REL, 64, 8});
  snprintf(c.variant, sizeof c.variant, "%s %zu-D", names[type], length_count);
  void* x = dt_case_input(&c, d, rank, dims);
  dt_fill(d, x, 0, cml_shape_element_count(&c.inputs[0].shape), DT_FILL_UNIT);
  dt_special_ctx_t ctx;
  memset(&ctx, 0, sizeof ctx);
  ctx.fft = type;
  memcpy(ctx.lengths, lengths, length_count * sizeof *lengths);
  ctx.length_count = length_count;
  c.build = dt_build_fft;
  c.ctx = &ctx;
  dt_check(&c);
  dt_case_free(&c);
}

static size_t dt_build_batch_norm(cml_function_t* f, const cml_value_t* p, const void* ctx,
                                  cml_value_t* outs) {
  const dt_special_ctx_t* s = ctx;
  const float eps = 1e-3f;
  switch (s->variant) {
    case 0:
      outs[0] = cml_op_batch_norm_inference(f, p[0], p[1], p[2], p[3], p[4], eps, 1);
      return 1;
    case 1:
      return cml_op_batch_norm_training(f, p[0], p[1], p[2], eps, 1, outs) ? 3 : 0;
    default:
      return cml_op_batch_norm_gradient(f, p[0], p[1], p[2], p[3], p[4], eps, 1, outs) ? 3 : 0;
  }
}

static void dt_batch_norm(cml_dtype_t d, int variant) {
  static const char* const ops[3] = {"BatchNormForInference", "BatchNormForTraining",
                                     "BatchNormGradient"};
  if (!dt_selected(ops[variant], d)) return;
  dt_case_t c;
  dt_case_init(&c, ops[variant], d, (dt_tol_t){DT_REL, 16, 1});
  int64_t dims[4] = {2, 3, 4, 5};
  void* x = dt_case_input(&c, d, 4, dims);
  dt_fill(d, x, 0, 120, DT_FILL_SMALL);
  int64_t fdim = 3;
  void* scale = dt_case_input(&c, d, 1, &fdim);
  dt_fill(d, scale, 0, 3, DT_FILL_SMALL);
  if (variant != 1) {
    // inference: offset, mean, variance; gradient: mean, variance, grad_output.
    void* a = dt_case_input(&c, d, 1, &fdim);
    void* b = dt_case_input(&c, d, 1, &fdim);
    dt_fill(d, a, 0, 3, DT_FILL_SMALL);
    for (int64_t i = 0; i < 3; ++i) dt_set_f64(d, b, i, dt_uniform(0.25, 4));
    if (variant == 0) {
      void* var = dt_case_input(&c, d, 1, &fdim);
      for (int64_t i = 0; i < 3; ++i) dt_set_f64(d, var, i, dt_uniform(0.25, 4));
    } else {
      void* g = dt_case_input(&c, d, 4, dims);
      dt_fill(d, g, 0, 120, DT_FILL_UNIT);
    }
  } else {
    void* offset = dt_case_input(&c, d, 1, &fdim);
    dt_fill(d, offset, 0, 3, DT_FILL_SMALL);
  }
  dt_special_ctx_t ctx;
  memset(&ctx, 0, sizeof ctx);
  ctx.variant = variant;
  c.build = dt_build_batch_norm;
  c.ctx = &ctx;
  dt_check(&c);
  dt_case_free(&c);
}

static size_t dt_build_barriers(cml_function_t* f, const cml_value_t* p, const void* ctx,
                                cml_value_t* outs) {
  cml_value_t b[2];
  if (!cml_op_optimization_barrier(f, p, 2, b)) return 0;
  outs[0] = cml_op_add(f, b[0], b[1]);
  outs[1] = cml_op_scheduling_barrier(f, p[0], &outs[0], 1);
  return 2;
}

static void dt_barriers(cml_dtype_t d) {
  if (!dt_selected("OptimizationBarrier", d)) return;
  dt_case_t c;
  dt_case_init(&c, "OptimizationBarrier", d, (dt_tol_t){DT_EXACT, 0, 0});
  snprintf(c.variant, sizeof c.variant, "and SchedulingBarrier");
  void* x = dt_case_input(&c, d, 1, (const int64_t[]){40});
  void* y = dt_case_input(&c, d, 1, (const int64_t[]){40});
  dt_fill(d, x, 0, 40, DT_FILL_EDGE);
  dt_fill(d, y, 0, 40, DT_FILL_WIDE);
  c.build = dt_build_barriers;
  dt_check(&c);
  dt_case_free(&c);
}

void dt_group_special(void) {
  static const cml_dtype_t rng_dtypes[] = {CML_DTYPE_U32, CML_DTYPE_U64, CML_DTYPE_I8,
                                           CML_DTYPE_U16, CML_DTYPE_I32, CML_DTYPE_F32,
                                           CML_DTYPE_F64, CML_DTYPE_BF16};
  for (size_t i = 0; i < sizeof rng_dtypes / sizeof rng_dtypes[0]; ++i) {
    dt_rng(rng_dtypes[i], (const int64_t[]){5, 33}, 2, (int)(i % 3));
  }
  for (int s = 0; s < 3; ++s) {
    dt_rng(CML_DTYPE_U32, (const int64_t[]){1001}, 1, s);
    dt_rng(CML_DTYPE_U64, (const int64_t[]){257}, 1, s);
  }
  for (cml_dtype_t d = CML_DTYPE_C64; d <= CML_DTYPE_C128; ++d) {
    cml_dtype_t r = cml_dtype_real_part(d);
    dt_fft(d, CML_FFT_FORWARD, (const int64_t[]){4, 16}, 2, (const int64_t[]){16}, 1);
    dt_fft(d, CML_FFT_INVERSE, (const int64_t[]){3, 12}, 2, (const int64_t[]){12}, 1);
    dt_fft(d, CML_FFT_FORWARD, (const int64_t[]){2, 4, 6}, 3, (const int64_t[]){4, 6}, 2);
    dt_fft(r, CML_FFT_FORWARD_REAL, (const int64_t[]){3, 10}, 2, (const int64_t[]){10}, 1);
    dt_fft(d, CML_FFT_INVERSE_REAL, (const int64_t[]){3, 6}, 2, (const int64_t[]){10}, 1);
    // Mixed radix (400 = 4 * 4 * 5 * 5: n_fft of Whisper's STFT; 2-D real with it last), and a
    // prime (509: Bluestein).
    dt_fft(r, CML_FFT_FORWARD_REAL, (const int64_t[]){4, 400}, 2, (const int64_t[]){400}, 1);
    dt_fft(d, CML_FFT_INVERSE_REAL, (const int64_t[]){2, 3, 201}, 3, (const int64_t[]){3, 400}, 2);
    dt_fft(d, CML_FFT_FORWARD, (const int64_t[]){3, 400}, 2, (const int64_t[]){400}, 1);
    dt_fft(d, CML_FFT_INVERSE, (const int64_t[]){2, 509}, 2, (const int64_t[]){509}, 1);
  }
  static const cml_dtype_t bn_dtypes[] = {CML_DTYPE_F32, CML_DTYPE_F64, CML_DTYPE_F16,
                                          CML_DTYPE_BF16};
  for (size_t i = 0; i < sizeof bn_dtypes / sizeof bn_dtypes[0]; ++i) {
    for (int v = 0; v < 3; ++v) dt_batch_norm(bn_dtypes[i], v);
  }
  for (const cml_dtype_t* d = dt_all_dtypes; *d != CML_DTYPE_INVALID; ++d) {
    if (*d != CML_DTYPE_BOOL) dt_barriers(*d);
  }
}
