// SPDX-License-Identifier: Apache-2.0
// src/base/shape.c: shape construction, sizes, formatting and parsing.
#include <ctype.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cml/shape.h"

cml_status_t cml__axis_sum(int64_t a, int64_t b, int64_t* out_dim);

cml_status_t cml_shape_init(cml_shape_t* out_shape, cml_dtype_t dtype, int32_t rank,
                            const int64_t* dims) {
  if (!out_shape) return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "shape: NULL output");
  memset(out_shape, 0, sizeof *out_shape);
  if (!cml_dtype_is_supported(dtype))
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "shape: unsupported dtype %s (%d)",
                           cml_dtype_name(dtype), (int)dtype);
  if (rank < 0 || rank > CML_MAX_RANK)
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "shape: rank %d out of range [0, %d]",
                           (int)rank, CML_MAX_RANK);
  if (rank > 0 && !dims)
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "shape: NULL dims for rank %d", (int)rank);
  // At most 2^55 elements (CML_MAX_ELEMENTS): then the size in bits of any dtype (at most 128
  // bits per element) stays below 2^62, so bit and byte sizes never overflow int64. Zero
  // dimensions count as 1 here, so that the row-major strides of an empty shape fit as well.
  uint64_t count = 1;
  bool too_many = false;
  for (int32_t i = 0; i < rank; ++i) {
    if (dims[i] < 0)
      return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                             "shape: axis %d has no size (%lld): a negative dimension, or a "
                             "dynamic axis where a concrete size is needed (buffers, constants "
                             "and checkpoints hold concrete shapes)",
                             (int)i, (long long)dims[i]);
    uint64_t d = dims[i] == 0 ? 1u : (uint64_t)dims[i];
    if (!too_many && __builtin_mul_overflow(count, d, &count)) too_many = true;
  }
  if (too_many || count > (uint64_t)CML_MAX_ELEMENTS) {
    cml_shape_t tmp;
    memset(&tmp, 0, sizeof tmp);
    tmp.dtype = dtype;
    tmp.rank = rank;
    for (int32_t i = 0; i < rank; ++i) tmp.dims[i] = dims[i];
    char text[400];
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "shape: %s has too many elements (the limit is 2^55)",
                           cml_shape_format(&tmp, text, sizeof text));
  }
  out_shape->dtype = dtype;
  out_shape->rank = rank;
  for (int32_t i = 0; i < rank; ++i) out_shape->dims[i] = dims[i];
  return CML_OK;
}

cml_shape_t cml_shape_make(cml_dtype_t dtype, int32_t rank, const int64_t* dims) {
  cml_shape_t s;
  cml_status_t st = cml_shape_init(&s, dtype, rank, dims);
  if (st != CML_OK) {
    cml_status_free(st);
    memset(&s, 0, sizeof s);
    s.dtype = CML_DTYPE_INVALID;
  }
  return s;
}

cml_shape_t cml_shape_scalar(cml_dtype_t dtype) { return cml_shape_make(dtype, 0, NULL); }

// The rank of |shape| when it is in [0, CML_MAX_RANK], else -1. The accessors below take
// hand-filled structs too, so they never read past dims[CML_MAX_RANK - 1].
static int32_t cml_shape_checked_rank(const cml_shape_t* shape) {
  return (shape->rank >= 0 && shape->rank <= CML_MAX_RANK) ? shape->rank : -1;
}

int64_t cml_shape_element_count(const cml_shape_t* shape) {
  if (!shape) return 0;
  int32_t rank = cml_shape_checked_rank(shape);
  if (rank < 0) return 0;
  // A negative or zero dim gives 0 elements; an overflowing product saturates at INT64_MAX.
  for (int32_t i = 0; i < rank; ++i) {
    if (shape->dims[i] <= 0) return 0;
  }
  uint64_t n = 1;
  for (int32_t i = 0; i < rank; ++i) {
    uint64_t d = (uint64_t)shape->dims[i];
    if (n > (uint64_t)INT64_MAX / d) return INT64_MAX;
    n *= d;
  }
  return (int64_t)n;
}

size_t cml_shape_byte_size(const cml_shape_t* shape) {
  if (!shape) return 0;
  int64_t count = cml_shape_element_count(shape);
  uint64_t bits_per = (uint64_t)cml_dtype_bits(shape->dtype);
  if (count == INT64_MAX || (bits_per && (uint64_t)count > (UINT64_MAX - 7) / bits_per)) {
    return SIZE_MAX;  // only for shapes cml_shape_init rejects
  }
  uint64_t bytes = ((uint64_t)count * bits_per + 7) / 8;
  return bytes > SIZE_MAX ? SIZE_MAX : (size_t)bytes;
}

bool cml_shape_dims_equal(const cml_shape_t* a, const cml_shape_t* b) {
  if (!a || !b || a->rank != b->rank) return false;
  int32_t rank = a->rank < 0 ? 0 : a->rank > CML_MAX_RANK ? CML_MAX_RANK : a->rank;
  for (int32_t i = 0; i < rank; ++i)
    if (a->dims[i] != b->dims[i]) return false;
  return true;
}

