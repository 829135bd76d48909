// SPDX-License-Identifier: Apache-2.0
// src/backends/c/spmd.c: the rendezvous of an SPMD execution: rounds of collective ops among
// device slots, failure propagation, and the detection of rounds that can never complete.
//
// One rendezvous per execution, shared by its N slot threads, guarded by one mutex and one
// condition variable (a collective moves far more data than the lock costs). Executions keep
// theirs for the next one (cmlc_rendezvous_reset), so a steady-state execution allocates none. A
// round is keyed by (node, first member of the group, occurrence): the occurrence is how many times
// this slot ran the node before, so the rounds of a collective inside a While body are distinct.
// Rounds are recycled through a free list (each has room for every slot's contribution).
//
// No wait is unbounded:
//   - a slot that fails (kernel error, cancel, deadline) records the execution's first failure
//     and wakes everyone; slots waiting to arrive give up at once, and running slots see it at
//     their next poll (exec.c);
//   - a slot that finished its program can never arrive again: a round that has it as a member
//     fails (FAILED_PRECONDITION naming the op, the finished slot and the waiting ones);
//   - when every unfinished slot waits to arrive at a round that is incomplete, nothing can
//     change any more: the execution fails with FAILED_PRECONDITION listing where each waits;
//   - with a deadline or a cancel token, waits wake up (at the deadline, and every 10 ms for the
//     token) and, 20 ms later if no running slot reported the stop first, fail the execution
//     themselves, naming the slots they wait for.
// A round whose members all arrived always completes: between cmlc_round_join and
// cmlc_round_finish a member only copies and reduces data, so cmlc_round_finish waits without a
// bound (no member may leave while another still reads its inputs or writes its outputs).
//
// Thread-safety: every entry point is thread-safe within its execution.
#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "backends/c/engine_internal.h"

// How often a wait with a cancel token looks at it.
#define CMLC_RV_TOKEN_POLL_NS 10000000
// How long a waiting slot leaves a seen stop to the running slots (cmlc_rv_wait).
#define CMLC_RV_GRACE_NS 20000000
// How long a slot spins (yielding) for a round to fill or finish before it sleeps on the
// condition: the members of a data-parallel step arrive within microseconds of each other,
// and a sleep costs a futex wake-up (tens of microseconds idle, a scheduler tick under load).
#define CMLC_RV_SPIN_NS 50000

struct cmlc_round_t {
  struct cmlc_round_t* next;
  const cml_ir_node_t* node;
  int32_t first;        // the group's first member: with |node|, the group
  uint32_t occurrence;  // the how-many-th run of |node| by each member
  int32_t size;         // members
  int32_t arrived, finished, left;
  const int32_t* members;      // NULL: slot k at position k
  const void** contributions;  // one per position (room for every slot)
};

struct cmlc_rendezvous_t {
  pthread_mutex_t mutex;
  pthread_cond_t cond;
  cml_allocator_t alloc;
  const cmlc_executable_t* exe;
  const cml_execute_control_t* control;  // NULL: none
  int32_t slots;
  uint32_t* occurrences;  // slots x exe->collective_count
  cmlc_round_t* rounds;   // active rounds
  cmlc_round_t* free_rounds;
  uint8_t* done;                  // per slot: its program ended
  const cml_ir_node_t** waiting;  // per slot: the node it waits to arrive at, or NULL
  cmlc_round_t** waiting_round;   // per slot: that round
  int32_t done_count;
  int32_t waiting_count;
  int failed;  // atomic: a failure was recorded
  cml_status_t failure;
  uint64_t launch;        // distributed=mpi: the execution's number (cmlc_rendezvous_set_launch)
  uint64_t mpi_sequence;  // cross-process collectives stamped so far in this execution
};

//===--- creation ---===//

