// SPDX-License-Identifier: Apache-2.0
// tests/unit/xla_config_test.c: XLA config parsing, plugin discovery order (temporary
// directories standing in for HOME, PJRT_PLUGIN_LIBRARY_PATH, site-packages, LD_LIBRARY_PATH),
// accelerator detection and the CUDA layout logic. No plugin needed.
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backends/xla/xla_internal.h"
#include "test.h"

TEST(config_defaults_and_plugin) {
  cml__xla_config_t c;
  ASSERT_STATUS_OK(cml__xla_config_parse("", &c));
  ASSERT_STREQ(c.plugin, "");
  ASSERT_FALSE(c.preallocate);
  ASSERT_EQ_DBL(c.memory_fraction, 0.75);
  ASSERT_STREQ(c.allocator, "default");
  ASSERT_STATUS_OK(cml__xla_config_resolve(&c, true, false));
  ASSERT_TRUE(c.shared_buffers);
  ASSERT_FALSE(c.tf32);
  ASSERT_STATUS_OK(cml__xla_config_parse("cuda", &c));
  ASSERT_STREQ(c.plugin, "cuda");
  ASSERT_STATUS_OK(cml__xla_config_resolve(&c, false, true));
  ASSERT_TRUE(c.tf32);
  ASSERT_FALSE(c.shared_buffers);
  ASSERT_STATUS_OK(cml__xla_config_parse("/opt/x/pjrt_c_api_cpu_plugin.so,notf32", &c));
  ASSERT_TRUE(c.plugin_is_path);
  ASSERT_STREQ(c.plugin, "/opt/x/pjrt_c_api_cpu_plugin.so");
  ASSERT_TRUE(c.tf32_set);
  ASSERT_FALSE(c.tf32);
  ASSERT_STATUS_OK(cml__xla_config_parse("cpu_v0.104.0", &c));
  ASSERT_STREQ(c.plugin, "cpu_v0.104.0");
}

TEST(config_all_options) {
  cml__xla_config_t c;
  ASSERT_STATUS_OK(cml__xla_config_parse(
      "cuda,tf32=false,shared_buffer=false,preallocate,memory_fraction=0.5,allocator=cuda_async,"
      "visible_devices=0;2:3,use_tfrt_gpu_client=true",
      &c));
  ASSERT_FALSE(c.tf32);
  ASSERT_TRUE(c.shared_buffers_set);
  ASSERT_TRUE(c.preallocate);
  ASSERT_EQ_DBL(c.memory_fraction, 0.5);
  ASSERT_STREQ(c.allocator, "cuda_async");
  ASSERT_EQ_INT(c.visible_devices.count, 3);
  ASSERT_EQ_INT(c.visible_devices.values[1], 2);
  ASSERT_EQ_INT(c.visible_devices.values[2], 3);
  ASSERT_TRUE(c.use_tfrt_gpu_client);
  ASSERT_STATUS_OK(cml__xla_config_resolve(&c, false, true));
  cml__xla_option_t o[8];
  size_t n = cml__xla_config_client_options(&c, false, o, 8);
  ASSERT_EQ_INT(n, 5);
  ASSERT_STREQ(o[0].name, "preallocate");
  ASSERT_EQ_INT(o[0].type, CML_PJRT_NAMED_BOOL);
  ASSERT_TRUE(o[0].bool_value);
  ASSERT_STREQ(o[1].name, "memory_fraction");
  ASSERT_EQ_INT(o[1].type, CML_PJRT_NAMED_FLOAT);  // the CUDA plugin wants a C float
  ASSERT_EQ_DBL(o[1].float_value, 0.5f);
  ASSERT_STREQ(o[2].name, "allocator");
  ASSERT_STREQ(o[2].string_value, "cuda_async");
  ASSERT_STREQ(o[3].name, "visible_devices");
  ASSERT_EQ_INT(o[3].type, CML_PJRT_NAMED_INT64_LIST);
  ASSERT_EQ_INT(o[3].int64_list_size, 3);
  ASSERT_STREQ(o[4].name, "use_tfrt_gpu_client");
  char text[512];
  cml__xla_config_format(&c, NULL, text, sizeof text);
  ASSERT_STREQ(text,
               "cuda,tf32=false,shared_buffers=false,preallocate=true,memory_fraction=0.5,"
               "allocator=cuda_async,visible_devices=0;2;3,use_tfrt_gpu_client=true");
}

