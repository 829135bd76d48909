// SPDX-License-Identifier: Apache-2.0
// tests/unit/registry_test.c: registration, config strings, GOMLX_BACKEND, the default choice,
// plug-in loading and the null backend.
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "core/runtime_internal.h"
#include "test.h"

//===--- a fake backend that records the config it was created with ---===//

typedef struct fake_backend_t {
  cml_backend_t base;
} fake_backend_t;

static char g_last_config[256];
static int g_destroyed;

static void fake_destroy(cml_backend_t* backend) {
  cml_allocator_t a = backend->allocator;
  cml_backend_deinit_base(backend);
  cml_allocator_free(a, backend, sizeof(fake_backend_t));
  g_destroyed++;
}

static const cml_backend_vtable_t fake_vtable = {
    .struct_size = sizeof(cml_backend_vtable_t),
    .destroy = fake_destroy,
};

static cml_status_t fake_create_named(const char* name, const char* config,
                                      cml_allocator_t allocator, cml_backend_t** out) {
  snprintf(g_last_config, sizeof g_last_config, "%s", config);
  if (strcmp(config, "fail") == 0) {
    return cml_status_make(CML_STATUS_UNAVAILABLE, "%s backend: asked to fail", name);
  }
  fake_backend_t* b = (fake_backend_t*)cml_allocator_malloc(allocator, sizeof *b, 64);
  if (!b) return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
  cml_status_t st = cml_backend_init_base(&b->base, &fake_vtable, allocator, name, config, 1);
  if (st != CML_OK) {
    cml_allocator_free(allocator, b, sizeof *b);
    return st;
  }
  *out = &b->base;
  return CML_OK;
}

static cml_status_t fake_create(const char* config, cml_allocator_t allocator,
                                cml_backend_t** out) {
  return fake_create_named("fake", config, allocator, out);
}

static int fake_priority(const char** out_config, const char** out_reason) {
  *out_config = "fake:from_default";
  *out_reason = "the fake backend always wins in this test";
  return 1000000;
}

static const cml_backend_factory_t fake_factory = {
    .struct_size = sizeof(cml_backend_factory_t),
    .api_major = CML_BACKEND_API_MAJOR,
    .api_minor = CML_BACKEND_API_MINOR,
    .name = "fake",
    .aliases = "fk, phony",
    .description = "a test backend",
    .config_help = "  color=<string>: the fake color\n",
    .create = fake_create,
    .default_priority = fake_priority,
};

// Registers |fake_factory| once per process (tests may run alone or in sequence).
static cml_status_t ensure_fake(void) {
  if (cml__registry_find("fake")) return CML_OK;
  return cml_backend_register(&fake_factory);
}

//===--- tests ---===//

TEST(builtin_null_is_registered) {
  bool found_null = false;
  size_t n = cml_backend_registered_count();
  ASSERT_TRUE(n >= 1);
  for (size_t i = 0; i < n; ++i) {
    if (strcmp(cml_backend_registered_name(i), "null") == 0) found_null = true;
  }
  ASSERT_TRUE(found_null);
  ASSERT_TRUE(cml_backend_registered_name(n) == NULL);
  ASSERT_STREQ(cml_backend_registered_aliases("null"), "");
  ASSERT_TRUE(cml_backend_registered_aliases("no-such-backend") == NULL);
  ASSERT_TRUE(cml_backend_config_help("no-such-backend") == NULL);
  ASSERT_TRUE(cml_backend_config_help("null") != NULL);
#ifdef CML_HAVE_BACKEND_C
  ASSERT_TRUE(cml__registry_find("c") != NULL);
  ASSERT_TRUE(cml__registry_find("go") == cml__registry_find("c"));
#endif
#ifdef CML_HAVE_BACKEND_XLA
  ASSERT_TRUE(cml__registry_find("xla") != NULL);
  ASSERT_TRUE(cml__registry_find("stablehlo") == cml__registry_find("xla"));
  ASSERT_TRUE(cml__registry_find("hlo") == cml__registry_find("xla"));
  ASSERT_TRUE(cml__registry_find("shlo") == cml__registry_find("xla"));
#endif
}

