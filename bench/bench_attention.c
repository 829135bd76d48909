// SPDX-License-Identifier: Apache-2.0
// bench/bench_attention.c: FusedScaledDotProductAttention forward, and forward + backward
// (dq + dk + dv of sum(o * g) through cml_gradients), the c backend's native tiled kernels
// ("c": the forward and FusedScaledDotProductAttentionVJP) against the decomposition
// ("c:fusion=false", differentiated op by op) and xla:cpu (which decomposes), at seq 128 and
// 1024, f32 (and bf16 without causality). Without -b flags the contenders are those three.
#include <string.h>

#include "bench/bench_common.h"

enum { AT_B = 0, AT_H = 1, AT_S = 2, AT_D = 3, AT_CAUSAL = 4, AT_GRAD = 5 };

static cml_value_t build_sdpa(cml_function_t* f, const bench_case_t* c) {
  const int64_t* d = c->dims;
  int64_t dims[4] = {d[AT_B], d[AT_H], d[AT_S], d[AT_D]};
  cml_value_t q = bench_param(f, "q", c->dtype, 4, dims);
  cml_value_t k = bench_param(f, "k", c->dtype, 4, dims);
  cml_value_t v = bench_param(f, "v", c->dtype, 4, dims);
  cml_sdpa_config_t cfg;
  cml_sdpa_config_init(&cfg);
  cfg.causal = d[AT_CAUSAL] != 0;
  cml_value_t o = cml_op_fused_sdpa(f, q, k, v, CML_ATTENTION_LAYOUT_BHSD, &cfg, NULL, NULL);
  if (!d[AT_GRAD]) return o;
  cml_value_t g = bench_param(f, "g", c->dtype, 4, dims);
  cml_value_t loss = cml_op_reduce_sum(f, cml_op_mul(f, o, g), NULL, 0);
  cml_value_t grads[3];
  cml_status_t st = cml_gradients(f, loss, (cml_value_t[]){q, k, v}, 3, grads);
  if (st != CML_OK) {
    cml_status_free(st);  // the error sticks to the builder; the runner reports it
    return CML_VALUE_INVALID;
  }
  return cml_op_add(f, cml_op_add(f, grads[0], grads[1]), grads[2]);
}

static void add_case(bench_case_t* cases, size_t* count, cml_dtype_t dtype, int64_t b, int64_t h,
                     int64_t s, int64_t d, bool causal, bool grad) {
  bench_case_t* c = &cases[(*count)++];
  memset(c, 0, sizeof *c);
  c->group = "sdpa";
  c->build = build_sdpa;
  c->dtype = dtype;
  int64_t dims[8] = {b, h, s, d, causal, grad};
  memcpy(c->dims, dims, sizeof dims);
  // q k^T and p v, each 2 flops per multiply-add (causal: counted in full); the backward adds
  // dp = g v^T, dv = p^T g, dk = ds^T q, dq = ds k (the recomputed q k^T not counted).
  c->flops = (grad ? 12.0 : 4.0) * (double)(b * h) * (double)s * (double)s * (double)d;
  bench_case_name(c, "%s BHSD b%lld h%lld seq %lld d%lld%s%s",
                  dtype == CML_DTYPE_BF16 ? "bf16" : "f32", (long long)b, (long long)h,
                  (long long)s, (long long)d, causal ? " causal" : "", grad ? " fwd+bwd" : "");
}

int main(int argc, char** argv) {
  bool explicit_backends = false;
  for (int i = 1; i < argc; ++i) explicit_backends |= strcmp(argv[i], "-b") == 0;
  bench_options_t opts;
  if (!bench_parse_args(&opts, argc, argv, "fused attention, native vs decomposition")) return 2;
  if (!explicit_backends) {
    opts.configs[0] = "c";
    opts.configs[1] = "c:fusion=false";
    opts.configs[2] = "xla:cpu";
    opts.config_count = 3;
  }
  bench_case_t cases[12];
  size_t count = 0;
  const cml_dtype_t f32 = CML_DTYPE_F32, bf16 = CML_DTYPE_BF16;
  for (int grad = 0; grad < 2; ++grad) {
    add_case(cases, &count, f32, 8, 4, 128, 64, false, grad);
    add_case(cases, &count, f32, 8, 4, 128, 64, true, grad);
    add_case(cases, &count, f32, 1, 8, 1024, 64, false, grad);
    add_case(cases, &count, f32, 1, 8, 1024, 64, true, grad);
    add_case(cases, &count, bf16, 8, 4, 128, 64, false, grad);
    add_case(cases, &count, bf16, 1, 8, 1024, 64, false, grad);
  }
  bench_run(&opts, cases, count);
  return bench_finish(&opts);
}