bool cml_shape_equal(const cml_shape_t* a, const cml_shape_t* b) {
  return a && b && a->dtype == b->dtype && cml_shape_dims_equal(a, b);
}

const char* cml_shape_format(const cml_shape_t* shape, char* buffer, size_t size) {
  if (!buffer || size == 0) return buffer;
  if (!shape) {
    snprintf(buffer, size, "(null shape)");
    return buffer;
  }
  size_t used = 0;
  int n = snprintf(buffer, size, "(%s)", cml_dtype_name(shape->dtype));
  used = n > 0 ? (size_t)n : 0;
  if (cml_shape_checked_rank(shape) < 0) {
    if (used < size) snprintf(buffer + used, size - used, "[invalid rank %d]", (int)shape->rank);
    return buffer;
  }
  if (shape->rank > 0 && used < size) {
    for (int32_t i = 0; i < shape->rank && used < size; ++i) {
      const char* name = shape->dims[i] < 0 ? cml_axis_name(cml_dim_axis_id(shape->dims[i])) : NULL;
      if (name && strcmp(name, "?") == 0) {
        n = snprintf(buffer + used, size - used, "%s?", i == 0 ? "[" : ", ");
      } else if (name) {
        n = snprintf(buffer + used, size - used, "%s%s=?", i == 0 ? "[" : ", ", name);
      } else {
        n = snprintf(buffer + used, size - used, "%s%lld", i == 0 ? "[" : ", ",
                     (long long)shape->dims[i]);
      }
      if (n < 0) break;
      used += (size_t)n;
    }
    if (used < size) snprintf(buffer + used, size - used, "]");
  }
  return buffer;
}

static const char* cml_skip_spaces(const char* p) {
  while (*p && isspace((unsigned char)*p)) ++p;
  return p;
}

cml_status_t cml_shape_parse(const char* text, cml_shape_t* out_shape) {
  if (!out_shape) return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "shape: NULL output");
  memset(out_shape, 0, sizeof *out_shape);
  if (!text) return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "shape: NULL text");
  const char* p = cml_skip_spaces(text);
  char name[32];
  size_t len = 0;
  bool paren = (*p == '(');
  if (paren) p = cml_skip_spaces(p + 1);
  while (*p && (isalnum((unsigned char)*p) || *p == '_') && len + 1 < sizeof name)
    name[len++] = *p++;
  name[len] = '\0';
  cml_dtype_t dtype = cml_dtype_from_name(name);
  if (dtype == CML_DTYPE_INVALID)
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "shape: unknown dtype \"%s\" at offset 0 of \"%s\"", name, text);
  p = cml_skip_spaces(p);
  if (paren) {
    if (*p != ')')
      return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                             "shape: expected ')' at offset %d of \"%s\"", (int)(p - text), text);
    p = cml_skip_spaces(p + 1);
  }
  int64_t dims[CML_MAX_RANK];
  const char* names[CML_MAX_RANK];
  char name_text[CML_MAX_RANK][CML_MAX_AXIS_NAME_LEN + 2];
  bool dynamic = false;
  int32_t rank = 0;
  if (*p == '[') {
    p = cml_skip_spaces(p + 1);
    if (*p == ']') {
      p = cml_skip_spaces(p + 1);
    } else {
      for (;;) {
        if (rank >= CML_MAX_RANK)
          return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "shape: more than %d dims in \"%s\"",
                                 CML_MAX_RANK, text);
        if (!isdigit((unsigned char)*p)) {
          // A dynamic axis: "name=?" or "?".
          char axis[CML_MAX_AXIS_NAME_LEN + 2];
          size_t n = 0;
          const char* start = p;
          while (*p && *p != '=' && *p != ',' && *p != ']' && !isspace((unsigned char)*p) &&
                 n + 1 < sizeof axis)
            axis[n++] = *p++;
          axis[n] = '\0';
          p = cml_skip_spaces(p);
          bool anonymous = strcmp(axis, "?") == 0;
          if (!anonymous) {
            if (n == 0 || *p != '=')
              return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                                     "shape: expected a dimension or \"name=?\" at offset %d of "
                                     "\"%s\"",
                                     (int)(start - text), text);
            p = cml_skip_spaces(p + 1);
            if (*p != '?')
              return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                                     "shape: expected '?' after \"%s=\" at offset %d of \"%s\"",
                                     axis, (int)(p - text), text);
            p = cml_skip_spaces(p + 1);
          }
          memcpy(name_text[rank], axis, n + 1);
          names[rank] = name_text[rank];
          dims[rank++] = CML_DYNAMIC_DIM;
          dynamic = true;
        } else {
          char* end = NULL;
          long long v = strtoll(p, &end, 10);
          names[rank] = NULL;
          dims[rank++] = v;
          p = cml_skip_spaces(end);
        }
        if (*p == ',') {
          p = cml_skip_spaces(p + 1);
          continue;
        }
        if (*p == ']') {
          p = cml_skip_spaces(p + 1);
          break;
        }
        return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                               "shape: expected ',' or ']' at offset %d of \"%s\"", (int)(p - text),
                               text);
      }
    }
  }
  if (*p)
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "shape: unexpected text at offset %d of \"%s\"", (int)(p - text), text);
  if (dynamic) return cml_shape_init_dynamic(out_shape, dtype, rank, dims, names);
  return cml_shape_init(out_shape, dtype, rank, dims);
}

