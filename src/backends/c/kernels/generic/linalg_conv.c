// SPDX-License-Identifier: Apache-2.0
// kernels/generic/linalg_conv.c: ConvGeneral (XLA / StableHLO convolution semantics) for every
// real dtype: an im2col + packed GEMM fast path for float dtypes, and a direct convolution over
// arbitrary axis layouts (the reference, and the path for integers).
//
// For output element (b, o, y[0..S)):
//   out = sum over kernel positions k[0..S) and input channels ci of a feature group:
//         in[b', g*Cg + ci, x] * kernel[ci, o, k]
//   where, per spatial axis d, the dilated input position is p = y*stride + k*kdil - pad_lo;
//   the term exists when 0 <= p <= (in-1)*idil and p % idil == 0 (then x = p / idil).
//   Feature groups (channel_group_count G): Cg = C_in / G, g = o / (C_out / G).
//   Batch groups (batch_group_count BG): the input batch splits into BG contiguous chunks of
//   N_out, one per chunk of C_out / BG output features: b' = (o / (C_out / BG)) * N_out + b
//   (StableHLO's split/concatenate definition).
// Arithmetic: integers wrap (uint64, truncated to the accumulator width), f16/bf16 accumulate in
// f32 and round once, f64 in f64. The accumulator is the output dtype when it is of the same
// kind as the input (e.g. i8 -> i32 accumulates in i32), else the input dtype.
//
// Fast path (float inputs with an f32 or f64 accumulator, reference=false, feature groups or
// batch groups but not both): per group, the convolution is a GEMM
//   C[rows, Ng] = A[rows, K] x B[K, Ng]
// where a row is one output position (b, y) flattened over the output batch and spatial axes,
// K = (kernel positions) x Cg and Ng = C_out / G. B is the kernel, converted once per run into
// a [G, K, Ng] array in scratch. A (im2col) is built tile by tile: a task takes one group and a
// tile of rows, gathers the taps of its rows into a thread-private buffer (zeros where a tap
// falls into padding or an input-dilation hole, converting f16/bf16 on the way), runs the
// packed GEMM of gemm.c on one thread, and scatters C into the output (or lets the GEMM write
// the output in place when it is channels-last with one group and the accumulator's dtype; a
// 1x1, stride-1, unpadded conv over such an input reads the input as A, with no gather).
// K is ordered tap-major (ci fastest) when the input's channel stride is 1 (NHWC-like), else
// channel-major, so the gather reads runs of contiguous memory. The tile size depends on the
// shapes only (about 512 KiB of im2col per tile, bounded rows), never on the thread count; each
// output is summed by one GEMM micro-kernel in a fixed k order, so results do not depend on
// the thread count. The order differs from the direct loop's, so f32 results can differ from
// reference mode in the last bits (see docs/conv.md). Operands are read in place; scratch holds
// the converted kernel, offset tables and per-thread (im2col tile, C tile, GEMM buffers).
//
// Direct 2-D kernel (AVX-512 or AVX2, f32 accumulator, one group, two spatial axes; the 7x7
// stem, ResNet's 3x3 and 1x1 layers): no im2col and no GEMM. A task takes up to 8 output rows
// of one image, gathers the input rows its taps read into a zero-padded f32 strip (any input
// layout and dtype, strides, padding, both dilations; a 1x1 kernel whose taps stay inside an
// f32 channels-last input reads it in place instead), and runs a 6-pixel x 64-channel
// micro-kernel (kernels/x86_64/linalg_conv_x86_64_{avx512,avx2}.c) against the filter, packed
// into [64-channel blocks][K][64] once per run, or once per plan when the kernel is a constant
// (entry.prepare, which the GEMM and depthwise paths use for their converted kernel too). K runs
// in chunks of at most CMLC_CONV_DIRECT_K_MAX rows (contiguous in (ky, kx, ci) order), each
// in blocks of CMLC__CONV_DIRECT_K_BLOCK rows summed from zero and added to the sums stored
// before (a blocked sum, as the GEMM's k blocks). The output rows are written in place (f32,
// channel stride 1) or through a row buffer. Each output sums its terms in (ky, kx, ci) order,
// independent of the thread count and the ISA; zero padding is multiplied like the GEMM path's.
//
// Direct path: operands are first converted into the accumulator's domain in scratch; work is
// split over output elements, each summed in a fixed order, so the thread count never changes
// results.
#include <stdio.h>

#include "backends/c/kernels/generic/elementwise_internal.h"
#include "backends/c/kernels/generic/linalg_internal.h"

enum {
  CMLC_CONV_TILE_BYTES = 512 * 1024,  // target im2col bytes per tile
  CMLC_CONV_TILE_MIN = 96,            // rows: below this B is re-read too often
  CMLC_CONV_TILE_MAX = 768,
  CMLC_CONV_TILE_ALIGN = 12,  // a multiple of every micro-kernel's MR (4, 6, 12)
  CMLC_CONV_MIN_TASKS = 32,   // rows tiles shrink (to TILE_MIN) to reach this many
  // Direct kernel limits: one K chunk (linalg_internal.h), and a task's zero-padded input strip
  // (kernel rows x padded width x channels) stays in L2.
  CMLC_CONV_DIRECT_K_MAX = CMLC__CONV_DIRECT_K_MAX,
  CMLC_CONV_DIRECT_FILTER_L2 = 256 * 1024,
  CMLC_CONV_DIRECT_STRIP_MAX = 1024 * 1024,     // bytes, at one output row per task
  CMLC_CONV_DIRECT_STRIP_TARGET = 256 * 1024,   // bytes: fewer rows per task above this
  CMLC_CONV_DIRECT_TILE_MAX = 4 * 1024 * 1024,  // bytes of one output row's scatter tile
  CMLC_CONV_DIRECT_PIXELS = 6,                  // output pixels per micro-kernel call
  CMLC_CONV_DIRECT_COLS = 64,                   // output channels per micro-kernel call
  CMLC_CONV_DIRECT_CHANNEL_RUN = 8,     // channels moved together between NCHW and the strip
  CMLC_CONV_DIRECT_MAX_PHASES = 16,     // input dilations the phased direct kernel takes
  CMLC_CONV_DIRECT_ATTR_MAX = 1 << 20,  // |padding|, strides and dilations it takes
};

// Fast-path plan (valid when |enabled|).
// |base| + |offset|, or NULL when the plan needs no scratch (|base| NULL): no pointer arithmetic
// on NULL (UBSan's pointer-overflow check flags even a zero offset).
static char* cmlc_conv_scratch_at(void* base, size_t offset) {
  return base ? (char*)base + offset : NULL;
}

typedef struct cmlc_conv_fast_t {
  bool enabled;
  cmlc__la_domain_t domain;  // F32 or F64
  size_t es;                 // bytes per domain element
  int64_t groups;            // G: feature groups or batch groups
  bool batch_grouped;        // groups split the input batch (else the input channels)
  int64_t cg, ng, ks, k;     // channels per group in, out; kernel positions; K = ks * cg
  int64_t positions;         // output positions per image (product of output spatial dims)
  int64_t rows;              // n_out * positions
  int64_t tile, tiles;       // rows per tile; tiles per group
  int64_t tap_table_len;     // sum over spatial axes of (output dim x kernel dim)
  bool depthwise;            // Cg == 1 with feature groups: the channel-vector loop, no GEMM
  bool ci_minor;             // K index = tap * cg + ci (else ci * ks + tap)
  bool out_direct;           // the GEMM writes the output (channels-last, G == 1, native dtype)
  bool a_direct;             // the input is A itself (1x1, stride 1, no padding, channels-last)
  // Direct 2-D kernel (AVX-512 or AVX2, f32 domain, one group): per task (image, output rows)
  // the input rows the taps read are gathered into a zero-padded strip [rows][len][cg] (f32),
  // and the micro-kernel runs 6 pixels x 64 channels against the filter, packed into
  // [blocks][K][64] (K ordered (ky, kx, ci)). No im2col, no GEMM.
  bool direct;
  bool direct_out;    // the kernel writes the output (f32, channel stride 1)
  int64_t d_len;      // padded strip positions along the width axis
  int64_t d_in_rows;  // strip rows (dilated input row positions a task's taps span)
  int64_t d_blocks;   // blocks of 64 output channels
  // 1x1 kernel over an f32 input with channel stride 1 whose taps never leave the input (no
  // padding into it, no input dilation): the micro-kernel reads the input in place (no strip).
  bool d_in_place;
  // K in chunks of at most CMLC_CONV_DIRECT_K_MAX, contiguous in (ky, kx, ci) order: whole taps
  // (d_tpc taps per chunk, when C_in fits one chunk), else each tap split into d_nsplit channel
  // ranges of d_cpc channels. d_chunks in all (1 when K fits).
  int64_t d_tpc, d_nsplit, d_cpc, d_chunks;
  // Pixel blocks outside the channel blocks (one chunk, several blocks, the whole packed filter
  // within CMLC_CONV_DIRECT_FILTER_L2 bytes), else channel blocks and chunks outside.
  bool d_pixels_outer;
  // Input dilation (a transposed convolution, the input gradient of a strided one) with unit
  // strides and no kernel dilation: phases. Output row y reads only the taps
  // ky = r + idh * m with r = (pad_h - y) mod idh, at undilated input rows
  // ceil((y - pad_h) / idh) + m (columns alike), so the strip holds undilated rows and columns
  // [d_ph_row0 + i][d_ph_col0 + j] and each phase (ry, rx) runs its own sub-filter: the taps of
  // its residues, packed together (K order: phases, then (ky, kx, ci) within one). No product
  // with an input-dilation hole is computed.
  bool d_phased;
  int64_t d_ph_h, d_ph_w;         // the input dilations
  int64_t d_ph_cols;              // strip positions along the width (undilated columns)
  int64_t d_ph_col0;              // the undilated input column of strip column 0
  int64_t d_ph_tpc;               // taps per chunk of a phase's sub-filter
  cmlc__conv_direct_fn d_kernel;  // the micro-kernel for the ISA
  int threads;
  cmlc_isa_t isa;
  // Scratch layout: byte offsets of the converted kernel, the tables, and the per-thread
  // blocks (each |thread_bytes|, holding A, C (depthwise: the accumulators), tap offsets, row
  // output offsets and the GEMM's buffers).
  size_t off_ker, off_tables, off_taps, off_threads, thread_bytes;
  size_t th_a, th_c, th_offs, th_rowoff, th_gemm;
  size_t th_strip;  // direct: the input strip (th_c: one output row when !direct_out)
} cmlc_conv_fast_t;

typedef struct cmlc_conv_plan_t {
  const cml_conv_config_t* cfg;
  cml_conv_config_t lifted;  // a 1-D convolution's config as 2-D (cfg points here then)
  cml_shape_t in, ker, out;
  int64_t in_strides[CML_MAX_RANK], ker_strides[CML_MAX_RANK], out_strides[CML_MAX_RANK];
  int32_t spatial;
  int64_t cin_g, cout, cout_per_fg, cout_per_bg, n_out;
  int64_t fg, bg;
  cml_dtype_t acc_dtype;
  cmlc__la_domain_t domain;
  int64_t in_count, ker_count;
  size_t off_in, off_ker, total;
  cmlc_conv_fast_t fast;
  // bf16 / f16 operands: the SIMD conversions of contiguous runs (NULL: element by element).
  // They give the scalar loads' and stores' values (exact widening; f32 -> bf16 / f16 rounded
  // once, NaN as sign | quiet NaN, as cmlc_store_f64 through double).
  cmlc_ew_convert_fn widen_in, narrow_out;
} cmlc_conv_plan_t;

static size_t cmlc_conv_align(size_t x) { return cmlc_size_align(x, 64); }  // saturating

