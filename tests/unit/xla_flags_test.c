// SPDX-License-Identifier: Apache-2.0
// tests/unit/xla_flags_test.c: XLA_FLAGS the plugin rejects become INVALID_ARGUMENT instead of
// ending the process. The probe mechanism is tested with child functions that print, exit, hang
// or get killed; then the real CPU plugin gets --help, unknown and malformed flags, and a valid
// one. Exits 77 (skipped) after the probe tests when no CPU plugin is installed.
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "backends/xla/xla_flags.h"
#include "backends/xla/xla_internal.h"
#include "cml/cml.h"
#include "cml/xla.h"
#include "test.h"

//===--- the probe, with fake children ---===//

static bool child_returns_true(void* arg) {
  (void)arg;
  return true;
}

static bool child_returns_false(void* arg) {
  (void)arg;
  return false;
}

static bool child_glog_fatal_exit1(void* arg) {
  (void)arg;
  fprintf(stderr,
          "WARNING: All log messages before absl::InitializeLog() is called are written to "
          "STDERR\n"
          "F0000 00:00:1796214885.754881   21152 parse_flags_from_env.cc:234] Unknown flag in "
          "XLA_FLAGS: --xla_fake_flag=1\n");
  exit(1);
}

static bool child_usage_exit0(void* arg) {
  (void)arg;
  printf("usage: --help\nFlags:\n\t--xla_fake_option=false\tbool\tA fake option.\n");
  exit(0);  // exits "successfully" without finishing: still a rejection
}

static bool child_sigkill(void* arg) {
  (void)arg;
  fprintf(stderr, "about to die\n");
  raise(SIGKILL);
  return true;
}

static bool child_hangs(void* arg) {
  (void)arg;
  fprintf(stderr, "partial output\n");
  sleep(30);
  return true;
}

static bool child_floods(void* arg) {
  (void)arg;
  for (int i = 0; i < 4000; ++i) fprintf(stderr, "line %04d of a very long usage text.....\n", i);
  exit(1);
}

static bool child_notice_only(void* arg) {
  (void)arg;
  fprintf(stderr,
          "WARNING: All log messages before absl::InitializeLog() is called are written to "
          "STDERR\n");
  _exit(3);
}

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

TEST(probe_child_that_returns_is_ok) {
  bool consumed = false;
  ASSERT_STATUS_OK(
      cml__xla_flags_probe(child_returns_true, NULL, 10000, "--a=1", "fake.so", &consumed));
  ASSERT_TRUE(consumed);
  // A child that could not create a client still finished: OK, but the flags were not read.
  ASSERT_STATUS_OK(
      cml__xla_flags_probe(child_returns_false, NULL, 10000, "--a=1", "fake.so", &consumed));
  ASSERT_FALSE(consumed);
}

// With no file descriptor left, the check's pipe fails: RESOURCE_EXHAUSTED (a limit of the
// process), not INTERNAL (a bug). The same for a subprocess run by the plugin search.
TEST(no_descriptor_left_is_resource_exhausted) {
  int lowest = open("/dev/null", O_RDONLY);
  ASSERT_TRUE(lowest >= 0);
  close(lowest);
  struct rlimit saved;
  ASSERT_EQ_INT(getrlimit(RLIMIT_NOFILE, &saved), 0);
  struct rlimit none = {(rlim_t)lowest, saved.rlim_max};  // every new descriptor is >= lowest
  ASSERT_EQ_INT(setrlimit(RLIMIT_NOFILE, &none), 0);
  cml_status_t probe = cml__xla_flags_probe(child_returns_true, NULL, 10000, "--a=1", "x.so", NULL);
  char out[64];
  int exit_code = 0;
  cml_status_t run = cml__xla_run_with_timeout((const char* const[]){"true", NULL}, out, sizeof out,
                                               NULL, 10, &exit_code);
  setrlimit(RLIMIT_NOFILE, &saved);
  cml_status_code_t probe_code = cml_status_code(probe), run_code = cml_status_code(run);
  bool named = probe_code && strstr(cml_status_message(probe), "pipe") &&
               strstr(cml_status_message(probe), "XLA_FLAGS check");
  if (!named) fprintf(stderr, "%s\n%s\n", cml_status_message(probe), cml_status_message(run));
  cml_status_free(probe);
  cml_status_free(run);
  ASSERT_EQ_INT(probe_code, CML_STATUS_RESOURCE_EXHAUSTED);
  ASSERT_EQ_INT(run_code, CML_STATUS_RESOURCE_EXHAUSTED);
  ASSERT_TRUE(named);
}