cml_status_t cmlc_rendezvous_create(const cmlc_executable_t* exe,
                                    const cml_execute_control_t* control,
                                    cmlc_rendezvous_t** out_rendezvous) {
  *out_rendezvous = NULL;
  cml_allocator_t alloc = exe->backend->base.allocator;
  const int32_t slots = exe->module->num_devices > 1 ? exe->module->num_devices : 1;
  cmlc_rendezvous_t* r = cml_allocator_malloc(alloc, sizeof *r, CMLC_ALIGNMENT);
  if (!r) return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
  memset(r, 0, sizeof *r);
  r->alloc = alloc;
  r->exe = exe;
  r->control = control;
  r->slots = slots;
  const size_t counters = (size_t)slots * (exe->collective_count ? exe->collective_count : 1);
  r->occurrences = cml_allocator_malloc(alloc, counters * sizeof *r->occurrences, CMLC_ALIGNMENT);
  r->done = cml_allocator_malloc(alloc, (size_t)slots, CMLC_ALIGNMENT);
  r->waiting = cml_allocator_malloc(alloc, (size_t)slots * sizeof *r->waiting, CMLC_ALIGNMENT);
  r->waiting_round =
      cml_allocator_malloc(alloc, (size_t)slots * sizeof *r->waiting_round, CMLC_ALIGNMENT);
  bool ok = r->occurrences && r->done && r->waiting && r->waiting_round;
  bool mutex = ok && pthread_mutex_init(&r->mutex, NULL) == 0;
  bool cond = false;
  if (mutex) {
#if defined(__wasi__)
    // No threads, hence no SPMD (the capability is off): the condition is never waited on.
    cond = pthread_cond_init(&r->cond, NULL) == 0;
#else
    pthread_condattr_t attr;
    if (pthread_condattr_init(&attr) == 0) {
      // Timed waits measure the deadline on the monotonic clock (cml_clock_monotonic_ns).
      (void)pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
      cond = pthread_cond_init(&r->cond, &attr) == 0;
      pthread_condattr_destroy(&attr);
    }
#endif
  }
  if (!cond) {
    if (mutex) pthread_mutex_destroy(&r->mutex);
    if (r->occurrences) {
      cml_allocator_free(alloc, r->occurrences, counters * sizeof *r->occurrences);
    }
    if (r->done) cml_allocator_free(alloc, r->done, (size_t)slots);
    if (r->waiting) cml_allocator_free(alloc, r->waiting, (size_t)slots * sizeof *r->waiting);
    if (r->waiting_round) {
      cml_allocator_free(alloc, r->waiting_round, (size_t)slots * sizeof *r->waiting_round);
    }
    cml_allocator_free(alloc, r, sizeof *r);
    return cml_status_make(CML_STATUS_RESOURCE_EXHAUSTED,
                           "c backend: cannot create the rendezvous of %d device slots",
                           (int)slots);
  }
  memset(r->occurrences, 0, counters * sizeof *r->occurrences);
  memset(r->done, 0, (size_t)slots);
  memset(r->waiting, 0, (size_t)slots * sizeof *r->waiting);
  memset(r->waiting_round, 0, (size_t)slots * sizeof *r->waiting_round);
  *out_rendezvous = r;
  return CML_OK;
}

static size_t cmlc_round_bytes(int32_t slots) {
  return sizeof(cmlc_round_t) + (size_t)slots * sizeof(void*);
}

static void cmlc_round_list_free(cmlc_rendezvous_t* r, cmlc_round_t* list) {
  while (list) {
    cmlc_round_t* next = list->next;
    cml_allocator_free(r->alloc, list, cmlc_round_bytes(r->slots));
    list = next;
  }
}

void cmlc_rendezvous_destroy(cmlc_rendezvous_t* r) {
  if (!r) return;
  const int32_t slots = r->slots;
  const size_t counters = (size_t)slots * (r->exe->collective_count ? r->exe->collective_count : 1);
  // Rounds left by a failed execution, and the recycled ones.
  cmlc_round_list_free(r, r->rounds);
  cmlc_round_list_free(r, r->free_rounds);
  cml_status_free(r->failure);
  pthread_cond_destroy(&r->cond);
  pthread_mutex_destroy(&r->mutex);
  cml_allocator_free(r->alloc, r->occurrences, counters * sizeof *r->occurrences);
  cml_allocator_free(r->alloc, r->done, (size_t)slots);
  cml_allocator_free(r->alloc, r->waiting, (size_t)slots * sizeof *r->waiting);
  cml_allocator_free(r->alloc, r->waiting_round, (size_t)slots * sizeof *r->waiting_round);
  cml_allocator_free(r->alloc, r, sizeof *r);
}