TEST(null_backend_is_a_working_template) {
  cml_backend_t* b = NULL;
  ASSERT_STATUS_OK(cml_backend_new_with_config("null", &b));
  ASSERT_STREQ(cml_backend_name(b), "null");
  ASSERT_EQ_INT(cml_backend_device_count(b), 1);
  ASSERT_STREQ(cml_backend_device_description(b, 0), "null:0");
  ASSERT_STREQ(cml_backend_device_description(b, 1), "invalid device");
  const cml_capabilities_t* caps = cml_backend_capabilities(b);
  ASSERT_EQ_U64(caps->dtypes, 0);
  for (int op = 0; op < CML_OP_COUNT; ++op)
    ASSERT_FALSE(cml_capabilities_has_op(caps, (cml_op_t)op));
  ASSERT_FALSE(cml_backend_has_shared_buffers(b));
  ASSERT_TRUE(cml_backend_get_extension(b, "xla") == NULL);
  float x[2] = {1, 2};
  cml_shape_t s = cml_shape_make(CML_DTYPE_F32, 1, (int64_t[]){2});
  cml_buffer_t* buf = (cml_buffer_t*)1;
  ASSERT_STATUS_CODE(cml_buffer_from_host(b, 0, &s, x, sizeof x, &buf), CML_STATUS_UNIMPLEMENTED);
  ASSERT_TRUE(buf == NULL);
  cml_backend_release(b);

  cml_status_t st = cml_backend_new_with_config("null:speed=11", &b);
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(cml_status_message(st), "unknown option \"speed\"");
  cml_status_free(st);
  ASSERT_TRUE(b == NULL);
}

TEST(register_and_create_by_name_and_alias) {
  ASSERT_STATUS_OK(ensure_fake());
  ASSERT_STREQ(cml_backend_registered_aliases("fake"), "fk, phony");
  ASSERT_STREQ(cml_backend_registered_aliases("fk"), "fk, phony");
  ASSERT_CONTAINS(cml_backend_config_help("phony"), "color=");

  cml_backend_t* b = NULL;
  ASSERT_STATUS_OK(cml_backend_new_with_config("fake:color=red,size=2", &b));
  ASSERT_STREQ(g_last_config, "color=red,size=2");
  ASSERT_STREQ(cml_backend_name(b), "fake");
  ASSERT_STREQ(cml_backend_config(b), "color=red,size=2");
  ASSERT_STREQ(cml_backend_description(b), "fake");
  ASSERT_STATUS_OK(cml_backend_set_description(b, "changed"));
  ASSERT_STREQ(cml_backend_description(b), "changed");
  int before = g_destroyed;
  cml_backend_retain(b);
  cml_backend_release(b);
  ASSERT_EQ_INT(g_destroyed, before);
  cml_backend_release(b);
  ASSERT_EQ_INT(g_destroyed, before + 1);

  // Split at the FIRST ':' only; aliases reach the same factory.
  ASSERT_STATUS_OK(cml_backend_new_with_config("phony:/a/b:c.so", &b));
  ASSERT_STREQ(g_last_config, "/a/b:c.so");
  ASSERT_STREQ(cml_backend_name(b), "fake");
  cml_backend_release(b);
  ASSERT_STATUS_OK(cml_backend_new_with_config("fk", &b));
  ASSERT_STREQ(g_last_config, "");
  cml_backend_release(b);

  // The factory's error passes through and nothing is returned.
  b = (cml_backend_t*)1;
  ASSERT_STATUS_CODE(cml_backend_new_with_config("fake:fail", &b), CML_STATUS_UNAVAILABLE);
  ASSERT_TRUE(b == NULL);
}

TEST(unknown_backend_lists_registered_names) {
  ASSERT_STATUS_OK(ensure_fake());
  cml_backend_t* b = NULL;
  cml_status_t st = cml_backend_new_with_config("tpu9000:fast", &b);
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_NOT_FOUND);
  ASSERT_CONTAINS(cml_status_message(st), "\"tpu9000\"");
  ASSERT_CONTAINS(cml_status_message(st), "fake (aliases: fk, phony)");
  ASSERT_CONTAINS(cml_status_message(st), "null");
  cml_status_free(st);
  ASSERT_TRUE(b == NULL);

  st = cml_backend_new_with_config(":x", &b);
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(cml_status_message(st), "no backend name");
  cml_status_free(st);
  ASSERT_STATUS_CODE(cml_backend_new_with_config("fake", NULL), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_STATUS_CODE(cml_backend_create("fake", (cml_allocator_t){NULL, NULL}, &b),
                     CML_STATUS_INVALID_ARGUMENT);
}

