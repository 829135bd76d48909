// SPDX-License-Identifier: Apache-2.0
// kernels/generic/fused_attention_impl.h: the body of the tiled online-softmax attention
// kernel, included by fused_attention.c once per computation type.
//
// The includer defines CMLC_FA_T (float or double), CMLC_FA_V (a 32-byte vector of it, GCC
// vector extension), CMLC_FA_W (its lanes), CMLC_FA_EXP (expf or exp), CMLC_FA_LOAD (the
// loader of the computation type, cmlc_load_f32 or cmlc_load_f64), CMLC_FA_STORE (the
// matching store), CMLC_FA_NATIVE (the cml dtype of CMLC_FA_T), CMLC_FA_VEXP (1: float, with
// CMLC_FA_IV the int32 vector of CMLC_FA_V's size, for the vector exp; 0: scalar exp),
// CMLC_FA_NAME(x) (the function's name), CMLC_FA_LINKAGE (static or empty) and CMLC_FA_ATTR (a
// target attribute or empty). No vector value crosses a function boundary (the vectors stay inside
// one function body), so the target attribute is all a variant needs.

// dst[e] = the bf16 src[e] widened to the computation type, e < n: W lanes at a time for float
// (the 16 bits shifted up, exact, NaN kept), elementwise for double.
static inline __attribute__((always_inline)) CMLC_FA_ATTR void CMLC_FA_NAME(bf16_row)(
    CMLC_FA_T* dst, const uint16_t* src, int64_t n) {
  int64_t e = 0;
#if CMLC_FA_VEXP
  typedef uint16_t H __attribute__((vector_size(CMLC_FA_W * sizeof(uint16_t))));
  for (; e + CMLC_FA_W <= n; e += CMLC_FA_W) {
    H x;
    memcpy(&x, src + e, sizeof x);
    const CMLC_FA_IV y = __builtin_convertvector(x, CMLC_FA_IV) << 16;
    memcpy(dst + e, &y, sizeof y);
  }
#endif
  for (; e < n; ++e) dst[e] = CMLC_FA_LOAD(src, e, CML_DTYPE_BF16);
}

// dst[e] = element at + e of |src| (of |dtype|) in the computation type, e < n: a copy for
// the computation dtype, bf16 widened W lanes at a time, f16 by the variant's CMLC_FA_F16_ROW
// where it defines one, others element by element.
static inline __attribute__((always_inline)) CMLC_FA_ATTR void CMLC_FA_NAME(load_row)(
    CMLC_FA_T* dst, const void* src, int64_t at, int64_t n, cml_dtype_t dtype) {
  if (dtype == CMLC_FA_NATIVE) {
    memcpy(dst, (const CMLC_FA_T*)src + at, (size_t)n * sizeof(CMLC_FA_T));
  } else if (dtype == CML_DTYPE_BF16) {
    CMLC_FA_NAME(bf16_row)(dst, (const uint16_t*)src + at, n);
#if defined(CMLC_FA_F16_ROW)
  } else if (dtype == CML_DTYPE_F16) {
    CMLC_FA_F16_ROW(dst, (const uint16_t*)src + at, n);  // the variant's F16C widening
#endif
  } else {
    for (int64_t e = 0; e < n; ++e) dst[e] = CMLC_FA_LOAD(src, at + e, dtype);
  }
}

// Elements [at, at + n) of |dst| (of |dtype|) = src[e], times inv when |scale|, or zeros when
// |src| is NULL: W lanes at a time for the computation dtype and, for float, bf16 (rounded to
// nearest even, NaN quieted, as cml_f32_to_bf16), the same values as CMLC_FA_STORE element by
// element.
static inline __attribute__((always_inline)) CMLC_FA_ATTR void CMLC_FA_NAME(store_row)(
    void* dst, int64_t at, int64_t n, cml_dtype_t dtype, const CMLC_FA_T* src, bool scale,
    CMLC_FA_T inv) {
  typedef CMLC_FA_V V;
  enum { W = CMLC_FA_W };
  int64_t e = 0;
  if (dtype == CMLC_FA_NATIVE) {
    CMLC_FA_T* o = (CMLC_FA_T*)dst + at;
    for (; e + W <= n; e += W) {
      V x = {0};
      if (src) {
        memcpy(&x, src + e, sizeof x);
        if (scale) x *= inv;
      }
      memcpy(o + e, &x, sizeof x);
    }
  }
#if CMLC_FA_VEXP
  else if (dtype == CML_DTYPE_BF16) {
    typedef uint32_t UV __attribute__((vector_size(W * sizeof(uint32_t))));
    typedef uint16_t H __attribute__((vector_size(W * sizeof(uint16_t))));
    uint16_t* o = (uint16_t*)dst + at;
    for (; e + W <= n; e += W) {
      V x = {0};
      if (src) {
        memcpy(&x, src + e, sizeof x);
        if (scale) x *= inv;
      }
      UV u;
      memcpy(&u, &x, sizeof u);
      const UV nan = (UV)((u & 0x7FFFFFFFu) > 0x7F800000u);
      const UV rounded = (u + (0x7FFFu + ((u >> 16) & 1u))) >> 16;
      const UV bits = (nan & ((u >> 16) | 0x0040u)) | (~nan & rounded);
      const H y = __builtin_convertvector(bits, H);
      memcpy(o + e, &y, sizeof y);
    }
  }
#endif
  for (; e < n; ++e) CMLC_FA_STORE(dst, at + e, dtype, src ? (scale ? src[e] * inv : src[e]) : 0);
}

