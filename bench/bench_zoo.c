// SPDX-License-Identifier: Apache-2.0
// bench/bench_zoo.c: small models as users write them from primitives, beyond bench_nn's
// standard set: a LeNet-style CNN, a MobileNet block (depthwise 3x3 + pointwise, BN folded,
// ReLU6), a strided depthwise layer, an LSTM unrolled by a While loop, LayerNorm, softmax,
// batch-norm statistics, an embedding lookup with LayerNorm, a 3x3 convolution in PyTorch's
// NCHW/OIHW layout, a transposed (upsampling) convolution, attention from DotGeneral and
// softmax, an erf-GELU MLP, a 1-D convolution, and the pieces of LLaMA-style decoders and
// CNN heads: RMSNorm, rotary embeddings, a SwiGLU MLP, causal attention with an iota mask,
// GroupNorm, global average pooling and a cross-entropy loss; training pieces (optimizer
// updates, backward passes through cml_gradients and the batch-norm ops), data and sequence
// pieces (scans, top-k, resizing, dropout, decoding loops, hashing, grid sampling), other
// dtypes (f64, f16, int8 products) and FFT convolutions; c vs c:reference vs xla:cpu.
// Written to find what models outside the repository's own set spend time on.
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bench/bench_common.h"
#include "tools/cml/models.h"
#include "cml/autodiff.h"

enum {
  Z_LENET,
  Z_MOBILENET,
  Z_DEPTHWISE_S2,
  Z_LSTM,
  Z_LAYERNORM,
  Z_SOFTMAX,
  Z_BATCHNORM,
  Z_EMBED_LN,
  Z_CONV_NCHW,
  Z_CONV_TRANSPOSED,
  Z_ATTENTION,
  Z_GELU_MLP,
  Z_CONV1D,
  Z_RMSNORM,
  Z_ROPE,
  Z_SWIGLU,
  Z_CAUSAL_ATTENTION,
  Z_GROUPNORM,
  Z_GLOBAL_POOL,
  Z_CROSS_ENTROPY,
  Z_LENET_TRAIN,
  Z_VIT_PATCHES,
  Z_UNET_UP,
  Z_SORT_ROWS,
  Z_LAYERNORM_BF16,
  Z_MOE_GATE,
  Z_CAUSAL_DEPTHWISE_1D,
  Z_ADAM,
  Z_MAXPOOL_GRAD,
  Z_EMBED_GRAD,
  Z_LAYERNORM_GRAD,
  Z_ATTENTION_GRAD,
  Z_CUMSUM,
  Z_TOPK,
  Z_RESIZE,
  Z_DILATED_CONV,
  Z_CONV3D,
  Z_AVGPOOL,
  Z_DROPOUT,
  Z_ARGMAX_VOCAB,
  Z_KNN,
  Z_CLIP_LOSS,
  Z_GNN,
  Z_SPECTROGRAM,
  Z_CLIP_GRADS,
  Z_SPLIT_HEADS,
  Z_SMALL_BMM,
  Z_MISH,
  Z_ONEHOT_EMBED,
  Z_HUBER,
  Z_KV_STEP,
  Z_CONV_GRAD,
  Z_BN_GRAD,
  Z_BN_OPS,
  Z_F64_MATMUL,
  Z_INT8_MATMUL,
  Z_I32_MATMUL,
  Z_F16_MLP,
  Z_SOFTMAX_AXIS1,
  Z_ARGMAX_COLS,
  Z_PICK_LABELS,
  Z_GREEDY_DECODE,
  Z_BIDIR_CONCAT,
  Z_REFLECT_PAD_CONV,
  Z_FFT_CONV,
  Z_GROUPED_CONV,
  Z_SE_BLOCK,
  Z_GRID_SAMPLE,
  Z_WAV_STEM,
  Z_CONVT1D,
  Z_HASH_HIST,
  Z_TRANSPOSE3D,
  Z_FAKE_QUANT,
  Z_BCE,
  Z_LAYER_SCAN,
  Z_EMBED_BAG,
  Z_EINSUM_BHQK,
  Z_F64_SUMSQ,
  Z_SORT_AXIS0,
  Z_ARGSORT,
  Z_INTERIOR_PAD,
  Z_FLIP_HW,
  Z_TRANSPOSE_2D,
  Z_STRIDED_SLICE,
  Z_MIDDLE_REDUCE,
  Z_INT_DIVMOD,
  Z_POW,
  Z_ATAN2,
  Z_COMPLEX_EXP,
  Z_BF16_ROUNDTRIP,
  Z_BOX_MULLER,
  Z_BCAST_BMM,
  Z_DEPTHWISE_GRAD,
  Z_TWO_AXIS_CONTRACT,
  Z_OUTER,
  Z_GLOBAL_ARGMAX,
  Z_AVGPOOL_GRAD,
  Z_CUMMAX,
  Z_REVERSE_CUMSUM,
  Z_WHILE_SCALAR,
  Z_QUANTIZE_I8,
  Z_BITCAST_SIGN,
  Z_CONCAT_MANY,
  Z_DEEP_CHAIN,
  Z_SOFTMAX_LONG,
  Z_BATCHED_GEMV,
  Z_CONV1X1_S2,
  Z_COLMAX,
  Z_FMOD,
  Z_SORT_FLAT,
  // Sixth batch: more model pieces.
  Z_PIXEL_SHUFFLE,
  Z_LABEL_SMOOTH_CE,
  Z_SINUSOID_PE,
  Z_GRU,
  Z_KL_DIV,
  Z_FOCAL_LOSS,
  Z_MAXPOOL_FWD,
  Z_MASKED_MEAN_POOL,
  Z_DEPTHWISE_5X5,
  Z_CONV3X3_S2,
  Z_RFFT_400,
  Z_FFT_1024,
  Z_IRFFT_400,
  Z_RFFT_2D,
  Z_FFT_509,
  Z_SORT_ABS,
  Z_SORT_LEXI,
  Z_COUNT
};

static const char* const kNames[Z_COUNT] = {
    "LeNet x[64,28,28,1]: conv5x5 32, pool, conv5x5 64, pool, dense 3136-512-10, softmax",
    "MobileNet block x[8,56,56,64]: depthwise 3x3, BN, relu6, 1x1 to 128, BN, relu6",
    "depthwise 3x3/2 x[8,112,112,32] + BN + relu6",
    "LSTM 32 steps, batch 32, input 256, hidden 256 (While loop)",
    "LayerNorm [1024,768]",
    "softmax [8,12,128,128] last axis",
    "batch-norm statistics and normalize [32,28,28,64]",
    "embedding [32000,512] lookup of [16,128] ids + LayerNorm",
    "conv 3x3 NCHW x[8,64,32,32] OIHW [64,64,3,3] pad 1",
    "transposed conv 4x4/2 x[8,16,16,64] -> [8,32,32,32]",
    "attention from DotGeneral q,k,v [8,12,128,64]",
    "MLP [256,768]-3072-768, erf GELU",
    "conv1d x[16,1000,64] k5 -> 128 pad 2",
    "RMSNorm [512,4096]",
    "rotary embedding of q [8,128,12,64] (halves rotated)",
    "SwiGLU MLP [128,768]-2048-768",
    "causal attention from DotGeneral, iota mask, q,k,v [4,12,256,64]",
    "GroupNorm 32 groups x[8,32,32,64]",
    "global average pool x[32,7,7,512] + dense 512-1000",
    "cross-entropy of logits [256,32000] with labels (log-softmax, one-hot)",
    "LeNet train step x[64,28,28,1]: cross-entropy, gradients of both convs and denses (flat)",
    "ViT patch embedding x[8,224,224,3] conv 16x16/16 -> 768",
    "U-Net up block: nearest 2x upsample [4,32,32,64], concat skip, conv 3x3 -> 64",
    "sort rows of [64,1000] descending (Sort with a comparator)",
    "bf16 LayerNorm [1024,768] through f32 (converts, statistics, scale)",
    "MoE gate [2048,768] x [768,8]: softmax, argmax, top-1 weight",
    "causal depthwise conv1d x[8,1024,512] k4 (Mamba-style)",
    "Adam update of 1M parameters (moments, bias correction)",
    "max-pool 3x3/2 backward x[8,112,112,64] (SelectAndScatter)",
    "embedding gradient: 2048 rows of 512 scatter-summed into [32000,512]",
    "LayerNorm backward [1024,768] (x, scale, shift; autodiff)",
    "attention backward from DotGeneral q,k,v [4,12,128,64] (autodiff)",
    "cumulative sum of [64,2048] rows (ReduceWindow, window 2048)",
    "top-40 of [16,32000] logits (Sort of values and indices)",
    "bilinear 2x resize [8,64,64,32] as two DotGenerals + transpose",
    "conv 3x3 dilation 2 x[8,64,64,64] -> 64",
    "conv 3x3x3 x[2,8,32,32,32] -> 32",
    "average pool 3x3/1 same x[8,28,28,192]",
    "dropout 0.1 of [1024,1024] (RngBitGenerator)",
    "argmax of [64,32000] logits",
    "nearest neighbour: distances [1024,64] to [4096,64], argmin",
    "CLIP contrastive loss, embeddings [256,512] x 2",
    "graph layer: gather 65536 edges of [8192,64], scatter-sum, dense 64",
    "log-mel spectrogram: 64 frames of 512, rfft, 80 mels",
    "gradient clipping by global norm (1M+512K+256K+64)",
    "split heads of fused QKV [8,128,2304] to 3 x [8,12,128,64]",
    "65536 products of 3x3 matrices (batched DotGeneral)",
    "Mish x*tanh(log1p(exp(x))) over [4096,1024]",
    "one-hot [2048,4096] x table [4096,256] (embedding as a product)",
    "Huber loss of [4M] predictions, mean",
    "decoder step: KV cache [1,12,1024,64] update + attention",
    "conv 3x3 [8,28,28,128] -> 128 backward: input and filter gradients (autodiff)",
    "batch-norm training backward [32,28,28,64] from primitives (autodiff)",
    "BatchNormTraining + BatchNormGradient ops [32,28,28,64]",
    "f64 [512,512] x [512,512] + tanh",
    "int8 DotGeneral [256,1024] x [1024,1024] -> i32, rescaled to f32",
    "i32 matmul [256,512] x [512,512] of ids (x 1000, rounded), as f32",
    "f16 MLP [128,1024]-4096-1024, tanh GELU, f16 weights and output",
    "softmax over channels (axis 1) of NCHW [8,64,56,56]",
    "argmax over axis 0 of [4096,1000]",
    "log-softmax [256,32000], label log-probs by Gather (take_along_axis)",
    "greedy decode: 64 While steps of embed [1000,256], tanh RNN 256, logits, argmax",
    "bidirectional features: x [32,512,256] concat reversed along time",
    "reflection pad 1 (slices, Reverse, Concatenate) + conv 3x3 valid [8,64,64,32] -> 32",
    "FFT convolution: rfft [64,1024], complex product with a filter's rfft, irfft",
    "grouped conv 3x3 [8,28,28,256] -> 256, 32 groups (ResNeXt)",
    "squeeze-excitation [8,28,28,256]: pool, dense 256-16-256, sigmoid, scale",
    "bilinear grid sample of [4,64,64,32] at 4x4096 points (4 Gathers)",
    "wav2vec stem: conv1d x[4,16000,1] k10/5 -> 512, GELU",
    "vocoder upsampling x8: transposed conv1d NCW x[2,256,256] k[128,256,16]",
    "hash 1M u32 ids (multiply, xor, shift, and) into a 65536-bin histogram (ScatterSum)",
    "transpose [64,128,256] -> [256,64,128] + 1",
    "fake quantization int8 of [4M] (round, clamp, rescale)",
    "binary cross-entropy with logits [1M], mean",
    "12 layers [64,512]x[512,512] + ReLU in a While loop over stacked weights",
    "embedding bag: [1024,32] ids into [50000,128], sum per bag",
    "einsum bqhd,bkhd->bhqk of [8,128,12,64] (batch axes 0 and 2)",
    "f64 sum of squares of [16M] f32",
    "sort [1000,64] along axis 0 (Sort with a comparator)",
    "argsort of [256,4096] rows (Sort of values and an iota)",
    "zero insertion: Pad interior 1 of [8,64,64,32]",
    "flip H and W of [16,64,64,32] (Reverse)",
    "transpose [4096,4096]",
    "every other element of [4M] (strided Slice) x 3",
    "sum over the middle axis of [64,4096,16]",
    "i32 division and remainder of [4M] ids",
    "|x| ^ 0.75 over [4M]",
    "atan2 of [4M] pairs",
    "|exp(z)| of [1M] complex values",
    "f32 -> bf16 -> f32 of [16M]",
    "Box-Muller normal samples of [1M] (log, sqrt, cos)",
    "64 products [128,128] x a broadcast shared [128,128]",
    "depthwise 3x3 [8,56,56,64] backward (input and filter gradients)",
    "contraction over heads and depth of [8,128,12,64] pairs",
    "outer product of two [4096] vectors (DotGeneral, no contraction)",
    "argmax of [16M]",
    "average pool 2x2/2 [8,56,56,64] backward (autodiff)",
    "cumulative max of [64,2048] rows (ReduceWindow max)",
    "suffix sums of [64,2048] rows (Reverse, scan, Reverse)",
    "10000 While iterations of a scalar recurrence",
    "int8 quantization of [16M] (round, clamp, to i8 and back)",
    "sign bits of [4M] f32 by Bitcast and a shift",
    "48 scaled [64] pieces concatenated",
    "60 elementwise ops over [1M]",
    "softmax of [8,131072] rows",
    "64 per-sample products [1,512] x [512,512]",
    "conv 1x1/2 [8,56,56,64] -> 128 (a downsampling shortcut)",
    "max over axis 0 of [8192,256]",
    "float remainder (x * 100) mod 0.7 over [4M]",
    "sort of 1M i32 ids",
    "pixel shuffle (depth to space) [8,32,32,256] -> [8,64,64,64]",
    "label-smoothing cross-entropy of [256,32000] logits (one-hot from an iota)",
    "sinusoidal positions (iota, exp, sin, cos) added to x[8,2048,512]",
    "GRU 32 steps, batch 32, input 256, hidden 256 (While loop)",
    "KL divergence of two softmaxes of [256,32000]",
    "focal loss of [4M] logits (logistic, pow, log), mean",
    "max-pool 3x3/2 pad 1 x[8,112,112,64] (a ResNet stem)",
    "masked mean pooling of [32,512,768] by sequence lengths",
    "depthwise 5x5 x[8,56,56,96] + bias + swish (EfficientNet)",
    "conv 3x3/2 [8,56,56,64] -> 128 (a ResNet downsampling layer)",
    "rfft of [784,400] f32 frames (n_fft 400, as in Whisper's STFT)",
    "complex FFT of [256,1024] c64 (complex from two f32 inputs)",
    "irfft [256,201] c64 -> [256,400] f32 (n_fft 400)",
    "2-D rfft of [16,256,256] f32",
    "complex FFT of [256,509] c64 (prime length: Bluestein)",
    "sort of 65536 f32 by |x| descending (comparator GreaterThan(Abs(a), Abs(b)))",
    "lexicographic sort of 65536 (i32 in [0,100), f32) (comparator Or / And of compares)",
};

static cml_value_t scalar(cml_function_t* f, cml_dtype_t dt, double v) {
  return cml_constant_scalar_f64(f, dt, v);
}

// Broadcasts |v| of rank |r| into |dims| (rank |out_rank|), the axes of v at |axes|.
static cml_value_t bcast(cml_function_t* f, cml_value_t v, const int64_t* dims, int32_t out_rank,
                         const int64_t* axes, int32_t r) {
  return cml_op_broadcast_in_dim(f, v, dims, out_rank, axes, r);
}

// x [..., n] * scale[n] + shift[n] over the last axis.
static cml_value_t affine_last(cml_function_t* f, cml_value_t x, const int64_t* dims, int32_t rank,
                               const char* name) {
  cml_dtype_t dt = CML_DTYPE_F32;
  int64_t n = dims[rank - 1], axis = rank - 1;
  char sn[32], bn[32];
  snprintf(sn, sizeof sn, "%s_scale", name);
  snprintf(bn, sizeof bn, "%s_shift", name);
  cml_value_t s = bench_param(f, sn, dt, 1, &n), b = bench_param(f, bn, dt, 1, &n);
  return cml_op_add(f, cml_op_mul(f, x, bcast(f, s, dims, rank, &axis, 1)),
                    bcast(f, b, dims, rank, &axis, 1));
}

// A ConvGeneral in channels-last layouts: |x| [N, S_1..S_spatial, C], |kernel| [K_1..K_spatial,
// I, O]; on every spatial axis padding |lo| / |hi| and dilations |kernel_dil| (atrous) and
// |input_dil| (transposed convolutions); |groups| feature groups.
static cml_value_t conv_last(cml_function_t* f, cml_value_t x, cml_value_t kernel, int32_t spatial,
                             int64_t lo, int64_t hi, int64_t kernel_dil, int64_t input_dil,
                             int64_t groups) {
  cml_conv_config_t cc;
  memset(&cc, 0, sizeof cc);
  cc.spatial_count = spatial;
  cc.input_channel_axis = cc.output_channel_axis = 1 + spatial;
  cc.kernel_input_channel_axis = spatial;
  cc.kernel_output_channel_axis = spatial + 1;
  for (int32_t i = 0; i < spatial; ++i) {
    cc.input_spatial_axes[i] = cc.output_spatial_axes[i] = 1 + i;
    cc.kernel_spatial_axes[i] = i;
    cc.padding_low[i] = lo;
    cc.padding_high[i] = hi;
    cc.kernel_dilations[i] = kernel_dil;
    cc.input_dilations[i] = input_dil;
  }
  cc.channel_group_count = groups;
  cc.output_dtype = CML_DTYPE_INVALID;
  return cml_op_conv_general(f, x, kernel, &cc);
}

// A 1-D ConvGeneral of an NWC |x| with a WIO |kernel|: padding |lo| / |hi|, |groups| feature
// groups.
static cml_value_t conv_nwc(cml_function_t* f, cml_value_t x, cml_value_t kernel, int64_t lo,
                            int64_t hi, int64_t groups) {
  return conv_last(f, x, kernel, 1, lo, hi, 1, 1, groups);
}

static cml_value_t relu(cml_function_t* f, cml_value_t x) {
  return cml_op_max(f, x, scalar(f, CML_DTYPE_F32, 0.0));
}

// A window over H and W of an NHWC tensor: |size| x |size|, stride |stride|, padding |lo| / |hi|.
static cml_window_config_t nhwc_window(int64_t size, int64_t stride, int64_t lo, int64_t hi) {
  cml_window_config_t w;
  memset(&w, 0, sizeof w);
  w.rank = 4;
  for (int i = 0; i < 4; ++i) w.window_dims[i] = w.strides[i] = 1;
  for (int i = 1; i < 3; ++i) {
    w.window_dims[i] = size;
    w.strides[i] = stride;
    w.padding_low[i] = lo;
    w.padding_high[i] = hi;
  }
  return w;
}

// Rows of a [rows, width] table taken by row id (Gather; ids have a trailing index axis at
// |vector_axis|, which the output's row axis |vector_axis| replaces).
static cml_gather_dims_t row_gather(int64_t width, int64_t vector_axis) {
  cml_gather_dims_t g;
  memset(&g, 0, sizeof g);
  g.index_vector_axis = vector_axis;
  g.offset_output_axis_count = 1;
  g.offset_output_axes[0] = vector_axis;
  g.collapsed_slice_axis_count = 1;
  g.start_index_map_count = 1;
  g.slice_size_count = 2;
  g.slice_sizes[0] = 1;
  g.slice_sizes[1] = width;
  return g;
}

// Rows of updates [n, width] combined into rows of an operand by row ids [n, 1] (Scatter*).
static cml_scatter_dims_t row_scatter(void) {
  cml_scatter_dims_t s;
  memset(&s, 0, sizeof s);
  s.index_vector_axis = 1;
  s.update_window_axis_count = 1;
  s.update_window_axes[0] = 1;
  s.inserted_window_axis_count = 1;
  s.scatter_axes_to_operand_axes_count = 1;
  return s;
}

static cml_value_t maxpool2(cml_function_t* f, cml_value_t x) {
  cml_window_config_t w;
  memset(&w, 0, sizeof w);
  w.rank = 4;
  int64_t d[4] = {1, 2, 2, 1};
  memcpy(w.window_dims, d, sizeof d);
  memcpy(w.strides, d, sizeof d);
  return cml_op_reduce_window(f, x, CML_REDUCE_MAX, &w);
}