// Integer division rounding toward -infinity / +infinity (|b| > 0).
static int64_t cmlc_conv_floor_div(int64_t a, int64_t b) {
  const int64_t q = a / b;
  return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}
static int64_t cmlc_conv_ceil_div(int64_t a, int64_t b) { return -cmlc_conv_floor_div(-a, b); }
// a mod b in [0, b).
static int64_t cmlc_conv_mod(int64_t a, int64_t b) { return a - cmlc_conv_floor_div(a, b) * b; }
// Taps of a kernel axis of |k| taps in phase |r| of dilation |d|: r, r + d, ... < k.
static int64_t cmlc_conv_phase_taps(int64_t k, int64_t r, int64_t d) {
  return r < k ? (k - r + d - 1) / d : 0;
}

// Plans the direct 2-D kernel into |f| when it applies (returns false otherwise): the AVX-512
// or AVX2 ISA, an f32 domain, two spatial axes and one group (feature and batch). Any input,
// kernel and output layout, strides, padding and both dilations reach it; the strip gathers (and
// widens f16/bf16) whatever the input layout is. A K above CMLC_CONV_DIRECT_K_MAX runs in
// chunks whose sums are added into the output.
static bool cmlc_conv_plan_direct(cmlc_conv_plan_t* p, cmlc_conv_fast_t* f) {
#if defined(CMLC_HAVE_X86_64)
  const cml_conv_config_t* c = p->cfg;
  if (f->isa != CMLC_ISA_AVX512 && f->isa != CMLC_ISA_AVX2) return false;
  if (f->domain != CMLC__LA_DOM_F32 || p->spatial != 2 || f->groups != 1) return false;
  int64_t kh = p->ker.dims[c->kernel_spatial_axes[0]];
  int64_t kw = p->ker.dims[c->kernel_spatial_axes[1]];
  int64_t oh = p->out.dims[c->output_spatial_axes[0]];
  int64_t ow = p->out.dims[c->output_spatial_axes[1]];
  int64_t len = (ow - 1) * c->strides[1] + (kw - 1) * c->kernel_dilations[1] + 1;
  if (oh <= 0 || ow <= 0 || len <= 0 || c->strides[0] <= 0 || c->strides[1] <= 0) return false;
  // Padding, strides and dilations past any real network's (a crop of 2^55 on one side and a pad
  // of 2^55 on the other: three outputs that read nothing but padding) stay on the im2col or
  // direct loop, whose offsets are checked one by one; the strip arithmetic here assumes them
  // small.
  for (int32_t d = 0; d < 2; ++d) {
    const int64_t lim = CMLC_CONV_DIRECT_ATTR_MAX;
    if (c->padding_low[d] < -lim || c->padding_low[d] > lim || c->padding_high[d] < -lim ||
        c->padding_high[d] > lim || c->strides[d] > lim || c->input_dilations[d] > lim ||
        c->kernel_dilations[d] > lim)
      return false;
  }
  if (f->cg <= 0) return false;
  // A 1x1 kernel over images of a few pixels (a dense layer as a conv over [N, 1, 1, C]) is a
  // GEMM over the batch; the direct kernel's pixel blocks never span images.
  if (f->ks == 1 && oh * ow < 2 * CMLC_CONV_DIRECT_PIXELS) return false;
  f->d_kernel = f->isa == CMLC_ISA_AVX512 ? cmlc__conv_direct_f32_avx512_6x64
                                          : cmlc__conv_direct_f32_avx2_6x16;
  // Chunks of K.
  if (f->cg <= CMLC_CONV_DIRECT_K_MAX) {
    int64_t n = (f->k + CMLC_CONV_DIRECT_K_MAX - 1) / CMLC_CONV_DIRECT_K_MAX;
    f->d_tpc = (f->ks + n - 1) / n;
    f->d_nsplit = 1;
    f->d_cpc = f->cg;
    f->d_chunks = (f->ks + f->d_tpc - 1) / f->d_tpc;
  } else {
    f->d_tpc = 0;
    f->d_nsplit = (f->cg + CMLC_CONV_DIRECT_K_MAX - 1) / CMLC_CONV_DIRECT_K_MAX;
    f->d_cpc = (f->cg + f->d_nsplit - 1) / f->d_nsplit;
    f->d_chunks = f->ks * f->d_nsplit;
  }
  // A 1x1 kernel whose taps stay inside an f32 input with channel stride 1 reads it in place.
  f->d_in_place =
      f->ks == 1 && p->in.dtype == CML_DTYPE_F32 && p->in_strides[c->input_channel_axis] == 1;
  for (int32_t d = 0; d < 2 && f->d_in_place; ++d) {
    int64_t in = p->in.dims[c->input_spatial_axes[d]];
    int64_t last = (p->out.dims[c->output_spatial_axes[d]] - 1) * c->strides[d] - c->padding_low[d];
    f->d_in_place = c->input_dilations[d] == 1 && c->padding_low[d] <= 0 && last <= in - 1;
  }
  f->direct_out = p->out.dtype == CML_DTYPE_F32 && p->out_strides[c->output_channel_axis] == 1;
  f->d_phased = (c->input_dilations[0] > 1 || c->input_dilations[1] > 1) && c->strides[0] == 1 &&
                c->strides[1] == 1 && c->kernel_dilations[0] == 1 && c->kernel_dilations[1] == 1 &&
                f->cg <= CMLC_CONV_DIRECT_K_MAX &&
                c->input_dilations[0] <= CMLC_CONV_DIRECT_MAX_PHASES &&
                c->input_dilations[1] <= CMLC_CONV_DIRECT_MAX_PHASES;
  if (f->d_phased) {
    f->d_ph_h = c->input_dilations[0];
    f->d_ph_w = c->input_dilations[1];
    f->d_ph_col0 = cmlc_conv_ceil_div(-c->padding_low[1], f->d_ph_w);
    f->d_ph_cols =
        cmlc_conv_floor_div(ow - 1 + kw - 1 - c->padding_low[1], f->d_ph_w) - f->d_ph_col0 + 1;
    f->d_ph_tpc = CMLC_CONV_DIRECT_K_MAX / f->cg;
    if (f->d_ph_cols <= 0) f->d_phased = false;
  }
  // Output rows per task: up to 8 (fewer re-gathered input rows, pixel blocks spanning rows),
  // fewer while the strip or the row buffer would outgrow its bound or there would be fewer
  // than 4 tasks per thread. Every output's sum is the same whatever the rows per task.
  const int64_t row_floats = (f->d_phased ? f->d_ph_cols : len) * f->cg;
  int64_t rows = oh < 8 ? oh : 8;
  for (;; --rows) {
    int64_t in_rows = (rows - 1) * c->strides[0] + (kh - 1) * c->kernel_dilations[0] + 1;
    // Phases: the undilated rows among |in_rows| consecutive dilated positions.
    if (f->d_phased) in_rows = (in_rows - 1) / f->d_ph_h + 1;
    double strip = f->d_in_place ? 0.0 : (double)in_rows * (double)row_floats * 4.0;
    double tile = f->direct_out ? 0.0 : (double)rows * (double)ow * (double)p->cout * 4.0;
    int64_t tasks = p->n_out * ((oh + rows - 1) / rows);
    bool fits = strip <= CMLC_CONV_DIRECT_STRIP_TARGET && tile <= CMLC_CONV_DIRECT_TILE_MAX;
    if (rows > 1 && (!fits || tasks < 4 * (int64_t)f->threads)) continue;
    if (strip > CMLC_CONV_DIRECT_STRIP_MAX || tile > CMLC_CONV_DIRECT_TILE_MAX) return false;
    f->d_in_rows = in_rows;
    break;
  }
  f->d_len = len;
  f->d_blocks = (p->cout + CMLC_CONV_DIRECT_COLS - 1) / CMLC_CONV_DIRECT_COLS;
  f->d_pixels_outer = !f->d_phased && f->d_chunks == 1 && f->d_blocks > 1 &&
                      f->d_blocks * f->k * CMLC_CONV_DIRECT_COLS * 4 <= CMLC_CONV_DIRECT_FILTER_L2;
  f->tile = rows;  // output rows per task
  f->tiles = p->n_out * ((oh + rows - 1) / rows);
  size_t off = 0;
  f->off_ker = off;
  off = cmlc_conv_align(
      cmlc_size_add(off, cmlc_size_of(f->d_blocks * f->k * CMLC_CONV_DIRECT_COLS, sizeof(float))));
  f->off_tables = off;  // no GEMM tables
  f->off_taps = off;    // no tap tables
  f->off_threads = off;
  size_t t = 0;
  f->th_strip = t;
  if (!f->d_in_place)
    t = cmlc_conv_align(cmlc_size_add(t, cmlc_size_of(f->d_in_rows * row_floats, sizeof(float))));
  f->th_c = t;
  if (!f->direct_out)
    t = cmlc_conv_align(cmlc_size_add(t, cmlc_size_of(rows * ow * p->cout, sizeof(float))));
  f->thread_bytes = t;
  p->total = cmlc_size_add(off, cmlc_size_mul((size_t)f->threads, t));
  f->direct = true;
  f->enabled = true;
  return true;
#else
  (void)p;
  (void)f;
  return false;
#endif
}

