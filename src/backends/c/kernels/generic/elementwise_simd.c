// SPDX-License-Identifier: Apache-2.0
// kernels/generic/elementwise_simd.c: picks the SIMD elementwise / reduction kernels for the
// backend's options (ISA, reference mode); the scalar kernels stay the reference and run when
// these return NULL.
#include "backends/c/kernels/generic/elementwise_internal.h"

#include <stdatomic.h>

#if defined(CMLC_EW_HAVE_X86)
#include <cpuid.h>
#endif

// CPUID traps to the hypervisor on virtual machines (10-20 us), and kernels are picked on every
// execute, so the answer is computed once and cached (-1: not yet known).
bool cmlc_ew_cpu_has_f16c(void) {
#if defined(CMLC_EW_HAVE_X86)
  static atomic_int cached = -1;
  int known = atomic_load_explicit(&cached, memory_order_relaxed);
  if (known >= 0) return known != 0;
  unsigned a = 0, b = 0, c = 0, d = 0;
  int has = __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 29)) != 0;
  atomic_store_explicit(&cached, has, memory_order_relaxed);
  return has != 0;
#else
  return false;
#endif
}

// The ISA the SIMD kernels may use: scalar for reference=true. The AVX2 layer also uses F16C,
// which every AVX2 + FMA processor has; it is checked anyway.
static cmlc_isa_t cmlc_ew_simd_isa(const cmlc_options_t* options) {
  if (!options || options->reference) return CMLC_ISA_SCALAR;
#if defined(CMLC_EW_HAVE_X86)
  if (options->isa >= CMLC_ISA_AVX2 && !cmlc_ew_cpu_has_f16c()) return CMLC_ISA_SCALAR;
  return options->isa;
#else
  return CMLC_ISA_SCALAR;
#endif
}

#if defined(CMLC_EW_HAVE_X86)
#define CMLC_EW_SIMD_PICK(call)        \
  switch (cmlc_ew_simd_isa(options)) { \
    case CMLC_ISA_AVX512:              \
      return cmlc_ew_avx512_##call;    \
    case CMLC_ISA_AVX2:                \
      return cmlc_ew_avx2_##call;      \
    default:                           \
      return NULL;                     \
  }
#else
#define CMLC_EW_SIMD_PICK(call)    \
  (void)cmlc_ew_simd_isa(options); \
  return NULL;
#endif

cmlc_ew_fn cmlc_ew_simd_unary_fn(const cmlc_options_t* options, cml_op_t op, cml_dtype_t dtype) {
  (void)op;
  (void)dtype;
  CMLC_EW_SIMD_PICK(unary_fn(op, dtype))
}

cmlc_ew_fn cmlc_ew_simd_binary_fn(const cmlc_options_t* options, cml_op_t op, cml_dtype_t dtype) {
  (void)op;
  (void)dtype;
  CMLC_EW_SIMD_PICK(binary_fn(op, dtype))
}

cmlc_ew_fn cmlc_ew_simd_where_fn(const cmlc_options_t* options, size_t element_size) {
  (void)element_size;
  CMLC_EW_SIMD_PICK(where_fn(element_size))
}

cmlc_ew_convert_fn cmlc_ew_simd_convert_fn(const cmlc_options_t* options, cml_dtype_t from,
                                           cml_dtype_t to) {
  (void)from;
  (void)to;
  CMLC_EW_SIMD_PICK(convert_fn(from, to))
}

cmlc_rd_f32_fn cmlc_rd_simd_f32_fn(const cmlc_options_t* options, cml_op_t op) {
  (void)op;
  CMLC_EW_SIMD_PICK(reduce_fn(op))
}
