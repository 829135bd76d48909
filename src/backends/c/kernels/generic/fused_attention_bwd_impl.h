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

// out[r][j] = sum_e a[r * lda + e] * bt[e * BK + j] for r < rows, j < BK (two rows at a time).
static CMLC_FA_ATTR void CMLC_FA_NAME(bwd_mm)(const CMLC_FA_T* a, int64_t lda, int64_t rows,
                                              int64_t depth, const CMLC_FA_T* bt, CMLC_FA_T* out) {
  typedef CMLC_FA_T T;
  typedef CMLC_FA_V V;
  enum { W = CMLC_FA_W, BK = CMLC_FA_BK, C = CMLC_FA_BK / CMLC_FA_W };
  for (int64_t r = 0; r < rows; r += 2) {
    const T* a0 = a + r * lda;
    const T* a1 = r + 1 < rows ? a0 + lda : a0;
    V acc0[C], acc1[C];
    for (int c = 0; c < C; ++c) acc0[c] = acc1[c] = (V){0};
    for (int64_t e = 0; e < depth; ++e) {
      const T x0 = a0[e], x1 = a1[e];
      const T* br = bt + e * BK;
      for (int c = 0; c < C; ++c) {
        V bv;
        memcpy(&bv, br + c * W, sizeof bv);
        acc0[c] += x0 * bv;
        acc1[c] += x1 * bv;
      }
    }
    memcpy(out + r * BK, acc0, sizeof acc0);
    if (r + 1 < rows) memcpy(out + (r + 1) * BK, acc1, sizeof acc1);
  }
}

// acc[j][e] += sum_r p[r][j] x[r][e] for j < BK, e < width (a multiple of W), r < rows.
static CMLC_FA_ATTR void CMLC_FA_NAME(bwd_acc_tn)(const CMLC_FA_T* p, int64_t rows,
                                                  const CMLC_FA_T* x, int64_t width,
                                                  CMLC_FA_T* acc) {
  typedef CMLC_FA_T T;
  typedef CMLC_FA_V V;
  enum { W = CMLC_FA_W, BK = CMLC_FA_BK };
  for (int64_t j = 0; j < BK; ++j) {
    T* ar = acc + j * width;
    int64_t e = 0;
    for (; e + 2 * W <= width; e += 2 * W) {
      V s0, s1;
      memcpy(&s0, ar + e, sizeof s0);
      memcpy(&s1, ar + e + W, sizeof s1);
      for (int64_t r = 0; r < rows; ++r) {
        const T pr = p[r * BK + j];
        V x0, x1;
        memcpy(&x0, x + r * width + e, sizeof x0);
        memcpy(&x1, x + r * width + e + W, sizeof x1);
        s0 += pr * x0;
        s1 += pr * x1;
      }
      memcpy(ar + e, &s0, sizeof s0);
      memcpy(ar + e + W, &s1, sizeof s1);
    }
    for (; e < width; e += W) {
      V s0;
      memcpy(&s0, ar + e, sizeof s0);
      for (int64_t r = 0; r < rows; ++r) {
        V x0;
        memcpy(&x0, x + r * width + e, sizeof x0);
        s0 += p[r * BK + j] * x0;
      }
      memcpy(ar + e, &s0, sizeof s0);
    }
  }
}

// acc[r][e] += sum_j ds[r][j] kb[j][e] for r < rows, j < nk, e < width (a multiple of W).
static CMLC_FA_ATTR void CMLC_FA_NAME(bwd_acc_nn)(const CMLC_FA_T* ds, int64_t rows, int64_t nk,
                                                  const CMLC_FA_T* kb, int64_t width,
                                                  CMLC_FA_T* acc) {
  typedef CMLC_FA_T T;
  typedef CMLC_FA_V V;
  enum { W = CMLC_FA_W, BK = CMLC_FA_BK };
  for (int64_t r = 0; r < rows; ++r) {
    T* ar = acc + r * width;
    const T* dr = ds + r * BK;
    int64_t e = 0;
    for (; e + 2 * W <= width; e += 2 * W) {
      V s0, s1;
      memcpy(&s0, ar + e, sizeof s0);
      memcpy(&s1, ar + e + W, sizeof s1);
      for (int64_t j = 0; j < nk; ++j) {
        V k0, k1;
        memcpy(&k0, kb + j * width + e, sizeof k0);
        memcpy(&k1, kb + j * width + e + W, sizeof k1);
        s0 += dr[j] * k0;
        s1 += dr[j] * k1;
      }
      memcpy(ar + e, &s0, sizeof s0);
      memcpy(ar + e + W, &s1, sizeof s1);
    }
    for (; e < width; e += W) {
      V s0;
      memcpy(&s0, ar + e, sizeof s0);
      for (int64_t j = 0; j < nk; ++j) {
        V k0;
        memcpy(&k0, kb + j * width + e, sizeof k0);
        s0 += dr[j] * k0;
      }
      memcpy(ar + e, &s0, sizeof s0);
    }
  }
}