// Fills |p->fast| when the fast path applies (p's shapes and dtypes already checked).
static void cmlc_conv_plan_fast(cmlc_conv_plan_t* p, const cmlc_options_t* options) {
  cmlc_conv_fast_t* f = &p->fast;
  memset(f, 0, sizeof *f);
  if (!options || options->reference) return;
  if (p->domain != CMLC__LA_DOM_F32 && p->domain != CMLC__LA_DOM_F64) return;
  if (!cml_dtype_is_float(p->in.dtype)) return;
  if (p->fg > 1 && p->bg > 1) return;
  const cml_conv_config_t* c = p->cfg;
  int32_t S = p->spatial;
  f->domain = p->domain;
  f->es = cmlc__la_domain_size(p->domain);
  f->batch_grouped = p->bg > 1;
  f->groups = f->batch_grouped ? p->bg : p->fg;
  f->cg = p->cin_g;
  f->ng = p->cout / f->groups;
  f->ks = 1;
  f->positions = 1;
  for (int32_t d = 0; d < S; ++d) {
    f->ks *= p->ker.dims[c->kernel_spatial_axes[d]];
    f->tap_table_len +=
        p->ker.dims[c->kernel_spatial_axes[d]] * p->out.dims[c->output_spatial_axes[d]];
    f->positions *= p->out.dims[c->output_spatial_axes[d]];
  }
  f->k = f->ks * f->cg;
  f->rows = p->n_out * f->positions;
  if (f->k <= 0 || f->ng <= 0 || f->rows <= 0) return;
  // Depthwise-like (one input channel per group): a GEMM per group would be [rows, taps] x
  // [taps, Ng], all overhead; a loop over output channels per tap vectorizes instead.
  f->depthwise = f->cg == 1 && f->groups > 1 && !f->batch_grouped;
  int64_t row_bytes = f->k * (int64_t)f->es;
  int64_t tile;
  if (f->depthwise) {
    // Rows per task: about 16K multiply-adds.
    tile = 16384 / (f->ks * p->cout);
    if (tile < 1) tile = 1;
  } else {
    // Rows per tile: about TILE_BYTES of im2col, within [TILE_MIN, TILE_MAX], a multiple of
    // TILE_ALIGN; smaller (down to TILE_MIN) when that gives too few tasks. Shapes only.
    tile = CMLC_CONV_TILE_BYTES / row_bytes;
    if (tile < CMLC_CONV_TILE_MIN) tile = CMLC_CONV_TILE_MIN;
    if (tile > CMLC_CONV_TILE_MAX) tile = CMLC_CONV_TILE_MAX;
    tile = tile / CMLC_CONV_TILE_ALIGN * CMLC_CONV_TILE_ALIGN;
    while (tile > CMLC_CONV_TILE_MIN &&
           f->groups * ((f->rows + tile - 1) / tile) < CMLC_CONV_MIN_TASKS) {
      int64_t half = tile / 2 / CMLC_CONV_TILE_ALIGN * CMLC_CONV_TILE_ALIGN;
      tile = half < CMLC_CONV_TILE_MIN ? CMLC_CONV_TILE_MIN : half;
    }
  }
  if (tile >= f->rows) tile = f->rows;
  // A huge K (tens of thousands of taps x channels) stays on the direct path rather than
  // needing tens of MiB of im2col per thread.
  if (!f->depthwise && (double)tile * (double)row_bytes > 32.0 * 1024 * 1024) return;
  f->tile = tile;
  f->tiles = (f->rows + tile - 1) / tile;
  f->ci_minor = p->in_strides[c->input_channel_axis] == 1;
  // In-place output: channel axis last with stride 1 and rows (batch, spatial in order) at
  // stride C_out, i.e. the output is [N, S..., C] row-major; one group; accumulator dtype.
  bool native_out = (f->domain == CMLC__LA_DOM_F32 && p->out.dtype == CML_DTYPE_F32) ||
                    (f->domain == CMLC__LA_DOM_F64 && p->out.dtype == CML_DTYPE_F64);
  bool nsc = c->output_batch_axis == 0 && c->output_channel_axis == p->out.rank - 1;
  for (int32_t d = 0; d < S; ++d) nsc &= c->output_spatial_axes[d] == 1 + d;
  f->out_direct = native_out && nsc && f->groups == 1 && !f->depthwise;
  // The input as A: a 1x1 kernel at stride 1 without padding or dilation over an [N, S..., C]
  // row-major input of the accumulator's dtype, one group: row r of A is input row r.
  bool native_in = (f->domain == CMLC__LA_DOM_F32 && p->in.dtype == CML_DTYPE_F32) ||
                   (f->domain == CMLC__LA_DOM_F64 && p->in.dtype == CML_DTYPE_F64);
  bool a_direct = native_in && f->ks == 1 && f->groups == 1 && !f->depthwise &&
                  c->input_batch_axis == 0 && c->input_channel_axis == p->in.rank - 1;
  for (int32_t d = 0; d < S; ++d)
    a_direct &= c->input_spatial_axes[d] == 1 + d && c->strides[d] == 1 && c->padding_low[d] == 0 &&
                c->input_dilations[d] == 1 &&
                p->in.dims[1 + d] == p->out.dims[c->output_spatial_axes[d]];
  f->a_direct = a_direct;
  f->threads = options->threads > 0 ? options->threads : 1;
  f->isa = options->isa;
  if (!f->depthwise && cmlc_conv_plan_direct(p, f)) return;
  // Scratch.
  size_t off = 0;
  f->off_ker = off;
  off = cmlc_conv_align(cmlc_size_add(off, cmlc_size_of(f->groups * f->k * f->ng, f->es)));
  f->off_tables = off;
  off = cmlc_conv_align(
      cmlc_size_add(off, cmlc_size_of(1 + f->tile + 2 * f->k + f->ng, sizeof(int64_t))));
  f->off_taps = off;
  off = cmlc_conv_align(cmlc_size_add(off, cmlc_size_of(f->tap_table_len, sizeof(int64_t))));
  f->off_threads = off;
  size_t t = 0;
  f->th_offs = t;
  t = cmlc_conv_align(cmlc_size_add(t, cmlc_size_of(f->ks, sizeof(int64_t))));
  if (f->depthwise) {
    f->th_c = t;
    t = cmlc_conv_align(cmlc_size_add(t, cmlc_size_of(p->cout, f->es)));
  } else {
    f->th_rowoff = t;
    t = cmlc_conv_align(cmlc_size_add(t, cmlc_size_of(f->tile, sizeof(int64_t))));
    f->th_a = t;
    if (!f->a_direct) t = cmlc_conv_align(cmlc_size_add(t, cmlc_size_of(f->tile * f->k, f->es)));
    f->th_c = t;
    if (!f->out_direct) t = cmlc_conv_align(cmlc_size_add(t, cmlc_size_of(f->tile * f->ng, f->es)));
    f->th_gemm = t;
    size_t gemm = f->domain == CMLC__LA_DOM_F32
                      ? cmlc__gemm_f32_scratch(1, f->tile, f->ng, f->k, f->isa, 1)
                      : cmlc__gemm_f64_scratch(1, f->tile, f->ng, f->k, f->isa, 1);
    t = cmlc_conv_align(cmlc_size_add(t, gemm));
  }
  f->thread_bytes = t;
  p->total = cmlc_size_add(off, cmlc_size_mul((size_t)f->threads, t));
  f->enabled = true;
}

// |s| with a size-1 axis inserted at |axis| (the same memory: a size-1 axis has no stride).
static cml_shape_t cmlc_conv_insert_unit_axis(const cml_shape_t* s, int64_t axis) {
  cml_shape_t r = *s;
  r.rank = s->rank + 1;
  for (int32_t d = s->rank; d > axis; --d) r.dims[d] = s->dims[d - 1];
  r.dims[axis] = 1;
  return r;
}

// An axis index after a size-1 axis was inserted at |at|.
static int64_t cmlc_conv_shift_axis(int64_t a, int64_t at) { return a >= at ? a + 1 : a; }

// A 1-D convolution as a 2-D one of height 1, so that it takes the 2-D kernels (the direct
// kernel and its input-dilation phases: a transposed 1-D convolution went through im2col,
// multiplying through the inserted zeros, 6x xla:cpu's time). The size-1 axis goes right before
// each operand's spatial axis; the new spatial axis 0 has stride 1, no padding and no dilation,
// so every output is the same sum of the same products in the same order.
static void cmlc_conv_lift_1d(const cml_conv_config_t* c, cmlc_conv_plan_t* p) {
  cml_conv_config_t* l = &p->lifted;
  *l = *c;
  const int64_t ia = c->input_spatial_axes[0], ka = c->kernel_spatial_axes[0],
                oa = c->output_spatial_axes[0];
  p->in = cmlc_conv_insert_unit_axis(&p->in, ia);
  p->ker = cmlc_conv_insert_unit_axis(&p->ker, ka);
  p->out = cmlc_conv_insert_unit_axis(&p->out, oa);
  l->spatial_count = 2;
  l->input_batch_axis = cmlc_conv_shift_axis(c->input_batch_axis, ia);
  l->input_channel_axis = cmlc_conv_shift_axis(c->input_channel_axis, ia);
  l->kernel_input_channel_axis = cmlc_conv_shift_axis(c->kernel_input_channel_axis, ka);
  l->kernel_output_channel_axis = cmlc_conv_shift_axis(c->kernel_output_channel_axis, ka);
  l->output_batch_axis = cmlc_conv_shift_axis(c->output_batch_axis, oa);
  l->output_channel_axis = cmlc_conv_shift_axis(c->output_channel_axis, oa);
  l->input_spatial_axes[0] = ia, l->input_spatial_axes[1] = ia + 1;
  l->kernel_spatial_axes[0] = ka, l->kernel_spatial_axes[1] = ka + 1;
  l->output_spatial_axes[0] = oa, l->output_spatial_axes[1] = oa + 1;
  l->strides[1] = c->strides[0], l->strides[0] = 1;
  l->padding_low[1] = c->padding_low[0], l->padding_low[0] = 0;
  l->padding_high[1] = c->padding_high[0], l->padding_high[0] = 0;
  l->input_dilations[1] = c->input_dilations[0], l->input_dilations[0] = 1;
  l->kernel_dilations[1] = c->kernel_dilations[0], l->kernel_dilations[0] = 1;
  p->cfg = l;
}

static bool cmlc_conv_plan(const cml_shape_t* in, const cml_shape_t* ker, const cml_shape_t* out,
                           const cml_ir_attrs_t* attrs, const cmlc_options_t* options,
                           cmlc_conv_plan_t* p) {
  memset(p, 0, sizeof *p);
  const cml_conv_config_t* c = &attrs->u.conv;
  p->cfg = c;
  p->in = *in;
  p->ker = *ker;
  p->out = *out;
  p->spatial = c->spatial_count;
  if (p->spatial < 0 || p->spatial + 2 != in->rank || ker->rank != in->rank ||
      out->rank != in->rank)
    return false;
  if (p->spatial == 1 && in->rank < CML_MAX_RANK) {
    cmlc_conv_lift_1d(c, p);
    c = p->cfg;
    p->spatial = 2;
  }
  if (!cmlc__la_is_real_storage(in->dtype) || in->dtype != ker->dtype ||
      !cmlc__la_is_real_storage(out->dtype))
    return false;
  cmlc_shape_strides(&p->in, p->in_strides);
  cmlc_shape_strides(&p->ker, p->ker_strides);
  cmlc_shape_strides(&p->out, p->out_strides);
  p->fg = c->channel_group_count > 1 ? c->channel_group_count : 1;
  p->bg = c->batch_group_count > 1 ? c->batch_group_count : 1;
  p->cin_g = p->ker.dims[c->kernel_input_channel_axis];
  p->cout = p->ker.dims[c->kernel_output_channel_axis];
  if (p->cout % p->fg != 0 || p->cout % p->bg != 0) return false;
  p->cout_per_fg = p->cout / p->fg;
  p->cout_per_bg = p->cout / p->bg;
  p->n_out = p->out.dims[c->output_batch_axis];
  bool in_int = cml_dtype_is_int(in->dtype), out_int = cml_dtype_is_int(out->dtype);
  p->acc_dtype = in_int == out_int ? out->dtype : in->dtype;
  // Narrower float outputs (f32 input -> f16 output) still accumulate at the input's width.
  if (!in_int && cml_dtype_bits(out->dtype) < cml_dtype_bits(in->dtype)) p->acc_dtype = in->dtype;
  p->domain = cmlc__la_domain_of(p->acc_dtype);
  if (p->domain == CMLC__LA_DOM_NONE) return false;
  p->in_count = cml_shape_element_count(&p->in);
  p->ker_count = cml_shape_element_count(&p->ker);
  cmlc_conv_plan_fast(p, options);
  if (p->fast.enabled) return true;
  size_t es = cmlc__la_domain_size(p->domain);
  p->off_in = 0;
  p->off_ker = cmlc_conv_align(cmlc_size_of(p->in_count, es));
  p->total = cmlc_size_add(p->off_ker, cmlc_conv_align(cmlc_size_of(p->ker_count, es)));
  return true;
}

//===--- direct path ---===//

typedef struct cmlc_conv_ctx_t {
  const cmlc_conv_plan_t* p;
  const void* in;
  const void* ker;
  void* out;
  void* in_dom;
  void* ker_dom;
} cmlc_conv_ctx_t;

static void cmlc_conv_convert(const cmlc_conv_plan_t* p, const void* src, cml_dtype_t dtype,
                              void* dst, int64_t begin, int64_t end) {
  switch (p->domain) {
    case CMLC__LA_DOM_F32:
      for (int64_t i = begin; i < end; ++i) ((float*)dst)[i] = cmlc_load_f32(src, i, dtype);
      break;
    case CMLC__LA_DOM_F64:
      for (int64_t i = begin; i < end; ++i) ((double*)dst)[i] = cmlc_load_f64(src, i, dtype);
      break;
    case CMLC__LA_DOM_INT:
      for (int64_t i = begin; i < end; ++i)
        ((uint64_t*)dst)[i] = cmlc_load_int_bits(src, i, dtype, p->acc_dtype);
      break;
    default:
      break;
  }
}

static void cmlc_conv_convert_in(void* vctx, int64_t begin, int64_t end, int thread_index) {
  (void)thread_index;
  cmlc_conv_ctx_t* c = vctx;
  cmlc_conv_convert(c->p, c->in, c->p->in.dtype, c->in_dom, begin, end);
}

