// SPDX-License-Identifier: Apache-2.0
// src/backends/c/kernels/generic/collective.c: the collective ops of an SPMD execution over
// shared memory (AllReduce, AllGather, ReduceScatter, AllToAll, CollectivePermute,
// CollectiveBroadcast) and the ids (ReplicaId, PartitionId).
//
// Every member of a replica group joins one round of the engine's rendezvous (cmlc.h),
// publishing its kernel arguments; the members then read each other's inputs and write outputs
// directly, and meet once more (cmlc_round_finish) before any of them returns:
//   - AllReduce: member p of n reduces elements [p*c, (p+1)*c) (c = ceil(count/n)) of every
//     operand over all members' inputs, in group order, block by block into an L1 buffer, and
//     writes each block into every member's output (XLA's in-process scheme, reference §5.3),
//     so the work is split n ways and every member gets bit-identical results. Integers wrap
//     (sum, product), floats propagate NaN through max/min, Float16/BFloat16 are combined in
//     f32 and rounded once, complex numbers take sum and product only. A block of every input
//     is read before any output is written and only member p touches range p, so each result
//     may share storage with its operand (the planner does so when the operand dies there:
//     in_place_each). When the outputs together are larger than the caches
//     (CMLC_CO_STREAM_BYTES), the blocks are written with non-temporal stores: each element is
//     then read once from each input and written once to each output, with no
//     read-for-ownership of the outputs (cached stores would read every output line before
//     writing it: 3n instead of 2n lines of memory traffic per element);
//   - ReduceScatter: member p reduces part p of the axis over all inputs into its output;
//   - AllGather, AllToAll, CollectiveBroadcast, CollectivePermute: each member fills its own
//     output from the others' inputs (a CollectivePermute target nobody sends to gets zeros).
// A group of one member (and any collective outside SPMD) needs no rendezvous.
//
// Thread-safety: reentrant; the rendezvous orders the members' reads and writes.
#include <math.h>
#include <stdint.h>
#include <string.h>
#if defined(__x86_64__) || defined(_M_X64)
#include <emmintrin.h>
#define CMLC_CO_HAVE_STREAM 1
#else
#define CMLC_CO_HAVE_STREAM 0
#endif

#include "backends/c/cmlc.h"
#include "backends/c/kernels/common.h"
#include "backends/c/kernels/generic/elementwise_internal.h"

// Elements combined per block: a block of every source and of the output stays in L1/L2 while
// the sources are folded in.
#define CMLC_CO_BLOCK 2048
// The least elements a pool task reduces.
#define CMLC_CO_MIN_TASK 16384
// From this many bytes written by one AllReduce operand (its size times the members) the
// outputs are written with non-temporal stores: far more than the last-level cache, so the
// lines would be evicted before anyone reads them (the data-parallel step's gradients, a few
// MiB, stay cached for the update that reads them next).
#define CMLC_CO_STREAM_BYTES ((size_t)32 << 20)
// The L1 buffer a streaming block is reduced into.
#define CMLC_CO_STREAM_BLOCK_BYTES 16384

//===--- groups and rounds ---===//

typedef struct cmlc_co_round_t {
  const int32_t* members;  // NULL: every slot in order
  int32_t count;           // members
  int32_t position;        // this slot's position
  cmlc_round_t* round;     // NULL when the group has one member
} cmlc_co_round_t;

static int32_t cmlc_co_replica_count(const cmlc_kernel_args_t* a) {
  return a->replica_count > 0 ? a->replica_count : 1;
}

// The group of this slot in the node's replica groups.
static cml_status_t cmlc_co_find_group(const cmlc_kernel_args_t* a, cmlc_co_round_t* out) {
  const cml_ir_collective_attrs_t* c = &a->node->attrs->collective;
  memset(out, 0, sizeof *out);
  if (!c->groups || c->group_size < 1 || c->group_count < 1) {
    out->count = cmlc_co_replica_count(a);
    out->position = a->replica;
    return CML_OK;
  }
  for (int32_t g = 0; g < c->group_count; ++g) {
    for (int32_t k = 0; k < c->group_size; ++k) {
      if (c->groups[(size_t)g * (size_t)c->group_size + (size_t)k] == a->replica) {
        out->members = c->groups + (size_t)g * (size_t)c->group_size;
        out->count = c->group_size;
        out->position = k;
        return CML_OK;
      }
    }
  }
  return cml_status_make(
      CML_STATUS_INVALID_ARGUMENT, "%s: device slot %d is in none of its %d replica groups of %d",
      cml_op_name(a->node->op), (int)a->replica, (int)c->group_count, (int)c->group_size);
}

// Joins the round of |r|'s group (nothing to join for a group of one).
static cml_status_t cmlc_co_join(const cmlc_kernel_args_t* a, cmlc_co_round_t* r) {
  r->round = NULL;
  if (r->count == 1) return CML_OK;
  if (!a->rendezvous) {
    return cml_status_make(CML_STATUS_FAILED_PRECONDITION,
                           "%s: a group of %d device slots outside an SPMD execution",
                           cml_op_name(a->node->op), (int)r->count);
  }
  return cmlc_round_join(a->rendezvous, a->node, a->replica, r->members, r->count, r->position, a,
                         &r->round);
}

// The kernel arguments of the member at |position| (this slot's own for a group of one).
static const cmlc_kernel_args_t* cmlc_co_peer(const cmlc_kernel_args_t* a, const cmlc_co_round_t* r,
                                              int32_t position) {
  if (!r->round) return a;
  return (const cmlc_kernel_args_t*)cmlc_round_contribution(r->round, position);
}