TEST(config_cpu_options) {
  cml__xla_config_t c;
  ASSERT_STATUS_OK(cml__xla_config_parse("cpu,cpu_device_count=8", &c));
  ASSERT_STATUS_OK(cml__xla_config_resolve(&c, true, false));
  cml__xla_option_t o[8];
  ASSERT_EQ_INT(cml__xla_config_client_options(&c, true, o, 8), 1);
  ASSERT_STREQ(o[0].name, "cpu_device_count");
  ASSERT_EQ_INT(o[0].int64_value, 8);
  // The formatted config keeps every option given, dynamic_cache included (it was dropped, so a
  // backend created from cml_backend_config's string lost it).
  ASSERT_STATUS_OK(cml__xla_config_parse("cpu,dynamic_cache=1,cpu_device_count=8", &c));
  ASSERT_STATUS_OK(cml__xla_config_resolve(&c, true, false));
  char text[512];
  cml__xla_config_format(&c, NULL, text, sizeof text);
  ASSERT_STREQ(text,
               "cpu,tf32=false,shared_buffers=true,preallocate=false,cpu_device_count=8,"
               "dynamic_cache=1");
  // cpu_device_count and shared buffers only make sense on CPU plugins.
  ASSERT_STATUS_OK(cml__xla_config_parse("cuda,cpu_device_count=2", &c));
  ASSERT_STATUS_CODE(cml__xla_config_resolve(&c, false, true), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_STATUS_OK(cml__xla_config_parse("cuda,shared_buffers", &c));
  ASSERT_STATUS_CODE(cml__xla_config_resolve(&c, false, true), CML_STATUS_INVALID_ARGUMENT);
}

TEST(config_errors) {
  cml__xla_config_t c;
  cml_status_t st = cml__xla_config_parse("cpu,bogus=1", &c);
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(cml_status_message(st), "bogus");
  ASSERT_CONTAINS(cml_status_message(st), "use_tfrt_gpu_client");  // lists the valid keys
  cml_status_free(st);
  st = cml__xla_config_parse("cpu,cuda", &c);  // one plugin, first
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(cml_status_message(st), "one plugin per config: \"cpu\" came first");
  cml_status_free(st);
  st = cml__xla_config_parse("preallocate=true,cpu", &c);  // the plugin must come first
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(cml_status_message(st), "the plugin name or path must come first");
  cml_status_free(st);
  st = cml__xla_config_parse("cpu,bogus", &c);  // a plain unknown option: no hint
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(cml_status_message(st), "unknown option \"bogus\"");
  ASSERT_TRUE(strstr(cml_status_message(st), "first") == NULL);
  cml_status_free(st);
  ASSERT_STATUS_CODE(cml__xla_config_parse("cpu,memory_fraction=1.5", &c),
                     CML_STATUS_INVALID_ARGUMENT);
  ASSERT_STATUS_CODE(cml__xla_config_parse("cpu,allocator=magic", &c), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_STATUS_CODE(cml__xla_config_parse("cpu,tf32=maybe", &c), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_STATUS_CODE(cml__xla_config_parse("cpu,visible_devices=0;x", &c),
                     CML_STATUS_INVALID_ARGUMENT);
  ASSERT_STATUS_CODE(cml__xla_config_parse("cpu,cpu_device_count=0", &c),
                     CML_STATUS_INVALID_ARGUMENT);
  ASSERT_STATUS_CODE(cml__xla_config_parse("c p u", &c), CML_STATUS_INVALID_ARGUMENT);
  st = cml__xla_config_parse("cpu,help", &c);
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(cml_status_message(st), "memory_fraction");
  ASSERT_CONTAINS(cml_status_message(st), "Plugins found");
  cml_status_free(st);
}

TEST(plugin_names) {
  char n[64];
  ASSERT_TRUE(cml__xla_plugin_name_from_file("pjrt_c_api_cpu_plugin.so", n, sizeof n));
  ASSERT_STREQ(n, "cpu");
  ASSERT_TRUE(cml__xla_plugin_name_from_file("pjrt-plugin-tpu.so", n, sizeof n));
  ASSERT_STREQ(n, "tpu");
  ASSERT_TRUE(cml__xla_plugin_name_from_file("pjrt_plugin_cuda.so", n, sizeof n));
  ASSERT_STREQ(n, "cuda");
  ASSERT_TRUE(cml__xla_plugin_name_from_file("pjrt_c_api_cpu_v0.104.0_plugin.so", n, sizeof n));
  ASSERT_STREQ(n, "cpu_v0.104.0");
  ASSERT_FALSE(cml__xla_plugin_name_from_file("libcuda.so", n, sizeof n));
  ASSERT_FALSE(cml__xla_plugin_name_from_file("pjrt_c_api__plugin.so", n, sizeof n));
  ASSERT_TRUE(cml__xla_name_is_cuda("CUDA13"));
  ASSERT_TRUE(cml__xla_name_is_cuda("nvidia_x"));
  ASSERT_TRUE(cml__xla_name_is_cpu("cpu_v0.104.0"));
  ASSERT_FALSE(cml__xla_name_is_cpu("cuda"));
}

//===--- discovery in a temporary tree ---===//

static char g_root[64];

static void touch(const char* rel) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", g_root, rel);
  for (char* p = path + strlen(g_root) + 1; *p; ++p) {
    if (*p == '/') {
      *p = '\0';
      mkdir(path, 0755);
      *p = '/';
    }
  }
  FILE* f = fopen(path, "w");
  if (f) {
    fputs("x", f);
    fclose(f);
  }
}

static void mkdirs(const char* rel) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s/.keep", g_root, rel);
  touch(path + strlen(g_root) + 1);
}

static const char* abs_path(const char* rel, char* buf, size_t size) {
  snprintf(buf, size, "%s/%s", g_root, rel);
  return buf;
}

static void remove_tree(void) {
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_root);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", g_root);
}

