// SPDX-License-Identifier: Apache-2.0
// src/distributed/mpi_comm.h: the internal MPI layer: process rank and count, host-memory
// collectives between processes (AllReduce, ReduceScatter, AllGather, AllToAll, Broadcast, point
// to point exchanges), barriers, configuration agreement and failure propagation. Symbol
// prefix: cml__mpi_.
//
// Built with MPI (CMake CML_WITH_MPI, CML_HAVE_MPI=1) it drives Open MPI (or any MPI 3); without
// it every call that needs MPI returns FAILED_PRECONDITION saying how to enable it.
//
// Processes and groups: a group lists world ranks in group order (NULL: every process in rank
// order). Every member of a group must call the same operations on it in the same order, with
// the same sizes (the MPI contract). The message tag carries the operation kind and the calling
// thread's collective stamp (cml__mpi_set_stamp), so two different operations never exchange
// data: a wait that finds a peer's message of another kind or stamp fails with
// FAILED_PRECONDITION on every process (a mismatch without such a message, a peer that does
// nothing, waits until the timeout).
//
// No wait is unbounded: every wait polls its requests (MPI_Test) together with the failure
// notices of other processes and a deadline (cml__mpi_set_timeout_ms, default 30 s). A process
// that fails calls cml__mpi_fail: every other process's current or next operation returns
// ABORTED-like FAILED_PRECONDITION naming the failed rank and its message; a dead peer makes the
// waits return DEADLINE_EXCEEDED after the timeout. After a failure every later operation
// fails at once (the transport is left in an unknown state). An operation that fails with
// messages in flight cancels them and waits until MPI is done with each (a matched receive
// still lands, a send still reads its buffer; at most 5 s, or the timeout if shorter, without
// one completing) before it returns, so the caller may free its buffers; only transfers to a
// dead or stopped peer that never completes may be left, and they never touch memory again
// unless that peer comes back.
//
// Sizes are int64_t: messages are split into pieces of at most 2^30 bytes (less with the
// environment variable CML_MPI_MAX_MESSAGE_BYTES, which tests use), so there is no 2^31-element
// limit. Reductions follow the c backend's in-process collectives exactly: the
// members' values are combined in group order (each member reduces its own segment), integers
// wrap, float max/min propagate NaN, Float16/BFloat16 are combined in f32 and rounded once,
// complex numbers take sum and product.
//
// Thread-safety: thread-safe. MPI is initialized with MPI_THREAD_MULTIPLE when this layer
// initializes it; operations are serialized per channel (one at a time on each channel, and
// one at a time on the layer's own communicator).
#ifndef CML_DISTRIBUTED_MPI_COMM_H_
#define CML_DISTRIBUTED_MPI_COMM_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cml/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

// The largest message the layer sends in one MPI call (bytes).
#define CML__MPI_MAX_MESSAGE ((int64_t)1 << 30)

// Whether the library was built with MPI.
bool cml__mpi_built(void);

// Initializes MPI once per process (later calls return the first result): MPI_Init_thread with
// MPI_THREAD_MULTIPLE when MPI is not initialized yet (then MPI_Finalize runs at exit unless a
// wait timed out: a dead peer would make it hang), else checks that the user's initialization
// provides MPI_THREAD_MULTIPLE (FAILED_PRECONDITION otherwise); MPI that the user initialized is
// never finalized here. Without MPI: FAILED_PRECONDITION saying how to enable it. Reads
// CML_MPI_TIMEOUT_MS and CML_MPI_MAX_MESSAGE_BYTES once.
cml_status_t cml__mpi_init(void);
// This process's rank and the process count (0 and 1 before a successful cml__mpi_init).
int cml__mpi_rank(void);
int cml__mpi_size(void);

// The longest wait of one operation without progress from its peers, in milliseconds (> 0).
void cml__mpi_set_timeout_ms(int64_t ms);
int64_t cml__mpi_timeout_ms(void);

// A group of processes: |ranks| (|count| world ranks, distinct) in group order. A NULL group
// pointer means every process in rank order. Lent for the call.
typedef struct cml__mpi_group_t {
  const int* ranks;
  int count;
} cml__mpi_group_t;

// out = in[member 0] op in[member 1] op ... (|count| elements of |dtype|). |in| and |out| may
// be the same buffer. UNIMPLEMENTED for a dtype/op pair without a reduction (complex max/min,
// bool, sub-byte and 8-bit float dtypes).
cml_status_t cml__mpi_all_reduce(const cml__mpi_group_t* group, const void* in, void* out,
                                 int64_t count, cml_dtype_t dtype, cml_reduce_type_t type);
// |in| holds n blocks of |count| elements (n = group size); the member at position p receives
// the reduction of everyone's block p into |out| (|count| elements).
cml_status_t cml__mpi_reduce_scatter(const cml__mpi_group_t* group, const void* in, void* out,
                                     int64_t count, cml_dtype_t dtype, cml_reduce_type_t type);
