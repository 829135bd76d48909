// SPDX-License-Identifier: Apache-2.0
// tests/unit/xla_hardening_test.c: the xla backend facing damaged plugins, hanging helper
// programs and bad device lists: a truncated or non-ELF plugin is refused before dlopen (no
// SIGBUS), a plugin damaged in place is caught by its manifest's sha256 (hashed once per file),
// a python3 that never exits costs a timeout, not a hang, and visible_devices must name devices
// the plugin has. Damaged plugins are copies in a temporary HOME (never the installed one); the
// tests that create backends run in forked children, so a crash fails the test instead of the
// run. The plugin tests are skipped (exit 77 when nothing else ran) without a CPU plugin.
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "backends/xla/install/install.h"
#include "backends/xla/xla_internal.h"
#include "cml/cml.h"
#include "cml/xla.h"
#include "test.h"

static char g_root[64];           // temporary directory of this run
static char g_real_plugin[4096];  // the installed CPU plugin ("" when none)

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static bool write_file(const char* path, const char* text, mode_t mode) {
  FILE* f = fopen(path, "w");
  if (!f) return false;
  fputs(text, f);
  fclose(f);
  return chmod(path, mode) == 0;
}

// Copies the first |limit| bytes (all when negative) of |from| to |to|.
static bool copy_file(const char* from, const char* to, long limit) {
  FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
  bool ok = in && out;
  char buf[1 << 16];
  long left = limit;
  while (ok && left != 0) {
    size_t want = left < 0 || left > (long)sizeof buf ? sizeof buf : (size_t)left;
    size_t got = fread(buf, 1, want, in);
    if (got == 0) break;
    ok = fwrite(buf, 1, got, out) == got;
    if (left > 0) left -= (long)got;
  }
  if (in) fclose(in);
  if (out && fclose(out) != 0) ok = false;
  return ok;
}

// Gives |to| the contents of |from| for reading only: a hard link where both are on one file
// system (the plugin is 200 MB, and CI machines can be short of disk), else a copy. Never for
// a file a test then damages: that would damage |from| too.
static bool share_file(const char* from, const char* to) {
  return link(from, to) == 0 || copy_file(from, to, -1);
}

// Writes the manifest the installer would write for the file at |path|, a copy of |source|: the
// source's own manifest when it has one (hashing 200 MB is slow under sanitizers), else hashed.
static bool write_manifest_of(const char* path, const char* source) {
  char hex[65], manifest[4200];
  uint64_t size = 0;
  snprintf(manifest, sizeof manifest, "%s.manifest", source);
  if (source != path && access(manifest, R_OK) == 0) {
    char copy[4200];
    snprintf(copy, sizeof copy, "%s.manifest", path);
    return copy_file(manifest, copy, -1);
  }
  cml_status_t st = cml__xla_sha256_file(path, hex, &size);
  if (st != CML_OK) {
    cml_status_free(st);
    return false;
  }
  snprintf(manifest, sizeof manifest, "%s.manifest", path);
  FILE* f = fopen(manifest, "w");
  if (!f) return false;
  fprintf(f, "package=test\nversion=1\nwheel_sha256=-\nmember=-\nsize=%llu\nsha256=%s\n",
          (unsigned long long)size, hex);
  return fclose(f) == 0;
}

static bool write_manifest(const char* path) { return write_manifest_of(path, path); }

// A HOME holding ~/.local/lib/go-xla/pjrt_c_api_cpu_plugin.so; writes the plugin's path.
static bool make_home(const char* name, char* home, size_t home_size, char* plugin,
                      size_t plugin_size) {
  snprintf(home, home_size, "%s/%s", g_root, name);
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/.local/lib/go-xla", home);
  char cmd[4300];
  snprintf(cmd, sizeof cmd, "mkdir -p '%s'", dir);
  if (system(cmd) != 0) return false;
  snprintf(plugin, plugin_size, "%s/pjrt_c_api_cpu_plugin.so", dir);
  return true;
}

// Runs |fn| in a forked child (HOME, PATH and other settings are the child's business) and
// returns its wait status, killing it after |limit_s|.
// How long a child may run before it counts as hung: loading the real plugin takes seconds,
// but minutes under ASan on a loaded 2-core machine (a hang still ends the test).
static const double kChildLimitS = 300.0;