// x [m, k] @ w [k, n] + b, the parameters declared here.
static cml_value_t dense(cml_function_t* f, cml_value_t x, int64_t m, int64_t k, int64_t n) {
  cml_value_t w = bench_param(f, NULL, CML_DTYPE_F32, 2, (int64_t[]){k, n});
  cml_value_t b = bench_param(f, NULL, CML_DTYPE_F32, 1, &n);
  int64_t axis = 1;
  return cml_op_add(f, cml_op_dot(f, x, w), bcast(f, b, (int64_t[]){m, n}, 2, &axis, 1));
}

// Softmax over the last axis of x (rank |rank|, dims |dims|).
static cml_value_t softmax(cml_function_t* f, cml_value_t x, const int64_t* dims, int32_t rank) {
  int64_t last = rank - 1, keep[CML_MAX_RANK];
  for (int32_t i = 0; i < rank - 1; ++i) keep[i] = i;
  cml_value_t mx = cml_op_reduce_max(f, x, &last, 1);
  cml_value_t e = cml_op_exp(f, cml_op_sub(f, x, bcast(f, mx, dims, rank, keep, rank - 1)));
  cml_value_t s = cml_op_reduce_sum(f, e, &last, 1);
  return cml_op_div(f, e, bcast(f, s, dims, rank, keep, rank - 1));
}

// LayerNorm over the last axis, eps 1e-5, learned scale and shift.
static cml_value_t layernorm(cml_function_t* f, cml_value_t x, const int64_t* dims, int32_t rank) {
  int64_t last = rank - 1, keep[CML_MAX_RANK];
  for (int32_t i = 0; i < rank - 1; ++i) keep[i] = i;
  cml_value_t inv_n = scalar(f, CML_DTYPE_F32, 1.0 / (double)dims[rank - 1]);
  cml_value_t mean = cml_op_mul(f, cml_op_reduce_sum(f, x, &last, 1), inv_n);
  cml_value_t xc = cml_op_sub(f, x, bcast(f, mean, dims, rank, keep, rank - 1));
  cml_value_t var = cml_op_mul(f, cml_op_reduce_sum(f, cml_op_mul(f, xc, xc), &last, 1), inv_n);
  cml_value_t r = cml_op_rsqrt(f, cml_op_add(f, var, scalar(f, CML_DTYPE_F32, 1e-5)));
  return affine_last(f, cml_op_mul(f, xc, bcast(f, r, dims, rank, keep, rank - 1)), dims, rank,
                     "ln");
}

static cml_value_t relu6_bn(cml_function_t* f, cml_value_t x, const int64_t* dims,
                            const char* name) {
  x = affine_last(f, x, dims, 4, name);
  return cml_op_clamp(f, scalar(f, CML_DTYPE_F32, 0.0), x, scalar(f, CML_DTYPE_F32, 6.0));
}

static cml_value_t build_lenet(cml_function_t* f) {
  const int64_t n = 64;
  cml_value_t x = bench_param(f, "x", CML_DTYPE_F32, 4, (int64_t[]){n, 28, 28, 1});
  cml_value_t k1 = bench_param(f, "k1", CML_DTYPE_F32, 4, (int64_t[]){5, 5, 1, 32});
  cml_value_t k2 = bench_param(f, "k2", CML_DTYPE_F32, 4, (int64_t[]){5, 5, 32, 64});
  cml_value_t h = maxpool2(f, relu(f, cml_cli_model_conv_nhwc(f, x, k1, 1, 2, 1)));  // [n,14,14,32]
  h = maxpool2(f, relu(f, cml_cli_model_conv_nhwc(f, h, k2, 1, 2, 1)));              // [n,7,7,64]
  h = cml_op_reshape(f, h, (int64_t[]){n, 7 * 7 * 64}, 2);
  h = relu(f, dense(f, h, n, 7 * 7 * 64, 512));
  h = dense(f, h, n, 512, 10);
  return softmax(f, h, (int64_t[]){n, 10}, 2);
}

static cml_value_t build_mobilenet(cml_function_t* f) {
  const int64_t d[4] = {8, 56, 56, 64}, o[4] = {8, 56, 56, 128};
  cml_value_t x = bench_param(f, "x", CML_DTYPE_F32, 4, d);
  cml_value_t dw = bench_param(f, "dw", CML_DTYPE_F32, 4, (int64_t[]){3, 3, 1, 64});
  cml_value_t pw = bench_param(f, "pw", CML_DTYPE_F32, 4, (int64_t[]){1, 1, 64, 128});
  cml_value_t h = relu6_bn(f, cml_cli_model_conv_nhwc(f, x, dw, 1, 1, 64), d, "bn1");
  return relu6_bn(f, cml_cli_model_conv_nhwc(f, h, pw, 1, 0, 1), o, "bn2");
}

static cml_value_t build_depthwise_s2(cml_function_t* f) {
  cml_value_t x = bench_param(f, "x", CML_DTYPE_F32, 4, (int64_t[]){8, 112, 112, 32});
  cml_value_t dw = bench_param(f, "dw", CML_DTYPE_F32, 4, (int64_t[]){3, 3, 1, 32});
  return relu6_bn(f, cml_cli_model_conv_nhwc(f, x, dw, 2, 1, 32), (int64_t[]){8, 56, 56, 32}, "bn");
}

// The condition of a counted While loop: a closure of |f| taking the |count| state values of
// |shapes| (the first an i32 counter) and returning counter < |limit|; NULL on failure.
static cml_function_t* counter_below(cml_function_t* f, const cml_shape_t* shapes, int count,
                                     int64_t limit) {
  cml_function_t* cond = NULL;
  if (cml_function_new_closure(f, &cond) != CML_OK) return NULL;
  cml_value_t counter = CML_VALUE_INVALID;
  for (int i = 0; i < count; ++i) {
    const cml_value_t v = cml_parameter(cond, NULL, &shapes[i]);
    if (i == 0) counter = v;
  }
  cml_value_t lt =
      cml_op_less_than(cond, counter, cml_constant_scalar_i64(cond, CML_DTYPE_I32, limit));
  return cml_function_return(cond, &lt, 1) == CML_OK ? cond : NULL;
}

enum { LSTM_T = 32, LSTM_B = 32, LSTM_IN = 256, LSTM_H = 256 };

static cml_value_t build_lstm(cml_function_t* f) {
  const cml_dtype_t dt = CML_DTYPE_F32;
  cml_value_t xs = bench_param(f, "xs", dt, 3, (int64_t[]){LSTM_T, LSTM_B, LSTM_IN});
  cml_value_t w = bench_param(f, "w", dt, 2, (int64_t[]){LSTM_IN + LSTM_H, 4 * LSTM_H});
  cml_value_t bias = bench_param(f, "b", dt, 1, (int64_t[]){4 * LSTM_H});
  const int64_t hd[2] = {LSTM_B, LSTM_H};
  cml_value_t zero = cml_op_broadcast_in_dim(f, scalar(f, dt, 0.0), hd, 2, NULL, 0);
  cml_value_t init[3] = {cml_constant_scalar_i64(f, CML_DTYPE_I32, 0), zero, zero};

  cml_shape_t ts = cml_shape_make(CML_DTYPE_I32, 0, NULL), hs = cml_shape_make(dt, 2, hd);
  cml_function_t* cond = counter_below(f, (cml_shape_t[]){ts, hs, hs}, 3, LSTM_T);
  cml_function_t* body = NULL;
  if (!cond) return CML_VALUE_INVALID;

  if (cml_function_new_closure(f, &body) != CML_OK) return CML_VALUE_INVALID;
  cml_value_t t = cml_parameter(body, "t", &ts);
  cml_value_t h = cml_parameter(body, "h", &hs);
  cml_value_t c = cml_parameter(body, "c", &hs);
  cml_value_t z = cml_constant_scalar_i64(body, CML_DTYPE_I32, 0);
  cml_value_t starts[3] = {t, z, z};
  cml_value_t xt = cml_op_dynamic_slice(body, xs, starts, (int64_t[]){1, LSTM_B, LSTM_IN}, 3);
  xt = cml_op_reshape(body, xt, (int64_t[]){LSTM_B, LSTM_IN}, 2);
  cml_value_t xh = cml_op_concatenate(body, 1, (cml_value_t[]){xt, h}, 2);
  int64_t axis = 1;
  cml_value_t g = cml_op_add(body, cml_op_dot(body, xh, w),
                             bcast(body, bias, (int64_t[]){LSTM_B, 4 * LSTM_H}, 2, &axis, 1));
  cml_value_t gates[4];
  for (int i = 0; i < 4; ++i)
    gates[i] = cml_op_slice(body, g, (int64_t[]){0, i * LSTM_H},
                            (int64_t[]){LSTM_B, (i + 1) * LSTM_H}, NULL, 2);
  cml_value_t ig = cml_op_logistic(body, gates[0]), fg = cml_op_logistic(body, gates[1]);
  cml_value_t gg = cml_op_tanh(body, gates[2]), og = cml_op_logistic(body, gates[3]);
  cml_value_t c2 = cml_op_add(body, cml_op_mul(body, fg, c), cml_op_mul(body, ig, gg));
  cml_value_t h2 = cml_op_mul(body, og, cml_op_tanh(body, c2));
  cml_value_t t2 = cml_op_add(body, t, cml_constant_scalar_i64(body, CML_DTYPE_I32, 1));
  cml_value_t outs[3] = {t2, h2, c2};
  if (cml_function_return(body, outs, 3) != CML_OK) return CML_VALUE_INVALID;
  cml_value_t fin[3];
  if (!cml_op_while(f, cond, body, init, 3, fin)) return CML_VALUE_INVALID;
  return fin[1];
}

// Per (batch, head) product over [b, h, s, d] operands: lhs axis 3 against rhs axis |rhs_k|.
static cml_value_t head_dot(cml_function_t* f, cml_value_t lhs, cml_value_t rhs, int64_t rhs_k) {
  cml_dot_config_t c;
  memset(&c, 0, sizeof c);
  c.lhs_batch_count = c.rhs_batch_count = 2;
  c.lhs_batch_axes[0] = c.rhs_batch_axes[0] = 0;
  c.lhs_batch_axes[1] = c.rhs_batch_axes[1] = 1;
  c.lhs_contracting_count = c.rhs_contracting_count = 1;
  c.lhs_contracting_axes[0] = 3;
  c.rhs_contracting_axes[0] = rhs_k;
  c.accumulator_dtype = c.output_dtype = CML_DTYPE_INVALID;
  return cml_op_dot_general(f, lhs, rhs, &c);
}

static cml_value_t build_attention(cml_function_t* f) {
  const int64_t d[4] = {8, 12, 128, 64}, sd[4] = {8, 12, 128, 128};
  cml_value_t q = bench_param(f, "q", CML_DTYPE_F32, 4, d);
  cml_value_t k = bench_param(f, "k", CML_DTYPE_F32, 4, d);
  cml_value_t v = bench_param(f, "v", CML_DTYPE_F32, 4, d);
  cml_value_t s = cml_op_mul(f, head_dot(f, q, k, 3), scalar(f, CML_DTYPE_F32, 0.125));
  cml_value_t p = softmax(f, s, sd, 4);
  return head_dot(f, p, v, 2);
}

static cml_value_t build_gelu_mlp(cml_function_t* f) {
  cml_value_t x = bench_param(f, "x", CML_DTYPE_F32, 2, (int64_t[]){256, 768});
  cml_value_t h = dense(f, x, 256, 768, 3072);
  cml_value_t e = cml_op_erf(f, cml_op_mul(f, h, scalar(f, CML_DTYPE_F32, M_SQRT1_2)));
  h = cml_op_mul(f, cml_op_mul(f, h, scalar(f, CML_DTYPE_F32, 0.5)),
                 cml_op_add(f, e, scalar(f, CML_DTYPE_F32, 1.0)));
  return dense(f, h, 256, 3072, 768);
}

static cml_value_t build_rmsnorm(cml_function_t* f) {
  const int64_t d[2] = {512, 4096}, last = 1, keep = 0, one = 1;
  cml_value_t x = bench_param(f, "x", CML_DTYPE_F32, 2, d);
  cml_value_t w = bench_param(f, "w", CML_DTYPE_F32, 1, &d[1]);
  cml_value_t ms = cml_op_mul(f, cml_op_reduce_sum(f, cml_op_mul(f, x, x), &last, 1),
                              scalar(f, CML_DTYPE_F32, 1.0 / 4096));
  cml_value_t r = cml_op_rsqrt(f, cml_op_add(f, ms, scalar(f, CML_DTYPE_F32, 1e-6)));
  return cml_op_mul(f, cml_op_mul(f, x, bcast(f, r, d, 2, &keep, 1)), bcast(f, w, d, 2, &one, 1));
}

// q * cos + rotate_half(q) * sin, with cos/sin [128, 64] broadcast over batch and heads.
static cml_value_t build_rope(cml_function_t* f) {
  const int64_t d[4] = {8, 128, 12, 64}, h[4] = {8, 128, 12, 32}, cs[2] = {128, 64};
  const int64_t axes[2] = {1, 3};
  cml_value_t q = bench_param(f, "q", CML_DTYPE_F32, 4, d);
  cml_value_t cosv = bench_param(f, "cos", CML_DTYPE_F32, 2, cs);
  cml_value_t sinv = bench_param(f, "sin", CML_DTYPE_F32, 2, cs);
  cml_value_t lo = cml_op_slice(f, q, (int64_t[]){0, 0, 0, 0}, h, NULL, 4);
  cml_value_t hi = cml_op_slice(f, q, (int64_t[]){0, 0, 0, 32}, d, NULL, 4);
  cml_value_t rot = cml_op_concatenate(f, 3, (cml_value_t[]){cml_op_neg(f, hi), lo}, 2);
  return cml_op_add(f, cml_op_mul(f, q, bcast(f, cosv, d, 4, axes, 2)),
                    cml_op_mul(f, rot, bcast(f, sinv, d, 4, axes, 2)));
}

static cml_value_t build_swiglu(cml_function_t* f) {
  const int64_t m = 128, d = 768, hdim = 2048;
  cml_value_t x = bench_param(f, "x", CML_DTYPE_F32, 2, (int64_t[]){m, d});
  cml_value_t w1 = bench_param(f, "w1", CML_DTYPE_F32, 2, (int64_t[]){d, hdim});
  cml_value_t w3 = bench_param(f, "w3", CML_DTYPE_F32, 2, (int64_t[]){d, hdim});
  cml_value_t w2 = bench_param(f, "w2", CML_DTYPE_F32, 2, (int64_t[]){hdim, d});
  cml_value_t a = cml_op_dot(f, x, w1), b = cml_op_dot(f, x, w3);
  cml_value_t silu = cml_op_mul(f, a, cml_op_logistic(f, a));
  return cml_op_dot(f, cml_op_mul(f, silu, b), w2);
}

static cml_value_t build_causal_attention(cml_function_t* f) {
  const int64_t d[4] = {4, 12, 256, 64}, sd[4] = {4, 12, 256, 256};
  cml_value_t q = bench_param(f, "q", CML_DTYPE_F32, 4, d);
  cml_value_t k = bench_param(f, "k", CML_DTYPE_F32, 4, d);
  cml_value_t v = bench_param(f, "v", CML_DTYPE_F32, 4, d);
  cml_value_t s = cml_op_mul(f, head_dot(f, q, k, 3), scalar(f, CML_DTYPE_F32, 0.125));
  cml_shape_t is = cml_shape_make(CML_DTYPE_I32, 4, sd);
  cml_value_t allowed = cml_op_greater_or_equal(f, cml_op_iota(f, &is, 2), cml_op_iota(f, &is, 3));
  s = cml_op_where(f, allowed, s, scalar(f, CML_DTYPE_F32, -1e30));
  cml_value_t p = softmax(f, s, sd, 4);
  return head_dot(f, p, v, 2);
}

// GroupNorm: x [n, h, w, c] viewed as [n, h, w, groups, c / groups], statistics over h, w and
// the channels of a group, then a per-channel scale and shift.
static cml_value_t build_groupnorm(cml_function_t* f) {
  const int64_t d[4] = {8, 32, 32, 64}, g[5] = {8, 32, 32, 32, 2};
  const int64_t axes[3] = {1, 2, 4}, keep[2] = {0, 3};
  cml_value_t x = cml_op_reshape(f, bench_param(f, "x", CML_DTYPE_F32, 4, d), g, 5);
  cml_value_t inv = scalar(f, CML_DTYPE_F32, 1.0 / (32.0 * 32 * 2));
  cml_value_t mean = cml_op_mul(f, cml_op_reduce_sum(f, x, axes, 3), inv);
  cml_value_t xc = cml_op_sub(f, x, bcast(f, mean, g, 5, keep, 2));
  cml_value_t var = cml_op_mul(f, cml_op_reduce_sum(f, cml_op_mul(f, xc, xc), axes, 3), inv);
  cml_value_t r = cml_op_rsqrt(f, cml_op_add(f, var, scalar(f, CML_DTYPE_F32, 1e-5)));
  cml_value_t y = cml_op_reshape(f, cml_op_mul(f, xc, bcast(f, r, g, 5, keep, 2)), d, 4);
  return affine_last(f, y, d, 4, "gn");
}

static cml_value_t build_global_pool(cml_function_t* f) {
  cml_value_t x = bench_param(f, "x", CML_DTYPE_F32, 4, (int64_t[]){32, 7, 7, 512});
  cml_value_t m = cml_op_mul(f, cml_op_reduce_sum(f, x, (int64_t[]){1, 2}, 2),
                             scalar(f, CML_DTYPE_F32, 1.0 / 49));
  return dense(f, m, 32, 512, 1000);
}

// Mean cross-entropy: labels made in the graph (row i: class 7919 i mod 32000).
static cml_value_t build_cross_entropy(cml_function_t* f) {
  const int64_t d[2] = {256, 32000}, last = 1, keep = 0;
  cml_value_t logits = bench_param(f, "logits", CML_DTYPE_F32, 2, d);
  cml_value_t mx = cml_op_reduce_max(f, logits, &last, 1);
  cml_value_t z = cml_op_sub(f, logits, bcast(f, mx, d, 2, &keep, 1));
  cml_value_t lse = cml_op_log(f, cml_op_reduce_sum(f, cml_op_exp(f, z), &last, 1));
  cml_value_t logp = cml_op_sub(f, z, bcast(f, lse, d, 2, &keep, 1));
  cml_shape_t ls = cml_shape_make(CML_DTYPE_I32, 1, d);
  cml_value_t labels = cml_op_rem(
      f, cml_op_mul(f, cml_op_iota(f, &ls, 0), cml_constant_scalar_i64(f, CML_DTYPE_I32, 7919)),
      cml_constant_scalar_i64(f, CML_DTYPE_I32, 32000));
  cml_shape_t is = cml_shape_make(CML_DTYPE_I32, 2, d);
  cml_value_t onehot = cml_op_convert_dtype(
      f, cml_op_equal(f, cml_op_iota(f, &is, 1), bcast(f, labels, d, 2, &keep, 1)), CML_DTYPE_F32);
  cml_value_t picked = cml_op_reduce_sum(f, cml_op_mul(f, logp, onehot), (int64_t[]){0, 1}, 2);
  return cml_op_mul(f, picked, scalar(f, CML_DTYPE_F32, -1.0 / 256));
}

//===--- second batch: training steps, data pipelines, search and signal pieces ---===//

// Integer ids in [0, n) from a uniform [-1, 1) parameter of |dims| (a data-dependent index
// tensor, as a data loader hands over; the runner fills float parameters only).
static cml_value_t ids_from(cml_function_t* f, const char* name, const int64_t* dims, int32_t rank,
                            int64_t n) {
  cml_value_t u = bench_param(f, name, CML_DTYPE_F32, rank, dims);
  cml_value_t s = cml_op_mul(f, cml_op_add(f, u, scalar(f, CML_DTYPE_F32, 1.0)),
                             scalar(f, CML_DTYPE_F32, 0.5 * (double)n));
  cml_value_t i = cml_op_convert_dtype(f, s, CML_DTYPE_I32);
  return cml_op_clamp(f, cml_constant_scalar_i64(f, CML_DTYPE_I32, 0), i,
                      cml_constant_scalar_i64(f, CML_DTYPE_I32, n - 1));
}

// |count| values flattened and concatenated (several results as one output).
static cml_value_t flat_concat(cml_function_t* f, const cml_value_t* v, int count) {
  cml_value_t flat[8];
  for (int i = 0; i < count; ++i) {
    cml_shape_t s;
    if (!cml_builder_value_shape(cml_function_builder(f), v[i], &s)) return CML_VALUE_INVALID;
    int64_t n = cml_shape_element_count(&s);
    flat[i] = cml_op_reshape(f, v[i], &n, 1);
  }
  return cml_op_concatenate(f, 0, flat, count);
}