static void cmlc_conv_convert_ker(void* vctx, int64_t begin, int64_t end, int thread_index) {
  (void)thread_index;
  cmlc_conv_ctx_t* c = vctx;
  cmlc_conv_convert(c->p, c->ker, c->p->ker.dtype, c->ker_dom, begin, end);
}

// One output element's sum in domain type T (float, double or uint64_t).
#define CMLC_CONV_SUM(T)                                                                       \
  do {                                                                                         \
    const T* x = (const T*)c->in_dom;                                                          \
    const T* w = (const T*)c->ker_dom;                                                         \
    T acc = 0;                                                                                 \
    for (;;) {                                                                                 \
      bool valid = true;                                                                       \
      int64_t xoff = in_base, woff = ker_base;                                                 \
      for (int32_t d = 0; d < S && valid; ++d) {                                               \
        int64_t pos =                                                                          \
            y[d] * cfg->strides[d] + kidx[d] * cfg->kernel_dilations[d] - cfg->padding_low[d]; \
        int64_t idil = cfg->input_dilations[d];                                                \
        if (pos < 0 || pos > (in_dims[d] - 1) * idil || pos % idil != 0) {                     \
          valid = false;                                                                       \
        } else {                                                                               \
          xoff += (pos / idil) * in_sp_strides[d];                                             \
          woff += kidx[d] * ker_sp_strides[d];                                                 \
        }                                                                                      \
      }                                                                                        \
      if (valid) {                                                                             \
        for (int64_t ci = 0; ci < cin_g; ++ci)                                                 \
          acc += x[xoff + ci * in_c_stride] * w[woff + ci * ker_ic_stride];                    \
      }                                                                                        \
      int32_t d = S - 1;                                                                       \
      for (; d >= 0; --d) {                                                                    \
        if (++kidx[d] < ker_dims[d]) break;                                                    \
        kidx[d] = 0;                                                                           \
      }                                                                                        \
      if (d < 0) break;                                                                        \
    }                                                                                          \
    result_##T = acc;                                                                          \
  } while (0)

static void cmlc_conv_compute(void* vctx, int64_t begin, int64_t end, int thread_index) {
  (void)thread_index;
  cmlc_conv_ctx_t* c = vctx;
  const cmlc_conv_plan_t* p = c->p;
  const cml_conv_config_t* cfg = p->cfg;
  const int32_t S = p->spatial;
  int64_t in_dims[CML_MAX_RANK], ker_dims[CML_MAX_RANK];
  int64_t in_sp_strides[CML_MAX_RANK], ker_sp_strides[CML_MAX_RANK];
  bool empty_kernel = false;
  for (int32_t d = 0; d < S; ++d) {
    in_dims[d] = p->in.dims[cfg->input_spatial_axes[d]];
    ker_dims[d] = p->ker.dims[cfg->kernel_spatial_axes[d]];
    in_sp_strides[d] = p->in_strides[cfg->input_spatial_axes[d]];
    ker_sp_strides[d] = p->ker_strides[cfg->kernel_spatial_axes[d]];
    empty_kernel |= ker_dims[d] == 0;
  }
  const int64_t cin_g = p->cin_g;
  const int64_t in_c_stride = p->in_strides[cfg->input_channel_axis];
  const int64_t ker_ic_stride = p->ker_strides[cfg->kernel_input_channel_axis];
  for (int64_t oi = begin; oi < end; ++oi) {
    int64_t ob =
        (oi / p->out_strides[cfg->output_batch_axis]) % p->out.dims[cfg->output_batch_axis];
    int64_t o =
        (oi / p->out_strides[cfg->output_channel_axis]) % p->out.dims[cfg->output_channel_axis];
    int64_t y[CML_MAX_RANK], kidx[CML_MAX_RANK];
    for (int32_t d = 0; d < S; ++d) {
      int64_t ax = cfg->output_spatial_axes[d];
      y[d] = (oi / p->out_strides[ax]) % p->out.dims[ax];
      kidx[d] = 0;
    }
    int64_t g = o / p->cout_per_fg;
    int64_t in_b = (o / p->cout_per_bg) * p->n_out + ob;
    int64_t in_base = in_b * p->in_strides[cfg->input_batch_axis] + g * cin_g * in_c_stride;
    int64_t ker_base = o * p->ker_strides[cfg->kernel_output_channel_axis];
    float result_float = 0;
    double result_double = 0;
    uint64_t result_uint64_t = 0;
    if (!empty_kernel) {
      switch (p->domain) {
        case CMLC__LA_DOM_F32:
          CMLC_CONV_SUM(float);
          break;
        case CMLC__LA_DOM_F64:
          CMLC_CONV_SUM(double);
          break;
        case CMLC__LA_DOM_INT:
          CMLC_CONV_SUM(uint64_t);
          break;
        default:
          break;
      }
    }
    switch (p->domain) {
      case CMLC__LA_DOM_F32:
        cmlc_store_f64(c->out, oi, p->out.dtype, result_float);
        break;
      case CMLC__LA_DOM_F64:
        cmlc_store_f64(c->out, oi, p->out.dtype, result_double);
        break;
      case CMLC__LA_DOM_INT:
        cmlc_store_int(c->out, oi, p->out.dtype, cmlc_int_extend(result_uint64_t, p->acc_dtype),
                       p->acc_dtype);
        break;
      default:
        break;
    }
  }
}

//===--- fast path: im2col + packed GEMM ---===//

typedef struct cmlc_conv_fast_ctx_t {
  const cmlc_conv_plan_t* p;
  const void* in;
  const void* ker;
  void* out;
  char* scratch;
  void* ker_dom;          // [G, K, Ng] (depthwise: [taps, C_out]) in the domain
  const int64_t* zero;    // {0}: batch offsets of both GEMM operands
  const int64_t* a_rows;  // r * K (tile entries)
  const int64_t* a_cols;  // k (K entries)
  const int64_t* b_rows;  // k * Ng (K entries)
  const int64_t* b_cols;  // n (Ng entries)
  // Per spatial axis d: for output coordinate y and tap k, tap_tables[d][y * kd + k] is the
  // input offset along d (or -1: padding or an input-dilation hole).
  const int64_t* tap_tables[CML_MAX_RANK];
  // Geometry (spatial axis d in the config's order).
  int64_t in_dims[CML_MAX_RANK], ker_dims[CML_MAX_RANK], out_dims[CML_MAX_RANK];
  int64_t in_sp_strides[CML_MAX_RANK], ker_sp_strides[CML_MAX_RANK];
  int64_t out_sp_strides[CML_MAX_RANK];
} cmlc_conv_fast_ctx_t;

// The kernel offset of tap |tap| (row-major over the kernel's spatial axes).
static int64_t cmlc_conv_fast_tap_offset(const cmlc_conv_fast_ctx_t* c, int64_t tap) {
  int64_t off = 0;
  for (int32_t d = c->p->spatial - 1; d >= 0; --d) {
    off += (tap % c->ker_dims[d]) * c->ker_sp_strides[d];
    tap /= c->ker_dims[d];
  }
  return off;
}

// Kernel rows [begin, end) into the domain array: the GEMM path's [G, K, Ng] (rows over
// (group, k)), or the depthwise path's [taps, C_out] (rows over taps).
static void cmlc_conv_fast_convert_ker(void* vctx, int64_t begin, int64_t end, int thread_index) {
  (void)thread_index;
  cmlc_conv_fast_ctx_t* c = vctx;
  const cmlc_conv_plan_t* p = c->p;
  const cmlc_conv_fast_t* f = &p->fast;
  const cml_conv_config_t* cfg = p->cfg;
  int64_t oc_stride = p->ker_strides[cfg->kernel_output_channel_axis];
  int64_t ic_stride = p->ker_strides[cfg->kernel_input_channel_axis];
  int64_t width = f->depthwise ? p->cout : f->ng;
  for (int64_t row = begin; row < end; ++row) {
    int64_t off;
    if (f->depthwise) {
      off = cmlc_conv_fast_tap_offset(c, row);
    } else {
      int64_t j = row / f->k, kk = row % f->k;
      int64_t tap = f->ci_minor ? kk / f->cg : kk % f->ks;
      int64_t ci = f->ci_minor ? kk % f->cg : kk / f->ks;
      off = ci * ic_stride + j * f->ng * oc_stride + cmlc_conv_fast_tap_offset(c, tap);
    }
    if (f->domain == CMLC__LA_DOM_F32) {
      float* dst = (float*)c->ker_dom + row * width;
      for (int64_t n = 0; n < width; ++n)
        dst[n] = cmlc_load_f32(c->ker, off + n * oc_stride, p->ker.dtype);
    } else {
      double* dst = (double*)c->ker_dom + row * width;
      for (int64_t n = 0; n < width; ++n)
        dst[n] = cmlc_load_f64(c->ker, off + n * oc_stride, p->ker.dtype);
    }
  }
}

// Fills the per-axis tap tables (shared scratch).
static void cmlc_conv_fast_tap_tables(cmlc_conv_fast_ctx_t* c, int64_t* t) {
  const cml_conv_config_t* cfg = c->p->cfg;
  for (int32_t d = 0; d < c->p->spatial; ++d) {
    c->tap_tables[d] = t;
    int64_t idil = cfg->input_dilations[d], kdil = cfg->kernel_dilations[d];
    int64_t limit = (c->in_dims[d] - 1) * idil;
    for (int64_t y = 0; y < c->out_dims[d]; ++y) {
      int64_t base = y * cfg->strides[d] - cfg->padding_low[d];
      for (int64_t k = 0; k < c->ker_dims[d]; ++k) {
        int64_t pos = base + k * kdil;
        bool ok = pos >= 0 && pos <= limit && pos % idil == 0;
        t[k] = ok ? (pos / idil) * c->in_sp_strides[d] : -1;
      }
      t += c->ker_dims[d];
    }
  }
}

// Input element offsets of every kernel tap of output row |row| into |offs| (-1 where the tap
// reads padding or an input-dilation hole), relative to the row's batch/channel base. Returns
// the output offset of the row (channel 0).
static int64_t cmlc_conv_fast_row(const cmlc_conv_fast_ctx_t* c, int64_t row, int64_t* offs) {
  const cmlc_conv_plan_t* p = c->p;
  int32_t S = p->spatial;
  int64_t b = row / p->fast.positions, rest = row % p->fast.positions;
  int64_t y[CML_MAX_RANK];
  for (int32_t d = S - 1; d >= 0; --d) {
    y[d] = rest % c->out_dims[d];
    rest /= c->out_dims[d];
  }
  int64_t oo = b * p->out_strides[p->cfg->output_batch_axis];
  for (int32_t d = 0; d < S; ++d) oo += y[d] * c->out_sp_strides[d];
  // Combine the axes' taps in row-major tap order, expanding in place from the back.
  offs[0] = 0;
  int64_t count = 1;
  for (int32_t d = 0; d < S; ++d) {
    int64_t kd = c->ker_dims[d];
    const int64_t* t = c->tap_tables[d] + y[d] * kd;
    for (int64_t old = count - 1; old >= 0; --old) {
      int64_t v = offs[old];
      for (int64_t k = kd - 1; k >= 0; --k)
        offs[old * kd + k] = (v < 0 || t[k] < 0) ? -1 : v + t[k];
    }
    count *= kd;
  }
  return oo;
}

