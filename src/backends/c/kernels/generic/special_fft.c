// SPDX-License-Identifier: Apache-2.0
// kernels/generic/special_fft.c: FFT (XLA semantics) over the trailing 1..3 axes, any length.
//
//   FORWARD       c64/c128 -> same: X[k] = sum_j x[j] exp(-2 pi i jk / n) per axis.
//   INVERSE       c64/c128 -> same: exp(+...) and scaled by 1 / (product of the lengths).
//   FORWARD_REAL  f32/f64 [..., L] -> c64/c128 [..., L/2+1]: the forward transform of the
//                 real input, keeping the non-negative frequencies of the last axis.
//   INVERSE_REAL  c64/c128 [..., L/2+1] -> f32/f64 [..., L]: inverse over the leading fft axes,
//                 then along the last axis the input is extended as a Hermitian spectrum
//                 (X[L-k] = conj(X[k])) and the real part of its inverse is kept (so the
//                 imaginary parts of the DC and Nyquist terms are ignored), scaled by
//                 1 / (product of the lengths).
// Everything is computed in double on a work array [batch, L0, .., L(a-1)] in scratch, one axis
// at a time; a line is gathered into a per-thread buffer, transformed, and scattered back.
// 1-D transforms: radix-2 (iterative) for powers of two; a mixed-radix Stockham transform
// (self-sorting, radix 4, 2, 3, 5 butterflies and a generic one for 7, 11, 13, per-stage
// twiddle tables made at plan time) for other lengths whose prime factors are all <= 13; a
// direct DFT for the remaining lengths up to 32; Bluestein's chirp-z beyond, its convolution
// through a mixed-radix transform of the smallest 2^a 3^b 5^c >= 2n - 1. Real transforms whose
// last length is even run that axis as a half-length complex transform plus a twiddle pass (the
// leading axes then on the L/2 + 1 columns only). Inverse transforms use conj(DFT(conj(x))).
// Lines are split over threads, each transformed whole, so results never depend on the thread
// count; power-of-two lines may share vector lanes (the same operations per lane as alone),
// others run one at a time, so results do not depend on the grouping either.
#include "backends/c/kernels/generic/linalg_internal.h"

enum {
  CMLC_FFT_DIRECT_MAX = 32,
  // Power-of-two lines are transformed up to this many at a time (cmlc_fft_pow2_x2 / _x4)
  // when an axis has that many lines together; the rest one by one. Line l of a pass is in
  // group l / lanes whatever the threads, and each line gets the same operations in any lane,
  // so results depend on neither.
  CMLC_FFT_LANES_MAX = 4,
  // Mixed-radix lengths: every prime factor at most this (radix 4, 2, 3, 5 butterflies written
  // out, 7, 11, 13 through the generic odd-prime one); at most 64 stages (n < 2^63).
  CMLC_FFT_MR_PRIME_MAX = 13,
  CMLC_FFT_MR_STAGES_MAX = 64,
};

typedef enum cmlc_fft_kind_t {
  CMLC_FFT_TRIVIAL = 0,  // n <= 1
  CMLC_FFT_POW2 = 1,
  CMLC_FFT_DIRECT = 2,
  CMLC_FFT_BLUESTEIN = 3,
  CMLC_FFT_MIXED = 4,
} cmlc_fft_kind_t;

// A mixed-radix (Stockham) transform of length n = radix[0] * .. * radix[stages-1]: its
// per-stage twiddle tables start |off| doubles from the tables' start.
typedef struct cmlc_fft_mr_t {
  int64_t n;
  int32_t stages;
  uint8_t radix[CMLC_FFT_MR_STAGES_MAX];
  size_t off;
} cmlc_fft_mr_t;

typedef struct cmlc_fft_axis_t {
  int64_t n;
  cmlc_fft_kind_t kind;
  int64_t m;         // Bluestein's convolution length (5-smooth, >= 2n - 1)
  cmlc_fft_mr_t mr;  // MIXED: the length-n transform; BLUESTEIN: the length-m one
  // Offsets in doubles from the scratch start.
  size_t off_tw;      // POW2: n/2 twiddles; DIRECT: n twiddles
  size_t off_chirp;   // BLUESTEIN: n chirp values
  size_t off_filter;  // BLUESTEIN: m filter spectrum values, then m values of room to make them
} cmlc_fft_axis_t;

typedef struct cmlc_fft_plan_t {
  cml_fft_type_t type;
  int32_t axes;
  int64_t lengths[3];
  int64_t batch;
  int64_t full;  // batch * prod(lengths): complex elements of the work array
  cmlc_fft_axis_t ax[3];
  // Real transforms whose last length L is even and >= 4 run it at half length (see "real
  // transforms" below): ax[axes - 1] is then the length-L/2 complex transform, and off_rtw holds
  // its L/2 post-processing twiddles exp(-2 pi i k / L). With more axes the leading ones run on
  // the L/2 + 1 columns of the half spectrum only.
  bool real_half;
  size_t off_rtw;
  int threads;
  size_t off_work;     // doubles
  size_t off_thread;   // doubles: first per-thread buffer
  size_t thread_size;  // doubles per thread
  size_t total;        // doubles
} cmlc_fft_plan_t;

static bool cmlc_fft_is_pow2(int64_t n) { return n > 0 && (n & (n - 1)) == 0; }

// |x| doubles rounded up to a 64-byte multiple. Plan sizes in doubles saturate at SIZE_MAX
// (cmlc_size_add / cmlc_size_of, and here) instead of wrapping on 32-bit size_t.
static size_t cmlc_fft_round(size_t x) { return cmlc_size_align(x, 8); }

// |off| doubles plus |count| values of |doubles| doubles each, rounded (saturating).
static size_t cmlc_fft_next(size_t off, int64_t count, size_t doubles) {
  return cmlc_fft_round(cmlc_size_add(off, cmlc_size_of(count, doubles)));
}

// Splits |n| > 1 into Stockham stages (4s first, then a 2, then the odd primes in increasing
// order) with their tables at |off|; returns the offset past them, or SIZE_MAX with r->stages 0
// when n has a prime factor above CMLC_FFT_MR_PRIME_MAX. Stage q of sub-length len (len = n
// for q = 0, divided by each radix in turn) holds the twiddles exp(-2 pi i j u / len) for
// j < len / p and u = 1..p-1 (p - 1 complex values per j), after p complex constants
// exp(-2 pi i u / p) for the generic odd-prime butterfly (p >= 7).
static size_t cmlc_fft_mr_plan(cmlc_fft_mr_t* r, int64_t n, size_t off) {
  memset(r, 0, sizeof *r);
  r->n = n;
  r->off = off;
  int64_t rest = n;
  int32_t st = 0;
  while (rest % 4 == 0) r->radix[st++] = 4, rest /= 4;
  if (rest % 2 == 0) r->radix[st++] = 2, rest /= 2;
  for (int p = 3; p <= CMLC_FFT_MR_PRIME_MAX; p += 2) {
    while (rest % p == 0) r->radix[st++] = (uint8_t)p, rest /= p;
  }
  if (rest != 1) {
    r->stages = 0;
    return SIZE_MAX;
  }
  r->stages = st;
  int64_t len = n;
  for (int32_t q = 0; q < st; ++q) {
    const int64_t p = r->radix[q], m = len / p;
    off = cmlc_size_add(off, cmlc_size_of(m * (p - 1) + (p >= 7 ? p : 0), 2));
    len = m;
  }
  return cmlc_fft_round(off);
}

