// SPDX-License-Identifier: Apache-2.0
// bench/bench_nn.c: model-level forward passes (inference), c vs c:reference vs xla:cpu: the
// MLP, 2-D convolutions (the 3x3 "same" layer and the 7x7 stride-2 stem), a ResNet basic block
// and a transformer encoder block (d 768, 12 heads, seq 128; f32 and bf16 at batch 1 and 8),
// and one decoder step with a KV cache (a new token against 512 cached positions, the
// same block; f32 at batch 1 and 8, bf16 at batch 1). The graphs come from tools/cml/models.c,
// the same builders `cml bench` runs.
#include <string.h>

#include "bench/bench_common.h"
#include "tools/cml/models.h"

// Case parameters (bench_case_t.dims) per group.
enum { MLP_BATCH = 0 };
enum { CV_N = 0, CV_H = 1, CV_W = 2, CV_C = 3, CV_K = 4, CV_O = 5, CV_STRIDE = 6, CV_PAD = 7 };
enum { RB_N = 0, RB_HW = 1, RB_C = 2 };
enum { TB_BATCH = 0, TB_SEQ = 1, TB_D = 2, TB_HEADS = 3 };
enum { DS_BATCH = 0, DS_CACHED = 1, DS_D = 2, DS_HEADS = 3 };

static cml_value_t build_mlp(cml_function_t* f, const bench_case_t* c) {
  return cml_cli_model_mlp(f, c->dtype, c->dims[MLP_BATCH]);
}

static cml_value_t build_conv(cml_function_t* f, const bench_case_t* c) {
  const int64_t* d = c->dims;
  return cml_cli_model_conv2d(f, c->dtype, d[CV_N], d[CV_H], d[CV_W], d[CV_C], d[CV_K], d[CV_O],
                              d[CV_STRIDE], d[CV_PAD]);
}

static cml_value_t build_resnet(cml_function_t* f, const bench_case_t* c) {
  return cml_cli_model_resnet_block(f, c->dtype, c->dims[RB_N], c->dims[RB_HW], c->dims[RB_C]);
}

static cml_value_t build_transformer(cml_function_t* f, const bench_case_t* c) {
  const int64_t* d = c->dims;
  return cml_cli_model_transformer_block(f, c->dtype, d[TB_BATCH], d[TB_SEQ], d[TB_D], d[TB_HEADS]);
}

static cml_value_t build_decoder_step(cml_function_t* f, const bench_case_t* c) {
  const int64_t* d = c->dims;
  return cml_cli_model_decoder_step(f, c->dtype, d[DS_BATCH], d[DS_CACHED], d[DS_D], d[DS_HEADS]);
}

static bench_case_t* new_case(bench_case_t* cases, size_t* count, const char* group,
                              bench_build_fn build, cml_dtype_t dtype) {
  bench_case_t* c = &cases[(*count)++];
  memset(c, 0, sizeof *c);
  c->group = group;
  c->build = build;
  c->dtype = dtype;
  return c;
}

static void add_conv(bench_case_t* cases, size_t* count, int64_t n, int64_t h, int64_t w,
                     int64_t ch, int64_t k, int64_t o, int64_t stride, int64_t pad,
                     const char* label) {
  bench_case_t* c = new_case(cases, count, "conv2d", build_conv, CML_DTYPE_F32);
  int64_t dims[8] = {n, h, w, ch, k, o, stride, pad};
  memcpy(c->dims, dims, sizeof dims);
  c->flops = cml_cli_model_conv2d_flops(n, h, w, ch, k, o, stride, pad);
  c->heavy = c->flops > 1e9;
  bench_case_name(c, "f32 %s: x[%lld,%lld,%lld,%lld] k[%lld,%lld,%lld,%lld] stride %lld pad %lld",
                  label, (long long)n, (long long)h, (long long)w, (long long)ch, (long long)k,
                  (long long)k, (long long)ch, (long long)o, (long long)stride, (long long)pad);
}

static void add_transformer(bench_case_t* cases, size_t* count, cml_dtype_t dtype, int64_t batch) {
  bench_case_t* c = new_case(cases, count, "transformer", build_transformer, dtype);
  int64_t dims[4] = {batch, 128, 768, 12};
  memcpy(c->dims, dims, sizeof dims);
  c->flops = cml_cli_model_transformer_block_flops(batch, 128, 768);
  c->heavy = true;
  bench_case_name(c, "%s encoder block d768 h12 seq 128, batch %lld",
                  dtype == CML_DTYPE_BF16 ? "bf16" : "f32", (long long)batch);
}

static void add_decoder_step(bench_case_t* cases, size_t* count, cml_dtype_t dtype, int64_t batch) {
  bench_case_t* c = new_case(cases, count, "decoder", build_decoder_step, dtype);
  int64_t dims[4] = {batch, 512, 768, 12};
  memcpy(c->dims, dims, sizeof dims);
  c->flops = cml_cli_model_decoder_step_flops(batch, 512, 768);
  bench_case_name(c, "%s step d768 h12, 1 new token vs 512 cached (KV cache), batch %lld",
                  dtype == CML_DTYPE_BF16 ? "bf16" : "f32", (long long)batch);
}

int main(int argc, char** argv) {
  bench_options_t opts;
  if (!bench_parse_args(&opts, argc, argv, "model-level forward passes")) return 2;
  bench_case_t cases[16];
  size_t count = 0;
  static const int64_t batches[] = {1, 128};
  for (size_t i = 0; i < sizeof batches / sizeof batches[0]; ++i) {
    bench_case_t* c = new_case(cases, &count, "mlp", build_mlp, CML_DTYPE_F32);
    c->dims[MLP_BATCH] = batches[i];
    c->flops = cml_cli_model_mlp_flops(batches[i]);
    bench_case_name(c, "f32 forward 784-512-512-10 relu, batch %lld", (long long)batches[i]);
  }
  add_conv(cases, &count, 8, 32, 32, 64, 3, 64, 1, 1, "3x3 same");
  add_conv(cases, &count, 1, 224, 224, 3, 7, 64, 2, 3, "7x7/2 stem");
  bench_case_t* rb = new_case(cases, &count, "resnet", build_resnet, CML_DTYPE_F32);
  rb->dims[RB_N] = 1;
  rb->dims[RB_HW] = 56;
  rb->dims[RB_C] = 64;
  rb->flops = cml_cli_model_resnet_block_flops(1, 56, 64);
  bench_case_name(rb, "f32 basic block x[1,56,56,64], two 3x3 convs + bias + relu + residual");
  add_transformer(cases, &count, CML_DTYPE_F32, 1);
  add_transformer(cases, &count, CML_DTYPE_F32, 8);
  add_transformer(cases, &count, CML_DTYPE_BF16, 1);
  add_transformer(cases, &count, CML_DTYPE_BF16, 8);
  add_decoder_step(cases, &count, CML_DTYPE_F32, 1);
  add_decoder_step(cases, &count, CML_DTYPE_F32, 8);
  add_decoder_step(cases, &count, CML_DTYPE_BF16, 1);
  add_decoder_step(cases, &count, CML_DTYPE_BF16, 8);
  bench_run(&opts, cases, count);
  return bench_finish(&opts);
}