// im2col of one row into |dst| (K elements), element type T, loader LOAD for other dtypes.
#define CMLC_CONV_IM2COL(T, SUFFIX, LOAD)                                                          \
  static void cmlc_conv_im2col_##SUFFIX(const cmlc_conv_fast_ctx_t* c, int64_t base,               \
                                        const int64_t* offs, T* dst) {                             \
    const cmlc_conv_fast_t* f = &c->p->fast;                                                       \
    const cml_dtype_t dtype = c->p->in.dtype;                                                      \
    const bool native = dtype == (sizeof(T) == 4 ? CML_DTYPE_F32 : CML_DTYPE_F64);                 \
    const T* x = (const T*)c->in + base;                                                           \
    const int64_t cs = c->p->in_strides[c->p->cfg->input_channel_axis];                            \
    const int64_t cg = f->cg, ks = f->ks;                                                          \
    if (f->ci_minor) {                                                                             \
      for (int64_t tap = 0; tap < ks; ++tap) {                                                     \
        T* d = dst + tap * cg;                                                                     \
        int64_t off = offs[tap];                                                                   \
        if (off < 0) {                                                                             \
          for (int64_t ci = 0; ci < cg; ++ci) d[ci] = 0;                                           \
        } else if (native && cs == 1) {                                                            \
          /* Taps whose channel runs are adjacent in memory (kw neighbours of NHWC) copy as one    \
             run: a 7x7 stem with 3 channels copies 7 runs of 21 values, not 49 of 3. */           \
          int64_t run = 1;                                                                         \
          while (tap + run < ks && offs[tap + run] == off + run * cg) ++run;                       \
          const T* s_ = x + off;                                                                   \
          memcpy(d, s_, (size_t)(run * cg) * sizeof(T));                                           \
          tap += run - 1;                                                                          \
        } else if (native) {                                                                       \
          for (int64_t ci = 0; ci < cg; ++ci) d[ci] = x[off + ci * cs];                            \
        } else {                                                                                   \
          for (int64_t ci = 0; ci < cg; ++ci) d[ci] = (T)LOAD(c->in, base + off + ci * cs, dtype); \
        }                                                                                          \
      }                                                                                            \
      return;                                                                                      \
    }                                                                                              \
    for (int64_t ci = 0; ci < cg; ++ci) {                                                          \
      T* d = dst + ci * ks;                                                                        \
      int64_t cbase = ci * cs;                                                                     \
      if (native) {                                                                                \
        for (int64_t tap = 0; tap < ks; ++tap)                                                     \
          d[tap] = offs[tap] < 0 ? (T)0 : x[cbase + offs[tap]];                                    \
      } else {                                                                                     \
        for (int64_t tap = 0; tap < ks; ++tap)                                                     \
          d[tap] = offs[tap] < 0 ? (T)0 : (T)LOAD(c->in, base + cbase + offs[tap], dtype);         \
      }                                                                                            \
    }                                                                                              \
  }

CMLC_CONV_IM2COL(float, f32, cmlc_load_f32)
CMLC_CONV_IM2COL(double, f64, cmlc_load_f64)
#undef CMLC_CONV_IM2COL

// GEMM path tasks over the flattened (group, tile) range: im2col, GEMM, scatter.
static void cmlc_conv_fast_task(void* vctx, int64_t begin, int64_t end, int thread_index) {
  cmlc_conv_fast_ctx_t* c = vctx;
  const cmlc_conv_plan_t* p = c->p;
  const cmlc_conv_fast_t* f = &p->fast;
  const cml_conv_config_t* cfg = p->cfg;
  char* th =
      cmlc_conv_scratch_at(c->scratch, f->off_threads + (size_t)thread_index * f->thread_bytes);
  int64_t* offs = (int64_t*)(th + f->th_offs);
  int64_t* rowoff = (int64_t*)(th + f->th_rowoff);
  int64_t in_b_stride = p->in_strides[cfg->input_batch_axis];
  int64_t in_c_stride = p->in_strides[cfg->input_channel_axis];
  int64_t out_c_stride = p->out_strides[cfg->output_channel_axis];
  bool f32 = f->domain == CMLC__LA_DOM_F32;
  for (int64_t task = begin; task < end; ++task) {
    int64_t j = task / f->tiles, r0 = (task % f->tiles) * f->tile;
    int64_t m = f->rows - r0 < f->tile ? f->rows - r0 : f->tile;
    const void* a = f->a_direct ? (const char*)c->in + (size_t)(r0 * f->k) * f->es
                                : (const void*)(th + f->th_a);
    void* cbuf = f->out_direct ? (char*)c->out + (size_t)(r0 * f->ng) * f->es : th + f->th_c;
    for (int64_t r = 0; r < m && f->a_direct && !f->out_direct; ++r)
      rowoff[r] = cmlc_conv_fast_row(c, r0 + r, offs);
    for (int64_t r = 0; r < m && !f->a_direct; ++r) {
      int64_t row = r0 + r;
      int64_t b = row / f->positions;
      int64_t in_b = f->batch_grouped ? j * p->n_out + b : b;
      int64_t base = in_b * in_b_stride + (f->batch_grouped ? 0 : j * f->cg * in_c_stride);
      rowoff[r] = cmlc_conv_fast_row(c, row, offs);
      if (f32) {
        cmlc_conv_im2col_f32(c, base, offs, (float*)(th + f->th_a) + r * f->k);
      } else {
        cmlc_conv_im2col_f64(c, base, offs, (double*)(th + f->th_a) + r * f->k);
      }
    }
    cmlc__gemm_operand_t ga = {a, f32 ? CML_DTYPE_F32 : CML_DTYPE_F64, c->zero, c->a_rows,
                               c->a_cols};
    cmlc__gemm_operand_t gb = {(const char*)c->ker_dom + (size_t)(j * f->k * f->ng) * f->es,
                               f32 ? CML_DTYPE_F32 : CML_DTYPE_F64, c->zero, c->b_rows, c->b_cols};
    if (f32) {
      cmlc__gemm_problem_t g = {1, m, f->ng, f->k, ga, gb, cbuf};
      cmlc__gemm_f32(&g, f->isa, NULL, th + f->th_gemm, 1);
    } else {
      cmlc__gemm_f64_problem_t g = {1, m, f->ng, f->k, ga, gb, cbuf};
      cmlc__gemm_f64(&g, f->isa, NULL, th + f->th_gemm, 1);
    }
    if (f->out_direct) continue;
    for (int64_t r = 0; r < m; ++r) {
      int64_t oo = rowoff[r] + j * f->ng * out_c_stride;
      if (f32) {
        const float* src = (const float*)cbuf + r * f->ng;
        if (p->out.dtype == CML_DTYPE_F32) {
          float* o = (float*)c->out + oo;
          for (int64_t n = 0; n < f->ng; ++n) o[n * out_c_stride] = src[n];
        } else if (p->narrow_out && out_c_stride == 1) {
          p->narrow_out((uint16_t*)c->out + oo, src, f->ng);
        } else {
          for (int64_t n = 0; n < f->ng; ++n)
            cmlc_store_f64(c->out, oo + n * out_c_stride, p->out.dtype, src[n]);
        }
      } else {
        const double* src = (const double*)cbuf + r * f->ng;
        if (p->out.dtype == CML_DTYPE_F64) {
          double* o = (double*)c->out + oo;
          for (int64_t n = 0; n < f->ng; ++n) o[n * out_c_stride] = src[n];
        } else {
          for (int64_t n = 0; n < f->ng; ++n)
            cmlc_store_f64(c->out, oo + n * out_c_stride, p->out.dtype, src[n]);
        }
      }
    }
  }
}

// Depthwise path: per output row, acc[o] += x[group(o)] * w[tap, o] over the valid taps in
// row-major order (one fixed order per output), then one store per output.
#define CMLC_CONV_DEPTHWISE(T, SUFFIX, LOAD)                                                    \
  static void cmlc_conv_depthwise_##SUFFIX(cmlc_conv_fast_ctx_t* c, int64_t row, int64_t* offs, \
                                           T* acc) {                                            \
    const cmlc_conv_plan_t* p = c->p;                                                           \
    const cmlc_conv_fast_t* f = &p->fast;                                                       \
    const cml_conv_config_t* cfg = p->cfg;                                                      \
    const cml_dtype_t dtype = p->in.dtype;                                                      \
    const bool native = dtype == (sizeof(T) == 4 ? CML_DTYPE_F32 : CML_DTYPE_F64);              \
    const int64_t cout = p->cout, ng = f->ng;                                                   \
    const int64_t cs = p->in_strides[cfg->input_channel_axis];                                  \
    int64_t oo = cmlc_conv_fast_row(c, row, offs);                                              \
    int64_t base = (row / f->positions) * p->in_strides[cfg->input_batch_axis];                 \
    for (int64_t o = 0; o < cout; ++o) acc[o] = 0;                                              \
    for (int64_t tap = 0; tap < f->ks; ++tap) {                                                 \
      if (offs[tap] < 0) continue;                                                              \
      const T* w = (const T*)c->ker_dom + tap * cout;                                           \
      int64_t xb = base + offs[tap];                                                            \
      if (native && cs == 1 && ng == 1) {                                                       \
        const T* x = (const T*)c->in + xb;                                                      \
        for (int64_t o = 0; o < cout; ++o) acc[o] += x[o] * w[o];                               \
      } else if (native) {                                                                      \
        const T* x = (const T*)c->in + xb;                                                      \
        for (int64_t o = 0; o < cout; ++o) acc[o] += x[(o / ng) * cs] * w[o];                   \
      } else {                                                                                  \
        for (int64_t o = 0; o < cout; ++o)                                                      \
          acc[o] += (T)LOAD(c->in, xb + (o / ng) * cs, dtype) * w[o];                           \
      }                                                                                         \
    }                                                                                           \
    int64_t ocs = p->out_strides[cfg->output_channel_axis];                                     \
    if (p->out.dtype == (sizeof(T) == 4 ? CML_DTYPE_F32 : CML_DTYPE_F64)) {                     \
      T* out = (T*)c->out + oo;                                                                 \
      for (int64_t o = 0; o < cout; ++o) out[o * ocs] = acc[o];                                 \
    } else {                                                                                    \
      for (int64_t o = 0; o < cout; ++o)                                                        \
        cmlc_store_f64(c->out, oo + o * ocs, p->out.dtype, acc[o]);                             \
    }                                                                                           \
  }

CMLC_CONV_DEPTHWISE(float, f32, cmlc_load_f32)
CMLC_CONV_DEPTHWISE(double, f64, cmlc_load_f64)
#undef CMLC_CONV_DEPTHWISE

static void cmlc_conv_depthwise_task(void* vctx, int64_t begin, int64_t end, int thread_index) {
  cmlc_conv_fast_ctx_t* c = vctx;
  const cmlc_conv_fast_t* f = &c->p->fast;
  char* th =
      cmlc_conv_scratch_at(c->scratch, f->off_threads + (size_t)thread_index * f->thread_bytes);
  int64_t* offs = (int64_t*)(th + f->th_offs);
  for (int64_t task = begin; task < end; ++task) {
    int64_t r0 = task * f->tile;
    int64_t r1 = r0 + f->tile < f->rows ? r0 + f->tile : f->rows;
    for (int64_t row = r0; row < r1; ++row) {
      if (f->domain == CMLC__LA_DOM_F32) {
        cmlc_conv_depthwise_f32(c, row, offs, (float*)(th + f->th_c));
      } else {
        cmlc_conv_depthwise_f64(c, row, offs, (double*)(th + f->th_c));
      }
    }
  }
}

//===--- direct 2-D kernel (AVX-512, AVX2) ---===//

#if defined(CMLC_HAVE_X86_64)
// Packs filter rows [begin, end) over (block, k) into [blocks][K][ldw] f32, k = (ky, kx, ci),
// Phased packing: the kernel tap (ky, kx) of packed tap |t| (phases (ry, rx) in order, each
// with its taps ry + d_ph_h * m, rx + d_ph_w * n in (m, n) order).
static void cmlc_conv_phase_tap(const cmlc_conv_fast_t* f, int64_t kh, int64_t kw, int64_t t,
                                int64_t* ky, int64_t* kx) {
  for (int64_t ry = 0; ry < f->d_ph_h; ++ry) {
    const int64_t mh = cmlc_conv_phase_taps(kh, ry, f->d_ph_h);
    for (int64_t rx = 0; rx < f->d_ph_w; ++rx) {
      const int64_t mw = cmlc_conv_phase_taps(kw, rx, f->d_ph_w);
      if (t < mh * mw) {
        *ky = ry + (t / mw) * f->d_ph_h;
        *kx = rx + (t % mw) * f->d_ph_w;
        return;
      }
      t -= mh * mw;
    }
  }
}

