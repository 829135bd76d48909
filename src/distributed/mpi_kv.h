// SPDX-License-Identifier: Apache-2.0
// src/distributed/mpi_kv.h: a key-value store shared by every process of an MPI job, served
// over MPI: the store behind PJRT's distributed client-create options (the kv_get / kv_put /
// kv_try_get callbacks a multi-node plugin such as CUDA uses to exchange its topology and
// communicator ids). Symbol prefix: cml__mpi_kv_.
//
// Design: process 0 owns the map. A service thread on process 0 answers the other processes'
// requests (put, get, try-get), each sent to process 0 as one message on the store's private
// duplicate of MPI_COMM_WORLD and answered on a reply tag of the requesting call, so any number
// of threads of a process may wait at once. Process 0's own calls use the map directly. A get of
// a key that is not there yet waits until some process puts it (the service thread answers the
// waiting process at once when the put arrives) or until its timeout, then DEADLINE_EXCEEDED
// naming the key; nothing waits without a limit:
// - a get waits at most min(its timeout, cml__mpi_timeout_ms()) (CML_MPI_TIMEOUT_MS);
// - a process other than 0 gives up on process 0 after that plus cml__mpi_timeout_ms() more
//   (process 0 died or hangs): DEADLINE_EXCEEDED saying so;
// - destroying the store on process 0 serves the others until each has destroyed its store too
//   (or cml__mpi_timeout_ms() passes without news from them).
// A failure the MPI layer saw (cml__mpi_failure: a peer failed) ends every wait at once with it.
//
// Keys and values are byte strings (up to CML__MPI_KV_MAX_BYTES together). A put replaces the
// key's value. Every store has its own namespace (its own communicator): two stores never see
// each other's keys.
//
// Lifetime: create and destroy are collective: every process calls them for each store, in the
// same order (creation duplicates MPI_COMM_WORLD after a barrier with the MPI layer's timeout).
// Stores still alive at exit are stopped before the MPI layer finalizes MPI; destroy them before
// calling MPI_Finalize yourself.
//
// Without MPI in the build, create returns FAILED_PRECONDITION saying how to enable it.
//
// Thread-safety: put/get/try_get are thread-safe (MPI_THREAD_MULTIPLE, which the MPI layer
// requires); create and destroy are not (one thread, collectively).
#ifndef CML_DISTRIBUTED_MPI_KV_H_
#define CML_DISTRIBUTED_MPI_KV_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cml/base.h"

#ifdef __cplusplus
extern "C" {
#endif

// The most bytes of key plus value in one put.
#define CML__MPI_KV_MAX_BYTES ((size_t)1 << 28)

typedef struct cml__mpi_kv_t cml__mpi_kv_t;

// Creates a store (collective). |what| names it in messages ("PJRT key-value store"). Returns
// DEADLINE_EXCEEDED when some process does not arrive within the MPI layer's timeout.
CML_MUST_USE cml_status_t cml__mpi_kv_create(const char* what, cml__mpi_kv_t** out_kv);

// Stores |value| (|value_size| bytes) under |key| (|key_size| bytes, at least 1), replacing an
// earlier value. Returns when process 0 holds it: a get issued afterwards anywhere sees it.
CML_MUST_USE cml_status_t cml__mpi_kv_put(cml__mpi_kv_t* kv, const void* key, size_t key_size,
                                          const void* value, size_t value_size);

// Gets |key|'s value, waiting until it is put or |timeout_ms| passes (<= 0: the MPI layer's
// timeout; never more than it). On success *|out_value| is a malloc'd copy (the caller frees it;
// never NULL, one extra NUL byte after the value) of *|out_size| bytes. DEADLINE_EXCEEDED when
// the key did not come in time.
CML_MUST_USE cml_status_t cml__mpi_kv_get(cml__mpi_kv_t* kv, const void* key, size_t key_size,
                                          int64_t timeout_ms, char** out_value, size_t* out_size);

// Like cml__mpi_kv_get without waiting: NOT_FOUND when the key is not there now.
CML_MUST_USE cml_status_t cml__mpi_kv_try_get(cml__mpi_kv_t* kv, const void* key, size_t key_size,
                                              char** out_value, size_t* out_size);

// This process's rank and the process count of the store.
int cml__mpi_kv_rank(const cml__mpi_kv_t* kv);
int cml__mpi_kv_size(const cml__mpi_kv_t* kv);

// Destroys the store (collective; NULL is fine). On process 0 it first serves the others until
// they destroyed theirs (bounded by the MPI layer's timeout).
void cml__mpi_kv_destroy(cml__mpi_kv_t* kv);

#ifdef __cplusplus
}
#endif

#endif  // CML_DISTRIBUTED_MPI_KV_H_
