// SPDX-License-Identifier: Apache-2.0
// tests/unit/xla_install_test.c: the plugin installer with a fake local wheel (made by Python's
// zipfile, its sha256 computed by Python's hashlib) served to pip with --no-index --find-links:
// install, idempotence, a truncated plugin reinstalled, a checksum mismatch refused, four
// concurrent processes installing once, no pip, and the auto-install switch. Exits 77 when
// python3 with pip is missing.
#include <dirent.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backends/xla/install/install.h"
#include "backends/xla/xla_internal.h"
#include "cml/xla.h"
#include "test.h"

static char g_root[64];
static char g_wheels[128];
static char g_sha[65];
static char g_payload_path[160];
static const char* g_pip_args[3];

static const char kMakeWheel[] =
    "import sys,zipfile,hashlib,os\n"
    "d=sys.argv[1]\n"
    "payload=bytes((i*7+3)%256 for i in range(150000))\n"
    "open(os.path.join(d,'payload.bin'),'wb').write(payload)\n"
    "w=os.path.join(d,'wheels','cmlfakeplugin-1.0-py3-none-any.whl')\n"
    "os.makedirs(os.path.dirname(w),exist_ok=True)\n"
    "with zipfile.ZipFile(w,'w',zipfile.ZIP_DEFLATED) as z:\n"
    "  z.writestr('cmlfakeplugin/__init__.py','')\n"
    "  z.writestr('cmlfakeplugin/pjrt_c_api_cpu_plugin.so',payload)\n"
    "  z.writestr('cmlfakeplugin-1.0.dist-info/METADATA','Metadata-Version: 2.1\\nName: "
    "cmlfakeplugin\\nVersion: 1.0\\n')\n"
    "  z.writestr('cmlfakeplugin-1.0.dist-info/WHEEL','Wheel-Version: 1.0\\nGenerator: "
    "cml\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n')\n"
    "  z.writestr('cmlfakeplugin-1.0.dist-info/RECORD','')\n"
    "print(hashlib.sha256(open(w,'rb').read()).hexdigest())\n";

static cml__xla_wheel_t fake_wheel(const char* sha) {
  return (cml__xla_wheel_t){.plugin = "cpu",
                            .package = "cmlfakeplugin",
                            .version = "1.0",
                            .sha256 = sha,
                            .member = "cmlfakeplugin/pjrt_c_api_cpu_plugin.so",
                            .target = "pjrt_c_api_cpu_plugin.so"};
}

static void params_for(const char* dir, cml__xla_install_params_t* p) {
  cml__xla_install_params_init(p);
  p->install_dir = dir;
  p->verbosity = 0;
  p->pip_args = g_pip_args;
  p->pip_arg_count = 3;
}

