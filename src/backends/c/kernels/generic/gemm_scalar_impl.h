// SPDX-License-Identifier: Apache-2.0
// kernels/generic/gemm_scalar_impl.h: the portable GEMM micro-kernel and GEMV kernels,
// instantiated once per element type by gemm.c (private to it). Before including, define:
//   CMLC_GEMM_T        the element type (float or double)
//   CMLC_GEMM_SUFFIX   the name suffix (f32 or f64)
// and CMLC_GEMM_N(x), which pastes cmlc_<x>_<suffix>. It defines three static functions with the
// contracts of cmlc__gemm_ukernel_fn, cmlc__gemv_axpy_fn and cmlc__gemv_dot_fn
// (linalg_internal.h): CMLC_GEMM_N(ukernel_scalar_4x8), a 4 x 8 micro-kernel (a plain
// multiply-add, which compilers vectorize, in the same order for every tile), and
// CMLC_GEMM_N(gemv_axpy_scalar) / CMLC_GEMM_N(gemv_dot_scalar). CMLC_GEMM_T and
// CMLC_GEMM_SUFFIX are undefined at the end.
//
// Thread-safety: reentrant; no state.

static void CMLC_GEMM_N(ukernel_scalar_4x8)(int64_t kc, const CMLC_GEMM_T* a, const CMLC_GEMM_T* b,
                                            int64_t ldb, CMLC_GEMM_T* c, int64_t ldc,
                                            int accumulate, int rows, int cols) {
  CMLC_GEMM_T acc[4][8];
  memset(acc, 0, sizeof acc);
  if (cols == 8) {
    for (int64_t k = 0; k < kc; ++k) {
      const CMLC_GEMM_T* ak = a + k * 4;
      const CMLC_GEMM_T* bk = b + k * ldb;
      for (int r = 0; r < 4; ++r) {
        CMLC_GEMM_T av = ak[r];
        for (int j = 0; j < 8; ++j) acc[r][j] += av * bk[j];
      }
    }
  } else {
    for (int64_t k = 0; k < kc; ++k) {
      const CMLC_GEMM_T* ak = a + k * 4;
      const CMLC_GEMM_T* bk = b + k * ldb;
      for (int r = 0; r < 4; ++r) {
        CMLC_GEMM_T av = ak[r];
        for (int j = 0; j < cols; ++j) acc[r][j] += av * bk[j];
      }
    }
  }
  for (int r = 0; r < rows; ++r) {
    CMLC_GEMM_T* cr = c + r * ldc;
    if (accumulate) {
      for (int j = 0; j < cols; ++j) cr[j] += acc[r][j];
    } else {
      for (int j = 0; j < cols; ++j) cr[j] = acc[r][j];
    }
  }
}

static void CMLC_GEMM_N(gemv_axpy_scalar)(int64_t k, const CMLC_GEMM_T* a, int64_t a_stride,
                                          const CMLC_GEMM_T* b, int64_t ldb, CMLC_GEMM_T* c,
                                          int64_t n) {
  for (int64_t j = 0; j < n; ++j) c[j] = 0;
  for (int64_t kk = 0; kk < k; ++kk) {
    CMLC_GEMM_T av = a[kk * a_stride];
    const CMLC_GEMM_T* bk = b + kk * ldb;
    for (int64_t j = 0; j < n; ++j) c[j] += av * bk[j];
  }
}

static void CMLC_GEMM_N(gemv_dot_scalar)(int64_t k, const CMLC_GEMM_T* x, const CMLC_GEMM_T* y,
                                         int64_t ldy, CMLC_GEMM_T* c, int64_t c_stride, int64_t n) {
  for (int64_t j = 0; j < n; ++j) {
    const CMLC_GEMM_T* yj = y + j * ldy;
    CMLC_GEMM_T s = 0;
    for (int64_t kk = 0; kk < k; ++kk) s += x[kk] * yj[kk];
    c[j * c_stride] = s;
  }
}

#undef CMLC_GEMM_T
#undef CMLC_GEMM_SUFFIX