// Smallest 2^a 3^b 5^c >= |need| (Bluestein's convolution length).
static int64_t cmlc_fft_smooth_at_least(int64_t need) {
  int64_t best = 1;
  while (best < need) best *= 2;
  for (int64_t f5 = 1; f5 < best; f5 *= 5) {
    for (int64_t f35 = f5; f35 < best; f35 *= 3) {
      int64_t v = f35;
      while (v < need) v *= 2;
      if (v < best) best = v;
    }
  }
  return best;
}

// Plans one axis of length |n| with its tables from |off|; returns the offset past them.
static size_t cmlc_fft_axis_plan(cmlc_fft_axis_t* x, int64_t n, size_t off) {
  memset(x, 0, sizeof *x);
  x->n = n;
  if (n <= 1) {
    x->kind = CMLC_FFT_TRIVIAL;
    return off;
  }
  if (cmlc_fft_is_pow2(n)) {
    x->kind = CMLC_FFT_POW2;
    x->off_tw = off;
    return cmlc_fft_next(off, n, 1);  // n/2 complex
  }
  const size_t mixed = cmlc_fft_mr_plan(&x->mr, n, off);
  if (x->mr.stages > 0) {
    x->kind = CMLC_FFT_MIXED;
    return mixed;
  }
  if (n <= CMLC_FFT_DIRECT_MAX) {
    x->kind = CMLC_FFT_DIRECT;
    x->off_tw = off;
    return cmlc_fft_next(off, n, 2);
  }
  x->kind = CMLC_FFT_BLUESTEIN;
  x->m = cmlc_fft_smooth_at_least(2 * n - 1);
  x->off_chirp = off;
  off = cmlc_fft_next(off, n, 2);
  x->off_filter = off;
  off = cmlc_fft_next(off, x->m, 4);
  return cmlc_fft_mr_plan(&x->mr, x->m, off);
}

// Doubles a thread needs to transform one line of |x| alone: the line, then the transform's
// work area (the Stockham transforms' second buffer; Bluestein's convolution and its
// transforms' second buffer).
static size_t cmlc_fft_line_need(const cmlc_fft_axis_t* x) {
  size_t need = cmlc_size_of(x->n, 2);
  if (x->kind == CMLC_FFT_BLUESTEIN) return cmlc_size_add(need, cmlc_size_of(x->m, 4));
  if (x->kind == CMLC_FFT_DIRECT || x->kind == CMLC_FFT_MIXED)
    return cmlc_size_add(need, cmlc_size_of(x->n, 2));
  return need;
}

static bool cmlc_fft_plan(const cml_shape_t* in, const cml_shape_t* out,
                          const cml_ir_attrs_t* attrs, int threads, cmlc_fft_plan_t* p) {
  memset(p, 0, sizeof *p);
  p->type = attrs->fft_type;
  p->axes = attrs->axis_count;
  if (p->axes < 1 || p->axes > 3 || p->axes > in->rank || in->rank != out->rank) return false;
  bool real_in = p->type == CML_FFT_FORWARD_REAL;
  bool real_out = p->type == CML_FFT_INVERSE_REAL;
  cml_dtype_t want_in = in->dtype, want_out = out->dtype;
  if (real_in ? !(want_in == CML_DTYPE_F32 || want_in == CML_DTYPE_F64)
              : !cml_dtype_is_complex(want_in))
    return false;
  if (real_out ? !(want_out == CML_DTYPE_F32 || want_out == CML_DTYPE_F64)
               : !cml_dtype_is_complex(want_out))
    return false;
  if ((int)p->type < 0 || p->type >= CML_FFT_TYPE_COUNT) return false;
  p->batch = 1;
  for (int32_t d = 0; d < in->rank - p->axes; ++d) p->batch *= in->dims[d];
  p->full = p->batch;
  for (int32_t a = 0; a < p->axes; ++a) {
    p->lengths[a] = attrs->axes[a];
    if (p->lengths[a] < 0) return false;
    p->full *= p->lengths[a];
  }
  // One line buffer per thread when some pass has at least as many lines as threads; else one
  // (a 1-D transform of a single long line runs on one thread: the run leaves the pool out).
  int64_t lines = 1;
  for (int32_t a = 0; a < p->axes; ++a) {
    const int64_t along = p->lengths[a] > 0 ? p->full / p->lengths[a] : 0;
    if (along > lines) lines = along;
  }
  p->threads = threads < 1 ? 1 : threads;
  if (lines < p->threads) p->threads = 1;
  size_t off = 0;
  size_t thread_need = 0;
  const int64_t last = p->lengths[p->axes - 1];
  p->real_half = (real_in || real_out) && last >= 4 && last % 2 == 0;
  for (int32_t a = 0; a < p->axes; ++a) {
    cmlc_fft_axis_t* x = &p->ax[a];
    size_t need;
    if (p->real_half && a == p->axes - 1) {
      const int64_t m = last / 2;
      off = cmlc_fft_axis_plan(x, m, off);
      p->off_rtw = off;
      off = cmlc_fft_next(off, m, 2);
      // The lanes' re and im (m each per lane), then one line and its work area.
      need = cmlc_size_add(cmlc_size_of(m, 2 * CMLC_FFT_LANES_MAX), cmlc_fft_line_need(x));
    } else {
      off = cmlc_fft_axis_plan(x, p->lengths[a], off);
      need = cmlc_fft_line_need(x);
      if (x->kind == CMLC_FFT_POW2) need = cmlc_size_of(x->n, 2 * CMLC_FFT_LANES_MAX);  // lanes
    }
    if (need > thread_need) thread_need = need;
  }
  p->off_work = off;
  off = cmlc_fft_next(off, p->full, 2);
  p->off_thread = off;
  p->thread_size = cmlc_fft_round(thread_need);
  off = cmlc_size_add(off, cmlc_size_mul(p->thread_size, (size_t)p->threads));
  p->total = off;
  return true;
}

//===--- 1-D transforms (forward, in place, interleaved complex doubles) ---===//

static void cmlc_fft_twiddles(double* tw, int64_t count, int64_t n) {
  for (int64_t j = 0; j < count; ++j) {
    double ang = -2.0 * M_PI * (double)j / (double)n;
    tw[2 * j] = cos(ang);
    tw[2 * j + 1] = sin(ang);
  }
}

// Radix-2 forward FFT of length n (a power of two) with twiddles tw[j * tws] = exp(-2 pi i j / n)
// (tws 2: every second entry of a table twice as long; the callers now pass 1).
static void cmlc_fft_pow2(double* x, int64_t n, const double* tw, int64_t tws) {
  for (int64_t i = 1, j = 0; i < n; ++i) {
    int64_t bit = n >> 1;
    for (; j & bit; bit >>= 1) j ^= bit;
    j ^= bit;
    if (i < j) {
      double tr = x[2 * i], ti = x[2 * i + 1];
      x[2 * i] = x[2 * j], x[2 * i + 1] = x[2 * j + 1];
      x[2 * j] = tr, x[2 * j + 1] = ti;
    }
  }
  for (int64_t len = 2; len <= n; len <<= 1) {
    int64_t half = len >> 1, step = n / len * tws;
    for (int64_t s = 0; s < n; s += len) {
      for (int64_t k = 0; k < half; ++k) {
        double wr = tw[2 * k * step], wi = tw[2 * k * step + 1];
        double* u = x + 2 * (s + k);
        double* v = x + 2 * (s + k + half);
        double vr = v[0] * wr - v[1] * wi, vi = v[0] * wi + v[1] * wr;
        v[0] = u[0] - vr, v[1] = u[1] - vi;
        u[0] += vr, u[1] += vi;
      }
    }
  }
}

