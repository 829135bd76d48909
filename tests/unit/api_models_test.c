// SPDX-License-Identifier: Apache-2.0
// tests/unit/api_models_test.c: small realistic models built with the public API only (MLP with
// a softmax written from primitives, conv + pooling, layer norm, a While gradient descent, If,
// Sort-based top-k with Gather, Call), compared against plain C loops written here.
#include <math.h>

#include "api_common.h"
#include "test.h"

static cml_backend_t* api_backend(void) {
  cml_backend_t* backend = NULL;
  cml_status_t st = cml_backend_new_with_config("c", &backend);
  if (st != CML_OK) {
    fprintf(stderr, "backend: %s\n", cml_status_message(st));
    cml_status_free(st);
    return NULL;
  }
  return backend;
}

//===--- MLP with softmax from primitives ---===//

enum { kB = 4, kI = 3, kH = 5, kO = 3 };

TEST(mlp_softmax) {
  static const float x[kB][kI] = {{1, -2, 0.5f}, {0, 1.5f, -1}, {2, 0.25f, 3}, {-1, -1, -1}};
  static const float w1[kI][kH] = {
      {0.5f, -1, 0.25f, 2, -0.5f}, {1, 0.75f, -0.5f, 0, 0.125f}, {-0.25f, 0.5f, 1.5f, -1, 1}};
  static const float b1[kH] = {0.1f, -0.2f, 0.3f, 0, -0.5f};
  static const float w2[kH][kO] = {
      {1, -1, 0.5f}, {0.5f, 0.25f, -2}, {-0.75f, 1, 0}, {2, 0.5f, 0.1f}, {0, -1.5f, 1}};
  // Reference in double.
  double want[kB][kO];
  for (int b = 0; b < kB; ++b) {
    double h[kH], logits[kO], mx = -INFINITY, sum = 0;
    for (int j = 0; j < kH; ++j) {
      double acc = b1[j];
      for (int i = 0; i < kI; ++i) acc += (double)x[b][i] * w1[i][j];
      h[j] = tanh(acc);
    }
    for (int k = 0; k < kO; ++k) {
      double acc = 0;
      for (int j = 0; j < kH; ++j) acc += h[j] * w2[j][k];
      logits[k] = acc;
      if (acc > mx) mx = acc;
    }
    for (int k = 0; k < kO; ++k) sum += exp(logits[k] - mx);
    for (int k = 0; k < kO; ++k) want[b][k] = exp(logits[k] - mx) / sum;
  }

  cml_backend_t* backend = api_backend();
  ASSERT_TRUE(backend);
  cml_builder_t* bld = NULL;
  ASSERT_STATUS_OK(cml_builder_create(backend, "mlp_softmax", &bld));
  cml_function_t* f = cml_builder_main(bld);
  cml_shape_t xs = API_SHAPE(CML_DTYPE_F32, kB, kI), w1s = API_SHAPE(CML_DTYPE_F32, kI, kH);
  cml_shape_t b1s = API_SHAPE(CML_DTYPE_F32, kH), w2s = API_SHAPE(CML_DTYPE_F32, kH, kO);
  cml_value_t vx = cml_parameter(f, "x", &xs);
  cml_value_t vw1 = cml_parameter(f, "w1", &w1s);
  cml_value_t vb1 = cml_constant(f, &b1s, b1);
  cml_value_t vw2 = cml_constant(f, &w2s, w2);
  cml_value_t h = cml_op_dot(f, vx, vw1);
  h = cml_op_add(f, h, cml_op_broadcast_in_dim(f, vb1, (int64_t[]){kB, kH}, 2, (int64_t[]){1}, 1));
  h = cml_op_tanh(f, h);
  cml_value_t logits = cml_op_dot(f, h, vw2);
  cml_value_t mx = cml_op_reduce_max(f, logits, (int64_t[]){1}, 1);
  cml_value_t mxb = cml_op_broadcast_in_dim(f, mx, (int64_t[]){kB, kO}, 2, (int64_t[]){0}, 1);
  cml_value_t e = cml_op_exp(f, cml_op_sub(f, logits, mxb));
  cml_value_t s = cml_op_reduce_sum(f, e, (int64_t[]){1}, 1);
  cml_value_t sb = cml_op_broadcast_in_dim(f, s, (int64_t[]){kB, kO}, 2, (int64_t[]){0}, 1);
  cml_value_t y = cml_op_div(f, e, sb);
  cml_executable_t* exe = NULL;
  ASSERT_STATUS_OK(api_finish(bld, &y, 1, &exe));
  ASSERT_EQ_INT(cml_executable_input_count(exe), 2);
  ASSERT_STREQ(cml_executable_input_name(exe, 1), "w1");
  float got[kB][kO];
  cml_status_t st = api_run(backend, exe, (const void* const[]){x, w1}, (void* const[]){got});
  cml_executable_release(exe);
  cml_backend_release(backend);
  ASSERT_STATUS_OK(st);
  for (int b = 0; b < kB; ++b) {
    for (int k = 0; k < kO; ++k) ASSERT_NEAR(got[b][k], want[b][k], 1e-5);
  }
}

