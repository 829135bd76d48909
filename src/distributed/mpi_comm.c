// SPDX-License-Identifier: Apache-2.0
// src/distributed/mpi_comm.c: the internal MPI layer (mpi_comm.h): initialization, polled
// point-to-point transfers, the collectives built on them, agreement and failure notices.
//
// Every collective is made of nonblocking point-to-point messages on a private duplicate of
// MPI_COMM_WORLD, waited for by cml__mpi_wait (MPI_Testsome + failure notices + a deadline
// that restarts whenever a message completes). Failure notices travel on a second duplicate.
// AllReduce is a reduce-scatter (member p folds segment p of every member's values in group
// order, pipelined in pieces) followed by an all-gather of the segments, as the in-process
// collectives of the c backend do, so both give bit-identical results; two processes exchange
// their whole arrays instead and both fold all of it (one round of messages).
#include "distributed/mpi_comm.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/half_inline.h"
#include "cml/backend_impl.h"

//===--- reductions ---===//

// acc[i] = acc[i] op src[i] for |count| elements.
typedef void (*cml__mpi_fold_fn)(void* acc, const void* src, int64_t count);

#define CML__MPI_SUM(a, b) ((a) + (b))
#define CML__MPI_MUL(a, b) ((a) * (b))
#define CML__MPI_IMAX(a, b) ((a) > (b) ? (a) : (b))
#define CML__MPI_IMIN(a, b) ((a) < (b) ? (a) : (b))
#define CML__MPI_FMAX(a, b) (((a) != (a) || (a) > (b)) ? (a) : (b))
#define CML__MPI_FMIN(a, b) (((a) != (a) || (a) < (b)) ? (a) : (b))

#define CML__MPI_FOLD(name, T, CT, OP)                                    \
  static void name(void* acc, const void* src, int64_t count) {           \
    T* d = (T*)acc;                                                       \
    const T* s = (const T*)src;                                           \
    for (int64_t i = 0; i < count; ++i) d[i] = (T)OP((CT)d[i], (CT)s[i]); \
  }
