// SPDX-License-Identifier: Apache-2.0
// tests/unit/c_kernels_special_test.c: the "special" kernel group (RNGBitGenerator, FFT,
// BatchNorm*) called directly on hand-made IR nodes. RNG words are checked against the
// Random123 known-answer vectors of philox4x32_10; FFTs against a naive DFT written here;
// BatchNorm against hand-computed values.
#include <complex.h>
#include <float.h>
#include <stdlib.h>

#include "backends/c/cmlc.h"
#include "backends/c/engine_internal.h"
#include "test.h"

typedef struct fake_t {
  cml_ir_value_t values[10];
  uint32_t inputs[6];
  cml_ir_node_t node;
  cml_ir_attrs_t attrs;
  cml_module_t module;
} fake_t;

static void fake_init(fake_t* f, cml_op_t op, const cml_shape_t* ins, uint32_t nin,
                      const cml_shape_t* outs, uint32_t nout) {
  memset(f, 0, sizeof *f);
  for (uint32_t i = 0; i < nin; ++i) {
    f->values[1 + i].shape = ins[i];
    f->inputs[i] = 1 + i;
  }
  for (uint32_t i = 0; i < nout; ++i) f->values[1 + nin + i].shape = outs[i];
  f->node.op = op;
  f->node.input_count = nin;
  f->node.inputs = f->inputs;
  f->node.output_count = nout;
  f->node.first_output = 1 + nin;
  f->node.attrs = &f->attrs;
  f->module.node_count = 1;
  f->module.nodes = &f->node;
  f->module.value_count = 1 + nin + nout;
  f->module.values = f->values;
  f->module.num_devices = 1;
}

// The ISA fake_run plans for (the scalar one unless a test sets it).
static cmlc_isa_t g_fake_isa = CMLC_ISA_SCALAR;
// Whether fake_run plans for reference mode.
static bool g_fake_reference = false;

static cml_status_t fake_run(fake_t* f, int threads, cmlc_pool_t* pool, const void* const* inputs,
                             void* const* outputs) {
  cmlc_options_t o;
  memset(&o, 0, sizeof o);
  o.threads = threads;
  o.isa = g_fake_isa;
  o.reference = g_fake_reference;
  o.devices = 1;
  cmlc_kernel_entry_t e;
  memset(&e, 0, sizeof e);
  if (!cmlc_kernels_special_lookup(&f->module, &f->node, &o, &e))
    return cml_status_make(CML_STATUS_INTERNAL, "lookup failed for %s", cml_op_name(f->node.op));
  size_t size = e.scratch ? e.scratch(&f->module, &f->node, &o) : 0;
  void* scratch = size ? aligned_alloc(64, (size + 63) & ~(size_t)63) : NULL;
  const cml_shape_t* in_shapes[6];
  const cml_shape_t* out_shapes[3];
  for (uint32_t i = 0; i < f->node.input_count; ++i) in_shapes[i] = &f->values[f->inputs[i]].shape;
  for (uint32_t i = 0; i < f->node.output_count; ++i)
    out_shapes[i] = &f->values[f->node.first_output + i].shape;
  cmlc_kernel_args_t a;
  memset(&a, 0, sizeof a);
  a.module = &f->module;
  a.node = &f->node;
  a.options = &o;
  a.input_count = f->node.input_count;
  a.input_shapes = in_shapes;
  a.inputs = inputs;
  a.output_count = f->node.output_count;
  a.output_shapes = out_shapes;
  a.outputs = outputs;
  a.scratch = scratch;
  a.scratch_size = size;
  a.pool = pool;
  memcpy(a.impl, e.impl, sizeof a.impl);
  cml_status_t st = e.run(&a);
  free(scratch);
  return st;
}

static cml_shape_t shp(cml_dtype_t dt, int32_t rank, const int64_t* dims) {
  return cml_shape_make(dt, rank, dims);
}

//===--- RNGBitGenerator ---===//

// Runs RNG with |state| into |values| of |shape|; writes the new state.
static cml_status_t rng(const uint64_t state[3], cml_shape_t shape, void* values,
                        uint64_t new_state[3]) {
  fake_t f;
  cml_shape_t in = shp(CML_DTYPE_U64, 1, (int64_t[]){3});
  cml_shape_t outs[2] = {in, shape};
  fake_init(&f, CML_OP_RNG_BIT_GENERATOR, &in, 1, outs, 2);
  return fake_run(&f, 1, NULL, (const void*[]){state}, (void*[]){new_state, values});
}

TEST(rng_philox_known_answers) {
  // Random123 kat_vectors, philox4x32_10: (counter words, key words) -> output words. The
  // state packs key = k0 | k1 << 32, counter = (c0 | c1 << 32, c2 | c3 << 32).
  static const uint32_t kat[3][10] = {
      {0, 0, 0, 0, 0, 0, 0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8},
      {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0x408f276d,
       0x41c83b0e, 0xa20bc7c6, 0x6d5451fd},
      {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0, 0xd16cfe09,
       0x94fdcceb, 0x5001e420, 0x24126ea1},
  };
  for (int v = 0; v < 3; ++v) {
    const uint32_t* k = kat[v];
    uint64_t state[3] = {(uint64_t)k[4] | (uint64_t)k[5] << 32,
                         (uint64_t)k[0] | (uint64_t)k[1] << 32,
                         (uint64_t)k[2] | (uint64_t)k[3] << 32};
    uint32_t out[4];
    uint64_t ns[3];
    ASSERT_STATUS_OK(rng(state, shp(CML_DTYPE_U32, 1, (int64_t[]){4}), out, ns));
    for (int i = 0; i < 4; ++i) ASSERT_EQ_U64(out[i], k[6 + i]);
    ASSERT_EQ_U64(ns[0], state[0]);
    // One block used: the 128-bit counter advances by one (vector 2 wraps to zero).
    ASSERT_EQ_U64(ns[1], state[1] + 1);
    ASSERT_EQ_U64(ns[2], state[2] + (state[1] + 1 == 0 ? 1 : 0));
  }
}