// ldw = 16 x the vectors the block needs, zero past C_out.
static void cmlc_conv_direct_pack(void* vctx, int64_t begin, int64_t end, int thread_index) {
  (void)thread_index;
  cmlc_conv_fast_ctx_t* c = vctx;
  const cmlc_conv_plan_t* p = c->p;
  const cmlc_conv_fast_t* f = &p->fast;
  const cml_conv_config_t* cfg = p->cfg;
  const int64_t oc_stride = p->ker_strides[cfg->kernel_output_channel_axis];
  const int64_t ic_stride = p->ker_strides[cfg->kernel_input_channel_axis];
  const int64_t kw = c->ker_dims[1], cg = f->cg;
  for (int64_t row = begin; row < end; ++row) {
    int64_t blk = row / f->k, kk = row % f->k;
    int64_t o0 = blk * CMLC_CONV_DIRECT_COLS;
    int64_t cols = p->cout - o0 < CMLC_CONV_DIRECT_COLS ? p->cout - o0 : CMLC_CONV_DIRECT_COLS;
    int64_t ldw = (cols + 15) / 16 * 16;
    int64_t ci = kk % cg, tap = kk / cg;
    int64_t ky = tap / kw, kx = tap % kw;
    if (f->d_phased) cmlc_conv_phase_tap(f, c->ker_dims[0], kw, tap, &ky, &kx);
    int64_t off =
        ky * c->ker_sp_strides[0] + kx * c->ker_sp_strides[1] + ci * ic_stride + o0 * oc_stride;
    float* dst = (float*)c->ker_dom + blk * f->k * CMLC_CONV_DIRECT_COLS + kk * ldw;
    for (int64_t n = 0; n < cols; ++n)
      dst[n] = cmlc_load_f32(c->ker, off + n * oc_stride, p->ker.dtype);
    for (int64_t n = cols; n < ldw; ++n) dst[n] = 0;
  }
}

// Channels apart, width contiguous (NCHW): |n| pixels of |cg| channels (channel rows |cs| apart
// from |src|) into dst[j * cg + ci], a few channel rows at a time, each read in order.
static void cmlc_conv_interleave_channels(const float* src, int64_t cs, int64_t n, int64_t cg,
                                          float* dst) {
  for (int64_t c0 = 0; c0 < cg; c0 += CMLC_CONV_DIRECT_CHANNEL_RUN) {
    const int64_t c1 =
        cg - c0 < CMLC_CONV_DIRECT_CHANNEL_RUN ? cg : c0 + CMLC_CONV_DIRECT_CHANNEL_RUN;
    for (int64_t j = 0; j < n; ++j) {
      float* d = dst + j * cg;
      for (int64_t ci = c0; ci < c1; ++ci) d[ci] = src[ci * cs + j];
    }
  }
}

// Gathers the zero-padded input strip of the output rows from |oy0| of image |b|:
// strip[i][j][ci] is the input at dilated position (oy0 * sh - pad_h + i, j - pad_w), zero in
// padding and input-dilation holes, for i < |in_rows|.
static void cmlc_conv_direct_strip(const cmlc_conv_fast_ctx_t* c, int64_t b, int64_t oy0,
                                   int64_t in_rows, float* strip) {
  const cmlc_conv_plan_t* p = c->p;
  const cmlc_conv_fast_t* f = &p->fast;
  const cml_conv_config_t* cfg = p->cfg;
  const int64_t cg = f->cg, len = f->d_len;
  const int64_t cs = p->in_strides[cfg->input_channel_axis];
  const int64_t ih = c->in_dims[0], iw = c->in_dims[1];
  const int64_t idh = cfg->input_dilations[0], idw = cfg->input_dilations[1];
  const bool native = p->in.dtype == CML_DTYPE_F32;
  const int64_t base = b * p->in_strides[cfg->input_batch_axis];
  // Width positions j with an input column: pos = j - pad_w in [0, (iw - 1) * idw].
  const int64_t pad_w = cfg->padding_low[1];
  int64_t j0 = pad_w > 0 ? pad_w : 0;
  int64_t j1 = (iw - 1) * idw + pad_w + 1;
  if (j1 > len) j1 = len;
  if (j0 > j1) j0 = j1;
  for (int64_t i = 0; i < in_rows; ++i) {
    float* dst = strip + i * len * cg;
    int64_t pos = oy0 * cfg->strides[0] - cfg->padding_low[0] + i;
    if (pos < 0 || pos > (ih - 1) * idh || pos % idh != 0) {
      memset(dst, 0, (size_t)(len * cg) * sizeof(float));
      continue;
    }
    int64_t rbase = base + (pos / idh) * c->in_sp_strides[0];
    if (j0 > 0) memset(dst, 0, (size_t)(j0 * cg) * sizeof(float));
    if (j1 < len) memset(dst + j1 * cg, 0, (size_t)((len - j1) * cg) * sizeof(float));
    if (native && cs == 1 && idw == 1 && c->in_sp_strides[1] == cg) {
      if (j1 > j0)
        memcpy(dst + j0 * cg, (const float*)c->in + rbase + (j0 - pad_w) * cg,
               (size_t)((j1 - j0) * cg) * sizeof(float));
      continue;
    }
    if (p->widen_in && cs == 1 && idw == 1 && c->in_sp_strides[1] == cg) {
      if (j1 > j0)
        p->widen_in(dst + j0 * cg, (const uint16_t*)c->in + rbase + (j0 - pad_w) * cg,
                    (j1 - j0) * cg);
      continue;
    }
    if (native && idw == 1 && c->in_sp_strides[1] == 1 && cs != 1) {
      cmlc_conv_interleave_channels((const float*)c->in + rbase + (j0 - pad_w), cs, j1 - j0, cg,
                                    dst + j0 * cg);
      continue;
    }
    for (int64_t j = j0; j < j1; ++j) {
      float* d = dst + j * cg;
      int64_t q = j - pad_w;
      if (q % idw != 0) {
        for (int64_t ci = 0; ci < cg; ++ci) d[ci] = 0;
        continue;
      }
      int64_t xo = rbase + (q / idw) * c->in_sp_strides[1];
      if (native) {
        const float* x = (const float*)c->in + xo;
        for (int64_t ci = 0; ci < cg; ++ci) d[ci] = x[ci * cs];
      } else {
        for (int64_t ci = 0; ci < cg; ++ci) d[ci] = cmlc_load_f32(c->in, xo + ci * cs, p->in.dtype);
      }
    }
  }
}

// Writes a task's output rows from the row buffer |out| ([rows * ow][cout] f32) into the output
// (any layout and dtype) at |obase|.
static void cmlc_conv_direct_scatter(const cmlc_conv_fast_ctx_t* c, const float* out, int64_t obase,
                                     int64_t rows) {
  const cmlc_conv_plan_t* p = c->p;
  const cml_conv_config_t* cfg = p->cfg;
  const int64_t ow = c->out_dims[1], cout = p->cout;
  const int64_t ocs = p->out_strides[cfg->output_channel_axis];
  const int64_t out_row = c->out_sp_strides[0], out_col = c->out_sp_strides[1];
  const int64_t pixels_total = rows * ow;
  if (p->out.dtype == CML_DTYPE_F32 && out_col == 1 && ocs != 1) {
    // Channels apart, width contiguous (NCHW): each output row channel by channel, a few
    // channels at a time, so that the writes run along the row.
    for (int64_t y = 0; y < rows; ++y) {
      const float* src = out + y * ow * cout;
      float* o = (float*)c->out + obase + y * out_row;
      for (int64_t n0 = 0; n0 < cout; n0 += CMLC_CONV_DIRECT_CHANNEL_RUN) {
        const int64_t n1 =
            cout - n0 < CMLC_CONV_DIRECT_CHANNEL_RUN ? cout : n0 + CMLC_CONV_DIRECT_CHANNEL_RUN;
        for (int64_t xx = 0; xx < ow; ++xx) {
          for (int64_t n = n0; n < n1; ++n) o[n * ocs + xx] = src[xx * cout + n];
        }
      }
    }
    return;
  }
  for (int64_t q = 0; q < pixels_total; ++q) {
    const float* src = out + q * cout;
    int64_t oo = obase + (q / ow) * c->out_sp_strides[0] + (q % ow) * c->out_sp_strides[1];
    if (p->out.dtype == CML_DTYPE_F32) {
      float* o = (float*)c->out + oo;
      for (int64_t n = 0; n < cout; ++n) o[n * ocs] = src[n];
    } else if (p->narrow_out && ocs == 1) {
      p->narrow_out((uint16_t*)c->out + oo, src, cout);
    } else {
      for (int64_t n = 0; n < cout; ++n) cmlc_store_f64(c->out, oo + n * ocs, p->out.dtype, src[n]);
    }
  }
}

// Phases: the strip of undilated input rows [row0, row0 + rows) and columns
// [d_ph_col0, d_ph_col0 + d_ph_cols) of image |b| ([rows][d_ph_cols][cg] f32, zero outside the
// input).
static void cmlc_conv_direct_phase_strip(const cmlc_conv_fast_ctx_t* c, int64_t b, int64_t row0,
                                         int64_t rows, float* strip) {
  const cmlc_conv_plan_t* p = c->p;
  const cmlc_conv_fast_t* f = &p->fast;
  const cml_conv_config_t* cfg = p->cfg;
  const int64_t cg = f->cg, len = f->d_ph_cols, col0 = f->d_ph_col0;
  const int64_t cs = p->in_strides[cfg->input_channel_axis];
  const int64_t ih = c->in_dims[0], iw = c->in_dims[1];
  const int64_t rs = c->in_sp_strides[0], ws = c->in_sp_strides[1];
  const bool native = p->in.dtype == CML_DTYPE_F32;
  const int64_t base = b * p->in_strides[cfg->input_batch_axis];
  // Strip columns [j0, j1) hold input columns.
  int64_t j0 = -col0 > 0 ? -col0 : 0, j1 = iw - col0 < len ? iw - col0 : len;
  if (j0 > j1) j0 = j1;
  for (int64_t i = 0; i < rows; ++i) {
    float* dst = strip + i * len * cg;
    const int64_t y = row0 + i;
    if (y < 0 || y >= ih) {
      memset(dst, 0, (size_t)(len * cg) * sizeof(float));
      continue;
    }
    if (j0 > 0) memset(dst, 0, (size_t)(j0 * cg) * sizeof(float));
    if (j1 < len) memset(dst + j1 * cg, 0, (size_t)((len - j1) * cg) * sizeof(float));
    const int64_t rbase = base + y * rs + (col0 + j0) * ws;
    const int64_t n = j1 - j0;
    if (n <= 0) continue;
    if (cs == 1 && ws == cg) {
      if (native) {
        memcpy(dst + j0 * cg, (const float*)c->in + rbase, (size_t)(n * cg) * sizeof(float));
        continue;
      }
      if (p->widen_in) {
        p->widen_in(dst + j0 * cg, (const uint16_t*)c->in + rbase, n * cg);
        continue;
      }
    }
    if (native && ws == 1) {
      cmlc_conv_interleave_channels((const float*)c->in + rbase, cs, n, cg, dst + j0 * cg);
      continue;
    }
    for (int64_t j = 0; j < n; ++j) {
      float* d = dst + (j0 + j) * cg;
      const int64_t xo = rbase + j * ws;
      if (native) {
        const float* x = (const float*)c->in + xo;
        for (int64_t ci = 0; ci < cg; ++ci) d[ci] = x[ci * cs];
      } else {
        for (int64_t ci = 0; ci < cg; ++ci) d[ci] = cmlc_load_f32(c->in, xo + ci * cs, p->in.dtype);
      }
    }
  }
}

