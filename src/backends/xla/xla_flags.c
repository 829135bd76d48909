// SPDX-License-Identifier: Apache-2.0
// src/backends/xla/xla_flags.c: XLA_FLAGS checked in a forked child, so that flags the plugin
// rejects (it prints and exits the process) become an INVALID_ARGUMENT status.
#include "backends/xla/xla_flags.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "backends/xla/xla_internal.h"

//===--- the child ---===//

typedef struct cml_xla_flags_child_args_t {
  const cml__xla_plugin_t* plugin;
  const cml__xla_option_t* options;
  size_t option_count;
} cml_xla_flags_child_args_t;

// Does what the backend is about to do: create a client (XLA parses XLA_FLAGS there), then
// compile and run a small program whose results exercise what some flags break: a result
// computed twice into two outputs, a parameter returned as is, and a constant result (with
// --xla_disable_all_hlo_passes=true the CPU plugin check-fails on the duplicate output and
// crashes on the constant one: no copy insertion). Returns false when client creation failed
// with an ordinary error (the flags may not have been read). Wrong results end the child with a
// message and code 3 (a rejection). Other ordinary errors return true: the backend reports them
// itself when it gets there. Nothing is freed: the child ends with _exit right after.
static bool cml_xla_flags_child(void* arg) {
  static const char kProgram[] =
      "module @cml_xla_flags_check {\n"
      "  func.func public @main(%a: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>, "
      "tensor<2xf32>, tensor<2xf32>) {\n"
      "    %b = \"stablehlo.add\"(%a, %a) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>\n"
      "    %c = stablehlo.constant dense<[1.5, -2.0]> : tensor<2xf32>\n"
      "    \"func.return\"(%b, %a, %c, %b) : (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, "
      "tensor<2xf32>) -> ()\n"
      "  }\n"
      "}\n";
  const cml_xla_flags_child_args_t* args = arg;
  cml__xla_client_t* client = NULL;
  cml_status_t st =
      cml__xla_client_create(args->plugin, args->options, args->option_count, &client);
  if (st != CML_OK) return false;  // an ordinary error: the backend will report it itself
  uint8_t options[128];
  size_t size = 0;
  cml__xla_compile_config_t cc = {.portable = true, .num_replicas = 1, .num_partitions = 1};
  st = cml__xla_compile_options_encode(&cc, options, sizeof options, &size);
  cml_pjrt_loaded_executable_t* exe = NULL;
  if (st == CML_OK) {
    st = cml__xla_compile(client, kProgram, sizeof kProgram - 1, options, size, &exe);
  }
  if (st != CML_OK || client->device_count < 1) return true;
  const float input[2] = {0.5f, 3.0f};
  const float want[4][2] = {{1.0f, 6.0f}, {0.5f, 3.0f}, {1.5f, -2.0f}, {1.0f, 6.0f}};
  cml_shape_t shape = cml_shape_make(CML_DTYPE_F32, 1, (const int64_t[]){2});
  cml_pjrt_buffer_t* in = NULL;
  st = cml__xla_buffer_from_host(client, 0, &shape, input, &in);
  cml_pjrt_buffer_t* outs[4] = {NULL, NULL, NULL, NULL};
  if (st == CML_OK) st = cml__xla_execute(client, exe, 0, &in, 1, NULL, 0, outs, 4);
  for (int i = 0; i < 4 && st == CML_OK; ++i) {
    float got[2] = {0, 0};
    st = cml__xla_buffer_to_host(client, outs[i], &shape, got, sizeof got);
    if (st == CML_OK && (got[0] != want[i][0] || got[1] != want[i][1])) {
      printf("the check program computed wrong results: output %d is [%g, %g], expected [%g, %g]\n",
             i, (double)got[0], (double)got[1], (double)want[i][0], (double)want[i][1]);
      fflush(stdout);
      _exit(3);
    }
  }
  return true;
}

//===--- the parent ---===//

static void cml_xla_flags_close(int* fd) {
  if (*fd >= 0) close(*fd);
  *fd = -1;
}