// Loads query rows [i0, i0 + rows) of head |h| of batch |b| (q into qb [BQ, dp], dO into dob
// [BQ, dvp], zero padded), their logsumexp and D = dO . O into st[0..BQ) and st[BQ..2 BQ).
// Rows at or past |rows| get zeros and lse -inf.
static CMLC_FA_ATTR void CMLC_FA_NAME(bwd_load_rows)(const cmlc_fa_bwd_ctx_t* c, int64_t b,
                                                     int64_t h, int64_t i0, int64_t rows,
                                                     CMLC_FA_T* qb, CMLC_FA_T* dob, CMLC_FA_T* st) {
  typedef CMLC_FA_T T;
  const cmlc_fa_ctx_t* f = &c->f;
  const int64_t d = f->d, dv = f->dv, dp = c->dp, dvp = f->dvp;
  memset(qb, 0, (size_t)(CMLC_FA_BQ * dp) * sizeof(T));
  memset(dob, 0, (size_t)(CMLC_FA_BQ * dvp) * sizeof(T));
  const int64_t q_base = b * f->q_str[0] + h * f->q_str[1] + i0 * f->q_str[2];
  const int64_t o_base = b * f->o_str[0] + h * f->o_str[1] + i0 * f->o_str[2];
  const T* lse = (const T*)c->lse + (b * f->heads + h) * f->seq + i0;
  for (int64_t r = 0; r < CMLC_FA_BQ; ++r) {
    st[r] = (T)-INFINITY;
    st[CMLC_FA_BQ + r] = 0;
  }
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t e = 0; e < d; ++e)
      qb[r * dp + e] = CMLC_FA_LOAD(f->q, q_base + r * f->q_str[2] + e, f->dtype);
    T dsum = 0;
    for (int64_t e = 0; e < dv; ++e) {
      const int64_t at = o_base + r * f->o_str[2] + e;
      const T g = CMLC_FA_LOAD(c->dout, at, f->dtype);
      dob[r * dvp + e] = g;
      dsum += g * CMLC_FA_LOAD(c->o, at, f->dtype);
    }
    st[r] = lse[r];
    st[CMLC_FA_BQ + r] = dsum;
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

