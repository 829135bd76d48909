// SPDX-License-Identifier: Apache-2.0
// src/backends/xla/xla_flags.h: checking XLA_FLAGS in a child process, so that flags the plugin
// rejects become a status instead of ending the process. Internal (cml__xla_ prefix).
//
// XLA parses XLA_FLAGS itself, once per process, the first time a client is created (checked on
// the CPU plugin: dlopen, GetPjrtApi and PJRT_Plugin_Initialize do not parse them;
// PJRT_Client_Create does). On `--help`, an unknown flag ("Unknown flag in XLA_FLAGS: ...") or a
// malformed value (`--xla_cpu_enable_fast_math=maybe`) it prints to stderr and exits the whole
// process with code 1. cml must never die because of bad input, so before the backend creates
// its client, cml__xla_check_flags forks a child that creates a client (with the same options)
// and compiles a tiny program, with the child's stdout and stderr on a pipe. The child reports
// success on a second pipe just before _exit(0); anything else (a non-zero exit, a signal, an
// exit without the report) means the plugin rejected the flags, and the captured text becomes
// the status message.
//
// Example (the xla backend's create path, between PJRT_Plugin_Initialize and client creation):
//
//   CML_RETURN_IF_ERROR(cml__xla_check_flags(plugin, getenv("XLA_FLAGS"), options, count));
//   CML_RETURN_IF_ERROR(cml__xla_client_create(plugin, options, count, &client));
//
// NOTE: the plugin reads XLA_FLAGS only once per process, at its first client. After a check
// passes (or XLA_FLAGS is blank), the caller creates that client, so the plugin is marked as
// having read its flags: later checks for it return CML_OK at once, whatever XLA_FLAGS says then,
// because the plugin will ignore the new value. This is also what keeps the check safe: once a
// plugin has a client it owns threads and locks, and a forked child that creates another client
// can abort on inherited lock state (seen with the CPU plugin: absl "Mutex::Fer with pending
// CondVar queueing"), so no child is ever forked for a plugin that has read its flags.
//
// WARNING: the child is a fork of a process that may have threads (the application's, other
// backends'). It does only what the check needs (client creation and one compile with the
// plugin, which has no threads yet) and ends with _exit; if it deadlocks on a lock another
// thread held at fork time, the timeout kills it.
//
// Thread-safety: thread-safe; checks run one at a time. Rejections are cached per (plugin path,
// XLA_FLAGS value) for the life of the process; timeouts are not cached.
#ifndef CML_BACKENDS_XLA_XLA_FLAGS_H_
#define CML_BACKENDS_XLA_XLA_FLAGS_H_

#include <stdbool.h>
#include <stddef.h>

#include "backends/xla/pjrt/pjrt.h"
#include "cml/base.h"

#ifdef __cplusplus
extern "C" {
#endif

// How long the check waits for the child before killing it.
#define CML_XLA_FLAGS_TIMEOUT_MS 60000
// The most output of the child kept in the message (XLA's whole --help list fits).
#define CML_XLA_FLAGS_MAX_OUTPUT (64 * 1024)

// Checks that the plugin accepts |xla_flags|, the value of XLA_FLAGS that the caller read from
// the environment when the backend was created (the plugin reads the same environment). NULL or
// blank: CML_OK at once, no child. |options| (|option_count| of them) are the options the
// backend will create its client with, so the child does what the backend is about to do.
// Returns CML_OK when the child created a client and compiled, or when client creation failed
// with an ordinary error (the backend then reports that error itself; the plugin is not marked,
// as it may not have read the flags), or when the plugin has read its flags already;
// INVALID_ARGUMENT
// "XLA_FLAGS rejected by the plugin: <what the plugin printed>" when the child died;
// UNAVAILABLE when it did not finish within CML_XLA_FLAGS_TIMEOUT_MS; INTERNAL when no child
// could be started (pipe/fork errors).
CML_MUST_USE cml_status_t cml__xla_check_flags(const cml__xla_plugin_t* plugin,
                                               const char* xla_flags,
                                               const cml__xla_option_t* options,
                                               size_t option_count);

// The mechanism behind cml__xla_check_flags, without the cache: runs |child_fn|(|arg|) in a
// forked child whose stdout and stderr go to a pipe (stdin: /dev/null), waiting at most
// |timeout_ms|. When |child_fn| returns, the child reports its result on a second pipe and calls
// _exit(0); |out_consumed| (may be NULL) receives that result (true: the flags were read). Any
// other end of the child is a rejection. |xla_flags| and |plugin_path| only appear in the
// messages. Returns as cml__xla_check_flags does. Exposed for tests, which pass child functions
// that print and exit, hang, get killed, or return.
CML_MUST_USE cml_status_t cml__xla_flags_probe(bool (*child_fn)(void* arg), void* arg,
                                               int timeout_ms, const char* xla_flags,
                                               const char* plugin_path, bool* out_consumed);

// How many children cml__xla_check_flags has started in this process (tests check the cache).
int cml__xla_flags_probe_count(void);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // CML_BACKENDS_XLA_XLA_FLAGS_H_