// cmlc_fft_pow2 on several lines at once, one vector lane per line: re[j] and im[j] hold
// element j of every line. The same operations in the same order on each lane (plain vector
// arithmetic, no contraction into fused multiply-adds), so each line gets the same bits as
// alone: two lanes on any target (SSE2 on x86-64), four with AVX2.
#define CMLC_FFT_POW2_LANES(name, V, ATTR)                                        \
  ATTR static void name(V* re, V* im, int64_t n, const double* tw, int64_t tws) { \
    for (int64_t i = 1, j = 0; i < n; ++i) {                                      \
      int64_t bit = n >> 1;                                                       \
      for (; j & bit; bit >>= 1) j ^= bit;                                        \
      j ^= bit;                                                                   \
      if (i < j) {                                                                \
        const V tr = re[i], ti = im[i];                                           \
        re[i] = re[j], im[i] = im[j];                                             \
        re[j] = tr, im[j] = ti;                                                   \
      }                                                                           \
    }                                                                             \
    for (int64_t len = 2; len <= n; len <<= 1) {                                  \
      int64_t half = len >> 1, step = n / len * tws;                              \
      for (int64_t s = 0; s < n; s += len) {                                      \
        for (int64_t k = 0; k < half; ++k) {                                      \
          const double wr = tw[2 * k * step], wi = tw[2 * k * step + 1];          \
          V* ur = re + s + k;                                                     \
          V* ui = im + s + k;                                                     \
          V* vr = re + s + k + half;                                              \
          V* vi = im + s + k + half;                                              \
          const V xr = *vr * wr - *vi * wi, xi = *vr * wi + *vi * wr;             \
          *vr = *ur - xr, *vi = *ui - xi;                                         \
          *ur += xr, *ui += xi;                                                   \
        }                                                                         \
      }                                                                           \
    }                                                                             \
  }
typedef double cmlc_fft_v2 __attribute__((vector_size(2 * sizeof(double))));
CMLC_FFT_POW2_LANES(cmlc_fft_pow2_x2, cmlc_fft_v2, )
#if defined(CMLC_HAVE_X86_64)
typedef double cmlc_fft_v4 __attribute__((vector_size(4 * sizeof(double))));
CMLC_FFT_POW2_LANES(cmlc_fft_pow2_x4, cmlc_fft_v4, __attribute__((target("avx2"))))
#endif
#undef CMLC_FFT_POW2_LANES

//===--- mixed-radix (Stockham) transforms ---===//
//
// A length-len transform over |s| interleaved sequences (sequence q's entry j at q + s j) is,
// with len = p m, one radix-p stage and then length-m transforms over s p sequences: for
// j < m and u < p, b_u[j] = w^(j u) sum_t a[j + t m] exp(-2 pi i t u / p) (w = exp(-2 pi i /
// len)) goes to q + s (p j + u), and the length-m transform of b_u, at stride s p, lands its
// entry k at q + s (u + p k) = entry u + p k of the whole transform (decimation in frequency).
// The stages ping-pong between the line and a second buffer and end in natural order (no bit
// reversal), each reading its twiddles in order from its own table.

// Complex helpers on (re, im) pairs; the butterflies below spell out their arithmetic in a fixed
// order so a line's result depends only on its values.
#define CMLC_FFT_LD(v, p) const double v##r = (p)[0], v##i = (p)[1]

// Twiddle |w| (exp(-2 pi i j u / len) of the stage table) times (ar, ai), stored at |dst|.
static inline void cmlc_fft_twst(double* dst, const double* w, double ar, double ai) {
  dst[0] = ar * w[0] - ai * w[1];
  dst[1] = ar * w[1] + ai * w[0];
}

// One radix-|p| stage: |src| -> |dst| with sub-length len = p m over |s| sequences, stage
// table |tw| (generic odd primes: p constants, then the twiddles).
static void cmlc_fft_mr_stage(const double* restrict src, double* restrict dst, int64_t p,
                              int64_t m, int64_t s, const double* tw) {
  const int64_t sm = s * m;  // doubles between a[j + t m] and a[j + (t + 1) m]: 2 sm
  switch (p) {
    case 2:
      for (int64_t j = 0; j < m; ++j) {
        const double* w = tw + 2 * j;
        for (int64_t q = 0; q < s; ++q) {
          const double* a = src + 2 * (q + s * j);
          double* d = dst + 2 * (q + s * 2 * j);
          CMLC_FFT_LD(a0, a);
          CMLC_FFT_LD(a1, a + 2 * sm);
          d[0] = a0r + a1r, d[1] = a0i + a1i;
          cmlc_fft_twst(d + 2 * s, w, a0r - a1r, a0i - a1i);
        }
      }
      break;
    case 4:
      for (int64_t j = 0; j < m; ++j) {
        const double* w = tw + 6 * j;
        for (int64_t q = 0; q < s; ++q) {
          const double* a = src + 2 * (q + s * j);
          double* d = dst + 2 * (q + s * 4 * j);
          CMLC_FFT_LD(a0, a);
          CMLC_FFT_LD(a1, a + 2 * sm);
          CMLC_FFT_LD(a2, a + 4 * sm);
          CMLC_FFT_LD(a3, a + 6 * sm);
          const double s02r = a0r + a2r, s02i = a0i + a2i, d02r = a0r - a2r, d02i = a0i - a2i;
          const double s13r = a1r + a3r, s13i = a1i + a3i, d13r = a1r - a3r, d13i = a1i - a3i;
          d[0] = s02r + s13r, d[1] = s02i + s13i;
          // y1 = d02 - i d13, y2 = s02 - s13, y3 = d02 + i d13.
          cmlc_fft_twst(d + 2 * s, w, d02r + d13i, d02i - d13r);
          cmlc_fft_twst(d + 4 * s, w + 2, s02r - s13r, s02i - s13i);
          cmlc_fft_twst(d + 6 * s, w + 4, d02r - d13i, d02i + d13r);
        }
      }
      break;
    case 3: {
      const double h = 0.86602540378443864676;  // sin(2 pi / 3)
      for (int64_t j = 0; j < m; ++j) {
        const double* w = tw + 4 * j;
        for (int64_t q = 0; q < s; ++q) {
          const double* a = src + 2 * (q + s * j);
          double* d = dst + 2 * (q + s * 3 * j);
          CMLC_FFT_LD(a0, a);
          CMLC_FFT_LD(a1, a + 2 * sm);
          CMLC_FFT_LD(a2, a + 4 * sm);
          const double tr = a1r + a2r, ti = a1i + a2i;
          const double cr = a0r - 0.5 * tr, ci = a0i - 0.5 * ti;
          const double er = h * (a1r - a2r), ei = h * (a1i - a2i);
          d[0] = a0r + tr, d[1] = a0i + ti;
          // y1 = c - i e, y2 = c + i e.
          cmlc_fft_twst(d + 2 * s, w, cr + ei, ci - er);
          cmlc_fft_twst(d + 4 * s, w + 2, cr - ei, ci + er);
        }
      }
      break;
    }
    case 5: {
      const double c1 = 0.30901699437494742410, c2 = -0.80901699437494742410;  // cos(2pi k/5)
      const double s1 = 0.95105651629515357212, s2 = 0.58778525229247312917;   // sin(2pi k/5)
      for (int64_t j = 0; j < m; ++j) {
        const double* w = tw + 8 * j;
        for (int64_t q = 0; q < s; ++q) {
          const double* a = src + 2 * (q + s * j);
          double* d = dst + 2 * (q + s * 5 * j);
          CMLC_FFT_LD(a0, a);
          CMLC_FFT_LD(a1, a + 2 * sm);
          CMLC_FFT_LD(a2, a + 4 * sm);
          CMLC_FFT_LD(a3, a + 6 * sm);
          CMLC_FFT_LD(a4, a + 8 * sm);
          const double b1r = a1r + a4r, b1i = a1i + a4i, d1r = a1r - a4r, d1i = a1i - a4i;
          const double b2r = a2r + a3r, b2i = a2i + a3i, d2r = a2r - a3r, d2i = a2i - a3i;
          d[0] = a0r + b1r + b2r, d[1] = a0i + b1i + b2i;
          // y1,4 = a0 + c1 b1 + c2 b2 -/+ i (s1 d1 + s2 d2);
          // y2,3 = a0 + c2 b1 + c1 b2 -/+ i (s2 d1 - s1 d2).
          const double p1r = a0r + c1 * b1r + c2 * b2r, p1i = a0i + c1 * b1i + c2 * b2i;
          const double q1r = s1 * d1r + s2 * d2r, q1i = s1 * d1i + s2 * d2i;
          const double p2r = a0r + c2 * b1r + c1 * b2r, p2i = a0i + c2 * b1i + c1 * b2i;
          const double q2r = s2 * d1r - s1 * d2r, q2i = s2 * d1i - s1 * d2i;
          cmlc_fft_twst(d + 2 * s, w, p1r + q1i, p1i - q1r);
          cmlc_fft_twst(d + 4 * s, w + 2, p2r + q2i, p2i - q2r);
          cmlc_fft_twst(d + 6 * s, w + 4, p2r - q2i, p2i + q2r);
          cmlc_fft_twst(d + 8 * s, w + 6, p1r - q1i, p1i + q1r);
        }
      }
      break;
    }
    default: {
      // Odd prime p <= CMLC_FFT_MR_PRIME_MAX: pairs b_t = a_t + a_(p-t), d_t = a_t - a_(p-t)
      // give y_u, y_(p-u) = a0 + sum_t cos(2 pi t u / p) b_t -/+ i sum_t sin(2 pi t u / p) d_t.
      const double* k = tw;  // k[2 v] = cos(2 pi v / p), k[2 v + 1] = -sin(2 pi v / p)
      const int64_t hp = p / 2;
      double br[CMLC_FFT_MR_PRIME_MAX], bi[CMLC_FFT_MR_PRIME_MAX];
      double dr[CMLC_FFT_MR_PRIME_MAX], di[CMLC_FFT_MR_PRIME_MAX];
      for (int64_t j = 0; j < m; ++j) {
        const double* w = tw + 2 * p + 2 * (p - 1) * j;
        for (int64_t q = 0; q < s; ++q) {
          const double* a = src + 2 * (q + s * j);
          double* d = dst + 2 * (q + s * p * j);
          CMLC_FFT_LD(a0, a);
          double y0r = a0r, y0i = a0i;
          for (int64_t t = 1; t <= hp; ++t) {
            const double* x = a + 2 * t * sm;
            const double* z = a + 2 * (p - t) * sm;
            br[t] = x[0] + z[0], bi[t] = x[1] + z[1];
            dr[t] = x[0] - z[0], di[t] = x[1] - z[1];
            y0r += br[t], y0i += bi[t];
          }
          d[0] = y0r, d[1] = y0i;
          for (int64_t u = 1; u <= hp; ++u) {
            double pr = a0r, pi = a0i, qr = 0.0, qi = 0.0;
            for (int64_t t = 1; t <= hp; ++t) {
              const int64_t v = (t * u) % p;
              const double c = k[2 * v], sn = -k[2 * v + 1];
              pr += c * br[t], pi += c * bi[t];
              qr += sn * dr[t], qi += sn * di[t];
            }
            cmlc_fft_twst(d + 2 * u * s, w + 2 * (u - 1), pr + qi, pi - qr);
            cmlc_fft_twst(d + 2 * (p - u) * s, w + 2 * (p - u - 1), pr - qi, pi + qr);
          }
        }
      }
      break;
    }
  }
}