//===--- dynamic axes ---===//
//
// Interned axis names: ids 2..CML_MAX_AXIS_NAMES+1 (0 and 1 are never used, so -1, the
// CML_DYNAMIC_DIM marker, is never a stored dim). Names are published in chunks of 256 that
// never move: cml_axis_name reads them without a lock (acquire load of the count); interning
// takes the mutex and looks names up in an open-addressing hash table.

#define CML_AXIS_CHUNK 256
#define CML_AXIS_FIRST_ID 2
// Anonymous axes ("?") are not interned: each one takes the next id from 2^32 up, has no
// table entry, and never counts against CML_MAX_AXIS_NAMES (a long-running process may make
// any number of them).
#define CML_AXIS_ANON_FIRST_ID ((int64_t)1 << 32)
#define CML_AXIS_ANON_LAST_ID ((int64_t)1 << 62)
static atomic_int_fast64_t cml_axis_anon_count;  // anonymous axes made so far

static pthread_mutex_t cml_axis_mutex = PTHREAD_MUTEX_INITIALIZER;
static char** _Atomic cml_axis_chunks[CML_MAX_AXIS_NAMES / CML_AXIS_CHUNK];
static atomic_int_fast64_t cml_axis_count;  // names interned so far
static int64_t* cml_axis_table;             // ids, 0 = empty; guarded by the mutex
static size_t cml_axis_table_size;          // 0 or a power of two

static uint64_t cml_axis_hash_text(const char* s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; ++s) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

const char* cml_axis_name(int64_t id) {
  if (id >= CML_AXIS_ANON_FIRST_ID) {
    int64_t made = atomic_load_explicit(&cml_axis_anon_count, memory_order_acquire);
    return id - CML_AXIS_ANON_FIRST_ID < made ? "?" : NULL;
  }
  int64_t index = id - CML_AXIS_FIRST_ID;
  if (index < 0 || index >= atomic_load_explicit(&cml_axis_count, memory_order_acquire)) {
    return NULL;
  }
  char** chunk =
      atomic_load_explicit(&cml_axis_chunks[index / CML_AXIS_CHUNK], memory_order_acquire);
  return chunk ? chunk[index % CML_AXIS_CHUNK] : NULL;
}

// Checks the characters of a name (not its reservation).
static bool cml_axis_name_chars_ok(const char* name, bool allow_sum) {
  size_t len = strlen(name);
  if (len == 0 || len > CML_MAX_AXIS_NAME_LEN) return false;
  if (strcmp(name, "?") == 0) return true;
  // A sum "=t1+t2+...": at least one term and no empty one ("=", "=+", "=a++b" made axes that
  // shapes accepted and no binding could ever resolve).
  if (allow_sum && name[0] == '=' &&
      (len == 1 || name[1] == '+' || name[len - 1] == '+' || strstr(name, "++"))) {
    return false;
  }
  for (size_t i = 0; i < len; ++i) {
    unsigned char c = (unsigned char)name[i];
    bool ok = isalnum(c) || c == '_' || c == '.' || c == ':' || c == '-' ||
              (allow_sum && (c == '+' || (c == '=' && i == 0)));
    if (!ok) return false;
  }
  return true;
}

// Looks |name| up (under the mutex); 0 when absent.
static int64_t cml_axis_find_locked(const char* name) {
  if (!cml_axis_table_size) return 0;
  size_t mask = cml_axis_table_size - 1;
  for (size_t i = cml_axis_hash_text(name) & mask;; i = (i + 1) & mask) {
    int64_t id = cml_axis_table[i];
    if (id == 0) return 0;
    if (strcmp(cml_axis_name(id), name) == 0) return id;
  }
}

static bool cml_axis_table_insert_locked(int64_t id) {
  int64_t count = atomic_load_explicit(&cml_axis_count, memory_order_relaxed);
  if ((size_t)(count + 1) * 2 > cml_axis_table_size) {
    size_t size = cml_axis_table_size ? cml_axis_table_size * 2 : 64;
    int64_t* table = calloc(size, sizeof *table);
    if (!table) return false;
    for (size_t k = 0; k < cml_axis_table_size; ++k) {
      int64_t old = cml_axis_table[k];
      if (!old) continue;
      size_t i = cml_axis_hash_text(cml_axis_name(old)) & (size - 1);
      while (table[i]) i = (i + 1) & (size - 1);
      table[i] = old;
    }
    free(cml_axis_table);
    cml_axis_table = table;
    cml_axis_table_size = size;
  }
  size_t mask = cml_axis_table_size - 1;
  size_t i = cml_axis_hash_text(cml_axis_name(id)) & mask;
  while (cml_axis_table[i]) i = (i + 1) & mask;
  cml_axis_table[i] = id;
  return true;
}

