// SPDX-License-Identifier: Apache-2.0
// src/backends/xla/discovery.c: finding PJRT plugins, detecting accelerators, the CUDA data
// directory, and running helper programs (python3, nvidia-smi) without a shell.
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#if defined(__linux__)
#include <sys/prctl.h>
#endif
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/base_internal.h"
#include "backends/xla/xla_internal.h"

extern char** environ;

//===--- running programs ---===//

// A timeout in seconds from environment variable |name| (a positive number), else |fallback|.
static double cml_xla_env_seconds(const char* name, double fallback) {
  const char* text = getenv(name);
  if (!text || !*text) return fallback;
  char* end = NULL;
  double v = cml__strtod_c(text, &end);
  if (end == text || *end != '\0' || !(v > 0) || v > 1e7) return fallback;
  return v;
}

double cml__xla_query_timeout_s(void) {
  return cml_xla_env_seconds("CML_XLA_QUERY_TIMEOUT_S", CML_XLA_QUERY_TIMEOUT_DEFAULT_S);
}

double cml__xla_install_timeout_s(void) {
  return cml_xla_env_seconds("CML_XLA_INSTALL_TIMEOUT_S", CML_XLA_INSTALL_TIMEOUT_DEFAULT_S);
}

int64_t cml__xla_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

// "python3 -m pip download ..." for messages: the first arguments, each cut at its first line.
static void cml_xla_describe_argv(const char* const* argv, char* out, size_t size) {
  size_t used = 0;
  out[0] = '\0';
  for (size_t i = 0; argv[i] && i < 6 && used + 1 < size; ++i) {
    const char* a = argv[i];
    size_t n = strcspn(a, "\n");
    bool cut = a[n] != '\0' || n > 48;
    if (n > 48) n = 48;
    int w =
        snprintf(out + used, size - used, "%s%.*s%s", i ? " " : "", (int)n, a, cut ? "..." : "");
    if (w < 0) break;
    used += (size_t)w;
    if (used >= size) break;
  }
  if (argv[0] && argv[1] && argv[2] && argv[3] && argv[4] && argv[5] && argv[6] &&
      used + 5 < size) {
    snprintf(out + used, size - used, " ...");
  }
}

void cml__xla_child_wait(pid_t pid, int fd, int64_t deadline_ms, char* buf, size_t capacity,
                         cml__xla_child_result_t* out) {
  *out = (cml__xla_child_result_t){.reaped = false, .status = 0, .used = 0, .truncated = false};
  int64_t deadline = deadline_ms;
  for (;;) {
    if (!out->reaped) {
      pid_t got = waitpid(pid, &out->status, WNOHANG);
      if (got == pid) {
        out->reaped = true;
      } else if (got < 0 && errno != EINTR) {
        out->reaped = true;  // ECHILD: SIGCHLD ignored by the application, no status
        out->status = -1;
      }
      if (out->reaped) {
        // Something it started may still hold the pipe: read what is left, briefly.
        int64_t grace = cml__xla_now_ms() + 500;
        if (grace < deadline) deadline = grace;
      }
    }
    if (out->reaped && fd < 0) break;
    int64_t left = deadline - cml__xla_now_ms();
    if (left <= 0) break;
    if (fd < 0) {
      // No output to read (or it is closed), child not reaped yet: wait in small steps.
      struct timespec step = {0, 5 * 1000 * 1000};
      nanosleep(&step, NULL);
      continue;
    }
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    int ready = poll(&pfd, 1, (int)(left < 50 ? left : 50));
    if (ready < 0 && errno != EINTR) {
      close(fd);
      fd = -1;
      continue;
    }
    if (ready <= 0) continue;
    char scratch[4096];
    bool keep = out->used < capacity;
    ssize_t got =
        read(fd, keep ? buf + out->used : scratch, keep ? capacity - out->used : sizeof scratch);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      close(fd);
      fd = -1;
      continue;
    }
    if (keep) {
      out->used += (size_t)got;
    } else {
      out->truncated = true;
    }
  }
  if (fd >= 0) close(fd);
}