//===--- conv + relu + pooling via ReduceWindow ---===//

enum { kN = 2, kHW = 5, kCi = 2, kCo = 3, kK = 3 };

TEST(conv_pool) {
  float in[kN][kHW][kHW][kCi], ker[kK][kK][kCi][kCo];
  for (int n = 0; n < kN; ++n)
    for (int i = 0; i < kHW; ++i)
      for (int j = 0; j < kHW; ++j)
        for (int c = 0; c < kCi; ++c)
          in[n][i][j][c] = (float)((n * 7 + i * 3 + j * 5 + c) % 11) - 5.0f;
  for (int a = 0; a < kK; ++a)
    for (int b = 0; b < kK; ++b)
      for (int c = 0; c < kCi; ++c)
        for (int o = 0; o < kCo; ++o)
          ker[a][b][c][o] = (float)((a * 5 + b * 3 + c * 2 + o) % 7) * 0.25f - 0.75f;
  // Reference: SAME conv (pad 1), relu, then max pool 2x2 stride 2 (output 2x2) and sum pool
  // 3x3 stride 1 with padding 1 (output 5x5).
  double conv[kN][kHW][kHW][kCo];
  for (int n = 0; n < kN; ++n)
    for (int i = 0; i < kHW; ++i)
      for (int j = 0; j < kHW; ++j)
        for (int o = 0; o < kCo; ++o) {
          double acc = 0;
          for (int a = 0; a < kK; ++a)
            for (int b = 0; b < kK; ++b) {
              int ii = i + a - 1, jj = j + b - 1;
              if (ii < 0 || jj < 0 || ii >= kHW || jj >= kHW) continue;
              for (int c = 0; c < kCi; ++c) acc += (double)in[n][ii][jj][c] * ker[a][b][c][o];
            }
          conv[n][i][j][o] = acc > 0 ? acc : 0;
        }
  double maxpool[kN][2][2][kCo], sumpool[kN][kHW][kHW][kCo];
  for (int n = 0; n < kN; ++n)
    for (int o = 0; o < kCo; ++o) {
      for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 2; ++j) {
          double m = -INFINITY;
          for (int a = 0; a < 2; ++a)
            for (int b = 0; b < 2; ++b) m = fmax(m, conv[n][2 * i + a][2 * j + b][o]);
          maxpool[n][i][j][o] = m;
        }
      for (int i = 0; i < kHW; ++i)
        for (int j = 0; j < kHW; ++j) {
          double acc = 0;
          for (int a = -1; a <= 1; ++a)
            for (int b = -1; b <= 1; ++b) {
              int ii = i + a, jj = j + b;
              if (ii >= 0 && jj >= 0 && ii < kHW && jj < kHW) acc += conv[n][ii][jj][o];
            }
          sumpool[n][i][j][o] = acc;
        }
    }

  cml_backend_t* backend = api_backend();
  ASSERT_TRUE(backend);
  cml_builder_t* bld = NULL;
  ASSERT_STATUS_OK(cml_builder_create(backend, "convnet", &bld));
  cml_function_t* f = cml_builder_main(bld);
  cml_shape_t ins = API_SHAPE(CML_DTYPE_F32, kN, kHW, kHW, kCi);
  cml_shape_t ks = API_SHAPE(CML_DTYPE_F32, kK, kK, kCi, kCo);
  cml_value_t vin = cml_parameter(f, "image", &ins);
  cml_value_t vk = cml_parameter(f, "kernel", &ks);
  cml_conv_config_t cc;
  memset(&cc, 0, sizeof cc);
  cc.spatial_count = 2;
  cc.input_batch_axis = 0;
  cc.input_channel_axis = 3;
  cc.input_spatial_axes[0] = 1;
  cc.input_spatial_axes[1] = 2;
  cc.kernel_input_channel_axis = 2;
  cc.kernel_output_channel_axis = 3;
  cc.kernel_spatial_axes[0] = 0;
  cc.kernel_spatial_axes[1] = 1;
  cc.output_batch_axis = 0;
  cc.output_channel_axis = 3;
  cc.output_spatial_axes[0] = 1;
  cc.output_spatial_axes[1] = 2;
  cc.padding_low[0] = cc.padding_low[1] = 1;
  cc.padding_high[0] = cc.padding_high[1] = 1;
  cml_value_t c = cml_op_conv_general(f, vin, vk, &cc);
  c = cml_op_max(f, c, cml_constant_scalar_f64(f, CML_DTYPE_F32, 0.0));
  cml_window_config_t wc;
  memset(&wc, 0, sizeof wc);
  wc.rank = 4;
  wc.window_dims[0] = 1;
  wc.window_dims[1] = 2;
  wc.window_dims[2] = 2;
  wc.window_dims[3] = 1;  // strides 0: same as the window
  cml_value_t mp = cml_op_reduce_window(f, c, CML_REDUCE_MAX, &wc);
  cml_window_config_t sc;
  memset(&sc, 0, sizeof sc);
  sc.rank = 4;
  for (int a = 0; a < 4; ++a) sc.strides[a] = 1;
  sc.window_dims[0] = sc.window_dims[3] = 1;
  sc.window_dims[1] = sc.window_dims[2] = 3;
  sc.padding_low[1] = sc.padding_low[2] = sc.padding_high[1] = sc.padding_high[2] = 1;
  cml_value_t sp = cml_op_reduce_window(f, c, CML_REDUCE_SUM, &sc);
  cml_executable_t* exe = NULL;
  ASSERT_STATUS_OK(api_finish(bld, (cml_value_t[]){mp, sp}, 2, &exe));
  ASSERT_EQ_INT(cml_executable_output_shape(exe, 0)->dims[1], 2);
  ASSERT_EQ_INT(cml_executable_output_shape(exe, 1)->dims[2], kHW);
  float got_mp[kN][2][2][kCo], got_sp[kN][kHW][kHW][kCo];
  cml_status_t st =
      api_run(backend, exe, (const void* const[]){in, ker}, (void* const[]){got_mp, got_sp});
  cml_executable_release(exe);
  cml_backend_release(backend);
  ASSERT_STATUS_OK(st);
  for (int n = 0; n < kN; ++n)
    for (int o = 0; o < kCo; ++o) {
      for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 2; ++j) ASSERT_NEAR(got_mp[n][i][j][o], maxpool[n][i][j][o], 1e-4);
      for (int i = 0; i < kHW; ++i)
        for (int j = 0; j < kHW; ++j) ASSERT_NEAR(got_sp[n][i][j][o], sumpool[n][i][j][o], 1e-3);
    }
}

