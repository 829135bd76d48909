// SPDX-License-Identifier: Apache-2.0
// bench/bench_conv.c: single 2-D convolutions (NHWC input, HWIO kernel, f32), c vs
// c:reference vs xla:cpu: the ResNet stem (7x7 stride 2 on 3 channels), the 3x3 "same" layers
// of ResNet's stages (64, 128 and 256 channels), a 3x3 stride-2 downsampling layer and a 1x1
// projection. The graphs come from tools/cml/models.c, the builder bench_nn and `cml bench` use.
// Three of them also run with the kernel a constant of the module ("const kernel": a weight,
// which the c backend packs once when the executable is compiled).
#include <stdlib.h>
#include <string.h>

#include "bench/bench_common.h"
#include "tools/cml/models.h"

enum { CV_N = 0, CV_H = 1, CV_W = 2, CV_C = 3, CV_K = 4, CV_O = 5, CV_STRIDE = 6, CV_PAD = 7 };

static cml_value_t build_conv(cml_function_t* f, const bench_case_t* c) {
  const int64_t* d = c->dims;
  return cml_cli_model_conv2d(f, c->dtype, d[CV_N], d[CV_H], d[CV_W], d[CV_C], d[CV_K], d[CV_O],
                              d[CV_STRIDE], d[CV_PAD]);
}

// The same convolution with an HWIO kernel that is a constant (small exact values).
static cml_value_t build_conv_const(cml_function_t* f, const bench_case_t* c) {
  const int64_t* d = c->dims;
  const int64_t kdims[4] = {d[CV_K], d[CV_K], d[CV_C], d[CV_O]};
  const int64_t count = kdims[0] * kdims[1] * kdims[2] * kdims[3];
  float* data = malloc((size_t)count * sizeof(float));
  if (!data) return 0;
  for (int64_t i = 0; i < count; ++i) data[i] = (float)(i * 7 % 13 - 6) / 64.0f;
  cml_shape_t ks = cml_shape_make(CML_DTYPE_F32, 4, kdims);
  cml_value_t kernel = cml_constant(f, &ks, data);
  free(data);
  cml_shape_t xs =
      cml_shape_make(CML_DTYPE_F32, 4, (int64_t[]){d[CV_N], d[CV_H], d[CV_W], d[CV_C]});
  cml_value_t x = cml_parameter(f, "x", &xs);
  return cml_cli_model_conv_nhwc(f, x, kernel, d[CV_STRIDE], d[CV_PAD], 1);
}

static void add_conv_ex(bench_case_t* cases, size_t* count, int64_t n, int64_t hw, int64_t ch,
                        int64_t k, int64_t o, int64_t stride, int64_t pad, const char* label,
                        bool constant) {
  bench_case_t* c = &cases[(*count)++];
  memset(c, 0, sizeof *c);
  c->group = "conv2d";
  c->build = constant ? build_conv_const : build_conv;
  c->dtype = CML_DTYPE_F32;
  int64_t dims[8] = {n, hw, hw, ch, k, o, stride, pad};
  memcpy(c->dims, dims, sizeof dims);
  c->flops = cml_cli_model_conv2d_flops(n, hw, hw, ch, k, o, stride, pad);
  c->heavy = c->flops > 1e9;
  bench_case_name(c, "f32 %s: x[%lld,%lld,%lld,%lld] k[%lld,%lld,%lld,%lld] stride %lld pad %lld%s",
                  label, (long long)n, (long long)hw, (long long)hw, (long long)ch, (long long)k,
                  (long long)k, (long long)ch, (long long)o, (long long)stride, (long long)pad,
                  constant ? " const kernel" : "");
}

static void add_conv(bench_case_t* cases, size_t* count, int64_t n, int64_t hw, int64_t ch,
                     int64_t k, int64_t o, int64_t stride, int64_t pad, const char* label) {
  add_conv_ex(cases, count, n, hw, ch, k, o, stride, pad, label, false);
}

int main(int argc, char** argv) {
  bench_options_t opts;
  if (!bench_parse_args(&opts, argc, argv, "2-D convolutions")) return 2;
  bench_case_t cases[12];
  size_t count = 0;
  add_conv(cases, &count, 1, 224, 3, 7, 64, 2, 3, "7x7/2 stem");
  add_conv(cases, &count, 8, 32, 64, 3, 64, 1, 1, "3x3 same");
  add_conv(cases, &count, 1, 56, 64, 3, 64, 1, 1, "3x3 same, ResNet stage 1");
  add_conv(cases, &count, 1, 28, 128, 3, 128, 1, 1, "3x3 same, ResNet stage 2");
  add_conv(cases, &count, 1, 14, 256, 3, 256, 1, 1, "3x3 same, ResNet stage 3");
  add_conv(cases, &count, 1, 56, 64, 3, 128, 2, 1, "3x3/2 downsample");
  add_conv(cases, &count, 1, 56, 64, 1, 256, 1, 0, "1x1 projection");
  add_conv_ex(cases, &count, 1, 56, 64, 3, 64, 1, 1, "3x3 same, ResNet stage 1", true);
  add_conv_ex(cases, &count, 1, 14, 256, 3, 256, 1, 1, "3x3 same, ResNet stage 3", true);
  add_conv_ex(cases, &count, 1, 56, 64, 1, 256, 1, 0, "1x1 projection", true);
  bench_run(&opts, cases, count);
  return bench_finish(&opts);
}