// Adam with bias correction (step 10): the new parameters, first and second moments.
static cml_value_t build_adam(cml_function_t* f) {
  const int64_t n = 1 << 20;
  const cml_dtype_t dt = CML_DTYPE_F32;
  cml_value_t p = bench_param(f, "p", dt, 1, &n), g = bench_param(f, "g", dt, 1, &n);
  cml_value_t m = bench_param(f, "m", dt, 1, &n), v = bench_param(f, "v", dt, 1, &n);
  const double b1 = 0.9, b2 = 0.999;
  cml_value_t m2 =
      cml_op_add(f, cml_op_mul(f, m, scalar(f, dt, b1)), cml_op_mul(f, g, scalar(f, dt, 1 - b1)));
  cml_value_t v2 = cml_op_add(f, cml_op_mul(f, cml_op_abs(f, v), scalar(f, dt, b2)),
                              cml_op_mul(f, cml_op_mul(f, g, g), scalar(f, dt, 1 - b2)));
  cml_value_t mh = cml_op_mul(f, m2, scalar(f, dt, 1.0 / (1.0 - pow(b1, 10))));
  cml_value_t vh = cml_op_mul(f, v2, scalar(f, dt, 1.0 / (1.0 - pow(b2, 10))));
  cml_value_t step = cml_op_div(f, mh, cml_op_add(f, cml_op_sqrt(f, vh), scalar(f, dt, 1e-8)));
  cml_value_t p2 = cml_op_sub(f, p, cml_op_mul(f, step, scalar(f, dt, 1e-3)));
  return flat_concat(f, (cml_value_t[]){p2, m2, v2}, 3);
}

// The input gradient of a ResNet stem's 3x3/2 max pool (padding 1): SelectAndScatter.
static cml_value_t build_maxpool_grad(cml_function_t* f) {
  cml_value_t x = bench_param(f, "x", CML_DTYPE_F32, 4, (int64_t[]){8, 112, 112, 64});
  cml_value_t dy = bench_param(f, "dy", CML_DTYPE_F32, 4, (int64_t[]){8, 56, 56, 64});
  const cml_window_config_t w = nhwc_window(3, 2, 1, 0);  // (112 + 1 - 3) / 2 + 1 = 56
  return cml_op_select_and_scatter(f, CML_OP_SELECT_AND_SCATTER_MAX, x, dy, &w);
}

// The embedding table's gradient: 2048 rows of 512 summed into [32000, 512] by token id.
static cml_value_t build_embed_grad(cml_function_t* f) {
  const int64_t t = 2048, e = 512;
  cml_value_t ids = ids_from(f, "ids", (int64_t[]){t, 1}, 2, 32000);
  cml_value_t up = bench_param(f, "dy", CML_DTYPE_F32, 2, (int64_t[]){t, e});
  cml_value_t zero =
      cml_op_broadcast_in_dim(f, scalar(f, CML_DTYPE_F32, 0.0), (int64_t[]){32000, e}, 2, NULL, 0);
  const cml_scatter_dims_t s = row_scatter();
  return cml_op_scatter_sum(f, zero, ids, up, &s);
}

// LayerNorm's backward: the gradients of sum(LayerNorm(x) * dy) for x, scale and shift.
static cml_value_t build_layernorm_grad(cml_function_t* f) {
  const int64_t d[2] = {1024, 768}, last = 1, keep = 0, one = 1;
  cml_value_t p[3] = {bench_param(f, "x", CML_DTYPE_F32, 2, d),
                      bench_param(f, "scale", CML_DTYPE_F32, 1, &d[1]),
                      bench_param(f, "shift", CML_DTYPE_F32, 1, &d[1])};
  cml_value_t dy = bench_param(f, "dy", CML_DTYPE_F32, 2, d);
  cml_value_t inv_n = scalar(f, CML_DTYPE_F32, 1.0 / 768);
  cml_value_t mean = cml_op_mul(f, cml_op_reduce_sum(f, p[0], &last, 1), inv_n);
  cml_value_t xc = cml_op_sub(f, p[0], bcast(f, mean, d, 2, &keep, 1));
  cml_value_t var = cml_op_mul(f, cml_op_reduce_sum(f, cml_op_mul(f, xc, xc), &last, 1), inv_n);
  cml_value_t r = cml_op_rsqrt(f, cml_op_add(f, var, scalar(f, CML_DTYPE_F32, 1e-5)));
  cml_value_t y = cml_op_add(
      f,
      cml_op_mul(f, cml_op_mul(f, xc, bcast(f, r, d, 2, &keep, 1)), bcast(f, p[1], d, 2, &one, 1)),
      bcast(f, p[2], d, 2, &one, 1));
  cml_value_t loss = cml_op_reduce_sum(f, cml_op_mul(f, y, dy), (int64_t[]){0, 1}, 2);
  cml_value_t g[3];
  if (cml_gradients(f, loss, p, 3, g) != CML_OK) return CML_VALUE_INVALID;
  return flat_concat(f, g, 3);
}

// Attention's backward from primitives: the gradients of sum(attention(q, k, v) * do).
static cml_value_t build_attention_grad(cml_function_t* f) {
  const int64_t d[4] = {4, 12, 128, 64}, sd[4] = {4, 12, 128, 128};
  cml_value_t p[3] = {bench_param(f, "q", CML_DTYPE_F32, 4, d),
                      bench_param(f, "k", CML_DTYPE_F32, 4, d),
                      bench_param(f, "v", CML_DTYPE_F32, 4, d)};
  cml_value_t dout = bench_param(f, "do", CML_DTYPE_F32, 4, d);
  cml_value_t s = cml_op_mul(f, head_dot(f, p[0], p[1], 3), scalar(f, CML_DTYPE_F32, 0.125));
  cml_value_t o = head_dot(f, softmax(f, s, sd, 4), p[2], 2);
  cml_value_t loss = cml_op_reduce_sum(f, cml_op_mul(f, o, dout), (int64_t[]){0, 1, 2, 3}, 4);
  cml_value_t g[3];
  if (cml_gradients(f, loss, p, 3, g) != CML_OK) return CML_VALUE_INVALID;
  return flat_concat(f, g, 3);
}

// Cumulative sum along rows as a ReduceWindow (window n, padding n - 1 before), the form
// JAX's TPU lowering and hand-written scans use.
static cml_value_t build_cumsum(cml_function_t* f) {
  cml_value_t x = bench_param(f, "x", CML_DTYPE_F32, 2, (int64_t[]){64, 2048});
  cml_window_config_t w;
  memset(&w, 0, sizeof w);
  w.rank = 2;
  w.window_dims[0] = w.strides[0] = w.strides[1] = 1;
  w.window_dims[1] = 2048;
  w.padding_low[1] = 2047;
  return cml_op_reduce_window(f, x, CML_REDUCE_SUM, &w);
}

// Top-40 of a vocabulary of 32000 for 16 rows (sampling): Sort of (logit, index) descending,
// the first 40 of both (indices converted to f32).
static cml_value_t build_topk(cml_function_t* f) {
  const int64_t d[2] = {16, 32000};
  cml_value_t x = bench_param(f, "logits", CML_DTYPE_F32, 2, d);
  cml_shape_t is = cml_shape_make(CML_DTYPE_I32, 2, d);
  cml_value_t ops[2] = {x, cml_op_iota(f, &is, 1)};
  cml_function_t* cmp = NULL;
  if (cml_function_new_closure(f, &cmp) != CML_OK) return CML_VALUE_INVALID;
  cml_shape_t fs = cml_shape_scalar(CML_DTYPE_F32), ss = cml_shape_scalar(CML_DTYPE_I32);
  cml_value_t a = cml_parameter(cmp, "a", &fs), b = cml_parameter(cmp, "b", &fs);
  (void)cml_parameter(cmp, "ia", &ss);
  (void)cml_parameter(cmp, "ib", &ss);
  cml_value_t gt = cml_op_greater_than(cmp, a, b);
  if (cml_function_return(cmp, &gt, 1) != CML_OK) return CML_VALUE_INVALID;
  cml_value_t sorted[2];
  if (!cml_op_sort(f, cmp, 1, true, ops, 2, sorted)) return CML_VALUE_INVALID;
  const int64_t lim[2] = {16, 40};
  cml_value_t top = cml_op_slice(f, sorted[0], (int64_t[]){0, 0}, lim, NULL, 2);
  cml_value_t idx = cml_op_slice(f, sorted[1], (int64_t[]){0, 0}, lim, NULL, 2);
  return cml_op_concatenate(f, 1, (cml_value_t[]){top, cml_op_convert_dtype(f, idx, CML_DTYPE_F32)},
                            2);
}

// Bilinear 2x resize as jax.image.resize computes it: one interpolation matrix per spatial
// axis applied with DotGeneral, then the axes put back in NHWC order.
static cml_value_t build_resize(cml_function_t* f) {
  cml_value_t x = bench_param(f, "x", CML_DTYPE_F32, 4, (int64_t[]){8, 64, 64, 32});
  cml_value_t wh = bench_param(f, "wh", CML_DTYPE_F32, 2, (int64_t[]){128, 64});
  cml_value_t ww = bench_param(f, "ww", CML_DTYPE_F32, 2, (int64_t[]){128, 64});
  cml_dot_config_t c;
  memset(&c, 0, sizeof c);
  c.lhs_contracting_count = c.rhs_contracting_count = 1;
  c.lhs_contracting_axes[0] = 1;
  c.rhs_contracting_axes[0] = 1;
  c.accumulator_dtype = c.output_dtype = CML_DTYPE_INVALID;
  cml_value_t t = cml_op_dot_general(f, x, wh, &c);  // [8, 64 w, 32 c, 128 h]
  t = cml_op_dot_general(f, t, ww, &c);              // [8, 32 c, 128 h, 128 w]
  return cml_op_transpose(f, t, (int64_t[]){0, 2, 3, 1}, 4);
}

// A 3x3 convolution with dilation 2 (DeepLab's atrous layers), NHWC.
static cml_value_t build_dilated_conv(cml_function_t* f) {
  cml_value_t x = bench_param(f, "x", CML_DTYPE_F32, 4, (int64_t[]){8, 64, 64, 64});
  cml_value_t k = bench_param(f, "k", CML_DTYPE_F32, 4, (int64_t[]){3, 3, 64, 64});
  return conv_last(f, x, k, 2, 2, 2, 2, 1, 1);
}

// A 3x3x3 convolution of a video clip, NDHWC.
static cml_value_t build_conv3d(cml_function_t* f) {
  cml_value_t x = bench_param(f, "x", CML_DTYPE_F32, 5, (int64_t[]){2, 8, 32, 32, 32});
  cml_value_t k = bench_param(f, "k", CML_DTYPE_F32, 5, (int64_t[]){3, 3, 3, 32, 32});
  return conv_last(f, x, k, 3, 1, 1, 1, 1, 1);
}

// Inception's 3x3/1 average pool, "same" padding, counting the padding (sum / 9).
static cml_value_t build_avgpool(cml_function_t* f) {
  cml_value_t x = bench_param(f, "x", CML_DTYPE_F32, 4, (int64_t[]){8, 28, 28, 192});
  const cml_window_config_t w = nhwc_window(3, 1, 1, 1);
  return cml_op_mul(f, cml_op_reduce_window(f, x, CML_REDUCE_SUM, &w),
                    scalar(f, CML_DTYPE_F32, 1.0 / 9));
}

// Dropout (keep 0.9) of [1024, 1024] with Philox bits from a state the caller passes.
static cml_value_t build_dropout(cml_function_t* f) {
  const int64_t d[2] = {1024, 1024}, three = 3;
  cml_value_t x = bench_param(f, "x", CML_DTYPE_F32, 2, d);
  cml_value_t seed = bench_param(f, "seed", CML_DTYPE_F32, 1, &three);
  cml_value_t state = cml_op_convert_dtype(
      f, cml_op_mul(f, cml_op_abs(f, seed), scalar(f, CML_DTYPE_F32, 1e6)), CML_DTYPE_U64);
  cml_shape_t bs = cml_shape_make(CML_DTYPE_U32, 2, d);
  cml_value_t next, bits;
  if (!cml_op_rng_bit_generator(f, state, &bs, &next, &bits)) return CML_VALUE_INVALID;
  cml_value_t keep =
      cml_op_less_than(f, bits, cml_constant_scalar_i64(f, CML_DTYPE_U32, 3865470566LL));
  return cml_op_where(f, keep, cml_op_mul(f, x, scalar(f, CML_DTYPE_F32, 1.0 / 0.9)),
                      scalar(f, CML_DTYPE_F32, 0.0));
}

// Greedy decoding's pick: the argmax of [64, 32000] logits (as f32).
static cml_value_t build_argmax_vocab(cml_function_t* f) {
  cml_value_t x = bench_param(f, "logits", CML_DTYPE_F32, 2, (int64_t[]){64, 32000});
  return cml_op_convert_dtype(f, cml_op_arg_min_max(f, x, 1, CML_DTYPE_I32, false), CML_DTYPE_F32);
}

// Nearest neighbour search: squared distances |x|^2 + |y|^2 - 2 x.y of [1024, 64] queries to
// [4096, 64] keys, then the argmin per query.
static cml_value_t build_knn(cml_function_t* f) {
  const int64_t d[2] = {1024, 4096}, last = 1, zero = 0, one = 1;
  cml_value_t x = bench_param(f, "x", CML_DTYPE_F32, 2, (int64_t[]){1024, 64});
  cml_value_t y = bench_param(f, "y", CML_DTYPE_F32, 2, (int64_t[]){4096, 64});
  cml_dot_config_t c;
  memset(&c, 0, sizeof c);
  c.lhs_contracting_count = c.rhs_contracting_count = 1;
  c.lhs_contracting_axes[0] = c.rhs_contracting_axes[0] = 1;
  c.accumulator_dtype = c.output_dtype = CML_DTYPE_INVALID;
  cml_value_t xy = cml_op_dot_general(f, x, y, &c);
  cml_value_t xx = cml_op_reduce_sum(f, cml_op_mul(f, x, x), &last, 1);
  cml_value_t yy = cml_op_reduce_sum(f, cml_op_mul(f, y, y), &last, 1);
  cml_value_t dist =
      cml_op_sub(f, cml_op_add(f, bcast(f, xx, d, 2, &zero, 1), bcast(f, yy, d, 2, &one, 1)),
                 cml_op_mul(f, xy, scalar(f, CML_DTYPE_F32, 2.0)));
  return cml_op_convert_dtype(f, cml_op_arg_min_max(f, dist, 1, CML_DTYPE_I32, true),
                              CML_DTYPE_F32);
}

// Mean cross-entropy of |logits| [n, n] along |axis| with the diagonal as labels.
static cml_value_t diag_ce(cml_function_t* f, cml_value_t logits, int64_t n, int64_t axis) {
  const int64_t d[2] = {n, n}, keep = 1 - axis;
  cml_value_t mx = cml_op_reduce_max(f, logits, &axis, 1);
  cml_value_t z = cml_op_sub(f, logits, bcast(f, mx, d, 2, &keep, 1));
  cml_value_t lse = cml_op_log(f, cml_op_reduce_sum(f, cml_op_exp(f, z), &axis, 1));
  cml_shape_t is = cml_shape_make(CML_DTYPE_I32, 2, d);
  cml_value_t diag = cml_op_equal(f, cml_op_iota(f, &is, 0), cml_op_iota(f, &is, 1));
  cml_value_t picked = cml_op_reduce_sum(f, cml_op_where(f, diag, z, scalar(f, CML_DTYPE_F32, 0.0)),
                                         (int64_t[]){0, 1}, 2);
  cml_value_t total = cml_op_reduce_sum(f, lse, (int64_t[]){0}, 1);
  return cml_op_mul(f, cml_op_sub(f, total, picked), scalar(f, CML_DTYPE_F32, 1.0 / (double)n));
}

// CLIP's contrastive loss: L2-normalized image and text embeddings [256, 512], their
// similarity matrix scaled by a temperature, cross-entropy along both axes.
static cml_value_t build_clip_loss(cml_function_t* f) {
  const int64_t n = 256, e[2] = {256, 512}, last = 1, keep = 0;
  cml_value_t emb[2];
  for (int i = 0; i < 2; ++i) {
    cml_value_t a = bench_param(f, i == 0 ? "image" : "text", CML_DTYPE_F32, 2, e);
    cml_value_t r = cml_op_rsqrt(f, cml_op_reduce_sum(f, cml_op_mul(f, a, a), &last, 1));
    emb[i] = cml_op_mul(f, a, bcast(f, r, e, 2, &keep, 1));
  }
  cml_dot_config_t c;
  memset(&c, 0, sizeof c);
  c.lhs_contracting_count = c.rhs_contracting_count = 1;
  c.lhs_contracting_axes[0] = c.rhs_contracting_axes[0] = 1;
  c.accumulator_dtype = c.output_dtype = CML_DTYPE_INVALID;
  cml_value_t logits =
      cml_op_mul(f, cml_op_dot_general(f, emb[0], emb[1], &c), scalar(f, CML_DTYPE_F32, 14.285714));
  return cml_op_mul(f, cml_op_add(f, diag_ce(f, logits, n, 1), diag_ce(f, logits, n, 0)),
                    scalar(f, CML_DTYPE_F32, 0.5));
}

// A graph network layer: node features [8192, 64] gathered along 65536 edges, weighted,
// summed into the destination nodes (ScatterSum), then a dense 64-64 layer with ReLU.
static cml_value_t build_gnn(cml_function_t* f) {
  const int64_t nodes = 8192, edges = 65536, fd = 64, ed[2] = {65536, 64}, zero = 0;
  cml_value_t h = bench_param(f, "h", CML_DTYPE_F32, 2, (int64_t[]){nodes, fd});
  cml_value_t src = ids_from(f, "src", (int64_t[]){edges, 1}, 2, nodes);
  cml_value_t dst = ids_from(f, "dst", (int64_t[]){edges, 1}, 2, nodes);
  cml_value_t ew = bench_param(f, "ew", CML_DTYPE_F32, 1, &edges);
  const cml_gather_dims_t g = row_gather(fd, 1);
  cml_value_t msg = cml_op_mul(f, cml_op_gather(f, h, src, &g), bcast(f, ew, ed, 2, &zero, 1));
  cml_value_t agg0 =
      cml_op_broadcast_in_dim(f, scalar(f, CML_DTYPE_F32, 0.0), (int64_t[]){nodes, fd}, 2, NULL, 0);
  const cml_scatter_dims_t s = row_scatter();
  cml_value_t agg = cml_op_scatter_sum(f, agg0, dst, msg, &s);
  return relu(f, dense(f, agg, nodes, fd, fd));
}

// A log-mel spectrogram: 64 frames of 512 samples, Hann-windowed, real FFT, power, an 80-band
// mel matrix, log.
static cml_value_t build_spectrogram(cml_function_t* f) {
  const int64_t d[2] = {64, 512}, one = 1, len = 512;
  cml_value_t frames = bench_param(f, "frames", CML_DTYPE_F32, 2, d);
  cml_value_t win = bench_param(f, "window", CML_DTYPE_F32, 1, &len);
  cml_value_t mel = bench_param(f, "mel", CML_DTYPE_F32, 2, (int64_t[]){257, 80});
  cml_value_t spec = cml_op_fft(f, cml_op_mul(f, frames, bcast(f, win, d, 2, &one, 1)),
                                CML_FFT_FORWARD_REAL, &len, 1);
  cml_value_t re = cml_op_real(f, spec), im = cml_op_imag(f, spec);
  cml_value_t power = cml_op_add(f, cml_op_mul(f, re, re), cml_op_mul(f, im, im));
  cml_value_t m = cml_op_dot(f, power, cml_op_abs(f, mel));
  return cml_op_log(f, cml_op_add(f, m, scalar(f, CML_DTYPE_F32, 1e-6)));
}

// Gradient clipping by global norm over four tensors (1M, 512K, 256K and 64 values).
static cml_value_t build_clip_grads(cml_function_t* f) {
  const int64_t sizes[4] = {1 << 20, 1 << 19, 1 << 18, 64};
  cml_value_t g[4], sq = CML_VALUE_INVALID;
  for (int i = 0; i < 4; ++i) {
    g[i] = bench_param(f, NULL, CML_DTYPE_F32, 1, &sizes[i]);
    cml_value_t s = cml_op_reduce_sum(f, cml_op_mul(f, g[i], g[i]), (int64_t[]){0}, 1);
    sq = i == 0 ? s : cml_op_add(f, sq, s);
  }
  cml_value_t scale =
      cml_op_min(f, scalar(f, CML_DTYPE_F32, 1.0),
                 cml_op_div(f, scalar(f, CML_DTYPE_F32, 100.0),
                            cml_op_add(f, cml_op_sqrt(f, sq), scalar(f, CML_DTYPE_F32, 1e-6))));
  for (int i = 0; i < 4; ++i)
    g[i] = cml_op_mul(f, g[i], cml_op_broadcast_in_dim(f, scale, &sizes[i], 1, NULL, 0));
  return flat_concat(f, g, 4);
}

