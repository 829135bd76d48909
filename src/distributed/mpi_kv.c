// SPDX-License-Identifier: Apache-2.0
// src/distributed/mpi_kv.c: the key-value store served over MPI (mpi_kv.h): process 0's map and
// service thread, the request/reply messages of the other processes, bounded waits.
//
// Messages (on the store's own communicator): a request is one message to process 0 with tag
// CML__MPI_KV_TAG_REQUEST: a header (operation, reply tag, request id, timeout, key and value
// sizes) followed by the key and the value bytes. The answer goes back on the reply tag the
// request named (one per call, CML__MPI_KV_TAG_REPLY_BASE + id mod CML__MPI_KV_TAG_REPLY_SPAN):
// a header (request id, status code, value size) and the value. A requester that receives an
// answer with another id on its tag (a late answer to a call that gave up long ago) drops it.
// A process that destroys its store sends BYE; process 0 stops serving once every other
// process said BYE, or after the MPI layer's timeout without news.
#include "distributed/mpi_kv.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/base_internal.h"
#include "cml/backend_impl.h"
#include "distributed/mpi_comm.h"

#if defined(CML_HAVE_MPI) && CML_HAVE_MPI
#include <mpi.h>

enum {
  CML__MPI_KV_TAG_REQUEST = 1,
  CML__MPI_KV_TAG_REPLY_BASE = 100,
  CML__MPI_KV_TAG_REPLY_SPAN = 16384,  // MPI guarantees tags up to 32767
};

enum {
  CML__MPI_KV_PUT = 1,
  CML__MPI_KV_GET = 2,
  CML__MPI_KV_TRY_GET = 3,
  CML__MPI_KV_BYE = 4,
};

typedef struct cml__mpi_kv_request_t {
  uint32_t op;
  int32_t reply_tag;
  uint64_t id;
  int64_t timeout_ms;
  uint64_t key_size;
  uint64_t value_size;
} cml__mpi_kv_request_t;

typedef struct cml__mpi_kv_reply_t {
  uint64_t id;
  int32_t code;  // cml_status_code_t
  int32_t reserved;
  uint64_t value_size;
} cml__mpi_kv_reply_t;

typedef struct cml__mpi_kv_entry_t {
  char* key;
  size_t key_size;
  char* value;
  size_t value_size;
} cml__mpi_kv_entry_t;

// A get from another process waiting for its key (process 0's service thread only).
typedef struct cml__mpi_kv_pending_t {
  int source;
  int reply_tag;
  uint64_t id;
  char* key;
  size_t key_size;
  int64_t deadline_ms;
} cml__mpi_kv_pending_t;

// An answer on its way (process 0's service thread only).
typedef struct cml__mpi_kv_outgoing_t {
  MPI_Request request;
  char* buffer;
} cml__mpi_kv_outgoing_t;

struct cml__mpi_kv_t {
  MPI_Comm comm;
  int rank, size;
  char what[64];
  uint64_t next_id;  // atomic
  // Process 0: the map (|mutex|; |cond| wakes local gets on a put) and the service thread.
  pthread_mutex_t mutex;
  pthread_cond_t cond;
  bool sync_ready;
  cml__mpi_kv_entry_t* entries;
  size_t entry_count, entry_capacity;
  cml__mpi_kv_pending_t* pending;
  size_t pending_count, pending_capacity;
  cml__mpi_kv_outgoing_t* outgoing;
  size_t outgoing_count, outgoing_capacity;
  bool* bye;  // bye[r]: process r destroyed its store
  int bye_count;
  int stop;  // atomic: 0 serve, 1 serve until every process said BYE (or timeout), 2 stop now
  pthread_t thread;
  bool thread_running;
  struct cml__mpi_kv_t* next_live;
};

static pthread_mutex_t cml__mpi_kv_live_mutex = PTHREAD_MUTEX_INITIALIZER;
static cml__mpi_kv_t* cml__mpi_kv_live;
static bool cml__mpi_kv_at_exit_registered;

static int64_t cml__mpi_kv_now_ms(void) { return cml_clock_monotonic_ns() / 1000000; }

// A get waits at most min(|timeout_ms|, the MPI layer's timeout); <= 0 means the latter.
static int64_t cml__mpi_kv_wait_ms(int64_t timeout_ms) {
  const int64_t limit = cml__mpi_timeout_ms();
  return timeout_ms <= 0 || timeout_ms > limit ? limit : timeout_ms;
}