#define CML__MPI_INT(sfx, T, UT)                             \
  CML__MPI_FOLD(cml__mpi_sum_##sfx, T, UT, CML__MPI_SUM)     \
  CML__MPI_FOLD(cml__mpi_product_##sfx, T, UT, CML__MPI_MUL) \
  CML__MPI_FOLD(cml__mpi_max_##sfx, T, T, CML__MPI_IMAX)     \
  CML__MPI_FOLD(cml__mpi_min_##sfx, T, T, CML__MPI_IMIN)
CML__MPI_INT(i8, int8_t, uint32_t)
CML__MPI_INT(i16, int16_t, uint32_t)
CML__MPI_INT(i32, int32_t, uint32_t)
CML__MPI_INT(i64, int64_t, uint64_t)
CML__MPI_INT(u8, uint8_t, uint32_t)
CML__MPI_INT(u16, uint16_t, uint32_t)
CML__MPI_INT(u32, uint32_t, uint32_t)
CML__MPI_INT(u64, uint64_t, uint64_t)
#undef CML__MPI_INT
#define CML__MPI_FLOAT(sfx, T)                              \
  CML__MPI_FOLD(cml__mpi_sum_##sfx, T, T, CML__MPI_SUM)     \
  CML__MPI_FOLD(cml__mpi_product_##sfx, T, T, CML__MPI_MUL) \
  CML__MPI_FOLD(cml__mpi_max_##sfx, T, T, CML__MPI_FMAX)    \
  CML__MPI_FOLD(cml__mpi_min_##sfx, T, T, CML__MPI_FMIN)
CML__MPI_FLOAT(f32, float)
CML__MPI_FLOAT(f64, double)
#undef CML__MPI_FLOAT
#undef CML__MPI_FOLD

#define CML__MPI_COMPLEX(sfx, T)                                                  \
  static void cml__mpi_sum_##sfx(void* acc, const void* src, int64_t count) {     \
    T* d = (T*)acc;                                                               \
    const T* s = (const T*)src;                                                   \
    for (int64_t i = 0; i < 2 * count; ++i) d[i] += s[i];                         \
  }                                                                               \
  static void cml__mpi_product_##sfx(void* acc, const void* src, int64_t count) { \
    T* d = (T*)acc;                                                               \
    const T* s = (const T*)src;                                                   \
    for (int64_t i = 0; i < count; ++i) {                                         \
      const T ar = d[2 * i], ai = d[2 * i + 1], br = s[2 * i], bi = s[2 * i + 1]; \
      d[2 * i] = ar * br - ai * bi;                                               \
      d[2 * i + 1] = ar * bi + ai * br;                                           \
    }                                                                             \
  }
CML__MPI_COMPLEX(c64, float)
CML__MPI_COMPLEX(c128, double)
#undef CML__MPI_COMPLEX

// The fold for |dtype| (Float16/BFloat16: their f32 working type) and |type|, or NULL.
static cml__mpi_fold_fn cml__mpi_folder(cml_dtype_t dtype, cml_reduce_type_t type) {
#define CML__MPI_PICK(sfx)                                     \
  return type == CML_REDUCE_SUM       ? cml__mpi_sum_##sfx     \
         : type == CML_REDUCE_PRODUCT ? cml__mpi_product_##sfx \
         : type == CML_REDUCE_MAX     ? cml__mpi_max_##sfx     \
         : type == CML_REDUCE_MIN     ? cml__mpi_min_##sfx     \
                                      : NULL
  switch (dtype) {
    case CML_DTYPE_I8:
      CML__MPI_PICK(i8);
    case CML_DTYPE_I16:
      CML__MPI_PICK(i16);
    case CML_DTYPE_I32:
      CML__MPI_PICK(i32);
    case CML_DTYPE_I64:
      CML__MPI_PICK(i64);
    case CML_DTYPE_U8:
      CML__MPI_PICK(u8);
    case CML_DTYPE_U16:
      CML__MPI_PICK(u16);
    case CML_DTYPE_U32:
      CML__MPI_PICK(u32);
    case CML_DTYPE_U64:
      CML__MPI_PICK(u64);
    case CML_DTYPE_F16:
    case CML_DTYPE_BF16:
    case CML_DTYPE_F32:
      CML__MPI_PICK(f32);
    case CML_DTYPE_F64:
      CML__MPI_PICK(f64);
    case CML_DTYPE_C64:
      return type == CML_REDUCE_SUM       ? cml__mpi_sum_c64
             : type == CML_REDUCE_PRODUCT ? cml__mpi_product_c64
                                          : NULL;
    case CML_DTYPE_C128:
      return type == CML_REDUCE_SUM       ? cml__mpi_sum_c128
             : type == CML_REDUCE_PRODUCT ? cml__mpi_product_c128
                                          : NULL;
    default:
      return NULL;
  }
#undef CML__MPI_PICK
}

static bool cml__mpi_is_half(cml_dtype_t dtype) {
  return dtype == CML_DTYPE_F16 || dtype == CML_DTYPE_BF16;
}

static void cml__mpi_halves_to_f32(cml_dtype_t dtype, const uint16_t* in, float* out,
                                   int64_t count) {
  if (dtype == CML_DTYPE_F16) {
    for (int64_t i = 0; i < count; ++i) out[i] = cml__f16_to_f32(in[i]);
  } else {
    for (int64_t i = 0; i < count; ++i) out[i] = cml__bf16_to_f32(in[i]);
  }
}

static void cml__mpi_f32_to_halves(cml_dtype_t dtype, const float* in, uint16_t* out,
                                   int64_t count) {
  if (dtype == CML_DTYPE_F16) {
    for (int64_t i = 0; i < count; ++i) out[i] = cml__f32_to_f16(in[i]);
  } else {
    for (int64_t i = 0; i < count; ++i) out[i] = cml__f32_to_bf16(in[i]);
  }
}

bool cml__mpi_can_reduce(cml_dtype_t dtype, cml_reduce_type_t type) {
  return cml__mpi_folder(dtype, type) != NULL;
}

void cml__mpi_reduce_local(const void* const* sources, int source_count, void* out, int64_t count,
                           cml_dtype_t dtype, cml_reduce_type_t type) {
  const cml__mpi_fold_fn fold = cml__mpi_folder(dtype, type);
  if (!fold || source_count < 1 || count <= 0) return;
  const size_t dsize = (size_t)(cml_dtype_bits(dtype) / 8);
  if (!cml__mpi_is_half(dtype)) {
    // out may be one of the sources: fold into a block-sized accumulator.
    enum { kBlock = 4096 };
    uint64_t acc[kBlock * 2];  // room for kBlock elements of up to 16 bytes
    for (int64_t b = 0; b < count; b += kBlock) {
      const int64_t m = count - b < kBlock ? count - b : kBlock;
      memcpy(acc, (const uint8_t*)sources[0] + (size_t)b * dsize, (size_t)m * dsize);
      for (int k = 1; k < source_count; ++k) {
        fold(acc, (const uint8_t*)sources[k] + (size_t)b * dsize, m);
      }
      memcpy((uint8_t*)out + (size_t)b * dsize, acc, (size_t)m * dsize);
    }
    return;
  }
  enum { kHalfBlock = 2048 };
  float acc[kHalfBlock], tmp[kHalfBlock];
  for (int64_t b = 0; b < count; b += kHalfBlock) {
    const int64_t m = count - b < kHalfBlock ? count - b : kHalfBlock;
    cml__mpi_halves_to_f32(dtype, (const uint16_t*)sources[0] + b, acc, m);
    for (int k = 1; k < source_count; ++k) {
      cml__mpi_halves_to_f32(dtype, (const uint16_t*)sources[k] + b, tmp, m);
      fold(acc, tmp, m);
    }
    cml__mpi_f32_to_halves(dtype, acc, (uint16_t*)out + b, m);
  }
}

#if defined(CML_HAVE_MPI) && CML_HAVE_MPI

#include <mpi.h>
#include <pthread.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

// Message tags: failure notices on the control communicator, one tag per operation kind on the
// data communicator.
enum {
  CML__MPI_TAG_FAIL = 1,
  CML__MPI_TAG_ALL_REDUCE = 10,
  CML__MPI_TAG_ALL_REDUCE_GATHER = 11,
  CML__MPI_TAG_REDUCE_SCATTER = 12,
  CML__MPI_TAG_ALL_GATHER = 13,
  CML__MPI_TAG_ALL_TO_ALL = 14,
  CML__MPI_TAG_BROADCAST = 15,
  CML__MPI_TAG_BARRIER = 16,
  CML__MPI_TAG_EXCHANGE = 17,
  CML__MPI_TAG_AGREE = 18,
};

// A message's tag on the data communicator is its operation kind (CML__MPI_TAG_* minus
// CML__MPI_KIND_BASE, below CML__MPI_KINDS) plus CML__MPI_KINDS times the collective stamp of
// the calling thread (cml__mpi_set_stamp, reduced to the tag space that MPI_TAG_UB allows; 0
// outside executions). Messages of two different collectives therefore never match, and a wait
// that sees a peer's message with another stamp knows that the processes diverged.
#define CML__MPI_KIND_BASE 10
#define CML__MPI_KINDS 16
// A wait without progress for this long looks for messages of other collectives.
#define CML__MPI_PROBE_AFTER_MS 5

// Bytes per pipelined piece of the reduce-scatter phase.
#define CML__MPI_PIECE_BYTES ((int64_t)4 << 20)
// Failure notices are at most this long (with the terminating NUL).
#define CML__MPI_NOTICE_BYTES 512
// The largest configuration record cml__mpi_agree compares.
#define CML__MPI_AGREE_BYTES 4096

static pthread_mutex_t cml__mpi_init_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t cml__mpi_op_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t cml__mpi_fail_mutex = PTHREAD_MUTEX_INITIALIZER;
static int cml__mpi_state;  // 0: not tried, 1: ready, 2: failed to initialize
static cml_status_code_t cml__mpi_init_code;
static char cml__mpi_init_message[512];
static int cml__mpi_we_initialized;
static MPI_Comm cml__mpi_data = MPI_COMM_NULL;
static MPI_Comm cml__mpi_control = MPI_COMM_NULL;
static int cml__mpi_world_rank;
static int cml__mpi_world_size = 1;
static int64_t cml__mpi_timeout = 30000;  // ms; atomic
static int cml__mpi_failed;               // atomic: a failure was seen
static int cml__mpi_peer_lost;            // atomic: a wait timed out (a peer may be dead)
static int64_t cml__mpi_max_message = CML__MPI_MAX_MESSAGE;
static int64_t cml__mpi_stamp_space = 2048;  // (MPI_TAG_UB + 1) / CML__MPI_KINDS, set at init
static _Thread_local uint64_t cml__mpi_stamp;
static _Thread_local char cml__mpi_stamp_label[160];

// A channel: a private communicator (duplicated from the data communicator) and the mutex that
// serializes the operations on it. Operations of different channels run concurrently (MPI is
// initialized with MPI_THREAD_MULTIPLE); without a channel they go to the data communicator
// under cml__mpi_op_mutex.
struct cml__mpi_channel_t {
  MPI_Comm comm;
  pthread_mutex_t mutex;
};
static _Thread_local cml__mpi_channel_t* cml__mpi_channel;

static MPI_Comm cml__mpi_comm(void) {
  return cml__mpi_channel ? cml__mpi_channel->comm : cml__mpi_data;
}
static pthread_mutex_t* cml__mpi_mutex(void) {
  return cml__mpi_channel ? &cml__mpi_channel->mutex : &cml__mpi_op_mutex;
}
static char cml__mpi_failure_text[CML__MPI_NOTICE_BYTES + 64];
// The notice this process sends when it fails: MPI may read it after cml__mpi_fail returned (a
// send released without a wait), so it lives as long as the process. Written once.
static char cml__mpi_notice_out[CML__MPI_NOTICE_BYTES];
// Buffers of requests that were still in flight when their operation failed and that MPI would
// not let go of (cml__mpi_requests_free): kept allocated, and reachable for LeakSanitizer.
#define CML__MPI_QUARANTINE 64
static void* cml__mpi_quarantine[CML__MPI_QUARANTINE];
static int cml__mpi_quarantine_count;
static int cml__mpi_unsettled;  // atomic: a failed operation left requests in flight

bool cml__mpi_built(void) { return true; }

//===--- initialization ---===//

static void cml__mpi_at_exit(void) {
  int finalized = 0;
  MPI_Finalized(&finalized);
  // After a timeout MPI_Finalize may wait for a peer that never comes: leave it to mpirun.
  if (!finalized && !__atomic_load_n(&cml__mpi_peer_lost, __ATOMIC_ACQUIRE)) {
    if (cml__mpi_data != MPI_COMM_NULL) MPI_Comm_free(&cml__mpi_data);
    if (cml__mpi_control != MPI_COMM_NULL) MPI_Comm_free(&cml__mpi_control);
    MPI_Finalize();
  }
}

CML_PRINTF(2, 3)
static void cml__mpi_init_fail(cml_status_code_t code, const char* fmt, ...) {
  cml__mpi_state = 2;
  cml__mpi_init_code = code;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(cml__mpi_init_message, sizeof cml__mpi_init_message, fmt, ap);
  va_end(ap);
}

static void cml__mpi_error_text(int err, char* buf, size_t size) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(err, text, &len) != MPI_SUCCESS) len = 0;
  text[len < MPI_MAX_ERROR_STRING ? len : MPI_MAX_ERROR_STRING - 1] = '\0';
  snprintf(buf, size, "%s (MPI error %d)", len ? text : "unknown", err);
}

// Open MPI before 5 starts a process that no launcher started (a "singleton") by running its
// helper `orted` through PATH, and when that fails MPI_Init_thread ends the process instead of
// returning an error: such a start is refused first when PATH has no orted.
static bool cml__mpi_singleton_would_abort(char* why, size_t size) {
#if defined(OPEN_MPI) && defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION < 5
  static const char* const launched[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK",
                                         "PMI_SIZE"};
  for (size_t i = 0; i < sizeof launched / sizeof launched[0]; ++i) {
    if (getenv(launched[i])) return false;
  }
  const char* path = getenv("PATH");
  for (const char* p = path; p && *p;) {
    const char* end = strchr(p, ':');
    const size_t len = end ? (size_t)(end - p) : strlen(p);
    char file[4096];
    if (len > 0 && len + 7 < sizeof file) {
      memcpy(file, p, len);
      memcpy(file + len, "/orted", 7);
      if (access(file, X_OK) == 0) return false;
    }
    p = end ? end + 1 : p + len;
  }
  snprintf(why, size,
           "MPI: this process was not started by an MPI launcher (mpirun, srun), and Open MPI "
           "cannot start it alone: its helper `orted` is not on PATH (\"%.200s\"); run it under "
           "mpirun, or put Open MPI's bin directory on PATH",
           path ? path : "unset");
  return true;
#else
  (void)why, (void)size;
  return false;
#endif
}

cml_status_t cml__mpi_init(void) {
  pthread_mutex_lock(&cml__mpi_init_mutex);
  if (cml__mpi_state == 0) {
    int initialized = 0, finalized = 0, provided = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    const char* env = getenv("CML_MPI_TIMEOUT_MS");
    if (env && *env) {
      const long long ms = strtoll(env, NULL, 10);
      if (ms > 0) cml__mpi_set_timeout_ms((int64_t)ms);
    }
    // Tests shrink the message size to exercise the splitting of large buffers.
    env = getenv("CML_MPI_MAX_MESSAGE_BYTES");
    if (env && *env) {
      const long long bytes = strtoll(env, NULL, 10);
      if (bytes > 0 && bytes < CML__MPI_MAX_MESSAGE) cml__mpi_max_message = bytes;
    }
    int err = MPI_SUCCESS;
    char why[512];
    if (finalized) {
      cml__mpi_init_fail(CML_STATUS_FAILED_PRECONDITION,
                         "MPI: MPI_Finalize was already called in this process");
    } else if (!initialized && cml__mpi_singleton_would_abort(why, sizeof why)) {
      cml__mpi_init_fail(CML_STATUS_FAILED_PRECONDITION, "%s", why);
    } else if (!initialized) {
      err = MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &provided);
      if (err == MPI_SUCCESS) {
        cml__mpi_we_initialized = 1;
        atexit(cml__mpi_at_exit);
      }
    } else {
      err = MPI_Query_thread(&provided);
    }
    if (cml__mpi_state == 0 && err != MPI_SUCCESS) {
      char text[MPI_MAX_ERROR_STRING + 32];
      cml__mpi_error_text(err, text, sizeof text);
      cml__mpi_init_fail(CML_STATUS_UNAVAILABLE, "MPI: cannot initialize MPI: %s", text);
    } else if (cml__mpi_state == 0 && provided < MPI_THREAD_MULTIPLE) {
      cml__mpi_init_fail(CML_STATUS_FAILED_PRECONDITION,
                         "MPI: MPI was initialized with thread level %d; cml needs "
                         "MPI_THREAD_MULTIPLE (3): call MPI_Init_thread(..., MPI_THREAD_MULTIPLE, "
                         "...) or let cml initialize MPI",
                         provided);
    } else if (cml__mpi_state == 0) {
      MPI_Comm_rank(MPI_COMM_WORLD, &cml__mpi_world_rank);
      MPI_Comm_size(MPI_COMM_WORLD, &cml__mpi_world_size);
      err = MPI_Comm_dup(MPI_COMM_WORLD, &cml__mpi_data);
      if (err == MPI_SUCCESS) err = MPI_Comm_dup(MPI_COMM_WORLD, &cml__mpi_control);
      if (err == MPI_SUCCESS) {
        // MPI guarantees tags up to at least 32767; Open MPI and MPICH allow far more.
        void* ub = NULL;
        int flag = 0;
        if (MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag) == MPI_SUCCESS && flag &&
            ub && *(int*)ub >= 32767) {
          cml__mpi_stamp_space = ((int64_t) * (int*)ub + 1) / CML__MPI_KINDS;
        }
        MPI_Comm_set_errhandler(cml__mpi_data, MPI_ERRORS_RETURN);
        MPI_Comm_set_errhandler(cml__mpi_control, MPI_ERRORS_RETURN);
        __atomic_store_n(&cml__mpi_state, 1, __ATOMIC_RELEASE);
      } else {
        char text[MPI_MAX_ERROR_STRING + 32];
        cml__mpi_error_text(err, text, sizeof text);
        cml__mpi_init_fail(CML_STATUS_UNAVAILABLE, "MPI: MPI_Comm_dup failed: %s", text);
      }
    }
  }
  const int state = cml__mpi_state;
  pthread_mutex_unlock(&cml__mpi_init_mutex);
  if (state == 1) return CML_OK;
  return cml_status_make(cml__mpi_init_code, "%s", cml__mpi_init_message);
}

int cml__mpi_rank(void) {
  pthread_mutex_lock(&cml__mpi_init_mutex);
  const int r = cml__mpi_state == 1 ? cml__mpi_world_rank : 0;
  pthread_mutex_unlock(&cml__mpi_init_mutex);
  return r;
}

int cml__mpi_size(void) {
  pthread_mutex_lock(&cml__mpi_init_mutex);
  const int n = cml__mpi_state == 1 ? cml__mpi_world_size : 1;
  pthread_mutex_unlock(&cml__mpi_init_mutex);
  return n;
}

void cml__mpi_set_timeout_ms(int64_t ms) {
  if (ms > 0) __atomic_store_n(&cml__mpi_timeout, ms, __ATOMIC_RELAXED);
}

int64_t cml__mpi_timeout_ms(void) { return __atomic_load_n(&cml__mpi_timeout, __ATOMIC_RELAXED); }

//===--- failures ---===//

// Records |text| as the failure (first wins). Returns whether it was the first.
static bool cml__mpi_record_failure(const char* text) {
  pthread_mutex_lock(&cml__mpi_fail_mutex);
  const bool first = !__atomic_load_n(&cml__mpi_failed, __ATOMIC_ACQUIRE);
  if (first) {
    snprintf(cml__mpi_failure_text, sizeof cml__mpi_failure_text, "%s", text);
    __atomic_store_n(&cml__mpi_failed, 1, __ATOMIC_RELEASE);
  }
  pthread_mutex_unlock(&cml__mpi_fail_mutex);
  return first;
}

void cml__mpi_fail(const char* message) {
  if (__atomic_load_n(&cml__mpi_state, __ATOMIC_ACQUIRE) != 1) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;  // nobody to tell, and MPI calls would abort
  char notice[CML__MPI_NOTICE_BYTES];
  snprintf(notice, sizeof notice, "%s", message ? message : "failed");
  char text[CML__MPI_NOTICE_BYTES + 32];
  snprintf(text, sizeof text, "process %d failed: %s", cml__mpi_world_rank, notice);
  if (!cml__mpi_record_failure(text)) return;
  // Only the first call gets here: the static buffer is written once.
  memcpy(cml__mpi_notice_out, notice, sizeof notice);
  const int len = (int)strlen(notice) + 1;
  for (int r = 0; r < cml__mpi_world_size; ++r) {
    if (r == cml__mpi_world_rank) continue;
    MPI_Request req;
    // Small messages go out eagerly; the request is released without a wait (a dead peer must
    // not block the failing process), so the buffer is static.
    if (MPI_Isend(cml__mpi_notice_out, len, MPI_CHAR, r, CML__MPI_TAG_FAIL, cml__mpi_control,
                  &req) == MPI_SUCCESS) {
      MPI_Request_free(&req);
    }
  }
}

cml_status_t cml__mpi_failure(void) {
  if (!__atomic_load_n(&cml__mpi_failed, __ATOMIC_ACQUIRE)) return CML_OK;
  pthread_mutex_lock(&cml__mpi_fail_mutex);
  cml_status_t st = cml_status_make(CML_STATUS_FAILED_PRECONDITION, "MPI: %s (the job stops)",
                                    cml__mpi_failure_text);
  pthread_mutex_unlock(&cml__mpi_fail_mutex);
  return st;
}

// Receives the failure notices that arrived (the first one is kept).
static void cml__mpi_poll_notices(void) {
  for (;;) {
    // A matched probe: the notice is this thread's alone (with MPI_Iprobe and MPI_Recv, two
    // threads could see one notice and the second would wait in MPI_Recv for another).
    int flag = 0;
    MPI_Status status;
    MPI_Message message;
    if (MPI_Improbe(MPI_ANY_SOURCE, CML__MPI_TAG_FAIL, cml__mpi_control, &flag, &message,
                    &status) != MPI_SUCCESS ||
        !flag) {
      return;
    }
    char notice[CML__MPI_NOTICE_BYTES];
    if (MPI_Mrecv(notice, (int)sizeof notice, MPI_CHAR, &message, MPI_STATUS_IGNORE) !=
        MPI_SUCCESS) {
      return;
    }
    notice[sizeof notice - 1] = '\0';
    char text[CML__MPI_NOTICE_BYTES + 32];
    snprintf(text, sizeof text, "process %d failed: %s", status.MPI_SOURCE, notice);
    (void)cml__mpi_record_failure(text);
  }
}

//===--- requests ---===//

typedef struct cml__mpi_requests_t {
  MPI_Request* items;
  int* peers;  // per request: the world rank it sends to or receives from
  int count, capacity;
} cml__mpi_requests_t;

void cml__mpi_set_stamp(uint64_t stamp, const char* label, cml__mpi_channel_t* channel) {
  cml__mpi_stamp = stamp;
  cml__mpi_channel = channel;
  snprintf(cml__mpi_stamp_label, sizeof cml__mpi_stamp_label, "%s", stamp && label ? label : "");
}

cml_status_t cml__mpi_channel_create(cml__mpi_channel_t** out) {
  *out = NULL;
  CML_RETURN_IF_ERROR(cml__mpi_init());
  cml__mpi_channel_t* c = calloc(1, sizeof *c);
  if (!c) return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
  if (pthread_mutex_init(&c->mutex, NULL) != 0) {
    free(c);
    return cml_status_make(CML_STATUS_RESOURCE_EXHAUSTED, "MPI: pthread_mutex_init failed");
  }
  // Collective over the data communicator: no other operation of this process may use it
  // meanwhile (the operation mutex), and every process creates its channels in the same order.
  pthread_mutex_lock(&cml__mpi_op_mutex);
  int err = MPI_Comm_dup(cml__mpi_data, &c->comm);
  if (err == MPI_SUCCESS) MPI_Comm_set_errhandler(c->comm, MPI_ERRORS_RETURN);
  pthread_mutex_unlock(&cml__mpi_op_mutex);
  if (err != MPI_SUCCESS) {
    char text[MPI_MAX_ERROR_STRING + 32];
    cml__mpi_error_text(err, text, sizeof text);
    pthread_mutex_destroy(&c->mutex);
    free(c);
    return cml_status_make(CML_STATUS_UNAVAILABLE, "MPI: MPI_Comm_dup failed: %s", text);
  }
  *out = c;
  return CML_OK;
}

void cml__mpi_channel_destroy(cml__mpi_channel_t* c) {
  if (!c) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Comm_free(&c->comm);
  pthread_mutex_destroy(&c->mutex);
  free(c);
}

// The stamp part of this thread's tags: 0 outside executions, else 1..space-1.
static int64_t cml__mpi_stamp_bits(void) {
  if (!cml__mpi_stamp) return 0;
  return 1 + (int64_t)(cml__mpi_stamp % (uint64_t)(cml__mpi_stamp_space - 1));
}

static int cml__mpi_tag(int kind) {
  return (int)(cml__mpi_stamp_bits() * CML__MPI_KINDS + (kind - CML__MPI_KIND_BASE));
}

// What a data tag says, for messages.
static const char* cml__mpi_kind_name(int tag) {
  static const char* const names[] = {"AllReduce",     "AllReduce (gather phase)",
                                      "ReduceScatter", "AllGather",
                                      "AllToAll",      "Broadcast",
                                      "barrier",       "point-to-point exchange",
                                      "agreement"};
  const int kind = tag % CML__MPI_KINDS;
  return kind < (int)(sizeof names / sizeof names[0]) ? names[kind] : "operation";
}

static int64_t cml__mpi_now_ms(void) { return cml_clock_monotonic_ns() / 1000000; }

// The longest a failed operation waits for its cancelled requests without one completing.
#define CML__MPI_DRAIN_MS 5000

// Frees |q|. Requests still pending (an operation that failed) are cancelled, then waited for:
// MPI_Cancel cannot stop a receive that already matched a message (its data keeps landing in
// the buffer) nor, in Open MPI, any send (it keeps reading its buffer until the peer took it),
// and a request released while active would keep using a buffer that the caller frees or
// reuses. The wait polls (peers that also failed drain their side at the same time) and gives
// up after CML__MPI_DRAIN_MS, or the layer's timeout if shorter, without a completion: a peer
// that died or never posts the matching call. The requests left then are released and
// cml__mpi_unsettled is set: the operation's own buffers go to cml__mpi_release's quarantine
// instead of free (the caller's cannot: they are only touched again by a peer that comes
// back).
static void cml__mpi_requests_free(cml__mpi_requests_t* q) {
  int pending = 0;
  for (int i = 0; i < q->count; ++i) {
    if (q->items[i] == MPI_REQUEST_NULL) continue;
    MPI_Cancel(&q->items[i]);
    ++pending;
  }
  if (pending) {
    int64_t limit = cml__mpi_timeout_ms();
    if (limit > CML__MPI_DRAIN_MS) limit = CML__MPI_DRAIN_MS;
    int64_t last_progress = cml__mpi_now_ms();
    for (uint64_t spin = 0;; ++spin) {
      int done = 0;
      for (int i = 0; i < q->count; ++i) {
        if (q->items[i] == MPI_REQUEST_NULL) continue;
        int flag = 0;
        // MPI_Test releases a completed (or successfully cancelled) request.
        if (MPI_Test(&q->items[i], &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS) flag = 0;
        if (flag) ++done;
      }
      pending -= done;
      if (pending <= 0) break;
      const int64_t now = cml__mpi_now_ms();
      if (done) last_progress = now;
      if (now - last_progress > limit) break;
      if (spin > 64) {
        struct timespec ts = {0, 200000};
        nanosleep(&ts, NULL);
      }
    }
  }
  for (int i = 0; i < q->count; ++i) {
    if (q->items[i] == MPI_REQUEST_NULL) continue;
    MPI_Request_free(&q->items[i]);
    __atomic_store_n(&cml__mpi_unsettled, 1, __ATOMIC_RELEASE);
  }
  free(q->items);
  free(q->peers);
  q->items = NULL;
  q->peers = NULL;
  q->count = q->capacity = 0;
}

// Frees |p|, a buffer an operation lent to MPI, unless a failed operation left requests in
// flight (cml__mpi_requests_free): then MPI may still write into it or read it, and it is kept
// (never freed: after a failure the layer runs no more operations).
static void cml__mpi_release(void* p) {
  if (!p) return;
  if (!__atomic_load_n(&cml__mpi_unsettled, __ATOMIC_ACQUIRE)) {
    free(p);
    return;
  }
  pthread_mutex_lock(&cml__mpi_fail_mutex);
  if (cml__mpi_quarantine_count < CML__MPI_QUARANTINE) {
    cml__mpi_quarantine[cml__mpi_quarantine_count++] = p;
  }
  pthread_mutex_unlock(&cml__mpi_fail_mutex);
}

void cml__mpi_free_lent(void* p) { cml__mpi_release(p); }

// Posts |bytes| at |data| to (send) or from |rank| in pieces of at most CML__MPI_MAX_MESSAGE
// (one empty message for 0 bytes).
static cml_status_t cml__mpi_post(cml__mpi_requests_t* q, bool send, int rank, void* data,
                                  int64_t bytes, int tag, const char* what) {
  const int64_t max = cml__mpi_max_message;
  const int64_t pieces = bytes > 0 ? (bytes + max - 1) / max : 1;
  if (q->count + pieces > q->capacity) {
    int capacity = q->capacity ? q->capacity * 2 : 16;
    while (capacity < q->count + pieces) capacity *= 2;
    MPI_Request* items = realloc(q->items, (size_t)capacity * sizeof *items);
    if (items) q->items = items;
    int* peers = items ? realloc(q->peers, (size_t)capacity * sizeof *peers) : NULL;
    if (!peers) {
      return cml_status_make(CML_STATUS_RESOURCE_EXHAUSTED, "MPI %s: out of memory for requests",
                             what);
    }
    q->peers = peers;
    q->capacity = capacity;
  }
  const int mtag = cml__mpi_tag(tag);
  for (int64_t p = 0; p < pieces; ++p) {
    const int64_t at = p * max;
    const int64_t n = bytes - at < max ? bytes - at : max;
    char* ptr = (char*)data + (bytes > 0 ? at : 0);
    const int err =
        send ? MPI_Isend(ptr, (int)n, MPI_BYTE, rank, mtag, cml__mpi_comm(), &q->items[q->count])
             : MPI_Irecv(ptr, (int)n, MPI_BYTE, rank, mtag, cml__mpi_comm(), &q->items[q->count]);
    if (err != MPI_SUCCESS) {
      char text[MPI_MAX_ERROR_STRING + 32];
      cml__mpi_error_text(err, text, sizeof text);
      return cml_status_make(CML_STATUS_UNAVAILABLE, "MPI %s: %s of %lld bytes %s rank %d: %s",
                             what, send ? "send" : "receive", (long long)n, send ? "to" : "from",
                             rank, text);
    }
    q->peers[q->count] = rank;
    ++q->count;
  }
  return CML_OK;
}

// The world rank of a peer of a pending request of |q| whose first unmatched message to this
// process belongs to another collective (another stamp), with that message's tag; -1 if none.
// |probed|: world-size bytes of scratch.
static int cml__mpi_diverged_peer(const cml__mpi_requests_t* q, uint8_t* probed, int* out_tag) {
  const int64_t mine = cml__mpi_stamp_bits();
  memset(probed, 0, (size_t)cml__mpi_world_size);
  for (int i = 0; i < q->count; ++i) {
    const int peer = q->peers[i];
    if (q->items[i] == MPI_REQUEST_NULL || peer < 0 || peer >= cml__mpi_world_size ||
        probed[peer]) {
      continue;
    }
    probed[peer] = 1;
    int flag = 0;
    MPI_Status status;
    if (MPI_Iprobe(peer, MPI_ANY_TAG, cml__mpi_comm(), &flag, &status) != MPI_SUCCESS || !flag) {
      continue;
    }
    if (status.MPI_TAG / CML__MPI_KINDS != mine) {
      *out_tag = status.MPI_TAG;
      return peer;
    }
  }
  return -1;
}

// Waits for every request of |q| (then empties it), polling failure notices; fails after the
// timeout without a completed request, and at once when a peer it waits for sent a message of
// another collective (the processes diverged: what that peer waits for never comes either). On
// failure this process's failure is recorded and announced (peers stop too), and the requests stay
// in |q| for cml__mpi_requests_free.
static cml_status_t cml__mpi_wait(cml__mpi_requests_t* q, const char* what) {
  if (q->count == 0) return CML_OK;
  int* done = malloc((size_t)q->count * sizeof *done);
  if (!done) {
    return cml_status_make(CML_STATUS_RESOURCE_EXHAUSTED, "MPI %s: out of memory", what);
  }
  int64_t last_progress = cml__mpi_now_ms();
  int remaining = q->count;
  cml_status_t st = CML_OK;
  uint8_t* probed = NULL;
  // A peer seen sending for another collective, confirmed by a second look without progress in
  // between (a completion that MPI made while probing is seen by the next MPI_Testsome).
  int suspect = -1;
  for (uint64_t spin = 0;; ++spin) {
    int outcount = 0;
    const int err = MPI_Testsome(q->count, q->items, &outcount, done, MPI_STATUSES_IGNORE);
    if (err != MPI_SUCCESS) {
      char text[MPI_MAX_ERROR_STRING + 32];
      cml__mpi_error_text(err, text, sizeof text);
      st = cml_status_make(CML_STATUS_UNAVAILABLE, "MPI %s: %s", what, text);
      break;
    }
    if (outcount == MPI_UNDEFINED) break;  // every request completed
    const int64_t now = cml__mpi_now_ms();
    if (outcount > 0) {
      remaining -= outcount;
      last_progress = now;
      suspect = -1;
      if (remaining <= 0) break;
      continue;
    }
    const int64_t idle = now - last_progress;
    if ((spin & 15) == 0) {
      cml__mpi_poll_notices();
      if (__atomic_load_n(&cml__mpi_failed, __ATOMIC_ACQUIRE)) {
        st = cml__mpi_failure();
        st = cml_status_annotate(st, "MPI %s", what);
        break;
      }
      if (idle >= CML__MPI_PROBE_AFTER_MS) {
        if (!probed) probed = malloc((size_t)cml__mpi_world_size);
        int tag = 0;
        const int peer = probed ? cml__mpi_diverged_peer(q, probed, &tag) : -1;
        if (peer >= 0 && peer == suspect) {
          st = cml_status_make(
              CML_STATUS_FAILED_PRECONDITION,
              "MPI %s: process %d, at %s, waits for process %d, which sent a message of another "
              "collective (%s%s): the processes no longer run the same collectives in the same "
              "order (an If or While around a collective whose predicate differs between "
              "processes, or executions of one backend issued in different orders); every "
              "process stops",
              what, cml__mpi_world_rank,
              cml__mpi_stamp_label[0] ? cml__mpi_stamp_label : "a collective outside executions",
              peer, cml__mpi_kind_name(tag),
              tag / CML__MPI_KINDS ? ", in an execution" : ", outside executions");
          break;
        }
        suspect = peer;
      }
    }
    if (idle > cml__mpi_timeout_ms()) {
      // The processes it still waits for (those of its unfinished requests).
      char who[96];
      size_t w = 0;
      int named = 0;
      who[0] = '\0';
      for (int i = 0; i < q->count && w + 16 < sizeof who; ++i) {
        if (q->items[i] == MPI_REQUEST_NULL) continue;
        bool seen = false;
        for (int k = 0; k < i && !seen; ++k) {
          seen = q->items[k] != MPI_REQUEST_NULL && q->peers[k] == q->peers[i];
        }
        if (seen) continue;
        w += (size_t)snprintf(who + w, sizeof who - w, "%s%d", named++ ? ", " : "", q->peers[i]);
      }
      st = cml_status_make(CML_STATUS_DEADLINE_EXCEEDED,
                           "MPI %s: process %d waited %lld ms for process%s %s (a process died, "
                           "hangs, or runs different operations; CML_MPI_TIMEOUT_MS sets the "
                           "limit)",
                           what, cml__mpi_world_rank, (long long)idle, named > 1 ? "es" : "",
                           named ? who : "?");
      __atomic_store_n(&cml__mpi_peer_lost, 1, __ATOMIC_RELEASE);
      break;
    }
    // Spin while messages are likely to flow; yield, then sleep, when the peers are late.
    if (idle >= 100) {
      struct timespec ts = {0, 1000000};
      nanosleep(&ts, NULL);
    } else if (idle >= 2) {
      sched_yield();
    }
  }
  free(done);
  free(probed);
  if (st != CML_OK) {
    cml__mpi_fail(cml_status_message(st));
    return st;  // the pending requests go with cml__mpi_requests_free
  }
  q->count = 0;
  return CML_OK;
}

//===--- groups ---===//

typedef struct cml__mpi_view_t {
  int n;             // members
  int me;            // this process's position
  const int* ranks;  // NULL: world rank order
} cml__mpi_view_t;

static int cml__mpi_member(const cml__mpi_view_t* v, int position) {
  return v->ranks ? v->ranks[position] : position;
}

// Checks MPI, earlier failures and |group|, and locks the operation mutex (on success only).
static cml_status_t cml__mpi_begin(const cml__mpi_group_t* group, const char* what,
                                   cml__mpi_view_t* out) {
  if (__atomic_load_n(&cml__mpi_state, __ATOMIC_ACQUIRE) != 1) {
    cml_status_t st = cml__mpi_init();
    if (st != CML_OK) return cml_status_annotate(st, "MPI %s", what);
  }
  // A program that called MPI_Finalize itself while cml still used MPI: any MPI call now ends
  // the process (Open MPI aborts), so refuse instead.
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) {
    return cml_status_make(CML_STATUS_FAILED_PRECONDITION,
                           "MPI %s: the program finalized MPI (MPI_Finalize) while cml still "
                           "uses it: release cml's backends before MPI_Finalize",
                           what);
  }
  cml__mpi_poll_notices();
  cml_status_t failed = cml__mpi_failure();
  if (failed != CML_OK) return cml_status_annotate(failed, "MPI %s", what);
  out->n = group ? group->count : cml__mpi_world_size;
  out->ranks = group ? group->ranks : NULL;
  out->me = -1;
  if (out->n < 1 || (group && !group->ranks)) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "MPI %s: a group of %d processes", what,
                           out->n);
  }
  for (int p = 0; p < out->n; ++p) {
    const int r = cml__mpi_member(out, p);
    if (r < 0 || r >= cml__mpi_world_size) {
      return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                             "MPI %s: rank %d at group position %d; the job has %d processes", what,
                             r, p, cml__mpi_world_size);
    }
    for (int k = 0; k < p; ++k) {
      if (cml__mpi_member(out, k) == r) {
        return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "MPI %s: rank %d is twice in the group",
                               what, r);
      }
    }
    if (r == cml__mpi_world_rank) out->me = p;
  }
  if (out->me < 0) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "MPI %s: process %d is not a member of the group of %d processes", what,
                           cml__mpi_world_rank, out->n);
  }
  pthread_mutex_lock(cml__mpi_mutex());
  return CML_OK;
}