static int in_child(void (*fn)(void* arg), void* arg, double limit_s) {
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    fn(arg);
    fflush(NULL);
    _exit(0);
  }
  if (pid < 0) return -1;
  double deadline = now_s() + limit_s;
  int status = 0;
  for (;;) {
    pid_t got = waitpid(pid, &status, WNOHANG);
    if (got == pid) return status;
    if (got < 0 && errno != EINTR) return -1;
    if (now_s() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      fprintf(stderr, "child still running after %.0f s: killed\n", limit_s);
      return status;
    }
    nanosleep(&(struct timespec){0, 20 * 1000 * 1000}, NULL);
  }
}

#define ASSERT_CHILD_OK(status)                                                            \
  do {                                                                                     \
    int w_ = (status);                                                                     \
    if (w_ == -1 || !WIFEXITED(w_) || WEXITSTATUS(w_) != 0) {                              \
      TEST_FAIL_("child failed: %s %d", WIFSIGNALED(w_) ? "signal" : "exit code",          \
                 WIFSIGNALED(w_) ? WTERMSIG(w_) : (WIFEXITED(w_) ? WEXITSTATUS(w_) : -1)); \
    }                                                                                      \
  } while (0)

// In a child: creates |config| with HOME=|home| and checks the code and message parts.
typedef struct expect_t {
  const char* home;
  const char* config;
  cml_status_code_t code;
  const char* has[3];
} expect_t;

static void expect_in_child(void* arg) {
  const expect_t* e = arg;
  setenv("HOME", e->home, 1);
  unsetenv("PJRT_PLUGIN_LIBRARY_PATH");
  unsetenv("XLA_FLAGS");
  cml_backend_t* be = NULL;
  cml_status_t st = cml_backend_new_with_config(e->config, &be);
  bool ok = cml_status_code(st) == e->code;
  for (int i = 0; i < 3 && e->has[i]; ++i) {
    ok = ok && st != CML_OK && strstr(cml_status_message(st), e->has[i]) != NULL;
  }
  if (!ok) {
    fprintf(stderr, "%s (HOME=%s): want %s with the expected text, got %s: %s\n", e->config,
            e->home, cml_status_code_name(e->code), cml_status_code_name(cml_status_code(st)),
            st ? cml_status_message(st) : "(ok)");
  }
  cml_status_free(st);
  if (be) cml_backend_release(be);
  fflush(NULL);
  _exit(ok ? 0 : 1);
}

//===--- programs that hang ---===//

TEST(run_timeout_kills_the_process_group) {
  char pid_file[128];
  snprintf(pid_file, sizeof pid_file, "%s/sleep.pid", g_root);
  char script[256];
  snprintf(script, sizeof script, "sleep 100 & echo $! > %s; echo started; wait", pid_file);
  const char* const argv[] = {"sh", "-c", script, NULL};
  char out[64];
  int exit_code = 0;
  double start = now_s();
  cml_status_t st = cml__xla_run_with_timeout(argv, out, sizeof out, "", 0.5, &exit_code);
  double took = now_s() - start;
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_UNAVAILABLE);
  ASSERT_CONTAINS(cml_status_message(st), "did not finish within 0.5 s");
  ASSERT_CONTAINS(cml_status_message(st), "sh -c sleep 100");
  ASSERT_CONTAINS(cml_status_message(st), "CML_XLA_QUERY_TIMEOUT_S");
  cml_status_free(st);
  ASSERT_TRUE(took < 5.0);
  ASSERT_EQ_INT(exit_code, 128 + SIGKILL);
  ASSERT_CONTAINS(out, "started");
  // The background sleep was in the group: it is gone (or a zombie waiting for init).
  FILE* f = fopen(pid_file, "r");
  ASSERT_TRUE(f != NULL);
  long pid = 0;
  ASSERT_EQ_INT(fscanf(f, "%ld", &pid), 1);
  fclose(f);
  nanosleep(&(struct timespec){0, 100 * 1000 * 1000}, NULL);
  char proc[64], stat_text[256] = "";
  snprintf(proc, sizeof proc, "/proc/%ld/stat", pid);
  f = fopen(proc, "r");
  if (f) {
    size_t n = fread(stat_text, 1, sizeof stat_text - 1, f);
    stat_text[n] = '\0';
    fclose(f);
    const char* state = strrchr(stat_text, ')');
    ASSERT_TRUE(state && (state[2] == 'Z' || state[2] == 'X'));
  }
}