//===--- layer norm from primitives ---===//

TEST(layer_norm) {
  enum { R = 3, C = 6 };
  static const float x[R][C] = {{1, 2, 3, 4, 5, 6}, {-1, 0.5f, 2, -3, 8, 0}, {7, 7, 7, 7, 7, 8}};
  static const float gamma[C] = {1, 0.5f, 2, -1, 1.5f, 0.25f};
  static const float beta[C] = {0, 0.1f, -0.2f, 0.3f, 0, 1};
  const double eps = 1e-5;
  double want[R][C];
  for (int r = 0; r < R; ++r) {
    double mean = 0, var = 0;
    for (int c = 0; c < C; ++c) mean += x[r][c];
    mean /= C;
    for (int c = 0; c < C; ++c) var += (x[r][c] - mean) * (x[r][c] - mean);
    var /= C;
    for (int c = 0; c < C; ++c)
      want[r][c] = (x[r][c] - mean) / sqrt(var + eps) * gamma[c] + beta[c];
  }
  cml_backend_t* backend = api_backend();
  ASSERT_TRUE(backend);
  cml_builder_t* bld = NULL;
  ASSERT_STATUS_OK(cml_builder_create(backend, "layer_norm", &bld));
  cml_function_t* f = cml_builder_main(bld);
  cml_shape_t xs = API_SHAPE(CML_DTYPE_F32, R, C), gs = API_SHAPE(CML_DTYPE_F32, C);
  cml_value_t vx = cml_parameter(f, "x", &xs);
  cml_value_t vg = cml_parameter(f, "gamma", &gs);
  cml_value_t vb = cml_parameter(f, "beta", &gs);
  const int64_t rc[2] = {R, C};
  cml_value_t inv_n = cml_constant_scalar_f64(f, CML_DTYPE_F32, 1.0 / C);
  cml_value_t mean = cml_op_mul(f, cml_op_reduce_sum(f, vx, (int64_t[]){1}, 1), inv_n);
  cml_value_t d = cml_op_sub(f, vx, cml_op_broadcast_in_dim(f, mean, rc, 2, (int64_t[]){0}, 1));
  cml_value_t var =
      cml_op_mul(f, cml_op_reduce_sum(f, cml_op_mul(f, d, d), (int64_t[]){1}, 1), inv_n);
  cml_value_t rs =
      cml_op_rsqrt(f, cml_op_add(f, var, cml_constant_scalar_f64(f, CML_DTYPE_F32, eps)));
  cml_value_t y = cml_op_mul(f, d, cml_op_broadcast_in_dim(f, rs, rc, 2, (int64_t[]){0}, 1));
  y = cml_op_mul(f, y, cml_op_broadcast_in_dim(f, vg, rc, 2, (int64_t[]){1}, 1));
  y = cml_op_add(f, y, cml_op_broadcast_in_dim(f, vb, rc, 2, (int64_t[]){1}, 1));
  cml_executable_t* exe = NULL;
  ASSERT_STATUS_OK(api_finish(bld, &y, 1, &exe));
  float got[R][C];
  cml_status_t st =
      api_run(backend, exe, (const void* const[]){x, gamma, beta}, (void* const[]){got});
  cml_executable_release(exe);
  cml_backend_release(backend);
  ASSERT_STATUS_OK(st);
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) ASSERT_NEAR(got[r][c], want[r][c], 2e-4);
}