TEST(rng_word_mapping_per_dtype) {
  uint64_t zero[3] = {0, 0, 0}, ns[3];
  // u64: element 0 = w0 | w1 << 32, element 1 = w2 | w3 << 32 of block 0 (counter 0, key 0).
  uint64_t u64[2];
  ASSERT_STATUS_OK(rng(zero, shp(CML_DTYPE_U64, 1, (int64_t[]){2}), u64, ns));
  ASSERT_EQ_U64(u64[0], 0xe169c58d6627e8d5ull);
  ASSERT_EQ_U64(u64[1], 0x9b00dbd8bc57ac4cull);
  ASSERT_EQ_U64(ns[1], 1);
  // u16 / i8 / f32 / bf16: one 32-bit word per element, low bits kept.
  uint16_t u16[4];
  ASSERT_STATUS_OK(rng(zero, shp(CML_DTYPE_U16, 2, (int64_t[]){2, 2}), u16, ns));
  ASSERT_EQ_U64(u16[0], 0xe8d5);
  ASSERT_EQ_U64(u16[1], 0xc58d);
  ASSERT_EQ_U64(u16[2], 0xac4c);
  ASSERT_EQ_U64(u16[3], 0xdbd8);
  int8_t i8[3];
  ASSERT_STATUS_OK(rng(zero, shp(CML_DTYPE_I8, 1, (int64_t[]){3}), i8, ns));
  ASSERT_EQ_INT((uint8_t)i8[0], 0xd5);
  ASSERT_EQ_INT((uint8_t)i8[2], 0x4c);
  ASSERT_EQ_U64(ns[1], 1);
  uint32_t f32bits[4];
  ASSERT_STATUS_OK(rng(zero, shp(CML_DTYPE_F32, 1, (int64_t[]){4}), f32bits, ns));
  ASSERT_EQ_U64(f32bits[1], 0xe169c58d);
  // Five 32-bit values need two blocks: the fifth is word 0 of counter 1; the state advances
  // by two. Word 0 of counter 1 is checked against the same generator run from counter 1.
  uint32_t five[5], from1[4];
  ASSERT_STATUS_OK(rng(zero, shp(CML_DTYPE_I32, 1, (int64_t[]){5}), five, ns));
  ASSERT_EQ_U64(ns[1], 2);
  uint64_t one[3] = {0, 1, 0};
  ASSERT_STATUS_OK(rng(one, shp(CML_DTYPE_U32, 1, (int64_t[]){4}), from1, ns));
  ASSERT_EQ_U64(five[4], from1[0]);
  ASSERT_EQ_U64(five[0], 0x6627e8d5);
  // Three u64 values use two blocks (6 words); the counter carries into the high word.
  uint64_t carry[3] = {0, UINT64_MAX, 5}, u3[3];
  ASSERT_STATUS_OK(rng(carry, shp(CML_DTYPE_U64, 1, (int64_t[]){3}), u3, ns));
  ASSERT_EQ_U64(ns[1], 1);
  ASSERT_EQ_U64(ns[2], 6);
  // Empty output: state unchanged.
  ASSERT_STATUS_OK(rng(one, shp(CML_DTYPE_U32, 1, (int64_t[]){0}), NULL, ns));
  ASSERT_EQ_U64(ns[1], 1);
}

//===--- FFT ---===//

// Naive DFT along the trailing |axes| axes (lengths |len|) of |count| complex values.
static void naive_dft(double complex* x, int64_t batch, int axes, const int64_t* len, double sign) {
  int64_t inner = 1;
  for (int a = 0; a < axes; ++a) inner *= len[a];
  double complex* tmp = malloc(sizeof(double complex) * (size_t)(inner ? inner : 1));
  for (int a = 0; a < axes; ++a) {
    int64_t n = len[a], stride = 1;
    for (int b = a + 1; b < axes; ++b) stride *= len[b];
    for (int64_t bb = 0; bb < batch; ++bb) {
      double complex* base = x + bb * inner;
      for (int64_t i = 0; i < inner; ++i) tmp[i] = base[i];
      for (int64_t i = 0; i < inner; ++i) {
        int64_t k = (i / stride) % n;
        int64_t line0 = i - k * stride;
        double complex s = 0;
        for (int64_t j = 0; j < n; ++j)
          s += tmp[line0 + j * stride] * cexp(sign * 2.0 * M_PI * I * (double)(j * k) / (double)n);
        base[i] = s;
      }
    }
  }
  free(tmp);
}

static double frand(uint32_t* seed) {
  *seed = *seed * 1664525u + 1013904223u;
  return (double)(*seed >> 8) / 16777216.0 - 0.5;
}

TEST(fft_c2c_lengths_and_inverse) {
  static const int64_t cases[][4] = {
      // batch, axes, len0, len1
      {3, 1, 8, 0}, {2, 1, 6, 0},   {2, 1, 37, 0},  {1, 1, 1, 0},
      {2, 2, 3, 5}, {1, 2, 16, 12}, {1, 1, 100, 0},
  };
  cmlc_pool_t* pool = NULL;
  ASSERT_STATUS_OK(cmlc_pool_create(3, cml_allocator_system(), &pool));
  uint32_t seed = 99;
  int failed = 0;
  for (size_t ci = 0; ci < sizeof cases / sizeof cases[0] && !failed; ++ci) {
    int64_t batch = cases[ci][0];
    int axes = (int)cases[ci][1];
    int64_t len[2] = {cases[ci][2], cases[ci][3]};
    int64_t inner = len[0] * (axes > 1 ? len[1] : 1), total = batch * inner;
    double* in = malloc(sizeof(double) * 2 * total);
    double* out = malloc(sizeof(double) * 2 * total);
    double* out3 = malloc(sizeof(double) * 2 * total);
    double complex* want = malloc(sizeof(double complex) * total);
    for (int64_t i = 0; i < total; ++i) {
      in[2 * i] = frand(&seed), in[2 * i + 1] = frand(&seed);
      want[i] = in[2 * i] + I * in[2 * i + 1];
    }
    int64_t dims[3] = {batch, len[0], len[1]};
    cml_shape_t s = shp(CML_DTYPE_C128, 1 + axes, dims);
    for (int inv = 0; inv < 2 && !failed; ++inv) {
      fake_t f;
      fake_init(&f, CML_OP_FFT, &s, 1, &s, 1);
      f.attrs.fft_type = inv ? CML_FFT_INVERSE : CML_FFT_FORWARD;
      f.attrs.axis_count = axes;
      f.attrs.axes[0] = len[0], f.attrs.axes[1] = len[1];
      ASSERT_STATUS_OK(fake_run(&f, 1, NULL, (const void*[]){in}, (void*[]){out}));
      ASSERT_STATUS_OK(fake_run(&f, 3, pool, (const void*[]){in}, (void*[]){out3}));
      double complex* w = malloc(sizeof(double complex) * total);
      memcpy(w, want, sizeof(double complex) * total);
      naive_dft(w, batch, axes, len, inv ? 1.0 : -1.0);
      for (int64_t i = 0; i < total; ++i) {
        double complex e = inv ? w[i] / (double)inner : w[i];
        if (fabs(out[2 * i] - creal(e)) > 1e-12 * inner ||
            fabs(out[2 * i + 1] - cimag(e)) > 1e-12 * inner ||
            memcmp(&out[2 * i], &out3[2 * i], 2 * sizeof(double)) != 0) {
          fprintf(stderr, "case %zu inv %d elem %lld: (%g, %g) want (%g, %g)\n", ci, inv,
                  (long long)i, out[2 * i], out[2 * i + 1], creal(e), cimag(e));
          failed = 1;
          break;
        }
      }
      free(w);
    }
    free(in), free(out), free(out3), free(want);
  }
  cmlc_pool_destroy(pool);
  ASSERT_FALSE(failed);
}