// Sleeps a little while nothing happens: yields at first, then up to 1 ms.
static void cml__mpi_kv_idle(int64_t idle_ms) {
  if (idle_ms < 2) {
    sched_yield();
    return;
  }
  struct timespec ts = {0, idle_ms < 20 ? 200000 : 1000000};
  nanosleep(&ts, NULL);
}

// |key| as printable text for messages (other bytes as \xNN, long keys cut with "...").
static void cml__mpi_kv_key_text(const void* key, size_t key_size, char* out, size_t size) {
  size_t n = 0, i = 0;
  const unsigned char* k = (const unsigned char*)key;
  for (; i < key_size && n + 8 < size; ++i) {
    if (k[i] >= 32 && k[i] < 127 && k[i] != '"' && k[i] != '\\') {
      out[n++] = (char)k[i];
    } else {
      n += (size_t)snprintf(out + n, size - n, "\\x%02x", k[i]);
    }
  }
  if (i < key_size) {
    memcpy(out + n, "...", 3);
    n += 3;
  }
  out[n] = '\0';
}

static char* cml__mpi_kv_copy(const void* data, size_t size) {
  char* out = malloc(size + 1);
  if (!out) return NULL;
  if (size) memcpy(out, data, size);
  out[size] = '\0';
  return out;
}

//===--- the map (process 0, under |mutex|) ---===//

static cml__mpi_kv_entry_t* cml__mpi_kv_find(cml__mpi_kv_t* kv, const void* key, size_t key_size) {
  for (size_t i = 0; i < kv->entry_count; ++i) {
    cml__mpi_kv_entry_t* e = &kv->entries[i];
    if (e->key_size == key_size && memcmp(e->key, key, key_size) == 0) return e;
  }
  return NULL;
}

static cml_status_code_t cml__mpi_kv_store(cml__mpi_kv_t* kv, const void* key, size_t key_size,
                                           const void* value, size_t value_size) {
  char* copy = cml__mpi_kv_copy(value, value_size);
  if (!copy) return CML_STATUS_RESOURCE_EXHAUSTED;
  cml__mpi_kv_entry_t* e = cml__mpi_kv_find(kv, key, key_size);
  if (!e) {
    if (kv->entry_count == kv->entry_capacity) {
      size_t capacity = kv->entry_capacity ? kv->entry_capacity * 2 : 16;
      cml__mpi_kv_entry_t* grown = realloc(kv->entries, capacity * sizeof *grown);
      if (!grown) {
        free(copy);
        return CML_STATUS_RESOURCE_EXHAUSTED;
      }
      kv->entries = grown;
      kv->entry_capacity = capacity;
    }
    char* key_copy = cml__mpi_kv_copy(key, key_size);
    if (!key_copy) {
      free(copy);
      return CML_STATUS_RESOURCE_EXHAUSTED;
    }
    e = &kv->entries[kv->entry_count++];
    e->key = key_copy;
    e->key_size = key_size;
    e->value = NULL;
  }
  free(e->value);
  e->value = copy;
  e->value_size = value_size;
  return CML_STATUS_OK;
}

//===--- process 0's service thread ---===//

// Sends an answer to |source| on |tag| (kept in |outgoing| until MPI is done with it).
static void cml__mpi_kv_answer(cml__mpi_kv_t* kv, int source, int tag, uint64_t id,
                               cml_status_code_t code, const char* value, size_t value_size) {
  if (code != CML_STATUS_OK) value_size = 0;
  if (kv->outgoing_count == kv->outgoing_capacity) {
    size_t capacity = kv->outgoing_capacity ? kv->outgoing_capacity * 2 : 16;
    cml__mpi_kv_outgoing_t* grown = realloc(kv->outgoing, capacity * sizeof *grown);
    if (!grown) return;  // the requester times out
    kv->outgoing = grown;
    kv->outgoing_capacity = capacity;
  }
  cml__mpi_kv_reply_t reply = {.id = id, .code = (int32_t)code, .value_size = value_size};
  char* buffer = malloc(sizeof reply + value_size);
  if (!buffer) {
    reply.code = CML_STATUS_RESOURCE_EXHAUSTED;
    reply.value_size = 0;
    value_size = 0;
    buffer = malloc(sizeof reply);
    if (!buffer) return;
  }
  memcpy(buffer, &reply, sizeof reply);
  if (value_size) memcpy(buffer + sizeof reply, value, value_size);
  cml__mpi_kv_outgoing_t* o = &kv->outgoing[kv->outgoing_count];
  if (MPI_Isend(buffer, (int)(sizeof reply + value_size), MPI_BYTE, source, tag, kv->comm,
                &o->request) != MPI_SUCCESS) {
    free(buffer);
    return;
  }
  o->buffer = buffer;
  ++kv->outgoing_count;
}