TEST(discovery_order) {
  ASSERT_TRUE(test_tmp_template(g_root, sizeof g_root, "cml_xla_disc_"));
  ASSERT_TRUE(mkdtemp(g_root) != NULL);
  // The same plugin in every place, so each step shows which place wins.
  touch("env1/pjrt_c_api_cpu_plugin.so");
  touch("home/.local/lib/go-xla/pjrt_c_api_cpu_plugin.so");
  touch("home/.local/lib/go-xla/nvidia/pjrt_c_api_cuda_plugin.so");
  touch("site/lammps_jax_pjrt_cpu/pjrt_c_api_cpu_plugin.so");
  touch("site/jax_plugins/xla_cuda12/xla_cuda_plugin.so");
  touch("site/jax_plugins/xla_cuda13/xla_cuda_plugin.so");
  touch("site/libtpu/libtpu.so");
  touch("ld/pjrt-plugin-cpu.so");
  touch("ld/pjrt_plugin_rocm.so");
  mkdirs("env2");
  char env[1024], home[256], site[256], ld[256], want[256], b1[256], b2[256];
  snprintf(env, sizeof env, "%s:%s:relative/ignored", abs_path("env2", b1, sizeof b1),
           abs_path("env1", b2, sizeof b2));
  abs_path("home", home, sizeof home);
  abs_path("site", site, sizeof site);
  abs_path("ld", ld, sizeof ld);
  const char* python_dirs[1] = {site};
  cml__xla_search_t s = {.home = home,
                         .plugin_library_path = env,
                         .ld_library_path = ld,
                         .system_dirs = false,
                         .python_dirs = python_dirs,
                         .python_dir_count = 1};
  char* path = NULL;
  // 1. PJRT_PLUGIN_LIBRARY_PATH.
  ASSERT_STATUS_OK(cml__xla_find_plugin(&s, "cpu", &path));
  ASSERT_STREQ(path, abs_path("env1/pjrt_c_api_cpu_plugin.so", want, sizeof want));
  free(path);
  // 2. ~/.local/lib/go-xla (and nvidia/).
  s.plugin_library_path = NULL;
  ASSERT_STATUS_OK(cml__xla_find_plugin(&s, "cpu", &path));
  ASSERT_STREQ(path,
               abs_path("home/.local/lib/go-xla/pjrt_c_api_cpu_plugin.so", want, sizeof want));
  free(path);
  ASSERT_STATUS_OK(cml__xla_find_plugin(&s, "cuda", &path));
  ASSERT_STREQ(
      path, abs_path("home/.local/lib/go-xla/nvidia/pjrt_c_api_cuda_plugin.so", want, sizeof want));
  free(path);
  // 3. pip-installed plugins (the newest CUDA first, the CPU wheel's package, libtpu).
  s.home = NULL;
  ASSERT_STATUS_OK(cml__xla_find_plugin(&s, "cpu", &path));
  ASSERT_STREQ(path,
               abs_path("site/lammps_jax_pjrt_cpu/pjrt_c_api_cpu_plugin.so", want, sizeof want));
  free(path);
  ASSERT_STATUS_OK(cml__xla_find_plugin(&s, "cuda", &path));
  ASSERT_STREQ(path, abs_path("site/jax_plugins/xla_cuda13/xla_cuda_plugin.so", want, sizeof want));
  free(path);
  ASSERT_STATUS_OK(cml__xla_find_plugin(&s, "tpu", &path));
  ASSERT_STREQ(path, abs_path("site/libtpu/libtpu.so", want, sizeof want));
  free(path);
  // 4. LD_LIBRARY_PATH.
  s.python_dir_count = 0;
  ASSERT_STATUS_OK(cml__xla_find_plugin(&s, "cpu", &path));
  ASSERT_STREQ(path, abs_path("ld/pjrt-plugin-cpu.so", want, sizeof want));
  free(path);
  ASSERT_STATUS_OK(cml__xla_find_plugin(&s, "rocm", &path));
  free(path);
  // Not found: the message lists where it looked and how to install.
  s.ld_library_path = NULL;
  cml_status_t st = cml__xla_find_plugin(&s, "cpu", &path);
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_NOT_FOUND);
  ASSERT_CONTAINS(cml_status_message(st), "cml install cpu");
  cml_status_free(st);
  ASSERT_TRUE(path == NULL);
  remove_tree();
}