// Interns |name| (already checked); "?" is never shared and never interned.
static cml_status_t cml_axis_intern(const char* name, int64_t* out_id) {
  if (strcmp(name, "?") == 0) {
    int64_t n = atomic_fetch_add_explicit(&cml_axis_anon_count, 1, memory_order_acq_rel);
    if (n >= CML_AXIS_ANON_LAST_ID - CML_AXIS_ANON_FIRST_ID) {
      return cml_status_make(CML_STATUS_RESOURCE_EXHAUSTED,
                             "shape: the process has made %lld anonymous axes \"?\"", (long long)n);
    }
    *out_id = CML_AXIS_ANON_FIRST_ID + n;
    return CML_OK;
  }
  pthread_mutex_lock(&cml_axis_mutex);
  int64_t id = cml_axis_find_locked(name);
  if (id) {
    pthread_mutex_unlock(&cml_axis_mutex);
    *out_id = id;
    return CML_OK;
  }
  int64_t index = atomic_load_explicit(&cml_axis_count, memory_order_relaxed);
  cml_status_t st = CML_OK;
  char* copy = NULL;
  if (index >= CML_MAX_AXIS_NAMES) {
    st = cml_status_make(CML_STATUS_RESOURCE_EXHAUSTED,
                         "shape: axis name \"%s\": the process already has %d axis names", name,
                         CML_MAX_AXIS_NAMES);
  } else {
    size_t c = (size_t)(index / CML_AXIS_CHUNK);
    char** chunk = atomic_load_explicit(&cml_axis_chunks[c], memory_order_relaxed);
    if (!chunk) {
      chunk = calloc(CML_AXIS_CHUNK, sizeof *chunk);
      if (chunk) atomic_store_explicit(&cml_axis_chunks[c], chunk, memory_order_release);
    }
    copy = chunk ? strdup(name) : NULL;
    if (!copy) {
      st = cml_status_make(CML_STATUS_RESOURCE_EXHAUSTED, "shape: out of memory for axis \"%s\"",
                           name);
    } else {
      chunk[index % CML_AXIS_CHUNK] = copy;
      atomic_store_explicit(&cml_axis_count, index + 1, memory_order_release);
      id = index + CML_AXIS_FIRST_ID;
      if (!cml_axis_table_insert_locked(id)) {
        st = cml_status_make(CML_STATUS_RESOURCE_EXHAUSTED, "shape: out of memory for axis \"%s\"",
                             name);
      }
    }
  }
  pthread_mutex_unlock(&cml_axis_mutex);
  if (st == CML_OK) *out_id = id;
  return st;
}

cml_status_t cml_axis_id(const char* name, int64_t* out_id) {
  if (!out_id) return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "axis name: NULL output");
  *out_id = 0;
  if (!name || !cml_axis_name_chars_ok(name, name[0] == '=')) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "axis name \"%s\" is invalid (1..%d characters of [A-Za-z0-9_.:-], "
                           "or \"?\")",
                           name ? name : "(null)", CML_MAX_AXIS_NAME_LEN);
  }
  return cml_axis_intern(name, out_id);
}

// A user-given name: valid characters and not reserved.
static cml_status_t cml_axis_user_id(const char* name, int64_t* out_id) {
  if (name && (name[0] == '=' || name[0] == '#' || name[0] == '*')) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "axis name \"%s\" is reserved (names starting with '=', '#' or '*' are "
                           "internal)",
                           name);
  }
  return cml_axis_id(name, out_id);
}

cml_status_t cml_axis_name_unify(const char* a, const char* b, const char** out) {
  if (out) *out = NULL;
  bool a_empty = !a || !*a, b_empty = !b || !*b;
  if ((!a_empty && strcmp(a, "?") == 0) || (!b_empty && strcmp(b, "?") == 0)) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "axis names \"%s\" and \"%s\": an anonymous axis \"?\" never unifies",
                           a ? a : "", b ? b : "");
  }
  if (!a_empty && !b_empty && strcmp(a, b) != 0) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "axis names \"%s\" and \"%s\" differ", a,
                           b);
  }
  if (out) *out = a_empty ? (b_empty ? NULL : b) : a;
  return CML_OK;
}

bool cml_shape_is_dynamic(const cml_shape_t* shape) {
  if (!shape) return false;
  int32_t rank = cml_shape_checked_rank(shape);
  for (int32_t i = 0; i < rank; ++i) {
    if (shape->dims[i] < 0) return true;
  }
  return false;
}

const char* cml_shape_axis_name(const cml_shape_t* shape, int32_t axis) {
  if (!shape || axis < 0 || axis >= cml_shape_checked_rank(shape)) return NULL;
  return shape->dims[axis] < 0 ? cml_axis_name(cml_dim_axis_id(shape->dims[axis])) : NULL;
}