TEST(run_without_timeout_reads_everything) {
  const char* const argv[] = {"sh", "-c", "echo hello; exit 3", NULL};
  char out[64];
  int exit_code = 0;
  ASSERT_STATUS_OK(cml__xla_run_with_timeout(argv, out, sizeof out, "", 5.0, &exit_code));
  ASSERT_EQ_INT(exit_code, 3);
  ASSERT_STREQ(out, "hello\n");
  const char* const missing[] = {"cml-no-such-program-here", NULL};
  ASSERT_STATUS_OK(cml__xla_run_with_timeout(missing, out, sizeof out, "", 5.0, &exit_code));
  ASSERT_EQ_INT(exit_code, 127);
}

// A helper dies with the process that started it (a Ctrl-C of the host reaches the host only:
// the helper has a process group of its own), and starts with no signal blocked whatever the
// calling thread blocks.
TEST(run_child_dies_with_its_parent_and_starts_unmasked) {
  char pid_file[128], mask_file[128], script[1024];
  snprintf(pid_file, sizeof pid_file, "%s/helper.pid", g_root);
  snprintf(mask_file, sizeof mask_file, "%s/helper.mask", g_root);
  unlink(pid_file);
  unlink(mask_file);
  snprintf(script, sizeof script,
           "grep SigBlk /proc/self/status > %s.tmp; mv %s.tmp %s; echo $$ > %s.tmp; "
           "mv %s.tmp %s; exec sleep 100",
           mask_file, mask_file, mask_file, pid_file, pid_file, pid_file);
  const pid_t host = fork();
  ASSERT_TRUE(host >= 0);
  if (host == 0) {
    sigset_t block;
    sigfillset(&block);
    pthread_sigmask(SIG_BLOCK, &block, NULL);
    const char* const argv[] = {"sh", "-c", script, NULL};
    int exit_code = 0;
    cml_status_free(cml__xla_run_with_timeout(argv, NULL, 0, "", 60.0, &exit_code));
    _exit(0);
  }
  long pid = 0;
  for (int i = 0; i < 500 && pid == 0; ++i) {
    FILE* f = fopen(pid_file, "r");
    if (f) {
      if (fscanf(f, "%ld", &pid) != 1) pid = 0;
      fclose(f);
    }
    if (pid == 0) nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
  }
  kill(host, SIGKILL);
  int status = 0;
  waitpid(host, &status, 0);
  ASSERT_TRUE(pid > 0);
  char mask[128] = "";
  FILE* f = fopen(mask_file, "r");
  ASSERT_TRUE(f != NULL);
  ASSERT_TRUE(fgets(mask, sizeof mask, f) != NULL);
  fclose(f);
  ASSERT_CONTAINS(mask, "SigBlk:\t0000000000000000");
  // The helper goes (or is a zombie waiting for init) soon after its parent.
  bool gone = false;
  for (int i = 0; i < 200 && !gone; ++i) {
    char proc[64], stat_text[256] = "";
    snprintf(proc, sizeof proc, "/proc/%ld/stat", pid);
    f = fopen(proc, "r");
    if (!f) {
      gone = true;
      break;
    }
    size_t n = fread(stat_text, 1, sizeof stat_text - 1, f);
    stat_text[n] = '\0';
    fclose(f);
    const char* state = strrchr(stat_text, ')');
    gone = state && (state[2] == 'Z' || state[2] == 'X');
    if (!gone) nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
  }
  if (!gone) kill((pid_t)pid, SIGKILL);
  ASSERT_TRUE(gone);
}

// A fake python3 that never exits.
static void make_hanging_python(char* dir, size_t size) {
  snprintf(dir, size, "%s/fakebin", g_root);
  mkdir(dir, 0755);
  char path[256];
  snprintf(path, sizeof path, "%s/python3", dir);
  write_file(path, "#!/bin/sh\nexec sleep 1000\n", 0755);
}