cml_status_code_t cml__xla_errno_code(int err) {
  bool exhausted = err == EMFILE || err == ENFILE || err == EAGAIN || err == ENOMEM;
  return exhausted ? CML_STATUS_RESOURCE_EXHAUSTED : CML_STATUS_INTERNAL;
}

// |name| resolved as execvp resolves it (a name with a '/' as it is, else the first executable
// regular file of that name in PATH, "/usr/local/bin:/usr/bin:/bin" without one), into |path|:
// 0, or an errno (ENOENT). Done before vfork, whose child only makes system calls.
static int cml_xla_find_program(const char* name, char* path, size_t size) {
  struct stat st;
  if (!name || !*name) return ENOENT;
  if (strchr(name, '/')) {
    if (strlen(name) + 1 > size) return ENAMETOOLONG;
    memcpy(path, name, strlen(name) + 1);
    return access(path, X_OK) == 0 ? 0 : errno;
  }
  const char* dirs = getenv("PATH");
  if (!dirs || !*dirs) dirs = "/usr/local/bin:/usr/bin:/bin";
  for (const char* p = dirs;;) {
    const char* colon = strchr(p, ':');
    const size_t n = colon ? (size_t)(colon - p) : strlen(p);
    // An empty entry is the current directory.
    const int len = snprintf(path, size, "%.*s%s%s", (int)n, p, n ? "/" : "", name);
    if (len > 0 && (size_t)len < size && access(path, X_OK) == 0 && stat(path, &st) == 0 &&
        S_ISREG(st.st_mode)) {
      return 0;
    }
    if (!colon) break;
    p = colon + 1;
  }
  return ENOENT;
}

// What the child of cml_xla_vfork does before execve.
typedef struct cml_xla_child_t {
  const char* program;
  const char* const* argv;
  int out_fd;            // >= 0: stdout (the pipe)
  const char* out_path;  // else, when set: stdout appended to this file
  const char* err_path;  // when set: stderr appended to this file
  pid_t parent;
} cml_xla_child_t;

static __attribute__((noreturn, noinline)) void cml_xla_child_exec(const cml_xla_child_t* c) {
  if (setpgid(0, 0) != 0) _exit(127);
#if defined(__linux__)
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != c->parent) _exit(127);
#endif
  int fd = open("/dev/null", O_RDONLY);
  if (fd < 0 || dup2(fd, 0) < 0) _exit(127);
  if (fd != 0) close(fd);
  if (c->out_fd >= 0 && dup2(c->out_fd, 1) < 0) _exit(127);
  if (c->out_fd < 0 && c->out_path) {
    fd = open(c->out_path, O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd < 0 || dup2(fd, 1) < 0) _exit(127);
    if (fd != 1) close(fd);
  }
  if (c->err_path) {
    fd = open(c->err_path, O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd < 0 || dup2(fd, 2) < 0) _exit(127);
    if (fd != 2) close(fd);
  }
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  execve(c->program, (char* const*)c->argv, environ);
  _exit(127);
}

// Starts |c| with vfork (no atfork handlers run and nothing is copied; glibc's posix_spawn does
// the same). Its own function, so that no variable of the caller lives across vfork.
static __attribute__((noinline)) pid_t cml_xla_vfork(const cml_xla_child_t* c) {
  const pid_t pid = vfork();
  if (pid == 0) cml_xla_child_exec(c);
  return pid;
}