// Validates static dims like cml_shape_init; dynamic dims must be interned ids.
static cml_status_t cml_shape_check(const cml_shape_t* shape) {
  if (!shape) return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "shape: NULL shape");
  if (shape->dtype == CML_DTYPE_INVALID && shape->rank == 0)
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "shape: invalid (dtype unknown, rank 0): cml_shape_make and "
                           "cml_shape_scalar give this for an unsupported dtype, a negative "
                           "dimension, a rank outside [0, %d] or too many elements; "
                           "cml_shape_init returns the reason",
                           CML_MAX_RANK);
  if (shape->rank < 0 || shape->rank > CML_MAX_RANK)
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "shape: rank %d out of range [0, %d]",
                           (int)shape->rank, CML_MAX_RANK);
  int64_t dims[CML_MAX_RANK];
  for (int32_t i = 0; i < shape->rank; ++i) {
    int64_t d = shape->dims[i];
    if (d < 0 && !cml_axis_name(cml_dim_axis_id(d))) {
      return cml_status_make(
          CML_STATUS_INVALID_ARGUMENT,
          "shape: dimension %lld at axis %d is neither a size nor a dynamic axis "
          "(use cml_shape_init_dynamic)",
          (long long)d, (int)i);
    }
    dims[i] = d < 0 ? 1 : d;
  }
  cml_shape_t tmp;
  return cml_shape_init(&tmp, shape->dtype, shape->rank, dims);
}

cml_status_t cml_shape_validate(const cml_shape_t* shape) { return cml_shape_check(shape); }

cml_status_t cml_shape_checked_byte_size(const cml_shape_t* shape, size_t* out_bytes) {
  if (!out_bytes) return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "shape: NULL output");
  *out_bytes = 0;
  CML_RETURN_IF_ERROR(cml_shape_check(shape));
  for (int32_t i = 0; i < shape->rank; ++i) {
    if (shape->dims[i] < 0) {
      char text[400];
      return cml_status_make(CML_STATUS_FAILED_PRECONDITION,
                             "shape: %s has no byte size: axis %d (\"%s\") is dynamic",
                             cml_shape_format(shape, text, sizeof text), (int)i,
                             cml_axis_name(cml_dim_axis_id(shape->dims[i])));
    }
  }
  // The exact size (cml_shape_check kept it below 2^62 bytes), which a 32-bit size_t (wasm32)
  // may not hold: cml_shape_byte_size then says SIZE_MAX, which is not the size.
  const uint64_t bytes =
      ((uint64_t)cml_shape_element_count(shape) * (uint64_t)cml_dtype_bits(shape->dtype) + 7) / 8;
  if (bytes > (uint64_t)SIZE_MAX) {
    char text[400];
    return cml_status_make(CML_STATUS_RESOURCE_EXHAUSTED,
                           "shape: %s holds %llu bytes, more than this platform's size_t counts "
                           "(%zu)",
                           cml_shape_format(shape, text, sizeof text), (unsigned long long)bytes,
                           (size_t)SIZE_MAX);
  }
  *out_bytes = (size_t)bytes;
  return CML_OK;
}

cml_status_t cml_shape_init_dynamic(cml_shape_t* out_shape, cml_dtype_t dtype, int32_t rank,
                                    const int64_t* dims, const char* const* names) {
  if (!out_shape) return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "shape: NULL output");
  memset(out_shape, 0, sizeof *out_shape);
  if (rank < 0 || rank > CML_MAX_RANK)
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "shape: rank %d out of range [0, %d]",
                           (int)rank, CML_MAX_RANK);
  if (rank > 0 && !dims)
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "shape: NULL dims for rank %d", (int)rank);
  int64_t stored[CML_MAX_RANK] = {0}, sizes[CML_MAX_RANK] = {0};
  for (int32_t i = 0; i < rank; ++i) {
    stored[i] = sizes[i] = dims[i];
    if (dims[i] >= 0) continue;
    const char* name = names ? names[i] : NULL;
    if (dims[i] != CML_DYNAMIC_DIM || !name) {
      return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                             "shape: dimension %lld at axis %d: only a named axis may be dynamic "
                             "(CML_DYNAMIC_DIM with a name)",
                             (long long)dims[i], (int)i);
    }
    int64_t id = 0;
    cml_status_t st = cml_axis_user_id(name, &id);
    if (st != CML_OK) {  // "shape: axis 0: axis name ...", the prefix said once
      const char* m = cml_status_message(st);
      if (strncmp(m, "shape: ", 7) == 0) m += 7;
      cml_status_t named = cml_status_make(cml_status_code(st), "shape: axis %d: %s", (int)i, m);
      cml_status_free(st);
      return named;
    }
    stored[i] = -id;
    sizes[i] = 1;
  }
  CML_RETURN_IF_ERROR(cml_shape_init(out_shape, dtype, rank, sizes));
  for (int32_t i = 0; i < rank; ++i) out_shape->dims[i] = stored[i];
  return CML_OK;
}

