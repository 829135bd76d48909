// SPDX-License-Identifier: Apache-2.0
// kernels/generic/fused_attention_bwd_impl.h: the body of the tiled attention backward pass
// (FusedScaledDotProductAttentionVJP), included by fused_attention.c and
// kernels/x86_64/fused_attention_x86_64.c after fused_attention_impl.h, with the same
// parameters (CMLC_FA_T, CMLC_FA_V, CMLC_FA_W, ...; see that file).
//
// With P = exp(S - lse) recomputed tile by tile from q, k and the forward's logsumexp (S the
// scaled, biased and masked scores), D_i = dO_i . O_i and dS = P (dO V^T - D) scale:
//   dV = P^T dO, dK = dS^T Q, dQ = dS K.
// Two passes, so that every output element has one writer: bwd_kv (a task per batch, kv head
// and key tile, looping over the query heads of its group and the query tiles) writes dK and
// dV; bwd_q (a task per batch, query head and query tile) writes dQ. Scratch per thread is a
// few tiles, independent of the sequence lengths.

// out[r][j] = sum_e a[r * lda + e] * bt[e * BK + j] for r < rows, j < BK: two rows and 4
// vectors of keys at a time (8 accumulators).
static CMLC_FA_ATTR void CMLC_FA_NAME(bwd_mm)(const CMLC_FA_T* a, int64_t lda, int64_t rows,
                                              int64_t depth, const CMLC_FA_T* bt, CMLC_FA_T* out) {
  typedef CMLC_FA_T T;
  typedef CMLC_FA_V V;
  enum { W = CMLC_FA_W, BK = CMLC_FA_BK };
  for (int64_t r = 0; r < rows; r += 2) {
    const T* a0 = a + r * lda;
    const T* a1 = r + 1 < rows ? a0 + lda : a0;
    for (int64_t j = 0; j < BK; j += 4 * W) {
      V x0 = {0}, x1 = {0}, x2 = {0}, x3 = {0}, y0 = {0}, y1 = {0}, y2 = {0}, y3 = {0};
      for (int64_t e = 0; e < depth; ++e) {
        const T* br = bt + e * BK + j;
        V b0, b1, b2, b3;
        memcpy(&b0, br, sizeof b0);
        memcpy(&b1, br + W, sizeof b1);
        memcpy(&b2, br + 2 * W, sizeof b2);
        memcpy(&b3, br + 3 * W, sizeof b3);
        const T u = a0[e], w = a1[e];
        x0 += u * b0;
        x1 += u * b1;
        x2 += u * b2;
        x3 += u * b3;
        y0 += w * b0;
        y1 += w * b1;
        y2 += w * b2;
        y3 += w * b3;
      }
      T* o0 = out + r * BK + j;
      memcpy(o0, &x0, sizeof x0);
      memcpy(o0 + W, &x1, sizeof x1);
      memcpy(o0 + 2 * W, &x2, sizeof x2);
      memcpy(o0 + 3 * W, &x3, sizeof x3);
      if (r + 1 < rows) {
        T* o1 = o0 + BK;
        memcpy(o1, &y0, sizeof y0);
        memcpy(o1 + W, &y1, sizeof y1);
        memcpy(o1 + 2 * W, &y2, sizeof y2);
        memcpy(o1 + 3 * W, &y3, sizeof y3);
      }
    }
  }
}