// Power-of-two lines are transformed two at a time (four with AVX2), one vector lane per line,
// when a pass has that many together, the rest one by one: every line must come out with the
// bits it gets alone (batch 1 on the scalar ISA: the one-line path), forward and inverse, along
// the last axis and along a leading one (strided lines, 2-D), on 1 and 3 threads, with both
// lane counts.
TEST(fft_lanes_match_single_lines) {
  static const int64_t cases[][3] = {{7, 8, 0}, {9, 512, 0}, {5, 64, 0}, {3, 16, 8}};
  cmlc_pool_t* pool = NULL;
  ASSERT_STATUS_OK(cmlc_pool_create(3, cml_allocator_system(), &pool));
  uint32_t seed = 7;
  int failed = 0;
  for (size_t ci = 0; ci < sizeof cases / sizeof cases[0] && !failed; ++ci) {
    const int64_t batch = cases[ci][0], len0 = cases[ci][1], len1 = cases[ci][2];
    const int axes = len1 ? 2 : 1;
    const int64_t inner = len0 * (len1 ? len1 : 1), total = batch * inner;
    double* in = malloc(sizeof(double) * 2 * (size_t)total);
    double* out = malloc(sizeof(double) * 2 * (size_t)total);
    double* out3 = malloc(sizeof(double) * 2 * (size_t)total);
    double* one = malloc(sizeof(double) * 2 * (size_t)inner);
    for (int64_t i = 0; i < 2 * total; ++i) in[i] = frand(&seed);
    for (int inv = 0; inv < 2 && !failed; ++inv) {
      fake_t f, f1;
      const cml_shape_t s = shp(CML_DTYPE_C128, 1 + axes, (int64_t[]){batch, len0, len1});
      const cml_shape_t s1 = shp(CML_DTYPE_C128, 1 + axes, (int64_t[]){1, len0, len1});
      fake_init(&f, CML_OP_FFT, &s, 1, &s, 1);
      fake_init(&f1, CML_OP_FFT, &s1, 1, &s1, 1);
      for (int v = 0; v < 2; ++v) {
        fake_t* g = v ? &f1 : &f;
        g->attrs.fft_type = inv ? CML_FFT_INVERSE : CML_FFT_FORWARD;
        g->attrs.axis_count = axes;
        g->attrs.axes[0] = len0, g->attrs.axes[1] = len1;
      }
      cmlc_cpu_features_t cpu;
      cmlc_cpu_detect(&cpu);
      for (int isa = 0; isa < (cpu.avx2_fma ? 2 : 1) && !failed; ++isa) {
        g_fake_isa = isa ? CMLC_ISA_AVX2 : CMLC_ISA_SCALAR;
        ASSERT_STATUS_OK(fake_run(&f, 1, NULL, (const void*[]){in}, (void*[]){out}));
        ASSERT_STATUS_OK(fake_run(&f, 3, pool, (const void*[]){in}, (void*[]){out3}));
        g_fake_isa = CMLC_ISA_SCALAR;
        for (int64_t b = 0; b < batch && !failed; ++b) {
          ASSERT_STATUS_OK(
              fake_run(&f1, 1, NULL, (const void*[]){in + 2 * b * inner}, (void*[]){one}));
          if (memcmp(one, out + 2 * b * inner, sizeof(double) * 2 * (size_t)inner) != 0 ||
              memcmp(out3 + 2 * b * inner, out + 2 * b * inner,
                     sizeof(double) * 2 * (size_t)inner) != 0) {
            fprintf(stderr, "case %zu inv %d isa %d batch %lld: lanes differ from the line alone\n",
                    ci, inv, isa, (long long)b);
            failed = 1;
          }
        }
      }
    }
    free(in), free(out), free(out3), free(one);
  }
  cmlc_pool_destroy(pool);
  ASSERT_FALSE(failed);
}

// The same for INVERSE_REAL's last pass (Hermitian extension, inverse, real part): lines taken
// 2 or 4 at a time give each line the bits it gets alone, on 1 and 3 threads.
TEST(fft_inverse_real_lanes_match_single_lines) {
  static const int64_t cases[][2] = {{7, 8}, {9, 512}, {5, 64}, {2, 16}};
  cmlc_pool_t* pool = NULL;
  ASSERT_STATUS_OK(cmlc_pool_create(3, cml_allocator_system(), &pool));
  uint32_t seed = 11;
  int failed = 0;
  for (size_t ci = 0; ci < sizeof cases / sizeof cases[0] && !failed; ++ci) {
    const int64_t batch = cases[ci][0], len = cases[ci][1], h = len / 2 + 1;
    double* in = malloc(sizeof(double) * 2 * (size_t)(batch * h));
    double* out = malloc(sizeof(double) * (size_t)(batch * len));
    double* out3 = malloc(sizeof(double) * (size_t)(batch * len));
    double one[512];
    for (int64_t i = 0; i < 2 * batch * h; ++i) in[i] = frand(&seed);
    fake_t f, f1;
    const cml_shape_t si = shp(CML_DTYPE_C128, 2, (int64_t[]){batch, h});
    const cml_shape_t so = shp(CML_DTYPE_F64, 2, (int64_t[]){batch, len});
    const cml_shape_t si1 = shp(CML_DTYPE_C128, 2, (int64_t[]){1, h});
    const cml_shape_t so1 = shp(CML_DTYPE_F64, 2, (int64_t[]){1, len});
    fake_init(&f, CML_OP_FFT, &si, 1, &so, 1);
    fake_init(&f1, CML_OP_FFT, &si1, 1, &so1, 1);
    for (int v = 0; v < 2; ++v) {
      fake_t* g = v ? &f1 : &f;
      g->attrs.fft_type = CML_FFT_INVERSE_REAL;
      g->attrs.axis_count = 1;
      g->attrs.axes[0] = len;
    }
    cmlc_cpu_features_t cpu;
    cmlc_cpu_detect(&cpu);
    for (int isa = 0; isa < (cpu.avx2_fma ? 2 : 1) && !failed; ++isa) {
      g_fake_isa = isa ? CMLC_ISA_AVX2 : CMLC_ISA_SCALAR;
      ASSERT_STATUS_OK(fake_run(&f, 1, NULL, (const void*[]){in}, (void*[]){out}));
      ASSERT_STATUS_OK(fake_run(&f, 3, pool, (const void*[]){in}, (void*[]){out3}));
      g_fake_isa = CMLC_ISA_SCALAR;
      for (int64_t b = 0; b < batch && !failed; ++b) {
        ASSERT_STATUS_OK(fake_run(&f1, 1, NULL, (const void*[]){in + 2 * b * h}, (void*[]){one}));
        if (memcmp(one, out + b * len, sizeof(double) * (size_t)len) != 0 ||
            memcmp(out3 + b * len, out + b * len, sizeof(double) * (size_t)len) != 0) {
          fprintf(stderr, "case %zu isa %d batch %lld: lanes differ from the line alone\n", ci, isa,
                  (long long)b);
          failed = 1;
        }
      }
    }
    free(in), free(out), free(out3);
  }
  cmlc_pool_destroy(pool);
  ASSERT_FALSE(failed);
}