cml_status_t cml__xla_run_with_timeout(const char* const* argv, char* out, size_t out_size,
                                       const char* log_path, double timeout_s, int* out_exit) {
  *out_exit = 127;
  if (out && out_size) out[0] = '\0';
  int pipe_fds[2] = {-1, -1};
  if (out && pipe2(pipe_fds, O_CLOEXEC) != 0) {
    int err = errno;
    return cml_status_make(cml__xla_errno_code(err), "xla: pipe: %s", strerror(err));
  }
  char program[4096];
  int rc = cml_xla_find_program(argv[0], program, sizeof program);
  pid_t pid = -1;
  if (rc == 0) {
    // cml_xla_vfork with every signal blocked, so that no handler of the host runs in the child
    // while it shares the parent's memory. The child makes system calls only:
    // - its own process group, so that a timeout kills what it started too (a shell script's
    //   children, pip's subprocesses);
    // - killed when the thread that started it goes, so that a Ctrl-C of the host (which the
    //   helper, in another group, does not receive) does not leave a pip download running;
    // - stdin from /dev/null, stdout to the pipe or the log, stderr to the log;
    // - an empty signal mask (the calling thread may be one of cml's, which block signals).
    cml_xla_child_t child = {
        .program = program,
        .argv = argv,
        .out_fd = out ? pipe_fds[1] : -1,
        .out_path = out        ? NULL
                    : log_path ? (*log_path ? log_path : "/dev/null")
                               : NULL,
        .err_path = log_path ? (*log_path ? log_path : "/dev/null") : NULL,
        .parent = getpid(),
    };
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    pid = cml_xla_vfork(&child);
    rc = pid < 0 ? errno : 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
  }
  if (out) close(pipe_fds[1]);
  if (rc != 0) {
    if (out) close(pipe_fds[0]);
    *out_exit = 127;  // could not start: reported through the exit code
    if (cml__xla_errno_code(rc) == CML_STATUS_RESOURCE_EXHAUSTED) {
      // Not a missing program: the process (or file, or memory) limit stopped it.
      char what[512];
      cml_xla_describe_argv(argv, what, sizeof what);
      return cml_status_make(CML_STATUS_RESOURCE_EXHAUSTED, "xla: cannot start `%s`: %s", what,
                             strerror(rc));
    }
    return CML_OK;
  }
  int64_t limit_ms = timeout_s > 0 ? (int64_t)(timeout_s * 1000.0) : INT64_MAX / 4;
  cml__xla_child_result_t result;
  cml__xla_child_wait(pid, out ? pipe_fds[0] : -1, cml__xla_now_ms() + limit_ms, out,
                      out && out_size ? out_size - 1 : 0, &result);
  if (out && out_size) out[result.used] = '\0';
  int status = result.status;
  const bool timed_out = !result.reaped;
  if (timed_out) {
    kill(-pid, SIGKILL);
    kill(pid, SIGKILL);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    char what[512];
    cml_xla_describe_argv(argv, what, sizeof what);
    *out_exit = 128 + SIGKILL;
    return cml_status_make(CML_STATUS_UNAVAILABLE,
                           "xla: `%s` did not finish within %g s and was killed with its process "
                           "group (timeouts: CML_XLA_QUERY_TIMEOUT_S for queries, "
                           "CML_XLA_INSTALL_TIMEOUT_S for pip downloads; see docs/xla.md)",
                           what, timeout_s);
  }
  if (status == -1) {
    *out_exit = 127;  // SIGCHLD ignored by the application: no exit status to report
  } else if (WIFEXITED(status)) {
    *out_exit = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    *out_exit = 128 + WTERMSIG(status);
  }
  return CML_OK;
}

cml_status_t cml__xla_run(const char* const* argv, char* out, size_t out_size, const char* log_path,
                          int* out_exit) {
  return cml__xla_run_with_timeout(argv, out, out_size, log_path, cml__xla_query_timeout_s(),
                                   out_exit);
}

//===--- names ---===//

