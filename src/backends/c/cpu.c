// SPDX-License-Identifier: Apache-2.0
// src/backends/c/cpu.c: CPU feature detection and the choice of the kernels' ISA.
//
// Features come from __builtin_cpu_supports (each result compared with 0: it returns a
// non-zero int, not necessarily 1), F16C from CPUID leaf 1 (ECX bit 29: clang 14's
// __builtin_cpu_supports does not know "f16c"). This is the only place the kernels' CPU features
// are probed; it runs once per backend (CPUID traps to the hypervisor on virtual machines, 10-20
// us), never per compile or execute. The ISA is the best one the CPU has and the user allows
// (GOMLX_SIMD_AVX512 / GOMLX_SIMD_AVX2 / config keys avx512, avx2); reference=true forces the
// scalar kernels.
//
// Thread-safety: thread-safe (no state).
#include <unistd.h>

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#endif

#include "backends/c/engine_internal.h"

void cmlc_cpu_detect(cmlc_cpu_features_t* out_features) {
  cmlc_cpu_features_t f = {0};
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  unsigned a = 0, b = 0, c = 0, d = 0;
  f.f16c = __get_cpuid(1, &a, &b, &c, &d) != 0 && (c & (1u << 29)) != 0;
  f.avx2_fma = __builtin_cpu_supports("avx2") != 0 && __builtin_cpu_supports("fma") != 0;
  f.avx512 = __builtin_cpu_supports("avx512f") != 0 && __builtin_cpu_supports("avx512bw") != 0 &&
             __builtin_cpu_supports("avx512vl") != 0 && __builtin_cpu_supports("avx512dq") != 0;
#if (defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 10) || \
    (defined(__clang__) && __clang_major__ >= 9)
  f.avx512_bf16 = f.avx512 && __builtin_cpu_supports("avx512bf16") != 0;
#endif
  f.avx512_vnni = f.avx512 && __builtin_cpu_supports("avx512vnni") != 0;
#endif
#if defined(_SC_LEVEL1_DCACHE_SIZE)
  // glibc reads it from CPUID (leaf 4 on Intel, 0x8000001D / 0x80000005 on AMD); 0 or -1 when
  // it cannot tell.
  const long l1d = sysconf(_SC_LEVEL1_DCACHE_SIZE);
  f.l1d_bytes = l1d > 0 ? (int64_t)l1d : 0;
#endif
  *out_features = f;
}

void cmlc_options_select_isa(const cmlc_cpu_features_t* features, bool allow_avx512,
                             bool allow_avx2, bool reference, cmlc_options_t* options) {
  options->isa = CMLC_ISA_SCALAR;
  options->avx512_bf16 = false;
  options->l1d_bytes = 0;
  options->avx512_vnni = false;
  if (reference) return;
  // Both SIMD ISAs include F16C (the elementwise kernels convert f16 with it; every AVX2 + FMA
  // CPU has it), so no kernel checks it again.
  if (!features->f16c) return;
  // avx2=false turns AVX-512 off too: the AVX-512 level runs AVX2 kernels wherever an op has
  // no 512-bit one, and its own kernels use AVX2 instructions.
  if (allow_avx512 && allow_avx2 && features->avx512 && features->avx2_fma) {
    options->isa = CMLC_ISA_AVX512;
    options->avx512_bf16 = features->avx512_bf16;
    options->avx512_vnni = features->avx512_vnni;
    options->l1d_bytes = features->l1d_bytes;
  } else if (allow_avx2 && features->avx2_fma) {
    options->isa = CMLC_ISA_AVX2;
  }
}

const char* cmlc_isa_name(cmlc_isa_t isa) {
  switch (isa) {
    case CMLC_ISA_AVX512:
      return "avx512";
    case CMLC_ISA_AVX2:
      return "avx2";
    case CMLC_ISA_SCALAR:
      return "scalar";
  }
  return "scalar";
}

int cmlc_cpu_count(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  if (n < 1) return 1;
  if (n > 4096) return 4096;
  return (int)n;
}
