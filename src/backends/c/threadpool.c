// SPDX-License-Identifier: Apache-2.0
// src/backends/c/threadpool.c: the C backend's persistent thread pool (cmlc_parallel_for).
//
// Workers are created once, with the pool, which is returned only when every worker has started
// (a thread still in its start-up when the process forks can leave a lock of the C library or
// of a sanitizer's allocator held in the child; ASan of GCC 12 takes its allocator's locks in
// every thread start and has no fork handler for them). An idle worker spins for about 50 µs (a
// spinning hand-off costs ~0.5 µs, waking a sleeping thread ~25 µs on the build machines) and then
// sleeps on a condition variable. A caller publishes a job (a range cut into chunks), runs chunks
// itself, and waits until every chunk ran; several callers may publish jobs at once and the
// workers serve them all. A task that calls cmlc_parallel_for again runs that range inline.
// Workers run a job's chunks with its caller's floating-point control bits (rounding, exception
// masks, FTZ/DAZ: base_internal.h), so a range computes the same on any thread.
//
// Chunk boundaries depend only on |n| and |min_chunk| (never on the thread count), and every
// chunk runs exactly once. thread_index is 0 for the caller and 1..threads-1 for the workers, so
// it is unique among the threads running chunks of one job. With several callers at once a free
// worker joins the job that has the fewest workers (fair sharing among the device slots of an
// SPMD execution, whose kernels all publish jobs here). A caller may also hold a *share*
// (cmlc_pool_set_share): its jobs take at most share - 1 workers, and with a share of one it
// runs every range inline. The device slots of an SPMD execution each hold threads / slots, so
// N slots never run more than the pool's threads at once (slots + workers beyond the cores
// only add preemption and spin-waiting for chunks a descheduled thread holds).
//
// Thread-safety: thread-safe; cmlc_pool_destroy must not race with cmlc_parallel_for.
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "backends/c/engine_internal.h"
#include "base/base_internal.h"

// At most this many chunks per job: enough for load balance on many cores, few enough that the
// atomic chunk counter is not a bottleneck.
#define CMLC_POOL_MAX_CHUNKS 64
// The least stack a worker gets (the libc default when larger: 8 MiB with glibc).
#define CMLC_POOL_STACK_BYTES ((size_t)1 << 20)
// How long an idle worker spins before it sleeps.
#define CMLC_POOL_SPIN_NS 50000

typedef struct cmlc_job_t {
  cmlc_task_fn fn;
  void* ctx;
  int64_t n;
  int64_t chunk;
  int64_t chunk_count;
  atomic_llong next;  // next chunk to hand out
  atomic_llong done;  // chunks finished
  atomic_int users;   // workers inside this job (the caller waits for 0 before returning)
  int max_users;      // the most workers it takes (the caller's share - 1)
  int caller_cpu;     // the CPU the caller published it from (-1: unknown)
  uint32_t fpenv;     // the caller's floating-point control bits (base_internal.h)
  struct cmlc_job_t* next_job;
} cmlc_job_t;

typedef struct cmlc_worker_t {
  cmlc_pool_t* pool;
  int thread_index;
  pthread_t thread;
} cmlc_worker_t;

struct cmlc_pool_t {
  cml_allocator_t allocator;
  int threads;  // including the caller
  int worker_count;
  cmlc_worker_t* workers;
  pthread_mutex_t mutex;  // guards |jobs|, the sleep condition and |stop|
  pthread_cond_t wake;
  pthread_cond_t ready;  // signalled as workers start (cmlc_pool_create waits for all of them)
  int started;           // workers that reached cmlc_pool_worker_main (guarded by |mutex|)
  cmlc_job_t* jobs;      // jobs that may still have chunks to hand out
  atomic_ullong seq;     // bumped whenever a job is published (and on stop)
  atomic_int sleepers;   // workers waiting on |wake|
  atomic_bool stop;
};