// Heads split from a fused QKV projection [8, 128, 2304]: three slices, each reshaped to
// [8, 128, 12, 64] and transposed to [8, 12, 128, 64].
static cml_value_t build_split_heads(cml_function_t* f) {
  const int64_t d[3] = {8, 128, 2304}, h[4] = {8, 128, 12, 64}, perm[4] = {0, 2, 1, 3};
  cml_value_t x = bench_param(f, "qkv", CML_DTYPE_F32, 3, d);
  cml_value_t parts[3];
  for (int i = 0; i < 3; ++i) {
    cml_value_t s =
        cml_op_slice(f, x, (int64_t[]){0, 0, 768 * i}, (int64_t[]){8, 128, 768 * (i + 1)}, NULL, 3);
    parts[i] = cml_op_transpose(f, cml_op_reshape(f, s, h, 4), perm, 4);
  }
  return flat_concat(f, parts, 3);
}

// Batched products over axis 0: [b, m, k] x [b, k, n].
static cml_value_t bmm(cml_function_t* f, cml_value_t a, cml_value_t b) {
  cml_dot_config_t c;
  memset(&c, 0, sizeof c);
  c.lhs_batch_count = c.rhs_batch_count = 1;
  c.lhs_contracting_count = c.rhs_contracting_count = 1;
  c.lhs_contracting_axes[0] = 2;
  c.rhs_contracting_axes[0] = 1;
  c.accumulator_dtype = c.output_dtype = CML_DTYPE_INVALID;
  return cml_op_dot_general(f, a, b, &c);
}

// 65536 products of 3x3 matrices (rigid transforms composed per point): batched DotGeneral.
static cml_value_t build_small_bmm(cml_function_t* f) {
  const int64_t d[3] = {65536, 3, 3};
  cml_value_t a = bench_param(f, "a", CML_DTYPE_F32, 3, d);
  cml_value_t b = bench_param(f, "b", CML_DTYPE_F32, 3, d);
  return bmm(f, a, b);
}

// Mish, x * tanh(softplus(x)), over [4096, 1024], softplus as log1p(exp(x)).
static cml_value_t build_mish(cml_function_t* f) {
  cml_value_t x = bench_param(f, "x", CML_DTYPE_F32, 2, (int64_t[]){4096, 1024});
  cml_value_t x4 = cml_op_mul(f, x, scalar(f, CML_DTYPE_F32, 4.0));
  return cml_op_mul(f, x4, cml_op_tanh(f, cml_op_log1p(f, cml_op_exp(f, x4))));
}

// An embedding lookup written as a one-hot matrix product (as on accelerators): ids [2048]
// compared with an iota of the 4096-entry vocabulary, times the table [4096, 256].
static cml_value_t build_onehot_embed(cml_function_t* f) {
  const int64_t d[2] = {2048, 4096}, keep = 0, n = 2048;
  cml_value_t ids = ids_from(f, "ids", &n, 1, 4096);
  cml_value_t table = bench_param(f, "table", CML_DTYPE_F32, 2, (int64_t[]){4096, 256});
  cml_shape_t is = cml_shape_make(CML_DTYPE_I32, 2, d);
  cml_value_t onehot = cml_op_convert_dtype(
      f, cml_op_equal(f, cml_op_iota(f, &is, 1), bcast(f, ids, d, 2, &keep, 1)), CML_DTYPE_F32);
  return cml_op_dot(f, onehot, table);
}

// The Huber loss (delta 1) of predictions against targets [4M], mean.
static cml_value_t build_huber(cml_function_t* f) {
  const int64_t n = 1 << 22;
  cml_value_t p = bench_param(f, "pred", CML_DTYPE_F32, 1, &n);
  cml_value_t t = bench_param(f, "target", CML_DTYPE_F32, 1, &n);
  cml_value_t d = cml_op_mul(f, cml_op_sub(f, p, t), scalar(f, CML_DTYPE_F32, 2.0));
  cml_value_t a = cml_op_abs(f, d);
  cml_value_t l = cml_op_where(f, cml_op_less_than(f, a, scalar(f, CML_DTYPE_F32, 1.0)),
                               cml_op_mul(f, cml_op_mul(f, d, d), scalar(f, CML_DTYPE_F32, 0.5)),
                               cml_op_sub(f, a, scalar(f, CML_DTYPE_F32, 0.5)));
  return cml_op_mul(f, cml_op_reduce_sum(f, l, (int64_t[]){0}, 1),
                    scalar(f, CML_DTYPE_F32, 1.0 / (double)n));
}

// A decoder step against a KV cache of 1024 positions: the new key and value written at the
// step's position (DynamicUpdateSlice), scores of one query against the cache, the positions
// past the step masked, softmax, the weighted values.
static cml_value_t build_kv_step(cml_function_t* f) {
  const int64_t cd[4] = {1, 12, 1024, 64}, nd[4] = {1, 12, 1, 64}, sd[4] = {1, 12, 1, 1024};
  cml_value_t kc = bench_param(f, "k_cache", CML_DTYPE_F32, 4, cd);
  cml_value_t vc = bench_param(f, "v_cache", CML_DTYPE_F32, 4, cd);
  cml_value_t q = bench_param(f, "q", CML_DTYPE_F32, 4, nd);
  cml_value_t kn = bench_param(f, "k_new", CML_DTYPE_F32, 4, nd);
  cml_value_t vn = bench_param(f, "v_new", CML_DTYPE_F32, 4, nd);
  cml_value_t pos = cml_op_reshape(f, ids_from(f, "pos", (int64_t[]){1}, 1, 1024), NULL, 0);
  cml_value_t z = cml_constant_scalar_i64(f, CML_DTYPE_I32, 0);
  cml_value_t starts[4] = {z, z, pos, z};
  cml_value_t k = cml_op_dynamic_update_slice(f, kc, kn, starts, 4);
  cml_value_t v = cml_op_dynamic_update_slice(f, vc, vn, starts, 4);
  cml_value_t s = cml_op_mul(f, head_dot(f, q, k, 3), scalar(f, CML_DTYPE_F32, 0.125));
  cml_shape_t is = cml_shape_make(CML_DTYPE_I32, 4, sd);
  cml_value_t allowed = cml_op_less_or_equal(f, cml_op_iota(f, &is, 3),
                                             cml_op_broadcast_in_dim(f, pos, sd, 4, NULL, 0));
  s = cml_op_where(f, allowed, s, scalar(f, CML_DTYPE_F32, -1e30));
  return head_dot(f, softmax(f, s, sd, 4), v, 2);
}

// The LeNet above, trained: mean cross-entropy against labels made in the graph, the
// gradients of its six parameters (convolutions' input and kernel gradients, max-pool and ReLU
// backward), concatenated flat as an optimizer over one parameter vector takes them.
static cml_value_t build_lenet_train(cml_function_t* f) {
  const int64_t n = 64, cls[2] = {64, 10}, keep = 0;
  cml_value_t x = bench_param(f, "x", CML_DTYPE_F32, 4, (int64_t[]){n, 28, 28, 1});
  cml_value_t p[6];
  p[0] = bench_param(f, "k1", CML_DTYPE_F32, 4, (int64_t[]){5, 5, 1, 32});
  p[1] = bench_param(f, "k2", CML_DTYPE_F32, 4, (int64_t[]){5, 5, 32, 64});
  p[2] = bench_param(f, "w3", CML_DTYPE_F32, 2, (int64_t[]){7 * 7 * 64, 512});
  p[3] = bench_param(f, "b3", CML_DTYPE_F32, 1, (int64_t[]){512});
  p[4] = bench_param(f, "w4", CML_DTYPE_F32, 2, (int64_t[]){512, 10});
  p[5] = bench_param(f, "b4", CML_DTYPE_F32, 1, (int64_t[]){10});
  cml_value_t h = maxpool2(f, relu(f, cml_cli_model_conv_nhwc(f, x, p[0], 1, 2, 1)));
  h = maxpool2(f, relu(f, cml_cli_model_conv_nhwc(f, h, p[1], 1, 2, 1)));
  h = cml_op_reshape(f, h, (int64_t[]){n, 7 * 7 * 64}, 2);
  int64_t axis = 1;
  h = relu(f,
           cml_op_add(f, cml_op_dot(f, h, p[2]), bcast(f, p[3], (int64_t[]){n, 512}, 2, &axis, 1)));
  cml_value_t logits = cml_op_add(f, cml_op_dot(f, h, p[4]), bcast(f, p[5], cls, 2, &axis, 1));
  const int64_t last = 1;
  cml_value_t mx = cml_op_reduce_max(f, logits, &last, 1);
  cml_value_t z = cml_op_sub(f, logits, bcast(f, mx, cls, 2, &keep, 1));
  cml_value_t lse = cml_op_log(f, cml_op_reduce_sum(f, cml_op_exp(f, z), &last, 1));
  cml_value_t logp = cml_op_sub(f, z, bcast(f, lse, cls, 2, &keep, 1));
  cml_shape_t ls = cml_shape_make(CML_DTYPE_I32, 1, &n);
  cml_value_t labels =
      cml_op_rem(f, cml_op_iota(f, &ls, 0), cml_constant_scalar_i64(f, CML_DTYPE_I32, 10));
  cml_shape_t is = cml_shape_make(CML_DTYPE_I32, 2, cls);
  cml_value_t onehot = cml_op_convert_dtype(
      f, cml_op_equal(f, cml_op_iota(f, &is, 1), bcast(f, labels, cls, 2, &keep, 1)),
      CML_DTYPE_F32);
  cml_value_t loss =
      cml_op_mul(f, cml_op_reduce_sum(f, cml_op_mul(f, logp, onehot), (int64_t[]){0, 1}, 2),
                 scalar(f, CML_DTYPE_F32, -1.0 / (double)n));
  cml_value_t g[6];
  if (cml_gradients(f, loss, p, 6, g) != CML_OK) return CML_VALUE_INVALID;
  return flat_concat(f, g, 6);
}

static cml_value_t build_vit_patches(cml_function_t* f) {
  cml_value_t x = bench_param(f, "x", CML_DTYPE_F32, 4, (int64_t[]){8, 224, 224, 3});
  cml_value_t k = bench_param(f, "k", CML_DTYPE_F32, 4, (int64_t[]){16, 16, 3, 768});
  return cml_cli_model_conv_nhwc(f, x, k, 16, 0, 1);
}

// Nearest-neighbour 2x upsampling as a broadcast and a reshape, the skip connection
// concatenated along channels, a 3x3 conv.
static cml_value_t build_unet_up(cml_function_t* f) {
  const int64_t d6[6] = {4, 32, 2, 32, 2, 64};
  cml_value_t x = bench_param(f, "x", CML_DTYPE_F32, 4, (int64_t[]){4, 32, 32, 64});
  cml_value_t skip = bench_param(f, "skip", CML_DTYPE_F32, 4, (int64_t[]){4, 64, 64, 64});
  cml_value_t k = bench_param(f, "k", CML_DTYPE_F32, 4, (int64_t[]){3, 3, 128, 64});
  cml_value_t up = bcast(f, x, d6, 6, (int64_t[]){0, 1, 3, 5}, 4);
  up = cml_op_reshape(f, up, (int64_t[]){4, 64, 64, 64}, 4);
  cml_value_t cat = cml_op_concatenate(f, 3, (cml_value_t[]){up, skip}, 2);
  return relu(f, cml_cli_model_conv_nhwc(f, cat, k, 1, 1, 1));
}

static cml_value_t build_sort_rows(cml_function_t* f) {
  cml_value_t x = bench_param(f, "x", CML_DTYPE_F32, 2, (int64_t[]){64, 1000});
  cml_function_t* cmp = NULL;
  if (cml_function_new_closure(f, &cmp) != CML_OK) return CML_VALUE_INVALID;
  cml_shape_t ss = cml_shape_scalar(CML_DTYPE_F32);
  cml_value_t a = cml_parameter(cmp, "a", &ss), b = cml_parameter(cmp, "b", &ss);
  cml_value_t gt = cml_op_greater_than(cmp, a, b);
  if (cml_function_return(cmp, &gt, 1) != CML_OK) return CML_VALUE_INVALID;
  cml_value_t out;
  if (!cml_op_sort(f, cmp, 1, false, &x, 1, &out)) return CML_VALUE_INVALID;
  return out;
}

static cml_value_t build_layernorm_bf16(cml_function_t* f) {
  const int64_t d[2] = {1024, 768};
  cml_value_t x = cml_op_convert_dtype(f, bench_param(f, "x", CML_DTYPE_BF16, 2, d), CML_DTYPE_F32);
  return cml_op_convert_dtype(f, layernorm(f, x, d, 2), CML_DTYPE_BF16);
}

// Top-1 routing: the softmax of the router's logits, the chosen expert (argmax) and its weight
// (the row max of the probabilities), as [tokens, 2] f32 (the index converted).
static cml_value_t build_moe_gate(cml_function_t* f) {
  const int64_t t = 2048, e = 8, d[2] = {2048, 8}, last = 1;
  cml_value_t x = bench_param(f, "x", CML_DTYPE_F32, 2, (int64_t[]){t, 768});
  cml_value_t w = bench_param(f, "w", CML_DTYPE_F32, 2, (int64_t[]){768, e});
  cml_value_t p = softmax(f, cml_op_dot(f, x, w), d, 2);
  cml_value_t idx = cml_op_arg_min_max(f, p, 1, CML_DTYPE_I32, false);
  cml_value_t top = cml_op_reduce_max(f, p, &last, 1);
  cml_value_t cols[2] = {
      cml_op_reshape(f, cml_op_convert_dtype(f, idx, CML_DTYPE_F32), (int64_t[]){t, 1}, 2),
      cml_op_reshape(f, top, (int64_t[]){t, 1}, 2)};
  return cml_op_concatenate(f, 1, cols, 2);
}

// A causal depthwise 1-D conv (left padding k - 1), as Mamba's and Hyena's blocks use.
static cml_value_t build_causal_depthwise_1d(cml_function_t* f) {
  cml_value_t x = bench_param(f, "x", CML_DTYPE_F32, 3, (int64_t[]){8, 1024, 512});
  cml_value_t k = bench_param(f, "k", CML_DTYPE_F32, 3, (int64_t[]){4, 1, 512});
  return conv_nwc(f, x, k, 3, 0, 512);
}

// Batch-norm over N, H, W of an NHWC |x| with batch statistics, learned |scale| and |shift|.
static cml_value_t batchnorm_nhwc(cml_function_t* f, cml_value_t x, cml_value_t scale,
                                  cml_value_t shift, const int64_t* d) {
  const cml_dtype_t dt = CML_DTYPE_F32;
  int64_t axes[3] = {0, 1, 2}, ch = 3;
  cml_value_t inv_n = scalar(f, dt, 1.0 / (double)(d[0] * d[1] * d[2]));
  cml_value_t mean = cml_op_mul(f, cml_op_reduce_sum(f, x, axes, 3), inv_n);
  cml_value_t xc = cml_op_sub(f, x, bcast(f, mean, d, 4, &ch, 1));
  cml_value_t var = cml_op_mul(f, cml_op_reduce_sum(f, cml_op_mul(f, xc, xc), axes, 3), inv_n);
  cml_value_t r = cml_op_rsqrt(f, cml_op_add(f, var, scalar(f, dt, 1e-5)));
  cml_value_t y =
      cml_op_mul(f, cml_op_mul(f, xc, bcast(f, r, d, 4, &ch, 1)), bcast(f, scale, d, 4, &ch, 1));
  return cml_op_add(f, y, bcast(f, shift, d, 4, &ch, 1));
}

// The gradients of sum(y * dy) for |count| parameters |p| (y computed from them), flat.
static cml_value_t grads_of(cml_function_t* f, cml_value_t y, cml_value_t dy, cml_value_t* p,
                            int count, int32_t rank) {
  const int64_t all[CML_MAX_RANK] = {0, 1, 2, 3, 4, 5};
  cml_value_t loss = cml_op_reduce_sum(f, cml_op_mul(f, y, dy), all, (size_t)rank);
  cml_value_t g[8];
  if (cml_gradients(f, loss, p, count, g) != CML_OK) return CML_VALUE_INVALID;
  return flat_concat(f, g, count);
}

// The input and filter gradients of a 3x3 'same' conv of an NHWC |x| [d] with an HWIO kernel
// [kd] in |groups| feature groups.
static cml_value_t conv3x3_grads(cml_function_t* f, const int64_t* d, const int64_t* kd,
                                 int64_t groups) {
  cml_value_t p[2] = {bench_param(f, "x", CML_DTYPE_F32, 4, d),
                      bench_param(f, "k", CML_DTYPE_F32, 4, kd)};
  cml_value_t dy = bench_param(f, "dy", CML_DTYPE_F32, 4, d);
  return grads_of(f, cml_cli_model_conv_nhwc(f, p[0], p[1], 1, 1, groups), dy, p, 2, 4);
}

static cml_value_t build_conv_grad(cml_function_t* f) {
  return conv3x3_grads(f, (int64_t[]){8, 28, 28, 128}, (int64_t[]){3, 3, 128, 128}, 1);
}

static cml_value_t build_bn_grad(cml_function_t* f) {
  const int64_t d[4] = {32, 28, 28, 64}, c = 64;
  cml_value_t p[3] = {bench_param(f, "x", CML_DTYPE_F32, 4, d),
                      bench_param(f, "scale", CML_DTYPE_F32, 1, &c),
                      bench_param(f, "shift", CML_DTYPE_F32, 1, &c)};
  cml_value_t dy = bench_param(f, "dy", CML_DTYPE_F32, 4, d);
  return grads_of(f, batchnorm_nhwc(f, p[0], p[1], p[2], d), dy, p, 3, 4);
}

// The StableHLO batch-norm ops as GoMLX's BatchNormForTraining and its gradient emit them.
static cml_value_t build_bn_ops(cml_function_t* f) {
  const int64_t d[4] = {32, 28, 28, 64}, c = 64;
  cml_value_t x = bench_param(f, "x", CML_DTYPE_F32, 4, d);
  cml_value_t scale = bench_param(f, "scale", CML_DTYPE_F32, 1, &c);
  cml_value_t shift = bench_param(f, "shift", CML_DTYPE_F32, 1, &c);
  cml_value_t dy = bench_param(f, "dy", CML_DTYPE_F32, 4, d);
  cml_value_t fwd[3], bwd[3];
  if (!cml_op_batch_norm_training(f, x, scale, shift, 1e-5f, 3, fwd)) return CML_VALUE_INVALID;
  if (!cml_op_batch_norm_gradient(f, x, scale, fwd[1], fwd[2], dy, 1e-5f, 3, bwd))
    return CML_VALUE_INVALID;
  return flat_concat(f, (cml_value_t[]){fwd[0], bwd[0], bwd[1], bwd[2]}, 4);
}

static cml_value_t build_f64_matmul(cml_function_t* f) {
  cml_value_t a = bench_param(f, "a", CML_DTYPE_F64, 2, (int64_t[]){512, 512});
  cml_value_t b = bench_param(f, "b", CML_DTYPE_F64, 2, (int64_t[]){512, 512});
  return cml_op_tanh(f, cml_op_dot(f, a, b));
}

// int8 operands made from uniform floats (x 127, rounded), an i32 product, one scale.
static cml_value_t build_int8_matmul(cml_function_t* f) {
  cml_value_t in[2];
  const int64_t dims[2][2] = {{256, 1024}, {1024, 1024}};
  for (int i = 0; i < 2; ++i) {
    cml_value_t u = bench_param(f, i ? "w" : "x", CML_DTYPE_F32, 2, dims[i]);
    in[i] = cml_op_convert_dtype(
        f, cml_op_round(f, cml_op_mul(f, u, scalar(f, CML_DTYPE_F32, 127))), CML_DTYPE_I8);
  }
  cml_dot_config_t c;
  memset(&c, 0, sizeof c);
  c.lhs_contracting_count = c.rhs_contracting_count = 1;
  c.lhs_contracting_axes[0] = 1;
  c.rhs_contracting_axes[0] = 0;
  c.accumulator_dtype = c.output_dtype = CML_DTYPE_I32;
  cml_value_t acc = cml_op_dot_general(f, in[0], in[1], &c);
  return cml_op_mul(f, cml_op_convert_dtype(f, acc, CML_DTYPE_F32),
                    scalar(f, CML_DTYPE_F32, 1.0 / (127.0 * 127.0)));
}