void cmlc_rendezvous_reset(cmlc_rendezvous_t* r, const cml_execute_control_t* control) {
  const int32_t slots = r->slots;
  const size_t counters = (size_t)slots * (r->exe->collective_count ? r->exe->collective_count : 1);
  // Rounds a failed execution left behind go back to the free list.
  while (r->rounds) {
    cmlc_round_t* round = r->rounds;
    r->rounds = round->next;
    round->next = r->free_rounds;
    r->free_rounds = round;
  }
  cml_status_free(r->failure);
  r->failure = CML_OK;
  __atomic_store_n(&r->failed, 0, __ATOMIC_RELAXED);
  r->control = control;
  r->launch = 0;
  __atomic_store_n(&r->mpi_sequence, 0, __ATOMIC_RELAXED);
  r->done_count = 0;
  r->waiting_count = 0;
  memset(r->occurrences, 0, counters * sizeof *r->occurrences);
  memset(r->done, 0, (size_t)slots);
  memset(r->waiting, 0, (size_t)slots * sizeof *r->waiting);
  memset(r->waiting_round, 0, (size_t)slots * sizeof *r->waiting_round);
}

void cmlc_rendezvous_set_launch(cmlc_rendezvous_t* r, uint64_t launch) { r->launch = launch; }

struct cml__mpi_channel_t* cmlc_rendezvous_mpi_channel(const cmlc_rendezvous_t* r) {
  return r->exe->backend->mpi_channel;
}

// One step of splitmix64's finalizer over h ^ v.
static uint64_t cmlc_rv_mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebull;
  return h ^ (h >> 31);
}

uint64_t cmlc_rendezvous_mpi_stamp(cmlc_rendezvous_t* r, const cml_ir_node_t* node, char* label,
                                   size_t size) {
  const uint64_t sequence = __atomic_fetch_add(&r->mpi_sequence, 1, __ATOMIC_RELAXED);
  const uint64_t ni = (uint64_t)(node - r->exe->module->nodes);
  uint64_t h = cmlc_rv_mix(r->exe->mpi_fingerprint, r->launch);
  h = cmlc_rv_mix(h, sequence);
  h = cmlc_rv_mix(h, ni);
  if (label && size) {
    snprintf(label, size,
             "%s (node %llu, cross-process collective %llu of execution %llu of this executable)",
             cml_op_name(node->op), (unsigned long long)ni, (unsigned long long)sequence + 1,
             (unsigned long long)r->launch + 1);
  }
  return h ? h : 1;
}

//===--- failures ---===//

bool cmlc_rendezvous_failed(const cmlc_rendezvous_t* r) {
  return __atomic_load_n(&r->failed, __ATOMIC_RELAXED) != 0;
}

static int cmlc_rv_device(const cmlc_rendezvous_t* r, int32_t slot) {
  const int32_t* da = r->exe->module->device_assignment;
  return da ? (int)da[slot] : (int)slot;
}

// Records |status| (taken) as the execution's failure unless one is recorded already; |slot|
// >= 0 prefixes it with the slot. Wakes every waiting slot. Called with the mutex held.
static void cmlc_rv_fail_locked(cmlc_rendezvous_t* r, int32_t slot, cml_status_t status) {
  if (r->failure != CML_OK || __atomic_load_n(&r->failed, __ATOMIC_RELAXED)) {
    cml_status_free(status);
  } else {
    if (slot >= 0) {
      // "c backend: device slot 2 (device 2) of 4: <what>", not "...: c backend: <what>".
      static const char self[] = "c backend: ";
      const char* m = cml_status_message(status);
      if (m && strncmp(m, self, sizeof self - 1) == 0) {
        cml_status_t merged = cml_status_make(
            cml_status_code(status), "c backend: device slot %d (device %d) of %d: %s", (int)slot,
            cmlc_rv_device(r, slot), (int)r->slots, m + sizeof self - 1);
        cml_status_free(status);
        status = merged;
      } else {
        status = cml_status_annotate(status, "c backend: device slot %d (device %d) of %d",
                                     (int)slot, cmlc_rv_device(r, slot), (int)r->slots);
      }
    }
    r->failure = status;
    __atomic_store_n(&r->failed, 1, __ATOMIC_RELAXED);
  }
  pthread_cond_broadcast(&r->cond);
}