static long file_size(const char* path) {
  struct stat st;
  return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

static bool same_bytes(const char* a, const char* b) {
  FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
  bool same = fa && fb;
  while (same) {
    int ca = fgetc(fa), cb = fgetc(fb);
    if (ca != cb) same = false;
    if (ca == EOF || cb == EOF) break;
  }
  if (fa) fclose(fa);
  if (fb) fclose(fb);
  return same;
}

TEST(install_then_idempotent) {
  char dir[160], target[256];
  snprintf(dir, sizeof dir, "%s/i1", g_root);
  snprintf(target, sizeof target, "%s/pjrt_c_api_cpu_plugin.so", dir);
  cml__xla_wheel_t w = fake_wheel(g_sha);
  cml__xla_install_params_t p;
  params_for(dir, &p);
  char* path = NULL;
  bool installed = false;
  ASSERT_STATUS_OK(cml__xla_install(&w, &p, &path, &installed));
  ASSERT_TRUE(installed);
  ASSERT_STREQ(path, target);
  free(path);
  ASSERT_TRUE(same_bytes(target, g_payload_path));
  ASSERT_TRUE(cml__xla_install_has_manifest(target));
  ASSERT_STATUS_OK(cml__xla_install_check(target, true));
  ASSERT_STATUS_OK(cml__xla_install(&w, &p, NULL, &installed));
  ASSERT_FALSE(installed);  // a sound copy is there: nothing downloaded
}

TEST(truncated_plugin_reinstalled) {
  char dir[160], target[256];
  snprintf(dir, sizeof dir, "%s/i2", g_root);
  snprintf(target, sizeof target, "%s/pjrt_c_api_cpu_plugin.so", dir);
  cml__xla_wheel_t w = fake_wheel(g_sha);
  cml__xla_install_params_t p;
  params_for(dir, &p);
  bool installed = false;
  ASSERT_STATUS_OK(cml__xla_install(&w, &p, NULL, &installed));
  ASSERT_EQ_INT(truncate(target, 1000), 0);
  ASSERT_STATUS_CODE(cml__xla_install_check(target, false), CML_STATUS_FAILED_PRECONDITION);
  ASSERT_STATUS_OK(cml__xla_install(&w, &p, NULL, &installed));
  ASSERT_TRUE(installed);
  ASSERT_EQ_INT(file_size(target), 150000);
  ASSERT_TRUE(same_bytes(target, g_payload_path));
  // Same size, different bytes: only the full check (sha256) sees it.
  FILE* f = fopen(target, "r+b");
  ASSERT_TRUE(f != NULL);
  fputc('Z', f);
  fclose(f);
  ASSERT_STATUS_OK(cml__xla_install_check(target, false));
  ASSERT_STATUS_CODE(cml__xla_install_check(target, true), CML_STATUS_FAILED_PRECONDITION);
  // An install (what `cml install cpu` does, without --force) checks the sha256 and repairs it.
  installed = false;
  ASSERT_STATUS_OK(cml__xla_install(&w, &p, NULL, &installed));
  ASSERT_TRUE(installed);
  ASSERT_TRUE(same_bytes(target, g_payload_path));
  ASSERT_STATUS_OK(cml__xla_install_check(target, true));
  installed = true;
  ASSERT_STATUS_OK(cml__xla_install(&w, &p, NULL, &installed));
  ASSERT_FALSE(installed);  // sound now: left alone
}

// Counts the entries of |dir| whose name starts with |prefix|.
static int count_entries(const char* dir, const char* prefix) {
  DIR* d = opendir(dir);
  if (!d) return -1;
  int n = 0;
  struct dirent* e;
  while ((e = readdir(d)) != NULL) n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
  closedir(d);
  return n;
}

TEST(killed_install_leaves_a_temp_dir_that_the_next_install_removes) {
  char dir[160], python[200], pid_file[200];
  snprintf(dir, sizeof dir, "%s/i6", g_root);
  ASSERT_EQ_INT(mkdir(dir, 0755), 0);
  // A download that never ends: a python3 that records its pid and sleeps.
  snprintf(python, sizeof python, "%s/slow-python3", g_root);
  snprintf(pid_file, sizeof pid_file, "%s/slow.pid", g_root);
  FILE* f = fopen(python, "w");
  ASSERT_TRUE(f != NULL);
  fprintf(f, "#!/bin/sh\necho $$ > %s.tmp && mv %s.tmp %s\nexec sleep 1000\n", pid_file, pid_file,
          pid_file);
  fclose(f);
  ASSERT_EQ_INT(chmod(python, 0755), 0);
  fflush(NULL);
  pid_t child = fork();
  ASSERT_TRUE(child >= 0);
  if (child == 0) {
    cml__xla_wheel_t w = fake_wheel(g_sha);
    cml__xla_install_params_t p;
    params_for(dir, &p);
    p.python = python;
    cml_status_t st = cml__xla_install(&w, &p, NULL, NULL);
    cml_status_free(st);
    _exit(0);
  }
  long slow = 0;
  for (int i = 0; i < 500 && slow == 0; ++i) {
    FILE* pf = fopen(pid_file, "r");
    if (pf) {
      if (fscanf(pf, "%ld", &slow) != 1) slow = 0;
      fclose(pf);
    }
    if (slow == 0) usleep(20 * 1000);
  }
  // SIGKILL mid-download: nothing of the installer runs after this.
  kill(child, SIGKILL);
  waitpid(child, NULL, 0);
  if (slow > 0) kill(-(pid_t)slow, SIGKILL);  // the fake pip, in its own process group
  ASSERT_TRUE(slow > 0);
  char prefix[64];
  snprintf(prefix, sizeof prefix, "%s%ld-", CML_XLA_INSTALL_TMP_PREFIX, (long)child);
  ASSERT_EQ_INT(count_entries(dir, prefix), 1);  // left behind
  // One of a live process (pid 1) is not touched.
  char live[256];
  snprintf(live, sizeof live, "%s/%s1-keep", dir, CML_XLA_INSTALL_TMP_PREFIX);
  ASSERT_EQ_INT(mkdir(live, 0755), 0);
  cml__xla_wheel_t w = fake_wheel(g_sha);
  cml__xla_install_params_t p;
  params_for(dir, &p);
  bool installed = false;
  ASSERT_STATUS_OK(cml__xla_install(&w, &p, NULL, &installed));
  ASSERT_TRUE(installed);
  ASSERT_EQ_INT(count_entries(dir, prefix), 0);
  ASSERT_EQ_INT(count_entries(dir, CML_XLA_INSTALL_TMP_PREFIX), 1);  // the live one
  rmdir(live);
}

TEST(checksum_mismatch_refused) {
  char dir[160], target[256];
  snprintf(dir, sizeof dir, "%s/i3", g_root);
  snprintf(target, sizeof target, "%s/pjrt_c_api_cpu_plugin.so", dir);
  cml__xla_wheel_t w =
      fake_wheel("0000000000000000000000000000000000000000000000000000000000000000");
  cml__xla_install_params_t p;
  params_for(dir, &p);
  char* path = NULL;
  cml_status_t st = cml__xla_install(&w, &p, &path, NULL);
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_UNAVAILABLE);
  ASSERT_CONTAINS(cml_status_message(st), "checksum mismatch");
  ASSERT_CONTAINS(cml_status_message(st), g_sha);
  cml_status_free(st);
  ASSERT_TRUE(path == NULL);
  ASSERT_EQ_INT(file_size(target), -1);  // nothing installed
}