// Int32 operands made from uniform floats (x 1000, rounded), a plain Dot (an i32 accumulator,
// wrapping), converted to f32.
static cml_value_t build_i32_matmul(cml_function_t* f) {
  cml_value_t in[2];
  const int64_t dims[2][2] = {{256, 512}, {512, 512}};
  for (int i = 0; i < 2; ++i) {
    cml_value_t u = bench_param(f, i ? "w" : "x", CML_DTYPE_F32, 2, dims[i]);
    in[i] = cml_op_convert_dtype(
        f, cml_op_round(f, cml_op_mul(f, u, scalar(f, CML_DTYPE_F32, 1000))), CML_DTYPE_I32);
  }
  return cml_op_convert_dtype(f, cml_op_dot(f, in[0], in[1]), CML_DTYPE_F32);
}

// tanh-approximated GELU in |x|'s dtype.
static cml_value_t gelu_tanh(cml_function_t* f, cml_value_t x, cml_dtype_t dt) {
  cml_value_t x3 = cml_op_mul(f, cml_op_mul(f, x, x), x);
  cml_value_t inner = cml_op_mul(f, cml_op_add(f, x, cml_op_mul(f, x3, scalar(f, dt, 0.044715))),
                                 scalar(f, dt, 0.7978845608));
  return cml_op_mul(f, cml_op_mul(f, x, scalar(f, dt, 0.5)),
                    cml_op_add(f, cml_op_tanh(f, inner), scalar(f, dt, 1.0)));
}

static cml_value_t build_f16_mlp(cml_function_t* f) {
  const cml_dtype_t dt = CML_DTYPE_F16;
  cml_value_t x = bench_param(f, "x", dt, 2, (int64_t[]){128, 1024});
  cml_value_t w1 = bench_param(f, "w1", dt, 2, (int64_t[]){1024, 4096});
  cml_value_t w2 = bench_param(f, "w2", dt, 2, (int64_t[]){4096, 1024});
  return cml_op_dot(f, gelu_tanh(f, cml_op_dot(f, x, w1), dt), w2);
}

static cml_value_t build_softmax_axis1(cml_function_t* f) {
  const int64_t d[4] = {8, 64, 56, 56}, keep[3] = {0, 2, 3}, axis = 1;
  cml_value_t x = bench_param(f, "x", CML_DTYPE_F32, 4, d);
  cml_value_t mx = cml_op_reduce_max(f, x, &axis, 1);
  cml_value_t e = cml_op_exp(f, cml_op_sub(f, x, bcast(f, mx, d, 4, keep, 3)));
  cml_value_t s = cml_op_reduce_sum(f, e, &axis, 1);
  return cml_op_div(f, e, bcast(f, s, d, 4, keep, 3));
}

static cml_value_t build_argmax_cols(cml_function_t* f) {
  cml_value_t x = bench_param(f, "x", CML_DTYPE_F32, 2, (int64_t[]){4096, 1000});
  return cml_op_arg_min_max(f, x, 0, CML_DTYPE_I32, false);
}

// Log-probabilities of one label per row: a Gather of (row, label) pairs.
static cml_value_t build_pick_labels(cml_function_t* f) {
  const int64_t d[2] = {256, 32000}, last = 1, keep = 0, n = 256;
  cml_value_t logits = bench_param(f, "logits", CML_DTYPE_F32, 2, d);
  cml_value_t mx = cml_op_reduce_max(f, logits, &last, 1);
  cml_value_t z = cml_op_sub(f, logits, bcast(f, mx, d, 2, &keep, 1));
  cml_value_t lse = cml_op_log(f, cml_op_reduce_sum(f, cml_op_exp(f, z), &last, 1));
  cml_value_t logp = cml_op_sub(f, z, bcast(f, lse, d, 2, &keep, 1));
  cml_value_t labels = ids_from(f, "labels", (int64_t[]){n, 1}, 2, 32000);
  cml_shape_t rs = cml_shape_make(CML_DTYPE_I32, 2, (int64_t[]){n, 1});
  cml_value_t pairs = cml_op_concatenate(f, 1, (cml_value_t[]){cml_op_iota(f, &rs, 0), labels}, 2);
  cml_gather_dims_t g;
  memset(&g, 0, sizeof g);
  g.index_vector_axis = 1;
  g.collapsed_slice_axis_count = 2;
  g.collapsed_slice_axes[1] = 1;
  g.start_index_map_count = 2;
  g.start_index_map[1] = 1;
  g.slice_size_count = 2;
  g.slice_sizes[0] = g.slice_sizes[1] = 1;
  return cml_op_gather(f, logp, pairs, &g);
}

enum { DEC_STEPS = 64, DEC_VOCAB = 1000, DEC_H = 256 };

// Greedy decoding: each step embeds the last token, updates a tanh RNN state, takes the
// argmax of the logits as the next token; the tokens are written to an output row.
static cml_value_t build_greedy_decode(cml_function_t* f) {
  const cml_dtype_t dt = CML_DTYPE_F32;
  cml_value_t emb = bench_param(f, "emb", dt, 2, (int64_t[]){DEC_VOCAB, DEC_H});
  cml_value_t wh = bench_param(f, "wh", dt, 2, (int64_t[]){DEC_H, DEC_H});
  cml_value_t wo = bench_param(f, "wo", dt, 2, (int64_t[]){DEC_H, DEC_VOCAB});
  const int64_t hd[2] = {1, DEC_H}, steps = DEC_STEPS;
  cml_shape_t ts = cml_shape_make(CML_DTYPE_I32, 0, NULL), hs = cml_shape_make(dt, 2, hd);
  cml_shape_t os = cml_shape_make(CML_DTYPE_I32, 1, &steps);
  cml_value_t i0 = cml_constant_scalar_i64(f, CML_DTYPE_I32, 0);
  cml_value_t init[4] = {i0, i0, cml_op_broadcast_in_dim(f, scalar(f, dt, 0.0), hd, 2, NULL, 0),
                         cml_op_broadcast_in_dim(f, i0, &steps, 1, NULL, 0)};
  cml_function_t* cond = counter_below(f, (cml_shape_t[]){ts, ts, hs, os}, 4, steps);
  cml_function_t* body = NULL;
  if (!cond) return CML_VALUE_INVALID;
  if (cml_function_new_closure(f, &body) != CML_OK) return CML_VALUE_INVALID;
  cml_value_t t = cml_parameter(body, "t", &ts), tok = cml_parameter(body, "tok", &ts);
  cml_value_t h = cml_parameter(body, "h", &hs), out = cml_parameter(body, "out", &os);
  cml_value_t z = cml_constant_scalar_i64(body, CML_DTYPE_I32, 0);
  cml_value_t e = cml_op_dynamic_slice(body, emb, (cml_value_t[]){tok, z}, hd, 2);
  cml_value_t h2 = cml_op_tanh(body, cml_op_add(body, cml_op_dot(body, h, wh), e));
  cml_value_t logits = cml_op_dot(body, h2, wo);
  cml_value_t next =
      cml_op_reshape(body, cml_op_arg_min_max(body, logits, 1, CML_DTYPE_I32, false), NULL, 0);
  cml_value_t out2 =
      cml_op_dynamic_update_slice(body, out, cml_op_reshape(body, next, (int64_t[]){1}, 1), &t, 1);
  cml_value_t t2 = cml_op_add(body, t, cml_constant_scalar_i64(body, CML_DTYPE_I32, 1));
  cml_value_t outs[4] = {t2, next, h2, out2};
  if (cml_function_return(body, outs, 4) != CML_OK) return CML_VALUE_INVALID;
  cml_value_t fin[4];
  if (!cml_op_while(f, cond, body, init, 4, fin)) return CML_VALUE_INVALID;
  return fin[3];
}

static cml_value_t build_bidir_concat(cml_function_t* f) {
  const int64_t time_axis = 1;
  cml_value_t x = bench_param(f, "x", CML_DTYPE_F32, 3, (int64_t[]){32, 512, 256});
  return cml_op_concatenate(f, 2, (cml_value_t[]){x, cml_op_reverse(f, x, &time_axis, 1)}, 2);
}

// Reflection padding by 1 along |axis| of an NHWC |x| (dims |d|): the second and the
// second-to-last rows, mirrored around the edges.
static cml_value_t reflect_pad1(cml_function_t* f, cml_value_t x, const int64_t* d, int axis) {
  int64_t lo[4] = {0, 0, 0, 0}, hi[4];
  memcpy(hi, d, sizeof hi);
  lo[axis] = 1;
  hi[axis] = 2;
  cml_value_t first = cml_op_slice(f, x, lo, hi, NULL, 4);
  lo[axis] = d[axis] - 2;
  hi[axis] = d[axis] - 1;
  cml_value_t last = cml_op_slice(f, x, lo, hi, NULL, 4);
  return cml_op_concatenate(f, axis, (cml_value_t[]){first, x, last}, 3);
}

static cml_value_t build_reflect_pad_conv(cml_function_t* f) {
  const int64_t d[4] = {8, 64, 64, 32}, dh[4] = {8, 66, 64, 32};
  cml_value_t x = bench_param(f, "x", CML_DTYPE_F32, 4, d);
  cml_value_t k = bench_param(f, "k", CML_DTYPE_F32, 4, (int64_t[]){3, 3, 32, 32});
  cml_value_t p = reflect_pad1(f, reflect_pad1(f, x, d, 1), dh, 2);
  return relu(f, cml_cli_model_conv_nhwc(f, p, k, 1, 0, 1));
}

static cml_value_t build_fft_conv(cml_function_t* f) {
  const int64_t d[2] = {64, 1024}, sd[2] = {64, 513}, len = 1024, one = 1;
  cml_value_t x = bench_param(f, "x", CML_DTYPE_F32, 2, d);
  cml_value_t k = bench_param(f, "k", CML_DTYPE_F32, 1, &len);
  cml_value_t xs = cml_op_fft(f, x, CML_FFT_FORWARD_REAL, &len, 1);
  cml_value_t ks = cml_op_fft(f, k, CML_FFT_FORWARD_REAL, &len, 1);
  cml_value_t prod = cml_op_mul(f, xs, bcast(f, ks, sd, 2, &one, 1));
  return cml_op_fft(f, prod, CML_FFT_INVERSE_REAL, &len, 1);
}

// FFTs (cases that track the c backend's mixed-radix, real and Bluestein paths).
static cml_value_t build_rfft_400(cml_function_t* f) {
  const int64_t len = 400;
  cml_value_t x = bench_param(f, "x", CML_DTYPE_F32, 2, (int64_t[]){784, 400});
  return cml_op_fft(f, x, CML_FFT_FORWARD_REAL, &len, 1);
}

// A complex [rows, len] input from two f32 parameters, transformed along its last axis.
static cml_value_t build_fft_rows(cml_function_t* f, int64_t rows, int64_t len) {
  cml_value_t re = bench_param(f, "re", CML_DTYPE_F32, 2, (int64_t[]){rows, len});
  cml_value_t im = bench_param(f, "im", CML_DTYPE_F32, 2, (int64_t[]){rows, len});
  return cml_op_fft(f, cml_op_complex(f, re, im), CML_FFT_FORWARD, &len, 1);
}

static cml_value_t build_irfft_400(cml_function_t* f) {
  const int64_t len = 400;
  cml_value_t re = bench_param(f, "re", CML_DTYPE_F32, 2, (int64_t[]){256, 201});
  cml_value_t im = bench_param(f, "im", CML_DTYPE_F32, 2, (int64_t[]){256, 201});
  return cml_op_fft(f, cml_op_complex(f, re, im), CML_FFT_INVERSE_REAL, &len, 1);
}

static cml_value_t build_rfft_2d(cml_function_t* f) {
  const int64_t len[2] = {256, 256};
  cml_value_t x = bench_param(f, "x", CML_DTYPE_F32, 3, (int64_t[]){16, 256, 256});
  return cml_op_fft(f, x, CML_FFT_FORWARD_REAL, len, 2);
}

static cml_value_t build_grouped_conv(cml_function_t* f) {
  cml_value_t x = bench_param(f, "x", CML_DTYPE_F32, 4, (int64_t[]){8, 28, 28, 256});
  cml_value_t k = bench_param(f, "k", CML_DTYPE_F32, 4, (int64_t[]){3, 3, 8, 256});
  return relu(f, cml_cli_model_conv_nhwc(f, x, k, 1, 1, 32));
}

static cml_value_t build_se_block(cml_function_t* f) {
  const int64_t d[4] = {8, 28, 28, 256}, hw[2] = {1, 2}, keep[2] = {0, 3};
  cml_value_t x = bench_param(f, "x", CML_DTYPE_F32, 4, d);
  cml_value_t s =
      cml_op_mul(f, cml_op_reduce_sum(f, x, hw, 2), scalar(f, CML_DTYPE_F32, 1.0 / 784));
  s = relu(f, dense(f, s, 8, 256, 16));
  s = cml_op_logistic(f, dense(f, s, 8, 16, 256));
  return cml_op_mul(f, x, bcast(f, s, d, 4, keep, 2));
}

// Bilinear sampling (a spatial transformer's grid sample): coordinates in [-1, 1) mapped to
// pixels, the four neighbours gathered as (batch, y, x) rows of channels, weighted.
static cml_value_t build_grid_sample(cml_function_t* f) {
  const int64_t b = 4, pts = 4096, hw = 64, ch = 32, pd[3] = {4, 4096, 32}, keep[2] = {0, 1};
  const cml_dtype_t dt = CML_DTYPE_F32;
  cml_value_t img = bench_param(f, "img", dt, 4, (int64_t[]){b, hw, hw, ch});
  cml_value_t grid = bench_param(f, "grid", dt, 3, (int64_t[]){b, pts, 2});
  cml_value_t pix =
      cml_op_mul(f, cml_op_add(f, grid, scalar(f, dt, 1.0)), scalar(f, dt, 0.5 * (double)(hw - 1)));
  cml_value_t fl = cml_op_floor(f, pix);
  cml_value_t frac = cml_op_sub(f, pix, fl);
  cml_value_t i0 = cml_op_convert_dtype(f, fl, CML_DTYPE_I32);
  cml_value_t i1 = cml_op_min(f, cml_op_add(f, i0, cml_constant_scalar_i64(f, CML_DTYPE_I32, 1)),
                              cml_constant_scalar_i64(f, CML_DTYPE_I32, hw - 1));
  cml_shape_t bs = cml_shape_make(CML_DTYPE_I32, 3, (int64_t[]){b, pts, 1});
  cml_value_t bi = cml_op_iota(f, &bs, 0);
  cml_value_t ys[2], xs[2];
  const int64_t lim0[3] = {b, pts, 1}, lim1[3] = {b, pts, 2};
  for (int i = 0; i < 2; ++i) {
    cml_value_t src = i ? i1 : i0;
    ys[i] = cml_op_slice(f, src, (int64_t[]){0, 0, 0}, lim0, NULL, 3);
    xs[i] = cml_op_slice(f, src, (int64_t[]){0, 0, 1}, lim1, NULL, 3);
  }
  cml_value_t fy = cml_op_reshape(f, cml_op_slice(f, frac, (int64_t[]){0, 0, 0}, lim0, NULL, 3),
                                  (int64_t[]){b, pts}, 2);
  cml_value_t fx = cml_op_reshape(f, cml_op_slice(f, frac, (int64_t[]){0, 0, 1}, lim1, NULL, 3),
                                  (int64_t[]){b, pts}, 2);
  cml_gather_dims_t g;
  memset(&g, 0, sizeof g);
  g.index_vector_axis = 2;
  g.offset_output_axis_count = 1;
  g.offset_output_axes[0] = 2;
  g.collapsed_slice_axis_count = 3;
  g.start_index_map_count = 3;
  for (int i = 0; i < 3; ++i) g.collapsed_slice_axes[i] = g.start_index_map[i] = i;
  g.slice_size_count = 4;
  g.slice_sizes[0] = g.slice_sizes[1] = g.slice_sizes[2] = 1;
  g.slice_sizes[3] = ch;
  cml_value_t acc = CML_VALUE_INVALID;
  for (int yy = 0; yy < 2; ++yy)
    for (int xx = 0; xx < 2; ++xx) {
      cml_value_t idx = cml_op_concatenate(f, 2, (cml_value_t[]){bi, ys[yy], xs[xx]}, 3);
      cml_value_t v = cml_op_gather(f, img, idx, &g);  // [b, pts, ch]
      cml_value_t wy = yy ? fy : cml_op_sub(f, scalar(f, dt, 1.0), fy);
      cml_value_t wx = xx ? fx : cml_op_sub(f, scalar(f, dt, 1.0), fx);
      cml_value_t t = cml_op_mul(f, v, bcast(f, cml_op_mul(f, wy, wx), pd, 3, keep, 2));
      acc = yy + xx == 0 ? t : cml_op_add(f, acc, t);
    }
  return acc;
}

// wav2vec 2.0's first feature layer: a 1-D conv of raw audio, kernel 10, stride 5.
static cml_value_t build_wav_stem(cml_function_t* f) {
  cml_value_t x = bench_param(f, "x", CML_DTYPE_F32, 3, (int64_t[]){4, 16000, 1});
  cml_value_t k = bench_param(f, "k", CML_DTYPE_F32, 3, (int64_t[]){10, 1, 512});
  cml_conv_config_t cc;
  memset(&cc, 0, sizeof cc);
  cc.spatial_count = 1;
  cc.input_channel_axis = cc.output_channel_axis = 2;
  cc.input_spatial_axes[0] = cc.output_spatial_axes[0] = 1;
  cc.kernel_input_channel_axis = 1;
  cc.kernel_output_channel_axis = 2;
  cc.strides[0] = 5;
  cc.output_dtype = CML_DTYPE_INVALID;
  return gelu_tanh(f, cml_op_conv_general(f, x, k, &cc), CML_DTYPE_F32);
}

// A transposed 1-D convolution upsampling 8x (HiFi-GAN's first stage, channels first): input
// dilation 8, padding 11 on both sides, 16 taps; out [2, 128, 2048].
static cml_value_t build_convt1d(cml_function_t* f) {
  cml_value_t x = bench_param(f, "x", CML_DTYPE_F32, 3, (int64_t[]){2, 256, 256});
  cml_value_t k = bench_param(f, "k", CML_DTYPE_F32, 3, (int64_t[]){128, 256, 16});
  cml_conv_config_t cc;
  cml_conv_config_init(&cc, 1, CML_CONV_LAYOUT_CHANNELS_FIRST);
  cc.padding_low[0] = cc.padding_high[0] = 11;
  cc.input_dilations[0] = 8;
  return cml_op_conv_general(f, x, k, &cc);
}

// A feature-hashing histogram: ids hashed with a multiply, xor and shift, masked to 65536
// buckets, counted by a ScatterSum of ones.
static cml_value_t build_hash_hist(cml_function_t* f) {
  const int64_t n = 1 << 20, bins = 65536;
  const cml_dtype_t u = CML_DTYPE_U32;
  cml_value_t ids = cml_op_convert_dtype(f, ids_from(f, "ids", (int64_t[]){n, 1}, 2, 1 << 30), u);
  cml_value_t h = cml_op_mul(f, ids, cml_constant_scalar_i64(f, u, 2654435761));
  h = cml_op_bitwise_xor(f, h, cml_op_shift_right_logical(f, h, cml_constant_scalar_i64(f, u, 15)));
  cml_value_t bucket = cml_op_convert_dtype(
      f, cml_op_bitwise_and(f, h, cml_constant_scalar_i64(f, u, bins - 1)), CML_DTYPE_I32);
  cml_value_t ones = cml_op_broadcast_in_dim(f, scalar(f, CML_DTYPE_F32, 1.0), &n, 1, NULL, 0);
  cml_value_t zero = cml_op_broadcast_in_dim(f, scalar(f, CML_DTYPE_F32, 0.0), &bins, 1, NULL, 0);
  cml_scatter_dims_t s;
  memset(&s, 0, sizeof s);
  s.index_vector_axis = 1;
  s.inserted_window_axis_count = 1;
  s.scatter_axes_to_operand_axes_count = 1;
  return cml_op_scatter_sum(f, zero, bucket, ones, &s);
}

static cml_value_t build_transpose3d(cml_function_t* f) {
  cml_value_t x = bench_param(f, "x", CML_DTYPE_F32, 3, (int64_t[]){64, 128, 256});
  return cml_op_add(f, cml_op_transpose(f, x, (int64_t[]){2, 0, 1}, 3),
                    scalar(f, CML_DTYPE_F32, 1.0));
}

static cml_value_t build_fake_quant(cml_function_t* f) {
  const int64_t n = 1 << 22;
  const cml_dtype_t dt = CML_DTYPE_F32;
  cml_value_t x = bench_param(f, "x", dt, 1, &n);
  cml_value_t q = cml_op_round(f, cml_op_mul(f, x, scalar(f, dt, 1.0 / 0.0078125)));
  q = cml_op_clamp(f, scalar(f, dt, -128.0), q, scalar(f, dt, 127.0));
  return cml_op_mul(f, q, scalar(f, dt, 0.0078125));
}