// True for a glog/absl line prefix such as "F0000 00:00:1796214885.754881   21152 file.cc:220] ";
// writes the prefix length to |out_length|.
static bool cml_xla_flags_log_prefix(const char* line, size_t length, size_t* out_length) {
  if (length < 8 || !strchr("IWEF", line[0])) return false;
  for (int i = 1; i <= 4; ++i) {
    if (line[i] < '0' || line[i] > '9') return false;
  }
  if (line[5] != ' ') return false;
  size_t limit = length < 160 ? length : 160;
  for (size_t i = 6; i + 1 < limit; ++i) {
    if (line[i] == ']' && line[i + 1] == ' ') {
      *out_length = i + 2;
      return true;
    }
  }
  return false;
}

// Rewrites |text| in place: drops absl's "log messages before InitializeLog" notice, glog's
// stack traces and the glog prefixes, and trims surrounding white space.
static void cml_xla_flags_clean(char* text) {
  static const char kNotice[] = "WARNING: All log messages before absl::InitializeLog()";
  static const char kStackTitle[] = "*** Check failure stack trace: ***";
  char* out = text;
  const char* p = text;
  while (*p) {
    const char* end = strchr(p, '\n');
    size_t length = end ? (size_t)(end - p) : strlen(p);
    size_t skip = 0;
    // Also dropped: glog's stack trace after a failed CHECK (addresses only, no symbols).
    bool drop = strncmp(p, kNotice, sizeof kNotice - 1) == 0 ||
                strncmp(p, kStackTitle, sizeof kStackTitle - 1) == 0 ||
                (length > 6 && strncmp(p, "    @ ", 6) == 0);
    if (!drop) {
      if (!cml_xla_flags_log_prefix(p, length, &skip)) skip = 0;
      memmove(out, p + skip, length - skip);
      out += length - skip;
      if (end) *out++ = '\n';
    }
    p += length + (end ? 1 : 0);
  }
  *out = '\0';
  while (out > text && (out[-1] == '\n' || out[-1] == ' ' || out[-1] == '\t' || out[-1] == '\r')) {
    *--out = '\0';
  }
  size_t lead = strspn(text, " \t\r\n");
  if (lead) memmove(text, text + lead, strlen(text + lead) + 1);
}

// In the child: the output pipe becomes stdout and stderr, stdin reads /dev/null; runs |fn|
// and reports on |done_fd|. Only async-signal-safe calls besides |fn| itself.
static void cml_xla_flags_child_main(bool (*fn)(void*), void* arg, int out_fd, int done_fd) {
  int null_fd = open("/dev/null", O_RDONLY);
  if (null_fd >= 0) {
    dup2(null_fd, 0);
    if (null_fd != 0) close(null_fd);
  }
  dup2(out_fd, 1);
  dup2(out_fd, 2);
  if (out_fd > 2) close(out_fd);
  const char* report = fn(arg) ? "k" : "e";
  ssize_t wrote;
  do {
    wrote = write(done_fd, report, 1);
  } while (wrote < 0 && errno == EINTR);
  _exit(0);
}

// Describes a wait status ("exited with code 1", "was killed by signal 6").
static void cml_xla_flags_describe(bool reaped, int status, char* out, size_t size) {
  if (!reaped) {
    snprintf(out, size, "ended (its exit status was not available)");
  } else if (WIFEXITED(status)) {
    snprintf(out, size, "exited with code %d", WEXITSTATUS(status));
  } else if (WIFSIGNALED(status)) {
    snprintf(out, size, "was killed by signal %d (%s)", WTERMSIG(status),
             strsignal(WTERMSIG(status)));
  } else {
    snprintf(out, size, "ended with wait status 0x%x", (unsigned)status);
  }
}