void cmlc_rendezvous_fail(cmlc_rendezvous_t* r, int32_t slot, cml_status_t status) {
  pthread_mutex_lock(&r->mutex);
  cmlc_rv_fail_locked(r, slot, status);
  pthread_mutex_unlock(&r->mutex);
}

cml_status_t cmlc_rendezvous_take_failure(cmlc_rendezvous_t* r) {
  pthread_mutex_lock(&r->mutex);
  cml_status_t st = r->failure;
  r->failure = CML_OK;
  bool failed = __atomic_load_n(&r->failed, __ATOMIC_RELAXED) != 0;
  pthread_mutex_unlock(&r->mutex);
  if (st == CML_OK && failed) st = cml_status_from_code(CML_STATUS_INTERNAL);
  return st;
}

// The status a slot gets when another one failed first (never the caller's: the first failure
// is).
static cml_status_t cmlc_rv_stopped(const cml_ir_node_t* node) {
  return cml_status_make(CML_STATUS_CANCELLED,
                         "c backend: %s: stopped because another device slot failed",
                         cml_op_name(node->op));
}

//===--- describing rounds ---===//

typedef struct cmlc_rv_text_t {
  char buf[768];
  size_t used;
} cmlc_rv_text_t;

CML_PRINTF(2, 3)
static void cmlc_rv_append(cmlc_rv_text_t* t, const char* fmt, ...) {
  if (t->used >= sizeof t->buf) return;
  va_list ap;
  va_start(ap, fmt);
  int w = vsnprintf(t->buf + t->used, sizeof t->buf - t->used, fmt, ap);
  va_end(ap);
  if (w > 0) t->used += (size_t)w;
  if (t->used > sizeof t->buf) t->used = sizeof t->buf;
}

static int32_t cmlc_round_member(const cmlc_round_t* round, int32_t position) {
  return round->members ? round->members[position] : position;
}

// "{0, 1, 2, 3}"
static void cmlc_rv_append_group(cmlc_rv_text_t* t, const cmlc_round_t* round) {
  cmlc_rv_append(t, "{");
  for (int32_t k = 0; k < round->size && k < 16; ++k) {
    cmlc_rv_append(t, "%s%d", k ? ", " : "", (int)cmlc_round_member(round, k));
  }
  cmlc_rv_append(t, "%s}", round->size > 16 ? ", ..." : "");
}

// Fails the execution because |finished| ended its program while |round| waits for it.
static void cmlc_rv_fail_unreachable(cmlc_rendezvous_t* r, const cmlc_round_t* round,
                                     int32_t finished) {
  cmlc_rv_text_t t = {.used = 0};
  cmlc_rv_append(&t, "waiting there: device slot%s", round->arrived > 1 ? "s" : "");
  int listed = 0;
  for (int32_t k = 0; k < round->size; ++k) {
    const int32_t m = cmlc_round_member(round, k);
    if (round->contributions[k] && listed++ < 16) cmlc_rv_append(&t, " %d", (int)m);
  }
  cmlc_rv_text_t g = {.used = 0};
  cmlc_rv_append_group(&g, round);
  cml_status_t st = cml_status_make(
      CML_STATUS_FAILED_PRECONDITION,
      "c backend: %s (run %u) of replica group %s can never complete: device slot %d finished "
      "its program without reaching it (%s). Every member of a group must run each collective "
      "equally often, so an If or While around a collective must get the same predicate on "
      "every slot of the group (compute it from values equal there, an AllReduce of it for one)",
      cml_op_name(round->node->op), round->occurrence + 1, g.buf, (int)finished, t.buf);
  cmlc_rv_fail_locked(r, -1, st);
}