// Forward DFT of |x| (r->n complex) in place through the stages of |r| (tables at |t| +
// r->off); |y| holds r->n complex of work.
static void cmlc_fft_mr(const cmlc_fft_mr_t* r, const double* t, double* x, double* y) {
  const double* tw = t + r->off;
  double *src = x, *dst = y;
  int64_t len = r->n, s = 1;
  for (int32_t q = 0; q < r->stages; ++q) {
    const int64_t p = r->radix[q], m = len / p;
    cmlc_fft_mr_stage(src, dst, p, m, s, tw);
    tw += 2 * (m * (p - 1) + (p >= 7 ? p : 0));
    double* tmp = src;
    src = dst, dst = tmp;
    s *= p, len = m;
  }
  if (src != x) memcpy(x, src, 2 * (size_t)r->n * sizeof(double));
}

// Fills the stage tables of |r| (see cmlc_fft_mr_plan) at |t| + r->off.
static void cmlc_fft_mr_init(const cmlc_fft_mr_t* r, double* t) {
  double* tw = t + r->off;
  int64_t len = r->n;
  for (int32_t q = 0; q < r->stages; ++q) {
    const int64_t p = r->radix[q], m = len / p;
    if (p >= 7) {
      for (int64_t v = 0; v < p; ++v) {
        const double ang = -2.0 * M_PI * (double)v / (double)p;
        tw[2 * v] = cos(ang), tw[2 * v + 1] = sin(ang);
      }
      tw += 2 * p;
    }
    for (int64_t j = 0; j < m; ++j) {
      for (int64_t u = 1; u < p; ++u) {
        // The angle from j u reduced mod len: exact, and small.
        const double ang = -2.0 * M_PI * (double)((j * u) % len) / (double)len;
        tw[2 * (j * (p - 1) + u - 1)] = cos(ang);
        tw[2 * (j * (p - 1) + u - 1) + 1] = sin(ang);
      }
    }
    tw += 2 * m * (p - 1);
    len = m;
  }
}
#undef CMLC_FFT_LD

static void cmlc_fft_axis_init(const cmlc_fft_axis_t* x, double* s) {
  switch (x->kind) {
    case CMLC_FFT_POW2:
      cmlc_fft_twiddles(s + x->off_tw, x->n / 2, x->n);
      break;
    case CMLC_FFT_DIRECT:
      cmlc_fft_twiddles(s + x->off_tw, x->n, x->n);
      break;
    case CMLC_FFT_MIXED:
      cmlc_fft_mr_init(&x->mr, s);
      break;
    case CMLC_FFT_BLUESTEIN: {
      double* chirp = s + x->off_chirp;
      double* filter = s + x->off_filter;
      int64_t n = x->n, m = x->m;
      for (int64_t j = 0; j < n; ++j) {
        // exp(-i pi j^2 / n), with j^2 reduced mod 2n to keep the angle small and exact.
        int64_t q = (int64_t)(((uint64_t)j * (uint64_t)j) % (uint64_t)(2 * n));
        double ang = -M_PI * (double)q / (double)n;
        chirp[2 * j] = cos(ang);
        chirp[2 * j + 1] = sin(ang);
      }
      memset(filter, 0, 2 * (size_t)m * sizeof(double));
      for (int64_t j = 0; j < n; ++j) {
        filter[2 * j] = chirp[2 * j];
        filter[2 * j + 1] = -chirp[2 * j + 1];
        if (j > 0) {
          filter[2 * (m - j)] = chirp[2 * j];
          filter[2 * (m - j) + 1] = -chirp[2 * j + 1];
        }
      }
      cmlc_fft_mr_init(&x->mr, s);
      cmlc_fft_mr(&x->mr, s, filter, filter + 2 * m);  // the second half: room to work
      break;
    }
    default:
      break;
  }
}