// acc[j][e] += sum_r p[r][j] x[r][e] for j < BK, e < width (a multiple of W), r < rows: four
// keys and two vectors of e at a time (8 accumulators), then four keys and one vector.
static CMLC_FA_ATTR void CMLC_FA_NAME(bwd_acc_tn)(const CMLC_FA_T* p, int64_t rows,
                                                  const CMLC_FA_T* x, int64_t width,
                                                  CMLC_FA_T* acc) {
  typedef CMLC_FA_T T;
  typedef CMLC_FA_V V;
  enum { W = CMLC_FA_W, BK = CMLC_FA_BK };
  for (int64_t j = 0; j < BK; j += 4) {
    T* a0 = acc + j * width;
    T* a1 = a0 + width;
    T* a2 = a1 + width;
    T* a3 = a2 + width;
    int64_t e = 0;
    for (; e + 2 * W <= width; e += 2 * W) {
      V s00, s01, s10, s11, s20, s21, s30, s31;
      memcpy(&s00, a0 + e, sizeof s00);
      memcpy(&s10, a1 + e, sizeof s10);
      memcpy(&s20, a2 + e, sizeof s20);
      memcpy(&s30, a3 + e, sizeof s30);
      memcpy(&s01, a0 + e + W, sizeof s01);
      memcpy(&s11, a1 + e + W, sizeof s11);
      memcpy(&s21, a2 + e + W, sizeof s21);
      memcpy(&s31, a3 + e + W, sizeof s31);
      for (int64_t r = 0; r < rows; ++r) {
        const T* pr = p + r * BK + j;
        const T* xr = x + r * width + e;
        V x0, x1;
        memcpy(&x0, xr, sizeof x0);
        memcpy(&x1, xr + W, sizeof x1);
        const T p0 = pr[0], p1 = pr[1], p2 = pr[2], p3 = pr[3];
        s00 += p0 * x0;
        s01 += p0 * x1;
        s10 += p1 * x0;
        s11 += p1 * x1;
        s20 += p2 * x0;
        s21 += p2 * x1;
        s30 += p3 * x0;
        s31 += p3 * x1;
      }
      memcpy(a0 + e, &s00, sizeof s00);
      memcpy(a1 + e, &s10, sizeof s10);
      memcpy(a2 + e, &s20, sizeof s20);
      memcpy(a3 + e, &s30, sizeof s30);
      memcpy(a0 + e + W, &s01, sizeof s01);
      memcpy(a1 + e + W, &s11, sizeof s11);
      memcpy(a2 + e + W, &s21, sizeof s21);
      memcpy(a3 + e + W, &s31, sizeof s31);
    }
    if (e < width) {
      V s0, s1, s2, s3;
      memcpy(&s0, a0 + e, sizeof s0);
      memcpy(&s1, a1 + e, sizeof s1);
      memcpy(&s2, a2 + e, sizeof s2);
      memcpy(&s3, a3 + e, sizeof s3);
      for (int64_t r = 0; r < rows; ++r) {
        const T* pr = p + r * BK + j;
        V x0;
        memcpy(&x0, x + r * width + e, sizeof x0);
        s0 += pr[0] * x0;
        s1 += pr[1] * x0;
        s2 += pr[2] * x0;
        s3 += pr[3] * x0;
      }
      memcpy(a0 + e, &s0, sizeof s0);
      memcpy(a1 + e, &s1, sizeof s1);
      memcpy(a2 + e, &s2, sizeof s2);
      memcpy(a3 + e, &s3, sizeof s3);
    }
  }
}

// acc[r][e] += sum_j ds[r][j] kb[j][e] for r < rows rounded up to 4 (ds is zero past |rows|;
// acc has room), j < nk, e < width (a multiple of W): four rows and two vectors at a time,
// then four rows and one vector.
static CMLC_FA_ATTR void CMLC_FA_NAME(bwd_acc_nn)(const CMLC_FA_T* ds, int64_t rows, int64_t nk,
                                                  const CMLC_FA_T* kb, int64_t width,
                                                  CMLC_FA_T* acc) {
  typedef CMLC_FA_T T;
  typedef CMLC_FA_V V;
  enum { W = CMLC_FA_W, BK = CMLC_FA_BK };
  for (int64_t r = 0; r < rows; r += 4) {
    T* a0 = acc + r * width;
    T* a1 = a0 + width;
    T* a2 = a1 + width;
    T* a3 = a2 + width;
    const T* d0 = ds + r * BK;
    int64_t e = 0;
    for (; e + 2 * W <= width; e += 2 * W) {
      V s00, s01, s10, s11, s20, s21, s30, s31;
      memcpy(&s00, a0 + e, sizeof s00);
      memcpy(&s10, a1 + e, sizeof s10);
      memcpy(&s20, a2 + e, sizeof s20);
      memcpy(&s30, a3 + e, sizeof s30);
      memcpy(&s01, a0 + e + W, sizeof s01);
      memcpy(&s11, a1 + e + W, sizeof s11);
      memcpy(&s21, a2 + e + W, sizeof s21);
      memcpy(&s31, a3 + e + W, sizeof s31);
      for (int64_t j = 0; j < nk; ++j) {
        const T* kr = kb + j * width + e;
        V k0, k1;
        memcpy(&k0, kr, sizeof k0);
        memcpy(&k1, kr + W, sizeof k1);
        const T q0 = d0[j], q1 = d0[BK + j], q2 = d0[2 * BK + j], q3 = d0[3 * BK + j];
        s00 += q0 * k0;
        s01 += q0 * k1;
        s10 += q1 * k0;
        s11 += q1 * k1;
        s20 += q2 * k0;
        s21 += q2 * k1;
        s30 += q3 * k0;
        s31 += q3 * k1;
      }
      memcpy(a0 + e, &s00, sizeof s00);
      memcpy(a1 + e, &s10, sizeof s10);
      memcpy(a2 + e, &s20, sizeof s20);
      memcpy(a3 + e, &s30, sizeof s30);
      memcpy(a0 + e + W, &s01, sizeof s01);
      memcpy(a1 + e + W, &s11, sizeof s11);
      memcpy(a2 + e + W, &s21, sizeof s21);
      memcpy(a3 + e + W, &s31, sizeof s31);
    }
    if (e < width) {
      V s0, s1, s2, s3;
      memcpy(&s0, a0 + e, sizeof s0);
      memcpy(&s1, a1 + e, sizeof s1);
      memcpy(&s2, a2 + e, sizeof s2);
      memcpy(&s3, a3 + e, sizeof s3);
      for (int64_t j = 0; j < nk; ++j) {
        V k0;
        memcpy(&k0, kb + j * width + e, sizeof k0);
        s0 += d0[j] * k0;
        s1 += d0[BK + j] * k0;
        s2 += d0[2 * BK + j] * k0;
        s3 += d0[3 * BK + j] * k0;
      }
      memcpy(a0 + e, &s0, sizeof s0);
      memcpy(a1 + e, &s1, sizeof s1);
      memcpy(a2 + e, &s2, sizeof s2);
      memcpy(a3 + e, &s3, sizeof s3);
    }
  }
}