bool cml__xla_plugin_name_from_file(const char* file_name, char* name, size_t size) {
  static const struct {
    const char* prefix;
    const char* suffix;
  } kPatterns[] = {
      {"pjrt_c_api_", "_plugin.so"},    {"pjrt-plugin-", ".so"},    {"pjrt_plugin_", ".so"},
      {"pjrt_c_api_", "_plugin.dylib"}, {"pjrt-plugin-", ".dylib"}, {"pjrt_plugin_", ".dylib"},
  };
  size_t len = strlen(file_name);
  for (size_t i = 0; i < sizeof kPatterns / sizeof kPatterns[0]; ++i) {
    size_t p = strlen(kPatterns[i].prefix), s = strlen(kPatterns[i].suffix);
    if (len <= p + s) continue;
    if (strncmp(file_name, kPatterns[i].prefix, p) != 0) continue;
    if (strcmp(file_name + len - s, kPatterns[i].suffix) != 0) continue;
    size_t n = len - p - s;
    if (n + 1 > size) return false;
    memcpy(name, file_name + p, n);
    name[n] = '\0';
    return true;
  }
  return false;
}

// 2: exact match, 1: versioned match ("<name>_v..."), 0: none.
static int cml_xla_name_match(const char* found, const char* wanted) {
  if (strcmp(found, wanted) == 0) return 2;
  size_t n = strlen(wanted);
  if (strncmp(found, wanted, n) == 0 && strncmp(found + n, "_v", 2) == 0) return 1;
  return 0;
}