// Every unfinished slot waits to arrive at an incomplete round: fails the execution.
static void cmlc_rv_fail_deadlock(cmlc_rendezvous_t* r) {
  cmlc_rv_text_t t = {.used = 0};
  int listed = 0;
  for (int32_t s = 0; s < r->slots && listed < 8; ++s) {
    const cmlc_round_t* round = r->waiting_round[s];
    if (!r->waiting[s] || !round) continue;
    cmlc_rv_append(&t, "%sslot %d at %s (run %u) of group ", listed ? "; " : "", (int)s,
                   cml_op_name(r->waiting[s]->op), round->occurrence + 1);
    cmlc_rv_append_group(&t, round);
    cmlc_rv_append(&t, " (%d of %d arrived)", (int)round->arrived, (int)round->size);
    ++listed;
  }
  if (r->done_count > 0) cmlc_rv_append(&t, "; %d slot(s) finished", (int)r->done_count);
  cmlc_rv_fail_locked(
      r, -1,
      cml_status_make(CML_STATUS_FAILED_PRECONDITION,
                      "c backend: the device slots wait at collectives that can never complete "
                      "(%s). Every member of a group must run the same collectives in the same "
                      "order (XLA would hang here)",
                      t.buf));
}

// Checks for a round that can never complete: a member of |round| that already finished, or
// every unfinished slot waiting. Called with the mutex held.
static void cmlc_rv_check_stuck(cmlc_rendezvous_t* r, const cmlc_round_t* round) {
  if (__atomic_load_n(&r->failed, __ATOMIC_RELAXED)) return;
  if (round && round->arrived < round->size) {
    for (int32_t k = 0; k < round->size; ++k) {
      const int32_t m = cmlc_round_member(round, k);
      if (r->done[m]) {
        cmlc_rv_fail_unreachable(r, round, m);
        return;
      }
    }
  }
  if (r->waiting_count > 0 && r->waiting_count + r->done_count >= r->slots) {
    cmlc_rv_fail_deadlock(r);
  }
}

void cmlc_rendezvous_slot_done(cmlc_rendezvous_t* r, int32_t slot) {
  pthread_mutex_lock(&r->mutex);
  if (!r->done[slot]) {
    r->done[slot] = 1;
    ++r->done_count;
  }
  for (const cmlc_round_t* round = r->rounds; round; round = round->next) {
    if (__atomic_load_n(&r->failed, __ATOMIC_RELAXED)) break;
    bool member = false;
    for (int32_t k = 0; k < round->size; ++k) member |= cmlc_round_member(round, k) == slot;
    if (member) cmlc_rv_check_stuck(r, round);
  }
  cmlc_rv_check_stuck(r, NULL);
  pthread_mutex_unlock(&r->mutex);
}

//===--- rounds ---===//

// "slots 0, 3": the members of |round| that have not arrived.
static void cmlc_rv_append_missing(cmlc_rv_text_t* t, const cmlc_round_t* round) {
  int listed = 0;
  for (int32_t k = 0; k < round->size; ++k) {
    if (round->contributions[k]) continue;
    if (listed++ < 16) {
      cmlc_rv_append(t, "%s%d", listed > 1 ? ", " : "", (int)cmlc_round_member(round, k));
    }
  }
}