TEST(fft_c64_hand_values) {
  // FFT of [1, 2, 3, 4] = [10, -2+2i, -2, -2-2i].
  float in[8] = {1, 0, 2, 0, 3, 0, 4, 0}, out[8];
  cml_shape_t s = shp(CML_DTYPE_C64, 1, (int64_t[]){4});
  fake_t f;
  fake_init(&f, CML_OP_FFT, &s, 1, &s, 1);
  f.attrs.fft_type = CML_FFT_FORWARD;
  f.attrs.axis_count = 1;
  f.attrs.axes[0] = 4;
  ASSERT_STATUS_OK(fake_run(&f, 1, NULL, (const void*[]){in}, (void*[]){out}));
  const float want[8] = {10, 0, -2, 2, -2, 0, -2, -2};
  for (int i = 0; i < 8; ++i) ASSERT_NEAR(out[i], want[i], 1e-6);
}

TEST(fft_real_forward_and_inverse) {
  // RFFT of [1, 2, 3, 4, 5] (L = 5 -> 3 outputs) vs the naive DFT; then IRFFT back.
  static const int64_t lens[] = {5, 8, 1, 7};
  uint32_t seed = 5;
  for (size_t li = 0; li < sizeof lens / sizeof lens[0]; ++li) {
    int64_t L = lens[li], H = L / 2 + 1, batch = 2;
    double x[16], spec[32], back[16];
    for (int64_t i = 0; i < batch * L; ++i) x[i] = frand(&seed);
    cml_shape_t rs = shp(CML_DTYPE_F64, 2, (int64_t[]){batch, L});
    cml_shape_t cs = shp(CML_DTYPE_C128, 2, (int64_t[]){batch, H});
    fake_t f;
    fake_init(&f, CML_OP_FFT, &rs, 1, &cs, 1);
    f.attrs.fft_type = CML_FFT_FORWARD_REAL;
    f.attrs.axis_count = 1;
    f.attrs.axes[0] = L;
    ASSERT_STATUS_OK(fake_run(&f, 1, NULL, (const void*[]){x}, (void*[]){spec}));
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t k = 0; k < H; ++k) {
        double complex s = 0;
        for (int64_t j = 0; j < L; ++j)
          s += x[b * L + j] * cexp(-2.0 * M_PI * I * (double)(j * k) / (double)L);
        ASSERT_NEAR(spec[2 * (b * H + k)], creal(s), 1e-12);
        ASSERT_NEAR(spec[2 * (b * H + k) + 1], cimag(s), 1e-12);
      }
    }
    fake_init(&f, CML_OP_FFT, &cs, 1, &rs, 1);
    f.attrs.fft_type = CML_FFT_INVERSE_REAL;
    f.attrs.axis_count = 1;
    f.attrs.axes[0] = L;
    ASSERT_STATUS_OK(fake_run(&f, 1, NULL, (const void*[]){spec}, (void*[]){back}));
    for (int64_t i = 0; i < batch * L; ++i) ASSERT_NEAR(back[i], x[i], 1e-12);
  }
  // IRFFT ignores the imaginary parts of the DC and (even L) Nyquist terms:
  // [1+5i, 0, 1+7i] with L = 4 -> X = [1, 0, 1, 0] -> x[n] = (1 + (-1)^n) / 4 = [.5, 0, .5, 0].
  float c[6] = {1, 5, 0, 0, 1, 7}, r[4];
  cml_shape_t cs = shp(CML_DTYPE_C64, 1, (int64_t[]){3});
  cml_shape_t rs = shp(CML_DTYPE_F32, 1, (int64_t[]){4});
  fake_t f;
  fake_init(&f, CML_OP_FFT, &cs, 1, &rs, 1);
  f.attrs.fft_type = CML_FFT_INVERSE_REAL;
  f.attrs.axis_count = 1;
  f.attrs.axes[0] = 4;
  ASSERT_STATUS_OK(fake_run(&f, 1, NULL, (const void*[]){c}, (void*[]){r}));
  ASSERT_NEAR(r[0], 0.5, 1e-7);
  ASSERT_NEAR(r[1], 0.0, 1e-7);
  ASSERT_NEAR(r[2], 0.5, 1e-7);
  ASSERT_NEAR(r[3], 0.0, 1e-7);
}

// Power-of-two real transforms along one axis run at half length (even and odd samples as one
// complex line): against the naive DFT and back, for lengths 4 to 512, batches that leave a
// partial group of lanes, on the scalar ISA (2 lanes) and AVX2 (4), f64 and f32.
TEST(fft_real_power_of_two_half_length) {
  static const int64_t lens[] = {4, 16, 64, 512};
  static const int64_t batches[] = {3, 5};
  uint32_t seed = 9;
  cmlc_cpu_features_t cpu;
  cmlc_cpu_detect(&cpu);
  double* x = malloc(sizeof(double) * 5 * 512);
  double* spec = malloc(sizeof(double) * 2 * 5 * 257);
  double* back = malloc(sizeof(double) * 5 * 512);
  float* xf = malloc(sizeof(float) * 5 * 512);
  float* specf = malloc(sizeof(float) * 2 * 5 * 257);
  float* backf = malloc(sizeof(float) * 5 * 512);
  for (int isa = 0; isa < (cpu.avx2_fma ? 2 : 1); ++isa) {
    g_fake_isa = isa ? CMLC_ISA_AVX2 : CMLC_ISA_SCALAR;
    for (size_t li = 0; li < sizeof lens / sizeof lens[0]; ++li) {
      for (size_t bi = 0; bi < 2; ++bi) {
        const int64_t L = lens[li], H = L / 2 + 1, batch = batches[bi];
        for (int64_t i = 0; i < batch * L; ++i) {
          x[i] = frand(&seed);
          xf[i] = (float)x[i];
        }
        for (int f32 = 0; f32 < 2; ++f32) {
          cml_shape_t rs = shp(f32 ? CML_DTYPE_F32 : CML_DTYPE_F64, 2, (int64_t[]){batch, L});
          cml_shape_t cs = shp(f32 ? CML_DTYPE_C64 : CML_DTYPE_C128, 2, (int64_t[]){batch, H});
          fake_t f;
          fake_init(&f, CML_OP_FFT, &rs, 1, &cs, 1);
          f.attrs.fft_type = CML_FFT_FORWARD_REAL;
          f.attrs.axis_count = 1;
          f.attrs.axes[0] = L;
          ASSERT_STATUS_OK(fake_run(&f, 1, NULL, (const void*[]){f32 ? (void*)xf : (void*)x},
                                    (void*[]){f32 ? (void*)specf : (void*)spec}));
          const double tol = f32 ? 1e-5 * (double)L : 1e-12 * (double)L;
          for (int64_t b = 0; b < batch; ++b) {
            for (int64_t k = 0; k < H; ++k) {
              double complex sum = 0;
              for (int64_t j = 0; j < L; ++j) {
                const double v = f32 ? (double)xf[b * L + j] : x[b * L + j];
                sum += v * cexp(-2.0 * M_PI * I * (double)((j * k) % L) / (double)L);
              }
              const int64_t at = 2 * (b * H + k);
              const double gr = f32 ? specf[at] : spec[at], gi = f32 ? specf[at + 1] : spec[at + 1];
              if (fabs(gr - creal(sum)) > tol || fabs(gi - cimag(sum)) > tol) {
                TEST_FAIL_("rfft L=%lld batch %lld isa %d f32 %d: bin %lld off", (long long)L,
                           (long long)b, isa, f32, (long long)k);
              }
            }
          }
          fake_init(&f, CML_OP_FFT, &cs, 1, &rs, 1);
          f.attrs.fft_type = CML_FFT_INVERSE_REAL;
          f.attrs.axis_count = 1;
          f.attrs.axes[0] = L;
          ASSERT_STATUS_OK(fake_run(&f, 1, NULL, (const void*[]){f32 ? (void*)specf : (void*)spec},
                                    (void*[]){f32 ? (void*)backf : (void*)back}));
          for (int64_t i = 0; i < batch * L; ++i) {
            const double want = f32 ? (double)xf[i] : x[i], got = f32 ? (double)backf[i] : back[i];
            if (fabs(got - want) > (f32 ? 1e-5 : 1e-12)) {
              TEST_FAIL_("irfft L=%lld isa %d f32 %d: sample %lld off", (long long)L, isa, f32,
                         (long long)i);
            }
          }
        }
      }
    }
  }
  g_fake_isa = CMLC_ISA_SCALAR;
  free(x), free(spec), free(back), free(xf), free(specf), free(backf);
}