TEST(help_config_returns_option_help) {
  ASSERT_STATUS_OK(ensure_fake());
  cml_backend_t* b = NULL;
  snprintf(g_last_config, sizeof g_last_config, "untouched");
  cml_status_t st = cml_backend_new_with_config("fake:help", &b);
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(cml_status_message(st), "fake backend options:");
  ASSERT_CONTAINS(cml_status_message(st), "color=<string>: the fake color");
  cml_status_free(st);
  ASSERT_TRUE(b == NULL);
  ASSERT_STREQ(g_last_config, "untouched");  // the factory was not called with "help"
#ifdef CML_HAVE_BACKEND_C
  st = cml_backend_new_with_config("c:help", &b);
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(cml_status_message(st), "c backend options:");
  cml_status_free(st);
#endif
#ifdef CML_HAVE_BACKEND_XLA
  st = cml_backend_new_with_config("xla:help", &b);
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(cml_status_message(st), "xla backend options:");
  cml_status_free(st);
#endif
}

TEST(gomlx_backend_env) {
  ASSERT_STATUS_OK(ensure_fake());
  cml_backend_t* b = NULL;
  const char* config = NULL;
  const char* reason = NULL;

  setenv(CML_BACKEND_ENV, "phony:from_env", 1);
  ASSERT_STATUS_OK(cml_backend_new(&b));
  ASSERT_STREQ(g_last_config, "from_env");
  cml_backend_release(b);
  cml_backend_default_config(&config, &reason);
  ASSERT_STREQ(config, "phony:from_env");
  ASSERT_CONTAINS(reason, "GOMLX_BACKEND is set");

  // Present but empty: the default is used.
  setenv(CML_BACKEND_ENV, "", 1);
  ASSERT_STATUS_OK(cml_backend_new(&b));
  ASSERT_STREQ(g_last_config, "from_default");
  cml_backend_release(b);
  cml_backend_default_config(&config, &reason);
  ASSERT_STREQ(config, "fake:from_default");
  ASSERT_CONTAINS(reason, "empty");

  // Unknown names are errors, not a silent default.
  setenv(CML_BACKEND_ENV, "nonexistent", 1);
  cml_status_t st = cml_backend_new(&b);
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_NOT_FOUND);
  ASSERT_CONTAINS(cml_status_message(st), "GOMLX_BACKEND=\"nonexistent\"");
  ASSERT_CONTAINS(cml_status_message(st), "fake");
  cml_status_free(st);
  ASSERT_TRUE(b == NULL);

  // Unset: the highest default_priority wins, and the reason says why.
  unsetenv(CML_BACKEND_ENV);
  cml_backend_default_config(&config, &reason);
  ASSERT_STREQ(config, "fake:from_default");
  ASSERT_STREQ(reason, "the fake backend always wins in this test");
  ASSERT_STATUS_OK(cml_backend_new(&b));
  ASSERT_STREQ(g_last_config, "from_default");
  cml_backend_release(b);
  // An empty config string picks the same default.
  ASSERT_STATUS_OK(cml_backend_new_with_config("", &b));
  ASSERT_STREQ(g_last_config, "from_default");
  cml_backend_release(b);
}