// Phased tasks over (image, block of output rows): the strip of undilated rows, then per
// channel block, output row and column phase, the pixels of that phase (columns
// ox0, ox0 + d_ph_w, ... whose undilated input columns follow each other) against the phase's
// sub-filter, in chunks of d_ph_tpc taps, each chunk's sums added to those of the chunks before.
static void cmlc_conv_direct_phase_task(void* vctx, int64_t begin, int64_t end, int thread_index) {
  cmlc_conv_fast_ctx_t* c = vctx;
  const cmlc_conv_plan_t* p = c->p;
  const cmlc_conv_fast_t* f = &p->fast;
  const cml_conv_config_t* cfg = p->cfg;
  char* th =
      cmlc_conv_scratch_at(c->scratch, f->off_threads + (size_t)thread_index * f->thread_bytes);
  float* strip = (float*)(th + f->th_strip);
  const int64_t oh = c->out_dims[0], ow = c->out_dims[1], cout = p->cout, cg = f->cg;
  const int64_t kh = c->ker_dims[0], kw = c->ker_dims[1];
  const int64_t dh = f->d_ph_h, dw = f->d_ph_w;
  const int64_t pad_h = cfg->padding_low[0], pad_w = cfg->padding_low[1];
  const int64_t ocs = p->out_strides[cfg->output_channel_axis];
  const int64_t out_row = c->out_sp_strides[0], out_col = c->out_sp_strides[1];
  const int64_t row_blocks = (oh + f->tile - 1) / f->tile;
  const int64_t x_row = f->d_ph_cols * cg;
  cmlc__conv_direct_args_t a;
  a.channels = cg;
  a.x_ky = x_row;
  a.x_kx = cg;
  a.c0 = 0;
  a.c1 = cg;
  for (int64_t task = begin; task < end; ++task) {
    const int64_t b = task / row_blocks, oy0 = (task % row_blocks) * f->tile;
    const int64_t rows = oh - oy0 < f->tile ? oh - oy0 : f->tile;
    const int64_t row0 = cmlc_conv_ceil_div(oy0 - pad_h, dh);
    const int64_t row1 = cmlc_conv_floor_div(oy0 + rows - 1 + kh - 1 - pad_h, dh) + 1;
    if (row1 > row0) cmlc_conv_direct_phase_strip(c, b, row0, row1 - row0, strip);
    const int64_t obase = b * p->out_strides[cfg->output_batch_axis] + oy0 * out_row;
    float* out = f->direct_out ? (float*)c->out + obase : (float*)(th + f->th_c);
    for (int64_t blk = 0; blk < f->d_blocks; ++blk) {
      const int64_t o0 = blk * CMLC_CONV_DIRECT_COLS;
      const int cols = (int)(cout - o0 < CMLC_CONV_DIRECT_COLS ? cout - o0 : CMLC_CONV_DIRECT_COLS);
      a.ldw = (cols + 15) / 16 * 16;
      const float* wb = (const float*)c->ker_dom + blk * f->k * CMLC_CONV_DIRECT_COLS;
      float* ob = out + o0 * (f->direct_out ? ocs : 1);
      for (int64_t y = 0; y < rows; ++y) {
        const int64_t oy = oy0 + y;
        const int64_t ry = cmlc_conv_mod(pad_h - oy, dh);
        const int64_t mh = cmlc_conv_phase_taps(kh, ry, dh);
        const int64_t by = cmlc_conv_ceil_div(oy - pad_h, dh) - row0;
        // Taps of the phases before (ry, 0): every tap of the rows of residues below ry.
        int64_t before = 0;
        for (int64_t r = 0; r < ry; ++r) before += cmlc_conv_phase_taps(kh, r, dh) * kw;
        for (int64_t rx = 0; rx < dw; ++rx) {
          const int64_t mw = cmlc_conv_phase_taps(kw, rx, dw);
          const int64_t taps = mh * mw;
          const float* w0 = wb + before * cg * a.ldw;
          before += taps;
          const int64_t ox0 = cmlc_conv_mod(pad_w - rx, dw);
          if (ox0 >= ow) continue;
          const int64_t bx0 = cmlc_conv_ceil_div(ox0 - pad_w, dw) - f->d_ph_col0;
          const int64_t count = (ow - 1 - ox0) / dw + 1;
          a.kh = mh;
          a.kw = mw;
          for (int64_t q0 = 0; q0 < count; q0 += CMLC_CONV_DIRECT_PIXELS) {
            const int pixels =
                (int)(count - q0 < CMLC_CONV_DIRECT_PIXELS ? count - q0 : CMLC_CONV_DIRECT_PIXELS);
            int64_t xo[CMLC_CONV_DIRECT_PIXELS], oo[CMLC_CONV_DIRECT_PIXELS];
            for (int r = 0; r < pixels; ++r) {
              const int64_t ox = ox0 + (q0 + r) * dw;
              xo[r] = by * x_row + (bx0 + q0 + r) * cg;
              oo[r] = f->direct_out ? y * out_row + ox * out_col : (y * ow + ox) * cout;
            }
            // No taps (a phase the kernel has none in): the call writes zeros.
            int64_t t0 = 0;
            do {
              a.t0 = t0;
              a.t1 = taps - t0 < f->d_ph_tpc ? taps : t0 + f->d_ph_tpc;
              a.accumulate = t0 > 0;
              f->d_kernel(&a, strip, xo, w0 + t0 * cg * a.ldw, ob, oo, pixels, cols);
              t0 = a.t1;
            } while (t0 < taps);
          }
        }
      }
    }
    if (!f->direct_out) cmlc_conv_direct_scatter(c, out, obase, rows);
  }
}

// Tasks over (image, block of output rows): gather the strip, run the micro-kernel over every
// block of 64 channels and 6 pixels (flattened over the block's rows), and scatter the rows
// when the output is not f32 with channel stride 1.
static void cmlc_conv_direct_task(void* vctx, int64_t begin, int64_t end, int thread_index) {
  cmlc_conv_fast_ctx_t* c = vctx;
  const cmlc_conv_plan_t* p = c->p;
  const cmlc_conv_fast_t* f = &p->fast;
  const cml_conv_config_t* cfg = p->cfg;
  char* th =
      cmlc_conv_scratch_at(c->scratch, f->off_threads + (size_t)thread_index * f->thread_bytes);
  float* strip = (float*)(th + f->th_strip);
  const int64_t oh = c->out_dims[0], ow = c->out_dims[1], cout = p->cout, cg = f->cg;
  const int64_t ocs = p->out_strides[cfg->output_channel_axis];
  const int64_t row_blocks = (oh + f->tile - 1) / f->tile;
  // Pixel (y, x) of a task reads the strip (or, in place, the input) at y * x_row + x * x_col.
  int64_t x_row = cfg->strides[0] * f->d_len * cg, x_col = cfg->strides[1] * cg;
  if (f->d_in_place) {
    x_row = cfg->strides[0] * c->in_sp_strides[0];
    x_col = cfg->strides[1] * c->in_sp_strides[1];
  }
  const int64_t out_row = c->out_sp_strides[0], out_col = c->out_sp_strides[1];
  cmlc__conv_direct_args_t a;
  a.kh = c->ker_dims[0];
  a.kw = c->ker_dims[1];
  a.channels = cg;
  a.x_ky = cfg->kernel_dilations[0] * f->d_len * cg;
  a.x_kx = cfg->kernel_dilations[1] * cg;
  for (int64_t task = begin; task < end; ++task) {
    int64_t b = task / row_blocks, oy0 = (task % row_blocks) * f->tile;
    int64_t rows = oh - oy0 < f->tile ? oh - oy0 : f->tile;
    const float* x = strip;
    if (f->d_in_place) {
      // Input row oy0 * sh - pad_h, column -pad_w (pad <= 0) of image b.
      x = (const float*)c->in + b * p->in_strides[cfg->input_batch_axis] +
          (oy0 * cfg->strides[0] - cfg->padding_low[0]) * c->in_sp_strides[0] -
          cfg->padding_low[1] * c->in_sp_strides[1];
    } else {
      int64_t in_rows = (rows - 1) * cfg->strides[0] + (a.kh - 1) * cfg->kernel_dilations[0] + 1;
      cmlc_conv_direct_strip(c, b, oy0, in_rows, strip);
    }
    int64_t obase = b * p->out_strides[cfg->output_batch_axis] + oy0 * c->out_sp_strides[0];
    float* out = f->direct_out ? (float*)c->out + obase : (float*)(th + f->th_c);
    const int64_t pixels_total = rows * ow;
    if (f->d_pixels_outer) {
      // One chunk and a filter that fits L2 whole: each pixel block runs against every
      // channel block while its input values are in L1.
      a.t0 = 0;
      a.t1 = f->ks;
      a.c0 = 0;
      a.c1 = cg;
      a.accumulate = 0;
      int64_t y = 0, xx = 0;
      for (int64_t q0 = 0; q0 < pixels_total; q0 += CMLC_CONV_DIRECT_PIXELS) {
        int pixels = (int)(pixels_total - q0 < CMLC_CONV_DIRECT_PIXELS ? pixels_total - q0
                                                                       : CMLC_CONV_DIRECT_PIXELS);
        int64_t xo[CMLC_CONV_DIRECT_PIXELS], oo[CMLC_CONV_DIRECT_PIXELS];
        for (int r = 0; r < pixels; ++r) {
          xo[r] = y * x_row + xx * x_col;
          oo[r] = f->direct_out ? y * out_row + xx * out_col : (q0 + r) * cout;
          if (++xx == ow) xx = 0, ++y;
        }
        for (int64_t blk = 0; blk < f->d_blocks; ++blk) {
          int64_t o0 = blk * CMLC_CONV_DIRECT_COLS;
          int cols = (int)(cout - o0 < CMLC_CONV_DIRECT_COLS ? cout - o0 : CMLC_CONV_DIRECT_COLS);
          a.ldw = (cols + 15) / 16 * 16;
          f->d_kernel(&a, x, xo, (const float*)c->ker_dom + blk * f->k * CMLC_CONV_DIRECT_COLS,
                      out + o0 * (f->direct_out ? ocs : 1), oo, pixels, cols);
        }
      }
    }
    for (int64_t blk = 0; blk < f->d_blocks && !f->d_pixels_outer; ++blk) {
      int64_t o0 = blk * CMLC_CONV_DIRECT_COLS;
      int cols = (int)(cout - o0 < CMLC_CONV_DIRECT_COLS ? cout - o0 : CMLC_CONV_DIRECT_COLS);
      a.ldw = (cols + 15) / 16 * 16;
      const float* wb = (const float*)c->ker_dom + blk * f->k * CMLC_CONV_DIRECT_COLS;
      float* ob = out + o0 * (f->direct_out ? ocs : 1);
      // Chunk by chunk (each chunk's filter rows stay in L2 across the task's pixels), every
      // chunk after the first adding its sums to those stored by the ones before.
      for (int64_t ch = 0; ch < f->d_chunks; ++ch) {
        if (f->d_tpc > 0) {
          a.t0 = ch * f->d_tpc;
          a.t1 = a.t0 + f->d_tpc < f->ks ? a.t0 + f->d_tpc : f->ks;
          a.c0 = 0;
          a.c1 = cg;
        } else {
          a.t0 = ch / f->d_nsplit;
          a.t1 = a.t0 + 1;
          a.c0 = (ch % f->d_nsplit) * f->d_cpc;
          a.c1 = a.c0 + f->d_cpc < cg ? a.c0 + f->d_cpc : cg;
        }
        a.accumulate = ch > 0;
        const float* w = wb + (a.t0 * cg + a.c0) * a.ldw;
        // Pixel (y, xx) of the task's rows, stepped without divisions.
        int64_t y = 0, xx = 0;
        for (int64_t q0 = 0; q0 < pixels_total; q0 += CMLC_CONV_DIRECT_PIXELS) {
          int pixels = (int)(pixels_total - q0 < CMLC_CONV_DIRECT_PIXELS ? pixels_total - q0
                                                                         : CMLC_CONV_DIRECT_PIXELS);
          int64_t xo[CMLC_CONV_DIRECT_PIXELS], oo[CMLC_CONV_DIRECT_PIXELS];
          for (int r = 0; r < pixels; ++r) {
            xo[r] = y * x_row + xx * x_col;
            oo[r] = f->direct_out ? y * out_row + xx * out_col : (q0 + r) * cout;
            if (++xx == ow) xx = 0, ++y;
          }
          f->d_kernel(&a, x, xo, w, ob, oo, pixels, cols);
        }
      }
    }
    if (!f->direct_out) cmlc_conv_direct_scatter(c, out, obase, rows);
  }
}
#endif

