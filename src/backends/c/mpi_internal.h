// SPDX-License-Identifier: Apache-2.0
// src/backends/c/mpi_internal.h: the c backend's multi-process mode ("c:distributed=mpi"):
// setup and agreement (mpi_backend.c) and the collectives across processes
// (mpi_collective.c), on the internal MPI layer (src/distributed/mpi_comm.h).
//
// Device space: process p hosts global devices p * devices .. (p + 1) * devices - 1. An SPMD
// execution keeps the global device slots; each process runs the slots of its own devices and
// leaves the others' inputs and outputs NULL. Every collective of such an execution is run by
// one thread per process (the lowest local slot) for all local slots: groups inside the process
// are combined in memory, groups across processes over MPI, one group at a time in group order,
// so that every pair of processes issues its MPI operations in the same order.
//
// Thread-safety: as the engine (engine_internal.h).
#ifndef CML_BACKENDS_C_MPI_INTERNAL_H_
#define CML_BACKENDS_C_MPI_INTERNAL_H_

#include "backends/c/engine_internal.h"

#ifdef __cplusplus
extern "C" {
#endif

// Validates |distributed| ("", "none" or "mpi") and, for "mpi", initializes MPI, fills
// options->process_index / process_count and checks that every process has the same devices,
// reference and fusion options (FAILED_PRECONDITION on every process otherwise). Without MPI
// in the build: FAILED_PRECONDITION saying how to enable it.
CML_MUST_USE cml_status_t cmlc_mpi_setup(const char* distributed, cmlc_options_t* options);

// The process_info vtable slot.
void cmlc_mpi_process_info(const cml_backend_t* backend, cml_process_info_t* out);

// The process that hosts global |device|.
int cmlc_mpi_device_process(const cmlc_options_t* options, int device);

// FAILED_PRECONDITION naming the device and its process when |device| belongs to another
// process (|what| names the operation).
CML_MUST_USE cml_status_t cmlc_mpi_check_local(const cmlc_backend_t* backend, int device,
                                               const char* what);

// At compile: every process must compile the same multi-device module (checked by a
// fingerprint, stored in |out_fingerprint| for the executions' collective stamps;
// FAILED_PRECONDITION on every process otherwise). OK at once (fingerprint 0) for
// single-device modules and single-process backends.
CML_MUST_USE cml_status_t cmlc_mpi_agree_module(const cmlc_backend_t* backend,
                                                const cml_module_t* module,
                                                uint64_t* out_fingerprint);

// After a failed multi-process execution: tells the other processes (their collectives stop).
void cmlc_mpi_execution_failed(const cmlc_backend_t* backend, cml_status_t status);

// (cmlc_mpi_collective_lookup, the collectives' entry, is declared in cmlc.h.)

#ifdef __cplusplus
}
#endif

#endif  // CML_BACKENDS_C_MPI_INTERNAL_H_
