// SPDX-License-Identifier: Apache-2.0
// tests/unit/xla_pjrt_test.c: the PJRT layer without a real plugin: compile-option encoding
// (against byte strings known from XLA's parser), SHA-256 (FIPS test vectors), loading files
// that are not PJRT plugins, and a fake plugin with a too-old API version.
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backends/xla/install/install.h"
#include "backends/xla/pjrt/pjrt.h"
#include "test.h"

#define ASSERT_STATUS_MSG(expr, code, needle)                                                  \
  do {                                                                                         \
    cml_status_t m_ = (expr);                                                                  \
    if (cml_status_code(m_) != (code) || !strstr(cml_status_message(m_), (needle))) {          \
      fprintf(stderr, "%s:%d: want %s containing \"%s\", got %s: %s\n", __FILE__, __LINE__,    \
              cml_status_code_name(code), (needle), cml_status_code_name(cml_status_code(m_)), \
              cml_status_message(m_));                                                         \
      cml_status_free(m_);                                                                     \
      *test_failed_ = 1;                                                                       \
      return;                                                                                  \
    }                                                                                          \
    cml_status_free(m_);                                                                       \
  } while (0)

static int hex_to_bytes(const char* hex, uint8_t* out) {
  int n = 0;
  for (const char* p = hex; *p;) {
    if (*p == ' ') {
      ++p;
      continue;
    }
    unsigned v = 0;
    sscanf(p, "%2x", &v);
    out[n++] = (uint8_t)v;
    p += 2;
  }
  return n;
}

// Portable single-device executable: the bytes go-xla sends by default.
TEST(compile_options_portable) {
  uint8_t want[64], got[64];
  int n = hex_to_bytes("1a 12 08 ff ff ff ff ff ff ff ff ff 01 20 01 28 01 b8 01 01 20 01", want);
  size_t size = 0;
  cml__xla_compile_config_t c = {.portable = true, .num_replicas = 1, .num_partitions = 1};
  ASSERT_STATUS_OK(cml__xla_compile_options_encode(&c, got, sizeof got, &size));
  ASSERT_EQ_INT(size, n);
  ASSERT_TRUE(memcmp(got, want, size) == 0);
}

// Non-portable, one device with id 0 (device assignment).
TEST(compile_options_device_assignment) {
  uint8_t want[64], got[64];
  int n = hex_to_bytes(
      "1a 1c 08 ff ff ff ff ff ff ff ff ff 01 20 01 28 01 4a 08 08 01 10 01 1a 02 08 00 b8 01 01 "
      "20 00",
      want);
  size_t size = 0;
  int64_t ids[1] = {0};
  cml__xla_compile_config_t c = {.num_replicas = 1, .num_partitions = 1, .device_ids = ids};
  ASSERT_STATUS_OK(cml__xla_compile_options_encode(&c, got, sizeof got, &size));
  ASSERT_EQ_INT(size, n);
  ASSERT_TRUE(memcmp(got, want, size) == 0);
}

// SPMD: 4 replicas on devices 0..3 (one ComputationDevice listing 4 replicas): the bytes
// verified on the CPU plugin (docs/xla.md, "Devices and distribution").
TEST(compile_options_spmd_replicas) {
  uint8_t want[96], got[96];
  int n = hex_to_bytes(
      "1a 24 08 ff ff ff ff ff ff ff ff ff 01 20 04 28 01 30 01 4a 0e 08 04 10 01 1a 08 08 00 08 "
      "01 08 02 08 03 b8 01 01 20 00",
      want);
  size_t size = 0;
  int64_t ids[4] = {0, 1, 2, 3};
  cml__xla_compile_config_t c = {
      .num_replicas = 4, .num_partitions = 1, .use_spmd_partitioning = true, .device_ids = ids};
  ASSERT_STATUS_OK(cml__xla_compile_options_encode(&c, got, sizeof got, &size));
  ASSERT_EQ_INT(size, n);
  ASSERT_TRUE(memcmp(got, want, size) == 0);
  // A permuted assignment only changes the ids, in replica order.
  int64_t perm[4] = {3, 1, 0, 2};
  c.device_ids = perm;
  ASSERT_STATUS_OK(cml__xla_compile_options_encode(&c, got, sizeof got, &size));
  ASSERT_EQ_INT(size, n);
  static const uint8_t kIds[8] = {0x08, 3, 0x08, 1, 0x08, 0, 0x08, 2};
  ASSERT_TRUE(memcmp(got + 27, kIds, sizeof kIds) == 0);
}