// Forward DFT of |line| (x->n complex) in place; |work| holds 4*m doubles for Bluestein and
// 2*n for the direct DFT and the mixed-radix one.
static void cmlc_fft_line(const cmlc_fft_axis_t* x, const double* s, double* line, double* work) {
  int64_t n = x->n;
  switch (x->kind) {
    case CMLC_FFT_POW2:
      cmlc_fft_pow2(line, n, s + x->off_tw, 1);
      break;
    case CMLC_FFT_MIXED:
      cmlc_fft_mr(&x->mr, s, line, work);
      break;
    case CMLC_FFT_DIRECT: {
      const double* tw = s + x->off_tw;
      for (int64_t k = 0; k < n; ++k) {
        double re = 0, im = 0;
        for (int64_t j = 0; j < n; ++j) {
          int64_t t = (j * k) % n;
          re += line[2 * j] * tw[2 * t] - line[2 * j + 1] * tw[2 * t + 1];
          im += line[2 * j] * tw[2 * t + 1] + line[2 * j + 1] * tw[2 * t];
        }
        work[2 * k] = re;
        work[2 * k + 1] = im;
      }
      memcpy(line, work, 2 * (size_t)n * sizeof(double));
      break;
    }
    case CMLC_FFT_BLUESTEIN: {
      int64_t m = x->m;
      const double* chirp = s + x->off_chirp;
      const double* filter = s + x->off_filter;
      double* tmp = work + 2 * m;  // the Stockham transforms' second buffer
      for (int64_t j = 0; j < n; ++j) {
        double ar = line[2 * j], ai = line[2 * j + 1];
        double cr = chirp[2 * j], ci = chirp[2 * j + 1];
        work[2 * j] = ar * cr - ai * ci;
        work[2 * j + 1] = ar * ci + ai * cr;
      }
      memset(work + 2 * n, 0, 2 * (size_t)(m - n) * sizeof(double));
      cmlc_fft_mr(&x->mr, s, work, tmp);
      // Pointwise product, conjugated so the forward FFT below acts as an inverse one.
      for (int64_t j = 0; j < m; ++j) {
        double ar = work[2 * j], ai = work[2 * j + 1];
        double br = filter[2 * j], bi = filter[2 * j + 1];
        work[2 * j] = ar * br - ai * bi;
        work[2 * j + 1] = -(ar * bi + ai * br);
      }
      cmlc_fft_mr(&x->mr, s, work, tmp);
      double inv_m = 1.0 / (double)m;
      for (int64_t k = 0; k < n; ++k) {
        double ar = work[2 * k] * inv_m, ai = -work[2 * k + 1] * inv_m;
        double cr = chirp[2 * k], ci = chirp[2 * k + 1];
        line[2 * k] = ar * cr - ai * ci;
        line[2 * k + 1] = ar * ci + ai * cr;
      }
      break;
    }
    default:
      break;
  }
}

// Fills every table of |p| (the first p->off_work doubles of its layout) at |t|.
static void cmlc_fft_tables_init(const cmlc_fft_plan_t* p, double* t) {
  for (int32_t a = 0; a < p->axes; ++a) cmlc_fft_axis_init(&p->ax[a], t);
  const cmlc_fft_axis_t* h = &p->ax[p->axes - 1];
  if (p->real_half) cmlc_fft_twiddles(t + p->off_rtw, h->n, 2 * h->n);
}

//===--- axis passes ---===//

typedef struct cmlc_fft_ctx_t {
  const cmlc_fft_plan_t* p;
  double* s;        // scratch base
  const double* t;  // the axes' tables (twiddles, chirps): prepared, or in scratch
  double* work;
  int32_t axis;    // fft axis index being transformed
  int64_t stride;  // complex elements between consecutive line entries
  int64_t lines;   // lines of the pass
  int lanes;       // power-of-two lines transformed together: 2, or 4 with AVX2
  bool inverse;
  // C2R last pass / I/O.
  const void* in;
  void* out;
  cml_dtype_t in_dtype, out_dtype;
  double scale;
  int64_t half;    // L/2+1 of the last axis
  int64_t in_row;  // INVERSE_REAL: entries per input row
} cmlc_fft_ctx_t;

static double* cmlc_fft_thread_buf(const cmlc_fft_ctx_t* c, int thread_index) {
  return c->s + c->p->off_thread + (size_t)thread_index * c->p->thread_size;
}

// Lanes of c->lanes power-of-two lines: cmlc_fft_pow2_x2 / _x4 on |re| and |im|.
static void cmlc_fft_pow2_lanes(const cmlc_fft_ctx_t* c, double* re, double* im, int64_t n,
                                const double* tw, int64_t tws) {
#if defined(CMLC_HAVE_X86_64)
  if (c->lanes == 4) {
    cmlc_fft_pow2_x4((cmlc_fft_v4*)(void*)re, (cmlc_fft_v4*)(void*)im, n, tw, tws);
    return;
  }
#endif
  cmlc_fft_pow2_x2((cmlc_fft_v2*)(void*)re, (cmlc_fft_v2*)(void*)im, n, tw, tws);
}

// One line |l| of the pass alone: gathered into |line|, transformed, scattered back.
static void cmlc_fft_axis_line(const cmlc_fft_ctx_t* c, const cmlc_fft_axis_t* x, int64_t l,
                               double* line, double* work) {
  const int64_t n = x->n, stride = c->stride;
  // Line l: outer index l / stride, inner index l % stride.
  const int64_t base = (l / stride) * n * stride + (l % stride);
  const double sign = c->inverse ? -1.0 : 1.0;
  for (int64_t j = 0; j < n; ++j) {
    line[2 * j] = c->work[2 * (base + j * stride)];
    line[2 * j + 1] = sign * c->work[2 * (base + j * stride) + 1];
  }
  cmlc_fft_line(x, c->t, line, work);
  for (int64_t j = 0; j < n; ++j) {
    c->work[2 * (base + j * stride)] = line[2 * j];
    c->work[2 * (base + j * stride) + 1] = sign * line[2 * j + 1];
  }
}

// Tasks are groups of c->lanes lines of the pass (|lines| in all): a full group of a
// power-of-two axis transformed together, other lines one by one.
static void cmlc_fft_axis_task(void* vctx, int64_t begin, int64_t end, int thread_index) {
  const cmlc_fft_ctx_t* c = vctx;
  const cmlc_fft_axis_t* x = &c->p->ax[c->axis];
  const int64_t n = x->n, stride = c->stride, lanes = c->lanes;
  double* line = cmlc_fft_thread_buf(c, thread_index);
  double* work = line + 2 * n;
  const double sign = c->inverse ? -1.0 : 1.0;
  for (int64_t g = begin; g < end; ++g) {
    const int64_t l0 = g * lanes, l1 = l0 + lanes < c->lines ? l0 + lanes : c->lines;
    if (x->kind != CMLC_FFT_POW2 || l1 - l0 != lanes) {
      for (int64_t l = l0; l < l1; ++l) cmlc_fft_axis_line(c, x, l, line, work);
      continue;
    }
    // Element j of lane q at re[j * lanes + q], im after all of re (64-byte aligned buffer).
    double* re = line;
    double* im = line + n * lanes;
    int64_t base[CMLC_FFT_LANES_MAX];
    for (int64_t q = 0; q < lanes; ++q) {
      const int64_t l = l0 + q;
      base[q] = (l / stride) * n * stride + (l % stride);
    }
    for (int64_t j = 0; j < n; ++j) {
      for (int64_t q = 0; q < lanes; ++q) {
        re[j * lanes + q] = c->work[2 * (base[q] + j * stride)];
        im[j * lanes + q] = sign * c->work[2 * (base[q] + j * stride) + 1];
      }
    }
    cmlc_fft_pow2_lanes(c, re, im, n, c->t + x->off_tw, 1);
    for (int64_t j = 0; j < n; ++j) {
      for (int64_t q = 0; q < lanes; ++q) {
        c->work[2 * (base[q] + j * stride)] = re[j * lanes + q];
        c->work[2 * (base[q] + j * stride) + 1] = sign * im[j * lanes + q];
      }
    }
  }
}