// Answers |key| from the map; false when it is not there.
static bool cml__mpi_kv_answer_from_map(cml__mpi_kv_t* kv, int source, int tag, uint64_t id,
                                        const void* key, size_t key_size) {
  pthread_mutex_lock(&kv->mutex);
  cml__mpi_kv_entry_t* e = cml__mpi_kv_find(kv, key, key_size);
  if (e) cml__mpi_kv_answer(kv, source, tag, id, CML_STATUS_OK, e->value, e->value_size);
  pthread_mutex_unlock(&kv->mutex);
  return e != NULL;
}

static void cml__mpi_kv_handle(cml__mpi_kv_t* kv, const char* message, size_t bytes, int source) {
  cml__mpi_kv_request_t h;
  if (bytes < sizeof h) return;  // not a request of this layer
  memcpy(&h, message, sizeof h);
  if (h.key_size > bytes - sizeof h || h.value_size != bytes - sizeof h - h.key_size) return;
  const char* key = message + sizeof h;
  const char* value = key + h.key_size;
  switch (h.op) {
    case CML__MPI_KV_PUT: {
      pthread_mutex_lock(&kv->mutex);
      const cml_status_code_t code = cml__mpi_kv_store(kv, key, h.key_size, value, h.value_size);
      pthread_cond_broadcast(&kv->cond);
      pthread_mutex_unlock(&kv->mutex);
      cml__mpi_kv_answer(kv, source, h.reply_tag, h.id, code, NULL, 0);
      break;
    }
    case CML__MPI_KV_GET:
    case CML__MPI_KV_TRY_GET:
      if (cml__mpi_kv_answer_from_map(kv, source, h.reply_tag, h.id, key, h.key_size)) break;
      if (h.op == CML__MPI_KV_TRY_GET) {
        cml__mpi_kv_answer(kv, source, h.reply_tag, h.id, CML_STATUS_NOT_FOUND, NULL, 0);
        break;
      }
      if (kv->pending_count == kv->pending_capacity) {
        size_t capacity = kv->pending_capacity ? kv->pending_capacity * 2 : 16;
        cml__mpi_kv_pending_t* grown = realloc(kv->pending, capacity * sizeof *grown);
        if (!grown) {
          cml__mpi_kv_answer(kv, source, h.reply_tag, h.id, CML_STATUS_RESOURCE_EXHAUSTED, NULL, 0);
          break;
        }
        kv->pending = grown;
        kv->pending_capacity = capacity;
      }
      {
        char* key_copy = cml__mpi_kv_copy(key, h.key_size);
        if (!key_copy) {
          cml__mpi_kv_answer(kv, source, h.reply_tag, h.id, CML_STATUS_RESOURCE_EXHAUSTED, NULL, 0);
          break;
        }
        kv->pending[kv->pending_count++] = (cml__mpi_kv_pending_t){
            .source = source,
            .reply_tag = h.reply_tag,
            .id = h.id,
            .key = key_copy,
            .key_size = h.key_size,
            .deadline_ms = cml__mpi_kv_now_ms() + cml__mpi_kv_wait_ms(h.timeout_ms)};
      }
      break;
    case CML__MPI_KV_BYE:
      if (source > 0 && source < kv->size && !kv->bye[source]) {
        kv->bye[source] = true;
        ++kv->bye_count;
      }
      break;
    default:
      break;
  }
}

// Answers the waiting gets whose key came, and those whose time is up (DEADLINE_EXCEEDED).
static void cml__mpi_kv_serve_pending(cml__mpi_kv_t* kv, int64_t now) {
  size_t kept = 0;
  for (size_t i = 0; i < kv->pending_count; ++i) {
    cml__mpi_kv_pending_t* p = &kv->pending[i];
    bool done =
        cml__mpi_kv_answer_from_map(kv, p->source, p->reply_tag, p->id, p->key, p->key_size);
    if (!done && now >= p->deadline_ms) {
      cml__mpi_kv_answer(kv, p->source, p->reply_tag, p->id, CML_STATUS_DEADLINE_EXCEEDED, NULL, 0);
      done = true;
    }
    if (done) {
      free(p->key);
    } else {
      kv->pending[kept++] = *p;
    }
  }
  kv->pending_count = kept;
}