//===--- While: gradient descent on a quadratic ---===//

// minimize sum(a * (w - t)^2): w <- w - lr * 2a(w - t), for |steps| iterations (a parameter).
TEST(while_gradient_descent) {
  enum { D = 4 };
  static const float a[D] = {1, 2, 0.5f, 3};
  static const float t[D] = {1, -2, 4, 0.5f};
  static const float w0[D] = {0, 0, 0, 0};
  const float lr = 0.05f;
  const int32_t steps = 37;
  float want[D];
  memcpy(want, w0, sizeof want);
  for (int s = 0; s < steps; ++s)
    for (int k = 0; k < D; ++k) want[k] = want[k] - lr * (2.0f * a[k] * (want[k] - t[k]));
  double want_loss = 0;
  for (int k = 0; k < D; ++k) want_loss += a[k] * (want[k] - t[k]) * (want[k] - t[k]);

  cml_backend_t* backend = api_backend();
  ASSERT_TRUE(backend);
  cml_builder_t* bld = NULL;
  ASSERT_STATUS_OK(cml_builder_create(backend, "gd", &bld));
  cml_function_t* f = cml_builder_main(bld);
  cml_shape_t ws = API_SHAPE(CML_DTYPE_F32, D);
  cml_shape_t is = cml_shape_scalar(CML_DTYPE_I32);
  cml_value_t vw = cml_parameter(f, "w0", &ws);
  cml_value_t vn = cml_parameter(f, "steps", &is);
  cml_value_t va = cml_constant(f, &ws, a);
  cml_value_t vt = cml_constant(f, &ws, t);
  cml_value_t i0 = cml_constant_scalar_i64(f, CML_DTYPE_I32, 0);

  cml_function_t *cond = NULL, *body = NULL;
  ASSERT_STATUS_OK(cml_function_new_closure(f, &cond));
  ASSERT_STATUS_OK(cml_function_new_closure(f, &body));
  {
    cml_value_t ci = cml_parameter(cond, "i", &is);
    (void)cml_parameter(cond, "w", &ws);
    cml_value_t lt = cml_op_less_than(cond, ci, vn);  // vn captured from main
    ASSERT_STATUS_OK(cml_function_return(cond, &lt, 1));
  }
  {
    cml_value_t bi = cml_parameter(body, "i", &is);
    cml_value_t bw = cml_parameter(body, "w", &ws);
    cml_value_t grad =
        cml_op_mul(body, cml_op_mul(body, cml_constant_scalar_f64(body, CML_DTYPE_F32, 2.0), va),
                   cml_op_sub(body, bw, vt));
    cml_value_t nw = cml_op_sub(
        body, bw, cml_op_mul(body, cml_constant_scalar_f64(body, CML_DTYPE_F32, lr), grad));
    cml_value_t ni = cml_op_add(body, bi, cml_constant_scalar_i64(body, CML_DTYPE_I32, 1));
    ASSERT_STATUS_OK(cml_function_return(body, (cml_value_t[]){ni, nw}, 2));
  }
  cml_value_t out[2];
  ASSERT_TRUE(cml_op_while(f, cond, body, (cml_value_t[]){i0, vw}, 2, out));
  cml_value_t d = cml_op_sub(f, out[1], vt);
  cml_value_t loss = cml_op_reduce_sum(f, cml_op_mul(f, va, cml_op_mul(f, d, d)), NULL, 0);
  cml_executable_t* exe = NULL;
  ASSERT_STATUS_OK(api_finish(bld, (cml_value_t[]){out[0], out[1], loss}, 3, &exe));
  int32_t got_i = -1;
  float got_w[D], got_loss = -1;
  cml_status_t st = api_run(backend, exe, (const void* const[]){w0, &steps},
                            (void* const[]){&got_i, got_w, &got_loss});
  // Zero iterations: the state comes back unchanged.
  int32_t zero = 0, got_i0 = -1;
  float got_w0[D], got_loss0 = -1;
  if (st == CML_OK) {
    st = api_run(backend, exe, (const void* const[]){t, &zero},
                 (void* const[]){&got_i0, got_w0, &got_loss0});
  }
  cml_executable_release(exe);
  cml_backend_release(backend);
  ASSERT_STATUS_OK(st);
  ASSERT_EQ_INT(got_i, steps);
  for (int k = 0; k < D; ++k) ASSERT_NEAR(got_w[k], want[k], 1e-5);
  ASSERT_NEAR(got_loss, want_loss, 1e-5);
  ASSERT_EQ_INT(got_i0, 0);
  for (int k = 0; k < D; ++k) ASSERT_EQ_DBL(got_w0[k], t[k]);
  ASSERT_EQ_DBL(got_loss0, 0.0);
}

