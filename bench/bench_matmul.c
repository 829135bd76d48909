// SPDX-License-Identifier: Apache-2.0
// bench/bench_matmul.c: f32 and bf16 matmul / DotGeneral, c vs c:reference vs xla:cpu (and
// OpenBLAS sgemm when it was found at configure time).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench_common.h"

#if defined(CML_BENCH_HAVE_OPENBLAS)
#include <cblas.h>
#endif

// Case parameters (bench_case_t.dims).
enum {
  MM_BATCH = 0,  // independent products (1: none)
  MM_M = 1,
  MM_K = 2,
  MM_N = 3,
  MM_TRANS_B = 4,  // rhs stored [N, K] (contracting its last axis)
  MM_OUT_F32 = 5,  // bf16 inputs with f32 accumulation and output
  MM_D0 = 6,       // outer axes: lhs [D0, D1, ...] (M = D0 * D1 or B = D0 * D1)
  MM_D1 = 7,
};

static cml_dot_config_t matmul_config(int64_t lhs_contract, int64_t rhs_contract) {
  cml_dot_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.lhs_contracting_count = 1;
  cfg.lhs_contracting_axes[0] = lhs_contract;
  cfg.rhs_contracting_count = 1;
  cfg.rhs_contracting_axes[0] = rhs_contract;
  cfg.accumulator_dtype = CML_DTYPE_INVALID;
  cfg.output_dtype = CML_DTYPE_INVALID;
  return cfg;
}

// An f32 rhs that is a constant of the module (a weight: the c backend packs it once, when the
// executable is compiled), filled with small exact values.
static cml_value_t const_rhs(cml_function_t* f, const int64_t* dims) {
  cml_shape_t s = cml_shape_make(CML_DTYPE_F32, 2, dims);
  const int64_t count = dims[0] * dims[1];
  float* data = malloc((size_t)count * sizeof(float));
  if (!data) return 0;
  for (int64_t i = 0; i < count; ++i) data[i] = (float)(i * 7 % 13 - 6) / 8.0f;
  cml_value_t v = cml_constant(f, &s, data);
  free(data);
  return v;
}

static cml_value_t rhs_value(cml_function_t* f, const bench_case_t* c, const int64_t* rhs_dims,
                             bool constant) {
  return constant ? const_rhs(f, rhs_dims) : bench_param(f, "rhs", c->dtype, 2, rhs_dims);
}

// lhs [M, K] @ rhs [K, N] (or [N, K] when transposed); the rhs a parameter or a constant.
static cml_value_t build_matmul_rhs(cml_function_t* f, const bench_case_t* c, bool constant) {
  const int64_t* d = c->dims;
  int64_t rhs_dims[2] = {d[MM_K], d[MM_N]};
  if (d[MM_TRANS_B]) {
    rhs_dims[0] = d[MM_N];
    rhs_dims[1] = d[MM_K];
  }
  cml_value_t lhs = bench_param(f, "lhs", c->dtype, 2, (int64_t[]){d[MM_M], d[MM_K]});
  cml_value_t rhs = rhs_value(f, c, rhs_dims, constant);
  cml_dot_config_t cfg = matmul_config(1, d[MM_TRANS_B] ? 1 : 0);
  if (d[MM_OUT_F32]) {
    cfg.accumulator_dtype = CML_DTYPE_F32;
    cfg.output_dtype = CML_DTYPE_F32;
  }
  return cml_op_dot_general(f, lhs, rhs, &cfg);
}

static cml_value_t build_matmul(cml_function_t* f, const bench_case_t* c) {
  return build_matmul_rhs(f, c, false);
}

static cml_value_t build_matmul_const(cml_function_t* f, const bench_case_t* c) {
  return build_matmul_rhs(f, c, true);
}

// The seed's "NonTransposed/Transposed" DotGeneral: lhs [D0, D1, K] @ rhs [K, N] or [N, K].
static cml_value_t build_seed_3d_rhs(cml_function_t* f, const bench_case_t* c, bool constant) {
  const int64_t* d = c->dims;
  int64_t rhs_dims[2] = {d[MM_K], d[MM_N]};
  if (d[MM_TRANS_B]) {
    rhs_dims[0] = d[MM_N];
    rhs_dims[1] = d[MM_K];
  }
  cml_value_t lhs = bench_param(f, "lhs", c->dtype, 3, (int64_t[]){d[MM_D0], d[MM_D1], d[MM_K]});
  cml_value_t rhs = rhs_value(f, c, rhs_dims, constant);
  cml_dot_config_t cfg = matmul_config(2, d[MM_TRANS_B] ? 1 : 0);
  return cml_op_dot_general(f, lhs, rhs, &cfg);
}

static cml_value_t build_seed_3d(cml_function_t* f, const bench_case_t* c) {
  return build_seed_3d_rhs(f, c, false);
}

static cml_value_t build_seed_3d_const(cml_function_t* f, const bench_case_t* c) {
  return build_seed_3d_rhs(f, c, true);
}