// The decode path (tasks of at most CMLC_FA_DEC_ROWS live query rows) in two helpers, inlined
// with the row count |R| (1 to 4) a constant, so the accumulators stay in registers.
//
// Scores s[r * BK + j] = q_r . k_j (unscaled) of rows r < R, the q rows at qb (stride qs,
// zero-padded to n) and keys j < nk whose rows (n elements, n a multiple of W) lie at kr[j]:
// KB keys at a time (R x KB <= 8 vector accumulators over the head dim), each sum reduced
// across lanes at the end. pk / pv (or NULL) name rows to prefetch at key j (k_bytes /
// v_bytes each; NULL entries none).
static inline __attribute__((always_inline)) CMLC_FA_ATTR void CMLC_FA_NAME(dec_scores)(
    const int R, const CMLC_FA_T* qb, int64_t qs, const CMLC_FA_T* const* kr, int64_t nk, int64_t n,
    const void* const* pk, const void* const* pv, size_t k_bytes, size_t v_bytes, CMLC_FA_T* s) {
  typedef CMLC_FA_T T;
  typedef CMLC_FA_V V;
  enum { W = CMLC_FA_W, BK = CMLC_FA_BK };
  const int KB = R <= 2 ? 4 : 2;
  int64_t j = 0;
  for (; j < nk; j += KB) {
    const int kb = nk - j < KB ? (int)(nk - j) : KB;
    if (pk) {
      for (int u = 0; u < kb; ++u) {
        if (pk[j + u]) cmlc__fa_prefetch(pk[j + u], k_bytes);
        if (pv[j + u]) cmlc__fa_prefetch(pv[j + u], v_bytes);
      }
    }
    V acc[4][4];
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
      for (int u = 0; u < KB; ++u) acc[r][u] = (V){0};
    }
    if (kb == KB) {
      for (int64_t e = 0; e < n; e += W) {
        V kv[4];
#pragma GCC unroll 4
        for (int u = 0; u < KB; ++u) memcpy(&kv[u], kr[j + u] + e, sizeof kv[u]);
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r) {
          V x;
          memcpy(&x, qb + r * qs + e, sizeof x);
#pragma GCC unroll 4
          for (int u = 0; u < KB; ++u) acc[r][u] += x * kv[u];
        }
      }
    } else {
      // The last keys of the tile, one at a time.
      for (int u = 0; u < kb; ++u) {
        for (int64_t e = 0; e < n; e += W) {
          V kv;
          memcpy(&kv, kr[j + u] + e, sizeof kv);
#pragma GCC unroll 4
          for (int r = 0; r < R; ++r) {
            V x;
            memcpy(&x, qb + r * qs + e, sizeof x);
            acc[r][0] += x * kv;
          }
        }
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r) {
          T t = 0;
          for (int w = 0; w < W; ++w) t += acc[r][0][w];
          s[r * BK + j + u] = t;
          acc[r][0] = (V){0};
        }
      }
      break;
    }
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
      for (int u = 0; u < KB; ++u) {
        T t = 0;
        for (int w = 0; w < W; ++w) t += acc[r][u][w];
        s[r * BK + j + u] = t;
      }
    }
  }
}