cml_status_t cml__xla_flags_probe(bool (*child_fn)(void* arg), void* arg, int timeout_ms,
                                  const char* xla_flags, const char* plugin_path,
                                  bool* out_consumed) {
  if (out_consumed) *out_consumed = false;
  if (!child_fn) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "xla: XLA_FLAGS check: no child function");
  }
  if (!xla_flags) xla_flags = "";
  if (!plugin_path) plugin_path = "(unknown)";
  char* text = malloc(CML_XLA_FLAGS_MAX_OUTPUT + 1);
  if (!text) return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
  int out_fds[2] = {-1, -1}, done_fds[2] = {-1, -1};
  if (pipe2(out_fds, O_CLOEXEC) != 0 || pipe2(done_fds, O_CLOEXEC) != 0) {
    int err = errno;
    cml_xla_flags_close(&out_fds[0]);
    cml_xla_flags_close(&out_fds[1]);
    free(text);
    return cml_status_make(cml__xla_errno_code(err), "xla: XLA_FLAGS check: pipe: %s",
                           strerror(err));
  }
  // A plugin that calls exit() in the child flushes the stdio buffers it inherited; flushing
  // them here first keeps buffered output from being written twice.
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    close(out_fds[0]);
    close(done_fds[0]);
    cml_xla_flags_child_main(child_fn, arg, out_fds[1], done_fds[1]);
  }
  int fork_errno = errno;
  cml_xla_flags_close(&out_fds[1]);
  cml_xla_flags_close(&done_fds[1]);
  if (pid < 0) {
    cml_xla_flags_close(&out_fds[0]);
    cml_xla_flags_close(&done_fds[0]);
    free(text);
    return cml_status_make(cml__xla_errno_code(fork_errno), "xla: XLA_FLAGS check: fork: %s",
                           strerror(fork_errno));
  }

  // Read the output until EOF and reap the child, both before the deadline.
  cml__xla_child_result_t result;
  cml__xla_child_wait(pid, out_fds[0], cml__xla_now_ms() + (timeout_ms > 0 ? timeout_ms : 0), text,
                      CML_XLA_FLAGS_MAX_OUTPUT, &result);
  out_fds[0] = -1;  // closed by cml__xla_child_wait
  const bool reaped = result.reaped, timed_out = !result.reaped, truncated = result.truncated;
  const size_t used = result.used;
  int status = result.status;
  if (timed_out) {
    kill(pid, SIGKILL);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
  // The child reports with one byte just before _exit(0) ('k': |child_fn| returned true, 'e':
  // false); the write end is closed now (child gone), so this read does not block.
  bool accepted = false;
  if (!timed_out) {
    struct pollfd pfd = {.fd = done_fds[0], .events = POLLIN};
    char byte = 0;
    if (poll(&pfd, 1, 0) > 0 && read(done_fds[0], &byte, 1) == 1 && (byte == 'k' || byte == 'e')) {
      accepted = true;
      if (out_consumed) *out_consumed = byte == 'k';
    }
  }
  cml_xla_flags_close(&out_fds[0]);
  cml_xla_flags_close(&done_fds[0]);
  text[used] = '\0';
  cml_xla_flags_clean(text);

  cml_status_t st = CML_OK;
  if (timed_out) {
    st = cml_status_make(CML_STATUS_UNAVAILABLE,
                         "xla: XLA_FLAGS check: the plugin %s did not create a client within %d "
                         "ms with XLA_FLAGS=\"%.1024s\" (the check process was killed)%s%s",
                         plugin_path, timeout_ms, xla_flags, text[0] ? "; its output: " : "", text);
  } else if (!accepted) {
    char how[128];
    cml_xla_flags_describe(reaped && status != -1, status, how, sizeof how);
    st = cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                         "XLA_FLAGS rejected by the plugin: %s%s\n(XLA_FLAGS=\"%.1024s\"; plugin "
                         "%s; the check process %s; it creates a client, then compiles and runs "
                         "a small program)",
                         text[0] ? text : "(it printed nothing)",
                         truncated ? "\n... (output truncated)" : "", xla_flags, plugin_path, how);
  }
  free(text);
  return st;
}

//===--- the cache ---===//

typedef struct cml_xla_flags_entry_t {
  struct cml_xla_flags_entry_t* next;
  char* plugin_path;
  char* xla_flags;
  char* message;  // the rejection
} cml_xla_flags_entry_t;

// A plugin that has read XLA_FLAGS (a client was created, or is about to be): it never reads
// them again, and it may own threads now, so no child may be forked to run it.
typedef struct cml_xla_flags_consumed_t {
  struct cml_xla_flags_consumed_t* next;
  const void* handle;
} cml_xla_flags_consumed_t;

static pthread_mutex_t cml_xla_flags_mutex = PTHREAD_MUTEX_INITIALIZER;
static cml_xla_flags_entry_t* cml_xla_flags_rejected;  // process lifetime, never freed
static cml_xla_flags_consumed_t* cml_xla_flags_consumed;
static int cml_xla_flags_probes;