TEST(discovery_versions_and_listing) {
  ASSERT_TRUE(test_tmp_template(g_root, sizeof g_root, "cml_xla_disc_"));
  ASSERT_TRUE(mkdtemp(g_root) != NULL);
  touch("a/pjrt_c_api_cpu_v0.57.0_plugin.so");
  touch("a/pjrt_c_api_cpu_v0.104.0_plugin.so");
  touch("b/pjrt_c_api_cpu_plugin.so");
  touch("b/pjrt_c_api_cpu_v0.200.0_plugin.so");
  touch("b/pjrt_c_api_mydev_plugin.so");
  char dirs[600], b1[256], b2[256], want[256];
  snprintf(dirs, sizeof dirs, "%s:%s", abs_path("a", b1, sizeof b1), abs_path("b", b2, sizeof b2));
  cml__xla_search_t s = {.plugin_library_path = dirs};
  char* path = NULL;
  // A base name matches versioned files; the first directory wins.
  ASSERT_STATUS_OK(cml__xla_find_plugin(&s, "cpu", &path));
  ASSERT_STREQ(path, abs_path("a/pjrt_c_api_cpu_v0.57.0_plugin.so", want, sizeof want));
  free(path);
  ASSERT_STATUS_OK(cml__xla_find_plugin(&s, "cpu_v0.104.0", &path));
  ASSERT_STREQ(path, abs_path("a/pjrt_c_api_cpu_v0.104.0_plugin.so", want, sizeof want));
  free(path);
  // Within a directory the exact name beats a versioned one.
  snprintf(dirs, sizeof dirs, "%s", abs_path("b", b1, sizeof b1));
  ASSERT_STATUS_OK(cml__xla_find_plugin(&s, "cpu", &path));
  ASSERT_STREQ(path, abs_path("b/pjrt_c_api_cpu_plugin.so", want, sizeof want));
  free(path);
  char list[2048];
  cml__xla_list_plugins(&s, list, sizeof list);
  ASSERT_CONTAINS(list, "cpu: ");
  ASSERT_CONTAINS(list, "mydev: ");
  remove_tree();
}