static void create_with_hanging_python(void* arg) {
  (void)arg;
  char dir[128], path[4400], home[256];
  make_hanging_python(dir, sizeof dir);
  snprintf(path, sizeof path, "%s:%s", dir, getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
  setenv("PATH", path, 1);
  snprintf(home, sizeof home, "%s/empty-home", g_root);
  mkdir(home, 0755);
  setenv("HOME", home, 1);
  unsetenv("PJRT_PLUGIN_LIBRARY_PATH");
  setenv("CML_XLA_QUERY_TIMEOUT_S", "0.5", 1);
  cml_backend_t* be = NULL;
  double start = now_s();
  cml_status_t st = cml_backend_new_with_config("xla:cpu", &be);
  double took = now_s() - start;
  // No plugin in this HOME: NOT_FOUND, saying that python3 timed out (or, where a system
  // directory holds a plugin, a backend); either way in about the timeout.
  bool ok = took < 5.0 &&
            (st == CML_OK || (cml_status_code(st) == CML_STATUS_NOT_FOUND &&
                              strstr(cml_status_message(st), "did not finish within 0.5 s") &&
                              strstr(cml_status_message(st), "python3")));
  if (!ok) {
    fprintf(stderr, "took %.1f s: %s\n", took, st ? cml_status_message(st) : "(ok)");
  }
  cml_status_free(st);
  if (be) cml_backend_release(be);
  fflush(NULL);
  _exit(ok ? 0 : 1);
}

TEST(hanging_python3_costs_a_timeout_not_a_hang) {
  ASSERT_CHILD_OK(in_child(create_with_hanging_python, NULL, 30.0));
}

TEST(hanging_pip_download_times_out) {
  char dir[128], python[256], install_dir[256];
  make_hanging_python(dir, sizeof dir);
  snprintf(python, sizeof python, "%s/python3", dir);
  snprintf(install_dir, sizeof install_dir, "%s/hang-install", g_root);
  cml__xla_install_params_t p;
  cml__xla_install_params_init(&p);
  p.install_dir = install_dir;
  p.python = python;
  p.verbosity = 0;
  p.timeout_s = 0.5;
  double start = now_s();
  cml_status_t st = cml__xla_install(cml__xla_wheel_for("cpu"), &p, NULL, NULL);
  double took = now_s() - start;
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_UNAVAILABLE);
  ASSERT_CONTAINS(cml_status_message(st), "-m pip download");
  ASSERT_CONTAINS(cml_status_message(st), "did not finish within 0.5 s");
  cml_status_free(st);
  ASSERT_TRUE(took < 5.0);
}

//===--- damaged plugins ---===//

TEST(elf_check_refuses_truncated_and_foreign_files) {
  char path[256];
  snprintf(path, sizeof path, "%s/not_elf.so", g_root);
  ASSERT_TRUE(write_file(path, "just text, no ELF header\n", 0644));
  cml_status_t st = cml__xla_check_shared_object(path);
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_UNAVAILABLE);
  ASSERT_CONTAINS(cml_status_message(st), "not an ELF file");
  cml_status_free(st);
  // The test binary itself is ELF but not a shared object... unless built as PIE, which is
  // ET_DYN too; a truncated copy of this very test program must fail either way.
  char copy[256];
  snprintf(copy, sizeof copy, "%s/truncated_self.so", g_root);
  ASSERT_TRUE(copy_file("/proc/self/exe", copy, 4096));
  st = cml__xla_check_shared_object(copy);
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_UNAVAILABLE);
  ASSERT_CONTAINS(cml_status_message(st), copy);
  cml_status_free(st);
  ASSERT_STATUS_CODE(cml__xla_check_shared_object("/nonexistent/plugin.so"), CML_STATUS_NOT_FOUND);
}

TEST(truncated_plugin_without_manifest_is_a_status) {
  char home[256], plugin[4200];
  ASSERT_TRUE(make_home("trunc", home, sizeof home, plugin, sizeof plugin));
  ASSERT_TRUE(copy_file(g_real_plugin, plugin, 1 << 20));  // 1 MiB of 60+: no manifest
  expect_t e = {.home = home,
                .config = "xla:cpu",
                .code = CML_STATUS_UNAVAILABLE,
                .has = {plugin, "truncated or damaged", "cml install cpu"}};
  ASSERT_CHILD_OK(in_child(expect_in_child, &e, kChildLimitS));
  // Given by path: the same check, without the install hint (not cml's copy).
  char config[4300];
  snprintf(config, sizeof config, "xla:%s", plugin);
  expect_t by_path = {.home = home,
                      .config = config,
                      .code = CML_STATUS_UNAVAILABLE,
                      .has = {plugin, "end at byte"}};
  ASSERT_CHILD_OK(in_child(expect_in_child, &by_path, kChildLimitS));
}