//===--- If selecting branches ---===//

TEST(if_branches) {
  enum { D = 5 };
  cml_backend_t* backend = api_backend();
  ASSERT_TRUE(backend);
  cml_builder_t* bld = NULL;
  ASSERT_STATUS_OK(cml_builder_create(backend, "if", &bld));
  cml_function_t* f = cml_builder_main(bld);
  cml_shape_t xs = API_SHAPE(CML_DTYPE_F32, D);
  cml_value_t vx = cml_parameter(f, "x", &xs);
  cml_value_t total = cml_op_reduce_sum(f, vx, NULL, 0);
  cml_value_t pred = cml_op_greater_than(f, total, cml_constant_scalar_f64(f, CML_DTYPE_F32, 0));
  cml_function_t *tb = NULL, *fb = NULL;
  ASSERT_STATUS_OK(cml_function_new_closure(f, &tb));
  ASSERT_STATUS_OK(cml_function_new_closure(f, &fb));
  {
    cml_value_t r[2] = {cml_op_mul(tb, vx, cml_constant_scalar_f64(tb, CML_DTYPE_F32, 2)),
                        cml_constant_scalar_i64(tb, CML_DTYPE_I32, 1)};
    ASSERT_STATUS_OK(cml_function_return(tb, r, 2));
  }
  {
    cml_value_t r[2] = {cml_op_neg(fb, vx), cml_op_convert_dtype(fb, total, CML_DTYPE_I32)};
    ASSERT_STATUS_OK(cml_function_return(fb, r, 2));
  }
  cml_value_t out[2];
  ASSERT_TRUE(cml_op_if(f, pred, tb, fb, out));
  cml_executable_t* exe = NULL;
  ASSERT_STATUS_OK(api_finish(bld, out, 2, &exe));
  static const float pos[D] = {1, 2, -0.5f, 0, 3};
  static const float neg[D] = {-1, -2, 0.5f, 0, -3.5f};
  float got[D];
  int32_t tag = 0;
  cml_status_t st = api_run(backend, exe, (const void* const[]){pos}, (void* const[]){got, &tag});
  float got2[D];
  int32_t tag2 = 0;
  if (st == CML_OK)
    st = api_run(backend, exe, (const void* const[]){neg}, (void* const[]){got2, &tag2});
  cml_executable_release(exe);
  cml_backend_release(backend);
  ASSERT_STATUS_OK(st);
  ASSERT_EQ_INT(tag, 1);
  for (int k = 0; k < D; ++k) ASSERT_EQ_DBL(got[k], pos[k] * 2);
  ASSERT_EQ_INT(tag2, -6);  // sum(neg) = -6
  for (int k = 0; k < D; ++k) ASSERT_EQ_DBL(got2[k], -neg[k]);
}