static cml_value_t build_bce(cml_function_t* f) {
  const int64_t n = 1 << 20, axis = 0;
  const cml_dtype_t dt = CML_DTYPE_F32;
  cml_value_t x = bench_param(f, "logits", dt, 1, &n);
  cml_value_t y = cml_op_convert_dtype(
      f, cml_op_greater_than(f, bench_param(f, "y", dt, 1, &n), scalar(f, dt, 0.0)), dt);
  cml_value_t l = cml_op_sub(f, cml_op_max(f, x, scalar(f, dt, 0.0)), cml_op_mul(f, x, y));
  l = cml_op_add(f, l, cml_op_log1p(f, cml_op_exp(f, cml_op_neg(f, cml_op_abs(f, x)))));
  return cml_op_mul(f, cml_op_reduce_sum(f, l, &axis, 1), scalar(f, dt, 1.0 / (double)n));
}

enum { SCAN_LAYERS = 12, SCAN_B = 64, SCAN_D = 512 };

// A layer stack run by a While loop (as a scan over layers): each step slices its weight out
// of the stacked [layers, d, d] tensor.
static cml_value_t build_layer_scan(cml_function_t* f) {
  const cml_dtype_t dt = CML_DTYPE_F32;
  const int64_t hd[2] = {SCAN_B, SCAN_D};
  cml_value_t x = bench_param(f, "x", dt, 2, hd);
  cml_value_t ws = bench_param(f, "w", dt, 3, (int64_t[]){SCAN_LAYERS, SCAN_D, SCAN_D});
  cml_shape_t ts = cml_shape_make(CML_DTYPE_I32, 0, NULL), hs = cml_shape_make(dt, 2, hd);
  cml_value_t init[2] = {cml_constant_scalar_i64(f, CML_DTYPE_I32, 0), x};
  cml_function_t* cond = counter_below(f, (cml_shape_t[]){ts, hs}, 2, SCAN_LAYERS);
  cml_function_t* body = NULL;
  if (!cond) return CML_VALUE_INVALID;
  if (cml_function_new_closure(f, &body) != CML_OK) return CML_VALUE_INVALID;
  cml_value_t i = cml_parameter(body, "i", &ts), h = cml_parameter(body, "h", &hs);
  cml_value_t z = cml_constant_scalar_i64(body, CML_DTYPE_I32, 0);
  cml_value_t w =
      cml_op_dynamic_slice(body, ws, (cml_value_t[]){i, z, z}, (int64_t[]){1, SCAN_D, SCAN_D}, 3);
  w = cml_op_reshape(body, w, (int64_t[]){SCAN_D, SCAN_D}, 2);
  cml_value_t outs[2] = {cml_op_add(body, i, cml_constant_scalar_i64(body, CML_DTYPE_I32, 1)),
                         relu(body, cml_op_dot(body, h, w))};
  if (cml_function_return(body, outs, 2) != CML_OK) return CML_VALUE_INVALID;
  cml_value_t fin[2];
  if (!cml_op_while(f, cond, body, init, 2, fin)) return CML_VALUE_INVALID;
  return fin[1];
}

static cml_value_t build_embed_bag(cml_function_t* f) {
  const int64_t bag_axis = 1;
  cml_value_t table = bench_param(f, "table", CML_DTYPE_F32, 2, (int64_t[]){50000, 128});
  cml_value_t ids = ids_from(f, "ids", (int64_t[]){1024, 32, 1}, 3, 50000);
  const cml_gather_dims_t g = row_gather(128, 2);
  return cml_op_reduce_sum(f, cml_op_gather(f, table, ids, &g), &bag_axis, 1);
}

static cml_value_t build_einsum_bhqk(cml_function_t* f) {
  const int64_t d[4] = {8, 128, 12, 64};
  cml_value_t q = bench_param(f, "q", CML_DTYPE_F32, 4, d);
  cml_value_t k = bench_param(f, "k", CML_DTYPE_F32, 4, d);
  cml_dot_config_t c;
  memset(&c, 0, sizeof c);
  c.lhs_batch_count = c.rhs_batch_count = 2;
  c.lhs_batch_axes[1] = c.rhs_batch_axes[1] = 2;
  c.lhs_contracting_count = c.rhs_contracting_count = 1;
  c.lhs_contracting_axes[0] = c.rhs_contracting_axes[0] = 3;
  c.accumulator_dtype = c.output_dtype = CML_DTYPE_INVALID;
  return cml_op_mul(f, cml_op_dot_general(f, q, k, &c), scalar(f, CML_DTYPE_F32, 0.125));
}

static cml_value_t build_f64_sumsq(cml_function_t* f) {
  const int64_t n = 1 << 24, axis = 0;
  cml_value_t x = cml_op_convert_dtype(f, bench_param(f, "x", CML_DTYPE_F32, 1, &n), CML_DTYPE_F64);
  return cml_op_reduce_sum(f, cml_op_mul(f, x, x), &axis, 1);
}

// A Sort with |comparator| "a < b" of the first operand (|count| operands) along |axis|.
static bool sort_ascending(cml_function_t* f, int64_t axis, const cml_value_t* ops, size_t count,
                           cml_value_t* out) {
  cml_function_t* cmp = NULL;
  if (cml_function_new_closure(f, &cmp) != CML_OK) return false;
  cml_value_t a = CML_VALUE_INVALID, b = CML_VALUE_INVALID;
  for (size_t i = 0; i < count; ++i) {
    cml_shape_t s;
    if (!cml_builder_value_shape(cml_function_builder(f), ops[i], &s)) return false;
    cml_shape_t ss = cml_shape_scalar(s.dtype);
    cml_value_t l = cml_parameter(cmp, NULL, &ss), r = cml_parameter(cmp, NULL, &ss);
    if (i == 0) a = l, b = r;
  }
  cml_value_t lt = cml_op_less_than(cmp, a, b);
  if (cml_function_return(cmp, &lt, 1) != CML_OK) return false;
  return cml_op_sort(f, cmp, axis, true, ops, count, out);
}

static cml_value_t build_sort_axis0(cml_function_t* f) {
  cml_value_t x = bench_param(f, "x", CML_DTYPE_F32, 2, (int64_t[]){1000, 64});
  cml_value_t out;
  return sort_ascending(f, 0, &x, 1, &out) ? out : CML_VALUE_INVALID;
}

// Sort of 65536 f32 keys by a comparator on a transformed key: |a| > |b| (descending by
// magnitude), stable.
static cml_value_t build_sort_abs(cml_function_t* f) {
  const int64_t n = 1 << 16;
  cml_value_t x = bench_param(f, "x", CML_DTYPE_F32, 1, &n), out;
  cml_function_t* cmp = NULL;
  if (cml_function_new_closure(f, &cmp) != CML_OK) return CML_VALUE_INVALID;
  cml_shape_t s = cml_shape_scalar(CML_DTYPE_F32);
  cml_value_t a = cml_parameter(cmp, "a", &s), b = cml_parameter(cmp, "b", &s);
  cml_value_t gt = cml_op_greater_than(cmp, cml_op_abs(cmp, a), cml_op_abs(cmp, b));
  if (cml_function_return(cmp, &gt, 1) != CML_OK) return CML_VALUE_INVALID;
  return cml_op_sort(f, cmp, 0, true, &x, 1, &out) ? out : CML_VALUE_INVALID;
}

// Lexicographic sort of 65536 (k1, k2) pairs, k1 i32 in [0, 100) (from uniform f32), k2 f32:
// Or(LessThan(a1, b1), And(Equal(a1, b1), LessThan(a2, b2))), stable. Returns k2 sorted.
static cml_value_t build_sort_lexi(cml_function_t* f) {
  const int64_t n = 1 << 16;
  cml_value_t u = bench_param(f, "u", CML_DTYPE_F32, 1, &n);
  cml_value_t k1 = cml_op_convert_dtype(
      f,
      cml_op_floor(f, cml_op_mul(f, cml_op_add(f, u, scalar(f, CML_DTYPE_F32, 1.0)),
                                 scalar(f, CML_DTYPE_F32, 50.0))),
      CML_DTYPE_I32);
  cml_value_t ops[2] = {k1, bench_param(f, "k2", CML_DTYPE_F32, 1, &n)}, out[2];
  cml_function_t* cmp = NULL;
  if (cml_function_new_closure(f, &cmp) != CML_OK) return CML_VALUE_INVALID;
  cml_shape_t si = cml_shape_scalar(CML_DTYPE_I32), sf = cml_shape_scalar(CML_DTYPE_F32);
  cml_value_t a1 = cml_parameter(cmp, "a1", &si), b1 = cml_parameter(cmp, "b1", &si);
  cml_value_t a2 = cml_parameter(cmp, "a2", &sf), b2 = cml_parameter(cmp, "b2", &sf);
  cml_value_t r = cml_op_logical_or(
      cmp, cml_op_less_than(cmp, a1, b1),
      cml_op_logical_and(cmp, cml_op_equal(cmp, a1, b1), cml_op_less_than(cmp, a2, b2)));
  if (cml_function_return(cmp, &r, 1) != CML_OK) return CML_VALUE_INVALID;
  return cml_op_sort(f, cmp, 0, true, ops, 2, out) ? out[1] : CML_VALUE_INVALID;
}

static cml_value_t build_argsort(cml_function_t* f) {
  const int64_t d[2] = {256, 4096};
  cml_value_t x = bench_param(f, "x", CML_DTYPE_F32, 2, d);
  cml_shape_t is = cml_shape_make(CML_DTYPE_I32, 2, d);
  cml_value_t ops[2] = {x, cml_op_iota(f, &is, 1)}, out[2];
  if (!sort_ascending(f, 1, ops, 2, out)) return CML_VALUE_INVALID;
  return cml_op_convert_dtype(f, out[1], CML_DTYPE_F32);
}

// Zero insertion (a transposed conv's input dilation written as a Pad with interior 1).
static cml_value_t build_interior_pad(cml_function_t* f) {
  cml_value_t x = bench_param(f, "x", CML_DTYPE_F32, 4, (int64_t[]){8, 64, 64, 32});
  const cml_pad_axis_t pads[4] = {{0, 0, 0}, {0, 0, 1}, {0, 0, 1}, {0, 0, 0}};
  return cml_op_pad(f, x, scalar(f, CML_DTYPE_F32, 0.0), pads, 4);
}

static cml_value_t build_flip_hw(cml_function_t* f) {
  cml_value_t x = bench_param(f, "x", CML_DTYPE_F32, 4, (int64_t[]){16, 64, 64, 32});
  return cml_op_reverse(f, x, (int64_t[]){1, 2}, 2);
}

static cml_value_t build_transpose_2d(cml_function_t* f) {
  cml_value_t x = bench_param(f, "x", CML_DTYPE_F32, 2, (int64_t[]){4096, 4096});
  return cml_op_transpose(f, x, (int64_t[]){1, 0}, 2);
}

// Every other element of a [4M] vector, scaled: a strided Slice read by an elementwise op.
static cml_value_t build_strided_slice(cml_function_t* f) {
  const int64_t n = 1 << 22, lim = n, step = 2, zero = 0;
  cml_value_t x = bench_param(f, "x", CML_DTYPE_F32, 1, &n);
  cml_value_t s = cml_op_slice(f, x, &zero, &lim, &step, 1);
  return cml_op_mul(f, s, scalar(f, CML_DTYPE_F32, 3.0));
}

static cml_value_t build_middle_reduce(cml_function_t* f) {
  const int64_t axis = 1;
  cml_value_t x = bench_param(f, "x", CML_DTYPE_F32, 3, (int64_t[]){64, 4096, 16});
  return cml_op_reduce_sum(f, x, &axis, 1);
}

// Flat indices split into (row, col) by i32 division and remainder, recombined.
static cml_value_t build_int_divmod(cml_function_t* f) {
  const int64_t n = 1 << 22;
  cml_value_t i = ids_from(f, "ids", &n, 1, 1 << 30);
  cml_value_t w = cml_constant_scalar_i64(f, CML_DTYPE_I32, 1000);
  cml_value_t r = cml_op_div(f, i, w), c = cml_op_rem(f, i, w);
  return cml_op_add(f, cml_op_mul(f, c, cml_constant_scalar_i64(f, CML_DTYPE_I32, 7)), r);
}

static cml_value_t build_pow(cml_function_t* f) {
  const int64_t n = 1 << 22;
  cml_value_t x = cml_op_abs(f, bench_param(f, "x", CML_DTYPE_F32, 1, &n));
  return cml_op_pow(f, x, scalar(f, CML_DTYPE_F32, 0.75));
}

static cml_value_t build_atan2(cml_function_t* f) {
  const int64_t n = 1 << 22;
  cml_value_t y = bench_param(f, "y", CML_DTYPE_F32, 1, &n);
  cml_value_t x = bench_param(f, "x", CML_DTYPE_F32, 1, &n);
  return cml_op_atan2(f, y, x);
}

// |exp(z)| of complex z built from two real vectors.
static cml_value_t build_complex_exp(cml_function_t* f) {
  const int64_t n = 1 << 20;
  cml_value_t re = bench_param(f, "re", CML_DTYPE_F32, 1, &n);
  cml_value_t im = bench_param(f, "im", CML_DTYPE_F32, 1, &n);
  return cml_op_abs(f, cml_op_exp(f, cml_op_complex(f, re, im)));
}

static cml_value_t build_bf16_roundtrip(cml_function_t* f) {
  const int64_t n = 1 << 24;
  cml_value_t x = bench_param(f, "x", CML_DTYPE_F32, 1, &n);
  return cml_op_convert_dtype(f, cml_op_convert_dtype(f, x, CML_DTYPE_BF16), CML_DTYPE_F32);
}

// Gaussian samples by Box-Muller from two uniform vectors.
static cml_value_t build_box_muller(cml_function_t* f) {
  const int64_t n = 1 << 20;
  const cml_dtype_t dt = CML_DTYPE_F32;
  // u1 in (0, 1): log(u1) <= 0.
  cml_value_t u1 =
      cml_op_mul(f, cml_op_add(f, bench_param(f, "u1", dt, 1, &n), scalar(f, dt, 1.001)),
                 scalar(f, dt, 0.499));
  cml_value_t u2 = bench_param(f, "u2", dt, 1, &n);
  cml_value_t r = cml_op_sqrt(f, cml_op_mul(f, cml_op_log(f, u1), scalar(f, dt, -2.0)));
  return cml_op_mul(f, r, cml_op_cos(f, cml_op_mul(f, u2, scalar(f, dt, 3.14159265))));
}

// A shared weight broadcast over a batch of products.
static cml_value_t build_bcast_bmm(cml_function_t* f) {
  const int64_t wd[3] = {64, 128, 128}, axes[2] = {1, 2};
  cml_value_t x = bench_param(f, "x", CML_DTYPE_F32, 3, wd);
  cml_value_t w = bench_param(f, "w", CML_DTYPE_F32, 2, (int64_t[]){128, 128});
  cml_value_t wb = cml_op_broadcast_in_dim(f, w, wd, 3, axes, 2);
  return bmm(f, x, wb);
}

static cml_value_t build_depthwise_grad(cml_function_t* f) {
  return conv3x3_grads(f, (int64_t[]){8, 56, 56, 64}, (int64_t[]){3, 3, 1, 64}, 64);
}

// A contraction over two axes: [8,12,128,64] x [8,12,128,64] over heads and depth.
static cml_value_t build_two_axis_contract(cml_function_t* f) {
  const int64_t d[4] = {8, 128, 12, 64};
  cml_value_t a = bench_param(f, "a", CML_DTYPE_F32, 4, d);
  cml_value_t b = bench_param(f, "b", CML_DTYPE_F32, 4, d);
  cml_dot_config_t c;
  memset(&c, 0, sizeof c);
  c.lhs_batch_count = c.rhs_batch_count = 1;
  c.lhs_contracting_count = c.rhs_contracting_count = 2;
  c.lhs_contracting_axes[0] = c.rhs_contracting_axes[0] = 2;
  c.lhs_contracting_axes[1] = c.rhs_contracting_axes[1] = 3;
  c.accumulator_dtype = c.output_dtype = CML_DTYPE_INVALID;
  return cml_op_dot_general(f, a, b, &c);
}

static cml_value_t build_outer(cml_function_t* f) {
  const int64_t n = 4096;
  cml_value_t a = bench_param(f, "a", CML_DTYPE_F32, 1, &n);
  cml_value_t b = bench_param(f, "b", CML_DTYPE_F32, 1, &n);
  cml_dot_config_t c;
  memset(&c, 0, sizeof c);
  c.accumulator_dtype = c.output_dtype = CML_DTYPE_INVALID;
  return cml_op_dot_general(f, a, b, &c);
}

static cml_value_t build_global_argmax(cml_function_t* f) {
  const int64_t n = 1 << 24;
  cml_value_t x = bench_param(f, "x", CML_DTYPE_F32, 1, &n);
  return cml_op_convert_dtype(f, cml_op_arg_min_max(f, x, 0, CML_DTYPE_I32, false), CML_DTYPE_F32);
}

// A row scan (window |n| along axis 1, padding n - 1 before) of [rows, n] with |op|.
static cml_value_t row_scan(cml_function_t* f, cml_value_t x, int64_t n, cml_reduce_type_t op) {
  cml_window_config_t w;
  memset(&w, 0, sizeof w);
  w.rank = 2;
  w.window_dims[0] = w.strides[0] = w.strides[1] = 1;
  w.window_dims[1] = n;
  w.padding_low[1] = n - 1;
  return cml_op_reduce_window(f, x, op, &w);
}

static cml_value_t build_avgpool_grad(cml_function_t* f) {
  const int64_t d[4] = {8, 56, 56, 64};
  cml_value_t x = bench_param(f, "x", CML_DTYPE_F32, 4, d);
  cml_value_t dy = bench_param(f, "dy", CML_DTYPE_F32, 4, (int64_t[]){8, 28, 28, 64});
  const cml_window_config_t w = nhwc_window(2, 2, 0, 0);
  cml_value_t y =
      cml_op_mul(f, cml_op_reduce_window(f, x, CML_REDUCE_SUM, &w), scalar(f, CML_DTYPE_F32, 0.25));
  return grads_of(f, y, dy, &x, 1, 4);
}

static cml_value_t build_cummax(cml_function_t* f) {
  return row_scan(f, bench_param(f, "x", CML_DTYPE_F32, 2, (int64_t[]){64, 2048}), 2048,
                  CML_REDUCE_MAX);
}

// A reversed cumulative sum (discounted returns, suffix sums): Reverse, scan, Reverse.
static cml_value_t build_reverse_cumsum(cml_function_t* f) {
  const int64_t axis = 1;
  cml_value_t x = bench_param(f, "x", CML_DTYPE_F32, 2, (int64_t[]){64, 2048});
  cml_value_t s = row_scan(f, cml_op_reverse(f, x, &axis, 1), 2048, CML_REDUCE_SUM);
  return cml_op_reverse(f, s, &axis, 1);
}

// 10000 iterations of a scalar recurrence in a While loop (control-flow overhead).
static cml_value_t build_while_scalar(cml_function_t* f) {
  const cml_dtype_t dt = CML_DTYPE_F32;
  cml_value_t x0 = cml_op_reshape(f, bench_param(f, "x", dt, 1, (int64_t[]){1}), NULL, 0);
  cml_shape_t ts = cml_shape_make(CML_DTYPE_I32, 0, NULL), xs = cml_shape_scalar(dt);
  cml_value_t init[2] = {cml_constant_scalar_i64(f, CML_DTYPE_I32, 0), x0};
  cml_function_t* cond = counter_below(f, (cml_shape_t[]){ts, xs}, 2, 10000);
  cml_function_t* body = NULL;
  if (!cond) return CML_VALUE_INVALID;
  if (cml_function_new_closure(f, &body) != CML_OK) return CML_VALUE_INVALID;
  cml_value_t i = cml_parameter(body, "i", &ts), x = cml_parameter(body, "x", &xs);
  cml_value_t nx =
      cml_op_add(body, cml_op_mul(body, x, scalar(body, dt, 0.999)), scalar(body, dt, 0.001));
  cml_value_t outs[2] = {cml_op_add(body, i, cml_constant_scalar_i64(body, CML_DTYPE_I32, 1)), nx};
  if (cml_function_return(body, outs, 2) != CML_OK) return CML_VALUE_INVALID;
  cml_value_t fin[2];
  if (!cml_op_while(f, cond, body, init, 2, fin)) return CML_VALUE_INVALID;
  return fin[1];
}