TEST(plugin_damaged_in_place_is_caught_by_its_checksum) {
  char home[256], plugin[4200];
  ASSERT_TRUE(make_home("damaged", home, sizeof home, plugin, sizeof plugin));
  // Any file does: the checksum fails before dlopen. This test program is smaller to hash than
  // the 200 MB plugin.
  ASSERT_TRUE(copy_file("/proc/self/exe", plugin, -1));
  ASSERT_TRUE(write_manifest(plugin));
  // Sound: the full check hashes once, then trusts the unchanged file.
  int hashes = cml__xla_install_hash_count();
  ASSERT_STATUS_OK(cml__xla_install_check(plugin, true));
  ASSERT_STATUS_OK(cml__xla_install_check(plugin, true));
  ASSERT_EQ_INT(cml__xla_install_hash_count(), hashes + 1);
  // Same size, bytes changed in the middle of the text.
  int fd = open(plugin, O_WRONLY);
  ASSERT_TRUE(fd >= 0);
  struct stat st;
  ASSERT_TRUE(fstat(fd, &st) == 0);
  static char junk[4096];
  memset(junk, 0xCC, sizeof junk);
  ASSERT_TRUE(pwrite(fd, junk, sizeof junk, st.st_size / 2) == (ssize_t)sizeof junk);
  close(fd);
  cml_status_t check = cml__xla_install_check(plugin, true);
  ASSERT_EQ_INT(cml_status_code(check), CML_STATUS_FAILED_PRECONDITION);
  ASSERT_CONTAINS(cml_status_message(check), "sha256");
  cml_status_free(check);
  ASSERT_EQ_INT(cml__xla_install_hash_count(), hashes + 2);
  // Auto-install off (the tests never download): the status names the file and the repair.
  expect_t e = {.home = home,
                .config = "xla:cpu",
                .code = CML_STATUS_FAILED_PRECONDITION,
                .has = {plugin, "sha256", "cml install cpu"}};
  ASSERT_CHILD_OK(in_child(expect_in_child, &e, kChildLimitS));
}