// Set while a thread runs a chunk: nested parallel_for calls run inline with this index.
static _Thread_local int cmlc_pool_tls_index = -1;
// The calling thread's share of the pool (cmlc_pool_set_share; 0: the whole pool).
static _Thread_local int cmlc_pool_tls_share = 0;

int cmlc_pool_set_share(int threads) {
  const int previous = cmlc_pool_tls_share;
  cmlc_pool_tls_share = threads > 0 ? threads : 0;
  return previous;
}

static inline void cmlc_pool_cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

static uint64_t cmlc_pool_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int cmlc_pool_thread_count(const cmlc_pool_t* pool) { return pool ? pool->threads : 1; }

// The CPU the calling thread runs on, or -1 where the system does not say.
static int cmlc_pool_cpu(void) {
#if defined(__linux__) && !defined(__wasi__)
  return sched_getcpu();
#else
  return -1;
#endif
}

// A worker that finds itself on the CPU of the job's caller can only time-slice with it: the
// caller runs chunks and spin-waits, the worker runs a chunk now and then, and together they go
// no faster than the caller alone (a 2-thread product at its 1-thread time, or slower). Here
// (Linux 6.18 on a 2-vCPU VM) a woken worker was placed on its waker's CPU rather than on the
// idle vCPU, and two threads that both keep running are left where they are, so such pairings
// lasted whole processes (12 of 30 runs of a 256^3 product at 1-thread speed or slower). The
// worker then moves itself: it leaves the job (so the caller never waits for the move), for a
// moment excludes the caller's CPU from its affinity, which migrates it at once, and restores
// the mask it had. At most once every 200 us per worker, and only where the thread may run on
// more than one CPU. Returns whether it moved.
bool cmlc_pool_leave_cpu(int caller_cpu, uint64_t* last_move_ns) {
#if defined(__linux__) && !defined(__wasi__)
  if (caller_cpu < 0 || caller_cpu >= CPU_SETSIZE || sched_getcpu() != caller_cpu) return false;
  if (*last_move_ns != 0 && cmlc_pool_now_ns() - *last_move_ns < 200000) return false;
  cpu_set_t allowed, others;
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0 || CPU_COUNT(&allowed) < 2 ||
      !CPU_ISSET(caller_cpu, &allowed)) {
    return false;
  }
  others = allowed;
  CPU_CLR(caller_cpu, &others);
  const bool moved = sched_setaffinity(0, sizeof others, &others) == 0;
  if (moved) (void)sched_setaffinity(0, sizeof allowed, &allowed);
  *last_move_ns = cmlc_pool_now_ns();  // (a move can take long: count from its end)
  return moved;
#else
  (void)caller_cpu;
  (void)last_move_ns;
  return false;
#endif
}

// Runs chunks of |job| until none is left to hand out.
static void cmlc_pool_run_chunks(cmlc_job_t* job, int thread_index) {
  int saved = cmlc_pool_tls_index;
  cmlc_pool_tls_index = thread_index;
  for (;;) {
    int64_t c = atomic_fetch_add_explicit(&job->next, 1, memory_order_relaxed);
    if (c >= job->chunk_count) break;
    int64_t begin = c * job->chunk;
    int64_t end = begin + job->chunk;
    if (end > job->n) end = job->n;
    job->fn(job->ctx, begin, end, thread_index);
    atomic_fetch_add_explicit(&job->done, 1, memory_order_acq_rel);
  }
  cmlc_pool_tls_index = saved;
}

