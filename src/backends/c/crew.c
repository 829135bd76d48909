// SPDX-License-Identifier: Apache-2.0
// src/backends/c/crew.c: the persistent threads that run the device slots 1..N-1 of SPMD
// executions (slot 0 runs on the caller).
//
// Starting and joining a thread per slot and execution costs tens of microseconds; the crew's
// threads are started once (at the first SPMD execution, devices - 1 of them, 8 MiB stacks) and
// then wait on a condition variable for the next execution. One execution uses the crew at a
// time: a concurrent one finds it busy and starts threads of its own (exec.c), so executions
// never wait for each other. Slot threads cannot be pool workers: they block at collectives.
//
// Thread-safety: thread-safe; cmlc_crew_destroy must not race with a run.
#include <string.h>

#include "backends/c/engine_internal.h"

// The least stack a slot thread gets (functions nest by recursion on it; see docs/engine.md).
#define CMLC_CREW_STACK_BYTES ((size_t)8 << 20)

typedef struct cmlc_crew_thread_t {
  cmlc_crew_t* crew;
  int index;
  uint64_t seen;  // the last generation it ran
  pthread_t thread;
} cmlc_crew_thread_t;

struct cmlc_crew_t {
  pthread_mutex_t mutex;
  pthread_cond_t wake;  // threads wait for a new generation
  pthread_cond_t done;  // the caller waits for |pending| to reach 0
  cml_allocator_t alloc;
  int capacity;  // threads it may start
  int count;     // threads started
  cmlc_crew_thread_t* threads;
  // The current run.
  void* (*fn)(void*);
  void* const* args;
  int arg_count;
  uint64_t generation;
  int pending;  // threads that have not finished the current generation
  bool busy, stop;
};

static void* cmlc_crew_main(void* arg) {
  cmlc_crew_thread_t* self = (cmlc_crew_thread_t*)arg;
  cmlc_crew_t* crew = self->crew;
  cmlc_thread_name("cml-device");
  pthread_mutex_lock(&crew->mutex);
  for (;;) {
    while (!crew->stop && crew->generation == self->seen) {
      pthread_cond_wait(&crew->wake, &crew->mutex);
    }
    if (crew->stop) break;
    self->seen = crew->generation;
    void* (*fn)(void*) = crew->fn;
    void* job = self->index < crew->arg_count ? crew->args[self->index] : NULL;
    pthread_mutex_unlock(&crew->mutex);
    if (job) fn(job);
    pthread_mutex_lock(&crew->mutex);
    if (--crew->pending == 0) pthread_cond_signal(&crew->done);
  }
  pthread_mutex_unlock(&crew->mutex);
  return NULL;
}

cml_status_t cmlc_crew_create(int capacity, cml_allocator_t allocator, cmlc_crew_t** out_crew) {
  *out_crew = NULL;
  cmlc_crew_t* crew = cml_allocator_malloc(allocator, sizeof *crew, CMLC_ALIGNMENT);
  if (!crew) return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
  memset(crew, 0, sizeof *crew);
  crew->alloc = allocator;
  crew->capacity = capacity > 0 ? capacity : 0;
  if (pthread_mutex_init(&crew->mutex, NULL) != 0) {
    cml_allocator_free(allocator, crew, sizeof *crew);
    return cml_status_make(CML_STATUS_RESOURCE_EXHAUSTED, "c backend: pthread_mutex_init failed");
  }
  if (pthread_cond_init(&crew->wake, NULL) != 0) {
    pthread_mutex_destroy(&crew->mutex);
    cml_allocator_free(allocator, crew, sizeof *crew);
    return cml_status_make(CML_STATUS_RESOURCE_EXHAUSTED, "c backend: pthread_cond_init failed");
  }
  if (pthread_cond_init(&crew->done, NULL) != 0) {
    pthread_cond_destroy(&crew->wake);
    pthread_mutex_destroy(&crew->mutex);
    cml_allocator_free(allocator, crew, sizeof *crew);
    return cml_status_make(CML_STATUS_RESOURCE_EXHAUSTED, "c backend: pthread_cond_init failed");
  }
  *out_crew = crew;
  return CML_OK;
}

void cmlc_crew_destroy(cmlc_crew_t* crew) {
  if (!crew) return;
  pthread_mutex_lock(&crew->mutex);
  crew->stop = true;
  pthread_cond_broadcast(&crew->wake);
  pthread_mutex_unlock(&crew->mutex);
  for (int i = 0; i < crew->count; ++i) pthread_join(crew->threads[i].thread, NULL);
  if (crew->threads) {
    cml_allocator_free(crew->alloc, crew->threads, sizeof *crew->threads * (size_t)crew->capacity);
  }
  pthread_cond_destroy(&crew->done);
  pthread_cond_destroy(&crew->wake);
  pthread_mutex_destroy(&crew->mutex);
  cml_allocator_free(crew->alloc, crew, sizeof *crew);
}

// Starts every thread of the crew (called once, with the mutex held). Threads that could not
// be started are simply not there; the crew then serves runs of up to |count| jobs.
static void cmlc_crew_start_threads(cmlc_crew_t* crew) {
  crew->threads = cml_allocator_malloc(crew->alloc, sizeof *crew->threads * (size_t)crew->capacity,
                                       CMLC_ALIGNMENT);
  if (!crew->threads) {
    crew->capacity = 0;
    return;
  }
  for (int i = 0; i < crew->capacity; ++i) {
    cmlc_crew_thread_t* t = &crew->threads[i];
    t->crew = crew;
    t->index = i;
    t->seen = crew->generation;
    if (cmlc_thread_start(&t->thread, cmlc_crew_main, t, CMLC_CREW_STACK_BYTES) != 0) break;
    crew->count = i + 1;
  }
}

bool cmlc_crew_start(cmlc_crew_t* crew, void* (*fn)(void*), void* const* args, int count) {
  if (!crew || count < 1) return false;
  pthread_mutex_lock(&crew->mutex);
  if (crew->busy || crew->stop || count > crew->capacity) {
    pthread_mutex_unlock(&crew->mutex);
    return false;
  }
  if (!crew->threads) cmlc_crew_start_threads(crew);
  if (count > crew->count) {
    pthread_mutex_unlock(&crew->mutex);
    return false;
  }
  crew->busy = true;
  crew->fn = fn;
  crew->args = args;
  crew->arg_count = count;
  crew->pending = crew->count;
  ++crew->generation;
  pthread_cond_broadcast(&crew->wake);
  pthread_mutex_unlock(&crew->mutex);
  return true;
}

void cmlc_crew_wait(cmlc_crew_t* crew) {
  pthread_mutex_lock(&crew->mutex);
  while (crew->pending > 0) pthread_cond_wait(&crew->done, &crew->mutex);
  crew->busy = false;
  crew->args = NULL;
  crew->arg_count = 0;
  pthread_mutex_unlock(&crew->mutex);
}