static void cmlc_co_finish(const cmlc_kernel_args_t* a, cmlc_co_round_t* r) {
  if (r->round) cmlc_round_finish(a->rendezvous, r->round);
  r->round = NULL;
}

//===--- reductions ---===//

// Reduces |count| elements at element offset |offset| of the |n| sources |src| into |dst|
// (dst[i] = src[0][i] op src[1][i] op ... in source order).
typedef void (*cmlc_co_reduce_fn)(void* dst, const void* const* src, int n, int64_t offset,
                                  int64_t count);

#define CMLC_CO_SUM(a, b) ((a) + (b))
#define CMLC_CO_MUL(a, b) ((a) * (b))
#define CMLC_CO_IMAX(a, b) ((a) > (b) ? (a) : (b))
#define CMLC_CO_IMIN(a, b) ((a) < (b) ? (a) : (b))
// The Max/Min ops' semantics (XLA's): NaN propagates, -0 < +0; the SIMD folds compute the same.
#define CMLC_CO_FMAX(a, b) CMLC_EW_FMAX(a, b)
#define CMLC_CO_FMIN(a, b) CMLC_EW_FMIN(a, b)

// Elements a reducer combines per step: every source is folded into a local block of this
// many elements, then the block is stored once. (gcc 12 at -O2 leaves the float folds scalar:
// one addss per element and source. On SIMD ISAs the float and 32/64-bit integer operands take
// the elementwise SIMD kernels instead, cmlc_co_simd_pick below.)
#define CMLC_CO_LANES 32

// A reducer over T whose values are combined as CT (unsigned for wrapping integer arithmetic).
#define CMLC_CO_GEN(name, T, CT, OP)                                                          \
  static void name(void* dst, const void* const* src, int n, int64_t offset, int64_t count) { \
    T* restrict d = (T*)dst;                                                                  \
    const T* restrict s0 = (const T*)src[0] + offset;                                         \
    int64_t i = 0;                                                                            \
    for (; i + CMLC_CO_LANES <= count; i += CMLC_CO_LANES) {                                  \
      T acc[CMLC_CO_LANES];                                                                   \
      for (int l = 0; l < CMLC_CO_LANES; ++l) acc[l] = s0[i + l];                             \
      for (int k = 1; k < n; ++k) {                                                           \
        const T* restrict s = (const T*)src[k] + offset + i;                                  \
        for (int l = 0; l < CMLC_CO_LANES; ++l) acc[l] = (T)OP((CT)acc[l], (CT)s[l]);         \
      }                                                                                       \
      for (int l = 0; l < CMLC_CO_LANES; ++l) d[i + l] = acc[l];                              \
    }                                                                                         \
    for (; i < count; ++i) {                                                                  \
      T v = s0[i];                                                                            \
      for (int k = 1; k < n; ++k) v = (T)OP((CT)v, (CT)((const T*)src[k] + offset)[i]);       \
      d[i] = v;                                                                               \
    }                                                                                         \
  }