// Loads query rows [i0, i0 + rows) of head |h| of batch |b| into |cap| rows of scratch: q into
// qb [cap, dp], dO into dob [cap, dvp] (zero padded), their logsumexp into lse [cap] (and its
// correction, c->lse_c, into lc [cap]) and D = dO . O into dsum [cap]. Rows at or past |rows|
// get zeros and lse -inf.
static CMLC_FA_ATTR void CMLC_FA_NAME(bwd_load_rows)(const cmlc_fa_bwd_ctx_t* c, int64_t b,
                                                     int64_t h, int64_t i0, int64_t rows,
                                                     int64_t cap, CMLC_FA_T* qb, CMLC_FA_T* dob,
                                                     CMLC_FA_T* lse, CMLC_FA_T* dsum,
                                                     CMLC_FA_T* lc) {
  typedef CMLC_FA_T T;
  const cmlc_fa_ctx_t* f = &c->f;
  const int64_t d = f->d, dv = f->dv, dp = c->dp, dvp = f->dvp;
  memset(qb, 0, (size_t)(cap * dp) * sizeof(T));
  memset(dob, 0, (size_t)(cap * dvp) * sizeof(T));
  const int64_t q_base = b * f->q_str[0] + h * f->q_str[1] + i0 * f->q_str[2];
  const int64_t o_base = b * f->o_str[0] + h * f->o_str[1] + i0 * f->o_str[2];
  const T* ls = (const T*)c->lse + (b * f->heads + h) * f->seq + i0;
  const T* lsc = c->lse_c ? (const T*)c->lse_c + (b * f->heads + h) * f->seq + i0 : NULL;
  for (int64_t r = rows; r < cap; ++r) {
    lse[r] = (T)-INFINITY;
    dsum[r] = 0;
    lc[r] = 0;
  }
  const bool native = f->dtype == CMLC_FA_NATIVE;
  for (int64_t r = 0; r < rows; ++r) {
    T* qr = qb + r * dp;
    T* gr = dob + r * dvp;
    const int64_t qa = q_base + r * f->q_str[2], oa = o_base + r * f->o_str[2];
    T acc = 0;
    if (native) {
      memcpy(qr, (const T*)f->q + qa, (size_t)d * sizeof(T));
      memcpy(gr, (const T*)c->dout + oa, (size_t)dv * sizeof(T));
      const T* orow = (const T*)c->o + oa;
      for (int64_t e = 0; e < dv; ++e) acc += gr[e] * orow[e];
    } else {
      CMLC_FA_NAME(load_row)(qr, f->q, qa, d, f->dtype);
      CMLC_FA_NAME(load_row)(gr, c->dout, oa, dv, f->dtype);
      for (int64_t e = 0; e < dv; ++e) acc += gr[e] * CMLC_FA_LOAD(c->o, oa + e, f->dtype);
    }
    lse[r] = ls[r];
    dsum[r] = acc;
    lc[r] = lsc ? lsc[r] : 0;
  }
}

