// SPDX-License-Identifier: Apache-2.0
// kernels/generic/special.c: the "special" kernel group: RNGBitGenerator (XLA's Philox),
// BatchNormForInference / ForTraining / Gradient, and the group's lookup and capabilities
// (FFT lives in special_fft.c).
#include "backends/c/kernels/generic/linalg_internal.h"

//===--- RNGBitGenerator: Philox4x32-10 exactly as XLA's RNG_PHILOX expands it ---===//
//
// How XLA computes RngBitGenerator(RNG_PHILOX, state: u64[3], shape) (its rng_bit_generator
// expander plus the Philox bit generator of its prng library), which this kernel reproduces:
//  1. key = state[0]; the Philox key words are (lo32(key), hi32(key)).
//     The 128-bit counter is state[1] (low 64 bits) and state[2] (high 64 bits); as four
//     32-bit words: (lo32(state[1]), hi32(state[1]), lo32(state[2]), hi32(state[2])).
//  2. It needs W 32-bit words: one per element for 8-, 16- and 32-bit element types (narrow
//     types use 32 bits and keep the low bits, "there aren't many bits in a 16-bit number"),
//     two per element for 64-bit types. It runs B = ceil(W / 4) Philox blocks; block j uses
//     the counter + j (a 128-bit add: the carry out of the low word goes into the high word).
//  3. Each block is Philox4x32 with 10 rounds (Random123's philox4x32_10): a round maps
//     (x0, x1, x2, x3) with (hi0, lo0) = mulhilo(0xD2511F53, x0), (hi1, lo1) =
//     mulhilo(0xCD9E8D57, x2) to (hi1 ^ x1 ^ k0, lo1, hi0 ^ x3 ^ k1, lo0); the key is bumped
//     by (0x9E3779B9, 0xBB67AE85) after every round.
//  4. Output words are taken block by block, word 0..3 within a block ("round-robin" in XLA's
//     words: it concatenates the four output lanes along a minor axis and flattens); the
//     element sequence is row-major in the output shape. 64-bit elements are
//     word[2i] | word[2i+1] << 32. Narrow elements are the low 8/16 bits of word[i]. Float
//     outputs receive the raw bits.
//  5. The new state is (key, counter + B) with the same 128-bit carry.
// The Random123 known-answer vectors for philox4x32_10 check step 3 (unit tests).

static void cmlc_philox_mulhilo(uint32_t a, uint32_t b, uint32_t* hi, uint32_t* lo) {
  uint64_t p = (uint64_t)a * (uint64_t)b;
  *hi = (uint32_t)(p >> 32);
  *lo = (uint32_t)p;
}