TEST(concurrent_processes_install_once) {
  char dir[160], target[256];
  snprintf(dir, sizeof dir, "%s/i4", g_root);
  snprintf(target, sizeof target, "%s/pjrt_c_api_cpu_plugin.so", dir);
  pid_t pids[4];
  for (int i = 0; i < 4; ++i) {
    pids[i] = fork();
    ASSERT_TRUE(pids[i] >= 0);
    if (pids[i] == 0) {
      cml__xla_wheel_t w = fake_wheel(g_sha);
      cml__xla_install_params_t p;
      params_for(dir, &p);
      bool installed = false;
      cml_status_t st = cml__xla_install(&w, &p, NULL, &installed);
      if (st != CML_OK) fprintf(stderr, "child: %s\n", cml_status_message(st));
      _exit(st != CML_OK ? 1 : installed ? 10 : 11);
    }
  }
  int installs = 0, skips = 0;
  for (int i = 0; i < 4; ++i) {
    int status = 0;
    waitpid(pids[i], &status, 0);
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    if (code == 10) ++installs;
    if (code == 11) ++skips;
  }
  ASSERT_EQ_INT(installs, 1);
  ASSERT_EQ_INT(skips, 3);
  ASSERT_TRUE(same_bytes(target, g_payload_path));
}

TEST(no_pip_says_how_to_install) {
  char dir[160];
  snprintf(dir, sizeof dir, "%s/i5", g_root);
  cml__xla_wheel_t w = fake_wheel(g_sha);
  cml__xla_install_params_t p;
  params_for(dir, &p);
  p.python = "/nonexistent/python3";
  cml_status_t st = cml__xla_install(&w, &p, NULL, NULL);
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_UNAVAILABLE);
  ASSERT_CONTAINS(cml_status_message(st), "by hand");
  ASSERT_CONTAINS(cml_status_message(st), "cmlfakeplugin==1.0");
  cml_status_free(st);
  // A package pip cannot find (no index): the same kind of message.
  w.package = "cmlfakeplugin-missing";
  p.python = NULL;
  st = cml__xla_install(&w, &p, NULL, NULL);
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_UNAVAILABLE);
  ASSERT_CONTAINS(cml_status_message(st), "pip download");
  cml_status_free(st);
}