// Loads keys [j0, j0 + nk) of kv head |hk| of batch |b|: k transposed into kt [d, BK], v
// transposed into vt [dv, BK] (zero past nk) and, when |kb| is not NULL, k into kb [BK, dp].
static CMLC_FA_ATTR void CMLC_FA_NAME(bwd_load_keys)(const cmlc_fa_bwd_ctx_t* c, int64_t b,
                                                     int64_t hk, int64_t j0, int64_t nk,
                                                     CMLC_FA_T* kt, CMLC_FA_T* vt, CMLC_FA_T* kb) {
  typedef CMLC_FA_T T;
  enum { BK = CMLC_FA_BK };
  const cmlc_fa_ctx_t* f = &c->f;
  const int64_t d = f->d, dv = f->dv, dp = c->dp;
  if (nk < BK) {
    memset(kt, 0, (size_t)(d * BK) * sizeof(T));
    memset(vt, 0, (size_t)(dv * BK) * sizeof(T));
  }
  if (kb) memset(kb, 0, (size_t)(BK * dp) * sizeof(T));
  const int64_t k_base = b * f->k_str[0] + hk * f->k_str[1] + j0 * f->k_str[2];
  const int64_t v_base = b * f->v_str[0] + hk * f->v_str[1] + j0 * f->v_str[2];
  if (f->dtype == CMLC_FA_NATIVE) {
    for (int64_t j = 0; j < nk; ++j) {
      const T* kr = (const T*)f->k + k_base + j * f->k_str[2];
      const T* vr = (const T*)f->v + v_base + j * f->v_str[2];
      for (int64_t e = 0; e < d; ++e) kt[e * BK + j] = kr[e];
      if (kb) memcpy(kb + j * dp, kr, (size_t)d * sizeof(T));
      for (int64_t e = 0; e < dv; ++e) vt[e * BK + j] = vr[e];
    }
    return;
  }
  for (int64_t j = 0; j < nk; ++j) {
    for (int64_t e = 0; e < d; ++e) {
      const T x = CMLC_FA_LOAD(f->k, k_base + j * f->k_str[2] + e, f->dtype);
      kt[e * BK + j] = x;
      if (kb) kb[j * dp + e] = x;
    }
    for (int64_t e = 0; e < dv; ++e)
      vt[e * BK + j] = CMLC_FA_LOAD(f->v, v_base + j * f->v_str[2] + e, f->dtype);
  }
}

// The scores S of query row |i| of head |h| of batch |b| against the keys [j0, j0 + nk) as the
// forward computes them (scale, bias, masks, causality; keys past nk excluded), from their dot
// products q . k in sb [BK], in place, as (S - lse) - lc: -inf for the keys the forward excluded.
static CMLC_FA_ATTR inline void CMLC_FA_NAME(bwd_scores)(const cmlc_fa_ctx_t* f, int64_t b,
                                                         int64_t h, int64_t i, int64_t j0,
                                                         int64_t nk, CMLC_FA_T lse, CMLC_FA_T lc,
                                                         CMLC_FA_T* sb) {
  typedef CMLC_FA_T T;
  enum { BK = CMLC_FA_BK };
  const T scale = (T)f->scale;
  const int64_t mb_row = b * f->mask_str[0] + h * f->mask_str[1] + i * f->mask_str[2];
  const int64_t bb_row = b * f->bias_str[0] + h * f->bias_str[1] + i * f->bias_str[2];
  for (int64_t j = 0; j < BK; ++j) {
    const int64_t jj = j0 + j;
    bool allowed = j < nk && (!f->causal || jj <= i);
    T s = sb[j] * scale;
    if (allowed && f->bias) s += CMLC_FA_LOAD(f->bias, bb_row + jj * f->bias_str[3], f->dtype);
    if (allowed && f->mask) {
      const int64_t mi = mb_row + jj * f->mask_str[3];
      if (f->mask_bool) {
        allowed = ((const uint8_t*)f->mask)[mi] != 0;
      } else {
        s += CMLC_FA_LOAD(f->mask, mi, f->dtype);
      }
    }
    sb[j] = allowed ? (s - lse) - lc : (T)-INFINITY;
  }
}