static void cml__mpi_kv_test_outgoing(cml__mpi_kv_t* kv) {
  size_t kept = 0;
  for (size_t i = 0; i < kv->outgoing_count; ++i) {
    int done = 0;
    if (MPI_Test(&kv->outgoing[i].request, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) done = 1;
    if (done) {
      free(kv->outgoing[i].buffer);
    } else {
      kv->outgoing[kept++] = kv->outgoing[i];
    }
  }
  kv->outgoing_count = kept;
}

static void* cml__mpi_kv_serve(void* arg) {
  cml__mpi_kv_t* kv = arg;
  int64_t last_news = cml__mpi_kv_now_ms(), last_busy = last_news;
  for (;;) {
    const int stop = __atomic_load_n(&kv->stop, __ATOMIC_ACQUIRE);
    int64_t now = cml__mpi_kv_now_ms();
    if (stop == 2) break;
    if (stop == 1 && (kv->bye_count >= kv->size - 1 || now - last_news > cml__mpi_timeout_ms())) {
      break;
    }
    bool busy = false;
    for (int k = 0; k < 16; ++k) {
      int flag = 0, count = 0;
      MPI_Status status;
      if (MPI_Iprobe(MPI_ANY_SOURCE, CML__MPI_KV_TAG_REQUEST, kv->comm, &flag, &status) !=
              MPI_SUCCESS ||
          !flag) {
        break;
      }
      MPI_Get_count(&status, MPI_BYTE, &count);
      char* message = malloc(count > 0 ? (size_t)count : 1);
      if (!message) break;  // tried again next round
      if (MPI_Recv(message, count, MPI_BYTE, status.MPI_SOURCE, CML__MPI_KV_TAG_REQUEST, kv->comm,
                   MPI_STATUS_IGNORE) == MPI_SUCCESS) {
        cml__mpi_kv_handle(kv, message, (size_t)count, status.MPI_SOURCE);
      }
      free(message);
      busy = true;
    }
    now = cml__mpi_kv_now_ms();
    if (busy) last_news = last_busy = now;
    if (kv->pending_count) cml__mpi_kv_serve_pending(kv, now);
    if (kv->outgoing_count) cml__mpi_kv_test_outgoing(kv);
    if (!busy) cml__mpi_kv_idle(now - last_busy);
  }
  // Answers still in flight belong to requesters that are gone or gave up. MPI may read a
  // send's buffer until the send completes (Open MPI cannot cancel sends): one that does not
  // complete within a short wait keeps its buffer allocated.
  for (size_t i = 0; i < kv->outgoing_count; ++i) {
    int done = 0;
    if (MPI_Test(&kv->outgoing[i].request, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) done = 0;
    if (!done) {
      MPI_Cancel(&kv->outgoing[i].request);
      for (int spin = 0; spin < 1000 && !done; ++spin) {
        if (MPI_Test(&kv->outgoing[i].request, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) break;
        if (!done) cml__mpi_kv_idle(200);
      }
    }
    if (done) {
      free(kv->outgoing[i].buffer);
    } else {
      MPI_Request_free(&kv->outgoing[i].request);
    }
  }
  kv->outgoing_count = 0;
  for (size_t i = 0; i < kv->pending_count; ++i) free(kv->pending[i].key);
  kv->pending_count = 0;
  return NULL;
}

//===--- requests of the other processes ---===//

// Sends one request to process 0 and (unless |op| is BYE) waits for its answer. On OK with a
// value, *|out_value| / *|out_size| receive it. *|out_code| is the answer's code.
static cml_status_t cml__mpi_kv_request(cml__mpi_kv_t* kv, uint32_t op, const void* key,
                                        size_t key_size, const void* value, size_t value_size,
                                        int64_t wait_ms, char** out_value, size_t* out_size,
                                        cml_status_code_t* out_code) {
  static const char* const kOpNames[] = {"", "put", "get", "try-get", "close"};
  const char* op_name = kOpNames[op];
  const uint64_t id = __atomic_add_fetch(&kv->next_id, 1, __ATOMIC_RELAXED);
  const int tag = CML__MPI_KV_TAG_REPLY_BASE + (int)(id % CML__MPI_KV_TAG_REPLY_SPAN);
  cml__mpi_kv_request_t h = {.op = op,
                             .reply_tag = tag,
                             .id = id,
                             .timeout_ms = wait_ms,
                             .key_size = key_size,
                             .value_size = value_size};
  const size_t bytes = sizeof h + key_size + value_size;
  char* message = malloc(bytes);
  if (!message) {
    return cml_status_make(CML_STATUS_RESOURCE_EXHAUSTED, "%s: %s: out of memory for %zu bytes",
                           kv->what, op_name, bytes);
  }
  memcpy(message, &h, sizeof h);
  if (key_size) memcpy(message + sizeof h, key, key_size);
  if (value_size) memcpy(message + sizeof h + key_size, value, value_size);
  MPI_Request send = MPI_REQUEST_NULL;
  if (MPI_Isend(message, (int)bytes, MPI_BYTE, 0, CML__MPI_KV_TAG_REQUEST, kv->comm, &send) !=
      MPI_SUCCESS) {
    free(message);
    return cml_status_make(CML_STATUS_UNAVAILABLE, "%s: %s: cannot send the request to process 0",
                           kv->what, op_name);
  }
  // Process 0 answers a get by its deadline; it gets the MPI layer's timeout more to do so.
  const int64_t start = cml__mpi_kv_now_ms();
  const int64_t give_up = start + (op == CML__MPI_KV_GET ? wait_ms : 0) + cml__mpi_timeout_ms();
  cml_status_t st = CML_OK;
  bool answered = op == CML__MPI_KV_BYE;
  int64_t last_busy = start;
  for (;;) {
    int sent = 1;
    if (send != MPI_REQUEST_NULL) MPI_Test(&send, &sent, MPI_STATUS_IGNORE);
    if (answered && sent) break;
    int flag = 0;
    MPI_Status status;
    if (!answered && MPI_Iprobe(0, tag, kv->comm, &flag, &status) == MPI_SUCCESS && flag) {
      int count = 0;
      MPI_Get_count(&status, MPI_BYTE, &count);
      char* reply = malloc(count > 0 ? (size_t)count + 1 : 1);
      if (!reply) {
        st = cml_status_make(CML_STATUS_RESOURCE_EXHAUSTED,
                             "%s: %s: out of memory for an answer of %d bytes", kv->what, op_name,
                             count);
        break;
      }
      MPI_Recv(reply, count, MPI_BYTE, 0, tag, kv->comm, MPI_STATUS_IGNORE);
      cml__mpi_kv_reply_t r;
      if ((size_t)count < sizeof r) {
        free(reply);
        continue;
      }
      memcpy(&r, reply, sizeof r);
      if (r.id != id || r.value_size != (size_t)count - sizeof r) {
        free(reply);  // a late answer to an earlier call on the same tag
        continue;
      }
      *out_code = (cml_status_code_t)r.code;
      if (r.code == CML_STATUS_OK && out_value) {
        memmove(reply, reply + sizeof r, r.value_size);
        reply[r.value_size] = '\0';
        *out_value = reply;
        *out_size = r.value_size;
      } else {
        free(reply);
      }
      answered = true;
      last_busy = cml__mpi_kv_now_ms();
      continue;
    }
    const int64_t now = cml__mpi_kv_now_ms();
    st = cml__mpi_failure();
    if (st != CML_OK) {
      st = cml_status_annotate(st, "%s: %s", kv->what, op_name);
      break;
    }
    if (now > give_up) {
      st = cml_status_make(CML_STATUS_DEADLINE_EXCEEDED,
                           "%s: %s: process %d had no answer from process 0, which serves the "
                           "store, within %lld ms (it died or hangs; CML_MPI_TIMEOUT_MS sets the "
                           "limit)",
                           kv->what, op_name, kv->rank, (long long)(now - start));
      break;
    }
    cml__mpi_kv_idle(now - last_busy);
  }
  if (send != MPI_REQUEST_NULL) {
    // Given up with the request still on its way: MPI may read |message| until the send ends,
    // so it is left allocated.
    MPI_Cancel(&send);
    MPI_Request_free(&send);
  } else {
    free(message);
  }
  return st;
}

//===--- the API ---===//

static cml_status_t cml__mpi_kv_check_key(const cml__mpi_kv_t* kv, const char* op, const void* key,
                                          size_t key_size, size_t value_size) {
  if (!kv || (!key && key_size)) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "MPI key-value store: %s: %s", op,
                           kv ? "NULL key" : "NULL store");
  }
  if (key_size == 0) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "%s: %s: empty key", kv->what, op);
  }
  if (key_size > CML__MPI_KV_MAX_BYTES || value_size > CML__MPI_KV_MAX_BYTES - key_size) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "%s: %s: a key of %zu bytes and a value of %zu bytes are more than the "
                           "%zu bytes one entry may hold",
                           kv->what, op, key_size, value_size, CML__MPI_KV_MAX_BYTES);
  }
  return CML_OK;
}

