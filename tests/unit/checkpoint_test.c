// SPDX-License-Identifier: Apache-2.0
// tests/unit/checkpoint_test.c: checkpoint files (cml/checkpoint.h): round trips (host data and
// buffers, many dtypes, scalars, empty tensors), the documented byte layout, atomic replacement,
// and every kind of damage (truncation, flipped bits, bad magic, newer version, mismatched
// shapes, missing names) reported with the file and tensor named.
#include <dirent.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cml/checkpoint.h"
#include "cml/cml.h"
#include "test.h"

static bool status_matches(cml_status_t st, cml_status_code_t code, const char* const* needles) {
  bool ok = cml_status_code(st) == code;
  for (const char* const* n = needles; ok && *n; ++n) {
    ok = strstr(cml_status_message(st), *n) != NULL;
  }
  if (!ok) {
    fprintf(stderr, "status: want %s, got %s: \"%s\"\n", cml_status_code_name(code),
            cml_status_code_name(cml_status_code(st)), cml_status_message(st));
  }
  cml_status_free(st);
  return ok;
}
#define ASSERT_STATUS(expr, code, ...) \
  ASSERT_TRUE(status_matches((expr), (code), (const char* const[]){__VA_ARGS__, NULL}))

// A fresh path in the build directory (the test runs there).
static const char* temp_path(const char* name) {
  static char buf[256];
  snprintf(buf, sizeof buf, "checkpoint_test_%ld_%s.ckpt", (long)getpid(), name);
  return buf;
}

static size_t file_read(const char* path, unsigned char* buf, size_t cap) {
  FILE* f = fopen(path, "rb");
  if (!f) return 0;
  size_t n = fread(buf, 1, cap, f);
  fclose(f);
  return n;
}

static bool file_write(const char* path, const unsigned char* buf, size_t n) {
  FILE* f = fopen(path, "wb");
  if (!f) return false;
  bool ok = fwrite(buf, 1, n, f) == n;
  return fclose(f) == 0 && ok;
}

// Little-endian u64 at |p|.
static uint64_t le_u64(const unsigned char* p) {
  uint64_t v = 0;
  for (int k = 7; k >= 0; --k) v = (v << 8) | p[k];
  return v;
}