// Auto-install on: the damaged copy is reinstalled; here pip hangs, so the attempt ends with the
// install time limit instead of a crash or a hang.
static void reinstall_with_hanging_pip(void* arg) {
  const char* home = arg;
  char dir[128], path[4400];
  make_hanging_python(dir, sizeof dir);
  snprintf(path, sizeof path, "%s:%s", dir, getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
  setenv("PATH", path, 1);
  setenv("HOME", home, 1);
  unsetenv("PJRT_PLUGIN_LIBRARY_PATH");
  setenv("CML_XLA_INSTALL_TIMEOUT_S", "0.5", 1);
  cml_xla_enable_auto_install(true);
  cml_backend_t* be = NULL;
  double start = now_s();
  cml_status_t st = cml_backend_new_with_config("xla:cpu", &be);
  double took = now_s() - start;
  // Hashing the damaged file (twice) takes most of it under sanitizers: no hang is the point.
  bool ok = took < 30.0 && cml_status_code(st) == CML_STATUS_UNAVAILABLE &&
            strstr(cml_status_message(st), "reinstalling a broken plugin") &&
            strstr(cml_status_message(st), "did not finish within 0.5 s");
  if (!ok) fprintf(stderr, "took %.1f s: %s\n", took, st ? cml_status_message(st) : "(ok)");
  cml_status_free(st);
  if (be) cml_backend_release(be);
  fflush(NULL);
  _exit(ok ? 0 : 1);
}

TEST(damaged_plugin_is_reinstalled_when_auto_install_is_on) {
  char home[256], plugin[4200];
  ASSERT_TRUE(make_home("damaged", home, sizeof home, plugin, sizeof plugin));
  if (access(plugin, R_OK) != 0) {  // run alone: make a damaged copy
    ASSERT_TRUE(copy_file("/proc/self/exe", plugin, -1));
    ASSERT_TRUE(write_manifest(plugin));
    FILE* f = fopen(plugin, "r+b");
    ASSERT_TRUE(f != NULL);
    fseek(f, 100, SEEK_SET);
    fputc('Z', f);
    fclose(f);
  }
  ASSERT_STATUS_CODE(cml__xla_install_check(plugin, true), CML_STATUS_FAILED_PRECONDITION);
  ASSERT_CHILD_OK(in_child(reinstall_with_hanging_pip, home, kChildLimitS));
}

TEST(sound_copy_with_manifest_loads) {
  char home[256], plugin[4200];
  ASSERT_TRUE(make_home("sound", home, sizeof home, plugin, sizeof plugin));
  ASSERT_TRUE(share_file(g_real_plugin, plugin));
  ASSERT_TRUE(write_manifest_of(plugin, g_real_plugin));
  expect_t e = {.home = home, .config = "xla:cpu", .code = CML_STATUS_OK};
  ASSERT_CHILD_OK(in_child(expect_in_child, &e, kChildLimitS));
}

// With the plugin in ~/.local/lib/go-xla the Python environment is never asked: a python3 that
// hangs costs nothing (with an hour's query limit, asking it would hang until the child is
// killed at kChildLimitS).
static void create_found_plugin_with_hanging_python(void* arg) {
  const char* home = arg;
  char dir[128], path[4400];
  make_hanging_python(dir, sizeof dir);
  snprintf(path, sizeof path, "%s:%s", dir, getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
  setenv("PATH", path, 1);
  setenv("HOME", home, 1);
  unsetenv("PJRT_PLUGIN_LIBRARY_PATH");
  setenv("CML_XLA_QUERY_TIMEOUT_S", "3600", 1);
  cml_backend_t* be = NULL;
  double start = now_s();
  cml_status_t st = cml_backend_new_with_config("xla:cpu", &be);
  double took = now_s() - start;
  bool ok = st == CML_OK && took < kChildLimitS;
  if (!ok) fprintf(stderr, "took %.1f s: %s\n", took, st ? cml_status_message(st) : "(ok)");
  cml_status_free(st);
  if (be) cml_backend_release(be);
  fflush(NULL);
  _exit(ok ? 0 : 1);
}

TEST(found_plugin_does_not_run_python3) {
  char home[256], plugin[4200];
  ASSERT_TRUE(make_home("sound", home, sizeof home, plugin, sizeof plugin));
  if (access(plugin, R_OK) != 0) {  // run alone: sound_copy_with_manifest_loads makes it
    ASSERT_TRUE(share_file(g_real_plugin, plugin));
    ASSERT_TRUE(write_manifest_of(plugin, g_real_plugin));
  }
  ASSERT_CHILD_OK(in_child(create_found_plugin_with_hanging_python, home, kChildLimitS + 10));
}

// A process with no file descriptor left: the search cannot open a directory, and once said the
// installed plugin was "not found" (install it) instead of what was wrong.
static void expect_without_descriptors(void* arg) {
  int lowest = open("/dev/null", O_RDONLY);
  if (lowest < 0) _exit(2);
  close(lowest);
  struct rlimit none = {(rlim_t)lowest, (rlim_t)lowest};  // every new descriptor is >= lowest
  if (setrlimit(RLIMIT_NOFILE, &none) != 0) _exit(3);
  expect_in_child(arg);
}

TEST(no_file_descriptor_left_is_not_a_missing_plugin) {
  const char* home = getenv("HOME") ? getenv("HOME") : "/";
  expect_t e = {.home = home,
                .config = "xla:cpu",
                .code = CML_STATUS_RESOURCE_EXHAUSTED,
                .has = {"no file descriptor left", "ulimit -n"}};
  ASSERT_CHILD_OK(in_child(expect_without_descriptors, &e, kChildLimitS));
}

#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
// A process near its address-space limit (ulimit -v): dlopen cannot map the plugin's segments.
// That is RESOURCE_EXHAUSTED naming the limit, not "the plugin is damaged" (which, with
// auto-install on, replaced a sound plugin by a fresh download).
static void expect_with_little_address_space(void* arg) {
  FILE* statm = fopen("/proc/self/statm", "r");
  unsigned long pages = 0;
  if (!statm || fscanf(statm, "%lu", &pages) != 1) _exit(2);
  fclose(statm);
  rlim_t limit = (rlim_t)pages * (rlim_t)sysconf(_SC_PAGESIZE) + ((rlim_t)32 << 20);
  struct rlimit as = {limit, limit};
  if (setrlimit(RLIMIT_AS, &as) != 0) _exit(3);
  expect_in_child(arg);
}
#endif

TEST(no_address_space_left_is_not_a_damaged_plugin) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  printf("(left out: a sanitizer's shadow memory needs the address space)\n");
#else
  const char* home = getenv("HOME") ? getenv("HOME") : "/";
  expect_t e = {.home = home,
                .config = "xla:cpu",
                .code = CML_STATUS_RESOURCE_EXHAUSTED,
                .has = {"out of memory or address space", "ulimit -v"}};
  ASSERT_CHILD_OK(in_child(expect_with_little_address_space, &e, kChildLimitS));
#endif
}

// Threads of 256 KiB (`ulimit -s 256` at startup sets that default): XLA's CPU plugin overflowed
// them in its worker threads (SIGSEGV). Creation refuses with the limit to raise.
static void expect_with_small_default_thread_stacks(void* arg) {
  pthread_attr_t attr;
  if (pthread_attr_init(&attr) != 0 || pthread_attr_setstacksize(&attr, 256 << 10) != 0 ||
      pthread_setattr_default_np(&attr) != 0) {
    _exit(2);
  }
  pthread_attr_destroy(&attr);
  expect_in_child(arg);
}

static void* create_on_this_thread(void* arg) {
  expect_in_child(arg);  // exits the process
  return NULL;
}

// Backend creation from a thread with a 64 KiB stack: the plugin search, dlopen and the dtype
// probes' compiles took more than 72 KiB of the caller's stack (SIGSEGV); they run on a thread
// of their own now.
static void expect_from_a_small_thread(void* arg) {
  pthread_attr_t attr;
  pthread_t thread;
  if (pthread_attr_init(&attr) != 0 || pthread_attr_setstacksize(&attr, 64 << 10) != 0 ||
      pthread_create(&thread, &attr, create_on_this_thread, arg) != 0) {
    _exit(2);
  }
  pthread_join(thread, NULL);
  _exit(4);  // not reached
}

TEST(thread_stacks_of_the_process) {
  const char* home = getenv("HOME") ? getenv("HOME") : "/";
  expect_t small = {.home = home,
                    .config = "xla:cpu",
                    .code = CML_STATUS_FAILED_PRECONDITION,
                    .has = {"256 KiB stacks", "ulimit -s"}};
  ASSERT_CHILD_OK(in_child(expect_with_small_default_thread_stacks, &small, kChildLimitS));
  expect_t fine = {.home = home, .config = "xla:cpu", .code = CML_STATUS_OK};
  ASSERT_CHILD_OK(in_child(expect_from_a_small_thread, &fine, kChildLimitS));
}

//===--- visible_devices ---===//

TEST(visible_devices_must_exist_and_be_distinct) {
  const char* home = getenv("HOME") ? getenv("HOME") : "/";
  expect_t missing = {.home = home,
                      .config = "xla:cpu,cpu_device_count=2,visible_devices=99",
                      .code = CML_STATUS_OUT_OF_RANGE,
                      .has = {"device 99", "has 2 device(s)", "ids: 0, 1"}};
  ASSERT_CHILD_OK(in_child(expect_in_child, &missing, kChildLimitS));
  expect_t twice = {.home = home,
                    .config = "xla:cpu,visible_devices=1;0;1",
                    .code = CML_STATUS_INVALID_ARGUMENT,
                    .has = {"visible_devices lists device 1 twice"}};
  ASSERT_CHILD_OK(in_child(expect_in_child, &twice, kChildLimitS));
  expect_t fine = {.home = home,
                   .config = "xla:cpu,cpu_device_count=2,visible_devices=1",
                   .code = CML_STATUS_OK};
  ASSERT_CHILD_OK(in_child(expect_in_child, &fine, kChildLimitS));
}

// The CPU plugin given by a path whose file name does not say "cpu": its platform comes from a
// client made without options, so no GPU option (preallocate) reaches it and the CPU options
// apply. The name once decided: "Unexpected option name ... preallocate".
TEST(plugin_by_path_named_without_its_platform) {
  char plugin[300], config[400];
  snprintf(plugin, sizeof plugin, "%s/real.so", g_root);
  ASSERT_TRUE(share_file(g_real_plugin, plugin));
  snprintf(config, sizeof config, "xla:%s", plugin);
  expect_t plain = {.home = g_root, .config = config, .code = CML_STATUS_OK};
  ASSERT_CHILD_OK(in_child(expect_in_child, &plain, kChildLimitS));
  snprintf(config, sizeof config, "xla:%s,cpu_device_count=2,shared_buffers=true", plugin);
  expect_t cpu = {.home = g_root, .config = config, .code = CML_STATUS_OK};
  ASSERT_CHILD_OK(in_child(expect_in_child, &cpu, kChildLimitS));
}

// The installed plugin's path that does not fit the caller's buffer is OUT_OF_RANGE with an
// empty buffer (it was once cut to the buffer's 7 characters and returned as OK). Nothing is
// downloaded: the sound copy found here is kept.
TEST(install_path_that_does_not_fit_is_a_status) {
  char small[8], full[4096];
  memset(small, 'x', sizeof small);
  cml_status_t st = cml_xla_install_plugin("cpu", 0, false, small, sizeof small);
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_OUT_OF_RANGE);
  ASSERT_CONTAINS(cml_status_message(st), "do not fit path_buffer");
  cml_status_free(st);
  ASSERT_EQ_INT(small[0], '\0');
  ASSERT_STATUS_OK(cml_xla_install_plugin("cpu", 0, false, full, sizeof full));
  ASSERT_TRUE(strlen(full) >= sizeof small);
  ASSERT_TRUE(access(full, R_OK) == 0);
}