// For the query rows [i0, i0 + rows) of head |h| (q rows qb, dO rows dob, their lse, D and lse
// correction) and the keys [j0, j0 + nk): P = exp(S - lse - lc) into pb [BQ, BK] and
// dS = P (dO V^T - D) scale into dsb [BQ, BK]; zero for keys the forward excluded, keys past nk
// and rows past |rows|.
static CMLC_FA_ATTR void CMLC_FA_NAME(bwd_tile)(
    const cmlc_fa_bwd_ctx_t* c, int64_t b, int64_t h, int64_t i0, int64_t rows, int64_t j0,
    int64_t nk, const CMLC_FA_T* qb, const CMLC_FA_T* dob, const CMLC_FA_T* lse_rows,
    const CMLC_FA_T* dsum_rows, const CMLC_FA_T* lc_rows, const CMLC_FA_T* kt, const CMLC_FA_T* vt,
    CMLC_FA_T* pb, CMLC_FA_T* dsb) {
  typedef CMLC_FA_T T;
  typedef CMLC_FA_V V;
  enum { W = CMLC_FA_W, BQ = CMLC_FA_BQ, BK = CMLC_FA_BK };
  const cmlc_fa_ctx_t* f = &c->f;
  const T scale = (T)f->scale;
  memset(pb, 0, sizeof(T) * BQ * BK);
  memset(dsb, 0, sizeof(T) * BQ * BK);
  CMLC_FA_NAME(bwd_mm)(qb, c->dp, rows, f->d, kt, pb);
  CMLC_FA_NAME(bwd_mm)(dob, f->dvp, rows, f->dv, vt, dsb);
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t i = i0 + r;
    T* sb = pb + r * BK;
    T* db = dsb + r * BK;
    const T lse = lse_rows[r], dsum = dsum_rows[r], lc = lc_rows[r];
    if (lse == (T)-INFINITY || (f->causal && j0 > i)) {
      memset(sb, 0, sizeof(T) * BK);
      memset(db, 0, sizeof(T) * BK);
      continue;
    }
    // Scores as the forward computes them (scale, bias, masks, causality, lengths), minus lse.
    // Where lc is not 0, lse is the row's score max and lc its log(l) (bwd_stats), and the
    // scores are computed as bwd_stats computed them.
    if (!f->bias && !f->mask && lc == 0) {
      const int64_t lim = f->causal && i - j0 + 1 < nk ? i - j0 + 1 : nk;
      for (int64_t j = 0; j < BK; j += W) {
        V x;
        memcpy(&x, sb + j, sizeof x);
        x = x * scale - lse;
        memcpy(sb + j, &x, sizeof x);
      }
      for (int64_t j = lim; j < BK; ++j) sb[j] = (T)-INFINITY;
    } else {
      CMLC_FA_NAME(bwd_scores)(f, b, h, i, j0, nk, lse, lc, sb);
    }
#if CMLC_FA_VEXP
    if (lse == lse) {
      for (int64_t j = 0; j < BK; j += W) {
        V x, y;
        memcpy(&x, sb + j, sizeof x);
        CMLC_FA_VEXPF(V, CMLC_FA_IV, x, y);
        memcpy(sb + j, &y, sizeof y);
      }
    } else
#endif
    {
      for (int64_t j = 0; j < BK; ++j) sb[j] = sb[j] == (T)-INFINITY ? 0 : CMLC_FA_EXP(sb[j]);
    }
    for (int64_t j = 0; j < BK; j += W) {
      V pv, dpv;
      memcpy(&pv, sb + j, sizeof pv);
      memcpy(&dpv, db + j, sizeof dpv);
      dpv = pv * (dpv - dsum) * scale;
      memcpy(db + j, &dpv, sizeof dpv);
    }
  }
}

// One task per batch and query head, before the passes: for each row whose saved logsumexp
// is finite and at least CMLC_FA_LSE_EXACT in magnitude, where m + log(l) in one
// float lost log(l) to rounding (a row masked entirely by a large finite additive value gets
// uniform weights over its l keys, and P = exp(S - lse) would be 1 instead of 1/l), recomputes
// the row's score max m and log(l) from q and k, the scores exactly as bwd_tile computes them,
// into c->stat_m and c->stat_c; the other rows get their saved value and 0. Scratch: the
// thread's q, kt, vt and p tiles.
CMLC_FA_LINKAGE CMLC_FA_ATTR void CMLC_FA_NAME(bwd_stats)(const cmlc_fa_bwd_ctx_t* c, int64_t task,
                                                          int thread_index) {
  typedef CMLC_FA_T T;
  enum { BK = CMLC_FA_BK };
  const cmlc_fa_ctx_t* f = &c->f;
  const int64_t h = task % f->heads, b = task / f->heads, hk = h / f->groups;
  const T exact = (T)CMLC_FA_LSE_EXACT;
  int64_t q_rows = f->seq, kv_end = f->kv_seq;
  if (f->q_len) {
    const int64_t ql = f->q_len[b], kl = f->kv_len[b];
    q_rows = ql < 0 ? 0 : (ql < f->seq ? ql : f->seq);
    kv_end = kl < 0 ? 0 : (kl < f->kv_seq ? kl : f->kv_seq);
  }
  const int64_t row0 = (b * f->heads + h) * f->seq;
  const T* ls = (const T*)c->lse + row0;
  T* mo = (T*)c->stat_m + row0;
  T* lo = (T*)c->stat_c + row0;
  char* base = c->scratch + (size_t)thread_index * c->per_thread;
  T* qr = (T*)(base + c->off_q);
  T* kt = (T*)(base + c->off_kt);
  T* vt = (T*)(base + c->off_vt);
  T* sb = (T*)(base + c->off_p);
  for (int64_t i = 0; i < f->seq; ++i) {
    mo[i] = ls[i];
    lo[i] = 0;
    const T a = ls[i] < 0 ? -ls[i] : ls[i];
    if (i >= q_rows || !(a >= exact) || a == (T)INFINITY) continue;
    memset(qr, 0, (size_t)c->dp * sizeof(T));
    const int64_t qa = b * f->q_str[0] + h * f->q_str[1] + i * f->q_str[2];
    if (f->dtype == CMLC_FA_NATIVE) {
      memcpy(qr, (const T*)f->q + qa, (size_t)f->d * sizeof(T));
    } else {
      CMLC_FA_NAME(load_row)(qr, f->q, qa, f->d, f->dtype);
    }
    const int64_t end = f->causal && kv_end > i + 1 ? i + 1 : kv_end;
    T m = (T)-INFINITY, l = 0;
    for (int64_t j0 = 0; j0 < end; j0 += BK) {
      const int64_t nk = end - j0 < BK ? end - j0 : BK;
      CMLC_FA_NAME(bwd_load_keys)(c, b, hk, j0, nk, kt, vt, NULL);
      CMLC_FA_NAME(bwd_mm)(qr, c->dp, 1, f->d, kt, sb);
      CMLC_FA_NAME(bwd_scores)(f, b, h, i, j0, nk, 0, 0, sb);
      T mt = m;
      for (int64_t j = 0; j < nk; ++j) mt = sb[j] > mt ? sb[j] : mt;
      if (mt == (T)-INFINITY) continue;
      if (mt > m) {
        l = m == (T)-INFINITY ? 0 : l * CMLC_FA_EXP(m - mt);
        m = mt;
      }
      for (int64_t j = 0; j < nk; ++j) {
        if (sb[j] != (T)-INFINITY) l += CMLC_FA_EXP(sb[j] - m);
      }
    }
    if (m > (T)-INFINITY && m < (T)INFINITY && l > 0) {
      mo[i] = m;
      lo[i] = (T)log((double)l);
    }
  }
}