// CRC-32, IEEE 802.3 reflected (zlib's crc32), bit by bit: the file format's checksum computed
// independently of the library's table.
static uint32_t crc32_ieee(const unsigned char* p, size_t n) {
  uint32_t crc = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; ++i) {
    crc ^= p[i];
    for (int b = 0; b < 8; ++b) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

// Three tensors: w f32[2,3], step i64 scalar, h bf16[4].
static float g_w[6] = {1.5f, -2, 3.25f, 0, 1e-30f, -7};
static int64_t g_n = -123456789012345LL;
static uint16_t g_h[4] = {0x3f80, 0xbf80, 0x0001, 0x7fc0};
static const char* g_names[3] = {"layer/w", "counter", "half"};

static cml_shape_t g_shapes[3];
static void init_shapes(void) {
  g_shapes[0] = cml_shape_make(CML_DTYPE_F32, 2, (int64_t[]){2, 3});
  g_shapes[1] = cml_shape_scalar(CML_DTYPE_I64);
  g_shapes[2] = cml_shape_make(CML_DTYPE_BF16, 1, (int64_t[]){4});
}

static cml_status_t save3(const char* path, int64_t step) {
  init_shapes();
  const void* data[3] = {g_w, &g_n, g_h};
  return cml_checkpoint_save(path, step, g_names, g_shapes, data, 3);
}

TEST(round_trip_host_data) {
  const char* path = temp_path("rt");
  ASSERT_STATUS_OK(save3(path, 42));
  cml_checkpoint_t* ck = NULL;
  ASSERT_STATUS_OK(cml_checkpoint_load(path, &ck));
  ASSERT_EQ_INT(cml_checkpoint_step(ck), 42);
  ASSERT_EQ_INT(cml_checkpoint_tensor_count(ck), 3);
  ASSERT_STREQ(cml_checkpoint_path(ck), path);
  for (size_t i = 0; i < 3; ++i) {
    ASSERT_STREQ(cml_checkpoint_tensor_name(ck, i), g_names[i]);
    ASSERT_TRUE(cml_shape_equal(cml_checkpoint_tensor_shape(ck, i), &g_shapes[i]));
  }
  ASSERT_EQ_INT(cml_checkpoint_find(ck, "half"), 2);
  ASSERT_EQ_INT(cml_checkpoint_find(ck, "nope"), -1);
  float w[6];
  ASSERT_STATUS_OK(cml_checkpoint_read(ck, "layer/w", &g_shapes[0], w, sizeof w));
  ASSERT_TRUE(memcmp(w, g_w, sizeof w) == 0);
  int64_t n = 0;
  ASSERT_STATUS_OK(cml_checkpoint_read(ck, "counter", NULL, &n, sizeof n));
  ASSERT_EQ_INT(n, g_n);
  ASSERT_TRUE(memcmp(cml_checkpoint_tensor_data(ck, 2), g_h, sizeof g_h) == 0);
  // Mismatches name the file, the tensor and both shapes.
  cml_shape_t wrong = cml_shape_make(CML_DTYPE_F32, 2, (int64_t[]){3, 2});
  ASSERT_STATUS(cml_checkpoint_read(ck, "layer/w", &wrong, w, sizeof w),
                CML_STATUS_INVALID_ARGUMENT, path, "\"layer/w\"", "[2, 3]", "[3, 2]");
  ASSERT_STATUS(cml_checkpoint_read(ck, "layer/w", NULL, w, 8), CML_STATUS_INVALID_ARGUMENT,
                "\"layer/w\"", "24 bytes");
  ASSERT_STATUS(cml_checkpoint_read(ck, "missing", NULL, w, sizeof w), CML_STATUS_NOT_FOUND, path,
                "\"missing\"");
  cml_checkpoint_destroy(ck);
  ASSERT_EQ_INT(unlink(path), 0);
}

TEST(layout_is_the_documented_one) {
  // docs/checkpoint.md: magic, version 1, count, step, index bytes, file bytes, all
  // little-endian; data 64-byte aligned.
  const char* path = temp_path("layout");
  ASSERT_STATUS_OK(save3(path, 7));
  unsigned char buf[4096];
  size_t n = file_read(path, buf, sizeof buf);
  ASSERT_TRUE(memcmp(buf, "CMLCKPT\n", 8) == 0);
  ASSERT_EQ_INT(buf[8], 1);
  ASSERT_EQ_INT(buf[12], 3);
  ASSERT_EQ_INT(buf[16], 7);
  uint64_t file_bytes = 0;
  for (int i = 0; i < 8; ++i) file_bytes |= (uint64_t)buf[32 + i] << (8 * i);
  ASSERT_EQ_U64(file_bytes, n);
  // The first index entry: name length 7, "layer/w", dtype "Float32", rank 2, dims 2 and 3.
  ASSERT_EQ_INT(buf[40] | buf[41] << 8, 7);
  ASSERT_TRUE(memcmp(buf + 42, "layer/w", 7) == 0);
  ASSERT_EQ_INT(buf[49], 7);
  ASSERT_TRUE(memcmp(buf + 50, "Float32", 7) == 0);
  ASSERT_EQ_INT(buf[57], 2);
  ASSERT_EQ_INT(buf[58], 2);
  ASSERT_EQ_INT(buf[66], 3);
  uint64_t offset = 0;
  for (int i = 0; i < 8; ++i) offset |= (uint64_t)buf[74 + i] << (8 * i);
  ASSERT_EQ_U64(offset % 64, 0);
  float first;
  memcpy(&first, buf + offset, 4);  // this test runs on little-endian hosts
  ASSERT_EQ_DBL(first, 1.5);
  ASSERT_EQ_INT(unlink(path), 0);
}

TEST(round_trip_buffers_and_empty) {
  cml_backend_t* be = NULL;
  ASSERT_STATUS_OK(cml_backend_new_with_config("c", &be));
  init_shapes();
  cml_buffer_t* bufs[2] = {NULL, NULL};
  ASSERT_STATUS_OK(cml_buffer_from_host(be, 0, &g_shapes[0], g_w, sizeof g_w, &bufs[0]));
  cml_shape_t empty = cml_shape_make(CML_DTYPE_F32, 2, (int64_t[]){0, 5});
  ASSERT_STATUS_OK(cml_buffer_from_host(be, 0, &empty, NULL, 0, &bufs[1]));
  const char* path = temp_path("buf");
  ASSERT_STATUS_OK(
      cml_checkpoint_save_buffers(path, -1, (const char* const[]){"w", "empty"}, bufs, 2));
  cml_checkpoint_t* ck = NULL;
  ASSERT_STATUS_OK(cml_checkpoint_load(path, &ck));
  ASSERT_EQ_INT(cml_checkpoint_step(ck), -1);
  cml_buffer_t* w = NULL;
  ASSERT_STATUS_OK(cml_checkpoint_read_buffer(ck, "w", &g_shapes[0], be, 0, &w));
  float back[6];
  ASSERT_STATUS_OK(cml_buffer_copy_to_host(w, back, sizeof back));
  ASSERT_TRUE(memcmp(back, g_w, sizeof back) == 0);
  cml_buffer_release(w);
  ASSERT_TRUE(cml_shape_equal(cml_checkpoint_tensor_shape(ck, 1), &empty));
  ASSERT_STATUS(cml_checkpoint_read_buffer(ck, "w", &empty, be, 0, &w), CML_STATUS_INVALID_ARGUMENT,
                "\"w\"", "[0, 5]");
  ASSERT_TRUE(w == NULL);
  cml_checkpoint_destroy(ck);
  // No tensors at all.
  ASSERT_STATUS_OK(cml_checkpoint_save(path, 5, NULL, NULL, NULL, 0));
  ASSERT_STATUS_OK(cml_checkpoint_load(path, &ck));
  ASSERT_EQ_INT(cml_checkpoint_tensor_count(ck), 0);
  ASSERT_EQ_INT(cml_checkpoint_step(ck), 5);
  cml_checkpoint_destroy(ck);
  ASSERT_EQ_INT(unlink(path), 0);
  cml_buffer_release(bufs[0]);
  cml_buffer_release(bufs[1]);
  cml_backend_release(be);
}

// The number of files in the current directory whose name starts with "<path>.tmp." or
// ".cml-ckpt." (what a save writes before its rename).
static int count_temp_files(const char* path) {
  char prefix[300];
  snprintf(prefix, sizeof prefix, "%s.tmp.", path);
  DIR* d = opendir(".");
  if (!d) return -1;
  int n = 0;
  for (struct dirent* e = readdir(d); e; e = readdir(d)) {
    if (strncmp(e->d_name, prefix, strlen(prefix)) == 0 ||
        strncmp(e->d_name, ".cml-ckpt.", 10) == 0) {
      ++n;
    }
  }
  closedir(d);
  return n;
}

TEST(save_replaces_atomically_and_leaves_no_temp_file) {
  const char* path = temp_path("atomic");
  char copy[256];
  snprintf(copy, sizeof copy, "%s", path);
  ASSERT_STATUS_OK(save3(copy, 1));
  ASSERT_STATUS_OK(save3(copy, 2));
  cml_checkpoint_t* ck = NULL;
  ASSERT_STATUS_OK(cml_checkpoint_load(copy, &ck));
  ASSERT_EQ_INT(cml_checkpoint_step(ck), 2);
  cml_checkpoint_destroy(ck);
  ASSERT_EQ_INT(count_temp_files(copy), 0);
  // A save that cannot write (the directory does not exist) leaves the old file untouched.
  ASSERT_STATUS(save3("no_such_dir_for_cml/x.ckpt", 3), CML_STATUS_NOT_FOUND,
                "no_such_dir_for_cml/x.ckpt");
  ASSERT_EQ_INT(unlink(copy), 0);
}

TEST(damaged_files_are_rejected_naming_file_and_tensor) {
  const char* path = temp_path("damage");
  char p[256];
  snprintf(p, sizeof p, "%s", path);
  ASSERT_STATUS_OK(save3(p, 9));
  unsigned char good[4096], bad[4096];
  size_t n = file_read(p, good, sizeof good);
  ASSERT_TRUE(n > 200);
  cml_checkpoint_t* ck = NULL;
  // Truncated at every length (a killed writer without the atomic rename would leave these).
  for (size_t len = 0; len < n; len += (len < 64 ? 1 : 7)) {
    ASSERT_TRUE(file_write(p, good, len));
    cml_status_t st = cml_checkpoint_load(p, &ck);
    ASSERT_TRUE(ck == NULL);
    ASSERT_TRUE(status_matches(st, CML_STATUS_INVALID_ARGUMENT, (const char* const[]){p, NULL}));
  }
  ASSERT_TRUE(file_write(p, good, n - 1));
  ASSERT_STATUS(cml_checkpoint_load(p, &ck), CML_STATUS_INVALID_ARGUMENT, p, "truncated");
  // A flipped bit in the data of "half" (the last tensor, the file's last bytes).
  memcpy(bad, good, n);
  bad[n - 1] ^= 0x10;
  ASSERT_TRUE(file_write(p, bad, n));
  ASSERT_STATUS(cml_checkpoint_load(p, &ck), CML_STATUS_INVALID_ARGUMENT, p, "\"half\"", "corrupt");
  // A flipped bit in the index.
  memcpy(bad, good, n);
  bad[45] ^= 1;
  ASSERT_TRUE(file_write(p, bad, n));
  ASSERT_STATUS(cml_checkpoint_load(p, &ck), CML_STATUS_INVALID_ARGUMENT, p, "header checksum");
  // A flipped bit in the header's file-size field: the header is damaged, the file is whole
  // (this once said "truncated").
  memcpy(bad, good, n);
  bad[33] ^= 0x40;
  ASSERT_TRUE(file_write(p, bad, n));
  ASSERT_STATUS(cml_checkpoint_load(p, &ck), CML_STATUS_INVALID_ARGUMENT, p, "damaged",
                "header checksum");
  // Wrong magic, newer version, trailing bytes.
  memcpy(bad, good, n);
  bad[0] = 'X';
  ASSERT_TRUE(file_write(p, bad, n));
  ASSERT_STATUS(cml_checkpoint_load(p, &ck), CML_STATUS_INVALID_ARGUMENT, p, "magic");
  // A newer version: INCOMPATIBLE when the header's CRC matches (every version keeps that
  // framing), damaged when it does not (a flipped version byte once said "newer").
  memcpy(bad, good, n);
  bad[8] = 2;
  ASSERT_TRUE(file_write(p, bad, n));
  ASSERT_STATUS(cml_checkpoint_load(p, &ck), CML_STATUS_INVALID_ARGUMENT, p, "damaged");
  size_t head = 40 + (size_t)le_u64(good + 24);
  uint32_t crc = crc32_ieee(bad, head);
  for (int k = 0; k < 4; ++k) bad[head + (size_t)k] = (unsigned char)(crc >> (8 * k));
  ASSERT_TRUE(file_write(p, bad, n));
  ASSERT_STATUS(cml_checkpoint_load(p, &ck), CML_STATUS_INCOMPATIBLE, p, "version 2");
  // A flipped high bit of the index size: more than the tensor count allows, refused at once
  // (it was read, up to the file's size, before the CRC said "damaged").
  memcpy(bad, good, n);
  bad[24 + 3] ^= 0x40;
  ASSERT_TRUE(file_write(p, bad, n));
  ASSERT_STATUS(cml_checkpoint_load(p, &ck), CML_STATUS_INVALID_ARGUMENT, p, "damaged",
                "3 tensors");
  memcpy(bad, good, n);
  bad[n] = 0;
  ASSERT_TRUE(file_write(p, bad, n + 1));
  ASSERT_STATUS(cml_checkpoint_load(p, &ck), CML_STATUS_INVALID_ARGUMENT, p, "trailing");
  ASSERT_EQ_INT(unlink(p), 0);
  ASSERT_STATUS(cml_checkpoint_load(p, &ck), CML_STATUS_NOT_FOUND, p);
  ASSERT_STATUS(cml_checkpoint_load(".", &ck), CML_STATUS_INVALID_ARGUMENT, "regular file");
  // A FIFO with no writer: refused at once (the open used to wait for a writer forever).
  ASSERT_EQ_INT(mkfifo(p, 0600), 0);
  ASSERT_STATUS(cml_checkpoint_load(p, &ck), CML_STATUS_INVALID_ARGUMENT, p, "regular file");
  ASSERT_EQ_INT(unlink(p), 0);
  ASSERT_TRUE(ck == NULL);
}

// A save renames a new file over the old one, so it refuses a FIFO, a directory or a device at
// the path (it once replaced them with a regular file: /dev/null too, as root), and follows a
// symbolic link to the file it leads to, keeping the link.
TEST(save_keeps_fifos_devices_and_links) {
  char p[256], link[256], target[256], link2[256], target2[256], loop_a[256], loop_b[256];
  snprintf(p, sizeof p, "%s", temp_path("special"));
  snprintf(link, sizeof link, "%s", temp_path("link"));
  snprintf(target, sizeof target, "%s", temp_path("target"));
  snprintf(link2, sizeof link2, "%s", temp_path("dangling"));
  snprintf(target2, sizeof target2, "%s", temp_path("made_by_save"));
  snprintf(loop_a, sizeof loop_a, "%s", temp_path("loop_a"));
  snprintf(loop_b, sizeof loop_b, "%s", temp_path("loop_b"));
  struct stat sb;
  ASSERT_EQ_INT(mkfifo(p, 0600), 0);
  ASSERT_STATUS(save3(p, 1), CML_STATUS_INVALID_ARGUMENT, p, "a FIFO", "regular file");
  ASSERT_TRUE(lstat(p, &sb) == 0 && S_ISFIFO(sb.st_mode));
  ASSERT_EQ_INT(unlink(p), 0);
  ASSERT_EQ_INT(mkdir(p, 0700), 0);
  ASSERT_STATUS(save3(p, 1), CML_STATUS_INVALID_ARGUMENT, p, "a directory");
  ASSERT_TRUE(lstat(p, &sb) == 0 && S_ISDIR(sb.st_mode));
  ASSERT_EQ_INT(rmdir(p), 0);
  // A link to a character device: refused, the device untouched.
  ASSERT_EQ_INT(symlink("/dev/null", link), 0);
  ASSERT_STATUS(save3(link, 1), CML_STATUS_INVALID_ARGUMENT, link, "/dev/null",
                "a character device");
  ASSERT_TRUE(lstat("/dev/null", &sb) == 0 && S_ISCHR(sb.st_mode));
  ASSERT_TRUE(lstat(link, &sb) == 0 && S_ISLNK(sb.st_mode));
  ASSERT_EQ_INT(unlink(link), 0);
  // A link to a checkpoint: the checkpoint is rewritten, the link stays.
  ASSERT_STATUS_OK(save3(target, 1));
  const char* base = strrchr(target, '/') ? strrchr(target, '/') + 1 : target;
  ASSERT_EQ_INT(symlink(base, link), 0);
  ASSERT_STATUS_OK(save3(link, 7));
  ASSERT_TRUE(lstat(link, &sb) == 0 && S_ISLNK(sb.st_mode));
  cml_checkpoint_t* ck = NULL;
  ASSERT_STATUS_OK(cml_checkpoint_load(target, &ck));
  ASSERT_EQ_INT(cml_checkpoint_step(ck), 7);
  cml_checkpoint_destroy(ck);
  ck = NULL;
  // A dangling link: the file it names is made.
  const char* base2 = strrchr(target2, '/') ? strrchr(target2, '/') + 1 : target2;
  ASSERT_EQ_INT(symlink(base2, link2), 0);
  ASSERT_STATUS_OK(save3(link2, 8));
  ASSERT_TRUE(lstat(link2, &sb) == 0 && S_ISLNK(sb.st_mode));
  ASSERT_STATUS_OK(cml_checkpoint_load(target2, &ck));
  ASSERT_EQ_INT(cml_checkpoint_step(ck), 8);
  cml_checkpoint_destroy(ck);
  // Links in a loop: an error, nothing written.
  ASSERT_EQ_INT(symlink(loop_b, loop_a), 0);
  ASSERT_EQ_INT(symlink(loop_a, loop_b), 0);
  ASSERT_STATUS(save3(loop_a, 1), CML_STATUS_UNAVAILABLE, loop_a);
  ASSERT_TRUE(lstat(loop_a, &sb) == 0 && S_ISLNK(sb.st_mode));
  ASSERT_EQ_INT(count_temp_files(target), 0);
  ASSERT_EQ_INT(unlink(loop_a), 0);
  ASSERT_EQ_INT(unlink(loop_b), 0);
  ASSERT_EQ_INT(unlink(link), 0);
  ASSERT_EQ_INT(unlink(target), 0);
  ASSERT_EQ_INT(unlink(link2), 0);
  ASSERT_EQ_INT(unlink(target2), 0);
}

// Threads of one process saving to one path: each save has a temporary file of its own, so
// every save succeeds and the file is one of them, whole (they used to share "<path>.tmp.<pid>":
// one rename failed with NOT_FOUND while its data was the file, and a save reported OK was lost).
typedef struct saver_t {
  const char* path;
  int64_t step;
  cml_status_t status;
} saver_t;

static void* save_loop(void* arg) {
  saver_t* s = arg;
  for (int i = 0; i < 25 && s->status == CML_OK; ++i) s->status = save3(s->path, s->step);
  return NULL;
}

TEST(threads_saving_to_one_path) {
  char path[256];
  snprintf(path, sizeof path, "%s", temp_path("threads"));
  saver_t savers[4];
  pthread_t threads[4];
  for (int k = 0; k < 4; ++k) {
    savers[k] = (saver_t){path, 100 + k, CML_OK};
    ASSERT_EQ_INT(pthread_create(&threads[k], NULL, save_loop, &savers[k]), 0);
  }
  for (int k = 0; k < 4; ++k) pthread_join(threads[k], NULL);
  for (int k = 0; k < 4; ++k) ASSERT_STATUS_OK(savers[k].status);
  cml_checkpoint_t* ck = NULL;
  ASSERT_STATUS_OK(cml_checkpoint_load(path, &ck));
  ASSERT_TRUE(cml_checkpoint_step(ck) >= 100 && cml_checkpoint_step(ck) < 104);
  float w[6];
  ASSERT_STATUS_OK(cml_checkpoint_read(ck, "layer/w", &g_shapes[0], w, sizeof w));
  ASSERT_TRUE(memcmp(w, g_w, sizeof w) == 0);
  cml_checkpoint_destroy(ck);
  ASSERT_EQ_INT(count_temp_files(path), 0);
  ASSERT_EQ_INT(unlink(path), 0);
}

// A symlink planted where a temporary file could go is never followed (O_EXCL | O_NOFOLLOW);
// the replaced file keeps its permissions; a name near NAME_MAX still saves.
TEST(temporary_files_are_new_private_and_fit) {
  char path[256], victim[256], link[320];
  snprintf(path, sizeof path, "%s", temp_path("plant"));
  snprintf(victim, sizeof victim, "%s", temp_path("victim"));
  ASSERT_TRUE(file_write(victim, (const unsigned char*)"keep", 4));
  // Links at the first 16 counter values of this process's next saves (the counter is shared
  // by every save of the process, so plant ahead generously).
  int planted = 0;
  for (long n = 0; n < 4096; ++n) {
    snprintf(link, sizeof link, "%s.tmp.%ld.%ld", path, (long)getpid(), n);
    planted += symlink(victim, link) == 0;
  }
  ASSERT_EQ_INT(planted, 4096);
  cml_status_t st = save3(path, 1);
  unsigned char buf[8];
  ASSERT_EQ_INT((int)file_read(victim, buf, sizeof buf), 4);
  ASSERT_TRUE(memcmp(buf, "keep", 4) == 0);
  struct stat sb;
  if (st == CML_OK) {
    ASSERT_EQ_INT(lstat(path, &sb), 0);
    ASSERT_TRUE(S_ISREG(sb.st_mode));
  }
  cml_status_free(st);
  for (long n = 0; n < 4096; ++n) {
    snprintf(link, sizeof link, "%s.tmp.%ld.%ld", path, (long)getpid(), n);
    (void)unlink(link);
  }
  (void)unlink(path);
  ASSERT_EQ_INT(unlink(victim), 0);
  // Permissions of the file a save replaces are kept.
  ASSERT_STATUS_OK(save3(path, 2));
  ASSERT_EQ_INT(chmod(path, 0600), 0);
  ASSERT_STATUS_OK(save3(path, 3));
  ASSERT_EQ_INT(stat(path, &sb), 0);
  ASSERT_EQ_INT((int)(sb.st_mode & 0777), 0600);
  ASSERT_EQ_INT(unlink(path), 0);
  // A 250-byte file name: "<name>.tmp.<pid>.<n>" would not fit in NAME_MAX (255).
  char longname[251];
  memset(longname, 'p', 250);
  longname[250] = '\0';
  ASSERT_STATUS_OK(save3(longname, 4));
  cml_checkpoint_t* ck = NULL;
  ASSERT_STATUS_OK(cml_checkpoint_load(longname, &ck));
  ASSERT_EQ_INT(cml_checkpoint_step(ck), 4);
  cml_checkpoint_destroy(ck);
  ASSERT_EQ_INT(unlink(longname), 0);
  ASSERT_EQ_INT(count_temp_files(longname), 0);
}

// CRC-32 as the format defines it (zlib's), to re-seal a deliberately altered header.
static uint32_t crc32_of(const unsigned char* p, size_t n) {
  uint32_t c = 0xffffffffu;
  for (size_t i = 0; i < n; ++i) {
    c ^= p[i];
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1)));
  }
  return c ^ 0xffffffffu;
}

