// SPDX-License-Identifier: Apache-2.0
// kernels/generic/movement_common.c: strided copies, fills and index reads shared by the
// movement, index and window kernel groups.
#include <string.h>

#include "backends/c/kernels/generic/movement_internal.h"

// Work below this many bytes stays on the calling thread.
#define CMLC_MV_PARALLEL_BYTES ((int64_t)64 * 1024)

//===--- small helpers ---===//

int64_t cmlc__mv_read_index(const void* data, cml_dtype_t dtype, int64_t i) {
  switch (dtype) {
    case CML_DTYPE_I8:
      return ((const int8_t*)data)[i];
    case CML_DTYPE_I16:
      return ((const int16_t*)data)[i];
    case CML_DTYPE_I32:
      return ((const int32_t*)data)[i];
    case CML_DTYPE_I64:
      return ((const int64_t*)data)[i];
    case CML_DTYPE_U8:
      return ((const uint8_t*)data)[i];
    case CML_DTYPE_U16:
      return ((const uint16_t*)data)[i];
    case CML_DTYPE_U32:
      return ((const uint32_t*)data)[i];
    case CML_DTYPE_U64: {
      uint64_t v = ((const uint64_t*)data)[i];
      return v > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)v;
    }
    default:
      return 0;
  }
}

//===--- strided copy ---===//

void cmlc__mv_copy_simplify(cmlc__mv_copy_t* c) {
  int32_t r = 0;
  for (int32_t i = 0; i < c->rank; ++i) {
    if (c->dims[i] == 0) {
      c->rank = 1;
      c->dims[0] = 0;
      c->out_strides[0] = c->in_strides[0] = 1;
      return;
    }
    if (c->dims[i] == 1) continue;
    if (r > 0 && c->out_strides[r - 1] == c->out_strides[i] * c->dims[i] &&
        c->in_strides[r - 1] == c->in_strides[i] * c->dims[i]) {
      // Merge axis i into the previous kept axis.
      c->dims[r - 1] *= c->dims[i];
      c->out_strides[r - 1] = c->out_strides[i];
      c->in_strides[r - 1] = c->in_strides[i];
      continue;
    }
    c->dims[r] = c->dims[i];
    c->out_strides[r] = c->out_strides[i];
    c->in_strides[r] = c->in_strides[i];
    ++r;
  }
  if (r == 0) {
    r = 1;
    c->dims[0] = 1;
    c->out_strides[0] = c->in_strides[0] = 1;
  }
  c->rank = r;
}

int64_t cmlc__mv_copy_count(const cmlc__mv_copy_t* c) {
  int64_t n = 1;
  for (int32_t i = 0; i < c->rank; ++i) n *= c->dims[i];
  return n;
}

// Copies rows [row_begin, row_end) of a simplified copy; a row is the last axis.
static void cmlc_mv_copy_rows(const cmlc__mv_copy_t* c, char* out, const char* in,
                              int64_t row_begin, int64_t row_end) {
  const int32_t outer = c->rank - 1;
  const int64_t es = (int64_t)c->elem_size;
  int64_t idx[CML_MAX_RANK];
  int64_t ooff = 0, ioff = 0, rem = row_begin;
  for (int32_t d = outer - 1; d >= 0; --d) {
    idx[d] = rem % c->dims[d];
    rem /= c->dims[d];
    ooff += idx[d] * c->out_strides[d];
    ioff += idx[d] * c->in_strides[d];
  }
  const int64_t n = c->dims[outer];
  const int64_t os = c->out_strides[outer], is = c->in_strides[outer];
  for (int64_t row = row_begin; row < row_end; ++row) {
    cmlc__mv_copy_row(out + ooff * es, in + ioff * es, n, os, is, c->elem_size);
    for (int32_t d = outer - 1; d >= 0; --d) {
      ooff += c->out_strides[d];
      ioff += c->in_strides[d];
      if (++idx[d] < c->dims[d]) break;
      ooff -= c->out_strides[d] * c->dims[d];
      ioff -= c->in_strides[d] * c->dims[d];
      idx[d] = 0;
    }
  }
}

static int64_t cmlc_mv_row_count(const cmlc__mv_copy_t* c) {
  int64_t rows = 1;
  for (int32_t d = 0; d < c->rank - 1; ++d) rows *= c->dims[d];
  return rows;
}

void cmlc__mv_copy_serial(const cmlc__mv_copy_t* copy, void* out, const void* in) {
  cmlc__mv_copy_t c = *copy;
  cmlc__mv_copy_simplify(&c);
  if (cmlc__mv_copy_count(&c) == 0) return;
  cmlc_mv_copy_rows(&c, (char*)out, (const char*)in, 0, cmlc_mv_row_count(&c));
}

