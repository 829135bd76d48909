// SPDX-License-Identifier: Apache-2.0
// src/backends/xla/install/install.c: installs PJRT plugins from pinned wheels with pip (see
// install.h and docs/xla.md for the choice of wheels).
#include "backends/xla/install/install.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "backends/xla/xla_internal.h"
#include "cml/xla.h"

//===--- pinned wheels ---===//

// CPU: XLA's CPU PJRT plugin as built from the XLA of jaxlib 0.11.2 (PJRT C API 0.112), the
// only CPU plugin wheel on PyPI built from upstream XLA without extra runtime. See docs/xla.md.
// CUDA: JAX's own PJRT plugin wheel; its sha256 is not pinned here (the wheel was not
// downloaded when this was written: no GPU on the build machines), so only pip's check of the
// index hash protects it.
static const cml__xla_wheel_t cml_xla_wheels[] = {
    {.plugin = "cpu",
     .package = "lammps-jax-pjrt-cpu",
     .version = "0.11.2",
     .sha256 = "1319390d948b39f69f7dade496b7c385149d9ca6097a6b62114da113216d9ad1",
     .member = "lammps_jax_pjrt_cpu/pjrt_c_api_cpu_plugin.so",
     .target = "pjrt_c_api_cpu_plugin.so",
     .libraries_requirement = NULL,
     .space_bytes = 280u * 1000 * 1000},  // a 63 MB wheel and the 202 MB plugin
    {.plugin = "cuda",
     .package = "jax-cuda13-pjrt",
     .version = "0.12.0.1",
     .sha256 = NULL,
     .member = "jax_plugins/xla_cuda13/xla_cuda_plugin.so",
     .target = "nvidia/pjrt_c_api_cuda_plugin.so",
     .libraries_requirement = "jax-cuda13-plugin[with-cuda]==0.12.0.1"},
};

const cml__xla_wheel_t* cml__xla_wheel_for(const char* plugin) {
  if (!plugin) return NULL;
  for (size_t i = 0; i < sizeof cml_xla_wheels / sizeof cml_xla_wheels[0]; ++i) {
    if (strcmp(cml_xla_wheels[i].plugin, plugin) == 0) return &cml_xla_wheels[i];
  }
  return NULL;
}

//===--- auto-install switch ---===//

// -1: not set by the API (the environment decides), 0 off, 1 on.
static atomic_int cml_xla_auto_install = -1;

void cml_xla_enable_auto_install(bool enable) { atomic_store(&cml_xla_auto_install, enable); }

bool cml__xla_auto_install_enabled(void) {
  int v = atomic_load(&cml_xla_auto_install);
  if (v >= 0) return v != 0;
  return getenv("GOMLX_NO_AUTO_INSTALL") == NULL;  // present with any value: off
}

bool cml_xla_auto_install_enabled(void) { return cml__xla_auto_install_enabled(); }

//===--- helpers ---===//

void cml__xla_install_params_init(cml__xla_install_params_t* params) {
  memset(params, 0, sizeof *params);
  params->verbosity = 1;
}

cml_status_t cml__xla_default_install_dir(char* out, size_t size) {
  const char* home = getenv("HOME");
  if (!home || !*home) {
    return cml_status_make(CML_STATUS_NOT_FOUND,
                           "xla: HOME is not set or is empty: cannot locate ~/.local/lib/go-xla");
  }
  int n = snprintf(out, size, "%s/.local/lib/go-xla", home);
  if (n < 0 || (size_t)n >= size) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "xla: HOME path is too long");
  }
  return CML_OK;
}

static cml_status_t cml_xla_mkdirs(const char* path) {
  char buf[4096];
  if (strlen(path) >= sizeof buf) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "xla: path too long: %s", path);
  }
  strcpy(buf, path);
  for (char* p = buf + 1; *p; ++p) {
    if (*p != '/') continue;
    *p = '\0';
    if (mkdir(buf, 0755) != 0 && errno != EEXIST) {
      return cml_status_make(CML_STATUS_UNAVAILABLE, "xla: cannot create \"%s\": %s", buf,
                             strerror(errno));
    }
    *p = '/';
  }
  if (mkdir(buf, 0755) != 0 && errno != EEXIST) {
    return cml_status_make(CML_STATUS_UNAVAILABLE, "xla: cannot create \"%s\": %s", buf,
                           strerror(errno));
  }
  return CML_OK;
}

static int cml_xla_rm_entry(const char* path, const struct stat* st, int flag, struct FTW* ftw) {
  (void)st;
  (void)flag;
  (void)ftw;
  remove(path);
  return 0;
}