static uint64_t le64(const unsigned char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= (uint64_t)p[i] << (8 * i);
  return v;
}
static void put_le(unsigned char* p, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) p[i] = (unsigned char)(v >> (8 * i));
}

// Files whose checksums all match but that break the documented layout: an offset that is not
// the next 64-byte boundary, a dtype name with a NUL inside, nonzero padding, bytes past the
// last tensor (covered by the file-size field).
TEST(layout_breaks_with_matching_checksums_are_rejected) {
  char p[256];
  snprintf(p, sizeof p, "%s", temp_path("strict"));
  ASSERT_STATUS_OK(save3(p, 9));
  unsigned char good[4096], bad[4200];
  size_t n = file_read(p, good, sizeof good);
  const uint64_t index_bytes = le64(good + 24);
  const size_t head = 40 + (size_t)index_bytes;
  // Entry 0 ("layer/w", Float32, rank 2): its offset field at 40 + 2 + 7 + 1 + 7 + 1 + 16.
  const size_t off0 = 40 + 2 + 7 + 1 + 7 + 1 + 16;
  cml_checkpoint_t* ck = NULL;
  // 1. Data of tensor 0 moved 16 bytes later (the file grows by 16; CRCs resealed).
  memcpy(bad, good, n);
  const uint64_t o = le64(good + off0);
  memmove(bad + o + 16, good + o, n - o);
  memset(bad + o, 0, 16);
  put_le(bad + off0, o + 16, 8);
  put_le(bad + 32, n + 16, 8);
  // (later tensors' offsets are now wrong too; the first error is the one reported)
  put_le(bad + head, crc32_of(bad, head), 4);
  ASSERT_TRUE(file_write(p, bad, n + 16));
  ASSERT_STATUS(cml_checkpoint_load(p, &ck), CML_STATUS_INVALID_ARGUMENT, p, "\"layer/w\"",
                "64-byte boundary");
  // 2. Dtype name "Float32" with its last byte made NUL ("Float3\0" is not Float32... and
  //    "Float32\0" with length 8 is what a lax reader took): rewrite length 7 -> 7 with a NUL.
  memcpy(bad, good, n);
  bad[40 + 2 + 7 + 1 + 6] = '\0';
  put_le(bad + head, crc32_of(bad, head), 4);
  ASSERT_TRUE(file_write(p, bad, n));
  ASSERT_STATUS(cml_checkpoint_load(p, &ck), CML_STATUS_INVALID_ARGUMENT, p, "NUL");
  // 3. A nonzero byte in the padding before tensor 0 (the header CRC does not cover it).
  memcpy(bad, good, n);
  ASSERT_TRUE(o > head + 4);
  bad[o - 1] = 0x5a;
  ASSERT_TRUE(file_write(p, bad, n));
  ASSERT_STATUS(cml_checkpoint_load(p, &ck), CML_STATUS_INVALID_ARGUMENT, p, "padding");
  // 4. 100 bytes past the last tensor, with the file-size field saying so.
  memcpy(bad, good, n);
  memset(bad + n, 0x11, 100);
  put_le(bad + 32, n + 100, 8);
  put_le(bad + head, crc32_of(bad, head), 4);
  ASSERT_TRUE(file_write(p, bad, n + 100));
  ASSERT_STATUS(cml_checkpoint_load(p, &ck), CML_STATUS_INVALID_ARGUMENT, p, "past the end");
  ASSERT_TRUE(ck == NULL);
  ASSERT_EQ_INT(unlink(p), 0);
}

