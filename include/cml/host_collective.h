// SPDX-License-Identifier: Apache-2.0
// cml/host_collective.h: host-staged collectives between executions, across the devices of this
// process and across the processes of an MPI job.
//
// Backends whose executables cannot reach other processes (XLA's CPU plugin refuses multi-node
// options: every process is its own client) combine values between executions instead: the
// per-device buffers are copied to the host, reduced over this process's devices, reduced across
// processes with MPI (the library's MPI layer; the job is launched with mpirun), and the result
// is uploaded to every device again. This is a module-boundary collective, e.g. the gradient
// AllReduce of data-parallel training between a "gradients" and an "apply" executable. It costs
// a device-to-host and a host-to-device copy per buffer plus the MPI transfer, so collectives
// inside one process are better left in the program (cml_op_all_reduce).
//
// Example (the gradients of 2 local devices, 5 values each, summed over every process):
//
//   cml_buffer_t* grads[2 * 5];            // device-major, as cml_executable_execute returns
//   cml_buffer_t* summed[2 * 5];
//   CML_RETURN_IF_ERROR(cml_host_all_reduce(grads, 2, 5, CML_HOST_REDUCE_SUM, true, summed));
//
// For the xla backend this is the way across processes with plugins that have no multi-node
// mode (the CPU plugin refuses "xla:cpu,distributed=mpi" with UNIMPLEMENTED). Plugins that have
// one (XLA's CUDA plugin) can instead form one PJRT client over every process with
// "xla:<plugin>,distributed=mpi" (docs/distributed.md, "XLA across processes"), whose
// collectives then run inside the program.
//
// Thread-safety: thread-safe; calls that cross processes must be made in the same order on
// every process (the MPI contract).
#ifndef CML_HOST_COLLECTIVE_H_
#define CML_HOST_COLLECTIVE_H_

#include "cml/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum cml_host_reduce_t {
  CML_HOST_REDUCE_SUM = 0,   // the sum over every device of every process
  CML_HOST_REDUCE_MEAN = 1,  // the sum divided by the number of devices (float dtypes only)
  CML_HOST_REDUCE_COUNT
} cml_host_reduce_t;

// This process's rank and the number of processes of the MPI job (initializing the library's
// MPI layer when the library was built with MPI and the process was started by an MPI launcher;
// 0 and 1 otherwise). Never fails: errors of the MPI layer give 0 and 1.
CML_API void cml_host_process_info(int* out_rank, int* out_count);

// Reduces |value_count| values held on |device_count| devices: |buffers| is device-major
// (value v of device d at buffers[d * value_count + v]); every device's value v has the same
// shape. Writes the result of value v for device d, a new buffer on the device of
// buffers[d * value_count + v], to out_buffers[d * value_count + v] (the caller owns them; the
// inputs are not changed). Reduction order: this process's devices in order, then the processes
// in rank order, in float32 for Float16/BFloat16 (rounded once), float64 for Float64, int64 for
// integer dtypes (Int32, Int64: wrapping). With |across_processes| every process of the MPI job
// must call it with the same value count, shapes and dtypes (the MPI contract) and the same
// device count (MEAN divides by device_count x process count); without, only |buffers| are
// reduced. Returns INVALID_ARGUMENT for NULL or mismatched buffers (naming the value, device,
// shapes and dtypes), UNIMPLEMENTED for another dtype or MEAN of integers, FAILED_PRECONDITION
// when |across_processes| is asked of a library built without MPI (saying how to enable it) or
// when a peer failed, DEADLINE_EXCEEDED when a peer stops answering; the errors of
// cml_buffer_copy_to_host / cml_buffer_from_host. On error no output is set.
CML_API CML_MUST_USE cml_status_t cml_host_all_reduce(cml_buffer_t* const* buffers,
                                                      size_t device_count, size_t value_count,
                                                      cml_host_reduce_t op, bool across_processes,
                                                      cml_buffer_t** out_buffers);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // CML_HOST_COLLECTIVE_H_