TEST(probe_glog_fatal_becomes_invalid_argument) {
  cml_status_t st = cml__xla_flags_probe(child_glog_fatal_exit1, NULL, 10000, "--xla_fake_flag=1",
                                         "fake.so", NULL);
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_INVALID_ARGUMENT);
  const char* m = cml_status_message(st);
  // The absl notice and the glog prefix are dropped; the plugin's sentence comes first.
  static const char kWant[] =
      "XLA_FLAGS rejected by the plugin: Unknown flag in XLA_FLAGS: --xla_fake_flag=1\n";
  int starts = strncmp(m, kWant, sizeof kWant - 1) == 0;
  int has_notice = strstr(m, "InitializeLog") != NULL;
  int has_prefix = strstr(m, "parse_flags_from_env.cc") != NULL;
  int has_value = strstr(m, "XLA_FLAGS=\"--xla_fake_flag=1\"") != NULL;
  int has_plugin = strstr(m, "plugin fake.so") != NULL;
  int has_exit = strstr(m, "exited with code 1") != NULL;
  if (!(starts && !has_notice && !has_prefix && has_value && has_plugin && has_exit)) {
    fprintf(stderr, "message: %s\n", m);
  }
  cml_status_free(st);
  ASSERT_TRUE(starts);
  ASSERT_FALSE(has_notice);
  ASSERT_FALSE(has_prefix);
  ASSERT_TRUE(has_value);
  ASSERT_TRUE(has_plugin);
  ASSERT_TRUE(has_exit);
}

TEST(probe_exit_zero_without_finishing_is_rejected) {
  cml_status_t st = cml__xla_flags_probe(child_usage_exit0, NULL, 10000, "--help", "fake.so", NULL);
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_INVALID_ARGUMENT);
  int ok = strstr(cml_status_message(st), "--xla_fake_option=false") != NULL &&
           strstr(cml_status_message(st), "exited with code 0") != NULL;
  if (!ok) fprintf(stderr, "message: %s\n", cml_status_message(st));
  cml_status_free(st);
  ASSERT_TRUE(ok);
}

TEST(probe_signal_is_rejected_and_named) {
  cml_status_t st = cml__xla_flags_probe(child_sigkill, NULL, 10000, "--x", "fake.so", NULL);
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_INVALID_ARGUMENT);
  int ok = strstr(cml_status_message(st), "about to die") != NULL &&
           strstr(cml_status_message(st), "killed by signal 9") != NULL;
  if (!ok) fprintf(stderr, "message: %s\n", cml_status_message(st));
  cml_status_free(st);
  ASSERT_TRUE(ok);
}

TEST(probe_timeout_kills_the_child) {
  double start = now_seconds();
  cml_status_t st = cml__xla_flags_probe(child_hangs, NULL, 300, "--slow", "fake.so", NULL);
  double elapsed = now_seconds() - start;
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_UNAVAILABLE);
  int ok = strstr(cml_status_message(st), "within 300 ms") != NULL &&
           strstr(cml_status_message(st), "partial output") != NULL;
  if (!ok) fprintf(stderr, "message: %s\n", cml_status_message(st));
  cml_status_free(st);
  ASSERT_TRUE(ok);
  ASSERT_TRUE(elapsed < 10.0);  // not the child's 30 s
}

TEST(probe_output_is_capped) {
  cml_status_t st = cml__xla_flags_probe(child_floods, NULL, 20000, "--help", "fake.so", NULL);
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_INVALID_ARGUMENT);
  const char* m = cml_status_message(st);
  size_t length = strlen(m);
  int ok = strstr(m, "line 0000 of") != NULL && strstr(m, "output truncated") != NULL &&
           strstr(m, "line 3999 of") == NULL;  // 4000 lines * 42 bytes > 64 KiB
  if (!ok) fprintf(stderr, "message (%zu bytes) ends: %s\n", length, m + length - 200);
  cml_status_free(st);
  ASSERT_TRUE(ok);
  ASSERT_TRUE(length > CML_XLA_FLAGS_MAX_OUTPUT - 100);
  ASSERT_TRUE(length < CML_XLA_FLAGS_MAX_OUTPUT + 2048);
}