// Pass 1, one task: dK and dV of keys [j0, j0 + BK) of kv head |hk| of batch |b|.
CMLC_FA_LINKAGE CMLC_FA_ATTR void CMLC_FA_NAME(bwd_kv)(const cmlc_fa_bwd_ctx_t* c, int64_t task,
                                                       int thread_index) {
  typedef CMLC_FA_T T;
  enum { BQ = CMLC_FA_BQ, BK = CMLC_FA_BK };
  const cmlc_fa_ctx_t* f = &c->f;
  const int64_t kv_heads = f->heads / f->groups;
  const int64_t jt = task % c->kv_tiles;
  const int64_t hk = (task / c->kv_tiles) % kv_heads;
  const int64_t b = task / (c->kv_tiles * kv_heads);
  const int64_t j0 = jt * BK;
  const int64_t nstore = f->kv_seq - j0 < BK ? f->kv_seq - j0 : BK;
  int64_t q_rows = f->seq, kv_end = f->kv_seq;
  if (f->q_len) {
    const int64_t ql = f->q_len[b], kl = f->kv_len[b];
    q_rows = ql < 0 ? 0 : (ql < f->seq ? ql : f->seq);
    kv_end = kl < 0 ? 0 : (kl < f->kv_seq ? kl : f->kv_seq);
  }
  int64_t nk = kv_end - j0;
  nk = nk < 0 ? 0 : (nk < nstore ? nk : nstore);

  char* base = c->scratch + (size_t)thread_index * c->per_thread;
  T* qb = (T*)(base + c->off_q);
  T* dob = (T*)(base + c->off_do);
  T* kt = (T*)(base + c->off_kt);
  T* vt = (T*)(base + c->off_vt);
  T* pb = (T*)(base + c->off_p);
  T* dsb = (T*)(base + c->off_ds);
  T* dk = (T*)(base + c->off_a1);   // [BK, dp]
  T* dvb = (T*)(base + c->off_a2);  // [BK, dvp]
  T* st = (T*)(base + c->off_st);
  memset(dk, 0, (size_t)(BK * c->dp) * sizeof(T));
  memset(dvb, 0, (size_t)(BK * f->dvp) * sizeof(T));
  if (nk > 0) {
    CMLC_FA_NAME(bwd_load_keys)(c, b, hk, j0, nk, kt, vt, NULL);
    for (int64_t g = 0; g < f->groups; ++g) {
      const int64_t h = hk * f->groups + g;
      // Causal: rows before j0 see no key of the tile.
      for (int64_t i0 = f->causal ? j0 / BQ * BQ : 0; i0 < q_rows; i0 += BQ) {
        const int64_t rows = q_rows - i0 < BQ ? q_rows - i0 : BQ;
        CMLC_FA_NAME(bwd_load_rows)(c, b, h, i0, rows, BQ, qb, dob, st, st + BQ, st + 2 * BQ);
        CMLC_FA_NAME(bwd_tile)
        (c, b, h, i0, rows, j0, nk, qb, dob, st, st + BQ, st + 2 * BQ, kt, vt, pb, dsb);
        CMLC_FA_NAME(bwd_acc_tn)(pb, rows, dob, f->dvp, dvb);
        CMLC_FA_NAME(bwd_acc_tn)(dsb, rows, qb, c->dp, dk);
      }
    }
  }
  const int64_t k_base = b * f->k_str[0] + hk * f->k_str[1] + j0 * f->k_str[2];
  const int64_t v_base = b * f->v_str[0] + hk * f->v_str[1] + j0 * f->v_str[2];
  for (int64_t j = 0; j < nstore; ++j) {
    CMLC_FA_NAME(store_row)
    (c->dk, k_base + j * f->k_str[2], f->d, f->dtype, dk + j * c->dp, false, 1);
    CMLC_FA_NAME(store_row)
    (c->dv, v_base + j * f->v_str[2], f->dv, f->dtype, dvb + j * f->dvp, false, 1);
  }
}