static void cml__mpi_kv_stop_all_at_exit(void) {
  pthread_mutex_lock(&cml__mpi_kv_live_mutex);
  for (cml__mpi_kv_t* kv = cml__mpi_kv_live; kv; kv = kv->next_live) {
    if (!kv->thread_running) continue;
    __atomic_store_n(&kv->stop, 2, __ATOMIC_RELEASE);
    pthread_join(kv->thread, NULL);
    kv->thread_running = false;
  }
  pthread_mutex_unlock(&cml__mpi_kv_live_mutex);
}

cml_status_t cml__mpi_kv_create(const char* what, cml__mpi_kv_t** out_kv) {
  if (!out_kv) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "MPI key-value store: NULL out_kv");
  }
  *out_kv = NULL;
  if (!what || !*what) what = "MPI key-value store";
  cml_status_t st = cml__mpi_init();
  if (st != CML_OK) return cml_status_annotate(st, "%s", what);
  // Every process arrives (or the MPI layer's timeout ends the wait) before the collective dup.
  st = cml__mpi_barrier(NULL);
  if (st != CML_OK) return cml_status_annotate(st, "%s: creating the store", what);
  cml__mpi_kv_t* kv = calloc(1, sizeof *kv);
  if (!kv) return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
  snprintf(kv->what, sizeof kv->what, "%s", what);
  kv->comm = MPI_COMM_NULL;
  pthread_mutex_lock(&cml__mpi_kv_live_mutex);
  int err = MPI_Comm_dup(MPI_COMM_WORLD, &kv->comm);
  if (err == MPI_SUCCESS) {
    MPI_Comm_set_errhandler(kv->comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(kv->comm, &kv->rank);
    MPI_Comm_size(kv->comm, &kv->size);
  }
  if (err == MPI_SUCCESS && kv->rank == 0) {
    pthread_condattr_t attr;
    bool ok = pthread_condattr_init(&attr) == 0;
    ok = ok && pthread_condattr_setclock(&attr, CLOCK_MONOTONIC) == 0;
    ok = ok && pthread_cond_init(&kv->cond, &attr) == 0;
    pthread_condattr_destroy(&attr);
    if (ok && pthread_mutex_init(&kv->mutex, NULL) != 0) {
      pthread_cond_destroy(&kv->cond);
      ok = false;
    }
    kv->sync_ready = ok;
    kv->bye = calloc((size_t)kv->size, sizeof *kv->bye);
    ok = ok && kv->bye;
    ok = ok && cml__thread_create(&kv->thread, NULL, cml__mpi_kv_serve, kv) == 0;
    kv->thread_running = ok;
    if (!ok) err = MPI_ERR_OTHER;
  }
  if (err == MPI_SUCCESS) {
    kv->next_live = cml__mpi_kv_live;
    cml__mpi_kv_live = kv;
    if (!cml__mpi_kv_at_exit_registered) {
      // Registered after the MPI layer's own handler (cml__mpi_init ran first), so it runs
      // before MPI_Finalize.
      cml__mpi_kv_at_exit_registered = atexit(cml__mpi_kv_stop_all_at_exit) == 0;
    }
  }
  pthread_mutex_unlock(&cml__mpi_kv_live_mutex);
  if (err != MPI_SUCCESS) {
    // Process 0 could not start serving: the others' requests time out with a status.
    if (kv->comm != MPI_COMM_NULL) MPI_Comm_free(&kv->comm);
    if (kv->sync_ready) {
      pthread_cond_destroy(&kv->cond);
      pthread_mutex_destroy(&kv->mutex);
    }
    free(kv->bye);
    free(kv);
    return cml_status_make(CML_STATUS_UNAVAILABLE,
                           "%s: cannot create the store (communicator, memory or service thread)",
                           what);
  }
  *out_kv = kv;
  return CML_OK;
}

