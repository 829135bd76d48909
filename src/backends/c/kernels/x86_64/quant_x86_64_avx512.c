// SPDX-License-Identifier: Apache-2.0
// kernels/x86_64/quant_x86_64_avx512.c: AVX-512 batch-1 products of GGML rows with an activation
// row: the row kernels of quant_x86_64_body.h with the f32 path on 16-lane vectors (each 16
// weights widened with vpmovsxbd, converted and multiplied into x with FMA) and the int8 path on
// vpdpbusd (AVX512-VNNI on ymm). Compiled with function target attributes; only called when the
// CPU has AVX-512F/BW/VL (options->isa == CMLC_ISA_AVX512), and for the int8 path only when it
// also has AVX512-VNNI (options->avx512_vnni; else quant.c takes the AVX2 kernels).
#include <string.h>

#include "backends/c/kernels/generic/quant_internal.h"
#include "core/quant_blocks.h"

#if defined(CMLC_HAVE_X86_64)
#define CMLC_QB_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")))
#define CMLC_QB_ZMM 1
#define CMLC_QB_VNNI 1
#include "backends/c/kernels/x86_64/quant_x86_64_body.h"

void cmlc_quant_gemv_avx512(cml_ggml_type_t type, const uint8_t* w, int64_t row_bytes, int64_t rows,
                            const cmlc_quant_act_t* act, float* y) {
  cmlc_qb_gemv(type, w, row_bytes, rows, act, y);
}

#endif  // CMLC_HAVE_X86_64