// Waits on the condition; with a deadline or a token, wakes up in time to check them. Returns a
// stop status (CANCELLED or DEADLINE_EXCEEDED) when the execution must stop. A stop is acted on
// CMLC_RV_GRACE_NS after it is first seen here (|*seen_ns|, 0 until then), so that a running
// slot, which sees it at its next poll, reports it first and names the op it was running; a
// waiting slot reports it only when the slots it waits for cannot (a long kernel).
static cml_status_t cmlc_rv_wait(cmlc_rendezvous_t* r, const cmlc_round_t* round,
                                 int64_t* seen_ns) {
  const cml_execute_control_t* c = r->control;
  if (!c || (!c->cancelled && !c->deadline_ns)) {
    pthread_cond_wait(&r->cond, &r->mutex);
    return CML_OK;
  }
  const int64_t now = cml_clock_monotonic_ns();
  const bool late = c->deadline_ns && now >= c->deadline_ns;
  const bool cancelled = c->cancelled && __atomic_load_n(c->cancelled, __ATOMIC_RELAXED);
  if ((late || cancelled) && *seen_ns == 0) *seen_ns = now;
  if ((late || cancelled) && now - *seen_ns >= CMLC_RV_GRACE_NS) {
    cmlc_rv_text_t t = {.used = 0};
    cmlc_rv_append_group(&t, round);
    cmlc_rv_append(&t, " for device slot(s) ");
    cmlc_rv_append_missing(&t, round);
    return cml_status_make(late ? CML_STATUS_DEADLINE_EXCEEDED : CML_STATUS_CANCELLED,
                           "c backend: execution %s while waiting at %s (run %u) of group %s",
                           late ? "stopped at its deadline" : "cancelled by its token",
                           cml_op_name(round->node->op), round->occurrence + 1, t.buf);
  }
  int64_t until = c->cancelled ? now + CMLC_RV_TOKEN_POLL_NS : INT64_MAX;
  if (c->deadline_ns && c->deadline_ns < until) until = c->deadline_ns;
  if (*seen_ns && *seen_ns + CMLC_RV_GRACE_NS < until) until = *seen_ns + CMLC_RV_GRACE_NS;
  if (until <= now) until = now + 1000;
  struct timespec ts = {.tv_sec = (time_t)(until / 1000000000),
                        .tv_nsec = (long)(until % 1000000000)};
  (void)pthread_cond_timedwait(&r->cond, &r->mutex, &ts);
  return CML_OK;
}

// Called with the mutex held: releases it and spins (pausing, then yielding the CPU to the
// slots it waits for) until |*counter| reaches |target|, the execution fails, or
// CMLC_RV_SPIN_NS pass; takes the mutex again. The caller then checks and sleeps as before.
static void cmlc_rv_spin(cmlc_rendezvous_t* r, const int32_t* counter, int32_t target) {
  pthread_mutex_unlock(&r->mutex);
  const int64_t start = cml_clock_monotonic_ns();
  for (unsigned spins = 1; __atomic_load_n(counter, __ATOMIC_ACQUIRE) < target &&
                           !__atomic_load_n(&r->failed, __ATOMIC_RELAXED);
       ++spins) {
    if (spins < 64) {
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
      continue;
    }
    sched_yield();
    if ((spins & 15) == 0 && cml_clock_monotonic_ns() - start > CMLC_RV_SPIN_NS) break;
  }
  pthread_mutex_lock(&r->mutex);
}

static cmlc_round_t* cmlc_rv_find_round(cmlc_rendezvous_t* r, const cml_ir_node_t* node,
                                        int32_t first, uint32_t occurrence) {
  for (cmlc_round_t* round = r->rounds; round; round = round->next) {
    if (round->node == node && round->first == first && round->occurrence == occurrence) {
      return round;
    }
  }
  return NULL;
}