// Pass 2, one task: dQ of the rows [i0, i0 + BQ) of query head |h| of batch |b|.
CMLC_FA_LINKAGE CMLC_FA_ATTR void CMLC_FA_NAME(bwd_q)(const cmlc_fa_bwd_ctx_t* c, int64_t task,
                                                      int thread_index) {
  typedef CMLC_FA_T T;
  enum { BQ = CMLC_FA_BQ, BK = CMLC_FA_BK };
  const cmlc_fa_ctx_t* f = &c->f;
  const int64_t qt = task % f->q_tiles;
  const int64_t h = (task / f->q_tiles) % f->heads;
  const int64_t b = task / (f->q_tiles * f->heads);
  const int64_t hk = h / f->groups;
  const int64_t i0 = qt * BQ;
  const int64_t nq = f->seq - i0 < BQ ? f->seq - i0 : BQ;
  int64_t q_rows = f->seq, kv_end = f->kv_seq;
  if (f->q_len) {
    const int64_t ql = f->q_len[b], kl = f->kv_len[b];
    q_rows = ql < 0 ? 0 : (ql < f->seq ? ql : f->seq);
    kv_end = kl < 0 ? 0 : (kl < f->kv_seq ? kl : f->kv_seq);
  }
  int64_t rows = q_rows - i0;
  rows = rows < 0 ? 0 : (rows < nq ? rows : nq);
  if (f->causal && kv_end > i0 + rows) kv_end = i0 + rows;
  if (rows == 0) kv_end = 0;

  char* base = c->scratch + (size_t)thread_index * c->per_thread;
  T* qb = (T*)(base + c->off_q);
  T* dob = (T*)(base + c->off_do);
  T* kt = (T*)(base + c->off_kt);
  T* vt = (T*)(base + c->off_vt);
  T* kb = (T*)(base + c->off_k);
  T* pb = (T*)(base + c->off_p);
  T* dsb = (T*)(base + c->off_ds);
  T* dq = (T*)(base + c->off_a1);  // [BQ, dp]
  T* st = (T*)(base + c->off_st);
  memset(dq, 0, (size_t)(BQ * c->dp) * sizeof(T));
  if (rows > 0)
    CMLC_FA_NAME(bwd_load_rows)(c, b, h, i0, rows, BQ, qb, dob, st, st + BQ, st + 2 * BQ);
  for (int64_t j0 = 0; j0 < kv_end; j0 += BK) {
    const int64_t nk = kv_end - j0 < BK ? kv_end - j0 : BK;
    CMLC_FA_NAME(bwd_load_keys)(c, b, hk, j0, nk, kt, vt, kb);
    CMLC_FA_NAME(bwd_tile)
    (c, b, h, i0, rows, j0, nk, qb, dob, st, st + BQ, st + 2 * BQ, kt, vt, pb, dsb);
    CMLC_FA_NAME(bwd_acc_nn)(dsb, rows, nk, kb, c->dp, dq);
  }
  const int64_t q_base = b * f->q_str[0] + h * f->q_str[1] + i0 * f->q_str[2];
  for (int64_t r = 0; r < nq; ++r) {
    CMLC_FA_NAME(store_row)
    (c->dq, q_base + r * f->q_str[2], f->d, f->dtype, dq + r * c->dp, false, 1);
  }
}