#define CMLC_CO_INT(sfx, T, UT)                          \
  CMLC_CO_GEN(cmlc_co_sum_##sfx, T, UT, CMLC_CO_SUM)     \
  CMLC_CO_GEN(cmlc_co_product_##sfx, T, UT, CMLC_CO_MUL) \
  CMLC_CO_GEN(cmlc_co_max_##sfx, T, T, CMLC_CO_IMAX)     \
  CMLC_CO_GEN(cmlc_co_min_##sfx, T, T, CMLC_CO_IMIN)
// (8- and 16-bit values are combined as uint32_t: no promotion to a signed int can overflow.)
CMLC_CO_INT(i8, int8_t, uint32_t)
CMLC_CO_INT(i16, int16_t, uint32_t)
CMLC_CO_INT(i32, int32_t, uint32_t)
CMLC_CO_INT(i64, int64_t, uint64_t)
CMLC_CO_INT(u8, uint8_t, uint32_t)
CMLC_CO_INT(u16, uint16_t, uint32_t)
CMLC_CO_INT(u32, uint32_t, uint32_t)
CMLC_CO_INT(u64, uint64_t, uint64_t)
#undef CMLC_CO_INT

#define CMLC_CO_FLOAT(sfx, T)                           \
  CMLC_CO_GEN(cmlc_co_sum_##sfx, T, T, CMLC_CO_SUM)     \
  CMLC_CO_GEN(cmlc_co_product_##sfx, T, T, CMLC_CO_MUL) \
  CMLC_CO_GEN(cmlc_co_max_##sfx, T, T, CMLC_CO_FMAX)    \
  CMLC_CO_GEN(cmlc_co_min_##sfx, T, T, CMLC_CO_FMIN)
CMLC_CO_FLOAT(f32, float)
CMLC_CO_FLOAT(f64, double)
#undef CMLC_CO_FLOAT
#undef CMLC_CO_GEN

// Float16 / BFloat16: every element is combined in f32 over all sources, then rounded once.
#define CMLC_CO_HALF(name, TO_F32, FROM_F32, OP)                                              \
  static void name(void* dst, const void* const* src, int n, int64_t offset, int64_t count) { \
    uint16_t* d = (uint16_t*)dst;                                                             \
    float acc[CMLC_CO_BLOCK];                                                                 \
    for (int64_t b = 0; b < count; b += CMLC_CO_BLOCK) {                                      \
      const int64_t m = count - b < CMLC_CO_BLOCK ? count - b : CMLC_CO_BLOCK;                \
      const uint16_t* s0 = (const uint16_t*)src[0] + offset + b;                              \
      for (int64_t i = 0; i < m; ++i) acc[i] = TO_F32(s0[i]);                                 \
      for (int k = 1; k < n; ++k) {                                                           \
        const uint16_t* s = (const uint16_t*)src[k] + offset + b;                             \
        for (int64_t i = 0; i < m; ++i) {                                                     \
          const float v = TO_F32(s[i]);                                                       \
          acc[i] = OP(acc[i], v);                                                             \
        }                                                                                     \
      }                                                                                       \
      for (int64_t i = 0; i < m; ++i) d[b + i] = FROM_F32(acc[i]);                            \
    }                                                                                         \
  }
#define CMLC_CO_HALVES(sfx, TO_F32, FROM_F32)                        \
  CMLC_CO_HALF(cmlc_co_sum_##sfx, TO_F32, FROM_F32, CMLC_CO_SUM)     \
  CMLC_CO_HALF(cmlc_co_product_##sfx, TO_F32, FROM_F32, CMLC_CO_MUL) \
  CMLC_CO_HALF(cmlc_co_max_##sfx, TO_F32, FROM_F32, CMLC_CO_FMAX)    \
  CMLC_CO_HALF(cmlc_co_min_##sfx, TO_F32, FROM_F32, CMLC_CO_FMIN)
CMLC_CO_HALVES(f16, cml__f16_to_f32, cml__f32_to_f16)
CMLC_CO_HALVES(bf16, cml__bf16_to_f32, cml__f32_to_bf16)
#undef CMLC_CO_HALVES
#undef CMLC_CO_HALF

// Complex numbers (interleaved real, imaginary): sum and product.
#define CMLC_CO_COMPLEX(sfx, T)                                                               \
  static void cmlc_co_sum_##sfx(void* dst, const void* const* src, int n, int64_t offset,     \
                                int64_t count) {                                              \
    T* d = (T*)dst;                                                                           \
    const T* s0 = (const T*)src[0] + 2 * offset;                                              \
    for (int64_t i = 0; i < 2 * count; ++i) d[i] = s0[i];                                     \
    for (int k = 1; k < n; ++k) {                                                             \
      const T* s = (const T*)src[k] + 2 * offset;                                             \
      for (int64_t i = 0; i < 2 * count; ++i) d[i] += s[i];                                   \
    }                                                                                         \
  }                                                                                           \
  static void cmlc_co_product_##sfx(void* dst, const void* const* src, int n, int64_t offset, \
                                    int64_t count) {                                          \
    T* d = (T*)dst;                                                                           \
    const T* s0 = (const T*)src[0] + 2 * offset;                                              \
    for (int64_t i = 0; i < 2 * count; ++i) d[i] = s0[i];                                     \
    for (int k = 1; k < n; ++k) {                                                             \
      const T* s = (const T*)src[k] + 2 * offset;                                             \
      for (int64_t i = 0; i < count; ++i) {                                                   \
        const T ar = d[2 * i], ai = d[2 * i + 1], br = s[2 * i], bi = s[2 * i + 1];           \
        d[2 * i] = ar * br - ai * bi;                                                         \
        d[2 * i + 1] = ar * bi + ai * br;                                                     \
      }                                                                                       \
    }                                                                                         \
  }
CMLC_CO_COMPLEX(c64, float)
CMLC_CO_COMPLEX(c128, double)
#undef CMLC_CO_COMPLEX

// The reducer for |dtype| and |type|, or NULL (complex max/min, non-numbers).
static cmlc_co_reduce_fn cmlc_co_reducer(cml_dtype_t dtype, cml_reduce_type_t type) {
#define CMLC_CO_PICK(sfx)           \
  switch (type) {                   \
    case CML_REDUCE_SUM:            \
      return cmlc_co_sum_##sfx;     \
    case CML_REDUCE_PRODUCT:        \
      return cmlc_co_product_##sfx; \
    case CML_REDUCE_MAX:            \
      return cmlc_co_max_##sfx;     \
    case CML_REDUCE_MIN:            \
      return cmlc_co_min_##sfx;     \
    default:                        \
      return NULL;                  \
  }
  switch (dtype) {
    case CML_DTYPE_I8:
      CMLC_CO_PICK(i8)
    case CML_DTYPE_I16:
      CMLC_CO_PICK(i16)
    case CML_DTYPE_I32:
      CMLC_CO_PICK(i32)
    case CML_DTYPE_I64:
      CMLC_CO_PICK(i64)
    case CML_DTYPE_U8:
      CMLC_CO_PICK(u8)
    case CML_DTYPE_U16:
      CMLC_CO_PICK(u16)
    case CML_DTYPE_U32:
      CMLC_CO_PICK(u32)
    case CML_DTYPE_U64:
      CMLC_CO_PICK(u64)
    case CML_DTYPE_F16:
      CMLC_CO_PICK(f16)
    case CML_DTYPE_BF16:
      CMLC_CO_PICK(bf16)
    case CML_DTYPE_F32:
      CMLC_CO_PICK(f32)
    case CML_DTYPE_F64:
      CMLC_CO_PICK(f64)
    case CML_DTYPE_C64:
      return type == CML_REDUCE_SUM       ? cmlc_co_sum_c64
             : type == CML_REDUCE_PRODUCT ? cmlc_co_product_c64
                                          : NULL;
    case CML_DTYPE_C128:
      return type == CML_REDUCE_SUM       ? cmlc_co_sum_c128
             : type == CML_REDUCE_PRODUCT ? cmlc_co_product_c128
                                          : NULL;
    default:
      return NULL;
  }
#undef CMLC_CO_PICK
}

// The elementwise op that folds two values of |type| (Add, Multiply, Max, Min).
static cml_op_t cmlc_co_binary_op(cml_reduce_type_t type) {
  switch (type) {
    case CML_REDUCE_SUM:
      return CML_OP_ADD;
    case CML_REDUCE_PRODUCT:
      return CML_OP_MUL;
    case CML_REDUCE_MAX:
      return CML_OP_MAX;
    default:
      return CML_OP_MIN;
  }
}

// The SIMD kernels that fold |dtype| values as |type| does (cmlc_co_simd_pick), or none
// (|op| NULL: the reducer above runs). f32, f64 and the 32- and 64-bit integers take one binary
// step per source (the same operations in the same source order, so the same bits; integers
// wrap). Float16 / BFloat16 are widened to f32, folded there and narrowed once at the end, as
// the reducer does.
typedef struct cmlc_co_simd_t {
  cmlc_ew_fn op;              // the binary op, on |dtype| (on f32 for half floats)
  cmlc_ew_convert_fn widen;   // half floats: |dtype| -> f32, else NULL
  cmlc_ew_convert_fn narrow;  // half floats: f32 -> |dtype|, else NULL
} cmlc_co_simd_t;

static cmlc_co_simd_t cmlc_co_simd_pick(const cmlc_options_t* options, cml_dtype_t dtype,
                                        cml_reduce_type_t type) {
  cmlc_co_simd_t k = {NULL, NULL, NULL};
  if (type != CML_REDUCE_SUM && type != CML_REDUCE_PRODUCT && type != CML_REDUCE_MAX &&
      type != CML_REDUCE_MIN) {
    return k;
  }
  const cml_op_t op = cmlc_co_binary_op(type);
  switch (dtype) {
    case CML_DTYPE_F32:
    case CML_DTYPE_F64:
    case CML_DTYPE_I32:
    case CML_DTYPE_U32:
    case CML_DTYPE_I64:
    case CML_DTYPE_U64:
      k.op = cmlc_ew_simd_binary_fn(options, op, dtype);
      return k;
    case CML_DTYPE_F16:
    case CML_DTYPE_BF16:
      k.op = cmlc_ew_simd_binary_fn(options, op, CML_DTYPE_F32);
      k.widen = cmlc_ew_simd_convert_fn(options, dtype, CML_DTYPE_F32);
      k.narrow = cmlc_ew_simd_convert_fn(options, CML_DTYPE_F32, dtype);
      if (!k.op || !k.widen || !k.narrow) k.op = NULL;
      return k;
    default:
      return k;
  }
}

// Half-float elements folded per step in f32 (two L1 buffers of this many floats).
#define CMLC_CO_HALF_STEP 1024

// Reduces |count| elements at element offset |offset| of the |n| sources into |dst| (which
// must not be a source): with |simd|->op, sources 0 and 1 combined into |dst|, then each
// further source folded into it, in source order (half floats: in f32, |dst| written once per
// step); else |reduce|.
static void cmlc_co_fold(const cmlc_co_simd_t* simd, cmlc_co_reduce_fn reduce, void* dst,
                         const void* const* src, int n, int64_t offset, int64_t count,
                         size_t esize) {
  if (!simd->op || n < 2) {
    reduce(dst, src, n, offset, count);
    return;
  }
  static const int64_t stride[2] = {1, 1};
  if (simd->widen) {
    _Alignas(64) float acc[CMLC_CO_HALF_STEP], next[CMLC_CO_HALF_STEP];
    const void* in[2] = {acc, next};
    for (int64_t b = 0; b < count; b += CMLC_CO_HALF_STEP) {
      const int64_t m = count - b < CMLC_CO_HALF_STEP ? count - b : CMLC_CO_HALF_STEP;
      const size_t at = (size_t)(offset + b) * esize;
      simd->widen(acc, (const uint8_t*)src[0] + at, m);
      for (int k = 1; k < n; ++k) {
        simd->widen(next, (const uint8_t*)src[k] + at, m);
        simd->op(acc, in, stride, m);
      }
      simd->narrow((uint8_t*)dst + (size_t)b * esize, acc, m);
    }
    return;
  }
  const size_t at = (size_t)offset * esize;
  const void* in[2] = {(const uint8_t*)src[0] + at, (const uint8_t*)src[1] + at};
  simd->op(dst, in, stride, count);
  for (int k = 2; k < n; ++k) {
    in[0] = dst;
    in[1] = (const uint8_t*)src[k] + at;
    simd->op(dst, in, stride, count);
  }
}

// The SIMD kernels the lookup picked (cmlc_co_simd_pick, for operand 0's dtype), for an operand
// of |dtype|: none when it differs.
static cmlc_co_simd_t cmlc_co_simd_of(const cmlc_kernel_args_t* a, cml_dtype_t dtype) {
  cmlc_co_simd_t k = {NULL, NULL, NULL};
  if (dtype != a->input_shapes[0]->dtype) return k;
  k.op = (cmlc_ew_fn)a->impl[0];
  k.widen = (cmlc_ew_convert_fn)a->impl[1];
  k.narrow = (cmlc_ew_convert_fn)a->impl[2];
  return k;
}

// A range of one operand reduced by the pool: elements [base + begin, base + end) of the
// sources, block by block into an L1 buffer, then copied into every member's output (this
// member's |dst| and the others' |copies|). A block of every source is read before any output
// is written, so an output may share storage with its member's source (in place).
typedef struct cmlc_co_task_t {
  cmlc_co_reduce_fn reduce;
  cmlc_co_simd_t simd;     // cmlc_co_simd_pick's kernels (op NULL: none)
  const void* const* src;  // n source base pointers
  int n;
  int64_t base;  // first element of this member's range
  size_t esize;
  uint8_t* dst;            // this member's output (base pointer)
  uint8_t* const* copies;  // the other members' outputs (base pointers), |copy_count|
  int copy_count;
  bool in_place;  // |dst| is one of the sources (then every block goes through the L1 buffer)
} cmlc_co_task_t;

// Copies |bytes| from |src| to |dst| with non-temporal stores where the target has 16-byte
// aligned room (cached stores for the unaligned head and the tail). The caller fences.
static void cmlc_co_stream_copy(uint8_t* dst, const uint8_t* src, size_t bytes) {
#if CMLC_CO_HAVE_STREAM
  size_t head = (size_t)(-(uintptr_t)dst & 15u);
  if (head > bytes) head = bytes;
  memcpy(dst, src, head);
  dst += head;
  src += head;
  bytes -= head;
  for (; bytes >= 64; bytes -= 64, dst += 64, src += 64) {
    const __m128i v0 = _mm_loadu_si128((const __m128i*)src);
    const __m128i v1 = _mm_loadu_si128((const __m128i*)(src + 16));
    const __m128i v2 = _mm_loadu_si128((const __m128i*)(src + 32));
    const __m128i v3 = _mm_loadu_si128((const __m128i*)(src + 48));
    _mm_stream_si128((__m128i*)dst, v0);
    _mm_stream_si128((__m128i*)(dst + 16), v1);
    _mm_stream_si128((__m128i*)(dst + 32), v2);
    _mm_stream_si128((__m128i*)(dst + 48), v3);
  }
  for (; bytes >= 16; bytes -= 16, dst += 16, src += 16) {
    _mm_stream_si128((__m128i*)dst, _mm_loadu_si128((const __m128i*)src));
  }
#endif
  memcpy(dst, src, bytes);
}

// Reduces a range block by block into an L1 buffer and writes each block to every output:
// with non-temporal stores (|stream|: outputs far larger than the caches, so that no output
// line is read before it is written) or with cached ones (the outputs stay in cache for the
// ops that read them next). Cached and not in place, a block is reduced straight into this
// member's output and copied from there (one pass less).
static void cmlc_co_reduce_blocks(const cmlc_co_task_t* t, int64_t begin, int64_t end,
                                  bool stream) {
  _Alignas(64) uint8_t block[CMLC_CO_STREAM_BLOCK_BYTES];
  const int64_t per = (int64_t)(CMLC_CO_STREAM_BLOCK_BYTES / t->esize);
  for (int64_t b = begin; b < end; b += per) {
    const int64_t m = end - b < per ? end - b : per;
    const int64_t at = t->base + b;
    const size_t bytes = (size_t)m * t->esize;
    if (!stream && !t->in_place) {  // straight into this member's output, then copied from it
      uint8_t* d = t->dst + (size_t)at * t->esize;
      cmlc_co_fold(&t->simd, t->reduce, d, t->src, t->n, at, m, t->esize);
      for (int k = 0; k < t->copy_count; ++k)
        memcpy(t->copies[k] + (size_t)at * t->esize, d, bytes);
      continue;
    }
    cmlc_co_fold(&t->simd, t->reduce, block, t->src, t->n, at, m, t->esize);
    if (stream) {
      cmlc_co_stream_copy(t->dst + (size_t)at * t->esize, block, bytes);
      for (int k = 0; k < t->copy_count; ++k) {
        cmlc_co_stream_copy(t->copies[k] + (size_t)at * t->esize, block, bytes);
      }
    } else {
      memcpy(t->dst + (size_t)at * t->esize, block, bytes);
      for (int k = 0; k < t->copy_count; ++k) {
        memcpy(t->copies[k] + (size_t)at * t->esize, block, bytes);
      }
    }
  }
#if CMLC_CO_HAVE_STREAM
  // Non-temporal stores are weakly ordered: make them visible before the pool (and then the
  // round) reports this range done.
  if (stream) _mm_sfence();
#endif
}

static void cmlc_co_reduce_stream_task(void* ctx, int64_t begin, int64_t end, int thread_index) {
  (void)thread_index;
  cmlc_co_reduce_blocks((const cmlc_co_task_t*)ctx, begin, end, true);
}

static void cmlc_co_reduce_task(void* ctx, int64_t begin, int64_t end, int thread_index) {
  (void)thread_index;
  cmlc_co_reduce_blocks((const cmlc_co_task_t*)ctx, begin, end, false);
}

//===--- AllReduce ---===//

static cml_status_t cmlc_co_all_reduce(const cmlc_kernel_args_t* a) {
  const cml_reduce_type_t type = a->node->attrs->reduce_type;
  for (uint32_t i = 0; i < a->input_count; ++i) {
    if (!cmlc_co_reducer(a->input_shapes[i]->dtype, type)) {
      return cml_status_make(CML_STATUS_UNIMPLEMENTED, "AllReduce: no %s reduction of %s",
                             cml_reduce_type_name(type), cml_dtype_name(a->input_shapes[i]->dtype));
    }
  }
  cmlc_co_round_t r;
  CML_RETURN_IF_ERROR(cmlc_co_find_group(a, &r));
  if (cmlc_size_of(r.count, 2 * sizeof(void*)) > a->scratch_size && r.count > 1) {
    return cml_status_make(CML_STATUS_INTERNAL, "AllReduce: scratch for %d members too small",
                           (int)r.count);
  }
  CML_RETURN_IF_ERROR(cmlc_co_join(a, &r));
  const void** src = (const void**)a->scratch;
  uint8_t** copies = (uint8_t**)a->scratch + r.count;
  const void* self_src[1];
  if (r.count == 1) src = self_src;
  for (uint32_t i = 0; i < a->input_count; ++i) {
    const cml_shape_t* s = a->input_shapes[i];
    const int64_t count = cml_shape_element_count(s);
    const int64_t chunk = (count + r.count - 1) / r.count;
    int64_t begin = chunk * r.position, end = begin + chunk;
    if (end > count) end = count;
    if (begin >= end) continue;
    int copy_count = 0;
    for (int32_t k = 0; k < r.count; ++k) {
      const cmlc_kernel_args_t* p = cmlc_co_peer(a, &r, k);
      src[k] = p->inputs[i];
      if (k != r.position) copies[copy_count++] = (uint8_t*)p->outputs[i];
    }
    cmlc_co_task_t t = {
        .reduce = cmlc_co_reducer(s->dtype, type),
        .simd = cmlc_co_simd_of(a, s->dtype),
        .src = src,
        .n = r.count,
        .base = begin,
        .esize = cmlc_dtype_size(s->dtype),
        .dst = (uint8_t*)a->outputs[i],
        .copies = copies,
        .copy_count = copy_count,
    };
    for (int32_t k = 0; k < r.count; ++k) t.in_place = t.in_place || src[k] == (const void*)t.dst;
    const bool stream = CMLC_CO_HAVE_STREAM && t.esize <= CMLC_CO_STREAM_BLOCK_BYTES &&
                        (size_t)count * t.esize * (size_t)r.count >= CMLC_CO_STREAM_BYTES;
    cmlc_parallel_for(a->pool, end - begin, CMLC_CO_MIN_TASK,
                      stream ? cmlc_co_reduce_stream_task : cmlc_co_reduce_task, &t);
  }
  cmlc_co_finish(a, &r);
  return CML_OK;
}

//===--- block copies (AllGather, AllToAll) ---===//

// Copies a block of |dims| (rank |rank|) from |src| (a row-major array of |src_dims|, the block
// starting at |src_at|) into |dst| (of |dst_dims|, at |dst_at|); elements of |esize| bytes.
static void cmlc_co_copy_block(uint8_t* dst, const int64_t* dst_dims, const int64_t* dst_at,
                               const uint8_t* src, const int64_t* src_dims, const int64_t* src_at,
                               const int64_t* dims, int32_t rank, size_t esize) {
  int64_t ds[CML_MAX_RANK], ss[CML_MAX_RANK], idx[CML_MAX_RANK];
  if (rank == 0) {
    memcpy(dst, src, esize);
    return;
  }
  cmlc_row_major_strides(rank, dst_dims, ds);
  cmlc_row_major_strides(rank, src_dims, ss);
  for (int32_t d = 0; d < rank; ++d) {
    if (dims[d] == 0) return;
    idx[d] = 0;
  }
  const size_t run = (size_t)dims[rank - 1] * esize;
  for (;;) {
    int64_t doff = 0, soff = 0;
    for (int32_t d = 0; d < rank; ++d) {
      doff += (dst_at[d] + idx[d]) * ds[d];
      soff += (src_at[d] + idx[d]) * ss[d];
    }
    memcpy(dst + (size_t)doff * esize, src + (size_t)soff * esize, run);
    int32_t d = rank - 2;
    for (; d >= 0; --d) {
      if (++idx[d] < dims[d]) break;
      idx[d] = 0;
    }
    if (d < 0) return;
  }
}

static cml_status_t cmlc_co_all_gather(const cmlc_kernel_args_t* a) {
  cmlc_co_round_t r;
  CML_RETURN_IF_ERROR(cmlc_co_find_group(a, &r));
  CML_RETURN_IF_ERROR(cmlc_co_join(a, &r));
  const cml_shape_t* in = a->input_shapes[0];
  const cml_shape_t* out = a->output_shapes[0];
  const int32_t axis = (int32_t)a->node->attrs->axis;
  const size_t esize = cmlc_dtype_size(in->dtype);
  int64_t zero[CML_MAX_RANK] = {0}, at[CML_MAX_RANK] = {0};
  for (int32_t k = 0; k < r.count; ++k) {
    const cmlc_kernel_args_t* p = cmlc_co_peer(a, &r, k);
    if (in->rank > 0) at[axis] = (int64_t)k * in->dims[axis];
    cmlc_co_copy_block((uint8_t*)a->outputs[0], out->dims, at, (const uint8_t*)p->inputs[0],
                       in->dims, zero, in->dims, in->rank, esize);
  }
  cmlc_co_finish(a, &r);
  return CML_OK;
}

static cml_status_t cmlc_co_all_to_all(const cmlc_kernel_args_t* a) {
  cmlc_co_round_t r;
  CML_RETURN_IF_ERROR(cmlc_co_find_group(a, &r));
  const cml_shape_t* in = a->input_shapes[0];
  const cml_shape_t* out = a->output_shapes[0];
  const int32_t split = (int32_t)a->node->attrs->collective.split_axis;
  const int32_t concat = (int32_t)a->node->attrs->collective.concat_axis;
  if (in->rank < 1 || split < 0 || split >= in->rank || concat < 0 || concat >= in->rank ||
      in->dims[split] % r.count != 0) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "AllToAll: split axis %d / concat axis %d of a rank-%d operand over "
                           "%d members",
                           (int)split, (int)concat, (int)in->rank, (int)r.count);
  }
  CML_RETURN_IF_ERROR(cmlc_co_join(a, &r));
  const size_t esize = cmlc_dtype_size(in->dtype);
  int64_t block[CML_MAX_RANK], src_at[CML_MAX_RANK] = {0}, dst_at[CML_MAX_RANK] = {0};
  memcpy(block, in->dims, sizeof(int64_t) * (size_t)in->rank);
  block[split] = in->dims[split] / r.count;
  src_at[split] = (int64_t)r.position * block[split];
  // Part |position| of every sender's split axis, placed at the sender's slice of the concat axis.
  for (int32_t k = 0; k < r.count; ++k) {
    const cmlc_kernel_args_t* p = cmlc_co_peer(a, &r, k);
    dst_at[concat] = (int64_t)k * block[concat];
    cmlc_co_copy_block((uint8_t*)a->outputs[0], out->dims, dst_at, (const uint8_t*)p->inputs[0],
                       in->dims, src_at, block, in->rank, esize);
  }
  cmlc_co_finish(a, &r);
  return CML_OK;
}

//===--- ReduceScatter ---===//

static cml_status_t cmlc_co_reduce_scatter(const cmlc_kernel_args_t* a) {
  const cml_reduce_type_t type = a->node->attrs->reduce_type;
  const cml_shape_t* in = a->input_shapes[0];
  const cmlc_co_reduce_fn reduce = cmlc_co_reducer(in->dtype, type);
  const cmlc_co_simd_t simd = cmlc_co_simd_of(a, in->dtype);
  if (!reduce) {
    return cml_status_make(CML_STATUS_UNIMPLEMENTED, "ReduceScatter: no %s reduction of %s",
                           cml_reduce_type_name(type), cml_dtype_name(in->dtype));
  }
  cmlc_co_round_t r;
  CML_RETURN_IF_ERROR(cmlc_co_find_group(a, &r));
  const int32_t axis = (int32_t)a->node->attrs->axis;
  if (in->rank < 1 || axis < 0 || axis >= in->rank || in->dims[axis] % r.count != 0 ||
      cmlc_size_of(r.count, sizeof(void*)) > a->scratch_size) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "ReduceScatter: axis %d of a rank-%d operand over %d members", (int)axis,
                           (int)in->rank, (int)r.count);
  }
  CML_RETURN_IF_ERROR(cmlc_co_join(a, &r));
  const void** src = (const void**)a->scratch;
  for (int32_t k = 0; k < r.count; ++k) src[k] = cmlc_co_peer(a, &r, k)->inputs[0];
  int64_t outer = 1, inner = 1;
  for (int32_t d = 0; d < axis; ++d) outer *= in->dims[d];
  for (int32_t d = axis + 1; d < in->rank; ++d) inner *= in->dims[d];
  const int64_t span = in->dims[axis] / r.count * inner;
  const size_t esize = cmlc_dtype_size(in->dtype);
  uint8_t* dst = (uint8_t*)a->outputs[0];
  for (int64_t o = 0; o < outer; ++o) {
    const int64_t from = o * in->dims[axis] * inner + (int64_t)r.position * span;
    for (int64_t b = 0; b < span; b += CMLC_CO_BLOCK) {
      const int64_t m = span - b < CMLC_CO_BLOCK ? span - b : CMLC_CO_BLOCK;
      cmlc_co_fold(&simd, reduce, dst + (size_t)(o * span + b) * esize, src, r.count, from + b, m,
                   esize);
    }
  }
  cmlc_co_finish(a, &r);
  return CML_OK;
}

//===--- CollectiveBroadcast, CollectivePermute ---===//

static cml_status_t cmlc_co_broadcast(const cmlc_kernel_args_t* a) {
  cmlc_co_round_t r;
  CML_RETURN_IF_ERROR(cmlc_co_find_group(a, &r));
  CML_RETURN_IF_ERROR(cmlc_co_join(a, &r));
  const size_t bytes = cml_shape_byte_size(a->output_shapes[0]);
  const cmlc_kernel_args_t* root = cmlc_co_peer(a, &r, 0);
  if (bytes) memcpy(a->outputs[0], root->inputs[0], bytes);
  cmlc_co_finish(a, &r);
  return CML_OK;
}

static cml_status_t cmlc_co_permute(const cmlc_kernel_args_t* a) {
  const cml_ir_collective_attrs_t* c = &a->node->attrs->collective;
  // Every slot takes part (a source must stay until its target copied).
  cmlc_co_round_t r = {NULL, cmlc_co_replica_count(a), a->replica, NULL};
  int32_t source = -1;
  for (int32_t i = 0; i < c->pair_count; ++i) {
    if (c->pairs[2 * i + 1] == a->replica) source = c->pairs[2 * i];
  }
  if (source >= r.count) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "CollectivePermute: source device slot %d of %d slots", (int)source,
                           (int)r.count);
  }
  CML_RETURN_IF_ERROR(cmlc_co_join(a, &r));
  const size_t bytes = cml_shape_byte_size(a->output_shapes[0]);
  if (bytes) {
    if (source >= 0) {
      memcpy(a->outputs[0], cmlc_co_peer(a, &r, source)->inputs[0], bytes);
    } else {
      memset(a->outputs[0], 0, bytes);
    }
  }
  cmlc_co_finish(a, &r);
  return CML_OK;
}

//===--- ids ---===//

static cml_status_t cmlc_co_store_id(const cmlc_kernel_args_t* a, uint64_t id) {
  void* out = a->outputs[0];
  switch (a->output_shapes[0]->dtype) {
    case CML_DTYPE_U32:
    case CML_DTYPE_I32:
      *(uint32_t*)out = (uint32_t)id;
      return CML_OK;
    case CML_DTYPE_U64:
    case CML_DTYPE_I64:
      *(uint64_t*)out = id;
      return CML_OK;
    default:
      return cml_status_make(CML_STATUS_UNIMPLEMENTED, "%s: result dtype %s",
                             cml_op_name(a->node->op), cml_dtype_name(a->output_shapes[0]->dtype));
  }
}

static cml_status_t cmlc_co_replica_id(const cmlc_kernel_args_t* a) {
  return cmlc_co_store_id(a, (uint64_t)(a->replica > 0 ? a->replica : 0));
}

// SPMD runs one partition.
static cml_status_t cmlc_co_partition_id(const cmlc_kernel_args_t* a) {
  return cmlc_co_store_id(a, 0);
}

//===--- lookup ---===//

// Room for the sources and the other members' outputs of the node's largest group.
static size_t cmlc_co_scratch(const cml_module_t* module, const cml_ir_node_t* node,
                              const cmlc_options_t* options) {
  (void)options;
  int64_t members = node->attrs->collective.group_size;
  if (members < module->num_devices) members = module->num_devices;
  if (members < 1) members = 1;
  return cmlc_size_of(members, 2 * sizeof(void*));  // saturating
}

bool cmlc_kernels_collective_lookup(const cml_module_t* module, const cml_ir_node_t* node,
                                    const cmlc_options_t* options, cmlc_kernel_entry_t* out) {
  // c:distributed=mpi: groups may span processes (src/backends/c/mpi_collective.c).
  if (options && options->process_count > 1 && node->op != CML_OP_REPLICA_ID &&
      node->op != CML_OP_PARTITION_ID) {
    return cmlc_mpi_collective_lookup(module, node, options, out);
  }
  memset(out, 0, sizeof *out);
  out->in_place_input = -1;
  if (node->op == CML_OP_REPLICA_ID || node->op == CML_OP_PARTITION_ID) {
    const cml_dtype_t d = module->values[node->first_output].shape.dtype;
    if (d != CML_DTYPE_U32 && d != CML_DTYPE_I32 && d != CML_DTYPE_U64 && d != CML_DTYPE_I64) {
      return false;
    }
    out->run = node->op == CML_OP_REPLICA_ID ? cmlc_co_replica_id : cmlc_co_partition_id;
    return true;
  }
  if (node->input_count < 1) return false;
  for (uint32_t i = 0; i < node->input_count; ++i) {
    const cml_dtype_t d = module->values[node->inputs[i]].shape.dtype;
    if (cmlc_dtype_size(d) == 0) return false;
    if ((node->op == CML_OP_ALL_REDUCE || node->op == CML_OP_REDUCE_SCATTER) &&
        !cmlc_co_reducer(d, node->attrs->reduce_type)) {
      return false;
    }
  }
  if (node->op == CML_OP_ALL_REDUCE || node->op == CML_OP_REDUCE_SCATTER) {
    const cmlc_co_simd_t k = cmlc_co_simd_pick(options, module->values[node->inputs[0]].shape.dtype,
                                               node->attrs->reduce_type);
    out->impl[0] = (cmlc_impl_fn)k.op;
    out->impl[1] = (cmlc_impl_fn)k.widen;
    out->impl[2] = (cmlc_impl_fn)k.narrow;
  }
  switch (node->op) {
    case CML_OP_ALL_REDUCE:
      out->run = cmlc_co_all_reduce;
      out->scratch = cmlc_co_scratch;
      out->in_place_each = true;  // cmlc_co_reduce_blocks reads a block before writing it
      return true;
    case CML_OP_REDUCE_SCATTER:
      out->run = cmlc_co_reduce_scatter;
      out->scratch = cmlc_co_scratch;
      return true;
    case CML_OP_ALL_GATHER:
      out->run = cmlc_co_all_gather;
      return true;
    case CML_OP_ALL_TO_ALL:
      out->run = cmlc_co_all_to_all;
      return true;
    case CML_OP_COLLECTIVE_BROADCAST:
      out->run = cmlc_co_broadcast;
      return true;
    case CML_OP_COLLECTIVE_PERMUTE:
      out->run = cmlc_co_permute;
      return true;
    default:
      return false;
  }
}

void cmlc_kernels_collective_capabilities(cml_capabilities_t* caps) {
  cmlc_kernels_group_capabilities(caps, CML_OPG_COLLECTIVE);
}