//===--- Sort-based top-k with Gather ---===//

TEST(sort_topk_gather) {
  enum { R = 2, N = 7, K = 3, E = 2 };
  static const float scores[R][N] = {{0.1f, 0.9f, -1, 0.5f, 0.9f, 2, 0}, {5, 4, 3, 2, 1, 0, -1}};
  static const float table[N][E] = {{0, 1},   {10, 11}, {20, 21}, {30, 31},
                                    {40, 41}, {50, 51}, {60, 61}};
  // Reference: stable descending sort; ties keep the lower index first.
  int want_idx[R][K];
  float want_val[R][K];
  for (int r = 0; r < R; ++r) {
    int used[N] = {0};
    for (int k = 0; k < K; ++k) {
      int best = -1;
      for (int i = 0; i < N; ++i)
        if (!used[i] && (best < 0 || scores[r][i] > scores[r][best])) best = i;
      used[best] = 1;
      want_idx[r][k] = best;
      want_val[r][k] = scores[r][best];
    }
  }
  cml_backend_t* backend = api_backend();
  ASSERT_TRUE(backend);
  cml_builder_t* bld = NULL;
  ASSERT_STATUS_OK(cml_builder_create(backend, "topk", &bld));
  cml_function_t* f = cml_builder_main(bld);
  cml_shape_t ss = API_SHAPE(CML_DTYPE_F32, R, N), ts = API_SHAPE(CML_DTYPE_F32, N, E);
  cml_shape_t is = API_SHAPE(CML_DTYPE_I32, R, N);
  cml_value_t vs = cml_parameter(f, "scores", &ss);
  cml_value_t vt = cml_parameter(f, "table", &ts);
  cml_value_t idx = cml_op_iota(f, &is, 1);
  cml_function_t* cmp = NULL;
  ASSERT_STATUS_OK(cml_function_new_closure(f, &cmp));
  cml_shape_t fs = cml_shape_scalar(CML_DTYPE_F32), i32 = cml_shape_scalar(CML_DTYPE_I32);
  cml_value_t lv = cml_parameter(cmp, "lv", &fs);
  cml_value_t rv = cml_parameter(cmp, "rv", &fs);
  (void)cml_parameter(cmp, "li", &i32);
  (void)cml_parameter(cmp, "ri", &i32);
  cml_value_t gt = cml_op_greater_than(cmp, lv, rv);
  ASSERT_STATUS_OK(cml_function_return(cmp, &gt, 1));
  cml_value_t sorted[2];
  ASSERT_TRUE(cml_op_sort(f, cmp, 1, true, (cml_value_t[]){vs, idx}, 2, sorted));
  cml_value_t top_v = cml_op_slice(f, sorted[0], (int64_t[]){0, 0}, (int64_t[]){R, K}, NULL, 2);
  cml_value_t top_i = cml_op_slice(f, sorted[1], (int64_t[]){0, 0}, (int64_t[]){R, K}, NULL, 2);
  // Gather rows of the table: indices [R, K] with an implicit index vector axis (2).
  cml_gather_dims_t gd;
  memset(&gd, 0, sizeof gd);
  gd.index_vector_axis = 2;
  gd.offset_output_axis_count = 1;
  gd.offset_output_axes[0] = 2;
  gd.collapsed_slice_axis_count = 1;
  gd.collapsed_slice_axes[0] = 0;
  gd.start_index_map_count = 1;
  gd.start_index_map[0] = 0;
  gd.slice_size_count = 2;
  gd.slice_sizes[0] = 1;
  gd.slice_sizes[1] = E;
  cml_value_t rows = cml_op_gather(f, vt, top_i, &gd);
  cml_executable_t* exe = NULL;
  ASSERT_STATUS_OK(api_finish(bld, (cml_value_t[]){top_v, top_i, rows}, 3, &exe));
  const cml_shape_t* rs = cml_executable_output_shape(exe, 2);
  ASSERT_EQ_INT(rs->rank, 3);
  ASSERT_EQ_INT(rs->dims[2], E);
  float got_v[R][K], got_rows[R][K][E];
  int32_t got_i[R][K];
  cml_status_t st = api_run(backend, exe, (const void* const[]){scores, table},
                            (void* const[]){got_v, got_i, got_rows});
  cml_executable_release(exe);
  cml_backend_release(backend);
  ASSERT_STATUS_OK(st);
  for (int r = 0; r < R; ++r)
    for (int k = 0; k < K; ++k) {
      ASSERT_EQ_INT(got_i[r][k], want_idx[r][k]);
      ASSERT_EQ_DBL(got_v[r][k], want_val[r][k]);
      for (int e = 0; e < E; ++e) ASSERT_EQ_DBL(got_rows[r][k][e], table[want_idx[r][k]][e]);
    }
}