// Transforms fft axis |axis| of the work array (whose last axis has |last_len| entries).
static void cmlc_fft_pass(cmlc_fft_ctx_t* c, cmlc_pool_t* pool, int32_t axis, bool inverse) {
  const cmlc_fft_plan_t* p = c->p;
  int64_t n = p->ax[axis].n;
  if (n <= 1 || p->full == 0) return;
  int64_t stride = 1;
  for (int32_t a = axis + 1; a < p->axes; ++a) stride *= p->lengths[a];
  c->axis = axis;
  c->stride = stride;
  c->inverse = inverse;
  c->lines = p->full / n;
  const int64_t groups = (c->lines + c->lanes - 1) / c->lanes;
  int64_t chunk = 8192 / (n * 4 * c->lanes) + 1;
  cmlc_parallel_for(pool, groups, chunk, cmlc_fft_axis_task, c);
}

// Entry k of the Hermitian extension of |src| (its first |h| entries), conjugated (the
// inverse runs as conj(DFT(conj(x)))): *re, *im.
static inline void cmlc_fft_c2r_entry(const double* src, int64_t n, int64_t h, int64_t k,
                                      double* re, double* im) {
  if (k < h) {
    *re = src[2 * k], *im = -src[2 * k + 1];
  } else {
    *re = src[2 * (n - k)], *im = src[2 * (n - k) + 1];
  }
}

// C2R last axis: per line, Hermitian extension of the first |half| entries, inverse, real part.
// Tasks are groups of c->lanes lines: a full group of a power-of-two axis transformed together
// (the same bits per line as alone), other lines one by one.
static void cmlc_fft_c2r_task(void* vctx, int64_t begin, int64_t end, int thread_index) {
  const cmlc_fft_ctx_t* c = vctx;
  const cmlc_fft_axis_t* x = &c->p->ax[c->p->axes - 1];
  const int64_t n = x->n, h = c->half, lanes = c->lanes, rows = c->lines;
  double* line = cmlc_fft_thread_buf(c, thread_index);
  double* work = line + 2 * n;
  for (int64_t g = begin; g < end; ++g) {
    const int64_t l0 = g * lanes, l1 = l0 + lanes < rows ? l0 + lanes : rows;
    if (x->kind == CMLC_FFT_POW2 && l1 - l0 == lanes) {
      double* re = line;
      double* im = line + n * lanes;
      for (int64_t q = 0; q < lanes; ++q) {
        const double* src = c->work + 2 * (l0 + q) * n;
        for (int64_t k = 0; k < n; ++k)
          cmlc_fft_c2r_entry(src, n, h, k, &re[k * lanes + q], &im[k * lanes + q]);
      }
      cmlc_fft_pow2_lanes(c, re, im, n, c->t + x->off_tw, 1);
      for (int64_t q = 0; q < lanes; ++q)
        for (int64_t k = 0; k < n; ++k)
          cmlc_store_f64(c->out, (l0 + q) * n + k, c->out_dtype, re[k * lanes + q] * c->scale);
      continue;
    }
    for (int64_t l = l0; l < l1; ++l) {
      const double* src = c->work + 2 * l * n;
      for (int64_t k = 0; k < n; ++k)
        cmlc_fft_c2r_entry(src, n, h, k, &line[2 * k], &line[2 * k + 1]);
      cmlc_fft_line(x, c->t, line, work);
      for (int64_t k = 0; k < n; ++k)
        cmlc_store_f64(c->out, l * n + k, c->out_dtype, line[2 * k] * c->scale);
    }
  }
}

//===--- real transforms of one even-length axis, at half length ---===//
//
// A real line x of length n = 2m is transformed as the complex line z[j] = x[2j] + i x[2j+1] of
// length m (half the work): with Z = DFT_m(z), the even and odd samples' spectra are
// E[k] = (Z[k] + conj(Z[m-k])) / 2 and O[k] = (Z[k] - conj(Z[m-k])) / 2i, and
// X[k] = E[k] + W^k O[k] (W = exp(-2 pi i / n), indices mod m) for k = 0..m. The inverse runs it
// backwards: Z[k] = (X[k] + conj(X[m-k])) + i W^-k (X[k] - conj(X[m-k])), z = the unscaled
// inverse DFT_m of Z, x[2j] = Re z[j], x[2j+1] = Im z[j]. The imaginary parts of X[0] and X[m]
// are set to 0 first: the full-length transform ignores them (its real part drops them). Any
// even n >= 4: the length-m transform is the plan's last axis, ax[axes - 1] (W^k from the
// plan's rtw table). With one axis the rows go straight between the input and the output; with
// more, through the work array as c128 rows of m + 1 (c->in / c->out point there). Tasks are
// groups of c->lanes lines: a power-of-two m transforms the group's lanes together (the same
// operations per line in every lane; a last partial group runs with zero lanes), other lengths
// one line at a time through a line buffer, so either way a line's bits depend on neither its
// group nor the threads.

static inline double cmlc_fft_real_load(const void* p, cml_dtype_t dt, int64_t i) {
  return dt == CML_DTYPE_F32   ? (double)((const float*)p)[i]
         : dt == CML_DTYPE_F64 ? ((const double*)p)[i]
                               : cmlc_load_f64(p, i, dt);
}

// Stores of one output entry, with the f32 / f64 (c64 / c128) cases inline.
static inline void cmlc_fft_put_c(void* out, int64_t i, cml_dtype_t dt, double re, double im) {
  if (dt == CML_DTYPE_C64) {
    ((float*)out)[2 * i] = (float)re, ((float*)out)[2 * i + 1] = (float)im;
  } else if (dt == CML_DTYPE_C128) {
    ((double*)out)[2 * i] = re, ((double*)out)[2 * i + 1] = im;
  } else {
    cmlc_store_c(out, i, dt, re, im);
  }
}

static inline void cmlc_fft_put_r(void* out, int64_t i, cml_dtype_t dt, double v) {
  if (dt == CML_DTYPE_F32) {
    ((float*)out)[i] = (float)v;
  } else if (dt == CML_DTYPE_F64) {
    ((double*)out)[i] = v;
  } else {
    cmlc_store_f64(out, i, dt, v);
  }
}

// Row |r| of the FORWARD_REAL input as z (zeros past the last row): z[j] at zr[j * st], zi[j * st].
static void cmlc_fft_r2c_pre(const cmlc_fft_ctx_t* c, int64_t r, double* zr, double* zi,
                             int64_t st) {
  const int64_t m = c->p->ax[c->p->axes - 1].n, n = 2 * m;
  for (int64_t j = 0; j < m; ++j) {
    zr[j * st] = r < c->lines ? cmlc_fft_real_load(c->in, c->in_dtype, r * n + 2 * j) : 0.0;
    zi[j * st] = r < c->lines ? cmlc_fft_real_load(c->in, c->in_dtype, r * n + 2 * j + 1) : 0.0;
  }
}

// Output row |r| (m + 1 entries) from Z = DFT_m(z).
static void cmlc_fft_r2c_post(const cmlc_fft_ctx_t* c, int64_t r, const double* zr,
                              const double* zi, int64_t st) {
  const int64_t m = c->p->ax[c->p->axes - 1].n;
  const double* tw = c->t + c->p->off_rtw;
  for (int64_t k = 0; k <= m; ++k) {
    const int64_t a = k == m ? 0 : k, b = k == 0 ? 0 : m - k;
    const double ar = zr[a * st], ai = zi[a * st];
    const double br = zr[b * st], bi = -zi[b * st];
    const double er = 0.5 * (ar + br), ei = 0.5 * (ai + bi);
    const double or_ = 0.5 * (ai - bi), oi = -0.5 * (ar - br);
    const double wr = k < m ? tw[2 * k] : -1.0, wi = k < m ? tw[2 * k + 1] : 0.0;
    cmlc_fft_put_c(c->out, r * (m + 1) + k, c->out_dtype, er + (wr * or_ - wi * oi),
                   ei + (wr * oi + wi * or_));
  }
}