// For the query rows [i0, i0 + rows) of head |h| and the keys [j0, j0 + nk): P = exp(S - lse)
// into pb [BQ, BK] and dS = P (dO V^T - D) scale into dsb [BQ, BK]; zero for keys the forward
// excluded, keys past nk and rows past |rows|.
static CMLC_FA_ATTR void CMLC_FA_NAME(bwd_tile)(const cmlc_fa_bwd_ctx_t* c, int64_t b, int64_t h,
                                                int64_t i0, int64_t rows, int64_t j0, int64_t nk,
                                                const CMLC_FA_T* qb, const CMLC_FA_T* dob,
                                                const CMLC_FA_T* st, const CMLC_FA_T* kt,
                                                const CMLC_FA_T* vt, CMLC_FA_T* pb,
                                                CMLC_FA_T* dsb) {
  typedef CMLC_FA_T T;
  enum { BQ = CMLC_FA_BQ, BK = CMLC_FA_BK };
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
    const T lse = st[r], dsum = st[BQ + r];
    if (lse == (T)-INFINITY || (f->causal && j0 > i)) {
      memset(sb, 0, sizeof(T) * BK);
      memset(db, 0, sizeof(T) * BK);
      continue;
    }
    // Scores as the forward computes them (scale, bias, masks, causality, lengths), minus lse.
    const int64_t mb_row = b * f->mask_str[0] + h * f->mask_str[1] + i * f->mask_str[2];
    const int64_t bb_row = b * f->bias_str[0] + h * f->bias_str[1] + i * f->bias_str[2];
    for (int64_t j = 0; j < BK; ++j) {
      const int64_t jj = j0 + j;
      T s = sb[j] * scale;
      if (f->bias) s += CMLC_FA_LOAD(f->bias, bb_row + jj * f->bias_str[3], f->dtype);
      bool allowed = j < nk && (!f->causal || jj <= i);
      if (allowed && f->mask) {
        const int64_t mi = mb_row + jj * f->mask_str[3];
        if (f->mask_bool) {
          allowed = ((const uint8_t*)f->mask)[mi] != 0;
        } else {
          s += CMLC_FA_LOAD(f->mask, mi, f->dtype);
        }
      }
      sb[j] = allowed ? s - lse : (T)-INFINITY;
    }
#if CMLC_FA_VEXP
    if (lse == lse) {
      typedef CMLC_FA_V V;
      enum { W = CMLC_FA_W };
      for (int64_t j = 0; j < BK; j += W) {
        V x;
        memcpy(&x, sb + j, sizeof x);
        V y;
        CMLC_FA_VEXPF(V, CMLC_FA_IV, x, y);
        memcpy(sb + j, &y, sizeof y);
      }
    } else
#endif
    {
      for (int64_t j = 0; j < BK; ++j) sb[j] = sb[j] == (T)-INFINITY ? 0 : CMLC_FA_EXP(sb[j]);
    }
    for (int64_t j = 0; j < BK; ++j) db[j] = sb[j] * (db[j] - dsum) * scale;
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
        CMLC_FA_NAME(bwd_load_rows)(c, b, h, i0, rows, qb, dob, st);
        CMLC_FA_NAME(bwd_tile)(c, b, h, i0, rows, j0, nk, qb, dob, st, kt, vt, pb, dsb);
        CMLC_FA_NAME(bwd_acc_tn)(pb, rows, dob, f->dvp, dvb);
        CMLC_FA_NAME(bwd_acc_tn)(dsb, rows, qb, c->dp, dk);
      }
    }
  }
  const int64_t k_base = b * f->k_str[0] + hk * f->k_str[1] + j0 * f->k_str[2];
  const int64_t v_base = b * f->v_str[0] + hk * f->v_str[1] + j0 * f->v_str[2];
  for (int64_t j = 0; j < nstore; ++j) {
    for (int64_t e = 0; e < f->d; ++e)
      CMLC_FA_STORE(c->dk, k_base + j * f->k_str[2] + e, f->dtype, dk[j * c->dp + e]);
    for (int64_t e = 0; e < f->dv; ++e)
      CMLC_FA_STORE(c->dv, v_base + j * f->v_str[2] + e, f->dtype, dvb[j * f->dvp + e]);
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
  if (rows > 0) CMLC_FA_NAME(bwd_load_rows)(c, b, h, i0, rows, qb, dob, st);
  for (int64_t j0 = 0; j0 < kv_end; j0 += BK) {
    const int64_t nk = kv_end - j0 < BK ? kv_end - j0 : BK;
    CMLC_FA_NAME(bwd_load_keys)(c, b, hk, j0, nk, kt, vt, kb);
    CMLC_FA_NAME(bwd_tile)(c, b, h, i0, rows, j0, nk, qb, dob, st, kt, vt, pb, dsb);
    CMLC_FA_NAME(bwd_acc_nn)(dsb, rows, nk, kb, c->dp, dq);
  }
  const int64_t q_base = b * f->q_str[0] + h * f->q_str[1] + i0 * f->q_str[2];
  for (int64_t r = 0; r < nq; ++r) {
    for (int64_t e = 0; e < f->d; ++e)
      CMLC_FA_STORE(c->dq, q_base + r * f->q_str[2] + e, f->dtype, dq[r * c->dp + e]);
  }
}