static cml_status_t cml__mpi_end(cml__mpi_requests_t* q, cml_status_t st) {
  cml__mpi_requests_free(q);
  pthread_mutex_unlock(cml__mpi_mutex());
  return st;
}

// Bytes of one element in the working type (f32 for the halves).
static size_t cml__mpi_work_size(cml_dtype_t dtype) {
  return cml__mpi_is_half(dtype) ? sizeof(float) : (size_t)(cml_dtype_bits(dtype) / 8);
}

// The reduce-scatter phase: member q owns elements [seg_at[q], seg_at[q] + seg_len[q]) of |in|
// (working type, |esize| bytes each); this member folds its segment of every member's |in| in
// group order into |out| (seg_len[me] elements). Pieces of CML__MPI_PIECE_BYTES are received
// two at a time so that folding overlaps the transfers.
static cml_status_t cml__mpi_fold_segments(const cml__mpi_view_t* v, const uint8_t* in,
                                           uint8_t* out, const int64_t* seg_at,
                                           const int64_t* seg_len, size_t esize,
                                           cml__mpi_fold_fn fold, int tag, const char* what,
                                           cml__mpi_requests_t* sends) {
  const int n = v->n, me = v->me;
  int64_t piece = CML__MPI_PIECE_BYTES / (int64_t)esize;
  int64_t longest = 1;  // no piece longer than the longest segment (small buffers)
  for (int q = 0; q < n; ++q) longest = seg_len[q] > longest ? seg_len[q] : longest;
  if (piece > longest) piece = longest;
  if (piece < 1) piece = 1;
  // Every piece of every other member's segment goes out at once.
  for (int q = 0; q < n; ++q) {
    if (q == me) continue;
    for (int64_t at = 0; at < seg_len[q] || (at == 0 && seg_len[q] == 0); at += piece) {
      const int64_t m = seg_len[q] - at < piece ? seg_len[q] - at : piece;
      CML_RETURN_IF_ERROR(cml__mpi_post(sends, true, cml__mpi_member(v, q),
                                        (void*)(in + (size_t)(seg_at[q] + at) * esize),
                                        (int64_t)m * (int64_t)esize, tag, what));
      if (seg_len[q] == 0) break;
    }
  }
  const int64_t mine = seg_len[me];
  const int64_t pieces = mine > 0 ? (mine + piece - 1) / piece : 1;
  const size_t slab = (size_t)piece * esize * (size_t)(n > 1 ? n - 1 : 1);
  uint8_t* buffers = malloc(2 * slab + (size_t)piece * esize);
  if (!buffers) {
    return cml_status_make(CML_STATUS_RESOURCE_EXHAUSTED, "MPI %s: out of memory (%zu bytes)", what,
                           2 * slab);
  }
  uint8_t* acc = buffers + 2 * slab;
  cml__mpi_requests_t recv[2] = {{NULL, NULL, 0, 0}, {NULL, NULL, 0, 0}};
  cml_status_t st = CML_OK;
  for (int64_t j = 0; j <= pieces && st == CML_OK; ++j) {
    // Post piece j, then fold piece j - 1.
    if (j < pieces) {
      const int64_t at = j * piece;
      const int64_t m = mine - at < piece ? mine - at : piece;
      uint8_t* slot = buffers + (size_t)(j & 1) * slab;
      int k = 0;
      for (int q = 0; q < n && st == CML_OK; ++q) {
        if (q == me) continue;
        st = cml__mpi_post(&recv[j & 1], false, cml__mpi_member(v, q),
                           slot + (size_t)k++ * (size_t)piece * esize,
                           (m > 0 ? m : 0) * (int64_t)esize, tag, what);
      }
    }
    if (j == 0 || st != CML_OK) continue;
    const int64_t p = j - 1;
    st = cml__mpi_wait(&recv[p & 1], what);
    if (st != CML_OK || mine == 0) continue;
    const int64_t at = p * piece;
    const int64_t m = mine - at < piece ? mine - at : piece;
    const uint8_t* slot = buffers + (size_t)(p & 1) * slab;
    const uint8_t* own = in + (size_t)(seg_at[me] + at) * esize;
    const size_t bytes = (size_t)m * esize;
    int k = 0;
    for (int q = 0; q < n; ++q) {
      const uint8_t* src = q == me ? own : slot + (size_t)k++ * (size_t)piece * esize;
      if (q == 0) {
        memcpy(acc, src, bytes);
      } else {
        fold(acc, src, m);
      }
    }
    memcpy(out + (size_t)at * esize, acc, bytes);
  }
  cml__mpi_requests_free(&recv[0]);
  cml__mpi_requests_free(&recv[1]);
  cml__mpi_release(buffers);
  return st;
}