// |out| (n * |bytes|) receives every member's |in| (|bytes|) in group order.
cml_status_t cml__mpi_all_gather(const cml__mpi_group_t* group, const void* in, void* out,
                                 int64_t bytes);
// Like cml__mpi_all_gather with member p contributing |bytes_per_member[p]| bytes (the same
// array on every member); |out| receives them packed in group order.
cml_status_t cml__mpi_all_gather_v(const cml__mpi_group_t* group, const void* in, void* out,
                                   const int64_t* bytes_per_member);
// Block k (|bytes| each, n blocks) of |in| goes to member k; block k of |out| comes from member
// k.
cml_status_t cml__mpi_all_to_all(const cml__mpi_group_t* group, const void* in, void* out,
                                 int64_t bytes);
// |data| (|bytes|) of the member at |root_position| is copied into every member's |data|.
cml_status_t cml__mpi_broadcast(const cml__mpi_group_t* group, int root_position, void* data,
                                int64_t bytes);
// Waits until every member arrived.
cml_status_t cml__mpi_barrier(const cml__mpi_group_t* group);

// A channel: a communicator of its own, so that the operations of different channels (of two
// backends) run at the same time on different threads, and a peer's message on one channel is
// never taken for a divergence on another. Operations on one channel are serialized.
// cml__mpi_channel_create is collective (every process creates its channels in the same order,
// e.g. at backend creation); destroy is local. Without MPI: FAILED_PRECONDITION / nothing.
typedef struct cml__mpi_channel_t cml__mpi_channel_t;
cml_status_t cml__mpi_channel_create(cml__mpi_channel_t** out);
void cml__mpi_channel_destroy(cml__mpi_channel_t* channel);

// Sets the calling thread's collective stamp and channel for the operations it runs next: a
// stamp every process computes alike for the same collective of the same execution (0: outside
// executions, the default), |label|, how messages name it ("AllReduce (node 17, ...)"), and the
// channel (NULL: the layer's own communicator). The stamp is reduced to the tag space of the
// MPI library (at least 11 bits; 27 with Open MPI), so two different collectives share a stamp
// by chance with probability 2^-bits. Without MPI: does nothing.
void cml__mpi_set_stamp(uint64_t stamp, const char* label, cml__mpi_channel_t* channel);

// Whether cml__mpi_all_reduce supports |dtype| with |type| (also without MPI).
bool cml__mpi_can_reduce(cml_dtype_t dtype, cml_reduce_type_t type);
// Local, no MPI (works without it): out = sources[0] op sources[1] op ... in that order, |count|
// elements each, with the semantics of cml__mpi_all_reduce (Float16/BFloat16 in f32, rounded
// once). |out| may be one of the sources. Does nothing for an unsupported dtype/op pair.
void cml__mpi_reduce_local(const void* const* sources, int source_count, void* out, int64_t count,
                           cml_dtype_t dtype, cml_reduce_type_t type);

// One transfer of a point-to-point exchange: |bytes| at |data| to or from world rank |rank|.
typedef struct cml__mpi_transfer_t {
  int rank;
  void* data;  // read for sends, written for receives
  int64_t bytes;
} cml__mpi_transfer_t;
// Posts every send and receive at once and waits for all of them (e.g. CollectivePermute: send
// to the target, receive from the source). Transfers between the same two ranks are matched in
// the order given. |what| names the operation in errors.
cml_status_t cml__mpi_exchange(const cml__mpi_transfer_t* sends, int send_count,
                               const cml__mpi_transfer_t* receives, int receive_count,
                               const char* what);

// Every process passes its |bytes| (at most 4096) describing its configuration (|what|: e.g.
// "c:distributed=mpi configuration"); FAILED_PRECONDITION on every process when they differ,
// naming the ranks that differ from rank 0. Collective over every process.
cml_status_t cml__mpi_agree(const void* data, size_t bytes, const char* what);

// Frees |p| (malloc'ed), a buffer the caller lent to an operation of this layer that failed
// or succeeded: when a failed operation had to leave requests in flight (a peer died in the
// middle of a transfer), MPI may still use its buffers, and |p| is kept allocated instead.
// Without MPI: free(p).
void cml__mpi_free_lent(void* p);

// Tells every other process that this one failed with |message| (the first call wins; later
// calls do nothing). Never blocks; after it every operation of this process fails at once.
void cml__mpi_fail(const char* message);
// OK, or the failure this process saw (its own or a peer's), as a new status.
cml_status_t cml__mpi_failure(void);

#ifdef __cplusplus
}
#endif

#endif  // CML_DISTRIBUTED_MPI_COMM_H_