int cml__mpi_kv_rank(const cml__mpi_kv_t* kv) { return kv ? kv->rank : 0; }
int cml__mpi_kv_size(const cml__mpi_kv_t* kv) { return kv ? kv->size : 1; }

cml_status_t cml__mpi_kv_put(cml__mpi_kv_t* kv, const void* key, size_t key_size, const void* value,
                             size_t value_size) {
  CML_RETURN_IF_ERROR(cml__mpi_kv_check_key(kv, "put", key, key_size, value_size));
  if (!value && value_size) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "%s: put: NULL value of %zu bytes",
                           kv->what, value_size);
  }
  char text[96];
  cml__mpi_kv_key_text(key, key_size, text, sizeof text);
  cml_status_code_t code = CML_STATUS_OK;
  if (kv->rank == 0) {
    pthread_mutex_lock(&kv->mutex);
    code = cml__mpi_kv_store(kv, key, key_size, value, value_size);
    pthread_cond_broadcast(&kv->cond);
    pthread_mutex_unlock(&kv->mutex);
  } else {
    cml_status_t st = cml__mpi_kv_request(kv, CML__MPI_KV_PUT, key, key_size, value, value_size, 0,
                                          NULL, NULL, &code);
    if (st != CML_OK) return cml_status_annotate(st, "key \"%s\"", text);
  }
  if (code == CML_STATUS_OK) return CML_OK;
  return cml_status_make(code, "%s: put \"%s\" (%zu bytes): process 0 could not store it", kv->what,
                         text, value_size);
}