// Reference DFT in long double along the axes of |x| ([batch, len[0], .., len[axes-1]]) that
// |mask| selects (bit a: axis a), angles from j k reduced mod n (exact).
static void ref_dft(long double complex* x, int64_t batch, int axes, const int64_t* len,
                    unsigned mask, double sign) {
  int64_t inner = 1;
  for (int a = 0; a < axes; ++a) inner *= len[a];
  long double complex* tmp = malloc(sizeof(long double complex) * (size_t)(inner ? inner : 1));
  for (int a = 0; a < axes; ++a) {
    if (!(mask >> a & 1)) continue;
    const int64_t n = len[a];
    int64_t stride = 1;
    for (int b = a + 1; b < axes; ++b) stride *= len[b];
    long double complex* w = malloc(sizeof(long double complex) * (size_t)n);
    for (int64_t t = 0; t < n; ++t) {
      const long double ang = (long double)sign * 2.0L * 3.14159265358979323846264338327950288L *
                              (long double)t / (long double)n;
      w[t] = cosl(ang) + I * sinl(ang);
    }
    for (int64_t bb = 0; bb < batch; ++bb) {
      long double complex* base = x + bb * inner;
      memcpy(tmp, base, sizeof(long double complex) * (size_t)inner);
      for (int64_t i = 0; i < inner; ++i) {
        const int64_t k = (i / stride) % n, line0 = i - k * stride;
        long double complex s = 0;
        for (int64_t j = 0; j < n; ++j) s += tmp[line0 + j * stride] * w[(j * k) % n];
        base[i] = s;
      }
    }
    free(w);
  }
  free(tmp);
}