// o_r = alpha_r o_r + sum_{j < nk} p_rj v_j for the R rows rows[0..R) (probabilities at
// sbuf + rows[i] * BK, outputs at ob + rows[i] * dvp), v's rows at vt (stride vs_row, dvp
// elements): C vectors of dvp at a time (R x C <= 8 accumulators), each v load serving the R
// rows.
static inline __attribute__((always_inline)) CMLC_FA_ATTR void CMLC_FA_NAME(dec_pv)(
    const int R, const int64_t* rows, const CMLC_FA_T* alphas, const CMLC_FA_T* sbuf, CMLC_FA_T* ob,
    int64_t dvp, const CMLC_FA_T* vt, int64_t vs_row, int64_t nk) {
  typedef CMLC_FA_T T;
  typedef CMLC_FA_V V;
  enum { W = CMLC_FA_W, BK = CMLC_FA_BK };
  const int C = R <= 2 ? 4 : 2;
  const T* p[4];
  T* o[4];
  T al[4];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
    p[r] = sbuf + rows[r] * BK;
    o[r] = ob + rows[r] * dvp;
    al[r] = alphas[rows[r]];
  }
  int64_t e = 0;
  for (; e + C * W <= dvp; e += C * W) {
    V acc[4][4];
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
      for (int u = 0; u < C; ++u) {
        memcpy(&acc[r][u], o[r] + e + u * W, sizeof acc[r][u]);
        acc[r][u] *= al[r];
      }
    }
    for (int64_t j = 0; j < nk; ++j) {
      const T* vr = vt + j * vs_row + e;
      V v[4];
#pragma GCC unroll 4
      for (int u = 0; u < C; ++u) memcpy(&v[u], vr + u * W, sizeof v[u]);
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r) {
        const T x = p[r][j];
#pragma GCC unroll 4
        for (int u = 0; u < C; ++u) acc[r][u] += x * v[u];
      }
    }
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
      for (int u = 0; u < C; ++u) memcpy(o[r] + e + u * W, &acc[r][u], sizeof acc[r][u]);
    }
  }
  // The last vectors of dvp (a multiple of W), one at a time.
  for (; e < dvp; e += W) {
    V acc[4];
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      memcpy(&acc[r], o[r] + e, sizeof acc[r]);
      acc[r] *= al[r];
    }
    for (int64_t j = 0; j < nk; ++j) {
      V v;
      memcpy(&v, vt + j * vs_row + e, sizeof v);
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r) acc[r] += p[r][j] * v;
    }
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) memcpy(o[r] + e, &acc[r], sizeof acc[r]);
  }
}