// Attention-like batched product: lhs [D0, D1, M, K] @ rhs [D0, D1, K, N], batch axes 0, 1.
static cml_value_t build_batched(cml_function_t* f, const bench_case_t* c) {
  const int64_t* d = c->dims;
  cml_value_t lhs =
      bench_param(f, "lhs", c->dtype, 4, (int64_t[]){d[MM_D0], d[MM_D1], d[MM_M], d[MM_K]});
  cml_value_t rhs =
      bench_param(f, "rhs", c->dtype, 4, (int64_t[]){d[MM_D0], d[MM_D1], d[MM_K], d[MM_N]});
  cml_dot_config_t cfg = matmul_config(3, 2);
  cfg.lhs_batch_count = 2;
  cfg.lhs_batch_axes[0] = 0;
  cfg.lhs_batch_axes[1] = 1;
  cfg.rhs_batch_count = 2;
  cfg.rhs_batch_axes[0] = 0;
  cfg.rhs_batch_axes[1] = 1;
  return cml_op_dot_general(f, lhs, rhs, &cfg);
}

#if defined(CML_BENCH_HAVE_OPENBLAS)
// All f32 cases are row-major products that fold into (batched) sgemm calls.
static void native_sgemm(const bench_case_t* c, const void* const* inputs, void* output) {
  const int64_t* d = c->dims;
  const float* a = inputs[0];
  const float* b = inputs[1];
  float* out = output;
  int m = (int)d[MM_M], k = (int)d[MM_K], n = (int)d[MM_N];
  bool trans = d[MM_TRANS_B] != 0;
  for (int64_t i = 0; i < d[MM_BATCH]; ++i) {
    const float* bi = d[MM_BATCH] > 1 ? b + i * k * n : b;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, trans ? CblasTrans : CblasNoTrans, m, n, k, 1.0f,
                a + i * m * k, k, bi, trans ? k : n, 0.0f, out + i * m * n, n);
  }
}
#endif

static void add_case(bench_case_t* cases, size_t* count, bench_build_fn build, cml_dtype_t dtype,
                     int64_t batch, int64_t m, int64_t k, int64_t n, bool trans, bool out_f32,
                     int64_t d0, int64_t d1, const char* label) {
  bench_case_t* c = &cases[(*count)++];
  memset(c, 0, sizeof *c);
  c->group = "matmul";
  c->build = build;
  c->dtype = dtype;
  c->dims[MM_BATCH] = batch;
  c->dims[MM_M] = m;
  c->dims[MM_K] = k;
  c->dims[MM_N] = n;
  c->dims[MM_TRANS_B] = trans;
  c->dims[MM_OUT_F32] = out_f32;
  c->dims[MM_D0] = d0;
  c->dims[MM_D1] = d1;
  c->flops = 2.0 * (double)batch * (double)m * (double)k * (double)n;
  c->heavy = c->flops > 1e9;
  const char* type = dtype == CML_DTYPE_BF16  ? (out_f32 ? "bf16->f32" : "bf16")
                     : dtype == CML_DTYPE_F16 ? (out_f32 ? "f16->f32" : "f16")
                                              : "f32";
  bench_case_name(c, "%s %s", type, label);
#if defined(CML_BENCH_HAVE_OPENBLAS)
  // (A constant rhs is not among the inputs the native contender gets.)
  if (dtype == CML_DTYPE_F32 && build != build_matmul_const && build != build_seed_3d_const) {
    c->native_name = "openblas";
    c->native = native_sgemm;
  }
#endif
}

static void add_square(bench_case_t* cases, size_t* count, cml_dtype_t dtype, bool out_f32,
                       int64_t m, int64_t k, int64_t n) {
  char label[64];
  snprintf(label, sizeof label, "%lldx%lldx%lld (MxKxN)", (long long)m, (long long)k, (long long)n);
  add_case(cases, count, build_matmul, dtype, 1, m, k, n, false, out_f32, 0, 0, label);
}