static void cml_xla_rm_rf(const char* path) {
  nftw(path, cml_xla_rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static void cml_xla_manifest_path(const char* path, char* out, size_t size) {
  snprintf(out, size, "%s.manifest", path);
}

bool cml__xla_install_has_manifest(const char* path) {
  char manifest[4200];
  cml_xla_manifest_path(path, manifest, sizeof manifest);
  return access(manifest, F_OK) == 0;
}

// Reads "key=value" |key| from manifest text into |out|.
static bool cml_xla_manifest_get(const char* text, const char* key, char* out, size_t size) {
  size_t k = strlen(key);
  for (const char* p = text; p && *p;) {
    const char* e = strchr(p, '\n');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    if (n > k && strncmp(p, key, k) == 0 && p[k] == '=') {
      size_t v = n - k - 1;
      if (v + 1 > size) return false;
      memcpy(out, p + k + 1, v);
      out[v] = '\0';
      return true;
    }
    p = e ? e + 1 : NULL;
  }
  return false;
}

// Files whose sha256 matched their manifest in this process, by identity: hashing a 60+ MiB
// plugin at every backend creation would be slow, and a file changed since (rewritten in place,
// replaced, truncated) has another size, mtime, ctime or inode.
typedef struct cml_xla_verified_t {
  char* path;
  dev_t dev;
  ino_t ino;
  off_t size;
  struct timespec mtime, ctime;
} cml_xla_verified_t;

static pthread_mutex_t cml_xla_verified_mutex = PTHREAD_MUTEX_INITIALIZER;
static cml_xla_verified_t cml_xla_verified[8];
static size_t cml_xla_verified_next;
static atomic_int cml_xla_hashes;

static bool cml_xla_same_file(const cml_xla_verified_t* v, const char* path,
                              const struct stat* st) {
  return v->path && strcmp(v->path, path) == 0 && v->dev == st->st_dev && v->ino == st->st_ino &&
         v->size == st->st_size && v->mtime.tv_sec == st->st_mtim.tv_sec &&
         v->mtime.tv_nsec == st->st_mtim.tv_nsec && v->ctime.tv_sec == st->st_ctim.tv_sec &&
         v->ctime.tv_nsec == st->st_ctim.tv_nsec;
}

static bool cml_xla_verified_lookup(const char* path, const struct stat* st) {
  pthread_mutex_lock(&cml_xla_verified_mutex);
  bool hit = false;
  for (size_t i = 0; i < sizeof cml_xla_verified / sizeof cml_xla_verified[0] && !hit; ++i) {
    hit = cml_xla_same_file(&cml_xla_verified[i], path, st);
  }
  pthread_mutex_unlock(&cml_xla_verified_mutex);
  return hit;
}

static void cml_xla_verified_add(const char* path, const struct stat* st) {
  char* copy = strdup(path);
  if (!copy) return;  // not cached: the next check hashes again
  pthread_mutex_lock(&cml_xla_verified_mutex);
  size_t n = sizeof cml_xla_verified / sizeof cml_xla_verified[0];
  size_t slot = n;
  for (size_t i = 0; i < n && slot == n; ++i) {
    if (cml_xla_verified[i].path && strcmp(cml_xla_verified[i].path, path) == 0) slot = i;
  }
  if (slot == n) slot = cml_xla_verified_next++ % n;
  cml_xla_verified_t* v = &cml_xla_verified[slot];
  free(v->path);
  *v = (cml_xla_verified_t){.path = copy,
                            .dev = st->st_dev,
                            .ino = st->st_ino,
                            .size = st->st_size,
                            .mtime = st->st_mtim,
                            .ctime = st->st_ctim};
  pthread_mutex_unlock(&cml_xla_verified_mutex);
}

int cml__xla_install_hash_count(void) { return atomic_load(&cml_xla_hashes); }

// The stamp "<path>.verified" carries a successful hash across processes: the file's identity
// (device, inode, size, mtime, ctime) and the sha256 it had. Any write to the file changes its
// ctime, which no user can set back, so a matching stamp means the bytes are the hashed ones.
static void cml_xla_stamp_text(const struct stat* st, const char* sha, char* out, size_t size) {
  snprintf(out, size, "%llu %llu %lld %lld %ld %lld %ld %s\n", (unsigned long long)st->st_dev,
           (unsigned long long)st->st_ino, (long long)st->st_size, (long long)st->st_mtim.tv_sec,
           (long)st->st_mtim.tv_nsec, (long long)st->st_ctim.tv_sec, (long)st->st_ctim.tv_nsec,
           sha);
}

static bool cml_xla_stamp_matches(const char* path, const struct stat* st, const char* sha) {
  char stamp_path[4200], want[256], got[256];
  snprintf(stamp_path, sizeof stamp_path, "%s.verified", path);
  FILE* f = fopen(stamp_path, "r");
  if (!f) return false;
  size_t n = fread(got, 1, sizeof got - 1, f);
  fclose(f);
  got[n] = '\0';
  cml_xla_stamp_text(st, sha, want, sizeof want);
  return strcmp(got, want) == 0;
}

// Best effort (a read-only directory just means hashing again in the next process).
static void cml_xla_stamp_write(const char* path, const struct stat* st, const char* sha) {
  char stamp_path[4200], tmp[4300], text[256];
  snprintf(stamp_path, sizeof stamp_path, "%s.verified", path);
  snprintf(tmp, sizeof tmp, "%s.%ld", stamp_path, (long)getpid());
  cml_xla_stamp_text(st, sha, text, sizeof text);
  FILE* f = fopen(tmp, "w");
  if (!f) return;
  bool ok = fputs(text, f) >= 0;
  if (fclose(f) != 0) ok = false;
  if (!ok || rename(tmp, stamp_path) != 0) remove(tmp);
}

cml_status_t cml__xla_install_check(const char* path, bool full) {
  struct stat st;
  if (stat(path, &st) != 0) {
    return cml_status_make(CML_STATUS_NOT_FOUND, "xla: \"%s\" is not installed", path);
  }
  char manifest_path[4200];
  cml_xla_manifest_path(path, manifest_path, sizeof manifest_path);
  FILE* f = fopen(manifest_path, "r");
  if (!f) {
    // Installed by hand: no checksum to compare with, but a truncated or non-ELF file would
    // crash dlopen, so its structure is checked.
    return cml__xla_check_shared_object(path);
  }
  char text[2048];
  size_t n = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[n] = '\0';
  char size_text[32], sha[80];
  if (!cml_xla_manifest_get(text, "size", size_text, sizeof size_text) ||
      !cml_xla_manifest_get(text, "sha256", sha, sizeof sha)) {
    return cml_status_make(CML_STATUS_FAILED_PRECONDITION, "xla: the manifest of \"%s\" is damaged",
                           path);
  }
  unsigned long long want = strtoull(size_text, NULL, 10);
  if ((unsigned long long)st.st_size != want) {
    return cml_status_make(CML_STATUS_FAILED_PRECONDITION,
                           "xla: \"%s\" has %lld bytes but was installed with %llu (truncated or "
                           "changed)",
                           path, (long long)st.st_size, want);
  }
  if (full && !cml_xla_verified_lookup(path, &st) && cml_xla_stamp_matches(path, &st, sha)) {
    cml_xla_verified_add(path, &st);
  } else if (full && !cml_xla_verified_lookup(path, &st)) {
    char hex[65];
    uint64_t size = 0;
    atomic_fetch_add(&cml_xla_hashes, 1);
    CML_RETURN_IF_ERROR(cml__xla_sha256_file(path, hex, &size));
    if (strcmp(hex, sha) != 0) {
      return cml_status_make(CML_STATUS_FAILED_PRECONDITION,
                             "xla: \"%s\" is damaged: its sha256 is %s but it was installed with "
                             "%s (changed in place)",
                             path, hex, sha);
    }
    // The identity read before hashing: a change during the hash shows as another ctime.
    cml_xla_verified_add(path, &st);
    cml_xla_stamp_write(path, &st, sha);
  }
  return CML_OK;
}

static void cml_xla_say(const cml__xla_install_params_t* p, bool tty, const char* fmt,
                        const char* a, const char* b, const char* c) {
  if (p->verbosity >= 2 || (p->verbosity >= 1 && tty)) {
    fprintf(stderr, "cml: ");
    fprintf(stderr, fmt, a, b, c);
    fprintf(stderr, "\n");
  }
}

// The last |keep| bytes of the file at |path|, for error messages.
static void cml_xla_tail(const char* path, char* out, size_t keep) {
  out[0] = '\0';
  FILE* f = fopen(path, "r");
  if (!f) return;
  fseek(f, 0, SEEK_END);
  long end = ftell(f);
  long start = end > (long)keep - 1 ? end - (long)keep + 1 : 0;
  fseek(f, start, SEEK_SET);
  size_t n = fread(out, 1, keep - 1, f);
  out[n] = '\0';
  fclose(f);
  // Cut mid-line: start at the next whole line when there is one.
  const char* line = start > 0 ? strchr(out, '\n') : NULL;
  if (line && line[1]) {
    n -= (size_t)(line + 1 - out);
    memmove(out, line + 1, n + 1);
  }
  while (n > 0 && (out[n - 1] == '\n' || out[n - 1] == ' ')) out[--n] = '\0';
}

// Free bytes in the file system of |dir| (UINT64_MAX when unknown).
static uint64_t cml_xla_free_bytes(const char* dir) {
  struct statvfs sv;
  if (statvfs(dir, &sv) != 0) return UINT64_MAX;
  return (uint64_t)sv.f_bavail * (uint64_t)sv.f_frsize;
}

// Whether a step of the install that failed ran out of space: the tail of its log says so, or
// the install directory's file system is full (pip's log is there too, and may be empty then).
static bool cml_xla_out_of_space(const char* dir, const char* tail) {
  return strstr(tail, "No space left on device") != NULL || strstr(tail, "Errno 28") != NULL ||
         strstr(tail, "Disk quota exceeded") != NULL || cml_xla_free_bytes(dir) < (1u << 20);
}

static cml_status_t cml_xla_by_hand(cml_status_code_t code, const cml__xla_wheel_t* w,
                                    const char* dir, const char* what, const char* detail) {
  return cml_status_make(
      code,
      "xla: cannot install the %s plugin: %s%s%s. To install it by hand: `python3 -m pip "
      "download --no-deps %s==%s -d /tmp/w && python3 -c \"import zipfile,glob; "
      "open('%s/%s','wb').write(zipfile.ZipFile(glob.glob('/tmp/w/*.whl')[0]).read('%s'))\"` "
      "(or copy a PJRT plugin there, or set PJRT_PLUGIN_LIBRARY_PATH)",
      w->plugin, what, detail && *detail ? ": " : "", detail ? detail : "", w->package, w->version,
      dir, w->target, w->member);
}

static const char cml_xla_extract_script[] =
    "import sys,zipfile,shutil\n"
    "w,m,d=sys.argv[1:4]\n"
    "with zipfile.ZipFile(w) as z:\n"
    "  try: i=z.getinfo(m)\n"
    "  except KeyError:\n"
    "    sys.stderr.write('the wheel has no member %s\\n'%m); sys.exit(3)\n"
    "  with z.open(i) as s, open(d,'wb') as o: shutil.copyfileobj(s,o,1<<20)\n";

static const char cml_xla_extract_tree_script[] =
    "import sys,zipfile,shutil,os\n"
    "d=sys.argv[1]\n"
    "for w in sys.argv[2:]:\n"
    "  with zipfile.ZipFile(w) as z:\n"
    "    for i in z.infolist():\n"
    "      n=i.filename\n"
    "      if not n.startswith('nvidia/') or n.endswith('/'): continue\n"
    "      p=n.split('/')\n"
    "      if n.startswith('/') or any(x in ('','.','..') for x in p): sys.exit(4)\n"
    "      o=os.path.join(d,*p)\n"
    "      os.makedirs(os.path.dirname(o),exist_ok=True)\n"
    "      with z.open(i) as s, open(o,'wb') as f: shutil.copyfileobj(s,f,1<<20)\n"
    "      m=(i.external_attr>>16)&0o777\n"
    "      if m: os.chmod(o,m)\n";

// Finds the first file in |dir| whose name starts with |prefix| and ends with ".whl".
static bool cml_xla_find_wheel(const char* dir, const char* prefix, char* out, size_t size) {
  DIR* d = opendir(dir);
  if (!d) return false;
  struct dirent* e;
  bool found = false;
  size_t p = strlen(prefix);
  while (!found && (e = readdir(d)) != NULL) {
    size_t n = strlen(e->d_name);
    if (n > 4 && strncasecmp(e->d_name, prefix, p) == 0 && strcmp(e->d_name + n - 4, ".whl") == 0 &&
        (e->d_name[p] == '-')) {
      snprintf(out, size, "%s/%s", dir, e->d_name);
      found = true;
    }
  }
  closedir(d);
  return found;
}

typedef struct cml_xla_job_t {
  const cml__xla_wheel_t* wheel;
  const cml__xla_install_params_t* params;
  const char* dir;     // install dir
  const char* target;  // full path of the plugin
  char tmp[4400];      // temp dir inside the target's directory
  char log[4500];      // pip log (quiet mode)
  bool tty;
} cml_xla_job_t;

// The limit for each program the installer runs (pip download, the extraction scripts).
static double cml_xla_timeout(const cml__xla_install_params_t* p) {
  return p->timeout_s > 0 ? p->timeout_s : cml__xla_install_timeout_s();
}

static cml_status_t cml_xla_pip_download(cml_xla_job_t* job, const char* requirement,
                                         const char* dest, bool no_deps) {
  const cml__xla_install_params_t* p = job->params;
  const char* argv[64];
  size_t n = 0;
  argv[n++] = p->python ? p->python : "python3";
  argv[n++] = "-m";
  argv[n++] = "pip";
  argv[n++] = "download";
  if (no_deps) argv[n++] = "--no-deps";
  argv[n++] = "--only-binary=:all:";
  argv[n++] = "--disable-pip-version-check";
  argv[n++] = "--no-input";
  bool show = p->verbosity >= 2 || (p->verbosity >= 1 && job->tty);
  if (!show) argv[n++] = "--progress-bar=off";
  argv[n++] = "-d";
  argv[n++] = dest;
  argv[n++] = requirement;
  for (size_t i = 0; i < p->pip_arg_count && n < 63; ++i) argv[n++] = p->pip_args[i];
  argv[n] = NULL;
  int exit_code = 0;
  // On a terminal pip's own progress bar is the progress display; otherwise its output goes to
  // a log whose tail ends up in the error message.
  if (show) {
    const char* const* cargv = argv;
    CML_RETURN_IF_ERROR(
        cml__xla_run_with_timeout(cargv, NULL, 0, NULL, cml_xla_timeout(p), &exit_code));
  } else {
    const char* const* cargv = argv;
    CML_RETURN_IF_ERROR(
        cml__xla_run_with_timeout(cargv, NULL, 0, job->log, cml_xla_timeout(p), &exit_code));
  }
  if (exit_code == 0) return CML_OK;
  char tail[600];
  cml_xla_tail(job->log, tail, sizeof tail);
  char what[256];
  cml_status_code_t code = CML_STATUS_UNAVAILABLE;
  if (exit_code == 127) {
    snprintf(what, sizeof what, "could not run \"%s -m pip\" (is python3 with pip installed?)",
             argv[0]);
  } else if (cml_xla_out_of_space(dest, tail)) {
    code = CML_STATUS_RESOURCE_EXHAUSTED;
    snprintf(what, sizeof what,
             "`pip download %s` failed (exit %d): no space left on the device (%.0f MB free in "
             "\"%s\"; pip also writes in TMPDIR)",
             requirement, exit_code, (double)cml_xla_free_bytes(dest) / 1e6, job->dir);
  } else {
    snprintf(what, sizeof what, "`pip download %s` failed (exit %d; no network?)", requirement,
             exit_code);
  }
  return cml_xla_by_hand(code, job->wheel, job->dir, what, tail);
}

static cml_status_t cml_xla_run_python(cml_xla_job_t* job, const char* const* args, size_t count,
                                       const char* what) {
  const char* argv[80];
  size_t n = 0;
  argv[n++] = job->params->python ? job->params->python : "python3";
  argv[n++] = "-c";
  for (size_t i = 0; i < count && n < 79; ++i) argv[n++] = args[i];
  argv[n] = NULL;
  int exit_code = 0;
  CML_RETURN_IF_ERROR(
      cml__xla_run_with_timeout(argv, NULL, 0, job->log, cml_xla_timeout(job->params), &exit_code));
  if (exit_code != 0) {
    char tail[600];
    cml_xla_tail(job->log, tail, sizeof tail);
    if (cml_xla_out_of_space(job->tmp, tail)) {
      char full[512];
      snprintf(full, sizeof full, "%s: no space left on the device (%.0f MB free in \"%s\")", what,
               (double)cml_xla_free_bytes(job->tmp) / 1e6, job->dir);
      return cml_xla_by_hand(CML_STATUS_RESOURCE_EXHAUSTED, job->wheel, job->dir, full, tail);
    }
    return cml_xla_by_hand(CML_STATUS_UNAVAILABLE, job->wheel, job->dir, what, tail);
  }
  return CML_OK;
}

// CUDA: downloads the nvidia-* wheels and extracts their nvidia/ trees into <dir>/nvidia/.
static cml_status_t cml_xla_install_libraries(cml_xla_job_t* job) {
  const cml__xla_wheel_t* w = job->wheel;
  char libs[4500], tree[4500];
  snprintf(libs, sizeof libs, "%s/libs", job->tmp);
  snprintf(tree, sizeof tree, "%s/tree", job->tmp);
  CML_RETURN_IF_ERROR(cml_xla_pip_download(job, w->libraries_requirement, libs, false));
  const char* args[70];
  size_t n = 0;
  args[n++] = cml_xla_extract_tree_script;
  args[n++] = tree;
  char* wheels[64];
  size_t wheel_count = 0;
  DIR* d = opendir(libs);
  if (d) {
    struct dirent* e;
    while ((e = readdir(d)) != NULL && wheel_count < 64) {
      if (strncmp(e->d_name, "nvidia_", 7) != 0) continue;
      size_t len = strlen(libs) + strlen(e->d_name) + 2;
      wheels[wheel_count] = malloc(len);
      if (!wheels[wheel_count]) break;
      snprintf(wheels[wheel_count], len, "%s/%s", libs, e->d_name);
      args[n++] = wheels[wheel_count++];
    }
    closedir(d);
  }
  cml_status_t st = CML_OK;
  if (wheel_count == 0) {
    st = cml_xla_by_hand(CML_STATUS_UNAVAILABLE, w, job->dir, "no nvidia-* wheels were downloaded",
                         w->libraries_requirement);
  } else {
    st = cml_xla_run_python(job, args, n, "extracting the nvidia libraries failed");
  }
  for (size_t i = 0; i < wheel_count; ++i) free(wheels[i]);
  if (st != CML_OK) return st;
  // Move every top-level entry of tree/nvidia into <dir>/nvidia (replacing older copies).
  char src_root[4600], dst_root[4400];
  snprintf(src_root, sizeof src_root, "%s/nvidia", tree);
  snprintf(dst_root, sizeof dst_root, "%s/nvidia", job->dir);
  CML_RETURN_IF_ERROR(cml_xla_mkdirs(dst_root));
  d = opendir(src_root);
  if (!d) return CML_OK;
  struct dirent* e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    char from[4900], to[4700];
    snprintf(from, sizeof from, "%s/%s", src_root, e->d_name);
    snprintf(to, sizeof to, "%s/%s", dst_root, e->d_name);
    cml_xla_rm_rf(to);
    if (rename(from, to) != 0) {
      st = cml_status_make(CML_STATUS_UNAVAILABLE, "xla: cannot move \"%s\" to \"%s\": %s", from,
                           to, strerror(errno));
      break;
    }
  }
  closedir(d);
  if (st != CML_OK) return st;
  // ptxas where XLA looks for it: <nvidia>/bin/ptxas -> cu13/bin/ptxas.
  char bin[4500], ptxas[4600];
  snprintf(bin, sizeof bin, "%s/bin", dst_root);
  snprintf(ptxas, sizeof ptxas, "%s/cu13/bin/ptxas", dst_root);
  if (access(ptxas, F_OK) == 0 && cml_xla_mkdirs(bin) == CML_OK) {
    char link[4600];
    snprintf(link, sizeof link, "%s/ptxas", bin);
    unlink(link);
    // Best effort: XLA also finds ptxas through --xla_gpu_cuda_data_dir=<nvidia>/cu13.
    (void)symlink("../cu13/bin/ptxas", link);
  }
  return CML_OK;
}

// Removes the temporary directories that installers killed mid-way (SIGKILL, power loss) left
// in |dir|: "<prefix><pid>-XXXXXX" whose pid is not a running process. Called under the install
// lock, so no live installer of this target owns one; a live pid (another target's installer
// sharing the directory, or a reused pid) keeps its directory.
static void cml_xla_remove_stale_temps(const char* dir) {
  DIR* d = opendir(dir);
  if (!d) return;
  size_t prefix = strlen(CML_XLA_INSTALL_TMP_PREFIX);
  struct dirent* e;
  while ((e = readdir(d)) != NULL) {
    if (strncmp(e->d_name, CML_XLA_INSTALL_TMP_PREFIX, prefix) != 0) continue;
    const char* p = e->d_name + prefix;
    char* end = NULL;
    long pid = strtol(p, &end, 10);
    bool named = end != p && *end == '-' && pid > 0;
    // Older installers used ".cml-install-XXXXXX" (no pid): stale under the lock.
    bool alive = named && pid != (long)getpid() && (kill((pid_t)pid, 0) == 0 || errno == EPERM);
    if (alive) continue;
    char path[4400];
    int n = snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    if (n > 0 && (size_t)n < sizeof path) cml_xla_rm_rf(path);
  }
  closedir(d);
}

static cml_status_t cml_xla_install_locked(cml_xla_job_t* job) {
  const cml__xla_wheel_t* w = job->wheel;
  char wheels[4500], staged[4500];
  snprintf(wheels, sizeof wheels, "%s/wheels", job->tmp);
  snprintf(staged, sizeof staged, "%s/plugin.so", job->tmp);
  char requirement[256];
  snprintf(requirement, sizeof requirement, "%s==%s", w->package, w->version);
  cml_xla_say(job->params, job->tty, "downloading %s %s with pip (the XLA %s plugin) ...",
              w->package, w->version, w->plugin);
  CML_RETURN_IF_ERROR(cml_xla_pip_download(job, requirement, wheels, true));
  // pip normalizes the file name: lower case, '-' -> '_'.
  char prefix[128];
  snprintf(prefix, sizeof prefix, "%s", w->package);
  for (char* p = prefix; *p; ++p) {
    if (*p == '-' || *p == '.') *p = '_';
  }
  char wheel_path[4800];
  if (!cml_xla_find_wheel(wheels, prefix, wheel_path, sizeof wheel_path)) {
    return cml_xla_by_hand(CML_STATUS_UNAVAILABLE, w, job->dir,
                           "pip reported success but left no wheel", wheels);
  }
  char hex[65];
  uint64_t wheel_size = 0;
  CML_RETURN_IF_ERROR(cml__xla_sha256_file(wheel_path, hex, &wheel_size));
  if (w->sha256 && strcmp(hex, w->sha256) != 0) {
    return cml_status_make(CML_STATUS_UNAVAILABLE,
                           "xla: checksum mismatch for %s %s: the downloaded wheel has sha256 %s, "
                           "the pinned value is %s; refusing to install it",
                           w->package, w->version, hex, w->sha256);
  }
  cml_xla_say(job->params, job->tty, "extracting %s from %s%s", w->member, wheel_path, "");
  const char* args[] = {cml_xla_extract_script, wheel_path, w->member, staged};
  CML_RETURN_IF_ERROR(cml_xla_run_python(job, args, 4, "extracting the plugin failed"));
  if (w->libraries_requirement) CML_RETURN_IF_ERROR(cml_xla_install_libraries(job));
  char so_hex[65];
  uint64_t so_size = 0;
  CML_RETURN_IF_ERROR(cml__xla_sha256_file(staged, so_hex, &so_size));
  if (so_size == 0) {
    return cml_xla_by_hand(CML_STATUS_UNAVAILABLE, w, job->dir, "the extracted plugin is empty",
                           NULL);
  }
  char manifest_tmp[4500], manifest[4400];
  snprintf(manifest_tmp, sizeof manifest_tmp, "%s/manifest", job->tmp);
  cml_xla_manifest_path(job->target, manifest, sizeof manifest);
  FILE* f = fopen(manifest_tmp, "w");
  if (!f) {
    return cml_status_make(CML_STATUS_UNAVAILABLE, "xla: cannot write \"%s\": %s", manifest_tmp,
                           strerror(errno));
  }
  fprintf(f, "package=%s\nversion=%s\nwheel_sha256=%s\nmember=%s\nsize=%llu\nsha256=%s\n",
          w->package, w->version, hex, w->member, (unsigned long long)so_size, so_hex);
  if (ferror(f) != 0 || fclose(f) != 0) {
    int err = errno;
    return cml_status_make(cml__xla_errno_code(err) == CML_STATUS_INTERNAL
                               ? CML_STATUS_UNAVAILABLE
                               : cml__xla_errno_code(err),
                           "xla: cannot write \"%s\": %s", manifest_tmp, strerror(err));
  }
  chmod(staged, 0755);
  // Manifest first: a crash between the two renames leaves a manifest that does not match the
  // file (or no file), which the next check reports as broken and reinstalls.
  if (rename(manifest_tmp, manifest) != 0 || rename(staged, job->target) != 0) {
    return cml_status_make(CML_STATUS_UNAVAILABLE, "xla: cannot install \"%s\": %s", job->target,
                           strerror(errno));
  }
  struct stat installed;
  if (stat(job->target, &installed) == 0) {
    cml_xla_verified_add(job->target, &installed);
    cml_xla_stamp_write(job->target, &installed, so_hex);
  }
  cml_xla_say(job->params, job->tty, "installed %s (%s %s)", job->target, w->package, w->version);
  return CML_OK;
}

cml_status_t cml__xla_install(const cml__xla_wheel_t* wheel,
                              const cml__xla_install_params_t* params, char** out_path,
                              bool* out_installed) {
  if (out_path) *out_path = NULL;
  if (out_installed) *out_installed = false;
  if (!wheel || !params) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "xla: no plugin to install");
  }
  char dir[4096];
  if (params->install_dir) {
    snprintf(dir, sizeof dir, "%s", params->install_dir);
  } else {
    CML_RETURN_IF_ERROR(cml__xla_default_install_dir(dir, sizeof dir));
    // ~/.local/lib/go-xla is made as needed, the home directory itself never: a HOME that does
    // not exist (HOME=/nonexistent, a typo) is a mistake to report, not a directory to create.
    const char* home = getenv("HOME");
    struct stat hs;
    if (stat(home, &hs) != 0 || !S_ISDIR(hs.st_mode)) {
      return cml_status_make(CML_STATUS_FAILED_PRECONDITION,
                             "xla: cannot install into ~/.local/lib/go-xla: HOME (\"%s\") %s; set "
                             "HOME, or install by hand and set PJRT_PLUGIN_LIBRARY_PATH",
                             home, stat(home, &hs) != 0 ? "does not exist" : "is not a directory");
    }
  }
  char target[4300];
  snprintf(target, sizeof target, "%s/%s", dir, wheel->target);
  char target_dir[4300];
  snprintf(target_dir, sizeof target_dir, "%s", target);
  *strrchr(target_dir, '/') = '\0';
  CML_RETURN_IF_ERROR(cml_xla_mkdirs(target_dir));

  cml_status_t st = CML_OK;
  bool sound = false;
  if (!params->force) {
    // The sha256 too (once per process per file): a copy damaged in place is repaired.
    cml_status_t check = cml__xla_install_check(target, true);
    sound = check == CML_OK;
    cml_status_free(check);
  }
  int lock_fd = -1;
  if (!sound) {
    char lock_path[4400];
    snprintf(lock_path, sizeof lock_path, "%s.lock", target);
    // O_NOFOLLOW: the lock is truncated and written (the owner's pid), so a symbolic link
    // planted at its name must not lead that write to another file.
    lock_fd = open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (lock_fd < 0) {
      int err = errno;
      return cml_status_make(CML_STATUS_UNAVAILABLE, "xla: cannot open lock file \"%s\": %s%s",
                             lock_path, strerror(err),
                             err == ELOOP ? " (a symbolic link: not followed; remove it)" : "");
    }
    double timeout = params->lock_timeout_s > 0 ? params->lock_timeout_s : 300.0;
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    while (flock(lock_fd, LOCK_EX | LOCK_NB) != 0) {
      clock_gettime(CLOCK_MONOTONIC, &now);
      double waited =
          (double)(now.tv_sec - start.tv_sec) + 1e-9 * (double)(now.tv_nsec - start.tv_nsec);
      if (waited > timeout) {
        close(lock_fd);
        return cml_status_make(CML_STATUS_UNAVAILABLE,
                               "xla: another process has been installing \"%s\" for %.0f s (lock "
                               "\"%s\"); if none is running, remove the lock file",
                               target, waited, lock_path);
      }
      nanosleep(&(struct timespec){0, 100 * 1000 * 1000}, NULL);
    }
    // The lock's owner, for whoever finds the lock held.
    if (ftruncate(lock_fd, 0) == 0) {
      char pid_text[32];
      int n = snprintf(pid_text, sizeof pid_text, "%ld\n", (long)getpid());
      if (n > 0 && pwrite(lock_fd, pid_text, (size_t)n, 0) < 0) {
        // Informational only.
      }
    }
    // Another process may have installed it while this one waited.
    if (!params->force) {
      cml_status_t check = cml__xla_install_check(target, true);
      sound = check == CML_OK;
      cml_status_free(check);
    }
    if (!sound) cml_xla_remove_stale_temps(target_dir);
    // Room for the wheel and the plugin, before downloading anything.
    const uint64_t free_bytes = cml_xla_free_bytes(target_dir);
    if (!sound && wheel->space_bytes > 0 && free_bytes < wheel->space_bytes) {
      close(lock_fd);
      return cml_status_make(CML_STATUS_RESOURCE_EXHAUSTED,
                             "xla: cannot install the %s plugin: it needs about %.0f MB free in "
                             "\"%s\", and its file system has %.0f MB",
                             wheel->plugin, (double)wheel->space_bytes / 1e6, target_dir,
                             (double)free_bytes / 1e6);
    }
  }
  if (!sound) {
    cml_xla_job_t job;
    memset(&job, 0, sizeof job);
    job.wheel = wheel;
    job.params = params;
    job.dir = dir;
    job.target = target;
    job.tty = isatty(2) != 0;
    snprintf(job.tmp, sizeof job.tmp, "%s/%s%ld-XXXXXX", target_dir, CML_XLA_INSTALL_TMP_PREFIX,
             (long)getpid());
    if (!mkdtemp(job.tmp)) {
      st = cml_status_make(CML_STATUS_UNAVAILABLE,
                           "xla: cannot create a temporary directory in "
                           "\"%s\": %s",
                           target_dir, strerror(errno));
    } else {
      snprintf(job.log, sizeof job.log, "%s/log.txt", job.tmp);
      st = cml_xla_install_locked(&job);
      cml_xla_rm_rf(job.tmp);
    }
    if (st == CML_OK && out_installed) *out_installed = true;
  }
  if (lock_fd >= 0) close(lock_fd);  // releases the lock
  if (st != CML_OK) return st;
  if (out_path) {
    *out_path = strdup(target);
    if (!*out_path) return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
  }
  return CML_OK;
}