TEST(duplicates_are_rejected) {
  ASSERT_STATUS_OK(ensure_fake());
  size_t before = cml_backend_registered_count();
  cml_backend_factory_t f = fake_factory;
  cml_status_t st = cml_backend_register(&f);  // same name
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(cml_status_message(st), "\"fake\" is already registered");
  cml_status_free(st);

  f.name = "phony";  // the name of an existing alias
  f.aliases = NULL;
  st = cml_backend_register(&f);
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(cml_status_message(st), "\"phony\"");
  cml_status_free(st);

  f.name = "fresh";
  f.aliases = "new,fk";  // an alias already taken
  st = cml_backend_register(&f);
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(cml_status_message(st), "alias \"fk\"");
  ASSERT_CONTAINS(cml_status_message(st), "\"fake\"");
  cml_status_free(st);

  f.aliases = "null";  // the name of an existing backend as an alias
  ASSERT_STATUS_CODE(cml_backend_register(&f), CML_STATUS_INVALID_ARGUMENT);
  // Aliases follow the names' rules: "e:f" could never be selected (configs split at ':').
  static const char* const bad_aliases[] = {"ok, e:f", "a b",     "x=y",
                                            "t\tab",   "q\"uote", "\xc3\xa9"};
  for (size_t i = 0; i < sizeof bad_aliases / sizeof *bad_aliases; ++i) {
    f.aliases = bad_aliases[i];
    st = cml_backend_register(&f);
    ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_INVALID_ARGUMENT);
    ASSERT_CONTAINS(cml_status_message(st), "invalid alias");
    cml_status_free(st);
  }
  f.name = "bad:name";
  f.aliases = NULL;
  ASSERT_STATUS_CODE(cml_backend_register(&f), CML_STATUS_INVALID_ARGUMENT);
  // Names are printable ASCII without quotes or backslashes (they appear in messages, JSON and
  // environment variables); control characters and non-ASCII bytes were accepted.
  static const char* const bad_names[] = {"new\nline", "t\tab", "q\"uote", "back\\slash",
                                          "\xc3\xa9t\xc3\xa9"};
  for (size_t i = 0; i < sizeof bad_names / sizeof *bad_names; ++i) {
    f.name = bad_names[i];
    st = cml_backend_register(&f);
    ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_INVALID_ARGUMENT);
    ASSERT_CONTAINS(cml_status_message(st), "printable ASCII");
    cml_status_free(st);
  }
  f.name = "";
  ASSERT_STATUS_CODE(cml_backend_register(&f), CML_STATUS_INVALID_ARGUMENT);
  f.name = "nocreate";
  f.create = NULL;
  ASSERT_STATUS_CODE(cml_backend_register(&f), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_STATUS_CODE(cml_backend_register(NULL), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_EQ_INT(cml_backend_registered_count(), before);
}

// Creating |config| fails with INVALID_ARGUMENT naming |backend| and the repeated |key|.
static void expect_repeated_option(int* test_failed_, const char* config, const char* backend,
                                   const char* key) {
  cml_backend_t* b = NULL;
  cml_status_t st = cml_backend_new_with_config(config, &b);
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_TRUE(b == NULL);
  char want[128];
  snprintf(want, sizeof want, "%s backend: option \"%s\" is given more than once", backend, key);
  ASSERT_CONTAINS(cml_status_message(st), want);
  cml_status_free(st);
}

TEST(repeated_config_keys_are_rejected) {
#ifdef CML_HAVE_BACKEND_C
  expect_repeated_option(test_failed_, "c:threads=1,threads=2", "c", "threads");
  expect_repeated_option(test_failed_, "c:fusion,nofusion", "c", "fusion");
  cml_backend_t* b = NULL;
  ASSERT_STATUS_OK(cml_backend_new_with_config("c:threads=1,fusion=false", &b));
  cml_backend_release(b);
  // Through GOMLX_BACKEND too, with the variable named.
  setenv("GOMLX_BACKEND", "c:threads=2,threads=2", 1);
  cml_status_t st = cml_backend_new(&b);
  unsetenv("GOMLX_BACKEND");
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(cml_status_message(st), "option \"threads\" is given more than once");
  cml_status_free(st);
#endif
#ifdef CML_HAVE_BACKEND_XLA
  // An option and its alias are one option; the plugin is never loaded.
  expect_repeated_option(test_failed_, "xla:cpu,shared_buffers=true,shared_buffer=false", "xla",
                         "shared_buffers");
  expect_repeated_option(test_failed_, "xla:cpu,memory_fraction=0.5,memory_fraction=0.6", "xla",
                         "memory_fraction");
#endif
}

TEST(api_version_mismatch_is_incompatible) {
  cml_backend_factory_t f = fake_factory;
  f.name = "future";
  f.aliases = NULL;
  f.api_major = CML_BACKEND_API_MAJOR + 1;
  cml_status_t st = cml_backend_register(&f);
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_INCOMPATIBLE);
  ASSERT_CONTAINS(cml_status_message(st), "\"future\"");
  ASSERT_CONTAINS(cml_status_message(st), "major");
  cml_status_free(st);
  f.api_major = CML_BACKEND_API_MAJOR;
  f.api_minor = CML_BACKEND_API_MINOR + 1;
  ASSERT_STATUS_CODE(cml_backend_register(&f), CML_STATUS_INCOMPATIBLE);
  f.api_minor = CML_BACKEND_API_MINOR;
  f.struct_size = 8;
  ASSERT_STATUS_CODE(cml_backend_register(&f), CML_STATUS_INCOMPATIBLE);
  ASSERT_TRUE(cml__registry_find("future") == NULL);
}

TEST(plugin_load_errors) {
  cml_status_t st = cml_plugin_load("/nonexistent/dir/libcml_no_such_plugin.so");
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_NOT_FOUND);
  ASSERT_CONTAINS(cml_status_message(st), "libcml_no_such_plugin.so");
  cml_status_free(st);

  // A file that is not a shared library at all.
  char path[4096];
  ASSERT_TRUE(test_tmp_template(path, sizeof path, "cml_registry_test_"));
  int fd = mkstemp(path);
  ASSERT_TRUE(fd >= 0);
  ASSERT_EQ_INT(write(fd, "not an ELF file\n", 16), 16);
  close(fd);
  st = cml_plugin_load(path);
  unlink(path);
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_NOT_FOUND);
  ASSERT_CONTAINS(cml_status_message(st), "cannot load");
  cml_status_free(st);

  // A real shared library without cml_plugin_query.
  st = cml_plugin_load("libm.so.6");
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(cml_status_message(st), "not a cml plugin");
  ASSERT_CONTAINS(cml_status_message(st), CML_PLUGIN_QUERY_SYMBOL);
  cml_status_free(st);

  ASSERT_STATUS_CODE(cml_plugin_load(""), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_STATUS_CODE(cml_plugin_load(NULL), CML_STATUS_INVALID_ARGUMENT);
}