// Takes a job that still has chunks (registering the worker as a user), or NULL. Among several
// published jobs (concurrent callers: the device slots of an SPMD execution, or threads executing
// at once) it joins the one with the fewest workers, so the workers spread evenly over the
// callers and none is starved (each caller also runs its own job's chunks).
static cmlc_job_t* cmlc_pool_take_job(cmlc_pool_t* pool) {
  cmlc_job_t* found = NULL;
  int found_users = 0;
  pthread_mutex_lock(&pool->mutex);
  for (cmlc_job_t* j = pool->jobs; j; j = j->next_job) {
    if (atomic_load_explicit(&j->next, memory_order_relaxed) >= j->chunk_count) continue;
    const int users = atomic_load_explicit(&j->users, memory_order_relaxed);
    if (users >= j->max_users) continue;
    if (!found || users < found_users) {
      found = j;
      found_users = users;
      if (users == 0) break;
    }
  }
  if (found) atomic_fetch_add_explicit(&found->users, 1, memory_order_relaxed);
  pthread_mutex_unlock(&pool->mutex);
  return found;
}

static void* cmlc_pool_worker_main(void* arg) {
  cmlc_worker_t* self = (cmlc_worker_t*)arg;
  cmlc_pool_t* pool = self->pool;
  uint64_t last_move_ns = 0;
  cmlc_thread_name("cml-pool");
  pthread_mutex_lock(&pool->mutex);
  ++pool->started;
  pthread_cond_signal(&pool->ready);
  pthread_mutex_unlock(&pool->mutex);
  for (;;) {
    uint64_t seen = atomic_load(&pool->seq);
    if (atomic_load(&pool->stop)) break;
    cmlc_job_t* job = cmlc_pool_take_job(pool);
    if (job) {
      const int caller_cpu = job->caller_cpu;
      if (caller_cpu >= 0 && cmlc_pool_cpu() == caller_cpu) {
        atomic_fetch_sub_explicit(&job->users, 1, memory_order_release);
        if (cmlc_pool_leave_cpu(caller_cpu, &last_move_ns)) continue;
        // Could not move: help anyway (the job may still be there).
        job = cmlc_pool_take_job(pool);
        if (!job) continue;
      }
      cml__fpenv_set(job->fpenv);  // a worker keeps the last job's until the next one
      cmlc_pool_run_chunks(job, self->thread_index);
      atomic_fetch_sub_explicit(&job->users, 1, memory_order_release);
      continue;
    }
    // Spin while nothing new is published, then sleep.
    uint64_t start = cmlc_pool_now_ns();
    bool changed = false;
    for (unsigned spins = 1;; ++spins) {
      if (atomic_load_explicit(&pool->seq, memory_order_acquire) != seen) {
        changed = true;
        break;
      }
      cmlc_pool_cpu_relax();
      if ((spins & 63) == 0 && cmlc_pool_now_ns() - start > CMLC_POOL_SPIN_NS) break;
    }
    if (changed) continue;
    pthread_mutex_lock(&pool->mutex);
    atomic_fetch_add(&pool->sleepers, 1);
    while (atomic_load(&pool->seq) == seen && !atomic_load(&pool->stop)) {
      pthread_cond_wait(&pool->wake, &pool->mutex);
    }
    atomic_fetch_sub(&pool->sleepers, 1);
    pthread_mutex_unlock(&pool->mutex);
  }
  return NULL;
}

// Bumps the sequence number and wakes sleeping workers (the seq_cst pair seq/sleepers
// guarantees that a worker about to sleep either sees the new seq or is woken).
static void cmlc_pool_notify(cmlc_pool_t* pool) {
  atomic_fetch_add(&pool->seq, 1);
  if (atomic_load(&pool->sleepers) > 0) {
    pthread_mutex_lock(&pool->mutex);
    pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->mutex);
  }
}