int main(int argc, char** argv) {
  bench_options_t opts;
  if (!bench_parse_args(&opts, argc, argv, "matmul / DotGeneral, f32 and bf16")) return 2;
#if defined(CML_BENCH_HAVE_OPENBLAS)
  if (opts.threads > 0) openblas_set_num_threads(opts.threads);
  if (!opts.list) {
    printf("# contender %-18s%s| %d thread(s), core %s\n", "openblas", OPENBLAS_VERSION,
           openblas_get_num_threads(), openblas_get_corename());
  }
#else
  if (!opts.list) printf("# contender openblas           not built (libopenblas-dev not found)\n");
#endif
  bench_case_t cases[48];
  size_t count = 0;
  add_square(cases, &count, CML_DTYPE_F32, false, 64, 64, 64);
  add_square(cases, &count, CML_DTYPE_F32, false, 256, 256, 256);
  add_square(cases, &count, CML_DTYPE_F32, false, 512, 512, 512);
  add_square(cases, &count, CML_DTYPE_F32, false, 1024, 1024, 1024);
  add_square(cases, &count, CML_DTYPE_F32, false, 1536, 1920, 1024);
  add_square(cases, &count, CML_DTYPE_F32, false, 1, 4096, 4096);  // GEMV-like
  // Skinny products (a few rows against a weight larger than the last-level cache).
  add_square(cases, &count, CML_DTYPE_F32, false, 8, 4096, 4096);
  add_square(cases, &count, CML_DTYPE_F32, false, 16, 4096, 4096);
  add_square(cases, &count, CML_DTYPE_F32, false, 32, 4096, 4096);
  // The same products with the rhs stored [N, K] (a weight in the PyTorch / GGUF layout): the
  // c backend reads it row by row in place (transposed-B tiles, M <= 128).
  add_case(cases, &count, build_matmul, CML_DTYPE_F32, 1, 8, 4096, 4096, true, false, 0, 0,
           "8x4096x4096 (transposed rhs)");
  add_case(cases, &count, build_matmul, CML_DTYPE_F32, 1, 32, 4096, 4096, true, false, 0, 0,
           "32x4096x4096 (transposed rhs)");
  add_case(cases, &count, build_matmul, CML_DTYPE_F32, 1, 64, 4096, 4096, true, false, 0, 0,
           "64x4096x4096 (transposed rhs)");
  add_case(cases, &count, build_matmul, CML_DTYPE_F32, 1, 128, 4096, 4096, true, false, 0, 0,
           "128x4096x4096 (transposed rhs)");
  // The seed's DotGeneral benchmark shapes.
  add_case(cases, &count, build_seed_3d, CML_DTYPE_F32, 1, 32 * 13, 1536, 384, false, false, 32, 13,
           "32x13x1536 @ 1536x384");
  add_case(cases, &count, build_seed_3d, CML_DTYPE_F32, 1, 32 * 13, 1536, 384, true, false, 32, 13,
           "32x13x1536 @ 384x1536 (transposed rhs)");
  add_case(cases, &count, build_seed_3d, CML_DTYPE_F32, 1, 32 * 13, 384, 1152, false, false, 32, 13,
           "32x13x384 @ 384x1152");
  add_case(cases, &count, build_batched, CML_DTYPE_F32, 32 * 12, 13, 13, 32, false, false, 32, 12,
           "32x12x13x13 @ 32x12x13x32 (batch 0,1)");
  // The same products with the weight a constant of the module ("const rhs": packed once when
  // the c backend compiles; compare with the parameter cases above in the same run).
  add_case(cases, &count, build_matmul_const, CML_DTYPE_F32, 1, 16, 4096, 4096, false, false, 0, 0,
           "16x4096x4096 (MxKxN) const rhs");
  add_case(cases, &count, build_matmul_const, CML_DTYPE_F32, 1, 32, 4096, 4096, false, false, 0, 0,
           "32x4096x4096 (MxKxN) const rhs");
  add_case(cases, &count, build_seed_3d_const, CML_DTYPE_F32, 1, 32 * 13, 1536, 384, false, false,
           32, 13, "32x13x1536 @ 1536x384 const rhs");
  add_case(cases, &count, build_seed_3d_const, CML_DTYPE_F32, 1, 32 * 13, 1536, 384, true, false,
           32, 13, "32x13x1536 @ 384x1536 (transposed rhs) const rhs");
  add_case(cases, &count, build_seed_3d_const, CML_DTYPE_F32, 1, 32 * 13, 384, 1152, false, false,
           32, 13, "32x13x384 @ 384x1152 const rhs");
  // MLP layers (784-512, 512-512) at batch 16 and 32, weight as parameter and as constant.
  add_square(cases, &count, CML_DTYPE_F32, false, 16, 784, 512);
  add_square(cases, &count, CML_DTYPE_F32, false, 32, 512, 512);
  add_case(cases, &count, build_matmul_const, CML_DTYPE_F32, 1, 16, 784, 512, false, false, 0, 0,
           "16x784x512 (MxKxN) const rhs");
  add_case(cases, &count, build_matmul_const, CML_DTYPE_F32, 1, 32, 512, 512, false, false, 0, 0,
           "32x512x512 (MxKxN) const rhs");
  // bf16: bf16 output (XLA's default), and bf16 inputs with f32 accumulation and output.
  add_square(cases, &count, CML_DTYPE_BF16, false, 512, 512, 512);
  add_square(cases, &count, CML_DTYPE_BF16, false, 1536, 1920, 1024);
  add_square(cases, &count, CML_DTYPE_BF16, true, 512, 512, 512);
  add_square(cases, &count, CML_DTYPE_BF16, true, 1536, 1920, 1024);
  add_square(cases, &count, CML_DTYPE_BF16, false, 1, 4096, 4096);  // bf16 GEMV
  // f16 operands (widened while packing) with an f16 output.
  add_square(cases, &count, CML_DTYPE_F16, false, 512, 512, 512);
  bench_run(&opts, cases, count);
  return bench_finish(&opts);
}