//===--- bindings ---===//

void cml_axis_bindings_init(cml_axis_bindings_t* bindings) {
  if (bindings) memset(bindings, 0, sizeof *bindings);
}

static int32_t cml_bindings_find(const cml_axis_bindings_t* b, int64_t id) {
  int32_t lo = 0, hi = b->count;
  while (lo < hi) {
    int32_t mid = (lo + hi) / 2;
    if (b->ids[mid] < id) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

cml_status_t cml_axis_bindings_set_id(cml_axis_bindings_t* bindings, int64_t id, int64_t size) {
  if (!bindings) return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "axis bindings: NULL");
  const char* name = cml_axis_name(id);
  if (!name) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "axis bindings: unknown axis id %lld",
                           (long long)id);
  }
  if (name[0] == '=') {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "axis bindings: \"%s\" is a symbolic sum, not a bindable axis", name);
  }
  if (size <= 0 || size > CML_MAX_ELEMENTS) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "axis bindings: axis \"%s\" bound to %lld (a binding must be in [1, "
                           "2^55])",
                           name, (long long)size);
  }
  if (bindings->count < 0 || bindings->count > CML_MAX_AXIS_BINDINGS) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "axis bindings: corrupt count %d",
                           (int)bindings->count);
  }
  int32_t at = cml_bindings_find(bindings, id);
  if (at < bindings->count && bindings->ids[at] == id) {
    if (bindings->sizes[at] == size) return CML_OK;
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "axis bindings: axis \"%s\" is bound to both %lld and %lld", name,
                           (long long)bindings->sizes[at], (long long)size);
  }
  if (bindings->count == CML_MAX_AXIS_BINDINGS) {
    return cml_status_make(CML_STATUS_RESOURCE_EXHAUSTED,
                           "axis bindings: more than %d axes (binding \"%s\")",
                           CML_MAX_AXIS_BINDINGS, name);
  }
  for (int32_t k = bindings->count; k > at; --k) {
    bindings->ids[k] = bindings->ids[k - 1];
    bindings->sizes[k] = bindings->sizes[k - 1];
  }
  bindings->ids[at] = id;
  bindings->sizes[at] = size;
  bindings->count++;
  return CML_OK;
}

cml_status_t cml_axis_bindings_set(cml_axis_bindings_t* bindings, const char* name, int64_t size) {
  int64_t id = 0;
  if (name && strcmp(name, "?") == 0) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "axis bindings: an anonymous axis \"?\" cannot be bound by name");
  }
  CML_RETURN_IF_ERROR(cml_axis_user_id(name, &id));
  return cml_axis_bindings_set_id(bindings, id, size);
}

// The size bound to |id|: a plain binding, or a symbolic sum of bound terms. 0 when unbound
// (a term unknown or unbound), -1 when a sum overflows.
static int64_t cml_bindings_sum(const cml_axis_bindings_t* b, const char* name);

static int64_t cml_bindings_lookup(const cml_axis_bindings_t* b, int64_t id) {
  int32_t at = cml_bindings_find(b, id);
  if (at < b->count && b->ids[at] == id) return b->sizes[at];
  const char* name = cml_axis_name(id);
  if (!name || name[0] != '=') return 0;
  return cml_bindings_sum(b, name);
}

// The value of the symbolic sum |name| ("=a+b+3"), with the same results as above.
static int64_t cml_bindings_sum(const cml_axis_bindings_t* b, const char* name) {
  int64_t total = 0;
  const char* p = name + 1;
  while (*p) {
    char term[CML_MAX_AXIS_NAME_LEN + 1];
    size_t len = 0;
    while (*p && *p != '+' && len < CML_MAX_AXIS_NAME_LEN) term[len++] = *p++;
    term[len] = '\0';
    if (*p == '+') ++p;
    int64_t value = 0;
    if (isdigit((unsigned char)term[0])) {
      value = strtoll(term, NULL, 10);
    } else {
      pthread_mutex_lock(&cml_axis_mutex);
      int64_t term_id = cml_axis_find_locked(term);
      pthread_mutex_unlock(&cml_axis_mutex);
      int32_t k = term_id ? cml_bindings_find(b, term_id) : b->count;
      if (k >= b->count || b->ids[k] != term_id) return 0;
      value = b->sizes[k];
    }
    if (__builtin_add_overflow(total, value, &total) || total > CML_MAX_ELEMENTS) return -1;
  }
  return total;
}

bool cml_axis_bindings_get(const cml_axis_bindings_t* bindings, const char* name,
                           int64_t* out_size) {
  if (out_size) *out_size = 0;
  if (!bindings || !name) return false;
  pthread_mutex_lock(&cml_axis_mutex);
  int64_t id = cml_axis_find_locked(name);
  pthread_mutex_unlock(&cml_axis_mutex);
  // A sum that no shape made yet is still computed from its terms (without interning it).
  if (!id && !(name[0] == '=' && cml_axis_name_chars_ok(name, true))) return false;
  int64_t size = id ? cml_bindings_lookup(bindings, id) : cml_bindings_sum(bindings, name);
  if (size <= 0) return false;
  if (out_size) *out_size = size;
  return true;
}