//===--- Call of a named function, used twice ---===//

TEST(call_named_function) {
  cml_backend_t* backend = api_backend();
  ASSERT_TRUE(backend);
  cml_builder_t* bld = NULL;
  ASSERT_STATUS_OK(cml_builder_create(backend, "call", &bld));
  cml_function_t* f = cml_builder_main(bld);
  cml_function_t* poly = NULL;
  ASSERT_STATUS_OK(cml_builder_new_function(bld, "poly", &poly));
  cml_shape_t s = API_SHAPE(CML_DTYPE_F64, 3);
  {
    cml_value_t p = cml_parameter(poly, "p", &s);
    // 3p^2 - p + 1, and p + 1
    cml_value_t y =
        cml_op_add(poly,
                   cml_op_sub(poly,
                              cml_op_mul(poly, cml_op_mul(poly, p, p),
                                         cml_constant_scalar_f64(poly, CML_DTYPE_F64, 3)),
                              p),
                   cml_constant_scalar_f64(poly, CML_DTYPE_F64, 1));
    cml_value_t z = cml_op_add(poly, p, cml_constant_scalar_f64(poly, CML_DTYPE_F64, 1));
    ASSERT_STATUS_OK(cml_function_return(poly, (cml_value_t[]){y, z}, 2));
  }
  cml_value_t x = cml_parameter(f, "x", &s);
  cml_value_t r1[2], r2[2];
  ASSERT_TRUE(cml_op_call(f, poly, &x, 1, r1));
  ASSERT_TRUE(cml_op_call(f, poly, &r1[1], 1, r2));
  cml_executable_t* exe = NULL;
  ASSERT_STATUS_OK(api_finish(bld, (cml_value_t[]){r1[0], r2[0]}, 2, &exe));
  static const double xv[3] = {0.5, -2, 3};
  double g1[3], g2[3];
  cml_status_t st = api_run(backend, exe, (const void* const[]){xv}, (void* const[]){g1, g2});
  cml_executable_release(exe);
  cml_backend_release(backend);
  ASSERT_STATUS_OK(st);
  for (int k = 0; k < 3; ++k) {
    double p = xv[k], q = p + 1;
    ASSERT_NEAR(g1[k], 3 * p * p - p + 1, 1e-12);
    ASSERT_NEAR(g2[k], 3 * q * q - q + 1, 1e-12);
  }
}