// Only an unset or empty XLA_FLAGS means "no flags" to XLA: any other value that does not
// start with "--" (blanks alone included) is read as the name of a flags file, and a missing
// file ends the process, so such values go through the checked path.
static bool cml_xla_flags_blank(const char* text) { return !text || text[0] == '\0'; }

static void cml_xla_flags_remember_rejection(const char* plugin_path, const char* xla_flags,
                                             cml_status_t st) {
  cml_xla_flags_entry_t* e = calloc(1, sizeof *e);
  if (!e) return;
  e->plugin_path = strdup(plugin_path);
  e->xla_flags = strdup(xla_flags);
  e->message = strdup(cml_status_message(st));
  if (!e->plugin_path || !e->xla_flags || !e->message) {
    free(e->plugin_path);
    free(e->xla_flags);
    free(e->message);
    free(e);
    return;  // not cached: the next check runs the child again
  }
  e->next = cml_xla_flags_rejected;
  cml_xla_flags_rejected = e;
}

static void cml_xla_flags_mark_consumed(const cml__xla_plugin_t* plugin) {
  cml_xla_flags_consumed_t* c = calloc(1, sizeof *c);
  if (!c) return;  // the next check runs a child: slower, still correct before a client exists
  c->handle = plugin->handle;
  c->next = cml_xla_flags_consumed;
  cml_xla_flags_consumed = c;
}

cml_status_t cml__xla_check_flags(const cml__xla_plugin_t* plugin, const char* xla_flags,
                                  const cml__xla_option_t* options, size_t option_count) {
  if (!plugin || !plugin->path) {
    if (cml_xla_flags_blank(xla_flags)) return CML_OK;
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "xla: XLA_FLAGS check: no plugin");
  }
  // Held while the child runs, so concurrent creations start one child.
  pthread_mutex_lock(&cml_xla_flags_mutex);
  for (const cml_xla_flags_consumed_t* c = cml_xla_flags_consumed; c; c = c->next) {
    if (c->handle == plugin->handle) {
      pthread_mutex_unlock(&cml_xla_flags_mutex);
      return CML_OK;
    }
  }
  if (cml_xla_flags_blank(xla_flags)) {
    // The caller creates its client now, and the plugin reads the empty value.
    cml_xla_flags_mark_consumed(plugin);
    pthread_mutex_unlock(&cml_xla_flags_mutex);
    return CML_OK;
  }
  for (const cml_xla_flags_entry_t* e = cml_xla_flags_rejected; e; e = e->next) {
    if (strcmp(e->plugin_path, plugin->path) == 0 && strcmp(e->xla_flags, xla_flags) == 0) {
      cml_status_t st = cml_status_make(CML_STATUS_INVALID_ARGUMENT, "%s", e->message);
      pthread_mutex_unlock(&cml_xla_flags_mutex);
      return st;
    }
  }
  cml_xla_flags_child_args_t args = {plugin, options, option_count};
  ++cml_xla_flags_probes;
  bool consumed = false;
  cml_status_t st = cml__xla_flags_probe(cml_xla_flags_child, &args, CML_XLA_FLAGS_TIMEOUT_MS,
                                         xla_flags, plugin->path, &consumed);
  if (st == CML_OK && consumed) {
    cml_xla_flags_mark_consumed(plugin);
  } else if (cml_status_code(st) == CML_STATUS_INVALID_ARGUMENT) {
    if (strstr(xla_flags, "xla_disable_all_hlo_passes") ||
        strstr(xla_flags, "xla_disable_hlo_passes")) {
      cml_status_t noted = cml_status_make(
          CML_STATUS_INVALID_ARGUMENT,
          "%s\nnote: disabling HLO passes also disables the ones XLA needs to run programs "
          "correctly (copy insertion: a result returned twice or a constant result then crashes "
          "the process); the check program has such results",
          cml_status_message(st));
      cml_status_free(st);
      st = noted;
    }
    cml_xla_flags_remember_rejection(plugin->path, xla_flags, st);
  }
  pthread_mutex_unlock(&cml_xla_flags_mutex);
  return st;
}

int cml__xla_flags_probe_count(void) {
  pthread_mutex_lock(&cml_xla_flags_mutex);
  int n = cml_xla_flags_probes;
  pthread_mutex_unlock(&cml_xla_flags_mutex);
  return n;
}
