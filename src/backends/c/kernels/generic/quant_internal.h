// SPDX-License-Identifier: Apache-2.0
// kernels/generic/quant_internal.h: the quantized kernel group (FusedQuantizedDense,
// QuantizedEmbeddingLookup): its lookup and capabilities, for the dispatch table
// (src/backends/c/dispatch.c), and the SIMD row kernels the generic file picks.
#ifndef CML_BACKENDS_C_KERNELS_GENERIC_QUANT_INTERNAL_H_
#define CML_BACKENDS_C_KERNELS_GENERIC_QUANT_INTERNAL_H_

#include "backends/c/cmlc.h"
#include "cml/fused.h"

#ifdef __cplusplus
extern "C" {
#endif

// Fills |out| for a FusedQuantizedDense or QuantizedEmbeddingLookup node (false otherwise).
bool cmlc_kernels_quant_lookup(const cml_module_t* module, const cml_ir_node_t* node,
                               const cmlc_options_t* options, cmlc_kernel_entry_t* out);
// Advertises both ops when |options| enable fusion and not the reference kernels.
void cmlc_kernels_quant_capabilities(cml_capabilities_t* caps, const cmlc_options_t* options);
// One activation row prepared for the batch-1 row kernels (once per call, before the rows are
// split over threads). |xs16| always holds the sums of the activations per 16 values (they
// multiply the offsets of Q4_1, Q5_1, Q2_K, Q4_K and Q5_K). With |xq| set (the int8 path,
// option quant_int8), the activations are quantized per 32 values (per 256 for Q4_K, whose
// xd[k / 32] then repeats one scale eight times): x ~= xd[k / 32] * xq[k], xq in [-127, 127],
// and |xs16| holds the sums of those quantized values (xd * sum xq).
typedef struct cmlc_quant_act_t {
  const float* x;     // [k]
  const float* xs16;  // [k / 16]
  const int8_t* xq;   // [k] or NULL: f32 activations
  const float* xd;    // [k / 32] when |xq| is set
  const void* vnni;   // the layout of cmlc_quant_vnni_prepare, for cmlc_quant_gemv_vnni
  bool prefetch_l1;   // prefetch the weight rows into L1 (else L2)
  int64_t k;
} cmlc_quant_act_t;
// The smallest L1 data cache for which the batch-1 row kernels prefetch into L1 (48 KiB: Zen 5,
// Intel since Ice Lake; 32 KiB L1s, as on Zen 4, keep the L2 prefetches).
#define CMLC_QUANT_PREFETCH_L1_MIN (48 * 1024)

// Dot products of |rows| GGML rows of |type| with one prepared activation row:
// y[r] = sum_k w[r, k] * x[k] (rows |row_bytes| apart). Every format.
typedef void (*cmlc_quant_gemv_fn)(cml_ggml_type_t type, const uint8_t* w, int64_t row_bytes,
                                   int64_t rows, const cmlc_quant_act_t* act, float* y);
// The operands of a Linear / NF4 product (cml/fused.h): x [m, k], weights [k, n] of |wdt|
// (packed as cml/shape.h packs sub-byte dtypes), scale (and zero, or NULL) [k, nb] with blocks of
// |block| columns; y [m, n].
typedef struct cmlc_quant_lin_t {
  cml_dtype_t wdt;
  bool nf4;
  const uint8_t* w;
  const float* scale;
  const float* zero;
  int64_t k, m, n, block, nb;
  const float* x;
  float* y;
} cmlc_quant_lin_t;

// Floats of the per-thread panel of the batch-N Linear / NF4 kernels (32 KiB).
#define CMLC_QUANT_LIN_PANEL 8192

// y[i, c0:c1) = sum_k x[i, k] * w[k, c0:c1) for every row i (no bias, no activation), each output
// one f32 FMA chain in ascending k; |c0| a multiple of 64. |panel|: CMLC_QUANT_LIN_PANEL floats
// of the calling thread (NULL: the direct driver for every batch, slower for large batches).
typedef void (*cmlc_quant_lin_fn)(const cmlc_quant_lin_t* p, int64_t c0, int64_t c1, float* panel);

// The stored integer of element |e| of Linear weights of |dt| (sign-extended for the signed).
static inline int cmlc_quant_lin_int_at(cml_dtype_t dt, const uint8_t* w, int64_t e) {
  switch (dt) {
    case CML_DTYPE_I8:
      return (int8_t)w[e];
    case CML_DTYPE_U8:
      return w[e];
    case CML_DTYPE_I4: {
      int v = (w[e >> 1] >> ((e & 1) * 4)) & 15;
      return v >= 8 ? v - 16 : v;
    }
    case CML_DTYPE_U4:
      return (w[e >> 1] >> ((e & 1) * 4)) & 15;
    case CML_DTYPE_I2: {
      int v = (w[e >> 2] >> ((e & 3) * 2)) & 3;
      return v >= 2 ? v - 4 : v;
    }
    default:  // U2
      return (w[e >> 2] >> ((e & 3) * 2)) & 3;
  }
}

#if defined(CMLC_HAVE_X86_64)
// AVX2 + FMA + F16C (int8 path: vpmaddubsw).
void cmlc_quant_gemv_avx2(cml_ggml_type_t type, const uint8_t* w, int64_t row_bytes, int64_t rows,
                          const cmlc_quant_act_t* act, float* y);
// AVX-512 F/BW/VL (f32 path on zmm); its int8 path needs AVX512-VNNI (vpdpbusd).
void cmlc_quant_gemv_avx512(cml_ggml_type_t type, const uint8_t* w, int64_t row_bytes, int64_t rows,
                            const cmlc_quant_act_t* act, float* y);
// The int8 path on AVX512-VNNI for the formats of cmlc_quant_vnni_supports (Q4_0, Q4_K, Q6_K):
// cmlc_quant_vnni_prepare lays out the int8 activations of |act| (xq, xd set) in |out|
// (cmlc_quant_vnni_bytes of it) for cmlc_quant_gemv_vnni, which reads them as act->vnni.
bool cmlc_quant_vnni_supports(cml_ggml_type_t type);
size_t cmlc_quant_vnni_bytes(cml_ggml_type_t type, int64_t k);
void cmlc_quant_vnni_prepare(cml_ggml_type_t type, const cmlc_quant_act_t* act, void* out);
void cmlc_quant_gemv_vnni(cml_ggml_type_t type, const uint8_t* w, int64_t row_bytes, int64_t rows,
                          const cmlc_quant_act_t* act, float* y);
// Batch-N products of |rows| GGML rows with |m| activation rows (y[i * ldy + r]), any format;
// |panel| is 4 * k floats of scratch (four weight rows decoded once, used by all |m| rows).
void cmlc_quant_gemm_avx512(cml_ggml_type_t type, const uint8_t* w, int64_t row_bytes, int64_t rows,
                            const float* x, int64_t m, int64_t k, float* y, int64_t ldy,
                            float* panel);
void cmlc_quant_gemm_avx2(cml_ggml_type_t type, const uint8_t* w, int64_t row_bytes, int64_t rows,
                          const float* x, int64_t m, int64_t k, float* y, int64_t ldy,
                          float* panel);
// The Linear / NF4 kernel (kernels/x86_64/quant_lin_x86_64_body.h) on zmm and on ymm.
void cmlc_quant_lin_avx512(const cmlc_quant_lin_t* p, int64_t c0, int64_t c1, float* panel);
void cmlc_quant_lin_avx2(const cmlc_quant_lin_t* p, int64_t c0, int64_t c1, float* panel);
#endif

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // CML_BACKENDS_C_KERNELS_GENERIC_QUANT_INTERNAL_H_