// cml_conv_config_init: the channels-last and channels-first layouts give the same strided,
// padded 2-D convolution (checked against plain loops over the channels-last data), and
// out-of-range arguments leave the axes zeroed for cml_op_conv_general to refuse.
TEST(conv_config_layouts) {
  enum { N = 2, H = 5, W = 4, CI = 3, CO = 2, K = 3, OH = 3, OW = 2 };  // stride 2, pad 1
  float x_last[N][H][W][CI], k_last[K][K][CI][CO], x_first[N][CI][H][W], k_first[CO][CI][K][K];
  for (int n = 0; n < N; ++n)
    for (int i = 0; i < H; ++i)
      for (int j = 0; j < W; ++j)
        for (int c = 0; c < CI; ++c) {
          x_last[n][i][j][c] = (float)((n * 5 + i * 3 + j * 7 + c) % 9) - 4.0f;
          x_first[n][c][i][j] = x_last[n][i][j][c];
        }
  for (int a = 0; a < K; ++a)
    for (int b = 0; b < K; ++b)
      for (int c = 0; c < CI; ++c)
        for (int o = 0; o < CO; ++o) {
          k_last[a][b][c][o] = (float)((a * 2 + b * 5 + c * 3 + o) % 5) * 0.5f - 1.0f;
          k_first[o][c][a][b] = k_last[a][b][c][o];
        }
  double want[N][OH][OW][CO];
  for (int n = 0; n < N; ++n)
    for (int i = 0; i < OH; ++i)
      for (int j = 0; j < OW; ++j)
        for (int o = 0; o < CO; ++o) {
          double acc = 0;
          for (int a = 0; a < K; ++a)
            for (int b = 0; b < K; ++b) {
              const int ii = 2 * i + a - 1, jj = 2 * j + b - 1;
              if (ii < 0 || jj < 0 || ii >= H || jj >= W) continue;
              for (int c = 0; c < CI; ++c) acc += (double)x_last[n][ii][jj][c] * k_last[a][b][c][o];
            }
          want[n][i][j][o] = acc;
        }
  cml_backend_t* backend = api_backend();
  ASSERT_TRUE(backend);
  for (int first = 0; first < 2; ++first) {
    cml_builder_t* bld = NULL;
    ASSERT_STATUS_OK(cml_builder_create(backend, "conv_layout", &bld));
    cml_function_t* f = cml_builder_main(bld);
    cml_shape_t xs =
        first ? API_SHAPE(CML_DTYPE_F32, N, CI, H, W) : API_SHAPE(CML_DTYPE_F32, N, H, W, CI);
    cml_shape_t ks =
        first ? API_SHAPE(CML_DTYPE_F32, CO, CI, K, K) : API_SHAPE(CML_DTYPE_F32, K, K, CI, CO);
    cml_conv_config_t cc;
    cml_conv_config_init(&cc, 2,
                         first ? CML_CONV_LAYOUT_CHANNELS_FIRST : CML_CONV_LAYOUT_CHANNELS_LAST);
    for (int d = 0; d < 2; ++d) cc.strides[d] = 2, cc.padding_low[d] = cc.padding_high[d] = 1;
    const cml_value_t px = cml_parameter(f, "x", &xs);  // parameter 0, then 1
    const cml_value_t pk = cml_parameter(f, "k", &ks);
    cml_value_t y = cml_op_conv_general(f, px, pk, &cc);
    cml_executable_t* exe = NULL;
    ASSERT_STATUS_OK(api_finish(bld, &y, 1, &exe));
    float got[N * OH * OW * CO];
    ASSERT_STATUS_OK(
        api_run(backend, exe,
                (const void* const[]){first ? (const void*)x_first : (const void*)x_last,
                                      first ? (const void*)k_first : (const void*)k_last},
                (void* const[]){got}));
    cml_executable_release(exe);
    for (int n = 0; n < N; ++n)
      for (int i = 0; i < OH; ++i)
        for (int j = 0; j < OW; ++j)
          for (int o = 0; o < CO; ++o) {
            const int at =
                first ? ((n * CO + o) * OH + i) * OW + j : ((n * OH + i) * OW + j) * CO + o;
            ASSERT_NEAR(got[at], want[n][i][j][o], 1e-5);
          }
  }
  // Out of range: axes zeroed, the conv refused with a status.
  cml_conv_config_t bad;
  cml_conv_config_init(&bad, CML_MAX_RANK, CML_CONV_LAYOUT_CHANNELS_LAST);
  ASSERT_EQ_INT(bad.spatial_count, CML_MAX_RANK);
  ASSERT_EQ_INT(bad.input_channel_axis, 0);
  cml_conv_config_init(&bad, 1, CML_CONV_LAYOUT_COUNT);
  ASSERT_EQ_INT(bad.kernel_output_channel_axis, 0);
  cml_conv_config_init(NULL, 2, CML_CONV_LAYOUT_CHANNELS_LAST);  // ignored
  cml_builder_t* bld = NULL;
  ASSERT_STATUS_OK(cml_builder_create(backend, "conv_bad", &bld));
  cml_function_t* f = cml_builder_main(bld);
  cml_shape_t xs = API_SHAPE(CML_DTYPE_F32, 1, 4, 3), ks = API_SHAPE(CML_DTYPE_F32, 2, 3, 2);
  cml_value_t y =
      cml_op_conv_general(f, cml_parameter(f, "x", &xs), cml_parameter(f, "k", &ks), &bad);
  ASSERT_TRUE(y == CML_VALUE_INVALID);
  cml_status_t st = cml_builder_status(bld);
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_INVALID_ARGUMENT);
  cml_status_free(st);
  cml_builder_destroy(bld);
  cml_backend_release(backend);
}

TEST_MAIN(TEST_ENTRY(mlp_softmax), TEST_ENTRY(conv_pool), TEST_ENTRY(conv_config_layouts),
          TEST_ENTRY(layer_norm), TEST_ENTRY(while_gradient_descent), TEST_ENTRY(if_branches),
          TEST_ENTRY(sort_topk_gather), TEST_ENTRY(call_named_function))