// Every FFT type on mixed-radix (factors 2, 3, 4, 5, 7, 11, 13), Bluestein (prime 509, and
// 2 x 509 for the half-length real path) and direct (31) lengths, f32 and f64, 1-3 axes, against
// the long double DFT above. Bound: relative L2 error over the output <= 4 eps64 log2(N) for
// the double computation (N the transform's size; a Cooley-Tukey FFT with correctly rounded
// twiddles has an O(eps log N) L2 error, and Bluestein is two of them and pointwise products),
// plus 2^-23 for f32 outputs (rounding each result to f32 costs up to 2^-24 relative). Results
// must be bit-identical on 1 and 3 threads and on the scalar and AVX2 lane counts (the last
// three shapes have enough lines for the threads to split them).
TEST(fft_mixed_radix_against_long_double_dft) {
  static const int64_t cases[][5] = {
      // batch, axes, len0, len1, len2
      {3, 1, 3},     {3, 1, 5},       {3, 1, 6},        {3, 1, 9},      {3, 1, 10},
      {3, 1, 12},    {3, 1, 15},      {3, 1, 25},       {3, 1, 27},     {3, 1, 45},
      {3, 1, 48},    {3, 1, 60},      {3, 1, 100},      {3, 1, 125},    {3, 1, 320},
      {2, 1, 384},   {3, 1, 400},     {2, 1, 500},      {2, 1, 1000},   {2, 1, 1024},
      {3, 1, 7},     {3, 1, 31},      {2, 1, 509},      {1, 1, 1018},   {2, 1, 49},
      {2, 1, 154},   {2, 1, 286},     {2, 1, 2},        {2, 2, 12, 10}, {1, 2, 6, 400},
      {2, 2, 7, 20}, {1, 3, 3, 5, 6}, {1, 3, 4, 9, 10}, {2, 2, 4, 9},   {1, 3, 2, 3, 5},
      {2, 2, 8, 16}, {1, 2, 5, 64},   {64, 1, 400},     {96, 1, 30},    {24, 2, 5, 60},
  };
  cmlc_pool_t* pool = NULL;
  ASSERT_STATUS_OK(cmlc_pool_create(3, cml_allocator_system(), &pool));
  cmlc_cpu_features_t cpu;
  cmlc_cpu_detect(&cpu);
  uint32_t seed = 4242;
  double worst[2] = {0, 0};  // largest error / bound seen, f64 and f32 (diagnostic)
  for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ++ci) {
    const int64_t batch = cases[ci][0];
    const int axes = (int)cases[ci][1];
    const int64_t* len = &cases[ci][2];
    int64_t inner = 1;
    for (int a = 0; a < axes; ++a) inner *= len[a];
    const int64_t last = len[axes - 1], h = last / 2 + 1, rows = batch * inner / last;
    const int64_t total = batch * inner, half_total = rows * h;
    double log2n = 1;
    while ((double)(1LL << (int)log2n) < (double)inner) log2n += 1;
    for (int type = 0; type < 4; ++type) {
      const bool real_in = type == 2, real_out = type == 3;
      const int64_t nin = real_out ? half_total : total, nout = real_in ? half_total : total;
      for (int f32 = 0; f32 < 2; ++f32) {
        // Inputs as doubles already rounded to the dtype, complex interleaved unless real_in.
        const int64_t in_doubles = real_in ? nin : 2 * nin,
                      out_doubles = real_out ? nout : 2 * nout;
        double* in = malloc(sizeof(double) * (size_t)in_doubles);
        void* raw_in = malloc(sizeof(double) * (size_t)in_doubles);
        void* outs[3];
        for (int o = 0; o < 3; ++o) outs[o] = malloc(sizeof(double) * (size_t)out_doubles);
        for (int64_t i = 0; i < in_doubles; ++i) {
          in[i] = frand(&seed);
          if (f32)
            in[i] = (double)(float)in[i], ((float*)raw_in)[i] = (float)in[i];
          else
            ((double*)raw_in)[i] = in[i];
        }
        // The expected output.
        long double complex* ref =
            malloc(sizeof(long double complex) * (size_t)(total > half_total ? total : half_total));
        int64_t dims_in[4] = {batch}, dims_out[4] = {batch};
        for (int a = 0; a < axes; ++a) dims_in[1 + a] = dims_out[1 + a] = len[a];
        if (real_in) {
          for (int64_t i = 0; i < total; ++i) ref[i] = in[i];
          ref_dft(ref, batch, axes, len, 7u, -1.0);
          for (int64_t r = 0; r < rows; ++r)  // keep the first h of every last-axis line
            for (int64_t k = 0; k < h; ++k) ref[r * h + k] = ref[r * last + k];
          dims_out[axes] = h;
        } else if (real_out) {
          int64_t hl[3] = {len[0], len[1], len[2]};
          hl[axes - 1] = h;
          for (int64_t i = 0; i < half_total; ++i) ref[i] = in[2 * i] + I * in[2 * i + 1];
          ref_dft(ref, batch, axes, hl, (1u << (axes - 1)) - 1, 1.0);
          long double complex* ext = malloc(sizeof(long double complex) * (size_t)total);
          for (int64_t r = 0; r < rows; ++r)
            for (int64_t k = 0; k < last; ++k)
              ext[r * last + k] = k < h ? ref[r * h + k] : conjl(ref[r * h + last - k]);
          const int64_t one = last;
          ref_dft(ext, rows, 1, &one, 1u, 1.0);
          for (int64_t i = 0; i < total; ++i) ref[i] = creall(ext[i]) / (long double)inner;
          free(ext);
          dims_in[axes] = h;
        } else {
          for (int64_t i = 0; i < total; ++i) ref[i] = in[2 * i] + I * in[2 * i + 1];
          ref_dft(ref, batch, axes, len, 7u, type == 1 ? 1.0 : -1.0);
          if (type == 1)
            for (int64_t i = 0; i < total; ++i) ref[i] /= (long double)inner;
        }
        const cml_dtype_t rdt = f32 ? CML_DTYPE_F32 : CML_DTYPE_F64;
        const cml_dtype_t cdt = f32 ? CML_DTYPE_C64 : CML_DTYPE_C128;
        cml_shape_t si = shp(real_in ? rdt : cdt, 1 + axes, dims_in);
        cml_shape_t so = shp(real_out ? rdt : cdt, 1 + axes, dims_out);
        fake_t f;
        fake_init(&f, CML_OP_FFT, &si, 1, &so, 1);
        f.attrs.fft_type = type == 0   ? CML_FFT_FORWARD
                           : type == 1 ? CML_FFT_INVERSE
                           : type == 2 ? CML_FFT_FORWARD_REAL
                                       : CML_FFT_INVERSE_REAL;
        f.attrs.axis_count = axes;
        for (int a = 0; a < axes; ++a) f.attrs.axes[a] = len[a];
        g_fake_isa = CMLC_ISA_SCALAR;
        ASSERT_STATUS_OK(fake_run(&f, 1, NULL, (const void*[]){raw_in}, (void*[]){outs[0]}));
        ASSERT_STATUS_OK(fake_run(&f, 3, pool, (const void*[]){raw_in}, (void*[]){outs[1]}));
        g_fake_isa = cpu.avx2_fma ? CMLC_ISA_AVX2 : CMLC_ISA_SCALAR;
        ASSERT_STATUS_OK(fake_run(&f, 3, pool, (const void*[]){raw_in}, (void*[]){outs[2]}));
        g_fake_isa = CMLC_ISA_SCALAR;
        const size_t bytes = (size_t)out_doubles * (f32 ? sizeof(float) : sizeof(double));
        if (memcmp(outs[0], outs[1], bytes) != 0 || memcmp(outs[0], outs[2], bytes) != 0)
          TEST_FAIL_("case %zu type %d f32 %d: differs across threads / lanes", ci, type, f32);
        long double err = 0, norm = 0;
        for (int64_t i = 0; i < out_doubles; ++i) {
          const double got = f32 ? (double)((float*)outs[0])[i] : ((double*)outs[0])[i];
          const long double want =
              real_out ? creall(ref[i]) : (i % 2 ? cimagl(ref[i / 2]) : creall(ref[i / 2]));
          err += (got - want) * (got - want);
          norm += want * want;
        }
        const double rel = norm > 0 ? (double)sqrtl(err / norm) : (double)sqrtl(err);
        const double bound = 4.0 * DBL_EPSILON * log2n + (f32 ? 0x1p-23 : 0.0);
        if (rel / bound > worst[f32]) worst[f32] = rel / bound;
        if (!(rel <= bound))
          TEST_FAIL_("case %zu (len %lld) type %d f32 %d: relative L2 error %g > %g", ci,
                     (long long)len[0], type, f32, rel, bound);
        free(in), free(raw_in), free(ref);
        for (int o = 0; o < 3; ++o) free(outs[o]);
      }
    }
  }
  if (getenv("CML_FFT_TEST_VERBOSE"))
    fprintf(stderr, "worst error / bound: f64 %g, f32 %g\n", worst[0], worst[1]);
  cmlc_pool_destroy(pool);
}

TEST(fft_real_2d) {
  // 2-D RFFT [3, 4] -> [3, 3] vs naive 2-D DFT, then IRFFT back.
  double x[12], spec[18], back[12];
  uint32_t seed = 17;
  for (int i = 0; i < 12; ++i) x[i] = frand(&seed);
  cml_shape_t rs = shp(CML_DTYPE_F64, 2, (int64_t[]){3, 4});
  cml_shape_t cs = shp(CML_DTYPE_C128, 2, (int64_t[]){3, 3});
  fake_t f;
  fake_init(&f, CML_OP_FFT, &rs, 1, &cs, 1);
  f.attrs.fft_type = CML_FFT_FORWARD_REAL;
  f.attrs.axis_count = 2;
  f.attrs.axes[0] = 3, f.attrs.axes[1] = 4;
  ASSERT_STATUS_OK(fake_run(&f, 1, NULL, (const void*[]){x}, (void*[]){spec}));
  double complex full[12];
  for (int i = 0; i < 12; ++i) full[i] = x[i];
  naive_dft(full, 1, 2, (int64_t[]){3, 4}, -1.0);
  for (int r = 0; r < 3; ++r)
    for (int k = 0; k < 3; ++k) {
      ASSERT_NEAR(spec[2 * (r * 3 + k)], creal(full[r * 4 + k]), 1e-12);
      ASSERT_NEAR(spec[2 * (r * 3 + k) + 1], cimag(full[r * 4 + k]), 1e-12);
    }
  fake_init(&f, CML_OP_FFT, &cs, 1, &rs, 1);
  f.attrs.fft_type = CML_FFT_INVERSE_REAL;
  f.attrs.axis_count = 2;
  f.attrs.axes[0] = 3, f.attrs.axes[1] = 4;
  ASSERT_STATUS_OK(fake_run(&f, 1, NULL, (const void*[]){spec}, (void*[]){back}));
  for (int i = 0; i < 12; ++i) ASSERT_NEAR(back[i], x[i], 1e-12);
}