bool cml_axis_bindings_equal(const cml_axis_bindings_t* a, const cml_axis_bindings_t* b) {
  if (!a || !b || a->count != b->count) return false;
  for (int32_t i = 0; i < a->count; ++i) {
    if (a->ids[i] != b->ids[i] || a->sizes[i] != b->sizes[i]) return false;
  }
  return true;
}

uint64_t cml_axis_bindings_hash(const cml_axis_bindings_t* bindings) {
  uint64_t h = 0x9e3779b97f4a7c15ull;
  if (!bindings) return h;
  for (int32_t i = 0; i < bindings->count && i < CML_MAX_AXIS_BINDINGS; ++i) {
    h = (h ^ (uint64_t)bindings->ids[i]) * 0x100000001b3ull;
    h = (h ^ (uint64_t)bindings->sizes[i]) * 0x100000001b3ull;
  }
  return h ^ (h >> 29);
}

static int cml_compare_names(const void* a, const void* b) {
  return strcmp(cml_axis_name(*(const int64_t*)a), cml_axis_name(*(const int64_t*)b));
}

const char* cml_axis_bindings_key(const cml_axis_bindings_t* bindings, char* buffer, size_t size) {
  if (!buffer || size == 0) return buffer;
  buffer[0] = '\0';
  if (!bindings || bindings->count <= 0 || bindings->count > CML_MAX_AXIS_BINDINGS) return buffer;
  int64_t order[CML_MAX_AXIS_BINDINGS];
  for (int32_t i = 0; i < bindings->count; ++i) order[i] = bindings->ids[i];
  qsort(order, (size_t)bindings->count, sizeof order[0], cml_compare_names);
  size_t used = 0;
  for (int32_t i = 0; i < bindings->count && used < size; ++i) {
    int64_t v = cml_bindings_lookup(bindings, order[i]);
    int n = snprintf(buffer + used, size - used, "%s%s=%lld", i ? "," : "", cml_axis_name(order[i]),
                     (long long)v);
    if (n < 0) break;
    used += (size_t)n;
  }
  return buffer;
}

static cml_status_t cml_shape_resolve_impl(const cml_shape_t* shape,
                                           const cml_axis_bindings_t* bindings, bool partial,
                                           cml_shape_t* out_shape) {
  if (!out_shape) return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "shape: NULL output");
  if (!bindings) return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "shape: NULL bindings");
  CML_RETURN_IF_ERROR(cml_shape_check(shape));
  cml_shape_t r = *shape;
  for (int32_t i = 0; i < r.rank; ++i) {
    if (r.dims[i] >= 0) continue;
    int64_t size = cml_bindings_lookup(bindings, -r.dims[i]);
    if (size > 0) {
      r.dims[i] = size;
    } else if (!partial || size < 0) {
      char text[400], key[256];
      return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                             "shape: cannot resolve %s: axis %d (\"%s\") %s (bindings: %s)",
                             cml_shape_format(shape, text, sizeof text), (int)i,
                             cml_axis_name(cml_dim_axis_id(r.dims[i])),
                             size < 0 ? "overflows" : "is not bound",
                             cml_axis_bindings_key(bindings, key, sizeof key));
    }
  }
  cml_status_t st = cml_shape_check(&r);
  if (st != CML_OK) return cml_status_annotate(st, "shape: resolving");
  *out_shape = r;
  return CML_OK;
}

cml_status_t cml_shape_resolve(const cml_shape_t* shape, const cml_axis_bindings_t* bindings,
                               cml_shape_t* out_shape) {
  return cml_shape_resolve_impl(shape, bindings, false, out_shape);
}

cml_status_t cml_shape_resolve_partial(const cml_shape_t* shape,
                                       const cml_axis_bindings_t* bindings,
                                       cml_shape_t* out_shape) {
  return cml_shape_resolve_impl(shape, bindings, true, out_shape);
}