// Storage failures say what went wrong, and never write through a planted lock symlink.
TEST(storage_failures_are_named) {
  char dir[160], lock[300], victim[200], text[32] = "";
  snprintf(dir, sizeof dir, "%s/i7", g_root);
  ASSERT_EQ_INT(mkdir(dir, 0755), 0);
  cml__xla_wheel_t w = fake_wheel(g_sha);
  cml__xla_install_params_t p;
  params_for(dir, &p);
  p.force = true;
  // A symbolic link at the lock's name: refused, its target untouched (it was truncated and
  // given the installer's pid).
  snprintf(victim, sizeof victim, "%s/victim.txt", g_root);
  snprintf(lock, sizeof lock, "%s/pjrt_c_api_cpu_plugin.so.lock", dir);
  FILE* f = fopen(victim, "w");
  ASSERT_TRUE(f != NULL);
  fputs("precious", f);
  fclose(f);
  ASSERT_EQ_INT(symlink(victim, lock), 0);
  cml_status_t st = cml__xla_install(&w, &p, NULL, NULL);
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_UNAVAILABLE);
  ASSERT_CONTAINS(cml_status_message(st), "symbolic link");
  cml_status_free(st);
  f = fopen(victim, "r");
  ASSERT_TRUE(f != NULL);
  ASSERT_TRUE(fgets(text, sizeof text, f) != NULL);
  fclose(f);
  ASSERT_STREQ(text, "precious");
  ASSERT_EQ_INT(unlink(lock), 0);
  // Not enough room for the wheel and the plugin: said before downloading.
  w.space_bytes = (uint64_t)1 << 62;
  p.python = "/nonexistent/python3";  // never run
  st = cml__xla_install(&w, &p, NULL, NULL);
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_RESOURCE_EXHAUSTED);
  ASSERT_CONTAINS(cml_status_message(st), "needs about");
  ASSERT_CONTAINS(cml_status_message(st), dir);
  cml_status_free(st);
  // pip running out of space: said so, not "no network?".
  w.space_bytes = 0;
  char python[200];
  snprintf(python, sizeof python, "%s/enospc-python3", g_root);
  f = fopen(python, "w");
  ASSERT_TRUE(f != NULL);
  fputs("#!/bin/sh\necho 'OSError: [Errno 28] No space left on device' >&2\nexit 1\n", f);
  fclose(f);
  ASSERT_EQ_INT(chmod(python, 0755), 0);
  p.python = python;
  st = cml__xla_install(&w, &p, NULL, NULL);
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_RESOURCE_EXHAUSTED);
  ASSERT_CONTAINS(cml_status_message(st), "no space left");
  ASSERT_TRUE(strstr(cml_status_message(st), "no network") == NULL);
  cml_status_free(st);
  // A HOME that does not exist is reported, not created.
  char home[200], made[200];
  snprintf(home, sizeof home, "%s/no-such-home/x", g_root);
  snprintf(made, sizeof made, "%s/no-such-home", g_root);
  char* saved = getenv("HOME") ? strdup(getenv("HOME")) : NULL;
  setenv("HOME", home, 1);
  p.install_dir = NULL;
  st = cml__xla_install(&w, &p, NULL, NULL);
  if (saved) {
    setenv("HOME", saved, 1);
    free(saved);
  } else {
    unsetenv("HOME");
  }
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_FAILED_PRECONDITION);
  ASSERT_CONTAINS(cml_status_message(st), "does not exist");
  cml_status_free(st);
  ASSERT_EQ_INT(file_size(made), -1);
}