//===--- BatchNorm ---===//

TEST(batch_norm_inference_training_gradient) {
  // x [2, 2] with the feature axis 1: channel 0 = {1, 3}, channel 1 = {2, 6}.
  float x[4] = {1, 2, 3, 6};
  float scale[2] = {2, 1}, offset[2] = {1, 0}, mean[2] = {2, 4}, var[2] = {1, 4};
  cml_shape_t xs = shp(CML_DTYPE_F32, 2, (int64_t[]){2, 2});
  cml_shape_t cs = shp(CML_DTYPE_F32, 1, (int64_t[]){2});
  fake_t f;
  // Inference, eps = 0: channel 0: (x-2)/1*2+1 -> {-1, 3}; channel 1: (x-4)/2 -> {-1, 1}.
  fake_init(&f, CML_OP_BATCH_NORM_INFERENCE, (cml_shape_t[]){xs, cs, cs, cs, cs}, 5, &xs, 1);
  f.attrs.axis = 1;
  f.attrs.epsilon = 0;
  float y[4];
  ASSERT_STATUS_OK(
      fake_run(&f, 1, NULL, (const void*[]){x, scale, offset, mean, var}, (void*[]){y}));
  ASSERT_EQ_DBL(y[0], -1);
  ASSERT_EQ_DBL(y[1], -1);
  ASSERT_EQ_DBL(y[2], 3);
  ASSERT_EQ_DBL(y[3], 1);
  // Training, eps = 0: mean {2, 4}, biased var {1, 4}: same normalized output.
  fake_init(&f, CML_OP_BATCH_NORM_TRAINING, (cml_shape_t[]){xs, cs, cs}, 3,
            (cml_shape_t[]){xs, cs, cs}, 3);
  f.attrs.axis = 1;
  float y2[4], bm[2], bv[2];
  ASSERT_STATUS_OK(fake_run(&f, 1, NULL, (const void*[]){x, scale, offset}, (void*[]){y2, bm, bv}));
  ASSERT_EQ_DBL(bm[0], 2);
  ASSERT_EQ_DBL(bm[1], 4);
  ASSERT_EQ_DBL(bv[0], 1);
  ASSERT_EQ_DBL(bv[1], 4);
  for (int i = 0; i < 4; ++i) ASSERT_EQ_DBL(y2[i], y[i]);
  // Epsilon: var 1 + eps 3 -> r = 0.5: channel 0 -> (x-2)*0.5*2+1 = {0, 2}.
  fake_init(&f, CML_OP_BATCH_NORM_INFERENCE, (cml_shape_t[]){xs, cs, cs, cs, cs}, 5, &xs, 1);
  f.attrs.axis = 1;
  f.attrs.epsilon = 3;
  ASSERT_STATUS_OK(
      fake_run(&f, 1, NULL, (const void*[]){x, scale, offset, mean, var}, (void*[]){y}));
  ASSERT_EQ_DBL(y[0], 0);
  ASSERT_EQ_DBL(y[2], 2);
  // Gradient on three samples of one channel (two samples always give grad_x = 0).
  float x3[3] = {0, 1, 5}, s3[1] = {3}, m3[1] = {2}, v3[1] = {4}, dy3[3] = {1, 2, 3};
  cml_shape_t x3s = shp(CML_DTYPE_F32, 2, (int64_t[]){3, 1});
  cml_shape_t c1 = shp(CML_DTYPE_F32, 1, (int64_t[]){1});
  fake_init(&f, CML_OP_BATCH_NORM_GRADIENT, (cml_shape_t[]){x3s, c1, c1, c1, x3s}, 5,
            (cml_shape_t[]){x3s, c1, c1}, 3);
  f.attrs.axis = 1;
  f.attrs.epsilon = 0;
  float gx[3], gs[1], go[1];
  ASSERT_STATUS_OK(
      fake_run(&f, 1, NULL, (const void*[]){x3, s3, m3, v3, dy3}, (void*[]){gx, gs, go}));
  // r = 0.5, xc = {-2, -1, 3}: grad_offset = 6, sum(dy*xc) = -2 - 2 + 9 = 5, grad_scale = 2.5.
  // grad_x = 3 * 0.5 * (dy - 2 - xc * 5 * 0.25 / 3) = 1.5 * ({-1, 0, 1} - xc * 5/12):
  //   {1.5 * (-1 + 10/12), 1.5 * (5/12), 1.5 * (1 - 15/12)} = {-0.25, 0.625, -0.375}.
  ASSERT_EQ_DBL(go[0], 6);
  ASSERT_EQ_DBL(gs[0], 2.5);
  ASSERT_NEAR(gx[0], -0.25, 1e-6);
  ASSERT_NEAR(gx[1], 0.625, 1e-6);
  ASSERT_NEAR(gx[2], -0.375, 1e-6);
}

TEST(batch_norm_half_and_middle_axis) {
  // bf16 x [1, 2, 2] with feature axis 1, inference with eps 0: channel 0 {1, 2} mean 1,
  // var 4, scale 1, offset 0 -> {0, 0.5}; channel 1 {4, 8} mean 0 var 16 scale 2 offset 1
  // -> {3, 5}.
  uint16_t x[4], sc[2], of[2], mn[2], vr[2], y[4];
  const float xv[4] = {1, 2, 4, 8};
  for (int i = 0; i < 4; ++i) x[i] = cml_f32_to_bf16(xv[i]);
  sc[0] = cml_f32_to_bf16(1), sc[1] = cml_f32_to_bf16(2);
  of[0] = cml_f32_to_bf16(0), of[1] = cml_f32_to_bf16(1);
  mn[0] = cml_f32_to_bf16(1), mn[1] = cml_f32_to_bf16(0);
  vr[0] = cml_f32_to_bf16(4), vr[1] = cml_f32_to_bf16(16);
  cml_shape_t xs = shp(CML_DTYPE_BF16, 3, (int64_t[]){1, 2, 2});
  cml_shape_t cs = shp(CML_DTYPE_BF16, 1, (int64_t[]){2});
  fake_t f;
  fake_init(&f, CML_OP_BATCH_NORM_INFERENCE, (cml_shape_t[]){xs, cs, cs, cs, cs}, 5, &xs, 1);
  f.attrs.axis = 1;
  ASSERT_STATUS_OK(fake_run(&f, 1, NULL, (const void*[]){x, sc, of, mn, vr}, (void*[]){y}));
  const float want[4] = {0, 0.5f, 3, 5};
  for (int i = 0; i < 4; ++i) ASSERT_EQ_DBL(cml_bf16_to_f32(y[i]), want[i]);
}

