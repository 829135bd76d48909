// SPDX-License-Identifier: Apache-2.0
// src/distributed/host_collective.c: host-staged AllReduce between executions (download, reduce
// over local devices, MPI across processes, upload), cml/host_collective.h.
#include "cml/host_collective.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "base/half_inline.h"

#if defined(__has_include)
#if __has_include("distributed/mpi_comm.h")
#include "distributed/mpi_comm.h"
#define CML_HOST_COLLECTIVE_MPI 1
#endif
#endif
#ifndef CML_HOST_COLLECTIVE_MPI
#define CML_HOST_COLLECTIVE_MPI 0
#endif

#define INVALID(...) cml_status_make(CML_STATUS_INVALID_ARGUMENT, __VA_ARGS__)

static const char kWhat[] = "cml_host_all_reduce";

#if CML_HOST_COLLECTIVE_MPI
// Whether an MPI launcher started this process (Open MPI, MPICH/Hydra or PMIx variables). The
// environment is read once per process; later calls read the cached answer (0 unknown, 1 no,
// 2 yes; racing first calls store the same value).
static bool cml_host_under_mpi_launcher(void) {
  static _Atomic int cached = 0;
  int v = atomic_load_explicit(&cached, memory_order_relaxed);
  if (v == 0) {
    v = (getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMI_SIZE") || getenv("PMIX_RANK")) ? 2 : 1;
    atomic_store_explicit(&cached, v, memory_order_relaxed);
  }
  return v == 2;
}
#endif

void cml_host_process_info(int* out_rank, int* out_count) {
  int rank = 0, count = 1;
#if CML_HOST_COLLECTIVE_MPI
  if (cml__mpi_built() && cml_host_under_mpi_launcher()) {
    cml_status_t st = cml__mpi_init();
    if (st == CML_OK) {
      rank = cml__mpi_rank();
      count = cml__mpi_size();
    }
    cml_status_free(st);
  }
#endif
  if (out_rank) *out_rank = rank;
  if (out_count) *out_count = count;
}

// The working type of a dtype: F32 (F16, BF16, F32), F64, I64 (I32, I64); INVALID otherwise.
static cml_dtype_t cml_host_work_dtype(cml_dtype_t dtype) {
  switch (dtype) {
    case CML_DTYPE_F16:
    case CML_DTYPE_BF16:
    case CML_DTYPE_F32:
      return CML_DTYPE_F32;
    case CML_DTYPE_F64:
      return CML_DTYPE_F64;
    case CML_DTYPE_I32:
    case CML_DTYPE_I64:
      return CML_DTYPE_I64;
    default:
      return CML_DTYPE_INVALID;
  }
}

// acc[i] (+)= element i of |src| (|dtype|), converted to the working type.
static void cml_host_accumulate(cml_dtype_t dtype, const void* src, void* acc, int64_t n,
                                bool first) {
  for (int64_t i = 0; i < n; ++i) {
    switch (dtype) {
      case CML_DTYPE_F16:
      case CML_DTYPE_BF16:
      case CML_DTYPE_F32: {
        float v = dtype == CML_DTYPE_F32   ? ((const float*)src)[i]
                  : dtype == CML_DTYPE_F16 ? cml__f16_to_f32(((const uint16_t*)src)[i])
                                           : cml__bf16_to_f32(((const uint16_t*)src)[i]);
        float* a = (float*)acc;
        a[i] = first ? v : a[i] + v;
        break;
      }
      case CML_DTYPE_F64: {
        double* a = (double*)acc;
        a[i] = first ? ((const double*)src)[i] : a[i] + ((const double*)src)[i];
        break;
      }
      default: {  // I32, I64: wrapping sums in uint64
        uint64_t v = dtype == CML_DTYPE_I32 ? (uint64_t)(int64_t)((const int32_t*)src)[i]
                                            : (uint64_t)((const int64_t*)src)[i];
        uint64_t* a = (uint64_t*)acc;
        a[i] = first ? v : a[i] + v;
        break;
      }
    }
  }
}

// dst (|dtype|) = acc (working type) / |divisor| (1: none).
static void cml_host_convert_back(cml_dtype_t dtype, const void* acc, void* dst, int64_t n,
                                  double divisor) {
  for (int64_t i = 0; i < n; ++i) {
    switch (dtype) {
      case CML_DTYPE_F16:
      case CML_DTYPE_BF16:
      case CML_DTYPE_F32: {
        float v = ((const float*)acc)[i];
        if (divisor != 1) v = (float)((double)v / divisor);
        if (dtype == CML_DTYPE_F32) {
          ((float*)dst)[i] = v;
        } else {
          ((uint16_t*)dst)[i] = dtype == CML_DTYPE_F16 ? cml__f32_to_f16(v) : cml__f32_to_bf16(v);
        }
        break;
      }
      case CML_DTYPE_F64:
        ((double*)dst)[i] = ((const double*)acc)[i] / divisor;
        break;
      case CML_DTYPE_I32:
        ((int32_t*)dst)[i] = (int32_t)(uint32_t)((const uint64_t*)acc)[i];
        break;
      default:
        ((int64_t*)dst)[i] = (int64_t)((const uint64_t*)acc)[i];
        break;
    }
  }
}

// Checks the arguments and that every device's value v matches device 0's.
static cml_status_t cml_host_check(cml_buffer_t* const* buffers, size_t devices, size_t values,
                                   cml_host_reduce_t op) {
  if (!buffers || devices == 0 || values == 0) {
    return INVALID("%s: NULL buffers, or no devices or values (%zu devices, %zu values)", kWhat,
                   devices, values);
  }
  if ((unsigned)op >= CML_HOST_REDUCE_COUNT) return INVALID("%s: unknown op %d", kWhat, (int)op);
  char a[160], b[160];
  for (size_t v = 0; v < values; ++v) {
    for (size_t d = 0; d < devices; ++d) {
      cml_buffer_t* buf = buffers[d * values + v];
      if (!buf) return INVALID("%s: value %zu of device %zu is NULL", kWhat, v, d);
      const cml_shape_t* s = cml_buffer_shape(buf);
      const cml_shape_t* s0 = cml_buffer_shape(buffers[v]);
      if (!cml_shape_equal(s, s0)) {
        return INVALID("%s: value %zu is %s on device %zu but %s on device 0", kWhat, v,
                       cml_shape_format(s, a, sizeof a), d, cml_shape_format(s0, b, sizeof b));
      }
    }
    const cml_shape_t* s = cml_buffer_shape(buffers[v]);
    cml_dtype_t work = cml_host_work_dtype(s->dtype);
    if (work == CML_DTYPE_INVALID) {
      return cml_status_make(CML_STATUS_UNIMPLEMENTED,
                             "%s: value %zu is %s: host-staged reductions take Float16, BFloat16, "
                             "Float32, Float64, Int32 and Int64",
                             kWhat, v, cml_shape_format(s, a, sizeof a));
    }
    if (op == CML_HOST_REDUCE_MEAN && work == CML_DTYPE_I64) {
      return cml_status_make(CML_STATUS_UNIMPLEMENTED,
                             "%s: value %zu is %s: Mean needs a float "
                             "dtype",
                             kWhat, v, cml_shape_format(s, a, sizeof a));
    }
  }
  return CML_OK;
}

cml_status_t cml_host_all_reduce(cml_buffer_t* const* buffers, size_t device_count,
                                 size_t value_count, cml_host_reduce_t op, bool across_processes,
                                 cml_buffer_t** out_buffers) {
  if (out_buffers && buffers && device_count && value_count) {
    memset(out_buffers, 0, device_count * value_count * sizeof *out_buffers);
  }
  if (!out_buffers) return INVALID("%s: NULL out_buffers", kWhat);
  CML_RETURN_IF_ERROR(cml_host_check(buffers, device_count, value_count, op));
  double total_devices = (double)device_count;
  if (across_processes) {
#if CML_HOST_COLLECTIVE_MPI
    cml_status_t st = cml__mpi_init();
    if (st != CML_OK) return cml_status_annotate(st, "%s across processes", kWhat);
    // Every process must reduce the same values: their count, the op and each value's dtype and
    // dims are compared first (a process reducing another shape would otherwise take part of a
    // sum of different lengths, and return OK with garbage on one side).
    // The compared text: the count, the op, the shapes while they fit, then a 64-bit FNV-1a
    // hash of every shape's text (a list longer than the buffer was cut before it reached a
    // difference past about value 300: OK with garbage on one process).
    char text[4096];
    size_t len = (size_t)snprintf(text, sizeof text, "%zu values, %s:", value_count,
                                  op == CML_HOST_REDUCE_MEAN ? "mean" : "sum");
    const size_t room = sizeof text - 48;  // for " ... (all: <hash>)"
    uint64_t hash = 1469598103934665603ull;
    bool cut = false;
    for (size_t v = 0; v < value_count; ++v) {
      char shape[256];
      cml_shape_format(cml_buffer_shape(buffers[v]), shape, sizeof shape);
      for (const char* c = shape; *c; ++c) hash = (hash ^ (unsigned char)*c) * 1099511628211ull;
      hash = (hash ^ ';') * 1099511628211ull;
      const size_t need = strlen(shape) + 1;
      if (!cut && len + need < room) {
        len += (size_t)snprintf(text + len, sizeof text - len, " %s", shape);
      } else {
        cut = true;
      }
    }
    len += (size_t)snprintf(text + len, sizeof text - len, "%s (all: %016llx)", cut ? " ..." : "",
                            (unsigned long long)hash);
    if (len >= sizeof text) len = sizeof text - 1;
    st = cml__mpi_agree(text, len, "argument list of cml_host_all_reduce");
    if (st != CML_OK) return cml_status_annotate(st, "%s", kWhat);
    int64_t local = (int64_t)device_count, all = 0;
    st = cml__mpi_all_reduce(NULL, &local, &all, 1, CML_DTYPE_I64, CML_REDUCE_SUM);
    if (st != CML_OK) return cml_status_annotate(st, "%s: agreeing on the device count", kWhat);
    total_devices = (double)all;
#else
    return cml_status_make(CML_STATUS_FAILED_PRECONDITION,
                           "%s across processes needs the library built with MPI (configure with "
                           "-DCML_WITH_MPI=ON and an MPI installation, e.g. libopenmpi-dev)",
                           kWhat);
#endif
  }
  cml_allocator_t alloc = cml_allocator_system();
  cml_status_t st = CML_OK;
  for (size_t v = 0; v < value_count && st == CML_OK; ++v) {
    const cml_shape_t* s = cml_buffer_shape(buffers[v]);
    cml_dtype_t work = cml_host_work_dtype(s->dtype);
    int64_t n = cml_shape_element_count(s);
    size_t bytes = cml_shape_byte_size(s);
    size_t work_bytes = (size_t)n * (size_t)(cml_dtype_bits(work) / 8);
    unsigned char* host = (unsigned char*)cml_allocator_malloc(alloc, bytes ? bytes : 1, 64);
    unsigned char* acc =
        (unsigned char*)cml_allocator_malloc(alloc, work_bytes ? work_bytes : 1, 64);
    if (!host || !acc) st = cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
    for (size_t d = 0; d < device_count && st == CML_OK; ++d) {
      st = cml_buffer_copy_to_host(buffers[d * value_count + v], host, bytes);
      if (st != CML_OK) {
        st = cml_status_annotate(st, "%s: value %zu of device %zu", kWhat, v, d);
        break;
      }
      cml_host_accumulate(s->dtype, host, acc, n, d == 0);
    }
#if CML_HOST_COLLECTIVE_MPI
    if (st == CML_OK && across_processes && n > 0) {
      st = cml__mpi_all_reduce(NULL, acc, acc, n, work, CML_REDUCE_SUM);
      if (st != CML_OK) st = cml_status_annotate(st, "%s: value %zu across processes", kWhat, v);
    }
#endif
    if (st == CML_OK) {
      cml_host_convert_back(s->dtype, acc, host, n,
                            op == CML_HOST_REDUCE_MEAN ? total_devices : 1.0);
    }
    for (size_t d = 0; d < device_count && st == CML_OK; ++d) {
      cml_buffer_t* in = buffers[d * value_count + v];
      st = cml_buffer_from_host(cml_buffer_backend(in), cml_buffer_device(in), s, host, bytes,
                                &out_buffers[d * value_count + v]);
      if (st != CML_OK) st = cml_status_annotate(st, "%s: value %zu to device %zu", kWhat, v, d);
    }
    if (host) cml_allocator_free(alloc, host, bytes ? bytes : 1);
    if (acc) cml_allocator_free(alloc, acc, work_bytes ? work_bytes : 1);
  }
  if (st != CML_OK) {
    for (size_t i = 0; i < device_count * value_count; ++i) {
      cml_buffer_release(out_buffers[i]);
      out_buffers[i] = NULL;
    }
  }
  return st;
}