// Philox4x32-10 of counter |ctr| under key (|k0|, |k1|), into |out|.
static void cmlc_philox4x32_10(const uint32_t ctr[4], uint32_t k0, uint32_t k1, uint32_t out[4]) {
  uint32_t x0 = ctr[0], x1 = ctr[1], x2 = ctr[2], x3 = ctr[3];
  for (int round = 0; round < 10; ++round) {
    uint32_t hi0, lo0, hi1, lo1;
    cmlc_philox_mulhilo(0xD2511F53u, x0, &hi0, &lo0);
    cmlc_philox_mulhilo(0xCD9E8D57u, x2, &hi1, &lo1);
    uint32_t y0 = hi1 ^ x1 ^ k0, y1 = lo1, y2 = hi0 ^ x3 ^ k1, y3 = lo0;
    x0 = y0, x1 = y1, x2 = y2, x3 = y3;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  out[0] = x0, out[1] = x1, out[2] = x2, out[3] = x3;
}

typedef struct cmlc_rng_ctx_t {
  uint64_t key, ctr_lo, ctr_hi;
  int bits;       // element bits: 8, 16, 32 or 64
  int64_t count;  // elements
  void* out;
} cmlc_rng_ctx_t;

static void cmlc_rng_blocks(void* vctx, int64_t begin, int64_t end, int thread_index) {
  (void)thread_index;
  const cmlc_rng_ctx_t* c = vctx;
  int64_t words_total = c->bits == 64 ? 2 * c->count : c->count;
  for (int64_t j = begin; j < end; ++j) {
    uint64_t lo = c->ctr_lo + (uint64_t)j;
    uint64_t hi = c->ctr_hi + (lo < c->ctr_lo ? 1u : 0u);
    uint32_t ctr[4] = {(uint32_t)lo, (uint32_t)(lo >> 32), (uint32_t)hi, (uint32_t)(hi >> 32)};
    uint32_t w[4];
    cmlc_philox4x32_10(ctr, (uint32_t)c->key, (uint32_t)(c->key >> 32), w);
    for (int q = 0; q < 4; ++q) {
      int64_t wi = 4 * j + q;
      if (wi >= words_total) break;
      switch (c->bits) {
        case 8:
          ((uint8_t*)c->out)[wi] = (uint8_t)w[q];
          break;
        case 16:
          ((uint16_t*)c->out)[wi] = (uint16_t)w[q];
          break;
        case 32:
          ((uint32_t*)c->out)[wi] = w[q];
          break;
        default: {
          // Word wi is the low (even wi) or high (odd wi) half of element wi / 2.
          uint64_t* e = (uint64_t*)c->out + wi / 2;
          if (wi % 2 == 0) {
            *e = (*e & 0xFFFFFFFF00000000ull) | w[q];
          } else {
            *e = (*e & 0xFFFFFFFFull) | ((uint64_t)w[q] << 32);
          }
          break;
        }
      }
    }
  }
}

static cml_status_t cmlc_rng_run(const cmlc_kernel_args_t* args) {
  const uint64_t* state = args->inputs[0];
  const cml_shape_t* vshape = args->output_shapes[1];
  cmlc_rng_ctx_t c;
  c.key = state[0];
  c.ctr_lo = state[1];
  c.ctr_hi = state[2];
  c.bits = cml_dtype_bits(vshape->dtype);
  c.count = cml_shape_element_count(vshape);
  c.out = args->outputs[1];
  int64_t words = c.bits == 64 ? 2 * c.count : c.count;
  int64_t blocks = (words + 3) / 4;
  cmlc_parallel_for(args->pool, blocks, 4096, cmlc_rng_blocks, &c);
  uint64_t* ns = args->outputs[0];
  uint64_t lo = c.ctr_lo + (uint64_t)blocks;
  ns[0] = c.key;
  ns[1] = lo;
  ns[2] = c.ctr_hi + (lo < c.ctr_lo ? 1u : 0u);
  return CML_OK;
}

static bool cmlc_rng_lookup(const cml_module_t* module, const cml_ir_node_t* node,
                            cmlc_kernel_entry_t* out) {
  if (node->input_count != 1 || node->output_count != 2) return false;
  const cml_shape_t* st = &module->values[node->inputs[0]].shape;
  const cml_shape_t* vs = &module->values[node->first_output + 1].shape;
  if (st->dtype != CML_DTYPE_U64 || cml_shape_element_count(st) != 3) return false;
  int bits = cml_dtype_bits(vs->dtype);
  if (cml_dtype_is_packed(vs->dtype) || vs->dtype == CML_DTYPE_BOOL ||
      cml_dtype_is_complex(vs->dtype) || !(bits == 8 || bits == 16 || bits == 32 || bits == 64))
    return false;
  out->run = cmlc_rng_run;
  out->scratch = NULL;
  out->in_place_input = -1;
  return true;
}

//===--- BatchNorm (XLA semantics, computed in double, rounded once) ---===//
//
// The operand is viewed as [outer, C, inner] around the feature axis; each channel's
// statistics are summed in a fixed order by one task (work is split over channels).
//   Inference: y = (x - mean) / sqrt(var + eps) * scale + offset.
//   Training:  mean = sum(x) / N, var = sum((x - mean)^2) / N (biased), y as above.
//   Gradient:  r = 1 / sqrt(var + eps), N = outer * inner,
//              grad_offset = sum(dy), grad_scale = sum(dy * (x - mean)) * r,
//              grad_x = scale * r * (dy - grad_offset / N - (x - mean) * sum(dy * (x - mean))
//                                   * r^2 / N).

typedef struct cmlc_bn_ctx_t {
  cml_op_t op;
  cml_dtype_t dtype;
  int64_t outer, channels, inner;
  int64_t width;  // channels per task of the f32 / f64 path (at most CMLC_BN_BLOCK)
  double eps;
  const void* const* in;
  void* const* out;
} cmlc_bn_ctx_t;

static void cmlc_bn_channels(void* vctx, int64_t begin, int64_t end, int thread_index) {
  (void)thread_index;
  const cmlc_bn_ctx_t* c = vctx;
  cml_dtype_t dt = c->dtype;
  int64_t n = c->outer * c->inner;
  for (int64_t ch = begin; ch < end; ++ch) {
    const void* x = c->in[0];
    double scale = cmlc_load_f64(c->in[1], ch, dt);
    if (c->op == CML_OP_BATCH_NORM_INFERENCE || c->op == CML_OP_BATCH_NORM_TRAINING) {
      double offset = cmlc_load_f64(c->in[2], ch, dt);
      double mean, var;
      if (c->op == CML_OP_BATCH_NORM_INFERENCE) {
        mean = cmlc_load_f64(c->in[3], ch, dt);
        var = cmlc_load_f64(c->in[4], ch, dt);
      } else {
        double sum = 0;
        for (int64_t o = 0; o < c->outer; ++o)
          for (int64_t i = 0; i < c->inner; ++i)
            sum += cmlc_load_f64(x, (o * c->channels + ch) * c->inner + i, dt);
        mean = sum / (double)n;
        double sq = 0;
        for (int64_t o = 0; o < c->outer; ++o) {
          for (int64_t i = 0; i < c->inner; ++i) {
            double d = cmlc_load_f64(x, (o * c->channels + ch) * c->inner + i, dt) - mean;
            sq += d * d;
          }
        }
        var = sq / (double)n;
        cmlc_store_f64(c->out[1], ch, dt, mean);
        cmlc_store_f64(c->out[2], ch, dt, var);
      }
      double r = 1.0 / sqrt(var + c->eps);
      for (int64_t o = 0; o < c->outer; ++o) {
        for (int64_t i = 0; i < c->inner; ++i) {
          int64_t idx = (o * c->channels + ch) * c->inner + i;
          double v = (cmlc_load_f64(x, idx, dt) - mean) * r * scale + offset;
          cmlc_store_f64(c->out[0], idx, dt, v);
        }
      }
      continue;
    }
    // Gradient: inputs x, scale, mean, variance, grad_output.
    double mean = cmlc_load_f64(c->in[2], ch, dt);
    double var = cmlc_load_f64(c->in[3], ch, dt);
    const void* dy = c->in[4];
    double r = 1.0 / sqrt(var + c->eps);
    double sum_dy = 0, sum_dy_xc = 0;
    for (int64_t o = 0; o < c->outer; ++o) {
      for (int64_t i = 0; i < c->inner; ++i) {
        int64_t idx = (o * c->channels + ch) * c->inner + i;
        double g = cmlc_load_f64(dy, idx, dt);
        sum_dy += g;
        sum_dy_xc += g * (cmlc_load_f64(x, idx, dt) - mean);
      }
    }
    cmlc_store_f64(c->out[1], ch, dt, sum_dy_xc * r);
    cmlc_store_f64(c->out[2], ch, dt, sum_dy);
    double mean_dy = sum_dy / (double)n;
    double k = sum_dy_xc * r * r / (double)n;
    for (int64_t o = 0; o < c->outer; ++o) {
      for (int64_t i = 0; i < c->inner; ++i) {
        int64_t idx = (o * c->channels + ch) * c->inner + i;
        double g = cmlc_load_f64(dy, idx, dt);
        double xc = cmlc_load_f64(x, idx, dt) - mean;
        cmlc_store_f64(c->out[0], idx, dt, scale * r * (g - mean_dy - xc * k));
      }
    }
  }
}

// f32 / f64 operands: the same arithmetic in memory order, CMLC_BN_BLOCK channels at a time
// with one double accumulator per channel. Each channel still takes its elements in (outer,
// inner) order, so every sum, and every result, is the per-channel loop's; but a channels-last
// operand (inner 1: NHWC) is read row by row instead of with a stride of C elements per
// channel (the per-channel walk read every cache line C times). [32, 28, 28, 64] training +
// gradient, 1 thread on Zen 5: 15.0 -> 2.3 ms (xla:cpu 3.9-4.3).
enum { CMLC_BN_BLOCK = 128 };

#define CMLC_BN_FAST(NAME, T)                                                                 \
  static void NAME(const cmlc_bn_ctx_t* c, int64_t c0, int64_t c1) {                          \
    const int64_t C = c->channels, inner = c->inner, outer = c->outer, nb = c1 - c0;          \
    const double n = (double)(outer * inner);                                                 \
    const T* x = (const T*)c->in[0];                                                          \
    double scale[CMLC_BN_BLOCK], mean[CMLC_BN_BLOCK], r[CMLC_BN_BLOCK];                       \
    double a0[CMLC_BN_BLOCK], a1[CMLC_BN_BLOCK];                                              \
    for (int64_t b = 0; b < nb; ++b) scale[b] = (double)((const T*)c->in[1])[c0 + b];         \
    if (c->op != CML_OP_BATCH_NORM_GRADIENT) {                                                \
      if (c->op == CML_OP_BATCH_NORM_INFERENCE) {                                             \
        for (int64_t b = 0; b < nb; ++b) {                                                    \
          mean[b] = (double)((const T*)c->in[3])[c0 + b];                                     \
          r[b] = 1.0 / sqrt((double)((const T*)c->in[4])[c0 + b] + c->eps);                   \
        }                                                                                     \
      } else {                                                                                \
        for (int64_t b = 0; b < nb; ++b) a0[b] = a1[b] = 0;                                   \
        for (int64_t o = 0; o < outer; ++o) {                                                 \
          if (inner == 1) {                                                                   \
            const T* xr = x + o * C + c0;                                                     \
            for (int64_t b = 0; b < nb; ++b) a0[b] += (double)xr[b];                          \
            continue;                                                                         \
          }                                                                                   \
          for (int64_t b = 0; b < nb; ++b) {                                                  \
            const T* xr = x + (o * C + c0 + b) * inner;                                       \
            double sum = a0[b];                                                               \
            for (int64_t i = 0; i < inner; ++i) sum += (double)xr[i];                         \
            a0[b] = sum;                                                                      \
          }                                                                                   \
        }                                                                                     \
        for (int64_t b = 0; b < nb; ++b) mean[b] = a0[b] / n;                                 \
        for (int64_t o = 0; o < outer; ++o) {                                                 \
          if (inner == 1) {                                                                   \
            const T* xr = x + o * C + c0;                                                     \
            for (int64_t b = 0; b < nb; ++b) {                                                \
              const double d = (double)xr[b] - mean[b];                                       \
              a1[b] += d * d;                                                                 \
            }                                                                                 \
            continue;                                                                         \
          }                                                                                   \
          for (int64_t b = 0; b < nb; ++b) {                                                  \
            const T* xr = x + (o * C + c0 + b) * inner;                                       \
            double sq = a1[b];                                                                \
            for (int64_t i = 0; i < inner; ++i) {                                             \
              const double d = (double)xr[i] - mean[b];                                       \
              sq += d * d;                                                                    \
            }                                                                                 \
            a1[b] = sq;                                                                       \
          }                                                                                   \
        }                                                                                     \
        for (int64_t b = 0; b < nb; ++b) {                                                    \
          const double var = a1[b] / n;                                                       \
          ((T*)c->out[1])[c0 + b] = (T)mean[b];                                               \
          ((T*)c->out[2])[c0 + b] = (T)var;                                                   \
          r[b] = 1.0 / sqrt(var + c->eps);                                                    \
        }                                                                                     \
      }                                                                                       \
      double offset[CMLC_BN_BLOCK];                                                           \
      for (int64_t b = 0; b < nb; ++b) offset[b] = (double)((const T*)c->in[2])[c0 + b];      \
      T* y = (T*)c->out[0];                                                                   \
      for (int64_t o = 0; o < outer; ++o) {                                                   \
        if (inner == 1) {                                                                     \
          const int64_t base = o * C + c0;                                                    \
          for (int64_t b = 0; b < nb; ++b)                                                    \
            y[base + b] = (T)(((double)x[base + b] - mean[b]) * r[b] * scale[b] + offset[b]); \
          continue;                                                                           \
        }                                                                                     \
        for (int64_t b = 0; b < nb; ++b) {                                                    \
          const int64_t base = (o * C + c0 + b) * inner;                                      \
          for (int64_t i = 0; i < inner; ++i)                                                 \
            y[base + i] = (T)(((double)x[base + i] - mean[b]) * r[b] * scale[b] + offset[b]); \
        }                                                                                     \
      }                                                                                       \
      return;                                                                                 \
    }                                                                                         \
    const T* dy = (const T*)c->in[4];                                                         \
    for (int64_t b = 0; b < nb; ++b) {                                                        \
      mean[b] = (double)((const T*)c->in[2])[c0 + b];                                         \
      r[b] = 1.0 / sqrt((double)((const T*)c->in[3])[c0 + b] + c->eps);                       \
      a0[b] = a1[b] = 0;                                                                      \
    }                                                                                         \
    for (int64_t o = 0; o < outer; ++o) {                                                     \
      if (inner == 1) {                                                                       \
        const int64_t base = o * C + c0;                                                      \
        for (int64_t b = 0; b < nb; ++b) {                                                    \
          const double g = (double)dy[base + b];                                              \
          a0[b] += g;                                                                         \
          a1[b] += g * ((double)x[base + b] - mean[b]);                                       \
        }                                                                                     \
        continue;                                                                             \
      }                                                                                       \
      for (int64_t b = 0; b < nb; ++b) {                                                      \
        const int64_t base = (o * C + c0 + b) * inner;                                        \
        double sum_dy = a0[b], sum_dy_xc = a1[b];                                             \
        for (int64_t i = 0; i < inner; ++i) {                                                 \
          const double g = (double)dy[base + i];                                              \
          sum_dy += g;                                                                        \
          sum_dy_xc += g * ((double)x[base + i] - mean[b]);                                   \
        }                                                                                     \
        a0[b] = sum_dy;                                                                       \
        a1[b] = sum_dy_xc;                                                                    \
      }                                                                                       \
    }                                                                                         \
    double mean_dy[CMLC_BN_BLOCK], k[CMLC_BN_BLOCK];                                          \
    for (int64_t b = 0; b < nb; ++b) {                                                        \
      ((T*)c->out[1])[c0 + b] = (T)(a1[b] * r[b]);                                            \
      ((T*)c->out[2])[c0 + b] = (T)a0[b];                                                     \
      mean_dy[b] = a0[b] / n;                                                                 \
      k[b] = a1[b] * r[b] * r[b] / n;                                                         \
    }                                                                                         \
    T* gx = (T*)c->out[0];                                                                    \
    for (int64_t o = 0; o < outer; ++o) {                                                     \
      if (inner == 1) {                                                                       \
        const int64_t base = o * C + c0;                                                      \
        for (int64_t b = 0; b < nb; ++b) {                                                    \
          const double g = (double)dy[base + b];                                              \
          const double xc = (double)x[base + b] - mean[b];                                    \
          gx[base + b] = (T)(scale[b] * r[b] * (g - mean_dy[b] - xc * k[b]));                 \
        }                                                                                     \
        continue;                                                                             \
      }                                                                                       \
      for (int64_t b = 0; b < nb; ++b) {                                                      \
        const int64_t base = (o * C + c0 + b) * inner;                                        \
        for (int64_t i = 0; i < inner; ++i) {                                                 \
          const double g = (double)dy[base + i];                                              \
          const double xc = (double)x[base + i] - mean[b];                                    \
          gx[base + i] = (T)(scale[b] * r[b] * (g - mean_dy[b] - xc * k[b]));                 \
        }                                                                                     \
      }                                                                                       \
    }                                                                                         \
  }
CMLC_BN_FAST(cmlc_bn_block_f32, float)
CMLC_BN_FAST(cmlc_bn_block_f64, double)
#undef CMLC_BN_FAST

static void cmlc_bn_blocks(void* vctx, int64_t begin, int64_t end, int thread_index) {
  (void)thread_index;
  const cmlc_bn_ctx_t* c = vctx;
  for (int64_t blk = begin; blk < end; ++blk) {
    const int64_t c0 = blk * c->width;
    const int64_t c1 = c0 + c->width < c->channels ? c0 + c->width : c->channels;
    if (c->dtype == CML_DTYPE_F32) {
      cmlc_bn_block_f32(c, c0, c1);
    } else {
      cmlc_bn_block_f64(c, c0, c1);
    }
  }
}

static cml_status_t cmlc_bn_run(const cmlc_kernel_args_t* args) {
  const cml_shape_t* xs = args->input_shapes[0];
  cmlc_bn_ctx_t c;
  c.op = args->node->op;
  c.dtype = xs->dtype;
  int64_t axis = args->node->attrs->axis;
  c.outer = 1;
  c.inner = 1;
  for (int32_t d = 0; d < xs->rank; ++d) {
    if (d < axis) c.outer *= xs->dims[d];
    if (d > axis) c.inner *= xs->dims[d];
  }
  c.channels = xs->dims[axis];
  c.eps = (double)args->node->attrs->epsilon;
  c.in = args->inputs;
  c.out = args->outputs;
  int64_t per = c.outer * c.inner * 3 + 1;
  if (!args->options->reference && (c.dtype == CML_DTYPE_F32 || c.dtype == CML_DTYPE_F64)) {
    // Blocks of channels; with threads, narrower ones (down to 16 channels) so that each
    // thread gets some when the operand is large enough to split.
    const int64_t threads = cmlc_pool_thread_count(args->pool);
    c.width = CMLC_BN_BLOCK;
    if (threads > 1 && per * c.channels >= 2 * 65536) {
      const int64_t w = (c.channels + threads - 1) / threads;
      c.width = w < 16 ? 16 : (w + 15) / 16 * 16;
      if (c.width > CMLC_BN_BLOCK) c.width = CMLC_BN_BLOCK;
    }
    const int64_t blocks = (c.channels + c.width - 1) / c.width;
    cmlc_parallel_for(args->pool, blocks, 1, cmlc_bn_blocks, &c);
    return CML_OK;
  }
  int64_t chunk = 65536 / per;
  cmlc_parallel_for(args->pool, c.channels, chunk < 1 ? 1 : chunk, cmlc_bn_channels, &c);
  return CML_OK;
}

static bool cmlc_bn_lookup(const cml_module_t* module, const cml_ir_node_t* node,
                           cmlc_kernel_entry_t* out) {
  uint32_t want_in = node->op == CML_OP_BATCH_NORM_TRAINING ? 3u : 5u;
  uint32_t want_out = node->op == CML_OP_BATCH_NORM_INFERENCE ? 1u : 3u;
  if (node->input_count != want_in || node->output_count != want_out) return false;
  const cml_shape_t* xs = &module->values[node->inputs[0]].shape;
  if (!cml_dtype_is_float(xs->dtype)) return false;
  if (node->attrs->axis < 0 || node->attrs->axis >= xs->rank) return false;
  for (uint32_t i = 1; i < node->input_count; ++i)
    if (module->values[node->inputs[i]].shape.dtype != xs->dtype) return false;
  out->run = cmlc_bn_run;
  out->scratch = NULL;
  out->in_place_input = -1;
  return true;
}

//===--- group lookup and capabilities ---===//

bool cmlc_kernels_special_lookup(const cml_module_t* module, const cml_ir_node_t* node,
                                 const cmlc_options_t* options, cmlc_kernel_entry_t* out) {
  switch (node->op) {
    case CML_OP_RNG_BIT_GENERATOR:
      return cmlc_rng_lookup(module, node, out);
    case CML_OP_BATCH_NORM_INFERENCE:
    case CML_OP_BATCH_NORM_TRAINING:
    case CML_OP_BATCH_NORM_GRADIENT:
      return cmlc_bn_lookup(module, node, out);
    case CML_OP_FFT:
      return cmlc__fft_lookup(module, node, options, out);
    default:
      return false;
  }
}

void cmlc_kernels_special_capabilities(cml_capabilities_t* caps) {
  cmlc_kernels_group_capabilities(caps, CML_OPG_SPECIAL);
}