void cmlc_parallel_for(cmlc_pool_t* pool, int64_t n, int64_t min_chunk, cmlc_task_fn fn,
                       void* ctx) {
  if (n <= 0 || !fn) return;
  if (min_chunk < 1) min_chunk = 1;
  if (!pool) {
    fn(ctx, 0, n, 0);
    return;
  }
  int64_t chunk = (n + CMLC_POOL_MAX_CHUNKS - 1) / CMLC_POOL_MAX_CHUNKS;
  if (chunk < min_chunk) chunk = min_chunk;
  int64_t chunk_count = (n + chunk - 1) / chunk;
  const int share = cmlc_pool_tls_share > 0 && cmlc_pool_tls_share < pool->threads
                        ? cmlc_pool_tls_share
                        : pool->threads;
  // Inline: a single chunk, a single thread (or a share of one), or a nested call from inside a
  // task. The chunks keep the same boundaries as on the pool.
  if (chunk_count == 1 || pool->worker_count == 0 || share == 1 || cmlc_pool_tls_index >= 0) {
    int index = cmlc_pool_tls_index >= 0 ? cmlc_pool_tls_index : 0;
    int saved = cmlc_pool_tls_index;
    cmlc_pool_tls_index = index;
    for (int64_t begin = 0; begin < n; begin += chunk) {
      fn(ctx, begin, begin + chunk < n ? begin + chunk : n, index);
    }
    cmlc_pool_tls_index = saved;
    return;
  }
  cmlc_job_t job;
  job.fn = fn;
  job.ctx = ctx;
  job.n = n;
  job.chunk = chunk;
  job.chunk_count = chunk_count;
  atomic_init(&job.next, 0);
  atomic_init(&job.done, 0);
  atomic_init(&job.users, 0);
  job.max_users = share - 1;
  job.caller_cpu = cmlc_pool_cpu();
  job.fpenv = cml__fpenv_control();
  pthread_mutex_lock(&pool->mutex);
  job.next_job = pool->jobs;
  pool->jobs = &job;
  pthread_mutex_unlock(&pool->mutex);
  cmlc_pool_notify(pool);

  cmlc_pool_run_chunks(&job, 0);

  // Unpublish, then wait for the chunks other threads are running and for them to leave.
  pthread_mutex_lock(&pool->mutex);
  for (cmlc_job_t** p = &pool->jobs; *p; p = &(*p)->next_job) {
    if (*p == &job) {
      *p = job.next_job;
      break;
    }
  }
  pthread_mutex_unlock(&pool->mutex);
  for (unsigned spins = 1; atomic_load_explicit(&job.done, memory_order_acquire) < chunk_count ||
                           atomic_load_explicit(&job.users, memory_order_acquire) != 0;
       ++spins) {
    if (spins < 4096) {
      cmlc_pool_cpu_relax();
    } else {
      sched_yield();
    }
  }
}

void cmlc_thread_name(const char* name) {
#if defined(__linux__) && defined(__GLIBC__)
  (void)pthread_setname_np(pthread_self(), name);
#else
  (void)name;
#endif
}

int cmlc_thread_start(pthread_t* thread, void* (*fn)(void*), void* arg, size_t min_stack) {
#if defined(__wasi__)
  (void)thread;
  (void)fn;
  (void)arg;
  (void)min_stack;
  return ENOTSUP;
#else
  pthread_attr_t attr;
  bool have_attr = pthread_attr_init(&attr) == 0;
  size_t stack = 0;
  if (have_attr && pthread_attr_getstacksize(&attr, &stack) == 0 && stack < min_stack) {
    (void)pthread_attr_setstacksize(&attr, min_stack);
  }
  int rc = cml__thread_create(thread, have_attr ? &attr : NULL, fn, arg);
  if (have_attr) pthread_attr_destroy(&attr);
  return rc;
#endif
}

cml_status_t cmlc_pool_create(int threads, cml_allocator_t allocator, cmlc_pool_t** out_pool) {
  if (!out_pool) return cml_status_from_code(CML_STATUS_INVALID_ARGUMENT);
  *out_pool = NULL;
  if (threads < 1 || threads > 4096) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "c backend: thread count %d out of range [1, 4096]", threads);
  }
#if defined(__wasi__)
  // wasm32-wasi has no threads: the pool runs every job inline on the calling thread.
  threads = 1;