// Symmetric int8 quantization for storage: round(x / s) clamped to [-127, 127], as i8.
static cml_value_t build_quantize_i8(cml_function_t* f) {
  const int64_t n = 1 << 24;
  const cml_dtype_t dt = CML_DTYPE_F32;
  cml_value_t q =
      cml_op_round(f, cml_op_mul(f, bench_param(f, "x", dt, 1, &n), scalar(f, dt, 127.0)));
  q = cml_op_clamp(f, scalar(f, dt, -127.0), q, scalar(f, dt, 127.0));
  return cml_op_convert_dtype(f, cml_op_convert_dtype(f, q, CML_DTYPE_I8), dt);
}

// Sign bits by Bitcast: (bits >> 31) as f32.
static cml_value_t build_bitcast_sign(cml_function_t* f) {
  const int64_t n = 1 << 22;
  cml_value_t b = cml_op_bitcast(f, bench_param(f, "x", CML_DTYPE_F32, 1, &n), CML_DTYPE_U32);
  b = cml_op_shift_right_logical(f, b, cml_constant_scalar_i64(f, CML_DTYPE_U32, 31));
  return cml_op_convert_dtype(f, b, CML_DTYPE_F32);
}

// 48 rows of 64 sliced out of one input, each scaled, concatenated (a graph of many small ops).
static cml_value_t build_concat_many(cml_function_t* f) {
  const int64_t n = 64;
  cml_value_t x = bench_param(f, "x", CML_DTYPE_F32, 2, (int64_t[]){48, n});
  cml_value_t parts[48];
  for (int i = 0; i < 48; ++i) {
    cml_value_t row = cml_op_slice(f, x, (int64_t[]){i, 0}, (int64_t[]){i + 1, n}, NULL, 2);
    parts[i] = cml_op_mul(f, cml_op_reshape(f, row, &n, 1), scalar(f, CML_DTYPE_F32, 1.0 + i));
  }
  return cml_op_concatenate(f, 0, parts, 48);
}

// A chain of 60 elementwise ops over [1M] (longer than one loop holds).
static cml_value_t build_deep_chain(cml_function_t* f) {
  const int64_t n = 1 << 20;
  cml_value_t x = bench_param(f, "x", CML_DTYPE_F32, 1, &n);
  for (int i = 0; i < 30; ++i) {
    x = cml_op_mul(f, x, scalar(f, CML_DTYPE_F32, 0.99 + 0.001 * i));
    x = cml_op_add(f, x, scalar(f, CML_DTYPE_F32, 0.01 * i));
  }
  return x;
}

static cml_value_t build_softmax_long(cml_function_t* f) {
  const int64_t d[2] = {8, 131072};
  return softmax(f, bench_param(f, "x", CML_DTYPE_F32, 2, d), d, 2);
}

// One row per sample times its own weight: [64, 1, 512] x [64, 512, 512].
static cml_value_t build_batched_gemv(cml_function_t* f) {
  cml_value_t x = bench_param(f, "x", CML_DTYPE_F32, 3, (int64_t[]){64, 1, 512});
  cml_value_t w = bench_param(f, "w", CML_DTYPE_F32, 3, (int64_t[]){64, 512, 512});
  return bmm(f, x, w);
}

static cml_value_t build_conv1x1_s2(cml_function_t* f) {
  cml_value_t x = bench_param(f, "x", CML_DTYPE_F32, 4, (int64_t[]){8, 56, 56, 64});
  cml_value_t k = bench_param(f, "k", CML_DTYPE_F32, 4, (int64_t[]){1, 1, 64, 128});
  return cml_cli_model_conv_nhwc(f, x, k, 2, 0, 1);
}

static cml_value_t build_colmax(cml_function_t* f) {
  const int64_t axis = 0;
  return cml_op_reduce_max(f, bench_param(f, "x", CML_DTYPE_F32, 2, (int64_t[]){8192, 256}), &axis,
                           1);
}

// x mod 0.7 (Rem of floats: fmod) over [4M].
static cml_value_t build_fmod(cml_function_t* f) {
  const int64_t n = 1 << 22;
  cml_value_t x =
      cml_op_mul(f, bench_param(f, "x", CML_DTYPE_F32, 1, &n), scalar(f, CML_DTYPE_F32, 100));
  return cml_op_rem(f, x, scalar(f, CML_DTYPE_F32, 0.7));
}

static cml_value_t build_sort_flat(cml_function_t* f) {
  const int64_t n = 1 << 20;
  cml_value_t ids = ids_from(f, "x", &n, 1, 1 << 30);
  cml_value_t out;
  if (!sort_ascending(f, 0, &ids, 1, &out)) return CML_VALUE_INVALID;
  return cml_op_convert_dtype(f, out, CML_DTYPE_F32);
}

//===--- sixth batch ---===//

// Depth to space: [b, h, w, r*r*c] -> [b, h*r, w*r, c] by a reshape, a transpose and a reshape.
static cml_value_t build_pixel_shuffle(cml_function_t* f) {
  cml_value_t x = bench_param(f, "x", CML_DTYPE_F32, 4, (int64_t[]){8, 32, 32, 256});
  x = cml_op_reshape(f, x, (int64_t[]){8, 32, 32, 2, 2, 64}, 6);
  x = cml_op_transpose(f, x, (int64_t[]){0, 1, 3, 2, 4, 5}, 6);
  return cml_op_reshape(f, x, (int64_t[]){8, 64, 64, 64}, 4);
}

// Cross-entropy against labels smoothed by 0.1: the targets are a one-hot row (an iota compared
// with the label) mixed with the uniform distribution; the mean over the batch.
static cml_value_t build_label_smooth_ce(cml_function_t* f) {
  const int64_t n = 256, k = 32000, d[2] = {256, 32000}, last = 1, keep = 0;
  const double eps = 0.1;
  cml_value_t logits = bench_param(f, "logits", CML_DTYPE_F32, 2, d);
  cml_value_t mx = cml_op_reduce_max(f, logits, &last, 1);
  cml_value_t z = cml_op_sub(f, logits, bcast(f, mx, d, 2, &keep, 1));
  cml_value_t lse = cml_op_log(f, cml_op_reduce_sum(f, cml_op_exp(f, z), &last, 1));
  cml_value_t logp = cml_op_sub(f, z, bcast(f, lse, d, 2, &keep, 1));
  cml_value_t labels = ids_from(f, "labels", &n, 1, k);
  cml_shape_t is = cml_shape_make(CML_DTYPE_I32, 2, d);
  cml_value_t hit = cml_op_equal(f, cml_op_iota(f, &is, 1), bcast(f, labels, d, 2, &keep, 1));
  cml_value_t target = cml_op_where(f, hit, scalar(f, CML_DTYPE_F32, 1.0 - eps + eps / (double)k),
                                    scalar(f, CML_DTYPE_F32, eps / (double)k));
  cml_value_t total = cml_op_reduce_sum(f, cml_op_mul(f, target, logp), (int64_t[]){0, 1}, 2);
  return cml_op_mul(f, total, scalar(f, CML_DTYPE_F32, -1.0 / (double)n));
}

// Transformer positions computed in the graph: angle = pos * 10000^(-2i/d), sin on the first
// half of the features and cos on the second, added to x.
static cml_value_t build_sinusoid_pe(cml_function_t* f) {
  const int64_t s = 2048, h = 256, xd[3] = {8, 2048, 512};
  cml_value_t x = bench_param(f, "x", CML_DTYPE_F32, 3, xd);
  cml_shape_t ps = cml_shape_make(CML_DTYPE_F32, 2, (int64_t[]){s, h});
  cml_value_t pos = cml_op_iota(f, &ps, 0), i = cml_op_iota(f, &ps, 1);
  cml_value_t freq =
      cml_op_exp(f, cml_op_mul(f, i, scalar(f, CML_DTYPE_F32, -2.0 * log(10000.0) / 512.0)));
  cml_value_t angle = cml_op_mul(f, pos, freq);
  cml_value_t pe =
      cml_op_concatenate(f, 1, (cml_value_t[]){cml_op_sin(f, angle), cml_op_cos(f, angle)}, 2);
  return cml_op_add(f, x, bcast(f, pe, xd, 3, (int64_t[]){1, 2}, 2));
}

enum { GRU_T = 32, GRU_B = 32, GRU_IN = 256, GRU_H = 256 };

// A GRU over GRU_T steps in a While loop: the input and hidden projections (3 gates each),
// reset and update gates, the candidate from the reset hidden projection.
static cml_value_t build_gru(cml_function_t* f) {
  const cml_dtype_t dt = CML_DTYPE_F32;
  cml_value_t xs = bench_param(f, "xs", dt, 3, (int64_t[]){GRU_T, GRU_B, GRU_IN});
  // Weights at the usual initial scale (about 1 / sqrt(fan-in)), so that the recurrence is not
  // chaotic: with weights of order 1, rounding differences grow 50x in 3 steps.
  cml_value_t wx = cml_op_mul(f, bench_param(f, "wx", dt, 2, (int64_t[]){GRU_IN, 3 * GRU_H}),
                              scalar(f, dt, 0.0625));
  cml_value_t wh = cml_op_mul(f, bench_param(f, "wh", dt, 2, (int64_t[]){GRU_H, 3 * GRU_H}),
                              scalar(f, dt, 0.0625));
  const int64_t hd[2] = {GRU_B, GRU_H};
  cml_value_t zero = cml_op_broadcast_in_dim(f, scalar(f, dt, 0.0), hd, 2, NULL, 0);
  cml_value_t init[2] = {cml_constant_scalar_i64(f, CML_DTYPE_I32, 0), zero};
  cml_shape_t ts = cml_shape_make(CML_DTYPE_I32, 0, NULL), hs = cml_shape_make(dt, 2, hd);
  cml_function_t* cond = counter_below(f, (cml_shape_t[]){ts, hs}, 2, GRU_T);
  cml_function_t* body = NULL;
  if (!cond || cml_function_new_closure(f, &body) != CML_OK) return CML_VALUE_INVALID;
  cml_value_t t = cml_parameter(body, "t", &ts);
  cml_value_t h = cml_parameter(body, "h", &hs);
  cml_value_t z0 = cml_constant_scalar_i64(body, CML_DTYPE_I32, 0);
  cml_value_t xt =
      cml_op_dynamic_slice(body, xs, (cml_value_t[]){t, z0, z0}, (int64_t[]){1, GRU_B, GRU_IN}, 3);
  xt = cml_op_reshape(body, xt, (int64_t[]){GRU_B, GRU_IN}, 2);
  cml_value_t gx = cml_op_dot(body, xt, wx), gh = cml_op_dot(body, h, wh);
  cml_value_t px[3], ph[3];
  for (int i = 0; i < 3; ++i) {
    const int64_t lo[2] = {0, i * GRU_H}, hi[2] = {GRU_B, (i + 1) * GRU_H};
    px[i] = cml_op_slice(body, gx, lo, hi, NULL, 2);
    ph[i] = cml_op_slice(body, gh, lo, hi, NULL, 2);
  }
  cml_value_t r = cml_op_logistic(body, cml_op_add(body, px[0], ph[0]));
  cml_value_t u = cml_op_logistic(body, cml_op_add(body, px[1], ph[1]));
  cml_value_t n = cml_op_tanh(body, cml_op_add(body, px[2], cml_op_mul(body, r, ph[2])));
  cml_value_t h2 = cml_op_add(body, n, cml_op_mul(body, u, cml_op_sub(body, h, n)));
  cml_value_t t2 = cml_op_add(body, t, cml_constant_scalar_i64(body, CML_DTYPE_I32, 1));
  if (cml_function_return(body, (cml_value_t[]){t2, h2}, 2) != CML_OK) return CML_VALUE_INVALID;
  cml_value_t fin[2];
  if (!cml_op_while(f, cond, body, init, 2, fin)) return CML_VALUE_INVALID;
  return fin[1];
}

// KL(p || q) = sum p (log p - log q) of two row softmaxes, averaged over the rows.
static cml_value_t build_kl_div(cml_function_t* f) {
  const int64_t d[2] = {256, 32000}, last = 1, keep = 0;
  cml_value_t logp[2], p = CML_VALUE_INVALID;
  for (int i = 0; i < 2; ++i) {
    cml_value_t x = bench_param(f, i ? "q" : "p", CML_DTYPE_F32, 2, d);
    cml_value_t mx = cml_op_reduce_max(f, x, &last, 1);
    cml_value_t z = cml_op_sub(f, x, bcast(f, mx, d, 2, &keep, 1));
    cml_value_t e = cml_op_exp(f, z);
    cml_value_t s = cml_op_reduce_sum(f, e, &last, 1);
    logp[i] = cml_op_sub(f, z, bcast(f, cml_op_log(f, s), d, 2, &keep, 1));
    if (i == 0) p = cml_op_div(f, e, bcast(f, s, d, 2, &keep, 1));
  }
  cml_value_t kl =
      cml_op_reduce_sum(f, cml_op_mul(f, p, cml_op_sub(f, logp[0], logp[1])), (int64_t[]){0, 1}, 2);
  return cml_op_mul(f, kl, scalar(f, CML_DTYPE_F32, 1.0 / 256.0));
}

// Focal loss (gamma 2): -(1 - pt)^2 log(pt), pt the probability of the true class.
static cml_value_t build_focal_loss(cml_function_t* f) {
  const int64_t n = 1 << 22, axis = 0;
  const cml_dtype_t dt = CML_DTYPE_F32;
  cml_value_t x = bench_param(f, "logits", dt, 1, &n);
  cml_value_t y = cml_op_greater_than(f, bench_param(f, "y", dt, 1, &n), scalar(f, dt, 0.0));
  cml_value_t p = cml_op_logistic(f, x);
  cml_value_t pt = cml_op_where(f, y, p, cml_op_sub(f, scalar(f, dt, 1.0), p));
  pt = cml_op_max(f, pt, scalar(f, dt, 1e-7));
  cml_value_t w = cml_op_pow(f, cml_op_sub(f, scalar(f, dt, 1.0), pt), scalar(f, dt, 2.0));
  cml_value_t l = cml_op_neg(f, cml_op_mul(f, w, cml_op_log(f, pt)));
  return cml_op_mul(f, cml_op_reduce_sum(f, l, &axis, 1), scalar(f, dt, 1.0 / (double)n));
}

static cml_value_t build_maxpool_fwd(cml_function_t* f) {
  cml_value_t x = bench_param(f, "x", CML_DTYPE_F32, 4, (int64_t[]){8, 112, 112, 64});
  const cml_window_config_t w = nhwc_window(3, 2, 1, 1);
  return cml_op_reduce_window(f, x, CML_REDUCE_MAX, &w);
}

// BERT-style pooling: the mean of the first len[b] positions of each sequence (a mask from an
// iota compared with the lengths).
static cml_value_t build_masked_mean_pool(cml_function_t* f) {
  const int64_t b = 32, s = 512, d[3] = {32, 512, 768}, md[2] = {32, 512}, keep = 0, seq = 1;
  cml_value_t x = bench_param(f, "x", CML_DTYPE_F32, 3, d);
  cml_value_t len =
      cml_op_add(f, ids_from(f, "len", &b, 1, s), cml_constant_scalar_i64(f, CML_DTYPE_I32, 1));
  cml_shape_t ms = cml_shape_make(CML_DTYPE_I32, 2, md);
  cml_value_t mask = cml_op_convert_dtype(
      f, cml_op_less_than(f, cml_op_iota(f, &ms, 1), bcast(f, len, md, 2, &keep, 1)),
      CML_DTYPE_F32);
  cml_value_t sum =
      cml_op_reduce_sum(f, cml_op_mul(f, x, bcast(f, mask, d, 3, (int64_t[]){0, 1}, 2)), &seq, 1);
  cml_value_t count = cml_op_convert_dtype(f, len, CML_DTYPE_F32);
  return cml_op_div(f, sum, bcast(f, count, (int64_t[]){32, 768}, 2, &keep, 1));
}

static cml_value_t build_depthwise_5x5(cml_function_t* f) {
  const int64_t d[4] = {8, 56, 56, 96};
  cml_value_t x = bench_param(f, "x", CML_DTYPE_F32, 4, d);
  cml_value_t k = bench_param(f, "k", CML_DTYPE_F32, 4, (int64_t[]){5, 5, 1, 96});
  cml_value_t y = affine_last(f, cml_cli_model_conv_nhwc(f, x, k, 1, 2, 96), d, 4, "b");
  return cml_op_mul(f, y, cml_op_logistic(f, y));
}

static cml_value_t build_conv3x3_s2(cml_function_t* f) {
  cml_value_t x = bench_param(f, "x", CML_DTYPE_F32, 4, (int64_t[]){8, 56, 56, 64});
  cml_value_t k = bench_param(f, "k", CML_DTYPE_F32, 4, (int64_t[]){3, 3, 64, 128});
  return relu(f, cml_cli_model_conv_nhwc(f, x, k, 2, 1, 1));
}