cml_status_t cml_shape_extract_bindings(const cml_shape_t* pattern, const cml_shape_t* concrete,
                                        cml_axis_bindings_t* bindings) {
  if (!pattern || !concrete || !bindings)
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "shape: NULL argument");
  char ps[400], cs[400];
  if (pattern->dtype != concrete->dtype || pattern->rank != concrete->rank ||
      cml_shape_checked_rank(pattern) < 0) {
    return cml_status_make(
        CML_STATUS_INVALID_ARGUMENT, "shape: %s does not match %s (dtype or rank differs)",
        cml_shape_format(concrete, cs, sizeof cs), cml_shape_format(pattern, ps, sizeof ps));
  }
  for (int32_t i = 0; i < pattern->rank; ++i) {
    int64_t want = pattern->dims[i], got = concrete->dims[i];
    if (got < 0) {
      return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                             "shape: %s is not concrete (axis %d is dynamic)",
                             cml_shape_format(concrete, cs, sizeof cs), (int)i);
    }
    if (want >= 0) {
      if (want != got) {
        return cml_status_make(
            CML_STATUS_INVALID_ARGUMENT, "shape: %s does not match %s: axis %d is %lld, not %lld",
            cml_shape_format(concrete, cs, sizeof cs), cml_shape_format(pattern, ps, sizeof ps),
            (int)i, (long long)got, (long long)want);
      }
      continue;
    }
    int64_t id = cml_dim_axis_id(want);
    const char* name = cml_axis_name(id);
    if (!name) {
      return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "shape: %s has an unknown axis id %lld",
                             cml_shape_format(pattern, ps, sizeof ps), (long long)want);
    }
    if (got == 0) {
      return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                             "shape: %s for %s: dynamic axis %d (\"%s\") has size 0 (a binding "
                             "must be >= 1)",
                             cml_shape_format(concrete, cs, sizeof cs),
                             cml_shape_format(pattern, ps, sizeof ps), (int)i, name);
    }
    if (name[0] == '=') {
      int64_t sum = cml_bindings_lookup(bindings, id);
      if (sum > 0 && sum != got) {
        return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                               "shape: %s for %s: axis %d (\"%s\") is %lld, the bindings give %lld",
                               cml_shape_format(concrete, cs, sizeof cs),
                               cml_shape_format(pattern, ps, sizeof ps), (int)i, name,
                               (long long)got, (long long)sum);
      }
      continue;
    }
    int32_t at = cml_bindings_find(bindings, id);
    if (at < bindings->count && bindings->ids[at] == id && bindings->sizes[at] != got) {
      return cml_status_make(
          CML_STATUS_INVALID_ARGUMENT,
          "shape: %s for %s: axis %d (\"%s\") is %lld, but \"%s\" is already %lld "
          "(contradicting sizes for one axis name)",
          cml_shape_format(concrete, cs, sizeof cs), cml_shape_format(pattern, ps, sizeof ps),
          (int)i, name, (long long)got, name, (long long)bindings->sizes[at]);
    }
    CML_RETURN_IF_ERROR(cml_axis_bindings_set_id(bindings, id, got));
  }
  return CML_OK;
}

// Builds the dim of the sum of two dims (Concatenate on a dynamic axis): a static sum, or the
// dynamic axis "=terms+constant" with the names sorted, so a+b and b+a are one axis.
cml_status_t cml__axis_sum(int64_t a, int64_t b, int64_t* out_dim) {
  const char* terms[2 * CML_MAX_RANK + 2];
  size_t term_count = 0;
  int64_t constant = 0;
  char names[2][CML_MAX_AXIS_NAME_LEN + 1];
  int64_t both[2] = {a, b};
  for (int k = 0; k < 2; ++k) {
    int64_t d = both[k];
    if (d >= 0) {
      if (__builtin_add_overflow(constant, d, &constant)) {
        return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "axis sum: %lld + %lld overflows",
                               (long long)a, (long long)b);
      }
      continue;
    }
    const char* name = cml_axis_name(cml_dim_axis_id(d));
    if (!name || name[0] == '?') {
      return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                             "axis sum: an anonymous axis \"?\" cannot be summed");
    }
    if (name[0] != '=') {
      terms[term_count++] = name;
      continue;
    }
    snprintf(names[k], sizeof names[k], "%s", name + 1);
    char* save = NULL;
    for (char* t = strtok_r(names[k], "+", &save); t; t = strtok_r(NULL, "+", &save)) {
      if (isdigit((unsigned char)t[0])) {
        constant += strtoll(t, NULL, 10);
      } else if (term_count < sizeof terms / sizeof *terms) {
        terms[term_count++] = t;
      }
    }
  }
  if (term_count == 0) {
    *out_dim = constant;
    return CML_OK;
  }
  // Sort the names (insertion sort: a handful of terms).
  for (size_t i = 1; i < term_count; ++i) {
    for (size_t j = i; j > 0 && strcmp(terms[j - 1], terms[j]) > 0; --j) {
      const char* t = terms[j];
      terms[j] = terms[j - 1];
      terms[j - 1] = t;
    }
  }
  char text[2 * CML_MAX_AXIS_NAME_LEN + 64];
  size_t used = (size_t)snprintf(text, sizeof text, "=");
  for (size_t i = 0; i < term_count && used < sizeof text; ++i) {
    used += (size_t)snprintf(text + used, sizeof text - used, "%s%s", i ? "+" : "", terms[i]);
  }
  if (constant && used < sizeof text) {
    used += (size_t)snprintf(text + used, sizeof text - used, "+%lld", (long long)constant);
  }
  if (used >= sizeof text || used > CML_MAX_AXIS_NAME_LEN) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "axis sum \"%.80s...\" is longer than %d characters", text,
                           CML_MAX_AXIS_NAME_LEN);
  }
  int64_t id = 0;
  CML_RETURN_IF_ERROR(cml_axis_id(text, &id));
  *out_dim = -id;
  return CML_OK;
}