// 60000 tensors: duplicate names are found by sorting (the pairwise check took minutes at this
// size), and every name is found again after a load.
TEST(many_tensors_and_a_far_duplicate) {
  enum { kCount = 60000 };
  char(*names)[16] = calloc(kCount, sizeof *names);
  const char** np = calloc(kCount, sizeof *np);
  cml_shape_t* shapes = calloc(kCount, sizeof *shapes);
  const void** data = calloc(kCount, sizeof *data);
  int32_t* values = calloc(kCount, sizeof *values);
  ASSERT_TRUE(names && np && shapes && data && values);
  for (int i = 0; i < kCount; ++i) {
    snprintf(names[i], sizeof names[i], "t%d", (i * 7919) % kCount);
    np[i] = names[i];
    shapes[i] = cml_shape_scalar(CML_DTYPE_I32);
    values[i] = i;
    data[i] = &values[i];
  }
  char path[256];
  snprintf(path, sizeof path, "%s", temp_path("many"));
  ASSERT_STATUS_OK(cml_checkpoint_save(path, 1, np, shapes, data, kCount));
  cml_checkpoint_t* ck = NULL;
  ASSERT_STATUS_OK(cml_checkpoint_load(path, &ck));
  for (int i = 0; i < kCount; i += 997) {
    ASSERT_EQ_INT(cml_checkpoint_find(ck, names[i]), i);
    int32_t v = -1;
    ASSERT_STATUS_OK(cml_checkpoint_read(ck, names[i], &shapes[i], &v, sizeof v));
    ASSERT_EQ_INT(v, i);
  }
  ASSERT_EQ_INT(cml_checkpoint_find(ck, "t-1"), -1);
  ASSERT_EQ_INT(cml_checkpoint_find(ck, "u0"), -1);
  cml_checkpoint_destroy(ck);
  np[kCount - 1] = names[3];
  ASSERT_STATUS(cml_checkpoint_save(path, 1, np, shapes, data, kCount), CML_STATUS_INVALID_ARGUMENT,
                "tensors 3 and 59999");
  ASSERT_EQ_INT(unlink(path), 0);
  free(names);
  free(np);
  free(shapes);
  free((void*)data);
  free(values);
}