// Single pass, one task: dK, dV of kv head |hk| of batch |b| and dQ of the query heads of its
// group, with the group's q, dO, lse, D and dQ held in per-thread scratch of seq rows (linear in
// seq). Used when there are at least as many (batch, kv head) pairs as threads; every value is
// computed with the same operations in the same order as the two passes, so the results are
// the same bit for bit.
CMLC_FA_LINKAGE CMLC_FA_ATTR void CMLC_FA_NAME(bwd_head)(const cmlc_fa_bwd_ctx_t* c, int64_t task,
                                                         int thread_index) {
  typedef CMLC_FA_T T;
  enum { BQ = CMLC_FA_BQ, BK = CMLC_FA_BK };
  const cmlc_fa_ctx_t* f = &c->f;
  const int64_t kv_heads = f->heads / f->groups;
  const int64_t hk = task % kv_heads, b = task / kv_heads;
  const int64_t dp = c->dp, dvp = f->dvp, sp = c->seq_pad;
  int64_t q_rows = f->seq, kv_end = f->kv_seq;
  if (f->q_len) {
    const int64_t ql = f->q_len[b], kl = f->kv_len[b];
    q_rows = ql < 0 ? 0 : (ql < f->seq ? ql : f->seq);
    kv_end = kl < 0 ? 0 : (kl < f->kv_seq ? kl : f->kv_seq);
  }
  char* base = c->scratch + (size_t)thread_index * c->per_thread;
  T* kt = (T*)(base + c->off_kt);
  T* vt = (T*)(base + c->off_vt);
  T* kb = (T*)(base + c->off_k);
  T* pb = (T*)(base + c->off_p);
  T* dsb = (T*)(base + c->off_ds);
  T* dk = (T*)(base + c->off_a1);    // [BK, dp]
  T* dvb = (T*)(base + c->off_a2);   // [BK, dvp]
  T* hq = (T*)(base + c->off_hq);    // [groups, sp, dp]
  T* hdo = (T*)(base + c->off_hdo);  // [groups, sp, dvp]
  T* hl = (T*)(base + c->off_hl);    // [groups, sp]
  T* hd = (T*)(base + c->off_hd);    // [groups, sp]
  T* hc = (T*)(base + c->off_hc);    // [groups, sp]
  T* hdq = (T*)(base + c->off_hdq);  // [groups, sp, dp]
  memset(hdq, 0, (size_t)(f->groups * sp * dp) * sizeof(T));
  for (int64_t g = 0; g < f->groups; ++g) {
    CMLC_FA_NAME(bwd_load_rows)
    (c, b, hk * f->groups + g, 0, q_rows, sp, hq + g * sp * dp, hdo + g * sp * dvp, hl + g * sp,
     hd + g * sp, hc + g * sp);
  }
  for (int64_t j0 = 0; j0 < f->kv_seq; j0 += BK) {
    const int64_t nstore = f->kv_seq - j0 < BK ? f->kv_seq - j0 : BK;
    int64_t nk = kv_end - j0;
    nk = nk < 0 ? 0 : (nk < nstore ? nk : nstore);
    memset(dk, 0, (size_t)(BK * dp) * sizeof(T));
    memset(dvb, 0, (size_t)(BK * dvp) * sizeof(T));
    if (nk > 0) {
      CMLC_FA_NAME(bwd_load_keys)(c, b, hk, j0, nk, kt, vt, kb);
      for (int64_t g = 0; g < f->groups; ++g) {
        const int64_t h = hk * f->groups + g;
        for (int64_t i0 = f->causal ? j0 / BQ * BQ : 0; i0 < q_rows; i0 += BQ) {
          const int64_t rows = q_rows - i0 < BQ ? q_rows - i0 : BQ;
          const T* qb = hq + (g * sp + i0) * dp;
          const T* dob = hdo + (g * sp + i0) * dvp;
          CMLC_FA_NAME(bwd_tile)
          (c, b, h, i0, rows, j0, nk, qb, dob, hl + g * sp + i0, hd + g * sp + i0, hc + g * sp + i0,
           kt, vt, pb, dsb);
          CMLC_FA_NAME(bwd_acc_tn)(pb, rows, dob, dvp, dvb);
          CMLC_FA_NAME(bwd_acc_tn)(dsb, rows, qb, dp, dk);
          CMLC_FA_NAME(bwd_acc_nn)(dsb, rows, nk, kb, dp, hdq + (g * sp + i0) * dp);
        }
      }
    }
    const int64_t k_base = b * f->k_str[0] + hk * f->k_str[1] + j0 * f->k_str[2];
    const int64_t v_base = b * f->v_str[0] + hk * f->v_str[1] + j0 * f->v_str[2];
    for (int64_t j = 0; j < nstore; ++j) {
      CMLC_FA_NAME(store_row)
      (c->dk, k_base + j * f->k_str[2], f->d, f->dtype, dk + j * dp, false, 1);
      CMLC_FA_NAME(store_row)
      (c->dv, v_base + j * f->v_str[2], f->dv, f->dtype, dvb + j * dvp, false, 1);
    }
  }
  for (int64_t g = 0; g < f->groups; ++g) {
    const int64_t h = hk * f->groups + g;
    const int64_t q_base = b * f->q_str[0] + h * f->q_str[1];
    for (int64_t r = 0; r < f->seq; ++r) {
      const T* src = hdq + (g * sp + r) * dp;
      CMLC_FA_NAME(store_row)(c->dq, q_base + r * f->q_str[2], f->d, f->dtype, src, false, 1);
    }
  }
}
