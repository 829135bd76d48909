// SPDX-License-Identifier: Apache-2.0
// bench/bench_nn.c: a small MLP forward pass and 2-D convolutions (NHWC, HWIO kernels),
// c vs c:reference vs xla:cpu.
#include <string.h>

#include "bench/bench_common.h"

//===--- MLP: x [B, 784] -> 512 relu -> 512 relu -> 10 ---===//

enum { MLP_BATCH = 0 };
static const int64_t kMlpWidths[] = {784, 512, 512, 10};
#define MLP_LAYERS 3

static cml_value_t build_mlp(cml_function_t* f, const bench_case_t* c) {
  int64_t batch = c->dims[MLP_BATCH];
  cml_value_t h = bench_param(f, "x", c->dtype, 2, (int64_t[]){batch, kMlpWidths[0]});
  cml_value_t weights[MLP_LAYERS], biases[MLP_LAYERS];
  for (int l = 0; l < MLP_LAYERS; ++l) {
    weights[l] = bench_param(f, NULL, c->dtype, 2, (int64_t[]){kMlpWidths[l], kMlpWidths[l + 1]});
    biases[l] = bench_param(f, NULL, c->dtype, 1, &kMlpWidths[l + 1]);
  }
  cml_value_t zero = cml_constant_scalar_f64(f, c->dtype, 0.0);
  for (int l = 0; l < MLP_LAYERS; ++l) {
    int64_t out_dims[2] = {batch, kMlpWidths[l + 1]};
    h = cml_op_dot(f, h, weights[l]);
    h = cml_op_add(f, h, bench_broadcast_back(f, biases[l], out_dims, 2, 0));
    if (l + 1 < MLP_LAYERS) h = cml_op_max(f, h, zero);
  }
  return h;
}

//===--- conv2d: input [N, H, W, C], kernel [KH, KW, C, O] ---===//

enum { CV_N = 0, CV_H = 1, CV_W = 2, CV_C = 3, CV_K = 4, CV_O = 5, CV_STRIDE = 6, CV_PAD = 7 };

static cml_value_t build_conv(cml_function_t* f, const bench_case_t* c) {
  const int64_t* d = c->dims;
  cml_value_t x = bench_param(f, "x", c->dtype, 4, (int64_t[]){d[CV_N], d[CV_H], d[CV_W], d[CV_C]});
  cml_value_t k = bench_param(f, "k", c->dtype, 4, (int64_t[]){d[CV_K], d[CV_K], d[CV_C], d[CV_O]});
  cml_conv_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.spatial_count = 2;
  cfg.input_batch_axis = 0;
  cfg.input_channel_axis = 3;
  cfg.input_spatial_axes[0] = 1;
  cfg.input_spatial_axes[1] = 2;
  cfg.kernel_spatial_axes[0] = 0;
  cfg.kernel_spatial_axes[1] = 1;
  cfg.kernel_input_channel_axis = 2;
  cfg.kernel_output_channel_axis = 3;
  cfg.output_batch_axis = 0;
  cfg.output_channel_axis = 3;
  cfg.output_spatial_axes[0] = 1;
  cfg.output_spatial_axes[1] = 2;
  for (int i = 0; i < 2; ++i) {
    cfg.strides[i] = d[CV_STRIDE];
    cfg.padding_low[i] = d[CV_PAD];
    cfg.padding_high[i] = d[CV_PAD];
  }
  cfg.channel_group_count = 1;
  cfg.batch_group_count = 1;
  cfg.output_dtype = CML_DTYPE_INVALID;
  return cml_op_conv_general(f, x, k, &cfg);
}

static void add_conv(bench_case_t* cases, size_t* count, int64_t n, int64_t h, int64_t w,
                     int64_t ch, int64_t k, int64_t o, int64_t stride, int64_t pad,
                     const char* label) {
  bench_case_t* c = &cases[(*count)++];
  memset(c, 0, sizeof *c);
  c->group = "conv2d";
  c->build = build_conv;
  c->dtype = CML_DTYPE_F32;
  int64_t dims[8] = {n, h, w, ch, k, o, stride, pad};
  memcpy(c->dims, dims, sizeof dims);
  int64_t oh = (h + 2 * pad - k) / stride + 1, ow = (w + 2 * pad - k) / stride + 1;
  c->flops = 2.0 * (double)n * (double)oh * (double)ow * (double)o * (double)(k * k * ch);
  c->heavy = c->flops > 1e9;
  bench_case_name(c, "f32 %s: x[%lld,%lld,%lld,%lld] k[%lld,%lld,%lld,%lld] stride %lld pad %lld",
                  label, (long long)n, (long long)h, (long long)w, (long long)ch, (long long)k,
                  (long long)k, (long long)ch, (long long)o, (long long)stride, (long long)pad);
}

int main(int argc, char** argv) {
  bench_options_t opts;
  if (!bench_parse_args(&opts, argc, argv, "MLP forward and conv2d")) return 2;
  bench_case_t cases[8];
  size_t count = 0;
  static const int64_t batches[] = {1, 128};
  for (size_t i = 0; i < sizeof batches / sizeof batches[0]; ++i) {
    bench_case_t* c = &cases[count++];
    memset(c, 0, sizeof *c);
    c->group = "mlp";
    c->build = build_mlp;
    c->dtype = CML_DTYPE_F32;
    c->dims[MLP_BATCH] = batches[i];
    double macs = 0;
    for (int l = 0; l < MLP_LAYERS; ++l) macs += (double)kMlpWidths[l] * (double)kMlpWidths[l + 1];
    c->flops = 2.0 * macs * (double)batches[i];
    bench_case_name(c, "f32 forward 784-512-512-10 relu, batch %lld", (long long)batches[i]);
  }
  add_conv(cases, &count, 8, 32, 32, 64, 3, 64, 1, 1, "3x3 same");
  add_conv(cases, &count, 1, 224, 224, 3, 7, 64, 2, 3, "7x7/2 stem");
  bench_run(&opts, cases, count);
  return bench_finish(&opts);
}