//===--- out of memory ---===//

// An allocator that fails its Nth allocation (counting from 1) and counts live blocks.
typedef struct failing_t {
  int countdown;  // allocations left before the failing one
  int live;
} failing_t;

static void* failing_fn(void* self, void* ptr, size_t old_size, size_t new_size, size_t alignment) {
  failing_t* f = (failing_t*)self;
  if (new_size == 0) {
    if (ptr) f->live--;
    free(ptr);
    return NULL;
  }
  if (f->countdown-- == 0) return NULL;
  void* p = NULL;
  if (ptr) {
    p = realloc(ptr, new_size);
  } else {
    size_t rounded = (new_size + alignment - 1) / alignment * alignment;
    p = aligned_alloc(alignment, rounded);
    if (p) f->live++;
  }
  return p;
}

TEST(create_out_of_memory_sweep) {
  for (int n = 0; n < 100; ++n) {
    failing_t f = {n, 0};
    cml_allocator_t a = {&f, failing_fn};
    cml_backend_t* b = (cml_backend_t*)1;
    cml_status_t st = cml_backend_create("null", a, &b);
    if (st == CML_OK) {
      ASSERT_TRUE(n > 0);  // at least one allocation happened
      cml_backend_release(b);
      ASSERT_EQ_INT(f.live, 0);
      return;
    }
    ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_RESOURCE_EXHAUSTED);
    cml_status_free(st);
    ASSERT_TRUE(b == NULL);
    ASSERT_EQ_INT(f.live, 0);  // nothing leaked
  }
  TEST_FAIL_("cml_backend_create never succeeded");
}

//===--- concurrent registration ---===//

#define THREADS 4
static cml_backend_factory_t g_thread_factories[THREADS];
static char g_thread_names[THREADS][16];
static cml_status_t g_thread_status[THREADS];

static void* register_thread(void* arg) {
  size_t i = (size_t)(uintptr_t)arg;
  for (int k = 0; k < 100; ++k) (void)cml_backend_registered_count();
  g_thread_status[i] = cml_backend_register(&g_thread_factories[i]);
  for (int k = 0; k < 100; ++k) (void)cml__registry_find("fake");
  return NULL;
}

TEST(concurrent_registration) {
  size_t before = cml_backend_registered_count();
  pthread_t threads[THREADS];
  for (size_t i = 0; i < THREADS; ++i) {
    snprintf(g_thread_names[i], sizeof g_thread_names[i], "thread%zu", i);
    g_thread_factories[i] = fake_factory;
    g_thread_factories[i].name = g_thread_names[i];
    g_thread_factories[i].aliases = NULL;
    ASSERT_EQ_INT(pthread_create(&threads[i], NULL, register_thread, (void*)(uintptr_t)i), 0);
  }
  for (size_t i = 0; i < THREADS; ++i) pthread_join(threads[i], NULL);
  for (size_t i = 0; i < THREADS; ++i) ASSERT_STATUS_OK(g_thread_status[i]);
  ASSERT_EQ_INT(cml_backend_registered_count(), before + THREADS);
  for (size_t i = 0; i < THREADS; ++i) ASSERT_TRUE(cml__registry_find(g_thread_names[i]) != NULL);
}

TEST_MAIN(TEST_ENTRY(builtin_null_is_registered), TEST_ENTRY(null_backend_is_a_working_template),
          TEST_ENTRY(register_and_create_by_name_and_alias),
          TEST_ENTRY(unknown_backend_lists_registered_names),
          TEST_ENTRY(help_config_returns_option_help), TEST_ENTRY(gomlx_backend_env),
          TEST_ENTRY(duplicates_are_rejected), TEST_ENTRY(repeated_config_keys_are_rejected),
          TEST_ENTRY(api_version_mismatch_is_incompatible), TEST_ENTRY(plugin_load_errors),
          TEST_ENTRY(create_out_of_memory_sweep), TEST_ENTRY(concurrent_registration))