// The reduce-scatter phase and, with |gather|, the all-gather of the segments into |out| (which
// then holds the whole array; else |out| receives this member's segment only). |in| and |out|
// are in the working type.
static cml_status_t cml__mpi_reduce_phases(const cml__mpi_view_t* v, const uint8_t* in,
                                           uint8_t* out, const int64_t* seg_at,
                                           const int64_t* seg_len, size_t esize,
                                           cml__mpi_fold_fn fold, bool gather, int tag,
                                           const char* what) {
  cml__mpi_requests_t sends = {NULL, NULL, 0, 0};
  uint8_t* mine = gather ? out + (size_t)seg_at[v->me] * esize : out;
  // With |in| == |out| the segment may only be written after every send of |in| completed.
  uint8_t* staging = NULL;
  if (in == out && seg_len[v->me] > 0) {
    staging = malloc((size_t)seg_len[v->me] * esize);
    if (!staging) {
      return cml_status_make(CML_STATUS_RESOURCE_EXHAUSTED, "MPI %s: out of memory", what);
    }
  }
  cml_status_t st = cml__mpi_fold_segments(v, in, staging ? staging : mine, seg_at, seg_len, esize,
                                           fold, tag, what, &sends);
  if (st == CML_OK) st = cml__mpi_wait(&sends, what);
  if (st == CML_OK && staging) memcpy(mine, staging, (size_t)seg_len[v->me] * esize);
  free(staging);
  if (st == CML_OK && gather) {
    cml__mpi_requests_t q = {NULL, NULL, 0, 0};
    for (int k = 0; k < v->n && st == CML_OK; ++k) {
      if (k == v->me) continue;
      st = cml__mpi_post(&q, true, cml__mpi_member(v, k), mine, seg_len[v->me] * (int64_t)esize,
                         CML__MPI_TAG_ALL_REDUCE_GATHER, what);
      if (st == CML_OK) {
        st = cml__mpi_post(&q, false, cml__mpi_member(v, k), out + (size_t)seg_at[k] * esize,
                           seg_len[k] * (int64_t)esize, CML__MPI_TAG_ALL_REDUCE_GATHER, what);
      }
    }
    if (st == CML_OK) st = cml__mpi_wait(&q, what);
    cml__mpi_requests_free(&q);
  }
  cml__mpi_requests_free(&sends);
  return st;
}