static bool cml_xla_is_file(const char* path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static bool cml_xla_is_dir(const char* path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static char* cml_xla_join(const char* dir, const char* name) {
  size_t n = strlen(dir) + strlen(name) + 2;
  char* path = malloc(n);
  if (path) snprintf(path, n, "%s/%s", dir, name);
  return path;
}

// Looks for plugin |wanted| in |dir|. Returns a malloc'd path or NULL.
static char* cml_xla_search_dir(const char* dir, const char* wanted) {
  DIR* d = opendir(dir);
  if (!d) return NULL;
  char best_name[256] = "";
  int best = 0;
  struct dirent* e;
  while ((e = readdir(d)) != NULL) {
    char name[256];
    if (!cml__xla_plugin_name_from_file(e->d_name, name, sizeof name)) continue;
    int m = cml_xla_name_match(name, wanted);
    // Among versioned matches take the greatest name: the newest version in practice.
    if (m > best || (m == 1 && best == 1 && strcmp(e->d_name, best_name) > 0)) {
      char* full = cml_xla_join(dir, e->d_name);
      bool ok = full && cml_xla_is_file(full);
      free(full);
      if (!ok) continue;
      best = m;
      snprintf(best_name, sizeof best_name, "%s", e->d_name);
    }
  }
  closedir(d);
  return best ? cml_xla_join(dir, best_name) : NULL;
}

//===--- the search path ---===//

typedef struct cml_xla_dirs_t {
  char* items[256];
  bool python[256];  // a site-packages directory (searched with the pip layouts)
  size_t count;
} cml_xla_dirs_t;

static void cml_xla_dirs_add(cml_xla_dirs_t* dirs, const char* a, const char* b, bool python) {
  if (!a || !*a || dirs->count == sizeof dirs->items / sizeof dirs->items[0]) return;
  char* path = b ? cml_xla_join(a, b) : strdup(a);
  if (!path) return;
  dirs->python[dirs->count] = python;
  dirs->items[dirs->count++] = path;
}

static void cml_xla_dirs_add_list(cml_xla_dirs_t* dirs, const char* list) {
  if (!list) return;
  const char* p = list;
  while (*p) {
    const char* e = strchr(p, ':');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    if (n > 0 && n < 4096 && p[0] == '/') {  // absolute entries only
      char buf[4096];
      memcpy(buf, p, n);
      buf[n] = '\0';
      cml_xla_dirs_add(dirs, buf, NULL, false);
    }
    if (!e) break;
    p = e + 1;
  }
}

static void cml_xla_python_from_env(const char* const** dirs, size_t* count, const char** note);

// The python3 site-packages directories of |s| (queried now when python_from_env) and the note
// explaining why they may be missing.
static void cml_xla_search_python(const cml__xla_search_t* s, const char* const** dirs,
                                  size_t* count, const char** note) {
  if (s->python_from_env) {
    cml_xla_python_from_env(dirs, count, note);
  } else {
    *dirs = s->python_dirs;
    *count = s->python_dir_count;
    *note = s->python_note;
  }
}

// Phase 1: the directories before the Python environment (PJRT_PLUGIN_LIBRARY_PATH, go-xla);
// phase 2: site-packages and LD_LIBRARY_PATH, appended. Searching phase 1 first means python3
// runs only when the plugin is not in the usual places.
static void cml_xla_dirs_build_phase(const cml__xla_search_t* s, cml_xla_dirs_t* dirs, int phase) {
  if (phase == 2) {
    const char* const* python_dirs = NULL;
    size_t python_count = 0;
    const char* note = NULL;
    cml_xla_search_python(s, &python_dirs, &python_count, &note);
    for (size_t i = 0; i < python_count; ++i) {
      cml_xla_dirs_add(dirs, python_dirs[i], NULL, true);
    }
    cml_xla_dirs_add_list(dirs, s->ld_library_path);
    return;
  }
  memset(dirs, 0, sizeof *dirs);
  cml_xla_dirs_add_list(dirs, s->plugin_library_path);
  if (s->home && *s->home) {
    char base[4096];
    snprintf(base, sizeof base, "%s/.local/lib/go-xla", s->home);
    cml_xla_dirs_add(dirs, base, NULL, false);
    cml_xla_dirs_add(dirs, base, "nvidia", false);
  }
  if (s->system_dirs) {
    cml_xla_dirs_add(dirs, "/usr/local/lib/go-xla", NULL, false);
    cml_xla_dirs_add(dirs, "/usr/local/lib/go-xla", "nvidia", false);
  }
}

static void cml_xla_dirs_build(const cml__xla_search_t* s, cml_xla_dirs_t* dirs) {
  cml_xla_dirs_build_phase(s, dirs, 1);
  cml_xla_dirs_build_phase(s, dirs, 2);
}

static void cml_xla_dirs_free(cml_xla_dirs_t* dirs) {
  for (size_t i = 0; i < dirs->count; ++i) free(dirs->items[i]);
  dirs->count = 0;
}

static int cml_xla_cmp_desc(const void* a, const void* b) {
  return strcmp(*(const char* const*)b, *(const char* const*)a);
}

// The pip layouts inside a site-packages directory |sp|.
static char* cml_xla_search_site_packages(const char* sp, const char* wanted) {
  char path[4096];
  if (cml_xla_name_match("cuda", wanted) || strcmp(wanted, "nvidia") == 0) {
    // jax_plugins/xla_cuda13/xla_cuda_plugin.so (newest CUDA first).
    snprintf(path, sizeof path, "%s/jax_plugins", sp);
    DIR* d = opendir(path);
    if (d) {
      char* names[64];
      size_t n = 0;
      struct dirent* e;
      while ((e = readdir(d)) != NULL && n < 64) {
        if (strncmp(e->d_name, "xla_cuda", 8) != 0) continue;
        names[n] = strdup(e->d_name);
        if (names[n]) ++n;
      }
      closedir(d);
      qsort(names, n, sizeof names[0], cml_xla_cmp_desc);
      char* found = NULL;
      for (size_t i = 0; i < n; ++i) {
        if (!found) {
          snprintf(path, sizeof path, "%s/jax_plugins/%s/xla_cuda_plugin.so", sp, names[i]);
          if (cml_xla_is_file(path)) found = strdup(path);
        }
        free(names[i]);
      }
      if (found) return found;
    }
  }
  if (strcmp(wanted, "tpu") == 0) {
    snprintf(path, sizeof path, "%s/libtpu/libtpu.so", sp);
    if (cml_xla_is_file(path)) return strdup(path);
  }
  // Any package directory (one level down, and under jax_plugins/) holding a plugin file: this
  // covers the CPU plugin wheel (lammps_jax_pjrt_cpu/pjrt_c_api_cpu_plugin.so).
  const char* roots[2] = {sp, NULL};
  char jax_plugins[4096];
  snprintf(jax_plugins, sizeof jax_plugins, "%s/jax_plugins", sp);
  roots[1] = jax_plugins;
  for (int r = 0; r < 2; ++r) {
    DIR* d = opendir(roots[r]);
    if (!d) continue;
    char* names[1024];
    size_t n = 0;
    struct dirent* e;
    while ((e = readdir(d)) != NULL && n < 1024) {
      if (e->d_name[0] == '.' || strstr(e->d_name, ".dist-info")) continue;
      names[n] = strdup(e->d_name);
      if (names[n]) ++n;
    }
    closedir(d);
    qsort(names, n, sizeof names[0], cml_xla_cmp_desc);  // deterministic order
    char* found = NULL;
    for (size_t i = 0; i < n; ++i) {
      if (!found) {
        char* sub = cml_xla_join(roots[r], names[i]);
        if (sub && cml_xla_is_dir(sub)) found = cml_xla_search_dir(sub, wanted);
        free(sub);
      }
      free(names[i]);
    }
    if (found) return found;
  }
  return NULL;
}

static char* cml_xla_search_one(const char* dir, bool python, const char* wanted) {
  char* found = cml_xla_search_dir(dir, wanted);
  if (!found && python) found = cml_xla_search_site_packages(dir, wanted);
  return found;
}

cml_status_t cml__xla_find_plugin(const cml__xla_search_t* search, const char* name,
                                  char** out_path) {
  *out_path = NULL;
  cml_xla_dirs_t dirs;
  cml_xla_dirs_build_phase(search, &dirs, 1);
  size_t searched = 0;
  for (int phase = 1; phase <= 2; ++phase) {
    if (phase == 2) cml_xla_dirs_build_phase(search, &dirs, 2);
    for (; searched < dirs.count; ++searched) {
      char* found = cml_xla_search_one(dirs.items[searched], dirs.python[searched], name);
      if (found) {
        cml_xla_dirs_free(&dirs);
        *out_path = found;
        return CML_OK;
      }
    }
  }
  const char* const* python_dirs = NULL;
  size_t python_count = 0;
  const char* note = NULL;
  cml_xla_search_python(search, &python_dirs, &python_count, &note);
  char where[3000];
  size_t used = 0;
  where[0] = '\0';
  for (size_t i = 0; i < dirs.count && used < sizeof where; ++i) {
    int w = snprintf(where + used, sizeof where - used, "%s%s", i ? ", " : "", dirs.items[i]);
    if (w < 0) break;
    used += (size_t)w;
  }
  cml_xla_dirs_free(&dirs);
  // With no file descriptor left (RLIMIT_NOFILE), every opendir above failed and the plugin
  // looked absent: say what is wrong instead (installing it again would not help).
  int probe = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (probe < 0 && (errno == EMFILE || errno == ENFILE)) {
    return cml_status_make(CML_STATUS_RESOURCE_EXHAUSTED,
                           "xla: cannot search for PJRT plugin \"%s\": %s (the process has no file "
                           "descriptor left; see `ulimit -n`)",
                           name, strerror(errno));
  }
  if (probe >= 0) close(probe);
  // `cml install` knows the CPU and CUDA plugins only: other names get the other two ways.
  char install[96] = "";
  if (strcmp(name, "cpu") == 0 || strcmp(name, "cuda") == 0) {
    snprintf(install, sizeof install, "install it with `cml install %s`, ", name);
  }
  return cml_status_make(
      CML_STATUS_NOT_FOUND,
      "xla: PJRT plugin \"%s\" not found (looked for pjrt_c_api_%s_plugin.so, pjrt-plugin-%s.so, "
      "pjrt_plugin_%s.so and pip-installed plugins in: %s%s%s). To use it, %spoint "
      "PJRT_PLUGIN_LIBRARY_PATH at its directory, or give its path (xla:/path/plugin.so)",
      name, name, name, name, used ? where : "no directories", note ? "; " : "", note ? note : "",
      install);
}

size_t cml__xla_list_plugins(const cml__xla_search_t* search, char* buffer, size_t size) {
  static const char* const kKnown[] = {"cpu", "cuda", "tpu", "rocm", "metal"};
  cml_xla_dirs_t dirs;
  cml_xla_dirs_build(search, &dirs);
  char names[64][64];
  size_t name_count = 0;
  for (size_t k = 0; k < sizeof kKnown / sizeof kKnown[0]; ++k) {
    snprintf(names[name_count++], sizeof names[0], "%s", kKnown[k]);
  }
  // Other names carried by files in the plain directories.
  for (size_t i = 0; i < dirs.count; ++i) {
    DIR* d = opendir(dirs.items[i]);
    if (!d) continue;
    struct dirent* e;
    while ((e = readdir(d)) != NULL && name_count < 64) {
      char name[64];
      if (!cml__xla_plugin_name_from_file(e->d_name, name, sizeof name)) continue;
      bool seen = false;
      for (size_t j = 0; j < name_count && !seen; ++j) {
        seen = cml_xla_name_match(name, names[j]) > 0;
      }
      if (!seen) snprintf(names[name_count++], sizeof names[0], "%s", name);
    }
    closedir(d);
  }
  size_t used = 0;
  if (size) buffer[0] = '\0';
  for (size_t j = 0; j < name_count; ++j) {
    char* found = NULL;
    for (size_t i = 0; i < dirs.count && !found; ++i) {
      found = cml_xla_search_one(dirs.items[i], dirs.python[i], names[j]);
    }
    if (!found) continue;
    int w = snprintf(used < size ? buffer + used : NULL, used < size ? size - used : 0, "%s%s: %s",
                     used ? ", " : "", names[j], found);
    free(found);
    if (w > 0) used += (size_t)w;
  }
  cml_xla_dirs_free(&dirs);
  return used;
}

//===--- environment ---===//

static pthread_once_t cml_xla_python_once = PTHREAD_ONCE_INIT;
static char cml_xla_python_text[8192];
static const char* cml_xla_python_dirs[32];
static size_t cml_xla_python_dir_count;
static char cml_xla_python_note[1024];

static void cml_xla_python_query(void) {
  const char* const argv[] = {"python3", "-c",
                              "import site,sys\n"
                              "d=[]\n"
                              "try: d+=site.getsitepackages()\n"
                              "except Exception: pass\n"
                              "try: d.append(site.getusersitepackages())\n"
                              "except Exception: pass\n"
                              "print('\\n'.join(x for x in d if x))\n",
                              NULL};
  int exit_code = 0;
  cml_status_t st =
      cml__xla_run(argv, cml_xla_python_text, sizeof cml_xla_python_text, "", &exit_code);
  if (st != CML_OK) {
    // A python3 that hangs (or cannot be waited for): its site-packages are not searched, and
    // a NOT_FOUND from the search says why.
    snprintf(cml_xla_python_note, sizeof cml_xla_python_note,
             "pip-installed plugins were not searched: %s", cml_status_message(st));
  }
  cml_status_free(st);
  if (st != CML_OK || exit_code != 0) {
    cml_xla_python_text[0] = '\0';
    return;
  }
  char* p = cml_xla_python_text;
  while (*p && cml_xla_python_dir_count < 32) {
    char* e = strchr(p, '\n');
    if (e) *e = '\0';
    if (*p == '/') cml_xla_python_dirs[cml_xla_python_dir_count++] = p;
    if (!e) break;
    p = e + 1;
  }
}

void cml__xla_search_from_env(cml__xla_search_t* search) {
  memset(search, 0, sizeof *search);
  search->home = getenv("HOME");
  search->plugin_library_path = getenv("PJRT_PLUGIN_LIBRARY_PATH");
  search->ld_library_path = getenv("LD_LIBRARY_PATH");
  search->system_dirs = true;
  search->python_from_env = true;  // queried when the search gets there
}

static void cml_xla_python_from_env(const char* const** dirs, size_t* count, const char** note) {
  pthread_once(&cml_xla_python_once, cml_xla_python_query);
  *dirs = cml_xla_python_dirs;
  *count = cml_xla_python_dir_count;
  *note = cml_xla_python_note[0] ? cml_xla_python_note : NULL;
}

//===--- accelerators ---===//

bool cml__xla_has_nvidia_gpu(const char* dev_dir, bool run_nvidia_smi) {
  DIR* d = opendir(dev_dir ? dev_dir : "/dev");
  if (d) {
    struct dirent* e;
    bool found = false;
    while (!found && (e = readdir(d)) != NULL) found = strncmp(e->d_name, "nvidia", 6) == 0;
    closedir(d);
    if (found) return true;
  }
  if (!run_nvidia_smi) return false;
  const char* const argv[] = {"nvidia-smi", NULL};
  char out[4096];
  int exit_code = 0;
  cml_status_t st = cml__xla_run(argv, out, sizeof out, "", &exit_code);
  cml_status_free(st);
  return st == CML_OK && exit_code == 0 && strstr(out, "NVIDIA-SMI") != NULL;
}

bool cml__xla_has_tpu(const char* const* lib_dirs, size_t count) {
  static const char* const kDefault[] = {"/lib", "/usr/lib", "/usr/local/lib"};
  if (!lib_dirs) {
    lib_dirs = kDefault;
    count = 3;
  }
  for (size_t i = 0; i < count; ++i) {
    char path[4096];
    snprintf(path, sizeof path, "%s/libtpu.so", lib_dirs[i]);
    if (cml_xla_is_file(path)) return true;
  }
  return false;
}

//===--- CUDA layout ---===//

static void cml_xla_dirname(char* path) {
  char* slash = strrchr(path, '/');
  if (!slash) {
    strcpy(path, ".");
  } else if (slash == path) {
    path[1] = '\0';
  } else {
    *slash = '\0';
  }
}

bool cml__xla_cuda_data_dir(const char* plugin_path, char* out, size_t size) {
  char dir[4096];
  if (!plugin_path || strlen(plugin_path) >= sizeof dir) return false;
  snprintf(dir, sizeof dir, "%s", plugin_path);
  cml_xla_dirname(dir);  // the plugin's directory
  for (int up = 0; up < 2; ++up) {
    cml_xla_dirname(dir);
    char nvidia[4200];
    snprintf(nvidia, sizeof nvidia, "%s/nvidia", dir);
    if (!cml_xla_is_dir(nvidia)) continue;
    static const char* const kSub[] = {"cu13", "cuda_nvcc"};
    for (size_t i = 0; i < 2; ++i) {
      char ptxas[4300];
      snprintf(ptxas, sizeof ptxas, "%s/%s/bin/ptxas", nvidia, kSub[i]);
      if (cml_xla_is_file(ptxas)) {
        int n = snprintf(out, size, "%s/%s", nvidia, kSub[i]);
        return n > 0 && (size_t)n < size;
      }
    }
    int n = snprintf(out, size, "%s", nvidia);
    return n > 0 && (size_t)n < size;
  }
  return false;
}

bool cml__xla_flags_with_cuda_dir(const char* existing, const char* dir, char* out, size_t size) {
  if (!existing) existing = "";
  int n;
  if (strstr(existing, "--xla_gpu_cuda_data_dir")) {
    n = snprintf(out, size, "%s", existing);
  } else {
    n = snprintf(out, size, "%s%s--xla_gpu_cuda_data_dir=%s", existing, *existing ? " " : "", dir);
  }
  return n >= 0 && (size_t)n < size;
}