TEST(probe_silent_child_says_so) {
  cml_status_t st = cml__xla_flags_probe(child_notice_only, NULL, 10000, "--q", "fake.so", NULL);
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_INVALID_ARGUMENT);
  int ok = strstr(cml_status_message(st), "(it printed nothing)") != NULL &&
           strstr(cml_status_message(st), "exited with code 3") != NULL;
  if (!ok) fprintf(stderr, "message: %s\n", cml_status_message(st));
  cml_status_free(st);
  ASSERT_TRUE(ok);
}

TEST(check_blank_flags_runs_nothing) {
  int before = cml__xla_flags_probe_count();
  ASSERT_STATUS_OK(cml__xla_check_flags(NULL, NULL, NULL, 0));
  ASSERT_STATUS_OK(cml__xla_check_flags(NULL, "", NULL, 0));
  ASSERT_EQ_INT(cml__xla_flags_probe_count(), before);
  // Blanks alone are not "no flags" to XLA (it reads them as a file name): checked.
  ASSERT_STATUS_CODE(cml__xla_check_flags(NULL, "  \t\n", NULL, 0), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_STATUS_CODE(cml__xla_check_flags(NULL, "--help", NULL, 0), CML_STATUS_INVALID_ARGUMENT);
}

// A plugin whose client was created with blank XLA_FLAGS has read them: a later value is never
// checked (the plugin ignores it; a child would run a plugin that owns threads). This fake
// plugin is never called: no child may start for it.
TEST(check_after_blank_flags_skips_the_child) {
  static int fake_handle;
  cml__xla_plugin_t fake = {.path = "fake_plugin_never_loaded.so", .handle = &fake_handle};
  int before = cml__xla_flags_probe_count();
  ASSERT_STATUS_OK(cml__xla_check_flags(&fake, "", NULL, 0));
  ASSERT_STATUS_OK(cml__xla_check_flags(&fake, "--help", NULL, 0));
  ASSERT_STATUS_OK(cml__xla_check_flags(&fake, "--xla_bogus=1", NULL, 0));
  ASSERT_EQ_INT(cml__xla_flags_probe_count(), before);
}

//===--- the real CPU plugin ---===//
// Order matters: XLA reads XLA_FLAGS once per process, at the first client that is created.
// Every rejected value below leaves that first read untouched; the valid one comes last.

// Creates xla:cpu with XLA_FLAGS=|flags| and expects INVALID_ARGUMENT; returns its message
// (malloc'd) or NULL when the creation did something else.
static char* create_rejected(const char* flags) {
  setenv("XLA_FLAGS", flags, 1);
  cml_backend_t* be = NULL;
  cml_status_t st = cml_backend_new_with_config("xla:cpu", &be);
  unsetenv("XLA_FLAGS");
  if (be) cml_backend_release(be);
  if (cml_status_code(st) != CML_STATUS_INVALID_ARGUMENT || be != NULL) {
    fprintf(stderr, "XLA_FLAGS=%s: want INVALID_ARGUMENT, got %s: %s\n", flags,
            cml_status_code_name(cml_status_code(st)), cml_status_message(st));
    cml_status_free(st);
    return NULL;
  }
  char* m = strdup(cml_status_message(st));
  cml_status_free(st);
  return m;
}

#define ASSERT_MESSAGE_HAS(m, needle)                                  \
  do {                                                                 \
    if (!strstr((m), (needle))) {                                      \
      fprintf(stderr, "message without \"%s\":\n%s\n", (needle), (m)); \
      free(m);                                                         \
      ASSERT_TRUE(!"message lacks the expected text");                 \
    }                                                                  \
  } while (0)

TEST(plugin_help_lists_the_flags_and_the_process_survives) {
  char* m = create_rejected("--help");
  ASSERT_TRUE(m != NULL);
  ASSERT_TRUE(strncmp(m, "XLA_FLAGS rejected by the plugin: ", 34) == 0);
  ASSERT_MESSAGE_HAS(m, "usage: --help");
  ASSERT_MESSAGE_HAS(m, "--xla_cpu_enable_fast_math");
  ASSERT_MESSAGE_HAS(m, "--xla_dump_to");
  ASSERT_MESSAGE_HAS(m, "the check process exited with code 1");
  free(m);
}

TEST(plugin_results_are_cached_per_value) {
  int before = cml__xla_flags_probe_count();
  char* m = create_rejected("--help");
  ASSERT_TRUE(m != NULL);
  ASSERT_MESSAGE_HAS(m, "--xla_cpu_enable_fast_math");
  free(m);
  ASSERT_EQ_INT(cml__xla_flags_probe_count(), before);  // no second child
}

// XLA reads any value that does not start with "--" as a flags file, blanks included, and
// ends the process when it cannot open it: the value was once taken as empty and never checked.
TEST(plugin_blank_value_is_rejected_and_the_process_survives) {
  static const char* const blanks[] = {" ", "\t", "\n"};
  for (size_t i = 0; i < sizeof blanks / sizeof *blanks; ++i) {
    char* m = create_rejected(blanks[i]);
    ASSERT_TRUE(m != NULL);
    ASSERT_MESSAGE_HAS(m, "Could not open file");
    free(m);
  }
}

TEST(plugin_unknown_flag_is_named) {
  char* m = create_rejected("--xla_cpu_enable_fast_math=false --xla_bogus_flag=1");
  ASSERT_TRUE(m != NULL);
  ASSERT_MESSAGE_HAS(m, "Unknown flag in XLA_FLAGS: --xla_bogus_flag=1");
  free(m);
}

TEST(plugin_malformed_value_is_rejected) {
  char* m = create_rejected("--xla_cpu_enable_fast_math=maybe");
  ASSERT_TRUE(m != NULL);
  ASSERT_MESSAGE_HAS(m, "--xla_cpu_enable_fast_math=maybe");
  free(m);
  m = create_rejected("xla_cpu_enable_fast_math");  // no "--": XLA takes it for a file name
  ASSERT_TRUE(m != NULL);
  ASSERT_MESSAGE_HAS(m, "xla_cpu_enable_fast_math");
  ASSERT_MESSAGE_HAS(m, "file");
  free(m);
}

// With HLO passes off the CPU plugin check-fails or segfaults on a result returned twice or a
// constant result; the check program has both, so the flag is refused instead of crashing the
// first such graph.
TEST(plugin_disabled_hlo_passes_are_rejected) {
  char* m = create_rejected("--xla_disable_all_hlo_passes=true");
  ASSERT_TRUE(m != NULL);
  ASSERT_MESSAGE_HAS(m, "XLA_FLAGS rejected by the plugin: ");
  ASSERT_MESSAGE_HAS(m, "compiles and runs a small program");
  ASSERT_MESSAGE_HAS(m, "note: disabling HLO passes");
  free(m);
}

// z = x * y + x on f32[5], checked against a plain loop.
TEST(plugin_valid_flag_computes) {
  int before = cml__xla_flags_probe_count();
  setenv("XLA_FLAGS", "--xla_cpu_enable_fast_math=false", 1);
  cml_backend_t* be = NULL;
  cml_status_t st = cml_backend_new_with_config("xla:cpu", &be);
  unsetenv("XLA_FLAGS");
  ASSERT_STATUS_OK(st);
  ASSERT_EQ_INT(cml__xla_flags_probe_count(), before + 1);
  cml_shape_t s = cml_shape_make(CML_DTYPE_F32, 1, (int64_t[]){5});
  cml_builder_t* b = NULL;
  cml_executable_t* exe = NULL;
  st = cml_builder_create(be, "flags", &b);
  if (st == CML_OK) {
    cml_function_t* f = cml_builder_main(b);
    cml_value_t x = cml_parameter(f, "x", &s);
    cml_value_t y = cml_parameter(f, "y", &s);
    cml_value_t z = cml_op_binary(f, CML_OP_ADD, cml_op_binary(f, CML_OP_MUL, x, y), x);
    st = cml_function_return(f, &z, 1);
    if (st == CML_OK) st = cml_builder_compile(b, &exe);
    cml_builder_destroy(b);
  }
  float x[5] = {1.5f, -2.0f, 0.25f, 3.0f, 10.0f}, y[5] = {2.0f, 4.0f, -8.0f, 0.5f, 0.1f};
  float want[5], got[5] = {0};
  for (int i = 0; i < 5; ++i) want[i] = x[i] * y[i] + x[i];
  cml_buffer_t *xb = NULL, *yb = NULL, *out[1] = {NULL};
  if (st == CML_OK) st = cml_buffer_from_host(be, 0, &s, x, sizeof x, &xb);
  if (st == CML_OK) st = cml_buffer_from_host(be, 0, &s, y, sizeof y, &yb);
  if (st == CML_OK) st = cml_executable_execute(exe, (cml_buffer_t*[]){xb, yb}, 2, NULL, 0, out);
  if (st == CML_OK) st = cml_buffer_copy_to_host(out[0], got, sizeof got);
  if (out[0]) cml_buffer_release(out[0]);
  if (xb) cml_buffer_release(xb);
  if (yb) cml_buffer_release(yb);
  if (exe) cml_executable_release(exe);
  cml_backend_release(be);
  ASSERT_STATUS_OK(st);
  for (int i = 0; i < 5; ++i) ASSERT_NEAR(got[i], want[i], 1e-6 * (1.0 + fabs(want[i])));
}

// Once a client exists the plugin never reads XLA_FLAGS again, so a bad value set afterwards
// neither ends the process nor fails the backend, and no child runs.
TEST(plugin_flags_are_read_once_per_process) {
  int before = cml__xla_flags_probe_count();
  setenv("XLA_FLAGS", "--xla_bogus_after_first_client=1", 1);
  cml_backend_t* be = NULL;
  cml_status_t st = cml_backend_new_with_config("xla:cpu", &be);
  unsetenv("XLA_FLAGS");
  ASSERT_STATUS_OK(st);
  cml_backend_release(be);
  ASSERT_EQ_INT(cml__xla_flags_probe_count(), before);
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
  const char* only = argc > 1 ? argv[1] : NULL;
  static const test_entry_t probe_tests[] = {
      TEST_ENTRY(probe_child_that_returns_is_ok),
      TEST_ENTRY(probe_glog_fatal_becomes_invalid_argument),
      TEST_ENTRY(no_descriptor_left_is_resource_exhausted),
      TEST_ENTRY(probe_exit_zero_without_finishing_is_rejected),
      TEST_ENTRY(probe_signal_is_rejected_and_named),
      TEST_ENTRY(probe_timeout_kills_the_child),
      TEST_ENTRY(probe_output_is_capped),
      TEST_ENTRY(probe_silent_child_says_so),
      TEST_ENTRY(check_blank_flags_runs_nothing),
      TEST_ENTRY(check_after_blank_flags_skips_the_child),
  };
  static const test_entry_t plugin_tests[] = {
      TEST_ENTRY(plugin_help_lists_the_flags_and_the_process_survives),
      TEST_ENTRY(plugin_blank_value_is_rejected_and_the_process_survives),
      TEST_ENTRY(plugin_results_are_cached_per_value),
      TEST_ENTRY(plugin_unknown_flag_is_named),
      TEST_ENTRY(plugin_malformed_value_is_rejected),
      TEST_ENTRY(plugin_disabled_hlo_passes_are_rejected),
      TEST_ENTRY(plugin_valid_flag_computes),
      TEST_ENTRY(plugin_flags_are_read_once_per_process),
  };
  int ran = 0;
  int failures = run(probe_tests, sizeof probe_tests / sizeof probe_tests[0], only, &ran);
  cml__xla_search_t search;
  cml__xla_search_from_env(&search);
  char* path = NULL;
  cml_status_t st = cml__xla_find_plugin(&search, "cpu", &path);
  if (st != CML_OK) {
    printf("%d passed, %d failed; plugin tests skipped: no XLA CPU plugin installed (%s)\n",
           ran - failures, failures, cml_status_message(st));
    cml_status_free(st);
    return failures ? 1 : 77;
  }
  free(path);
  failures += run(plugin_tests, sizeof plugin_tests / sizeof plugin_tests[0], only, &ran);
  printf("%d passed, %d failed, 0 skipped\n", ran - failures, failures);
  return (failures || ran == 0) ? 1 : 0;
}