static cml_status_t cml__mpi_reduce_common(const cml__mpi_group_t* group, const void* in, void* out,
                                           int64_t count, cml_dtype_t dtype, cml_reduce_type_t type,
                                           bool scatter) {
  const char* what = scatter ? "ReduceScatter" : "AllReduce";
  const cml__mpi_fold_fn fold = cml__mpi_folder(dtype, type);
  if (!fold) {
    return cml_status_make(CML_STATUS_UNIMPLEMENTED, "MPI %s: no %s reduction of %s", what,
                           cml_reduce_type_name(type), cml_dtype_name(dtype));
  }
  if (count < 0 || (count > 0 && (!in || !out))) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "MPI %s: %lld elements of %s at %p -> %p",
                           what, (long long)count, cml_dtype_name(dtype), in, out);
  }
  cml__mpi_view_t v;
  CML_RETURN_IF_ERROR(cml__mpi_begin(group, what, &v));
  cml__mpi_requests_t none = {NULL, NULL, 0, 0};
  const int n = v.n;
  const size_t dsize = (size_t)(cml_dtype_bits(dtype) / 8);
  const size_t esize = cml__mpi_work_size(dtype);
  const int64_t total = scatter ? count * n : count;
  if (n == 1) {
    if (count && in != out) memmove(out, in, (size_t)count * dsize);
    return cml__mpi_end(&none, CML_OK);
  }
  int64_t* seg = malloc(2 * (size_t)n * sizeof *seg);
  const bool half = cml__mpi_is_half(dtype);
  float* work_in = half ? malloc((size_t)(total > 0 ? total : 1) * sizeof(float)) : NULL;
  float* work_out =
      half ? malloc((size_t)((scatter ? count : total) > 0 ? (scatter ? count : total) : 1) *
                    sizeof(float))
           : NULL;
  if (!seg || (half && (!work_in || !work_out))) {
    free(seg);
    free(work_in);
    free(work_out);
    return cml__mpi_end(&none, cml_status_make(CML_STATUS_RESOURCE_EXHAUSTED,
                                               "MPI %s: out of memory for %lld elements of %s",
                                               what, (long long)total, cml_dtype_name(dtype)));
  }
  int64_t* seg_at = seg;
  int64_t* seg_len = seg + n;
  // Two processes exchange whole arrays and both fold everything: one round of messages
  // instead of two, the same bytes on the wire.
  const bool exchange = !scatter && n == 2;
  const int64_t chunk = scatter ? count : (count + n - 1) / n;
  for (int q = 0; q < n; ++q) {
    int64_t b = chunk * q, e = b + chunk;
    if (b > total) b = total;
    if (e > total) e = total;
    seg_at[q] = exchange ? 0 : b;
    seg_len[q] = exchange ? total : e - b;
  }
  if (half) cml__mpi_halves_to_f32(dtype, (const uint16_t*)in, work_in, total);
  cml_status_t st = cml__mpi_reduce_phases(
      &v, half ? (const uint8_t*)work_in : (const uint8_t*)in,
      half ? (uint8_t*)work_out : (uint8_t*)out, seg_at, seg_len, esize, fold,
      !scatter && !exchange, scatter ? CML__MPI_TAG_REDUCE_SCATTER : CML__MPI_TAG_ALL_REDUCE, what);
  if (st == CML_OK && half) {
    cml__mpi_f32_to_halves(dtype, work_out, (uint16_t*)out, scatter ? count : total);
  }
  free(seg);
  cml__mpi_release(work_in);
  cml__mpi_release(work_out);
  return cml__mpi_end(&none, st);
}