static cml_value_t build_zoo(cml_function_t* f, const bench_case_t* c) {
  const cml_dtype_t dt = CML_DTYPE_F32;
  switch (c->dims[0]) {
    case Z_LENET:
      return build_lenet(f);
    case Z_MOBILENET:
      return build_mobilenet(f);
    case Z_DEPTHWISE_S2:
      return build_depthwise_s2(f);
    case Z_LSTM:
      return build_lstm(f);
    case Z_LAYERNORM: {
      const int64_t d[2] = {1024, 768};
      return layernorm(f, bench_param(f, "x", dt, 2, d), d, 2);
    }
    case Z_SOFTMAX: {
      const int64_t d[4] = {8, 12, 128, 128};
      return softmax(f, bench_param(f, "x", dt, 4, d), d, 4);
    }
    case Z_BATCHNORM: {
      const int64_t d[4] = {32, 28, 28, 64}, ch = 64;
      cml_value_t x = bench_param(f, "x", dt, 4, d);
      cml_value_t scale = bench_param(f, "bn_scale", dt, 1, &ch);
      return batchnorm_nhwc(f, x, scale, bench_param(f, "bn_shift", dt, 1, &ch), d);
    }
    case Z_EMBED_LN: {
      cml_value_t table = bench_param(f, "table", dt, 2, (int64_t[]){32000, 512});
      cml_shape_t is = cml_shape_make(CML_DTYPE_I32, 3, (int64_t[]){16, 128, 1});
      cml_value_t ids = cml_op_rem(
          f, cml_op_mul(f, cml_op_iota(f, &is, 1), cml_constant_scalar_i64(f, CML_DTYPE_I32, 7919)),
          cml_constant_scalar_i64(f, CML_DTYPE_I32, 32000));
      ids = cml_op_add(f, ids, cml_op_iota(f, &is, 0));
      const cml_gather_dims_t g = row_gather(512, 2);
      const int64_t d[3] = {16, 128, 512};
      return layernorm(f, cml_op_gather(f, table, ids, &g), d, 3);
    }
    case Z_CONV_NCHW: {
      cml_value_t x = bench_param(f, "x", dt, 4, (int64_t[]){8, 64, 32, 32});
      cml_value_t k = bench_param(f, "k", dt, 4, (int64_t[]){64, 64, 3, 3});
      cml_conv_config_t cc;
      memset(&cc, 0, sizeof cc);
      cc.spatial_count = 2;
      cc.input_batch_axis = 0;
      cc.input_channel_axis = 1;
      cc.kernel_output_channel_axis = 0;
      cc.kernel_input_channel_axis = 1;
      cc.output_batch_axis = 0;
      cc.output_channel_axis = 1;
      for (int i = 0; i < 2; ++i) {
        cc.input_spatial_axes[i] = cc.kernel_spatial_axes[i] = cc.output_spatial_axes[i] = 2 + i;
        cc.padding_low[i] = cc.padding_high[i] = 1;
      }
      cc.output_dtype = CML_DTYPE_INVALID;
      return cml_op_conv_general(f, x, k, &cc);
    }
    case Z_CONV_TRANSPOSED: {
      // The gradient-of-conv form: input dilation 2, padding k-1-p = 2 each side.
      cml_value_t x = bench_param(f, "x", dt, 4, (int64_t[]){8, 16, 16, 64});
      cml_value_t k = bench_param(f, "k", dt, 4, (int64_t[]){4, 4, 64, 32});
      return conv_last(f, x, k, 2, 2, 2, 1, 2, 1);
    }
    case Z_ATTENTION:
      return build_attention(f);
    case Z_GELU_MLP:
      return build_gelu_mlp(f);
    case Z_CONV1D: {
      cml_value_t x = bench_param(f, "x", dt, 3, (int64_t[]){16, 1000, 64});
      cml_value_t k = bench_param(f, "k", dt, 3, (int64_t[]){5, 64, 128});
      return conv_nwc(f, x, k, 2, 2, 1);
    }
    case Z_RMSNORM:
      return build_rmsnorm(f);
    case Z_ROPE:
      return build_rope(f);
    case Z_SWIGLU:
      return build_swiglu(f);
    case Z_CAUSAL_ATTENTION:
      return build_causal_attention(f);
    case Z_GROUPNORM:
      return build_groupnorm(f);
    case Z_GLOBAL_POOL:
      return build_global_pool(f);
    case Z_CROSS_ENTROPY:
      return build_cross_entropy(f);
    case Z_LENET_TRAIN:
      return build_lenet_train(f);
    case Z_VIT_PATCHES:
      return build_vit_patches(f);
    case Z_UNET_UP:
      return build_unet_up(f);
    case Z_SORT_ROWS:
      return build_sort_rows(f);
    case Z_LAYERNORM_BF16:
      return build_layernorm_bf16(f);
    case Z_MOE_GATE:
      return build_moe_gate(f);
    case Z_CAUSAL_DEPTHWISE_1D:
      return build_causal_depthwise_1d(f);
    case Z_ADAM:
      return build_adam(f);
    case Z_MAXPOOL_GRAD:
      return build_maxpool_grad(f);
    case Z_EMBED_GRAD:
      return build_embed_grad(f);
    case Z_LAYERNORM_GRAD:
      return build_layernorm_grad(f);
    case Z_ATTENTION_GRAD:
      return build_attention_grad(f);
    case Z_CUMSUM:
      return build_cumsum(f);
    case Z_TOPK:
      return build_topk(f);
    case Z_RESIZE:
      return build_resize(f);
    case Z_DILATED_CONV:
      return build_dilated_conv(f);
    case Z_CONV3D:
      return build_conv3d(f);
    case Z_AVGPOOL:
      return build_avgpool(f);
    case Z_DROPOUT:
      return build_dropout(f);
    case Z_ARGMAX_VOCAB:
      return build_argmax_vocab(f);
    case Z_KNN:
      return build_knn(f);
    case Z_CLIP_LOSS:
      return build_clip_loss(f);
    case Z_GNN:
      return build_gnn(f);
    case Z_SPECTROGRAM:
      return build_spectrogram(f);
    case Z_CLIP_GRADS:
      return build_clip_grads(f);
    case Z_SPLIT_HEADS:
      return build_split_heads(f);
    case Z_SMALL_BMM:
      return build_small_bmm(f);
    case Z_MISH:
      return build_mish(f);
    case Z_ONEHOT_EMBED:
      return build_onehot_embed(f);
    case Z_HUBER:
      return build_huber(f);
    case Z_KV_STEP:
      return build_kv_step(f);
    case Z_CONV_GRAD:
      return build_conv_grad(f);
    case Z_BN_GRAD:
      return build_bn_grad(f);
    case Z_BN_OPS:
      return build_bn_ops(f);
    case Z_F64_MATMUL:
      return build_f64_matmul(f);
    case Z_INT8_MATMUL:
      return build_int8_matmul(f);
    case Z_I32_MATMUL:
      return build_i32_matmul(f);
    case Z_F16_MLP:
      return build_f16_mlp(f);
    case Z_SOFTMAX_AXIS1:
      return build_softmax_axis1(f);
    case Z_ARGMAX_COLS:
      return build_argmax_cols(f);
    case Z_PICK_LABELS:
      return build_pick_labels(f);
    case Z_GREEDY_DECODE:
      return build_greedy_decode(f);
    case Z_BIDIR_CONCAT:
      return build_bidir_concat(f);
    case Z_REFLECT_PAD_CONV:
      return build_reflect_pad_conv(f);
    case Z_FFT_CONV:
      return build_fft_conv(f);
    case Z_GROUPED_CONV:
      return build_grouped_conv(f);
    case Z_SE_BLOCK:
      return build_se_block(f);
    case Z_GRID_SAMPLE:
      return build_grid_sample(f);
    case Z_WAV_STEM:
      return build_wav_stem(f);
    case Z_CONVT1D:
      return build_convt1d(f);
    case Z_HASH_HIST:
      return build_hash_hist(f);
    case Z_TRANSPOSE3D:
      return build_transpose3d(f);
    case Z_FAKE_QUANT:
      return build_fake_quant(f);
    case Z_BCE:
      return build_bce(f);
    case Z_LAYER_SCAN:
      return build_layer_scan(f);
    case Z_EMBED_BAG:
      return build_embed_bag(f);
    case Z_EINSUM_BHQK:
      return build_einsum_bhqk(f);
    case Z_F64_SUMSQ:
      return build_f64_sumsq(f);
    case Z_SORT_AXIS0:
      return build_sort_axis0(f);
    case Z_ARGSORT:
      return build_argsort(f);
    case Z_INTERIOR_PAD:
      return build_interior_pad(f);
    case Z_FLIP_HW:
      return build_flip_hw(f);
    case Z_TRANSPOSE_2D:
      return build_transpose_2d(f);
    case Z_STRIDED_SLICE:
      return build_strided_slice(f);
    case Z_MIDDLE_REDUCE:
      return build_middle_reduce(f);
    case Z_INT_DIVMOD:
      return build_int_divmod(f);
    case Z_POW:
      return build_pow(f);
    case Z_ATAN2:
      return build_atan2(f);
    case Z_COMPLEX_EXP:
      return build_complex_exp(f);
    case Z_BF16_ROUNDTRIP:
      return build_bf16_roundtrip(f);
    case Z_BOX_MULLER:
      return build_box_muller(f);
    case Z_BCAST_BMM:
      return build_bcast_bmm(f);
    case Z_DEPTHWISE_GRAD:
      return build_depthwise_grad(f);
    case Z_TWO_AXIS_CONTRACT:
      return build_two_axis_contract(f);
    case Z_OUTER:
      return build_outer(f);
    case Z_GLOBAL_ARGMAX:
      return build_global_argmax(f);
    case Z_AVGPOOL_GRAD:
      return build_avgpool_grad(f);
    case Z_CUMMAX:
      return build_cummax(f);
    case Z_REVERSE_CUMSUM:
      return build_reverse_cumsum(f);
    case Z_WHILE_SCALAR:
      return build_while_scalar(f);
    case Z_QUANTIZE_I8:
      return build_quantize_i8(f);
    case Z_BITCAST_SIGN:
      return build_bitcast_sign(f);
    case Z_CONCAT_MANY:
      return build_concat_many(f);
    case Z_DEEP_CHAIN:
      return build_deep_chain(f);
    case Z_SOFTMAX_LONG:
      return build_softmax_long(f);
    case Z_BATCHED_GEMV:
      return build_batched_gemv(f);
    case Z_CONV1X1_S2:
      return build_conv1x1_s2(f);
    case Z_COLMAX:
      return build_colmax(f);
    case Z_FMOD:
      return build_fmod(f);
    case Z_SORT_FLAT:
      return build_sort_flat(f);
    case Z_PIXEL_SHUFFLE:
      return build_pixel_shuffle(f);
    case Z_LABEL_SMOOTH_CE:
      return build_label_smooth_ce(f);
    case Z_SINUSOID_PE:
      return build_sinusoid_pe(f);
    case Z_GRU:
      return build_gru(f);
    case Z_KL_DIV:
      return build_kl_div(f);
    case Z_FOCAL_LOSS:
      return build_focal_loss(f);
    case Z_MAXPOOL_FWD:
      return build_maxpool_fwd(f);
    case Z_MASKED_MEAN_POOL:
      return build_masked_mean_pool(f);
    case Z_DEPTHWISE_5X5:
      return build_depthwise_5x5(f);
    case Z_CONV3X3_S2:
      return build_conv3x3_s2(f);
    case Z_RFFT_400:
      return build_rfft_400(f);
    case Z_FFT_1024:
      return build_fft_rows(f, 256, 1024);
    case Z_IRFFT_400:
      return build_irfft_400(f);
    case Z_RFFT_2D:
      return build_rfft_2d(f);
    case Z_FFT_509:
      return build_fft_rows(f, 256, 509);
    case Z_SORT_ABS:
      return build_sort_abs(f);
    case Z_SORT_LEXI:
      return build_sort_lexi(f);
    default:
      return CML_VALUE_INVALID;
  }
}

// Multiply-adds x 2 of the products (elementwise work not counted); 0: report bytes.
static double zoo_flops(int z) {
  switch (z) {
    case Z_LENET:
      return 2.0 * 64 * (28 * 28 * 25 * 32 + 14 * 14 * 25 * 32 * 64 + 3136 * 512 + 512 * 10);
    case Z_MOBILENET:
      return 2.0 * 8 * 56 * 56 * (9 * 64 + 64 * 128);
    case Z_DEPTHWISE_S2:
      return 2.0 * 8 * 56 * 56 * 9 * 32;
    case Z_LSTM:
      return 2.0 * LSTM_T * LSTM_B * (LSTM_IN + LSTM_H) * 4 * LSTM_H;
    case Z_CONV_NCHW:
      return 2.0 * 8 * 32 * 32 * 64 * 64 * 9;
    case Z_CONV_TRANSPOSED:
      return 2.0 * 8 * 32 * 32 * 32 * 64 * 4;  // the non-zero taps: a quarter of 16
    case Z_ATTENTION:
      return 2.0 * 2 * 8 * 12 * 128 * 128 * 64;
    case Z_GELU_MLP:
      return 2.0 * 2 * 256 * 768 * 3072;
    case Z_CONV1D:
      return 2.0 * 16 * 1000 * 5 * 64 * 128;
    case Z_SWIGLU:
      return 2.0 * 3 * 128 * 768 * 2048;
    case Z_VIT_PATCHES:
      return 2.0 * 8 * 14 * 14 * 16 * 16 * 3 * 768;
    case Z_UNET_UP:
      return 2.0 * 4 * 64 * 64 * 9 * 128 * 64;
    case Z_MOE_GATE:
      return 2.0 * 2048 * 768 * 8;
    case Z_CAUSAL_DEPTHWISE_1D:
      return 2.0 * 8 * 1024 * 512 * 4;
    case Z_CONV_GRAD:  // the input and the filter gradient, each a conv's work
      return 2.0 * 2 * 8 * 28 * 28 * 9 * 128 * 128;
    case Z_F64_MATMUL:
      return 2.0 * 512 * 512 * 512;
    case Z_INT8_MATMUL:
      return 2.0 * 256 * 1024 * 1024;
    case Z_I32_MATMUL:
      return 2.0 * 256 * 512 * 512;
    case Z_F16_MLP:
      return 2.0 * 2 * 128 * 1024 * 4096;
    case Z_GREEDY_DECODE:
      return 2.0 * DEC_STEPS * DEC_H * (DEC_H + DEC_VOCAB);
    case Z_REFLECT_PAD_CONV:
      return 2.0 * 8 * 64 * 64 * 9 * 32 * 32;
    case Z_GROUPED_CONV:
      return 2.0 * 8 * 28 * 28 * 9 * 8 * 256;
    case Z_WAV_STEM:
      return 2.0 * 4 * 3199 * 10 * 512;
    case Z_CONVT1D:  // the taps that meet an input sample (1 in 8)
      return 2.0 * 2 * 2048 * 2 * 256 * 128;
    case Z_LAYER_SCAN:
      return 2.0 * SCAN_LAYERS * SCAN_B * SCAN_D * SCAN_D;
    case Z_EINSUM_BHQK:
      return 2.0 * 8 * 12 * 128 * 128 * 64;
    case Z_BCAST_BMM:
      return 2.0 * 64 * 128 * 128 * 128;
    case Z_DEPTHWISE_GRAD:
      return 2.0 * 2 * 8 * 56 * 56 * 9 * 64;
    case Z_TWO_AXIS_CONTRACT:
      return 2.0 * 8 * 128 * 128 * 768;
    case Z_BATCHED_GEMV:
      return 2.0 * 64 * 512 * 512;
    case Z_CONV1X1_S2:
      return 2.0 * 8 * 28 * 28 * 64 * 128;
    case Z_LENET_TRAIN:  // forward, and twice that backward
      return 3 * 2.0 * 64 * (28 * 28 * 25 * 32 + 14 * 14 * 25 * 32 * 64 + 3136 * 512 + 512 * 10);
    case Z_CAUSAL_ATTENTION:
      return 2.0 * 2 * 4 * 12 * 256 * 256 * 64;
    case Z_GLOBAL_POOL:
      return 2.0 * 32 * 512 * 1000;
    case Z_ATTENTION_GRAD:  // two products forward, four backward
      return 2.0 * 6 * 4 * 12 * 128 * 128 * 64;
    case Z_RESIZE:
      return 2.0 * (8.0 * 64 * 32 * 128 * 64 + 8.0 * 32 * 128 * 128 * 64);
    case Z_DILATED_CONV:
      return 2.0 * 8 * 64 * 64 * 64 * 64 * 9;
    case Z_CONV3D:
      return 2.0 * 2 * 8 * 32 * 32 * 32 * 32 * 27;
    case Z_KNN:
      return 2.0 * 1024 * 4096 * 64;
    case Z_CLIP_LOSS:
      return 2.0 * 256 * 256 * 512;
    case Z_ONEHOT_EMBED:
      return 2.0 * 2048 * 4096 * 256;
    default:
      return 0;
  }
}

static double zoo_bytes(int z) {
  switch (z) {
    case Z_LAYERNORM:
      return 2.0 * 4 * 1024 * 768;
    case Z_SOFTMAX:
      return 2.0 * 4 * 8 * 12 * 128 * 128;
    case Z_BATCHNORM:
      return 2.0 * 4 * 32 * 28 * 28 * 64;
    case Z_EMBED_LN:
      return 2.0 * 4 * 16 * 128 * 512;
    case Z_RMSNORM:
      return 2.0 * 4 * 512 * 4096;
    case Z_ROPE:
      return 2.0 * 4 * 8 * 128 * 12 * 64;
    case Z_GROUPNORM:
      return 2.0 * 4 * 8 * 32 * 32 * 64;
    case Z_CROSS_ENTROPY:
      return 4.0 * 256 * 32000;
    case Z_SORT_ROWS:
      return 2.0 * 4 * 64 * 1000;
    case Z_LAYERNORM_BF16:
      return 2.0 * 2 * 1024 * 768;
    case Z_ADAM:  // four vectors read, three written
      return 7.0 * 4 * (1 << 20);
    case Z_MAXPOOL_GRAD:
      return 4.0 * (2.0 * 8 * 112 * 112 * 64 + 8.0 * 56 * 56 * 64);
    case Z_EMBED_GRAD:
      return 4.0 * (32000.0 * 512 + 2048.0 * 512);
    case Z_LAYERNORM_GRAD:
      return 3.0 * 4 * 1024 * 768;
    case Z_CUMSUM:
      return 2.0 * 4 * 64 * 2048;
    case Z_TOPK:
      return 4.0 * 16 * 32000;
    case Z_AVGPOOL:
      return 2.0 * 4 * 8 * 28 * 28 * 192;
    case Z_DROPOUT:
      return 2.0 * 4 * 1024 * 1024;
    case Z_ARGMAX_VOCAB:
      return 4.0 * 64 * 32000;
    case Z_GNN:
      return 4.0 * (65536.0 * 64 * 2 + 8192.0 * 64 * 2);
    case Z_SPECTROGRAM:
      return 4.0 * (64 * 512 + 64 * 80);
    case Z_CLIP_GRADS:
      return 2.0 * 4 * ((1 << 20) + (1 << 19) + (1 << 18) + 64);
    case Z_SPLIT_HEADS:
      return 2.0 * 4 * 8 * 128 * 2304;
    case Z_SMALL_BMM:
      return 3.0 * 4 * 65536 * 9;
    case Z_MISH:
      return 2.0 * 4 * 4096 * 1024;
    case Z_HUBER:
      return 2.0 * 4 * (1 << 22);
    case Z_BN_GRAD:
    case Z_BN_OPS:
      return 4.0 * 3 * 32 * 28 * 28 * 64;
    case Z_SOFTMAX_AXIS1:
      return 4.0 * 2 * 8 * 64 * 56 * 56;
    case Z_ARGMAX_COLS:
      return 4.0 * 4096 * 1000;
    case Z_PICK_LABELS:
      return 4.0 * 256 * 32000;
    case Z_BIDIR_CONCAT:
      return 4.0 * 3 * 32 * 512 * 256;
    case Z_FFT_CONV:
      return 4.0 * 2 * 64 * 1024;
    case Z_SE_BLOCK:
      return 4.0 * 2 * 8 * 28 * 28 * 256;
    case Z_GRID_SAMPLE:
      return 4.0 * 4 * 4 * 4096 * 32;
    case Z_HASH_HIST:
      return 4.0 * (1 << 20);
    case Z_TRANSPOSE3D:
      return 4.0 * 2 * 64 * 128 * 256;
    case Z_FAKE_QUANT:
      return 4.0 * 2 * (1 << 22);
    case Z_BCE:
      return 4.0 * 2 * (1 << 20);
    case Z_EMBED_BAG:
      return 4.0 * 1024 * 32 * 128;
    case Z_F64_SUMSQ:
      return 4.0 * (1 << 24);
    case Z_SORT_AXIS0:
      return 4.0 * 2 * 1000 * 64;
    case Z_ARGSORT:
      return 4.0 * 2 * 256 * 4096;
    case Z_SORT_ABS:
      return 4.0 * 2 * (1 << 16);
    case Z_SORT_LEXI:
      return 4.0 * 3 * (1 << 16);
    case Z_INTERIOR_PAD:
      return 4.0 * (8 * 64 * 64 * 32 + 8 * 127 * 127 * 32);
    case Z_FLIP_HW:
      return 4.0 * 2 * 16 * 64 * 64 * 32;
    case Z_TRANSPOSE_2D:
      return 4.0 * 2 * 4096 * 4096;
    case Z_STRIDED_SLICE:
      return 4.0 * 1.5 * (1 << 22);
    case Z_MIDDLE_REDUCE:
      return 4.0 * 64 * 4096 * 16;
    case Z_INT_DIVMOD:
    case Z_POW:
      return 4.0 * 2 * (1 << 22);
    case Z_ATAN2:
      return 4.0 * 3 * (1 << 22);
    case Z_COMPLEX_EXP:
      return 4.0 * 3 * (1 << 20);
    case Z_BF16_ROUNDTRIP:
      return 4.0 * 2 * (1 << 24);
    case Z_BOX_MULLER:
      return 4.0 * 3 * (1 << 20);
    case Z_OUTER:
      return 4.0 * 4096 * 4096;
    case Z_GLOBAL_ARGMAX:
      return 4.0 * (1 << 24);
    case Z_AVGPOOL_GRAD:
      return 4.0 * (8 * 56 * 56 * 64 + 8 * 28 * 28 * 64);
    case Z_CUMMAX:
    case Z_REVERSE_CUMSUM:
      return 4.0 * 2 * 64 * 2048;
    case Z_QUANTIZE_I8:
      return 4.0 * 2 * (1 << 24);
    case Z_BITCAST_SIGN:
    case Z_FMOD:
      return 4.0 * 2 * (1 << 22);
    case Z_CONCAT_MANY:
      return 4.0 * 2 * 48 * 64;
    case Z_DEEP_CHAIN:
      return 4.0 * 2 * (1 << 20);
    case Z_SOFTMAX_LONG:
      return 4.0 * 2 * 8 * 131072;
    case Z_COLMAX:
      return 4.0 * 8192 * 256;
    case Z_SORT_FLAT:
      return 4.0 * 2 * (1 << 20);
    case Z_GRU:
      return 2.0 * GRU_T * GRU_B * (GRU_IN + GRU_H) * 3 * GRU_H;
    case Z_DEPTHWISE_5X5:
      return 2.0 * 8 * 56 * 56 * 25 * 96;
    case Z_CONV3X3_S2:
      return 2.0 * 8 * 28 * 28 * 9 * 64 * 128;
    case Z_KV_STEP:  // the two caches read
      return 2.0 * 4 * 12 * 1024 * 64;
    default:
      return 0;
  }
}

int main(int argc, char** argv) {
  bench_options_t opts;
  if (!bench_parse_args(&opts, argc, argv, "small models written from primitives")) return 2;
  bench_case_t cases[Z_COUNT];
  for (int z = 0; z < Z_COUNT; ++z) {
    bench_case_t* c = &cases[z];
    memset(c, 0, sizeof *c);
    c->group = "zoo";
    c->build = build_zoo;
    c->dtype = CML_DTYPE_F32;
    c->dims[0] = z;
    c->flops = zoo_flops(z);
    c->bytes = zoo_bytes(z);
    c->heavy = c->flops > 1e9;
    bench_case_name(c, "%s", kNames[z]);
  }
  bench_run(&opts, cases, Z_COUNT);
  return bench_finish(&opts);
}