typedef struct cmlc_mv_copy_task_t {
  const cmlc__mv_copy_t* copy;
  char* out;
  const char* in;
} cmlc_mv_copy_task_t;

static void cmlc_mv_copy_task(void* ctx, int64_t begin, int64_t end, int thread_index) {
  (void)thread_index;
  const cmlc_mv_copy_task_t* t = (const cmlc_mv_copy_task_t*)ctx;
  cmlc_mv_copy_rows(t->copy, t->out, t->in, begin, end);
}

void cmlc__mv_copy(cmlc_pool_t* pool, const cmlc__mv_copy_t* copy, void* out, const void* in) {
  cmlc__mv_copy_t c = *copy;
  cmlc__mv_copy_simplify(&c);
  const int64_t count = cmlc__mv_copy_count(&c);
  if (count == 0) return;
  const int64_t rows = cmlc_mv_row_count(&c);
  const int64_t row_bytes = c.dims[c.rank - 1] * (int64_t)c.elem_size;
  if (pool == NULL || rows == 1 || count * (int64_t)c.elem_size < CMLC_MV_PARALLEL_BYTES) {
    cmlc_mv_copy_rows(&c, (char*)out, (const char*)in, 0, rows);
    return;
  }
  int64_t min_chunk = CMLC_MV_PARALLEL_BYTES / (row_bytes > 0 ? row_bytes : 1);
  if (min_chunk < 1) min_chunk = 1;
  cmlc_mv_copy_task_t task = {&c, (char*)out, (const char*)in};
  cmlc_parallel_for(pool, rows, min_chunk, cmlc_mv_copy_task, &task);
}

//===--- fill and memcpy ---===//

typedef struct cmlc_mv_fill_task_t {
  char* out;
  const void* value;
  size_t elem_size;
} cmlc_mv_fill_task_t;

#define CMLC_MV_FILL_LOOP(T)                          \
  do {                                                \
    T v_;                                             \
    memcpy(&v_, t->value, sizeof v_);                 \
    T* o_ = (T*)t->out;                               \
    for (int64_t k = begin; k < end; ++k) o_[k] = v_; \
  } while (0)

static void cmlc_mv_fill_task(void* ctx, int64_t begin, int64_t end, int thread_index) {
  (void)thread_index;
  const cmlc_mv_fill_task_t* t = (const cmlc_mv_fill_task_t*)ctx;
  switch (t->elem_size) {
    case 1:
      memset(t->out + begin, *(const unsigned char*)t->value, (size_t)(end - begin));
      break;
    case 2:
      CMLC_MV_FILL_LOOP(uint16_t);
      break;
    case 4:
      CMLC_MV_FILL_LOOP(uint32_t);
      break;
    case 8:
      CMLC_MV_FILL_LOOP(uint64_t);
      break;
    case 16:
      CMLC_MV_FILL_LOOP(cmlc__mv_elem16_t);
      break;
    default:
      for (int64_t k = begin; k < end; ++k)
        memcpy(t->out + k * (int64_t)t->elem_size, t->value, t->elem_size);
      break;
  }
}

void cmlc__mv_fill(cmlc_pool_t* pool, void* out, int64_t count, const void* value,
                   size_t elem_size) {
  if (count <= 0) return;
  cmlc_mv_fill_task_t task = {(char*)out, value, elem_size};
  int64_t min_chunk = CMLC_MV_PARALLEL_BYTES / (int64_t)elem_size;
  if (pool == NULL || count <= min_chunk) {
    cmlc_mv_fill_task(&task, 0, count, 0);
    return;
  }
  cmlc_parallel_for(pool, count, min_chunk, cmlc_mv_fill_task, &task);
}

typedef struct cmlc_mv_memcpy_task_t {
  char* out;
  const char* in;
} cmlc_mv_memcpy_task_t;

static void cmlc_mv_memcpy_task(void* ctx, int64_t begin, int64_t end, int thread_index) {
  (void)thread_index;
  const cmlc_mv_memcpy_task_t* t = (const cmlc_mv_memcpy_task_t*)ctx;
  memcpy(t->out + begin, t->in + begin, (size_t)(end - begin));
}

void cmlc__mv_memcpy(cmlc_pool_t* pool, void* out, const void* in, size_t size) {
  if (size == 0 || out == in) return;
  cmlc_mv_memcpy_task_t task = {(char*)out, (const char*)in};
  // Large copies are split in chunks of at least 256 KiB (memcpy is bandwidth bound).
  const int64_t min_chunk = 4 * CMLC_MV_PARALLEL_BYTES;
  if (pool == NULL || (int64_t)size <= 2 * min_chunk) {
    memcpy(out, in, size);
    return;
  }
  cmlc_parallel_for(pool, (int64_t)size, min_chunk, cmlc_mv_memcpy_task, &task);
}