cml_status_t cml__mpi_all_reduce(const cml__mpi_group_t* group, const void* in, void* out,
                                 int64_t count, cml_dtype_t dtype, cml_reduce_type_t type) {
  return cml__mpi_reduce_common(group, in, out, count, dtype, type, false);
}

cml_status_t cml__mpi_reduce_scatter(const cml__mpi_group_t* group, const void* in, void* out,
                                     int64_t count, cml_dtype_t dtype, cml_reduce_type_t type) {
  if (in == out && count > 0) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "MPI ReduceScatter: the input and the output must not overlap");
  }
  return cml__mpi_reduce_common(group, in, out, count, dtype, type, true);
}

//===--- data movement ---===//

cml_status_t cml__mpi_all_gather_v(const cml__mpi_group_t* group, const void* in, void* out,
                                   const int64_t* bytes_per_member) {
  cml__mpi_view_t v;
  if (!bytes_per_member) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "MPI AllGather: no sizes");
  }
  CML_RETURN_IF_ERROR(cml__mpi_begin(group, "AllGather", &v));
  cml__mpi_requests_t q = {NULL, NULL, 0, 0};
  cml_status_t st = CML_OK;
  int64_t at = 0, mine_at = 0;
  for (int k = 0; k < v.n; ++k) {
    if (bytes_per_member[k] < 0) {
      return cml__mpi_end(&q, cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                                              "MPI AllGather: %lld bytes from member %d",
                                              (long long)bytes_per_member[k], k));
    }
    if (k == v.me) mine_at = at;
    at += bytes_per_member[k];
  }
  at = 0;
  for (int k = 0; k < v.n && st == CML_OK; ++k) {
    if (k != v.me) {
      st = cml__mpi_post(&q, true, cml__mpi_member(&v, k), (void*)in, bytes_per_member[v.me],
                         CML__MPI_TAG_ALL_GATHER, "AllGather");
      if (st == CML_OK) {
        st = cml__mpi_post(&q, false, cml__mpi_member(&v, k), (uint8_t*)out + at,
                           bytes_per_member[k], CML__MPI_TAG_ALL_GATHER, "AllGather");
      }
    }
    at += bytes_per_member[k];
  }
  if (st == CML_OK) st = cml__mpi_wait(&q, "AllGather");
  if (st == CML_OK && bytes_per_member[v.me] > 0 && (uint8_t*)out + mine_at != in) {
    memmove((uint8_t*)out + mine_at, in, (size_t)bytes_per_member[v.me]);
  }
  return cml__mpi_end(&q, st);
}