#endif
  cmlc_pool_t* pool = cml_allocator_malloc(allocator, sizeof *pool, CMLC_ALIGNMENT);
  if (!pool) return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
  memset(pool, 0, sizeof *pool);
  pool->allocator = allocator;
  pool->threads = threads;
  pool->worker_count = 0;
  atomic_init(&pool->seq, 0);
  atomic_init(&pool->sleepers, 0);
  atomic_init(&pool->stop, false);
  if (pthread_mutex_init(&pool->mutex, NULL) != 0) {
    cml_allocator_free(allocator, pool, sizeof *pool);
    return cml_status_make(CML_STATUS_RESOURCE_EXHAUSTED, "c backend: pthread_mutex_init failed");
  }
  if (pthread_cond_init(&pool->wake, NULL) != 0) {
    pthread_mutex_destroy(&pool->mutex);
    cml_allocator_free(allocator, pool, sizeof *pool);
    return cml_status_make(CML_STATUS_RESOURCE_EXHAUSTED, "c backend: pthread_cond_init failed");
  }
  if (pthread_cond_init(&pool->ready, NULL) != 0) {
    pthread_cond_destroy(&pool->wake);
    pthread_mutex_destroy(&pool->mutex);
    cml_allocator_free(allocator, pool, sizeof *pool);
    return cml_status_make(CML_STATUS_RESOURCE_EXHAUSTED, "c backend: pthread_cond_init failed");
  }
  if (threads > 1) {
    // Workers run kernel chunks only (functions, and so nesting, always run on the calling
    // thread), but a libc whose default thread stack is small (musl: 128 KiB) must not decide
    // whether a kernel's stack frames fit: give them at least CMLC_POOL_STACK_BYTES.
    size_t bytes = sizeof(cmlc_worker_t) * (size_t)(threads - 1);
    pool->workers = cml_allocator_malloc(allocator, bytes, CMLC_ALIGNMENT);
    if (!pool->workers) {
      cmlc_pool_destroy(pool);
      return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
    }
    for (int i = 0; i < threads - 1; ++i) {
      cmlc_worker_t* w = &pool->workers[i];
      w->pool = pool;
      w->thread_index = i + 1;
      int rc = cmlc_thread_start(&w->thread, cmlc_pool_worker_main, w, CMLC_POOL_STACK_BYTES);
      if (rc != 0) {
        cmlc_pool_destroy(pool);
        return cml_status_make(CML_STATUS_RESOURCE_EXHAUSTED,
                               "c backend: cannot start worker thread %d of %d: %s", i + 1,
                               threads - 1, strerror(rc));
      }
      pool->worker_count = i + 1;
    }
    pthread_mutex_lock(&pool->mutex);
    while (pool->started < pool->worker_count) pthread_cond_wait(&pool->ready, &pool->mutex);
    pthread_mutex_unlock(&pool->mutex);
  }
  *out_pool = pool;
  return CML_OK;
}

void cmlc_pool_destroy(cmlc_pool_t* pool) {
  if (!pool) return;
  pthread_mutex_lock(&pool->mutex);
  atomic_store(&pool->stop, true);
  pthread_mutex_unlock(&pool->mutex);
  cmlc_pool_notify(pool);
  pthread_mutex_lock(&pool->mutex);
  pthread_cond_broadcast(&pool->wake);
  pthread_mutex_unlock(&pool->mutex);
  for (int i = 0; i < pool->worker_count; ++i) pthread_join(pool->workers[i].thread, NULL);
  if (pool->workers) {
    cml_allocator_free(pool->allocator, pool->workers,
                       sizeof(cmlc_worker_t) * (size_t)(pool->threads - 1));
  }
  pthread_cond_destroy(&pool->ready);
  pthread_cond_destroy(&pool->wake);
  pthread_mutex_destroy(&pool->mutex);
  cml_allocator_free(pool->allocator, pool, sizeof *pool);
}