// AutoSharding: 2 partitions on devices [0, 1], Shardy (one ComputationDevice per partition):
// the bytes verified on the CPU plugin.
TEST(compile_options_spmd_shardy) {
  uint8_t want[96], got[96];
  int n = hex_to_bytes(
      "1a 25 08 ff ff ff ff ff ff ff ff ff 01 20 01 28 02 30 01 4a 0c 08 01 10 02 1a 02 08 00 1a "
      "02 08 01 98 01 01 b8 01 01 20 00",
      want);
  size_t size = 0;
  int64_t ids[2] = {0, 1};
  cml__xla_compile_config_t c = {.num_replicas = 1,
                                 .num_partitions = 2,
                                 .use_spmd_partitioning = true,
                                 .use_shardy_partitioner = true,
                                 .device_ids = ids};
  ASSERT_STATUS_OK(cml__xla_compile_options_encode(&c, got, sizeof got, &size));
  ASSERT_EQ_INT(size, n);
  ASSERT_TRUE(memcmp(got, want, size) == 0);
}

TEST(compile_options_errors) {
  uint8_t got[8];
  size_t size = 99;
  cml__xla_compile_config_t c = {.portable = true, .num_replicas = 1, .num_partitions = 1};
  ASSERT_STATUS_CODE(cml__xla_compile_options_encode(&c, got, sizeof got, &size),
                     CML_STATUS_RESOURCE_EXHAUSTED);
  ASSERT_EQ_INT(size, 0);
  cml__xla_compile_config_t two = {.portable = true, .num_replicas = 2, .num_partitions = 1};
  uint8_t big[64];
  ASSERT_STATUS_CODE(cml__xla_compile_options_encode(&two, big, sizeof big, &size),
                     CML_STATUS_INVALID_ARGUMENT);
  cml__xla_compile_config_t zero = {.num_replicas = 0, .num_partitions = 1};
  ASSERT_STATUS_CODE(cml__xla_compile_options_encode(&zero, big, sizeof big, &size),
                     CML_STATUS_INVALID_ARGUMENT);
}

static void to_hex(const uint8_t* d, char* out) {
  for (int i = 0; i < 32; ++i) sprintf(out + 2 * i, "%02x", d[i]);
}