cml_status_t cml__mpi_all_gather(const cml__mpi_group_t* group, const void* in, void* out,
                                 int64_t bytes) {
  const int n = group ? group->count : cml__mpi_size();
  if (n < 1 || n > 1 << 20) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "MPI AllGather: a group of %d processes",
                           n);
  }
  int64_t* sizes = malloc((size_t)n * sizeof *sizes);
  if (!sizes) return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
  for (int k = 0; k < n; ++k) sizes[k] = bytes;
  cml_status_t st = cml__mpi_all_gather_v(group, in, out, sizes);
  free(sizes);
  return st;
}

cml_status_t cml__mpi_all_to_all(const cml__mpi_group_t* group, const void* in, void* out,
                                 int64_t bytes) {
  cml__mpi_view_t v;
  if (bytes < 0 || (in == out && bytes > 0)) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "MPI AllToAll: blocks of %lld bytes (input and output must not overlap)",
                           (long long)bytes);
  }
  CML_RETURN_IF_ERROR(cml__mpi_begin(group, "AllToAll", &v));
  cml__mpi_requests_t q = {NULL, NULL, 0, 0};
  cml_status_t st = CML_OK;
  for (int k = 0; k < v.n && st == CML_OK; ++k) {
    if (k == v.me) continue;
    st = cml__mpi_post(&q, true, cml__mpi_member(&v, k), (uint8_t*)in + (size_t)k * (size_t)bytes,
                       bytes, CML__MPI_TAG_ALL_TO_ALL, "AllToAll");
    if (st == CML_OK) {
      st = cml__mpi_post(&q, false, cml__mpi_member(&v, k),
                         (uint8_t*)out + (size_t)k * (size_t)bytes, bytes, CML__MPI_TAG_ALL_TO_ALL,
                         "AllToAll");
    }
  }
  if (st == CML_OK) st = cml__mpi_wait(&q, "AllToAll");
  if (st == CML_OK && bytes > 0) {
    memcpy((uint8_t*)out + (size_t)v.me * (size_t)bytes,
           (const uint8_t*)in + (size_t)v.me * (size_t)bytes, (size_t)bytes);
  }
  return cml__mpi_end(&q, st);
}

cml_status_t cml__mpi_broadcast(const cml__mpi_group_t* group, int root_position, void* data,
                                int64_t bytes) {
  cml__mpi_view_t v;
  if (bytes < 0) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "MPI Broadcast: %lld bytes",
                           (long long)bytes);
  }
  CML_RETURN_IF_ERROR(cml__mpi_begin(group, "Broadcast", &v));
  cml__mpi_requests_t q = {NULL, NULL, 0, 0};
  if (root_position < 0 || root_position >= v.n) {
    return cml__mpi_end(&q, cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                                            "MPI Broadcast: root position %d in a group of %d",
                                            root_position, v.n));
  }
  cml_status_t st = CML_OK;
  if (v.me == root_position) {
    for (int k = 0; k < v.n && st == CML_OK; ++k) {
      if (k == v.me) continue;
      st = cml__mpi_post(&q, true, cml__mpi_member(&v, k), data, bytes, CML__MPI_TAG_BROADCAST,
                         "Broadcast");
    }
  } else {
    st = cml__mpi_post(&q, false, cml__mpi_member(&v, root_position), data, bytes,
                       CML__MPI_TAG_BROADCAST, "Broadcast");
  }
  if (st == CML_OK) st = cml__mpi_wait(&q, "Broadcast");
  return cml__mpi_end(&q, st);
}

cml_status_t cml__mpi_barrier(const cml__mpi_group_t* group) {
  cml__mpi_view_t v;
  CML_RETURN_IF_ERROR(cml__mpi_begin(group, "Barrier", &v));
  cml__mpi_requests_t q = {NULL, NULL, 0, 0};
  cml_status_t st = CML_OK;
  static char dummy;
  for (int k = 0; k < v.n && st == CML_OK; ++k) {
    if (k == v.me) continue;
    st =
        cml__mpi_post(&q, true, cml__mpi_member(&v, k), &dummy, 0, CML__MPI_TAG_BARRIER, "Barrier");
    if (st == CML_OK) {
      st = cml__mpi_post(&q, false, cml__mpi_member(&v, k), &dummy, 0, CML__MPI_TAG_BARRIER,
                         "Barrier");
    }
  }
  if (st == CML_OK) st = cml__mpi_wait(&q, "Barrier");
  return cml__mpi_end(&q, st);
}