// Process 0's get: waits on |cond| (in slices of at most 100 ms, to see failures of the MPI
// layer) until the key is there or the time is up.
static cml_status_code_t cml__mpi_kv_local_get(cml__mpi_kv_t* kv, const void* key, size_t key_size,
                                               int64_t wait_ms, bool wait, char** out_value,
                                               size_t* out_size, cml_status_t* out_failure) {
  const int64_t deadline = cml__mpi_kv_now_ms() + wait_ms;
  cml_status_code_t code = CML_STATUS_OK;
  pthread_mutex_lock(&kv->mutex);
  for (;;) {
    cml__mpi_kv_entry_t* e = cml__mpi_kv_find(kv, key, key_size);
    if (e) {
      *out_value = cml__mpi_kv_copy(e->value, e->value_size);
      *out_size = e->value_size;
      code = *out_value ? CML_STATUS_OK : CML_STATUS_RESOURCE_EXHAUSTED;
      break;
    }
    if (!wait) {
      code = CML_STATUS_NOT_FOUND;
      break;
    }
    const int64_t now = cml__mpi_kv_now_ms();
    if (now >= deadline) {
      code = CML_STATUS_DEADLINE_EXCEEDED;
      break;
    }
    *out_failure = cml__mpi_failure();
    if (*out_failure != CML_OK) {
      code = CML_STATUS_FAILED_PRECONDITION;
      break;
    }
    int64_t slice = deadline - now < 100 ? deadline - now : 100;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_sec += (time_t)(slice / 1000);
    ts.tv_nsec += (long)(slice % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
      ts.tv_sec += 1;
      ts.tv_nsec -= 1000000000L;
    }
    (void)pthread_cond_timedwait(&kv->cond, &kv->mutex, &ts);
  }
  pthread_mutex_unlock(&kv->mutex);
  return code;
}

static cml_status_t cml__mpi_kv_fetch(cml__mpi_kv_t* kv, bool wait, const void* key,
                                      size_t key_size, int64_t timeout_ms, char** out_value,
                                      size_t* out_size) {
  const char* op = wait ? "get" : "try-get";
  if (out_value) *out_value = NULL;
  if (out_size) *out_size = 0;
  CML_RETURN_IF_ERROR(cml__mpi_kv_check_key(kv, op, key, key_size, 0));
  if (!out_value || !out_size) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "%s: %s: NULL output", kv->what, op);
  }
  char text[96];
  cml__mpi_kv_key_text(key, key_size, text, sizeof text);
  const int64_t wait_ms = cml__mpi_kv_wait_ms(timeout_ms);
  cml_status_code_t code = CML_STATUS_OK;
  char* value = NULL;
  size_t size = 0;
  if (kv->rank == 0) {
    cml_status_t failure = CML_OK;
    code = cml__mpi_kv_local_get(kv, key, key_size, wait_ms, wait, &value, &size, &failure);
    if (failure != CML_OK) return cml_status_annotate(failure, "%s: %s \"%s\"", kv->what, op, text);
  } else {
    cml_status_t st = cml__mpi_kv_request(kv, wait ? CML__MPI_KV_GET : CML__MPI_KV_TRY_GET, key,
                                          key_size, NULL, 0, wait_ms, &value, &size, &code);
    if (st != CML_OK) return cml_status_annotate(st, "key \"%s\"", text);
  }
  switch (code) {
    case CML_STATUS_OK:
      *out_value = value;
      *out_size = size;
      return CML_OK;
    case CML_STATUS_NOT_FOUND:
      return cml_status_make(code, "%s: try-get \"%s\": no process has put this key (yet)",
                             kv->what, text);
    case CML_STATUS_DEADLINE_EXCEEDED:
      return cml_status_make(code,
                             "%s: get \"%s\": no process put this key within %lld ms (the "
                             "get's timeout, at most CML_MPI_TIMEOUT_MS = %lld ms)",
                             kv->what, text, (long long)wait_ms, (long long)cml__mpi_timeout_ms());
    default:
      return cml_status_make(code, "%s: %s \"%s\" failed on process 0", kv->what, op, text);
  }
}