static void cmlc_fft_r2c_half_task(void* vctx, int64_t begin, int64_t end, int thread_index) {
  const cmlc_fft_ctx_t* c = vctx;
  const cmlc_fft_axis_t* x = &c->p->ax[c->p->axes - 1];
  const int64_t m = x->n, lanes = c->lanes, rows = c->lines;
  double* re = cmlc_fft_thread_buf(c, thread_index);
  double* im = re + m * lanes;
  double* line = im + m * lanes;
  for (int64_t g = begin; g < end; ++g) {
    const int64_t l0 = g * lanes;
    if (x->kind == CMLC_FFT_POW2) {
      for (int64_t q = 0; q < lanes; ++q) cmlc_fft_r2c_pre(c, l0 + q, re + q, im + q, lanes);
      cmlc_fft_pow2_lanes(c, re, im, m, c->t + x->off_tw, 1);
      for (int64_t q = 0; q < lanes && l0 + q < rows; ++q)
        cmlc_fft_r2c_post(c, l0 + q, re + q, im + q, lanes);
      continue;
    }
    for (int64_t r = l0; r < l0 + lanes && r < rows; ++r) {
      cmlc_fft_r2c_pre(c, r, line, line + 1, 2);
      cmlc_fft_line(x, c->t, line, line + 2 * m);
      cmlc_fft_r2c_post(c, r, line, line + 1, 2);
    }
  }
}

// Entry |k| (0..m) of row |r| of the INVERSE_REAL input (its first c->half entries; 0 beyond),
// the imaginary part dropped at k = 0 and k = m.
static inline void cmlc_fft_c2r_half_entry(const cmlc_fft_ctx_t* c, int64_t r, int64_t h, int64_t m,
                                           int64_t k, double* xr, double* xi) {
  if (k >= c->half) {
    *xr = *xi = 0.0;
    return;
  }
  const int64_t i = r * h + k;
  if (c->in_dtype == CML_DTYPE_C64) {
    *xr = (double)((const float*)c->in)[2 * i];
    *xi = k == 0 || k == m ? 0.0 : (double)((const float*)c->in)[2 * i + 1];
  } else if (c->in_dtype == CML_DTYPE_C128) {
    *xr = ((const double*)c->in)[2 * i];
    *xi = k == 0 || k == m ? 0.0 : ((const double*)c->in)[2 * i + 1];
  } else {
    *xr = cmlc_load_f64(c->in, i, c->in_dtype);
    *xi = k == 0 || k == m ? 0.0 : cmlc_load_imag(c->in, i, c->in_dtype);
  }
}

// Row |r| of the INVERSE_REAL input as Z (conjugated; zeros past the last row).
static void cmlc_fft_c2r_pre(const cmlc_fft_ctx_t* c, int64_t r, double* zr, double* zi,
                             int64_t st) {
  const int64_t m = c->p->ax[c->p->axes - 1].n, h = c->in_row;
  const double* tw = c->t + c->p->off_rtw;
  for (int64_t k = 0; k < m; ++k) {
    if (r >= c->lines) {
      zr[k * st] = zi[k * st] = 0.0;
      continue;
    }
    double xr, xi, yr, yi;
    cmlc_fft_c2r_half_entry(c, r, h, m, k, &xr, &xi);
    cmlc_fft_c2r_half_entry(c, r, h, m, m - k, &yr, &yi);
    yi = -yi;  // conj(X[m - k])
    const double sr = xr + yr, si = xi + yi, dr = xr - yr, di = xi - yi;
    const double wr = tw[2 * k], wi = tw[2 * k + 1];  // W^k; W^-k = conj
    const double tr = wr * dr + wi * di, ti = wr * di - wi * dr;
    // Z = S + i T, conjugated for the forward transform (inverse = conj(DFT(conj))).
    zr[k * st] = sr - ti;
    zi[k * st] = -(si + tr);
  }
}

// Output row |r| (n samples) from the transform of the conjugated Z.
static void cmlc_fft_c2r_post(const cmlc_fft_ctx_t* c, int64_t r, const double* zr,
                              const double* zi, int64_t st) {
  const int64_t m = c->p->ax[c->p->axes - 1].n, n = 2 * m;
  for (int64_t j = 0; j < m; ++j) {
    cmlc_fft_put_r(c->out, r * n + 2 * j, c->out_dtype, zr[j * st] * c->scale);
    cmlc_fft_put_r(c->out, r * n + 2 * j + 1, c->out_dtype, -zi[j * st] * c->scale);
  }
}

static void cmlc_fft_c2r_half_task(void* vctx, int64_t begin, int64_t end, int thread_index) {
  const cmlc_fft_ctx_t* c = vctx;
  const cmlc_fft_axis_t* x = &c->p->ax[c->p->axes - 1];
  const int64_t m = x->n, lanes = c->lanes, rows = c->lines;
  double* re = cmlc_fft_thread_buf(c, thread_index);
  double* im = re + m * lanes;
  double* line = im + m * lanes;
  for (int64_t g = begin; g < end; ++g) {
    const int64_t l0 = g * lanes;
    if (x->kind == CMLC_FFT_POW2) {
      for (int64_t q = 0; q < lanes; ++q) cmlc_fft_c2r_pre(c, l0 + q, re + q, im + q, lanes);
      cmlc_fft_pow2_lanes(c, re, im, m, c->t + x->off_tw, 1);
      for (int64_t q = 0; q < lanes && l0 + q < rows; ++q)
        cmlc_fft_c2r_post(c, l0 + q, re + q, im + q, lanes);
      continue;
    }
    for (int64_t r = l0; r < l0 + lanes && r < rows; ++r) {
      cmlc_fft_c2r_pre(c, r, line, line + 1, 2);
      cmlc_fft_line(x, c->t, line, line + 2 * m);
      cmlc_fft_c2r_post(c, r, line, line + 1, 2);
    }
  }
}

static size_t cmlc_fft_scratch(const cml_module_t* module, const cml_ir_node_t* node,
                               const cmlc_options_t* options) {
  cmlc_fft_plan_t p;
  if (!cmlc_fft_plan(&module->values[node->inputs[0]].shape,
                     &module->values[node->first_output].shape, node->attrs, options->threads, &p))
    return 0;
  return cmlc_size_mul(p.total, sizeof(double));
}