// FIPS 180-2 examples.
TEST(sha256_vectors) {
  uint8_t d[32];
  char hex[65];
  cml__xla_sha256("abc", 3, d);
  to_hex(d, hex);
  ASSERT_STREQ(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  cml__xla_sha256("", 0, d);
  to_hex(d, hex);
  ASSERT_STREQ(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  const char* two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  cml__xla_sha256(two, strlen(two), d);
  to_hex(d, hex);
  ASSERT_STREQ(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  // One million 'a' through the file path (chunked reads, multi-block).
  char path[4096];
  ASSERT_TRUE(test_tmp_template(path, sizeof path, "cml_xla_sha_"));
  int fd = mkstemp(path);
  ASSERT_TRUE(fd >= 0);
  static char million[1000000];
  memset(million, 'a', sizeof million);
  ASSERT_EQ_INT(write(fd, million, sizeof million), (long long)sizeof million);
  close(fd);
  uint64_t size = 0;
  cml_status_t st = cml__xla_sha256_file(path, hex, &size);
  unlink(path);
  ASSERT_STATUS_OK(st);
  ASSERT_EQ_U64(size, 1000000);
  ASSERT_STREQ(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(load_missing_file) {
  const cml__xla_plugin_t* p = NULL;
  ASSERT_STATUS_MSG(cml__xla_plugin_load("/nonexistent/pjrt_c_api_cpu_plugin.so", &p),
                    CML_STATUS_NOT_FOUND, "not found");
  ASSERT_TRUE(p == NULL);
}

TEST(load_not_a_library) {
  char path[4096];
  ASSERT_TRUE(test_tmp_template(path, sizeof path, "cml_xla_bad_"));
  int fd = mkstemp(path);
  ASSERT_TRUE(fd >= 0);
  ASSERT_EQ_INT(write(fd, "not an ELF file\n", 16), 16);
  close(fd);
  const cml__xla_plugin_t* p = NULL;
  cml_status_t st = cml__xla_plugin_load(path, &p);
  unlink(path);
  ASSERT_STATUS_MSG(st, CML_STATUS_UNAVAILABLE, "not a loadable PJRT plugin");
}

// A real shared library without GetPjrtApi: libm.
TEST(load_library_without_symbol) {
  Dl_info info;
  memset(&info, 0, sizeof info);
  double (*fn)(double) = cos;
  void* addr;
  memcpy(&addr, &fn, sizeof addr);
  ASSERT_TRUE(dladdr(addr, &info) != 0 && info.dli_fname != NULL);
  const cml__xla_plugin_t* p = NULL;
  ASSERT_STATUS_MSG(cml__xla_plugin_load(info.dli_fname, &p), CML_STATUS_UNAVAILABLE,
                    "does not export GetPjrtApi");
  ASSERT_STATUS_MSG(cml__xla_plugin_probe(info.dli_fname), CML_STATUS_UNAVAILABLE, "GetPjrtApi");
}

TEST(load_directory) {
  const cml__xla_plugin_t* p = NULL;
  ASSERT_STATUS_MSG(cml__xla_plugin_load("/tmp", &p), CML_STATUS_UNAVAILABLE, "not a regular file");
}

TEST(load_fifo) {  // refused at once: opening it used to wait for a writer forever
  char fifo[64];
  snprintf(fifo, sizeof fifo, "./xla_pjrt_test_%ld.so", (long)getpid());
  ASSERT_TRUE(mkfifo(fifo, 0600) == 0);
  const cml__xla_plugin_t* p = NULL;
  ASSERT_STATUS_MSG(cml__xla_plugin_load(fifo, &p), CML_STATUS_UNAVAILABLE, "not a regular file");
  // The ELF check on its own (what `xla:/path` configs and installed plugins go through).
  ASSERT_STATUS_MSG(cml__xla_check_shared_object(fifo), CML_STATUS_UNAVAILABLE,
                    "not a regular file");
  ASSERT_TRUE(unlink(fifo) == 0);
}

#ifdef XLA_FAKE_PLUGIN_PATH
TEST(load_too_old_api) {
  const cml__xla_plugin_t* p = NULL;
  cml_status_t st = cml__xla_plugin_load(XLA_FAKE_PLUGIN_PATH, &p);
  ASSERT_TRUE(p == NULL);
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_INCOMPATIBLE);
  ASSERT_CONTAINS(cml_status_message(st), "0.10");
  ASSERT_CONTAINS(cml_status_message(st), "0.57");
  cml_status_free(st);
  // The probe only checks the symbol: the file is a plugin, just too old.
  ASSERT_STATUS_OK(cml__xla_plugin_probe(XLA_FAKE_PLUGIN_PATH));
}
#else
TEST(load_too_old_api) { fprintf(stderr, "fake plugin not built: nothing checked\n"); }
#endif

TEST_MAIN(TEST_ENTRY(compile_options_portable), TEST_ENTRY(compile_options_device_assignment),
          TEST_ENTRY(compile_options_spmd_replicas), TEST_ENTRY(compile_options_spmd_shardy),
          TEST_ENTRY(compile_options_errors), TEST_ENTRY(sha256_vectors),
          TEST_ENTRY(load_missing_file), TEST_ENTRY(load_not_a_library),
          TEST_ENTRY(load_library_without_symbol), TEST_ENTRY(load_directory),
          TEST_ENTRY(load_fifo), TEST_ENTRY(load_too_old_api))