cml_status_t cml__mpi_kv_get(cml__mpi_kv_t* kv, const void* key, size_t key_size,
                             int64_t timeout_ms, char** out_value, size_t* out_size) {
  return cml__mpi_kv_fetch(kv, true, key, key_size, timeout_ms, out_value, out_size);
}

cml_status_t cml__mpi_kv_try_get(cml__mpi_kv_t* kv, const void* key, size_t key_size,
                                 char** out_value, size_t* out_size) {
  return cml__mpi_kv_fetch(kv, false, key, key_size, 0, out_value, out_size);
}

void cml__mpi_kv_destroy(cml__mpi_kv_t* kv) {
  if (!kv) return;
  if (kv->rank != 0) {
    cml_status_code_t code = CML_STATUS_OK;
    cml_status_free(cml__mpi_kv_request(kv, CML__MPI_KV_BYE, "", 0, NULL, 0, 0, NULL, NULL, &code));
  }
  pthread_mutex_lock(&cml__mpi_kv_live_mutex);
  for (cml__mpi_kv_t** p = &cml__mpi_kv_live; *p; p = &(*p)->next_live) {
    if (*p == kv) {
      *p = kv->next_live;
      break;
    }
  }
  pthread_mutex_unlock(&cml__mpi_kv_live_mutex);
  if (kv->thread_running) {
    __atomic_store_n(&kv->stop, 1, __ATOMIC_RELEASE);
    pthread_join(kv->thread, NULL);
  }
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && kv->comm != MPI_COMM_NULL) MPI_Comm_free(&kv->comm);
  if (kv->sync_ready) {
    pthread_cond_destroy(&kv->cond);
    pthread_mutex_destroy(&kv->mutex);
  }
  for (size_t i = 0; i < kv->entry_count; ++i) {
    free(kv->entries[i].key);
    free(kv->entries[i].value);
  }
  free(kv->entries);
  free(kv->pending);
  free(kv->outgoing);
  free(kv->bye);
  free(kv);
}

#else  // !CML_HAVE_MPI

cml_status_t cml__mpi_kv_create(const char* what, cml__mpi_kv_t** out_kv) {
  if (out_kv) *out_kv = NULL;
  return cml_status_annotate(cml__mpi_init(), "%s", what && *what ? what : "MPI key-value store");
}

static cml_status_t cml__mpi_kv_missing(void) {
  return cml_status_annotate(cml__mpi_init(), "MPI key-value store");
}

cml_status_t cml__mpi_kv_put(cml__mpi_kv_t* kv, const void* key, size_t key_size, const void* value,
                             size_t value_size) {
  (void)kv, (void)key, (void)key_size, (void)value, (void)value_size;
  return cml__mpi_kv_missing();
}

cml_status_t cml__mpi_kv_get(cml__mpi_kv_t* kv, const void* key, size_t key_size,
                             int64_t timeout_ms, char** out_value, size_t* out_size) {
  (void)kv, (void)key, (void)key_size, (void)timeout_ms;
  if (out_value) *out_value = NULL;
  if (out_size) *out_size = 0;
  return cml__mpi_kv_missing();
}

cml_status_t cml__mpi_kv_try_get(cml__mpi_kv_t* kv, const void* key, size_t key_size,
                                 char** out_value, size_t* out_size) {
  return cml__mpi_kv_get(kv, key, key_size, 0, out_value, out_size);
}

int cml__mpi_kv_rank(const cml__mpi_kv_t* kv) {
  (void)kv;
  return 0;
}

int cml__mpi_kv_size(const cml__mpi_kv_t* kv) {
  (void)kv;
  return 1;
}

void cml__mpi_kv_destroy(cml__mpi_kv_t* kv) { (void)kv; }

#endif  // CML_HAVE_MPI