TEST(auto_install_switch_and_wheels) {
  unsetenv("GOMLX_NO_AUTO_INSTALL");
  ASSERT_TRUE(cml__xla_auto_install_enabled());
  setenv("GOMLX_NO_AUTO_INSTALL", "", 1);  // present with any value: off
  ASSERT_FALSE(cml__xla_auto_install_enabled());
  cml_xla_enable_auto_install(true);  // the API overrides the environment
  ASSERT_TRUE(cml_xla_auto_install_enabled());
  cml_xla_enable_auto_install(false);
  ASSERT_FALSE(cml_xla_auto_install_enabled());
  unsetenv("GOMLX_NO_AUTO_INSTALL");
  ASSERT_FALSE(cml_xla_auto_install_enabled());
  const cml__xla_wheel_t* cpu = cml__xla_wheel_for("cpu");
  ASSERT_TRUE(cpu != NULL && cpu->sha256 != NULL && strlen(cpu->sha256) == 64);
  const cml__xla_wheel_t* cuda = cml__xla_wheel_for("cuda");
  ASSERT_TRUE(cuda != NULL);
  ASSERT_CONTAINS(cuda->target, "nvidia/");
  ASSERT_TRUE(cml__xla_wheel_for("tpu") == NULL);
  char path[64];
  ASSERT_STATUS_CODE(cml_xla_install_plugin("metal", 0, false, path, sizeof path),
                     CML_STATUS_INVALID_ARGUMENT);
  if (!cml__xla_has_nvidia_gpu("/dev", true)) {
    ASSERT_STATUS_CODE(cml_xla_install_plugin("cuda", 0, false, path, sizeof path),
                       CML_STATUS_FAILED_PRECONDITION);
  }
}

int main(int argc, char** argv) {
  const char* const probe[] = {"python3", "-m", "pip", "--version", NULL};
  char out[512];
  int exit_code = 0;
  cml_status_t st = cml__xla_run(probe, out, sizeof out, "", &exit_code);
  if (st != CML_OK || exit_code != 0) {
    cml_status_free(st);
    printf("skipped: python3 with pip is not available\n");
    return 77;
  }
  if (!test_tmp_template(g_root, sizeof g_root, "cml_xla_inst_") || !mkdtemp(g_root)) return 1;
  const char* const make[] = {"python3", "-c", kMakeWheel, g_root, NULL};
  st = cml__xla_run(make, out, sizeof out, NULL, &exit_code);
  if (st != CML_OK || exit_code != 0 || strlen(out) < 64) {
    fprintf(stderr, "could not build the fake wheel\n");
    return 1;
  }
  memcpy(g_sha, out, 64);
  g_sha[64] = '\0';
  snprintf(g_wheels, sizeof g_wheels, "%s/wheels", g_root);
  snprintf(g_payload_path, sizeof g_payload_path, "%s/payload.bin", g_root);
  g_pip_args[0] = "--no-index";
  g_pip_args[1] = "--find-links";
  g_pip_args[2] = g_wheels;
  static const test_entry_t tests[] = {
      TEST_ENTRY(install_then_idempotent),
      TEST_ENTRY(truncated_plugin_reinstalled),
      TEST_ENTRY(checksum_mismatch_refused),
      TEST_ENTRY(concurrent_processes_install_once),
      TEST_ENTRY(no_pip_says_how_to_install),
      TEST_ENTRY(storage_failures_are_named),
      TEST_ENTRY(auto_install_switch_and_wheels),
      TEST_ENTRY(killed_install_leaves_a_temp_dir_that_the_next_install_removes)};
  int failures = 0, ran = 0;
  for (size_t i = 0; i < sizeof tests / sizeof tests[0]; ++i) {
    if (argc > 1 && strcmp(argv[1], tests[i].name) != 0) continue;
    int failed = 0;
    tests[i].fn(&failed);
    ++ran;
    printf("%s %s\n", failed ? "FAIL" : "ok  ", tests[i].name);
    failures += failed;
  }
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_root);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", g_root);
  printf("%d passed, %d failed, 0 skipped\n", ran - failures, failures);
  return (failures || ran == 0) ? 1 : 0;
}