static int run(const test_entry_t* tests, size_t count, const char* only, int* ran) {
  int failures = 0;
  for (size_t i = 0; i < count; ++i) {
    if (only && strcmp(only, tests[i].name) != 0) continue;
    int failed = 0;
    tests[i].fn(&failed);
    ++*ran;
    printf("%s %s\n", failed ? "FAIL" : "ok  ", tests[i].name);
    failures += failed;
  }
  return failures;
}

int main(int argc, char** argv) {
  setenv("GOMLX_NO_AUTO_INSTALL", "1", 1);
  cml_xla_enable_auto_install(false);  // tests never download
  unsetenv("XLA_FLAGS");
  if (!test_tmp_template(g_root, sizeof g_root, "cml-xla-hardening-") || !mkdtemp(g_root)) {
    fprintf(stderr, "cannot make a temporary directory under %s: %s\n", test_tmpdir(),
            strerror(errno));
    return 1;
  }
  const char* only = argc > 1 ? argv[1] : NULL;
  static const test_entry_t tests[] = {
      TEST_ENTRY(run_timeout_kills_the_process_group),
      TEST_ENTRY(run_without_timeout_reads_everything),
      TEST_ENTRY(run_child_dies_with_its_parent_and_starts_unmasked),
      TEST_ENTRY(hanging_python3_costs_a_timeout_not_a_hang),
      TEST_ENTRY(hanging_pip_download_times_out),
      TEST_ENTRY(elf_check_refuses_truncated_and_foreign_files),
  };
  static const test_entry_t plugin_tests[] = {
      TEST_ENTRY(truncated_plugin_without_manifest_is_a_status),
      TEST_ENTRY(plugin_damaged_in_place_is_caught_by_its_checksum),
      TEST_ENTRY(damaged_plugin_is_reinstalled_when_auto_install_is_on),
      TEST_ENTRY(sound_copy_with_manifest_loads),
      TEST_ENTRY(found_plugin_does_not_run_python3),
      TEST_ENTRY(visible_devices_must_exist_and_be_distinct),
      TEST_ENTRY(no_file_descriptor_left_is_not_a_missing_plugin),
      TEST_ENTRY(no_address_space_left_is_not_a_damaged_plugin),
      TEST_ENTRY(thread_stacks_of_the_process),
      TEST_ENTRY(plugin_by_path_named_without_its_platform),
      TEST_ENTRY(install_path_that_does_not_fit_is_a_status),
  };
  int ran = 0;
  int failures = run(tests, sizeof tests / sizeof tests[0], only, &ran);
  cml__xla_search_t search;
  cml__xla_search_from_env(&search);
  char* path = NULL;
  cml_status_t st = cml__xla_find_plugin(&search, "cpu", &path);
  int result;
  if (st != CML_OK) {
    printf("%d passed, %d failed; plugin tests skipped: no XLA CPU plugin installed (%s)\n",
           ran - failures, failures, cml_status_message(st));
    cml_status_free(st);
    result = failures ? 1 : 77;
  } else {
    snprintf(g_real_plugin, sizeof g_real_plugin, "%s", path);
    free(path);
    failures += run(plugin_tests, sizeof plugin_tests / sizeof plugin_tests[0], only, &ran);
    printf("%d passed, %d failed, 0 skipped\n", ran - failures, failures);
    result = (failures || ran == 0) ? 1 : 0;
  }
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_root);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", g_root);
  return result;
}