//===--- public API ---===//

cml_status_t cml_xla_install_plugin(const char* plugin, int verbosity, bool force,
                                    char* path_buffer, size_t path_size) {
  if (path_buffer && path_size) path_buffer[0] = '\0';
  const cml__xla_wheel_t* wheel = cml__xla_wheel_for(plugin);
  if (!wheel) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "xla: cannot install plugin \"%s\": cml installs \"cpu\" and \"cuda\"",
                           plugin ? plugin : "(null)");
  }
  if (strcmp(wheel->plugin, "cuda") == 0 && !cml__xla_has_nvidia_gpu("/dev", true)) {
    return cml_status_make(CML_STATUS_FAILED_PRECONDITION,
                           "xla: not installing the CUDA plugin: no NVIDIA GPU found (no "
                           "/dev/nvidia* and no working nvidia-smi)");
  }
  cml__xla_install_params_t params;
  cml__xla_install_params_init(&params);
  params.verbosity = verbosity;
  params.force = force;
  char* path = NULL;
  CML_RETURN_IF_ERROR(cml__xla_install(wheel, &params, &path, NULL));
  cml_status_t st = CML_OK;
  if (path_buffer && path_size) {
    const int n = snprintf(path_buffer, path_size, "%s", path);
    if (n < 0 || (size_t)n >= path_size) {
      // A cut path would name another file: say so instead of returning it.
      st = cml_status_make(CML_STATUS_OUT_OF_RANGE,
                           "cml_xla_install_plugin: the plugin is installed at %s, whose %d "
                           "bytes do not fit path_buffer (%zu bytes with the terminating NUL)",
                           path, n, path_size);
      path_buffer[0] = '\0';
    }
  }
  free(path);
  return st;
}