cml_status_t cml__mpi_exchange(const cml__mpi_transfer_t* sends, int send_count,
                               const cml__mpi_transfer_t* receives, int receive_count,
                               const char* what) {
  if (!what) what = "exchange";
  if (send_count < 0 || receive_count < 0 || (send_count && !sends) ||
      (receive_count && !receives)) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "MPI %s: %d sends, %d receives", what,
                           send_count, receive_count);
  }
  cml__mpi_view_t v;
  CML_RETURN_IF_ERROR(cml__mpi_begin(NULL, what, &v));
  cml__mpi_requests_t q = {NULL, NULL, 0, 0};
  cml_status_t st = CML_OK;
  for (int pass = 0; pass < 2 && st == CML_OK; ++pass) {
    const cml__mpi_transfer_t* t = pass ? sends : receives;
    const int count = pass ? send_count : receive_count;
    for (int i = 0; i < count && st == CML_OK; ++i) {
      if (t[i].rank < 0 || t[i].rank >= v.n || t[i].bytes < 0) {
        st = cml_status_make(CML_STATUS_INVALID_ARGUMENT, "MPI %s: %s %lld bytes %s rank %d of %d",
                             what, pass ? "send" : "receive", (long long)t[i].bytes,
                             pass ? "to" : "from", t[i].rank, v.n);
      } else {
        st = cml__mpi_post(&q, pass == 1, t[i].rank, t[i].data, t[i].bytes, CML__MPI_TAG_EXCHANGE,
                           what);
      }
    }
  }
  if (st == CML_OK) st = cml__mpi_wait(&q, what);
  return cml__mpi_end(&q, st);
}

//===--- agreement ---===//

// |bytes| of |data| as printable text (at most 160 characters).
static void cml__mpi_printable(const uint8_t* data, size_t bytes, char* buf, size_t size) {
  size_t w = 0;
  for (size_t i = 0; i < bytes && w + 4 < size && i < 160; ++i) {
    const uint8_t c = data[i];
    buf[w++] = c >= 32 && c < 127 ? (char)c : '?';
  }
  if (bytes > 160 && w + 4 < size) {
    memcpy(buf + w, "...", 3);
    w += 3;
  }
  buf[w] = '\0';
}

cml_status_t cml__mpi_agree(const void* data, size_t bytes, const char* what) {
  if (!what) what = "configuration";
  if (bytes > CML__MPI_AGREE_BYTES || (bytes && !data)) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "MPI agree on %s: %zu bytes (at most %d)",
                           what, bytes, CML__MPI_AGREE_BYTES);
  }
  CML_RETURN_IF_ERROR(cml__mpi_init());
  const int n = cml__mpi_size(), me = cml__mpi_rank();
  const size_t record = sizeof(uint64_t) + CML__MPI_AGREE_BYTES;
  uint8_t* all = calloc((size_t)n + 1, record);
  if (!all) return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
  uint8_t* mine = all + (size_t)n * record;
  const uint64_t len = bytes;
  memcpy(mine, &len, sizeof len);
  if (bytes) memcpy(mine + sizeof len, data, bytes);
  cml_status_t st = cml__mpi_all_gather(NULL, mine, all, (int64_t)record);
  if (st != CML_OK) {
    cml__mpi_release(all);  // MPI may still use it when a peer died mid-transfer
    return cml_status_annotate(st, "MPI agree on %s", what);
  }
  int differ[8], differ_count = 0, first_diff = -1;
  for (int r = 1; r < n; ++r) {
    if (memcmp(all, all + (size_t)r * record, record) != 0) {
      if (first_diff < 0) first_diff = r;
      if (differ_count < 8) differ[differ_count] = r;
      ++differ_count;
    }
  }
  if (first_diff < 0) {
    free(all);
    return CML_OK;
  }
  char list[96];
  size_t w = 0;
  list[0] = '\0';
  for (int i = 0; i < differ_count && i < 8; ++i) {
    w += (size_t)snprintf(list + w, sizeof list - w, "%s%d", i ? ", " : "", differ[i]);
    if (w >= sizeof list) break;
  }
  uint64_t len0, lend;
  memcpy(&len0, all, sizeof len0);
  memcpy(&lend, all + (size_t)first_diff * record, sizeof lend);
  char text0[200], textd[200];
  cml__mpi_printable(all + sizeof len0, (size_t)len0, text0, sizeof text0);
  cml__mpi_printable(all + (size_t)first_diff * record + sizeof lend, (size_t)lend, textd,
                     sizeof textd);
  st = cml_status_make(CML_STATUS_FAILED_PRECONDITION,
                       "MPI: the %s differs across processes (this is process %d of %d): "
                       "process%s %s%s differ%s from process 0; process 0 has \"%s\", process %d "
                       "has \"%s\". Every process must use the same %s",
                       what, me, n, differ_count > 1 ? "es" : "", list,
                       differ_count > 8 ? ", ..." : "", differ_count > 1 ? "" : "s", text0,
                       first_diff, textd, what);
  free(all);
  return st;
}

#else  // !CML_HAVE_MPI

static cml_status_t cml__mpi_missing(const char* what) {
  return cml_status_make(CML_STATUS_FAILED_PRECONDITION,
                         "MPI %s: this cml was built without MPI; install an MPI (e.g. "
                         "apt-get install libopenmpi-dev openmpi-bin) and rebuild cml with "
                         "-DCML_WITH_MPI=ON",
                         what);
}

bool cml__mpi_built(void) { return false; }
cml_status_t cml__mpi_init(void) { return cml__mpi_missing("initialization"); }
int cml__mpi_rank(void) { return 0; }
int cml__mpi_size(void) { return 1; }
void cml__mpi_set_timeout_ms(int64_t ms) { (void)ms; }
int64_t cml__mpi_timeout_ms(void) { return 0; }
void cml__mpi_set_stamp(uint64_t stamp, const char* label, cml__mpi_channel_t* channel) {
  (void)stamp, (void)label, (void)channel;
}
cml_status_t cml__mpi_channel_create(cml__mpi_channel_t** out) {
  *out = NULL;
  return cml__mpi_missing("channel");
}
void cml__mpi_channel_destroy(cml__mpi_channel_t* channel) { (void)channel; }
cml_status_t cml__mpi_all_reduce(const cml__mpi_group_t* group, const void* in, void* out,
                                 int64_t count, cml_dtype_t dtype, cml_reduce_type_t type) {
  (void)group, (void)in, (void)out, (void)count, (void)dtype, (void)type;
  return cml__mpi_missing("AllReduce");
}
cml_status_t cml__mpi_reduce_scatter(const cml__mpi_group_t* group, const void* in, void* out,
                                     int64_t count, cml_dtype_t dtype, cml_reduce_type_t type) {
  (void)group, (void)in, (void)out, (void)count, (void)dtype, (void)type;
  return cml__mpi_missing("ReduceScatter");
}
cml_status_t cml__mpi_all_gather(const cml__mpi_group_t* group, const void* in, void* out,
                                 int64_t bytes) {
  (void)group, (void)in, (void)out, (void)bytes;
  return cml__mpi_missing("AllGather");
}
cml_status_t cml__mpi_all_gather_v(const cml__mpi_group_t* group, const void* in, void* out,
                                   const int64_t* bytes_per_member) {
  (void)group, (void)in, (void)out, (void)bytes_per_member;
  return cml__mpi_missing("AllGather");
}
cml_status_t cml__mpi_all_to_all(const cml__mpi_group_t* group, const void* in, void* out,
                                 int64_t bytes) {
  (void)group, (void)in, (void)out, (void)bytes;
  return cml__mpi_missing("AllToAll");
}
cml_status_t cml__mpi_broadcast(const cml__mpi_group_t* group, int root_position, void* data,
                                int64_t bytes) {
  (void)group, (void)root_position, (void)data, (void)bytes;
  return cml__mpi_missing("Broadcast");
}
cml_status_t cml__mpi_barrier(const cml__mpi_group_t* group) {
  (void)group;
  return cml__mpi_missing("Barrier");
}
cml_status_t cml__mpi_exchange(const cml__mpi_transfer_t* sends, int send_count,
                               const cml__mpi_transfer_t* receives, int receive_count,
                               const char* what) {
  (void)sends, (void)send_count, (void)receives, (void)receive_count;
  return cml__mpi_missing(what ? what : "exchange");
}
cml_status_t cml__mpi_agree(const void* data, size_t bytes, const char* what) {
  (void)data, (void)bytes, (void)what;
  return cml__mpi_missing("agreement");
}
void cml__mpi_fail(const char* message) { (void)message; }
void cml__mpi_free_lent(void* p) { free(p); }
cml_status_t cml__mpi_failure(void) { return CML_OK; }

#endif  // CML_HAVE_MPI