cml_status_t cmlc_round_join(cmlc_rendezvous_t* r, const cml_ir_node_t* node, int32_t slot,
                             const int32_t* members, int32_t member_count, int32_t position,
                             const void* contribution, cmlc_round_t** out_round) {
  *out_round = NULL;
  const cmlc_executable_t* exe = r->exe;
  const uint32_t ni = (uint32_t)(node - exe->module->nodes);
  const uint32_t ci = exe->collective_index && ni < exe->module->node_count
                          ? exe->collective_index[ni]
                          : UINT32_MAX;
  if (ci == UINT32_MAX || slot < 0 || slot >= r->slots || member_count > r->slots || position < 0 ||
      position >= member_count) {
    return cml_status_make(CML_STATUS_INTERNAL,
                           "c backend: %s: bad rendezvous (slot %d, position %d of %d)",
                           cml_op_name(node->op), (int)slot, (int)position, (int)member_count);
  }
  pthread_mutex_lock(&r->mutex);
  if (__atomic_load_n(&r->failed, __ATOMIC_RELAXED)) {
    pthread_mutex_unlock(&r->mutex);
    return cmlc_rv_stopped(node);
  }
  const uint32_t occurrence = r->occurrences[(size_t)slot * exe->collective_count + ci]++;
  const int32_t first = members ? members[0] : 0;
  cmlc_round_t* round = cmlc_rv_find_round(r, node, first, occurrence);
  if (!round) {
    round = r->free_rounds;
    if (round) {
      r->free_rounds = round->next;
    } else {
      round = cml_allocator_malloc(r->alloc, cmlc_round_bytes(r->slots), CMLC_ALIGNMENT);
      if (!round) {
        cmlc_rv_fail_locked(r, slot,
                            cml_status_make(CML_STATUS_RESOURCE_EXHAUSTED,
                                            "c backend: %s: out of memory for a rendezvous",
                                            cml_op_name(node->op)));
        pthread_mutex_unlock(&r->mutex);
        return cmlc_rv_stopped(node);
      }
    }
    memset(round, 0, cmlc_round_bytes(r->slots));
    round->contributions = (const void**)(round + 1);
    round->node = node;
    round->first = first;
    round->occurrence = occurrence;
    round->size = member_count;
    round->members = members;
    round->next = r->rounds;
    r->rounds = round;
  }
  round->contributions[position] = contribution;
  if (__atomic_add_fetch(&round->arrived, 1, __ATOMIC_RELEASE) == round->size) {
    // Complete: the members waiting to arrive are no longer stuck.
    for (int32_t k = 0; k < round->size; ++k) {
      const int32_t m = cmlc_round_member(round, k);
      if (m != slot && r->waiting_round[m] == round) {
        r->waiting[m] = NULL;
        r->waiting_round[m] = NULL;
        --r->waiting_count;
      }
    }
    pthread_cond_broadcast(&r->cond);
    pthread_mutex_unlock(&r->mutex);
    *out_round = round;
    return CML_OK;
  }
  r->waiting[slot] = node;
  r->waiting_round[slot] = round;
  ++r->waiting_count;
  cmlc_rv_check_stuck(r, round);
  cmlc_rv_spin(r, &round->arrived, round->size);
  cml_status_t st = CML_OK;
  int64_t stop_seen_ns = 0;
  while (round->arrived < round->size && !__atomic_load_n(&r->failed, __ATOMIC_RELAXED)) {
    st = cmlc_rv_wait(r, round, &stop_seen_ns);
    if (st != CML_OK) {
      cmlc_rv_fail_locked(r, slot, st);
      break;
    }
  }
  if (round->arrived == round->size) {
    // The completing member already took this slot off the waiting list.
    pthread_mutex_unlock(&r->mutex);
    *out_round = round;
    return CML_OK;
  }
  // Stopped: withdraw (the round is never completed now; destroy frees it).
  round->contributions[position] = NULL;
  __atomic_sub_fetch(&round->arrived, 1, __ATOMIC_RELAXED);
  r->waiting[slot] = NULL;
  r->waiting_round[slot] = NULL;
  --r->waiting_count;
  pthread_mutex_unlock(&r->mutex);
  return cmlc_rv_stopped(node);
}

const void* cmlc_round_contribution(const cmlc_round_t* round, int32_t position) {
  return round->contributions[position];
}

void cmlc_round_finish(cmlc_rendezvous_t* r, cmlc_round_t* round) {
  pthread_mutex_lock(&r->mutex);
  if (__atomic_add_fetch(&round->finished, 1, __ATOMIC_RELEASE) == round->size) {
    pthread_cond_broadcast(&r->cond);
  } else {
    cmlc_rv_spin(r, &round->finished, round->size);
    while (round->finished < round->size) pthread_cond_wait(&r->cond, &r->mutex);
  }
  if (++round->left == round->size) {
    for (cmlc_round_t** p = &r->rounds; *p; p = &(*p)->next) {
      if (*p == round) {
        *p = round->next;
        break;
      }
    }
    round->next = r->free_rounds;
    r->free_rounds = round;
  }
  pthread_mutex_unlock(&r->mutex);
}