static cml_status_t cmlc_fft_run(const cmlc_kernel_args_t* args) {
  cmlc_fft_plan_t p;
  const cml_shape_t* in = args->input_shapes[0];
  const cml_shape_t* out = args->output_shapes[0];
  if (!cmlc_fft_plan(in, out, args->node->attrs, args->options->threads, &p) ||
      p.total == SIZE_MAX || args->scratch_size < cmlc_size_mul(p.total, sizeof(double))) {
    char t[2][160];
    return cml_status_make(CML_STATUS_INTERNAL, "FFT: inconsistent plan for %s -> %s",
                           cml_shape_format(in, t[0], sizeof t[0]),
                           cml_shape_format(out, t[1], sizeof t[1]));
  }
  if (cml_shape_element_count(out) == 0) return CML_OK;
  if (args->scratch == NULL) {  // a non-empty output needs a work array: never offset NULL
    return cml_status_make(CML_STATUS_INTERNAL, "FFT: no scratch for a non-empty output");
  }
  cmlc_pool_t* pool = args->pool;
  if (cmlc_pool_thread_count(pool) > p.threads) pool = NULL;
  double* s = args->scratch;
  // The tables come from the plan (cmlc_fft_prepare) when it made them; else into scratch.
  const double* tables = (const double*)args->prepared;
  if (!tables) {
    cmlc_fft_tables_init(&p, s);
    tables = s;
  }
  cmlc_fft_ctx_t c;
  memset(&c, 0, sizeof c);
  c.p = &p;
  c.s = s;
  c.t = tables;
  c.work = s + p.off_work;
  c.in = args->inputs[0];
  c.out = args->outputs[0];
  c.in_dtype = in->dtype;
  // Four lanes where the plan's ISA has AVX2 (the same bits as two: see CMLC_FFT_POW2_LANES).
  c.lanes = 2;
#if defined(CMLC_HAVE_X86_64)
  if (args->options && args->options->isa >= CMLC_ISA_AVX2) c.lanes = 4;
#endif
  c.out_dtype = out->dtype;
  double prod = 1;
  for (int32_t a = 0; a < p.axes; ++a) prod *= (double)p.lengths[a];
  int64_t last = p.lengths[p.axes - 1];
  int64_t rows = p.full / (last > 0 ? last : 1);  // lines of the last axis
  if (last == 0) return CML_OK;
  switch (p.type) {
    case CML_FFT_FORWARD:
    case CML_FFT_INVERSE: {
      bool inv = p.type == CML_FFT_INVERSE;
      for (int64_t i = 0; i < p.full; ++i) {
        c.work[2 * i] = cmlc_load_f64(c.in, i, in->dtype);
        c.work[2 * i + 1] = cmlc_load_imag(c.in, i, in->dtype);
      }
      for (int32_t a = p.axes - 1; a >= 0; --a) cmlc_fft_pass(&c, pool, a, inv);
      double scale = inv ? 1.0 / prod : 1.0;
      for (int64_t i = 0; i < p.full; ++i)
        cmlc_store_c(c.out, i, out->dtype, c.work[2 * i] * scale, c.work[2 * i + 1] * scale);
      break;
    }
    case CML_FFT_FORWARD_REAL: {
      if (p.real_half) {
        c.lines = rows;
        if (p.axes > 1) {  // the half spectrum into the work array, as c128 rows of L/2 + 1
          c.out = c.work;
          c.out_dtype = CML_DTYPE_C128;
        }
        cmlc_parallel_for(pool, (rows + c.lanes - 1) / c.lanes, 8192 / (last * 2 * c.lanes) + 1,
                          cmlc_fft_r2c_half_task, &c);
        if (p.axes == 1) break;
        // The leading axes over the L/2 + 1 columns: the plan with that last length.
        cmlc_fft_plan_t ph = p;
        const int64_t hw = last / 2 + 1;
        ph.lengths[p.axes - 1] = hw;
        ph.full = rows * hw;
        c.p = &ph;
        for (int32_t a = p.axes - 2; a >= 0; --a) cmlc_fft_pass(&c, pool, a, false);
        for (int64_t i = 0; i < ph.full; ++i)
          cmlc_store_c(args->outputs[0], i, out->dtype, c.work[2 * i], c.work[2 * i + 1]);
        break;
      }
      for (int64_t i = 0; i < p.full; ++i) {
        c.work[2 * i] = cmlc_load_f64(c.in, i, in->dtype);
        c.work[2 * i + 1] = 0.0;
      }
      for (int32_t a = p.axes - 1; a >= 0; --a) cmlc_fft_pass(&c, pool, a, false);
      int64_t h = out->dims[out->rank - 1];
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t k = 0; k < h; ++k)
          cmlc_store_c(c.out, r * h + k, out->dtype, c.work[2 * (r * last + k)],
                       c.work[2 * (r * last + k) + 1]);
      break;
    }
    case CML_FFT_INVERSE_REAL: {
      int64_t h = in->dims[in->rank - 1];
      c.half = h < last / 2 + 1 ? h : last / 2 + 1;
      if (p.real_half && p.axes > 1) {
        // The leading axes' inverse over the L/2 + 1 columns (the plan with that last length)
        // in the work array, which the half-length last pass then reads as c128 rows.
        cmlc_fft_plan_t ph = p;
        const int64_t hw = last / 2 + 1;
        ph.lengths[p.axes - 1] = hw;
        ph.full = rows * hw;
        for (int64_t r = 0; r < rows; ++r) {
          for (int64_t k = 0; k < hw; ++k) {
            const bool have = k < c.half;
            c.work[2 * (r * hw + k)] = have ? cmlc_load_f64(c.in, r * h + k, in->dtype) : 0.0;
            c.work[2 * (r * hw + k) + 1] = have ? cmlc_load_imag(c.in, r * h + k, in->dtype) : 0.0;
          }
        }
        c.p = &ph;
        for (int32_t a = p.axes - 2; a >= 0; --a) cmlc_fft_pass(&c, pool, a, true);
        c.p = &p;
        c.in = c.work;
        c.in_dtype = CML_DTYPE_C128;
        h = hw;
        c.half = hw;
      }
      if (p.real_half) {
        c.lines = rows;
        c.in_row = h;
        c.scale = 1.0 / prod;
        cmlc_parallel_for(pool, (rows + c.lanes - 1) / c.lanes, 8192 / (last * 2 * c.lanes) + 1,
                          cmlc_fft_c2r_half_task, &c);
        break;
      }
      memset(c.work, 0, 2 * (size_t)p.full * sizeof(double));
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t k = 0; k < c.half; ++k) {
          c.work[2 * (r * last + k)] = cmlc_load_f64(c.in, r * h + k, in->dtype);
          c.work[2 * (r * last + k) + 1] = cmlc_load_imag(c.in, r * h + k, in->dtype);
        }
      }
      for (int32_t a = p.axes - 2; a >= 0; --a) cmlc_fft_pass(&c, pool, a, true);
      c.scale = 1.0 / prod;
      c.lines = rows;
      cmlc_parallel_for(pool, (rows + c.lanes - 1) / c.lanes, 8192 / (last * 4 * c.lanes) + 1,
                        cmlc_fft_c2r_task, &c);
      break;
    }
    default:
      break;
  }
  return CML_OK;
}

// entry.prepare: the axes' tables (twiddles; Bluestein's chirp, filter spectrum and twiddles)
// made once when the plan is built, in their scratch layout (the first p.off_work doubles),
// instead of by every run (512 sincos calls for a 1024-point transform: a tenth of an FFT
// convolution's run).
static size_t cmlc_fft_prepare(const cml_module_t* module, const cml_ir_node_t* node,
                               const cmlc_options_t* options, const void* const* consts,
                               void* dst) {
  (void)consts;
  cmlc_fft_plan_t p;
  if (!cmlc_fft_plan(&module->values[node->inputs[0]].shape,
                     &module->values[node->first_output].shape, node->attrs, options->threads,
                     &p) ||
      p.off_work == 0)
    return 0;
  if (dst) {
    cmlc_fft_tables_init(&p, (double*)dst);
  }
  return cmlc_size_mul(p.off_work, sizeof(double));
}

bool cmlc__fft_lookup(const cml_module_t* module, const cml_ir_node_t* node,
                      const cmlc_options_t* options, cmlc_kernel_entry_t* out) {
  if (node->op != CML_OP_FFT || node->input_count != 1) return false;
  cmlc_fft_plan_t p;
  if (!cmlc_fft_plan(&module->values[node->inputs[0]].shape,
                     &module->values[node->first_output].shape, node->attrs, options->threads, &p))
    return false;
  out->run = cmlc_fft_run;
  out->scratch = cmlc_fft_scratch;
  out->in_place_input = -1;
  out->prepare = cmlc_fft_prepare;
  out->prepare_always = true;
  return true;
}