TEST(bad_save_arguments) {
  init_shapes();
  const void* data[3] = {g_w, &g_n, g_h};
  const char* path = temp_path("args");
  ASSERT_STATUS(
      cml_checkpoint_save(path, 0, (const char* const[]){"a", "b", "a"}, g_shapes, data, 3),
      CML_STATUS_INVALID_ARGUMENT, "tensors 0 and 2", "\"a\"");
  ASSERT_STATUS(
      cml_checkpoint_save(path, 0, (const char* const[]){"a", "", "c"}, g_shapes, data, 3),
      CML_STATUS_INVALID_ARGUMENT, "tensor 1");
  const void* nodata[3] = {g_w, NULL, g_h};
  ASSERT_STATUS(cml_checkpoint_save(path, 0, g_names, g_shapes, nodata, 3),
                CML_STATUS_INVALID_ARGUMENT, "\"counter\"", "NULL data");
  ASSERT_STATUS(cml_checkpoint_save(NULL, 0, g_names, g_shapes, data, 3),
                CML_STATUS_INVALID_ARGUMENT, "path");
  ASSERT_TRUE(access(path, F_OK) != 0);
  // A directory that does not exist: the message names the caller's path and its directory,
  // not the temporary file the save would have written.
  char nodir[256];
  snprintf(nodir, sizeof nodir, "checkpoint_test_%ld_no_dir/run.ckpt", (long)getpid());
  cml_status_t st = cml_checkpoint_save(nodir, 0, g_names, g_shapes, data, 3);
  ASSERT_TRUE(strstr(cml_status_message(st), ".tmp") == NULL);
  ASSERT_STATUS(st, CML_STATUS_NOT_FOUND, nodir, "_no_dir/\" does not exist");
  cml_checkpoint_destroy(NULL);
  ASSERT_EQ_INT(cml_checkpoint_tensor_count(NULL), 0);
  ASSERT_TRUE(cml_checkpoint_tensor_name(NULL, 0) == NULL);
}

TEST_MAIN(TEST_ENTRY(round_trip_host_data), TEST_ENTRY(layout_is_the_documented_one),
          TEST_ENTRY(threads_saving_to_one_path),
          TEST_ENTRY(temporary_files_are_new_private_and_fit),
          TEST_ENTRY(layout_breaks_with_matching_checksums_are_rejected),
          TEST_ENTRY(many_tensors_and_a_far_duplicate), TEST_ENTRY(round_trip_buffers_and_empty),
          TEST_ENTRY(save_replaces_atomically_and_leaves_no_temp_file),
          TEST_ENTRY(damaged_files_are_rejected_naming_file_and_tensor),
          TEST_ENTRY(save_keeps_fifos_devices_and_links), TEST_ENTRY(bad_save_arguments))