TEST(accelerators_and_cuda_layout) {
  ASSERT_TRUE(test_tmp_template(g_root, sizeof g_root, "cml_xla_disc_"));
  ASSERT_TRUE(mkdtemp(g_root) != NULL);
  char b[256], out[512], want[512];
  mkdirs("dev");
  ASSERT_FALSE(cml__xla_has_nvidia_gpu(abs_path("dev", b, sizeof b), false));
  touch("dev/nvidia0");
  ASSERT_TRUE(cml__xla_has_nvidia_gpu(abs_path("dev", b, sizeof b), false));
  const char* libs[1] = {abs_path("lib", b, sizeof b)};
  mkdirs("lib");
  ASSERT_FALSE(cml__xla_has_tpu(libs, 1));
  touch("lib/libtpu.so");
  ASSERT_TRUE(cml__xla_has_tpu(libs, 1));
  // go-xla layout: <dir>/nvidia/pjrt_c_api_cuda_plugin.so next to <dir>/nvidia/cu13/bin/ptxas.
  touch("gx/nvidia/pjrt_c_api_cuda_plugin.so");
  ASSERT_TRUE(cml__xla_cuda_data_dir(abs_path("gx/nvidia/pjrt_c_api_cuda_plugin.so", b, sizeof b),
                                     out, sizeof out));
  ASSERT_STREQ(out, abs_path("gx/nvidia", want, sizeof want));
  touch("gx/nvidia/cu13/bin/ptxas");
  ASSERT_TRUE(cml__xla_cuda_data_dir(abs_path("gx/nvidia/pjrt_c_api_cuda_plugin.so", b, sizeof b),
                                     out, sizeof out));
  ASSERT_STREQ(out, abs_path("gx/nvidia/cu13", want, sizeof want));
  // pip layout: site-packages/jax_plugins/xla_cuda12/xla_cuda_plugin.so, site-packages/nvidia.
  touch("sp/jax_plugins/xla_cuda12/xla_cuda_plugin.so");
  ASSERT_FALSE(cml__xla_cuda_data_dir(
      abs_path("sp/jax_plugins/xla_cuda12/xla_cuda_plugin.so", b, sizeof b), out, sizeof out));
  touch("sp/nvidia/cuda_nvcc/bin/ptxas");
  ASSERT_TRUE(cml__xla_cuda_data_dir(
      abs_path("sp/jax_plugins/xla_cuda12/xla_cuda_plugin.so", b, sizeof b), out, sizeof out));
  ASSERT_STREQ(out, abs_path("sp/nvidia/cuda_nvcc", want, sizeof want));
  // XLA_FLAGS: appended once.
  char flags[256];
  ASSERT_TRUE(cml__xla_flags_with_cuda_dir(NULL, "/d", flags, sizeof flags));
  ASSERT_STREQ(flags, "--xla_gpu_cuda_data_dir=/d");
  ASSERT_TRUE(cml__xla_flags_with_cuda_dir("--xla_dump_to=/tmp", "/d", flags, sizeof flags));
  ASSERT_STREQ(flags, "--xla_dump_to=/tmp --xla_gpu_cuda_data_dir=/d");
  ASSERT_TRUE(
      cml__xla_flags_with_cuda_dir("--xla_gpu_cuda_data_dir=/x", "/d", flags, sizeof flags));
  ASSERT_STREQ(flags, "--xla_gpu_cuda_data_dir=/x");
  ASSERT_FALSE(cml__xla_flags_with_cuda_dir("", "/a/long/dir", flags, 8));
  remove_tree();
}

TEST_MAIN(TEST_ENTRY(config_defaults_and_plugin), TEST_ENTRY(config_all_options),
          TEST_ENTRY(config_cpu_options), TEST_ENTRY(config_errors), TEST_ENTRY(plugin_names),
          TEST_ENTRY(discovery_order), TEST_ENTRY(discovery_versions_and_listing),
          TEST_ENTRY(accelerators_and_cuda_layout))