// The context of a fast-path run (or of entry.prepare: |in| and |out| NULL, |ker_dom| the
// prepared block).
static void cmlc_conv_fast_ctx_init(cmlc_conv_fast_ctx_t* c, const cmlc_conv_plan_t* p,
                                    const void* in, const void* ker, void* out, void* scratch,
                                    void* ker_dom) {
  const cml_conv_config_t* cfg = p->cfg;
  memset(c, 0, sizeof *c);
  c->p = p;
  c->in = in;
  c->ker = ker;
  c->out = out;
  c->scratch = scratch;
  c->ker_dom = ker_dom;
  for (int32_t d = 0; d < p->spatial; ++d) {
    c->in_dims[d] = p->in.dims[cfg->input_spatial_axes[d]];
    c->ker_dims[d] = p->ker.dims[cfg->kernel_spatial_axes[d]];
    c->out_dims[d] = p->out.dims[cfg->output_spatial_axes[d]];
    c->in_sp_strides[d] = p->in_strides[cfg->input_spatial_axes[d]];
    c->ker_sp_strides[d] = p->ker_strides[cfg->kernel_spatial_axes[d]];
    c->out_sp_strides[d] = p->out_strides[cfg->output_spatial_axes[d]];
  }
}

// Bytes of the converted (or packed) kernel of a fast-path plan, and the rows over which the
// conversion runs (the direct kernel's pack over (block, k), else cmlc_conv_fast_convert_ker's).
static size_t cmlc_conv_fast_ker_bytes(const cmlc_conv_fast_t* f, int64_t cout, int64_t* rows) {
  if (f->direct) {
    *rows = f->d_blocks * f->k;
    return (size_t)(f->d_blocks * f->k * CMLC_CONV_DIRECT_COLS) * sizeof(float);
  }
  if (f->depthwise) {
    *rows = f->ks;
    return (size_t)(f->ks * cout) * f->es;
  }
  *rows = f->groups * f->k;
  return (size_t)(f->groups * f->k * f->ng) * f->es;
}

static void cmlc_conv_fast_run(const cmlc_conv_plan_t* p, const cmlc_kernel_args_t* args) {
  const cmlc_conv_fast_t* f = &p->fast;
  cmlc_conv_fast_ctx_t c;
  // A kernel prepared from a constant when the plan was built is read in place (the run only
  // reads ker_dom after converting into it, and skips the conversion then).
  const bool prepared = args->prepared != NULL;
  cmlc_conv_fast_ctx_init(&c, p, args->inputs[0], args->inputs[1], args->outputs[0], args->scratch,
                          prepared ? (void*)(uintptr_t)args->prepared
                                   : cmlc_conv_scratch_at(args->scratch, f->off_ker));
  // Tasks index per-thread blocks by thread_index: a pool wider than the plan runs inline.
  cmlc_pool_t* pool = args->pool;
  if (cmlc_pool_thread_count(pool) > f->threads) pool = NULL;
#if defined(CMLC_HAVE_X86_64)
  if (f->direct) {
    if (!prepared) cmlc_parallel_for(pool, f->d_blocks * f->k, 64, cmlc_conv_direct_pack, &c);
    cmlc_parallel_for(pool, f->tiles, 1,
                      f->d_phased ? cmlc_conv_direct_phase_task : cmlc_conv_direct_task, &c);
    return;
  }
#endif
  int64_t* t = (int64_t*)cmlc_conv_scratch_at(c.scratch, f->off_tables);
  c.zero = t;
  t[0] = 0;
  t += 1;
  c.a_rows = t;
  for (int64_t r = 0; r < f->tile; ++r) t[r] = r * f->k;
  t += f->tile;
  c.a_cols = t;
  for (int64_t k = 0; k < f->k; ++k) t[k] = k;
  t += f->k;
  c.b_rows = t;
  for (int64_t k = 0; k < f->k; ++k) t[k] = k * f->ng;
  t += f->k;
  c.b_cols = t;
  for (int64_t n = 0; n < f->ng; ++n) t[n] = n;
  cmlc_conv_fast_tap_tables(&c, (int64_t*)cmlc_conv_scratch_at(c.scratch, f->off_taps));
  if (f->depthwise) {
    if (!prepared)
      cmlc_parallel_for(pool, f->ks, 16384 / p->cout + 1, cmlc_conv_fast_convert_ker, &c);
    cmlc_parallel_for(pool, f->tiles, 1, cmlc_conv_depthwise_task, &c);
    return;
  }
  if (!prepared)
    cmlc_parallel_for(pool, f->groups * f->k, 16384 / f->ng + 1, cmlc_conv_fast_convert_ker, &c);
  cmlc_parallel_for(pool, f->groups * f->tiles, 1, cmlc_conv_fast_task, &c);
}

//===--- entry ---===//

static size_t cmlc_conv_scratch(const cml_module_t* module, const cml_ir_node_t* node,
                                const cmlc_options_t* options) {
  cmlc_conv_plan_t p;
  if (!cmlc_conv_plan(&module->values[node->inputs[0]].shape,
                      &module->values[node->inputs[1]].shape,
                      &module->values[node->first_output].shape, node->attrs, options, &p))
    return 0;
  return p.total;
}

// A constant kernel converted (and, for the direct kernel, packed) once when the plan is built
// (entry.prepare): the bytes the run would otherwise write into its scratch, so the results
// are the same either way.
static size_t cmlc_conv_prepare(const cml_module_t* module, const cml_ir_node_t* node,
                                const cmlc_options_t* options, const void* const* consts,
                                void* dst) {
  if (node->input_count != 2 || !consts[1]) return 0;
  cmlc_conv_plan_t p;
  if (!cmlc_conv_plan(&module->values[node->inputs[0]].shape,
                      &module->values[node->inputs[1]].shape,
                      &module->values[node->first_output].shape, node->attrs, options, &p) ||
      !p.fast.enabled)
    return 0;
  int64_t rows = 0;
  const size_t bytes = cmlc_conv_fast_ker_bytes(&p.fast, p.cout, &rows);
  if (bytes == 0 || !dst) return bytes;
  cmlc_conv_fast_ctx_t c;
  cmlc_conv_fast_ctx_init(&c, &p, NULL, consts[1], NULL, NULL, dst);
#if defined(CMLC_HAVE_X86_64)
  if (p.fast.direct) {
    cmlc_conv_direct_pack(&c, 0, rows, 0);
    return bytes;
  }
#endif
  cmlc_conv_fast_convert_ker(&c, 0, rows, 0);
  return bytes;
}

// The plan dump's line: which of the kernels below runs the convolution.
static void cmlc_conv_describe(const cml_module_t* module, const cml_ir_node_t* node,
                               const cmlc_options_t* options, char* buf, size_t size) {
  cmlc_conv_plan_t p;
  if (!cmlc_conv_plan(&module->values[node->inputs[0]].shape,
                      &module->values[node->inputs[1]].shape,
                      &module->values[node->first_output].shape, node->attrs, options, &p)) {
    snprintf(buf, size, "conv: no plan");
    return;
  }
  const cmlc_conv_fast_t* f = &p.fast;
  const char* how = !f->enabled    ? "element by element"
                    : f->depthwise ? "depthwise channel vectors"
                    : !f->direct   ? "im2col tiles and the GEMM"
                    : f->d_phased  ? "direct kernel, input-dilation phases"
                                   : "direct kernel";
  snprintf(buf, size, "conv: %s%s", how, p.cfg == &p.lifted ? " (1-D as 2-D)" : "");
}

static cml_status_t cmlc_conv_run(const cmlc_kernel_args_t* args) {
  cmlc_conv_plan_t p;
  if (!cmlc_conv_plan(args->input_shapes[0], args->input_shapes[1], args->output_shapes[0],
                      args->node->attrs, args->options, &p) ||
      args->scratch_size < p.total) {
    char t[3][160];
    return cml_status_make(CML_STATUS_INTERNAL,
                           "ConvGeneral: inconsistent plan for input %s, kernel %s -> %s",
                           cml_shape_format(args->input_shapes[0], t[0], sizeof t[0]),
                           cml_shape_format(args->input_shapes[1], t[1], sizeof t[1]),
                           cml_shape_format(args->output_shapes[0], t[2], sizeof t[2]));
  }
  int64_t out_count = cml_shape_element_count(&p.out);
  if (out_count == 0) return CML_OK;
  p.widen_in = p.narrow_out = NULL;
  if (p.in.dtype == CML_DTYPE_BF16 || p.in.dtype == CML_DTYPE_F16) {
    p.widen_in = cmlc_ew_simd_convert_fn(args->options, p.in.dtype, CML_DTYPE_F32);
  }
  if (p.out.dtype == CML_DTYPE_BF16 || p.out.dtype == CML_DTYPE_F16) {
    p.narrow_out = cmlc_ew_simd_convert_fn(args->options, CML_DTYPE_F32, p.out.dtype);
  }
  if (p.fast.enabled) {
    cmlc_conv_fast_run(&p, args);
    return CML_OK;
  }
  cmlc_conv_ctx_t c = {&p,
                       args->inputs[0],
                       args->inputs[1],
                       args->outputs[0],
                       cmlc_conv_scratch_at(args->scratch, p.off_in),
                       cmlc_conv_scratch_at(args->scratch, p.off_ker)};
  cmlc_parallel_for(args->pool, p.in_count, 16384, cmlc_conv_convert_in, &c);
  cmlc_parallel_for(args->pool, p.ker_count, 16384, cmlc_conv_convert_ker, &c);
  int64_t work = p.cin_g;
  for (int32_t d = 0; d < p.spatial; ++d) work *= p.ker.dims[p.cfg->kernel_spatial_axes[d]] + 1;
  int64_t chunk = 32768 / (work > 0 ? work : 1);
  cmlc_parallel_for(args->pool, out_count, chunk < 1 ? 1 : chunk, cmlc_conv_compute, &c);
  return CML_OK;
}

bool cmlc__conv_lookup(const cml_module_t* module, const cml_ir_node_t* node,
                       const cmlc_options_t* options, cmlc_kernel_entry_t* out) {
  if (node->op != CML_OP_CONV_GENERAL || node->input_count != 2) return false;
  cmlc_conv_plan_t p;
  if (!cmlc_conv_plan(&module->values[node->inputs[0]].shape,
                      &module->values[node->inputs[1]].shape,
                      &module->values[node->first_output].shape, node->attrs, options, &p))
    return false;
  out->run = cmlc_conv_run;
  out->scratch = cmlc_conv_scratch;
  out->prepare = cmlc_conv_prepare;
  out->describe = cmlc_conv_describe;
  out->in_place_input = -1;
  return true;
}