// f32 / f64 BatchNorm runs blocks of channels in memory order: the same bits as the
// per-channel loop of reference mode for all three ops, on a channels-last operand (several
// blocks of channels, threads splitting them), the feature axis in the middle (NCHW) and first,
// with statistics and gradients of non-trivial values.
TEST(batch_norm_blocks_match_per_channel_loop) {
  cmlc_pool_t* pool = NULL;
  ASSERT_STATUS_OK(cmlc_pool_create(3, cml_allocator_system(), &pool));
  static const int64_t shapes[3][4] = {{9, 9, 9, 200}, {4, 40, 6, 5}, {40, 9, 1, 1}};
  static const int64_t axes[3] = {3, 1, 0};
  static const cml_op_t ops[3] = {CML_OP_BATCH_NORM_INFERENCE, CML_OP_BATCH_NORM_TRAINING,
                                  CML_OP_BATCH_NORM_GRADIENT};
  enum { MAXN = 9 * 9 * 9 * 200 };
  static double xd[MAXN], dyd[MAXN], want[3][MAXN], got[3][MAXN];
  static float xf[MAXN], dyf[MAXN];
  double cd[4][200];
  float cf[4][200];
  uint32_t seed = 7;
  for (int i = 0; i < MAXN; ++i) {
    xd[i] = 3.0 * frand(&seed) + 0.5;
    dyd[i] = frand(&seed);
    xf[i] = (float)xd[i];
    dyf[i] = (float)dyd[i];
  }
  for (int j = 0; j < 4; ++j)
    for (int c = 0; c < 200; ++c) {
      cd[j][c] = j == 3 ? 0.5 + frand(&seed) * frand(&seed) : frand(&seed);
      cf[j][c] = (float)cd[j][c];
    }
  for (int si = 0; si < 3; ++si)
    for (int f64 = 0; f64 < 2; ++f64)
      for (int oi = 0; oi < 3; ++oi)
        for (int threads = 1; threads <= 3; threads += 2) {
          const cml_dtype_t dt = f64 ? CML_DTYPE_F64 : CML_DTYPE_F32;
          const int64_t* d = shapes[si];
          const int64_t ch = d[axes[si]];
          cml_shape_t xs = shp(dt, 4, d), cs = shp(dt, 1, &ch);
          const void* x = f64 ? (const void*)xd : (const void*)xf;
          const void* dy = f64 ? (const void*)dyd : (const void*)dyf;
          const void* c[4];
          for (int j = 0; j < 4; ++j) c[j] = f64 ? (const void*)cd[j] : (const void*)cf[j];
          fake_t f;
          const void* in[5];
          uint32_t nin;
          if (ops[oi] == CML_OP_BATCH_NORM_INFERENCE) {
            fake_init(&f, ops[oi], (cml_shape_t[]){xs, cs, cs, cs, cs}, 5, &xs, 1);
            in[0] = x, in[1] = c[0], in[2] = c[1], in[3] = c[2], in[4] = c[3], nin = 1;
          } else if (ops[oi] == CML_OP_BATCH_NORM_TRAINING) {
            fake_init(&f, ops[oi], (cml_shape_t[]){xs, cs, cs}, 3, (cml_shape_t[]){xs, cs, cs}, 3);
            in[0] = x, in[1] = c[0], in[2] = c[1], nin = 3;
          } else {
            fake_init(&f, ops[oi], (cml_shape_t[]){xs, cs, cs, cs, xs}, 5,
                      (cml_shape_t[]){xs, cs, cs}, 3);
            in[0] = x, in[1] = c[0], in[2] = c[2], in[3] = c[3], in[4] = dy, nin = 3;
          }
          f.attrs.axis = axes[si];
          f.attrs.epsilon = 1e-3f;
          g_fake_reference = true;
          ASSERT_STATUS_OK(fake_run(&f, 1, NULL, in, (void*[]){want[0], want[1], want[2]}));
          g_fake_reference = false;
          memset(got, 0x5a, sizeof got);
          ASSERT_STATUS_OK(fake_run(&f, threads, threads > 1 ? pool : NULL, in,
                                    (void*[]){got[0], got[1], got[2]}));
          const size_t es = f64 ? 8 : 4, n = (size_t)(d[0] * d[1] * d[2] * d[3]);
          for (uint32_t j = 0; j < nin; ++j) {
            if (memcmp(got[j], want[j], (j ? (size_t)ch : n) * es) != 0) {
              TEST_FAIL_("%s %s shape %d output %u, %d thread(s): differs from the reference",
                         cml_op_name(ops[oi]), cml_dtype_name(dt), si, j, threads);
            }
          }
        }
  cmlc_pool_destroy(pool);
}

TEST(capabilities) {
  cml_capabilities_t caps;
  memset(&caps, 0, sizeof caps);
  cmlc_kernels_special_capabilities(&caps);
  ASSERT_TRUE(cml_capabilities_has_op(&caps, CML_OP_RNG_BIT_GENERATOR));
  ASSERT_TRUE(cml_capabilities_has_op(&caps, CML_OP_FFT));
  ASSERT_TRUE(cml_capabilities_has_op(&caps, CML_OP_BATCH_NORM_TRAINING));
  ASSERT_TRUE(cml_capabilities_has_op(&caps, CML_OP_BATCH_NORM_INFERENCE));
  ASSERT_TRUE(cml_capabilities_has_op(&caps, CML_OP_BATCH_NORM_GRADIENT));
}

TEST_MAIN(TEST_ENTRY(rng_philox_known_answers), TEST_ENTRY(rng_word_mapping_per_dtype),
          TEST_ENTRY(fft_c2c_lengths_and_inverse), TEST_ENTRY(fft_lanes_match_single_lines),
          TEST_ENTRY(fft_inverse_real_lanes_match_single_lines), TEST_ENTRY(fft_c64_hand_values),
          TEST_ENTRY(fft_real_forward_and_inverse), TEST_ENTRY(fft_real_2d),
          TEST_ENTRY(fft_real_power_of_two_half_length),
          TEST_ENTRY(fft_mixed_radix_against_long_double_dft),
          TEST_ENTRY(batch_norm_inference_training_gradient),
          TEST_ENTRY(batch_norm_half_and_middle_axis),
          TEST_ENTRY(batch_norm_blocks_match_per_channel_loop), TEST_ENTRY(capabilities))