// One task: the rows [i0, i0 + CMLC_FA_BQ) of query head |h| of batch |b|.
CMLC_FA_LINKAGE CMLC_FA_ATTR void CMLC_FA_NAME(task)(const cmlc_fa_ctx_t* c, int64_t task,
                                                     int thread_index) {
  typedef CMLC_FA_T T;
  typedef CMLC_FA_V V;
  enum { W = CMLC_FA_W, BQ = CMLC_FA_BQ, BK = CMLC_FA_BK, U = 4 * CMLC_FA_W };
  const int64_t d = c->d, dv = c->dv, dvp = c->dvp;
  const int64_t qt = task % c->q_tiles;
  const int64_t h = (task / c->q_tiles) % c->heads;
  const int64_t b = task / (c->q_tiles * c->heads);
  const int64_t hk = h / c->groups;
  const int64_t i0 = qt * BQ;
  const int64_t nq = c->seq - i0 < BQ ? c->seq - i0 : BQ;
  // Rows at or past query_seq_len[b] give zeros; keys at or past kv_seq_len[b] are masked.
  int64_t q_rows = c->seq, kv_end = c->kv_seq;
  if (c->q_len) {
    int64_t ql = c->q_len[b], kl = c->kv_len[b];
    q_rows = ql < 0 ? 0 : (ql < c->seq ? ql : c->seq);
    kv_end = kl < 0 ? 0 : (kl < c->kv_seq ? kl : c->kv_seq);
  }
  int64_t nq_live = q_rows - i0;
  nq_live = nq_live < 0 ? 0 : (nq_live < nq ? nq_live : nq);
  if (c->causal && kv_end > i0 + nq_live) kv_end = i0 + nq_live;
  if (nq_live == 0) kv_end = 0;  // no live row: skip the key tiles
  // Decode path (a decoder step's single row, or a few): k's rows are read in place (or
  // converted per tile) by the score loop rather than transposed, and the rows are not paired.
  const bool dec = nq_live <= CMLC_FA_DEC_ROWS && !c->lse_read;
  const int64_t dqp = c->dqp;

  char* base = c->scratch + (size_t)thread_index * c->per_thread;
  T* qb = (T*)(base + c->off_q);       // [BQ, d]; decode path: [nq_live, dqp], zero-padded
  T* vb = (T*)(base + c->off_v);       // [BK, dvp], zero past dv and the tile's keys
  T* sbuf = (T*)(base + c->off_s);     // [BQ, BK] scores, then probabilities
  T* ob = (T*)(base + c->off_o);       // [BQ, dvp] unnormalized outputs
  T* mb = (T*)(base + c->off_m);       // [BQ] running max
  T* lb = (T*)(base + c->off_m) + BQ;  // [BQ] running sum

  const int64_t q_base = b * c->q_str[0] + h * c->q_str[1] + i0 * c->q_str[2];
  const int64_t q_row = dec ? dqp : d;
  for (int64_t r = 0; r < nq_live; ++r) {
    const int64_t at = q_base + r * c->q_str[2];
    CMLC_FA_NAME(load_row)(qb + r * q_row, c->q, at, d, c->dtype);
    for (int64_t e = d; e < q_row; ++e) qb[r * q_row + e] = 0;
  }
  for (int64_t r = 0; r < nq_live; ++r) {
    mb[r] = -INFINITY;
    lb[r] = 0;
  }
  memset(ob, 0, (size_t)(nq_live * dvp) * sizeof(T));  // only live rows are read

  const cmlc_fa_parts_t* kp = &c->kp;
  const size_t elem_bytes = (size_t)cml_dtype_bits(c->dtype) / 8;
  const cmlc_fa_parts_t* vp = &c->vp;
  const T scale = (T)c->scale;
  // k transposed, [kv tiles][d][BK], zero past kv_seq: built once per (batch, kv head) and
  // kept in the thread's scratch for its next tasks (consecutive tasks share it; the tag is
  // reset by every kernel run).
  int64_t* tag = (int64_t*)(base + c->off_tag);
  T* kc = (T*)(base + c->off_k);
  const int64_t want_tag = b * (c->heads / c->groups) + hk + 1;
  if (!dec && *tag != want_tag && kv_end > 0) {
    const int64_t tiles = (c->kv_seq + BK - 1) / BK;
    memset(kc, 0, (size_t)(tiles * d * BK) * sizeof(T));
    // Key j of part p is row j - start[p] of that part's tensor. The rows lie a head stride
    // apart (BSHD: heads x d elements), beyond the hardware prefetchers' reach across pages, so
    // k's rows are prefetched CMLC_FA_PF_ROWS keys ahead, and v's rows of the keys this task
    // reads with them while they fit in CMLC_FA_PF_V_BYTES (a decoder step reads its whole KV
    // cache from memory here: both streams are then in flight at once).
    const size_t k_row_bytes = (size_t)d * elem_bytes, v_row_bytes = (size_t)dv * elem_bytes;
    const int64_t v_pf_end = (size_t)kv_end * v_row_bytes <= CMLC_FA_PF_V_BYTES ? kv_end : 0;
    int kpf = 0, vpf = 0;  // the parts of the rows prefetched
    for (int64_t j = 0; j < CMLC_FA_PF_ROWS && j < c->kv_seq; ++j) {
      cmlc__fa_prefetch(cmlc__fa_row(kp, &kpf, b, hk, j, elem_bytes), k_row_bytes);
      if (j < v_pf_end)
        cmlc__fa_prefetch(cmlc__fa_row(vp, &vpf, b, hk, j, elem_bytes), v_row_bytes);
    }
    for (int p = 0; p < kp->count; ++p) {
      const int64_t* st = kp->str[p];
      const void* data = kp->data[p];
      const int64_t first = kp->start[p], end = kp->start[p + 1];
      const int64_t base_p = b * st[0] + hk * st[1] - first * st[2];
      for (int64_t j = first; j < end; ++j) {
        const int64_t ahead = j + CMLC_FA_PF_ROWS;
        if (ahead < c->kv_seq)
          cmlc__fa_prefetch(cmlc__fa_row(kp, &kpf, b, hk, ahead, elem_bytes), k_row_bytes);
        if (ahead < v_pf_end)
          cmlc__fa_prefetch(cmlc__fa_row(vp, &vpf, b, hk, ahead, elem_bytes), v_row_bytes);
        T* kt_col = kc + (j / BK) * d * BK + j % BK;
        const int64_t at = base_p + j * st[2];
        const T* kr = (const T*)data + at;
        if (c->dtype != CMLC_FA_NATIVE) {  // widened first (kb: the decode path's buffer)
          T* wide = (T*)(base + c->off_kb);
          CMLC_FA_NAME(load_row)(wide, data, at, d, c->dtype);
          kr = wide;
        }
        for (int64_t e = 0; e < d; ++e) kt_col[e * BK] = kr[e];
      }
    }
    *tag = want_tag;
  }
  // Decode path: k's rows in place when they are of the computation dtype and fill whole
  // vectors, else converted tile by tile into kb ([BK, dqp], zero-padded like q); k and v rows
  // are prefetched CMLC_FA_DEC_PF_ROWS keys ahead of the score loop (v's are read by the same
  // tile's p v, so they stay cached).
  const bool k_in_place = c->dtype == CMLC_FA_NATIVE && d % W == 0;
  T* kb = (T*)(base + c->off_kb);
  const size_t k_row_bytes = (size_t)d * elem_bytes, v_row_bytes = (size_t)dv * elem_bytes;
  int kpi = 0, kpf = 0, vpf = 0;  // the parts of the rows read and prefetched
  if (dec) {
    for (int64_t j = 0; j < CMLC_FA_DEC_PF_ROWS && j < kv_end; ++j) {
      cmlc__fa_prefetch(cmlc__fa_row(kp, &kpf, b, hk, j, elem_bytes), k_row_bytes);
      cmlc__fa_prefetch(cmlc__fa_row(vp, &vpf, b, hk, j, elem_bytes), v_row_bytes);
    }
  }
  for (int64_t j0 = 0; j0 < kv_end; j0 += BK) {
    const int64_t nk = kv_end - j0 < BK ? kv_end - j0 : BK;
    const T* krow[BK];
    const void* pk[BK];
    const void* pv[BK];
    if (dec) {
      for (int64_t j = 0; j < nk; ++j) {
        const int64_t ahead = j0 + j + CMLC_FA_DEC_PF_ROWS;
        pk[j] = pv[j] = NULL;
        if (ahead < kv_end) {
          pk[j] = cmlc__fa_row(kp, &kpf, b, hk, ahead, elem_bytes);
          pv[j] = cmlc__fa_row(vp, &vpf, b, hk, ahead, elem_bytes);
        }
        const void* row = cmlc__fa_row(kp, &kpi, b, hk, j0 + j, elem_bytes);
        if (k_in_place) {
          krow[j] = (const T*)row;
          continue;
        }
        // Converted here: this loop reads the rows, so it prefetches them.
        if (pk[j]) cmlc__fa_prefetch(pk[j], k_row_bytes);
        if (pv[j]) cmlc__fa_prefetch(pv[j], v_row_bytes);
        T* dst = kb + j * dqp;
        if (c->dtype == CMLC_FA_NATIVE) {
          memcpy(dst, row, (size_t)d * sizeof(T));
        } else {
          CMLC_FA_NAME(load_row)(dst, row, 0, d, c->dtype);
        }
        for (int64_t e = d; e < dqp; ++e) dst[e] = 0;
        krow[j] = dst;
      }
    }
    // Keys past nk (still in the cached tile) are never read: scores, max, exp and p v stop
    // at nk.
    const T* kt = kc + (j0 / BK) * d * BK;
    // v's rows of the tile: read in place when they are of the computation dtype, fill whole
    // vectors (dv == dvp) and lie in one part; otherwise copied to vb, zero-padded to dvp.
    int vpi = 0;  // the part holding key j0 (past the empty parts and those ending before it)
    while (vp->start[vpi + 1] <= j0) ++vpi;
    const T* vt = vb;
    int64_t vs_row = dvp;
    if (c->dtype == CMLC_FA_NATIVE && dv == dvp && j0 + nk <= vp->start[vpi + 1]) {
      const int64_t* st = vp->str[vpi];
      vt = (const T*)vp->data[vpi] + b * st[0] + hk * st[1] + (j0 - vp->start[vpi]) * st[2];
      vs_row = st[2];
    } else {
      // bf16 widened W lanes at a time, f16 by the variant's widening (load_row); the
      // computation dtype itself as plain copies, no per-element dispatch.
      for (int64_t j = 0; j < nk; ++j) {
        while (vp->start[vpi + 1] <= j0 + j) ++vpi;
        const int64_t* st = vp->str[vpi];
        const void* data = vp->data[vpi];
        const int64_t at = b * st[0] + hk * st[1] + (j0 + j - vp->start[vpi]) * st[2];
        T* row = vb + j * dvp;
        CMLC_FA_NAME(load_row)(row, data, at, dv, c->dtype);
        for (int64_t e = dv; e < dvp; ++e) row[e] = 0;
      }
    }
    // The next tile's v rows, fetched while this one is computed (already cached when the
    // transposition above prefetched them).
    if (!dec && j0 + BK < kv_end) {
      const int64_t next_end = kv_end - (j0 + BK) < BK ? kv_end : j0 + 2 * BK;
      int npf = vpi;
      for (int64_t j = j0 + BK; j < next_end; ++j)
        cmlc__fa_prefetch(cmlc__fa_row(vp, &npf, b, hk, j, elem_bytes), (size_t)dv * elem_bytes);
    }
    // A full tile that every row sees whole (no bias or mask; causal: below the diagonal):
    // the score loop scales the scores and keeps each row's max and a finiteness probe (the
    // sum of its scores), so no separate scale / max pass reads the tile again. A row whose
    // probe is not finite (NaN, inf, overflow) takes that pass after all (on scaled scores).
    const bool fused_max =
        !dec && !c->bias && !c->mask && nk == BK && !(c->causal && j0 + BK - 1 > i0);
    T row_max[BQ];
    bool row_fused[BQ];
    if (dec) {
      const int64_t n = k_in_place ? d : dqp;
      const void* const* pkk = k_in_place ? pk : NULL;
      const size_t kbytes = k_row_bytes, vbytes = v_row_bytes;
      switch (nq_live) {
        case 1:
          CMLC_FA_NAME(dec_scores)(1, qb, dqp, krow, nk, n, pkk, pv, kbytes, vbytes, sbuf);
          break;
        case 2:
          CMLC_FA_NAME(dec_scores)(2, qb, dqp, krow, nk, n, pkk, pv, kbytes, vbytes, sbuf);
          break;
        case 3:
          CMLC_FA_NAME(dec_scores)(3, qb, dqp, krow, nk, n, pkk, pv, kbytes, vbytes, sbuf);
          break;
        default:
          CMLC_FA_NAME(dec_scores)(4, qb, dqp, krow, nk, n, pkk, pv, kbytes, vbytes, sbuf);
          break;
      }
    }
    // Scores q_r . k_j of the tile, two rows and U keys at a time (8 accumulators).
    // With an odd row count the last pair's second row (below BQ, as BQ is even) is computed
    // from row r's q and never read.
    for (int64_t r = 0; !dec && r < nq_live; r += 2) {
      const T* q0 = qb + r * d;
      const T* q1 = r + 1 < nq_live ? q0 + d : q0;
      T* s0 = sbuf + r * BK;
      T* s1 = s0 + BK;
      V vs = {0}, m0 = {0}, m1 = {0}, t0 = {0}, t1 = {0};
      vs += scale;
      m0 -= (T)INFINITY;
      m1 -= (T)INFINITY;
      for (int64_t j = 0; j < BK; j += U) {
        V a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0}, b0 = {0}, b1 = {0}, b2 = {0}, b3 = {0};
        for (int64_t e = 0; e < d; ++e) {
          const T* kr = kt + e * BK + j;
          V k0, k1, k2, k3;
          memcpy(&k0, kr, sizeof k0);
          memcpy(&k1, kr + W, sizeof k1);
          memcpy(&k2, kr + 2 * W, sizeof k2);
          memcpy(&k3, kr + 3 * W, sizeof k3);
          const T x0 = q0[e], x1 = q1[e];
          a0 += x0 * k0;
          a1 += x0 * k1;
          a2 += x0 * k2;
          a3 += x0 * k3;
          b0 += x1 * k0;
          b1 += x1 * k1;
          b2 += x1 * k2;
          b3 += x1 * k3;
        }
        if (fused_max) {
          a0 *= vs;
          a1 *= vs;
          a2 *= vs;
          a3 *= vs;
          b0 *= vs;
          b1 *= vs;
          b2 *= vs;
          b3 *= vs;
          CMLC_FA_VMAX_INTO(m0, a0);
          CMLC_FA_VMAX_INTO(m0, a1);
          CMLC_FA_VMAX_INTO(m0, a2);
          CMLC_FA_VMAX_INTO(m0, a3);
          CMLC_FA_VMAX_INTO(m1, b0);
          CMLC_FA_VMAX_INTO(m1, b1);
          CMLC_FA_VMAX_INTO(m1, b2);
          CMLC_FA_VMAX_INTO(m1, b3);
          t0 += (a0 + a1) + (a2 + a3);
          t1 += (b0 + b1) + (b2 + b3);
        }
        memcpy(s0 + j, &a0, sizeof a0);
        memcpy(s0 + j + W, &a1, sizeof a1);
        memcpy(s0 + j + 2 * W, &a2, sizeof a2);
        memcpy(s0 + j + 3 * W, &a3, sizeof a3);
        memcpy(s1 + j, &b0, sizeof b0);
        memcpy(s1 + j + W, &b1, sizeof b1);
        memcpy(s1 + j + 2 * W, &b2, sizeof b2);
        memcpy(s1 + j + 3 * W, &b3, sizeof b3);
      }
      if (fused_max) {
        T x0 = -INFINITY, x1 = -INFINITY, p0 = 0, p1 = 0;
        for (int w = 0; w < W; ++w) {
          x0 = m0[w] > x0 ? m0[w] : x0;
          x1 = m1[w] > x1 ? m1[w] : x1;
          p0 += t0[w];
          p1 += t1[w];
        }
        // p - p is 0 exactly when p is finite.
        row_max[r] = x0;
        row_fused[r] = p0 - p0 == 0;
        if (r + 1 < BQ) {
          row_max[r + 1] = x1;
          row_fused[r + 1] = p1 - p1 == 0;
        }
      }
    }
    T alphas[BQ];
    bool live[BQ];
    for (int64_t r = 0; r < nq_live; ++r) {
      const int64_t i = i0 + r;
      live[r] = false;
      // Causal: this row sees no key of the tile.
      if (c->causal && j0 > i) continue;
      T* sb = sbuf + r * BK;
      // Scale, bias, masks, in the decomposition's order; the tile's max.
      const int64_t mb_row = b * c->mask_str[0] + h * c->mask_str[1] + i * c->mask_str[2];
      const int64_t bb_row = b * c->bias_str[0] + h * c->bias_str[1] + i * c->bias_str[2];
      T mx = -INFINITY;
      if (fused_max && row_fused[r]) {
        mx = row_max[r];  // scaled, with every key visible, in the score loop
      } else if (!c->bias && !c->mask) {
        // No bias or mask: scale the keys this row may see (all, or j <= i when causal), W
        // at a time, and mask the rest.
        const int64_t lim = c->causal && i - j0 + 1 < nk ? i - j0 + 1 : nk;
        V vm = {0}, vs = {0};
        vm -= (T)INFINITY;
        vs += fused_max ? (T)1 : scale;  // a fused tile's scores are scaled already
        bool nan = false;
        CMLC_FA_IV nanv = {0};
        int64_t j = 0;
        for (; j + W <= lim; j += W) {
          V x;
          memcpy(&x, sb + j, sizeof x);
          x *= vs;
          memcpy(sb + j, &x, sizeof x);
          const CMLC_FA_IV gt = x > vm;
          vm = (V)(((CMLC_FA_IV)x & gt) | ((CMLC_FA_IV)vm & ~gt));
          nanv |= x != x;
        }
        for (int64_t w = 0; w < W; ++w) {
          mx = vm[w] > mx ? vm[w] : mx;
          nan |= nanv[w] != 0;
        }
        for (; j < lim; ++j) {
          sb[j] *= fused_max ? (T)1 : scale;
          mx = sb[j] > mx ? sb[j] : mx;
          nan |= sb[j] != sb[j];
        }
        if (nan) mx = (T)NAN;
        for (j = lim; j < nk; ++j) sb[j] = -INFINITY;
      }
      for (int64_t j = 0; (c->bias || c->mask) && j < nk; ++j) {
        T s = sb[j] * scale;
        const int64_t jj = j0 + j;
        if (c->bias) s += CMLC_FA_LOAD(c->bias, bb_row + jj * c->bias_str[3], c->dtype);
        bool allowed = !c->causal || jj <= i;
        if (c->mask) {
          const int64_t mi = mb_row + jj * c->mask_str[3];
          if (c->mask_bool) {
            allowed = allowed && ((const uint8_t*)c->mask)[mi] != 0;
          } else {
            s += CMLC_FA_LOAD(c->mask, mi, c->dtype);
          }
        }
        s = allowed ? s : (T)-INFINITY;
        sb[j] = s;
        mx = s > mx || s != s ? s : mx;
      }
      const T m_old = mb[r];
      const T m_new = m_old > mx || m_old != m_old ? m_old : mx;
      if (m_new == (T)-INFINITY) continue;  // nothing attended yet
      const T alpha = CMLC_FA_EXP(m_old - m_new);
      T psum = 0;
#if CMLC_FA_VEXP
      if (m_new == m_new && m_new != (T)INFINITY) {  // +inf: exp(inf - inf) is NaN, as below
        // exp(s - m) <= 1, W lanes at a time (CMLC_FA_VEXPF); x < -87.3 (including the -inf
        // of masked keys and of the padding up to a multiple of W) gives exactly 0.
        const int64_t nkw = (nk + W - 1) / W * W;
        for (int64_t j = nk; j < nkw; ++j) sb[j] = -INFINITY;
        V acc = {0};
        for (int64_t j = 0; j < nkw; j += W) {
          V x, y;
          memcpy(&x, sb + j, sizeof x);
          CMLC_FA_VEXPF(V, CMLC_FA_IV, x - m_new, y);
          memcpy(sb + j, &y, sizeof y);
          acc += y;
        }
        for (int64_t w = 0; w < W; ++w) psum += acc[w];
      } else
#endif
      {
        for (int64_t j = 0; j < nk; ++j) {
          T p = CMLC_FA_EXP(sb[j] - m_new);
          sb[j] = p;
          psum += p;
        }
      }
      mb[r] = m_new;
      lb[r] = lb[r] * alpha + psum;
      alphas[r] = alpha;
      live[r] = true;
    }
    // o_r = alpha_r o_r + sum_j p_rj v_j for the rows that attended keys of the tile, four
    // rows and two vectors of dv at a time (8 accumulators, each v load serving four rows);
    // a last group of fewer rows repeats its last row (the copies compute and store the same
    // values).
    int64_t lr[BQ], nl = 0;
    for (int64_t r = 0; r < nq_live; ++r) {
      if (live[r]) lr[nl++] = r;
    }
    if (dec) {
      switch (nl) {
        case 0:
          break;
        case 1:
          CMLC_FA_NAME(dec_pv)(1, lr, alphas, sbuf, ob, dvp, vt, vs_row, nk);
          break;
        case 2:
          CMLC_FA_NAME(dec_pv)(2, lr, alphas, sbuf, ob, dvp, vt, vs_row, nk);
          break;
        case 3:
          CMLC_FA_NAME(dec_pv)(3, lr, alphas, sbuf, ob, dvp, vt, vs_row, nk);
          break;
        default:
          CMLC_FA_NAME(dec_pv)(4, lr, alphas, sbuf, ob, dvp, vt, vs_row, nk);
          break;
      }
      nl = 0;  // done: the paired loop below has no rows
    }
    for (int64_t g = 0; g < nl; g += 4) {
      int64_t rr[4];
      for (int u = 0; u < 4; ++u) rr[u] = lr[g + u < nl ? g + u : nl - 1];
      const T* p0 = sbuf + rr[0] * BK;
      const T* p1 = sbuf + rr[1] * BK;
      const T* p2 = sbuf + rr[2] * BK;
      const T* p3 = sbuf + rr[3] * BK;
      T* o0 = ob + rr[0] * dvp;
      T* o1 = ob + rr[1] * dvp;
      T* o2 = ob + rr[2] * dvp;
      T* o3 = ob + rr[3] * dvp;
      const T al0 = alphas[rr[0]], al1 = alphas[rr[1]], al2 = alphas[rr[2]], al3 = alphas[rr[3]];
      for (int64_t e = 0; e < dvp; e += 2 * W) {
        const bool two = e + 2 * W <= dvp;  // else one vector left
        V a0, a1 = {0}, b0, b1 = {0}, c0, c1 = {0}, d0, d1 = {0};
        memcpy(&a0, o0 + e, sizeof a0);
        memcpy(&b0, o1 + e, sizeof b0);
        memcpy(&c0, o2 + e, sizeof c0);
        memcpy(&d0, o3 + e, sizeof d0);
        if (two) {
          memcpy(&a1, o0 + e + W, sizeof a1);
          memcpy(&b1, o1 + e + W, sizeof b1);
          memcpy(&c1, o2 + e + W, sizeof c1);
          memcpy(&d1, o3 + e + W, sizeof d1);
        }
        a0 *= al0;
        a1 *= al0;
        b0 *= al1;
        b1 *= al1;
        c0 *= al2;
        c1 *= al2;
        d0 *= al3;
        d1 *= al3;
        if (two) {
          for (int64_t j = 0; j < nk; ++j) {
            const T* vr = vt + j * vs_row + e;
            V v0, v1;
            memcpy(&v0, vr, sizeof v0);
            memcpy(&v1, vr + W, sizeof v1);
            const T x0 = p0[j], x1 = p1[j], x2 = p2[j], x3 = p3[j];
            a0 += x0 * v0;
            a1 += x0 * v1;
            b0 += x1 * v0;
            b1 += x1 * v1;
            c0 += x2 * v0;
            c1 += x2 * v1;
            d0 += x3 * v0;
            d1 += x3 * v1;
          }
        } else {
          for (int64_t j = 0; j < nk; ++j) {
            V v0;
            memcpy(&v0, vt + j * vs_row + e, sizeof v0);
            a0 += p0[j] * v0;
            b0 += p1[j] * v0;
            c0 += p2[j] * v0;
            d0 += p3[j] * v0;
          }
        }
        memcpy(o0 + e, &a0, sizeof a0);
        memcpy(o1 + e, &b0, sizeof b0);
        memcpy(o2 + e, &c0, sizeof c0);
        memcpy(o3 + e, &d0, sizeof d0);
        if (two) {
          memcpy(o0 + e + W, &a1, sizeof a1);
          memcpy(o1 + e + W, &b1, sizeof b1);
          memcpy(o2 + e + W, &c1, sizeof c1);
          memcpy(o3 + e + W, &d1, sizeof d1);
        }
      }
    }
  }

  // Normalize and store; rows with no attended key (or past query_seq_len) give zeros. The
  // logsumexp state (when asked for) is m + log(l), -inf for those rows.
  const int64_t o_base = b * c->o_str[0] + h * c->o_str[1] + i0 * c->o_str[2];
  T* lse = c->lse ? (T*)c->lse + (b * c->heads + h) * c->seq + i0 : NULL;
  for (int64_t r = 0; r < nq; ++r) {
    const int64_t at = o_base + r * c->o_str[2];
    const bool live = r < nq_live && lb[r] != 0;
    const T inv = live ? (T)1 / lb[r] : 0;
    CMLC_FA_NAME(store_row)(c->out, at, dv, c->dtype, live ? ob + r * dvp : NULL, true, inv);
    if (lse) lse[r] = live ? mb[r] + (T)log((double)lb[r]) : (T)-INFINITY;
  }
}
