// SPDX-License-Identifier: Apache-2.0
// tests/unit/config_test.c: the shared config option parser, env readers and config splitting.
#include <stdlib.h>

#include "core/runtime_internal.h"
#include "test.h"

// The option set every test below parses against.
typedef struct opts_t {
  bool fusion, shared;
  bool fusion_set;
  int64_t threads;
  double fraction;
  char allocator[16];
  char path[8];
  cml__int_list_t devices;
} opts_t;

static void opts_specs(opts_t* o, cml__option_spec_t specs[6]) {
  memset(o, 0, sizeof *o);
  o->fusion = true;
  o->threads = -7;
  o->fraction = 0.75;
  strcpy(o->allocator, "default");
  const cml__option_spec_t s[6] = {
      {.key = "fusion",
       .type = CML__OPT_BOOL,
       .out = &o->fusion,
       .out_set = &o->fusion_set,
       .help = "fuse elementwise ops"},
      {.key = "shared_buffers",
       .alias = "shared_buffer",
       .type = CML__OPT_BOOL,
       .out = &o->shared,
       .help = "use shared buffers"},
      {.key = "threads",
       .type = CML__OPT_INT,
       .out = &o->threads,
       .check_range = true,
       .min = 0,
       .max = 64,
       .help = "worker threads"},
      {.key = "memory_fraction",
       .type = CML__OPT_FLOAT,
       .out = &o->fraction,
       .check_range = true,
       .min = 0,
       .max = 1,
       .help = "fraction of memory"},
      {.key = "allocator",
       .type = CML__OPT_STRING,
       .out = o->allocator,
       .capacity = sizeof o->allocator,
       .choices = "default|bfc|cuda_async",
       .help = "allocator"},
      {.key = "visible_devices",
       .type = CML__OPT_INT_LIST,
       .out = &o->devices,
       .help = "devices to use"},
  };
  memcpy(specs, s, sizeof s);
}

static cml_status_t parse(opts_t* o, const char* config) {
  cml__option_spec_t specs[6];
  opts_specs(o, specs);
  return cml__config_parse("test", config, specs, 6, NULL, NULL);
}

TEST(empty_config_keeps_defaults) {
  opts_t o;
  ASSERT_STATUS_OK(parse(&o, ""));
  ASSERT_TRUE(o.fusion);
  ASSERT_EQ_INT(o.threads, -7);
  ASSERT_STATUS_OK(parse(&o, NULL));
  ASSERT_STATUS_OK(parse(&o, " , ,, "));
  ASSERT_FALSE(o.fusion_set);
  ASSERT_STREQ(o.allocator, "default");
}

TEST(bool_spellings) {
  static const char* const kTrue[] = {"1",    "true", "t",  "yes",     "on", "enabled",
                                      "TRUE", "Yes",  "ON", "Enabled", "T"};
  static const char* const kFalse[] = {"0",     "false", "f",   "no",       "off", "disabled",
                                       "FALSE", "No",    "OFF", "Disabled", "F"};
  char text[64];
  opts_t o;
  for (size_t i = 0; i < sizeof kTrue / sizeof kTrue[0]; ++i) {
    snprintf(text, sizeof text, "shared_buffers=%s", kTrue[i]);
    ASSERT_STATUS_OK(parse(&o, text));
    ASSERT_TRUE(o.shared);
  }
  for (size_t i = 0; i < sizeof kFalse / sizeof kFalse[0]; ++i) {
    snprintf(text, sizeof text, "fusion=%s", kFalse[i]);
    ASSERT_STATUS_OK(parse(&o, text));
    ASSERT_FALSE(o.fusion);
    ASSERT_TRUE(o.fusion_set);
  }
  bool b = true;
  ASSERT_FALSE(cml__parse_bool("maybe", &b));
  ASSERT_FALSE(cml__parse_bool("", &b));
  ASSERT_FALSE(cml__parse_bool("2", &b));
  ASSERT_TRUE(b);  // unchanged on failure
}

TEST(bare_key_and_no_prefix) {
  opts_t o;
  ASSERT_STATUS_OK(parse(&o, "shared_buffers"));
  ASSERT_TRUE(o.shared);
  ASSERT_STATUS_OK(parse(&o, "nofusion"));
  ASSERT_FALSE(o.fusion);
  ASSERT_TRUE(o.fusion_set);
  ASSERT_STATUS_OK(parse(&o, "fusion,noshared_buffer"));  // alias works with "no" too
  ASSERT_TRUE(o.fusion);
  ASSERT_FALSE(o.shared);
  ASSERT_STATUS_OK(parse(&o, "shared_buffer=yes"));
  ASSERT_TRUE(o.shared);
  // Each option once: a repeat is an error (repeated_keys_are_rejected).
  ASSERT_STATUS_CODE(parse(&o, "fusion=false,fusion"), CML_STATUS_INVALID_ARGUMENT);
}

// Checks that parsing |config| fails with INVALID_ARGUMENT naming the backend and |key|.
static void expect_repeated(int* test_failed_, const char* config, const char* key) {
  opts_t o;
  cml_status_t st = parse(&o, config);
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_INVALID_ARGUMENT);
  char want[96];
  snprintf(want, sizeof want, "test backend: option \"%s\" is given more than once", key);
  ASSERT_CONTAINS(cml_status_message(st), want);
  cml_status_free(st);
}

TEST(repeated_keys_are_rejected) {
  expect_repeated(test_failed_, "threads=1,threads=2", "threads");
  expect_repeated(test_failed_, "threads=1,threads=1", "threads");  // even with the same value
  expect_repeated(test_failed_, " threads = 1 , fusion , threads=2", "threads");
  expect_repeated(test_failed_, "fusion,nofusion", "fusion");  // "no" form of the same option
  expect_repeated(test_failed_, "nofusion,fusion=1", "fusion");
  expect_repeated(test_failed_, "shared_buffers,shared_buffer=0",
                  "shared_buffers");  // key and alias
  expect_repeated(test_failed_, "noshared_buffer,shared_buffers", "shared_buffers");
  expect_repeated(test_failed_, "allocator=bfc,allocator=default", "allocator");
  expect_repeated(test_failed_, "visible_devices=0,visible_devices=1", "visible_devices");
  expect_repeated(test_failed_, "memory_fraction=0.5,,memory_fraction=0.5", "memory_fraction");
  // The message names the repeated item and the alias pairing.
  opts_t o;
  cml_status_t st = parse(&o, "shared_buffer,shared_buffers=false");
  ASSERT_CONTAINS(cml_status_message(st), "again as \"shared_buffers=false\"");
  ASSERT_CONTAINS(cml_status_message(st), "\"shared_buffers\" and \"shared_buffer\" are the same");
  cml_status_free(st);
  // Different options, each once, are fine; values from a failed parse are not trusted.
  ASSERT_STATUS_OK(parse(&o, "threads=3,fusion=0,shared_buffer,memory_fraction=0.25"));
  ASSERT_EQ_INT(o.threads, 3);
  ASSERT_FALSE(o.fusion);
  ASSERT_TRUE(o.shared);
  ASSERT_EQ_DBL(o.fraction, 0.25);
  // Each parse starts afresh: the same key in two separate configs is not a repeat.
  ASSERT_STATUS_OK(parse(&o, "threads=1"));
  ASSERT_STATUS_OK(parse(&o, "threads=2"));
  ASSERT_EQ_INT(o.threads, 2);
}

TEST(ints_floats_and_spaces) {
  opts_t o;
  ASSERT_STATUS_OK(parse(&o, " threads = 12 , memory_fraction=0.5 "));
  ASSERT_EQ_INT(o.threads, 12);
  ASSERT_EQ_DBL(o.fraction, 0.5);
  ASSERT_STATUS_OK(parse(&o, "threads=0x10"));
  ASSERT_EQ_INT(o.threads, 16);
  ASSERT_STATUS_OK(parse(&o, "threads=+3,memory_fraction=1e-1"));
  ASSERT_EQ_INT(o.threads, 3);
  ASSERT_EQ_DBL(o.fraction, 0.1);
  ASSERT_STATUS_OK(parse(&o, "threads=010"));  // decimal, not octal
  ASSERT_EQ_INT(o.threads, 10);
}

TEST(bad_values_name_key_value_and_type) {
  opts_t o;
  cml_status_t st = parse(&o, "threads=many");
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(cml_status_message(st), "\"threads\"");
  ASSERT_CONTAINS(cml_status_message(st), "\"many\"");
  ASSERT_CONTAINS(cml_status_message(st), "an int");
  ASSERT_CONTAINS(cml_status_message(st), "test backend");
  cml_status_free(st);

  st = parse(&o, "threads=65");
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(cml_status_message(st), "[0, 64]");
  cml_status_free(st);
  ASSERT_EQ_INT(o.threads, -7);  // unchanged

  st = parse(&o, "fusion=perhaps");
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(cml_status_message(st), "\"perhaps\"");
  ASSERT_CONTAINS(cml_status_message(st), "a bool");
  cml_status_free(st);

  st = parse(&o, "memory_fraction=nan");
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(cml_status_message(st), "float");
  cml_status_free(st);
  ASSERT_STATUS_CODE(parse(&o, "memory_fraction=1.5"), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_STATUS_CODE(parse(&o, "memory_fraction=0.5x"), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_STATUS_CODE(parse(&o, "threads="), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_STATUS_CODE(parse(&o, "threads=99999999999999999999999"), CML_STATUS_INVALID_ARGUMENT);

  st = parse(&o, "threads");  // a non-bool needs a value
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(cml_status_message(st), "needs a value");
  cml_status_free(st);
  ASSERT_STATUS_CODE(parse(&o, "nothreads"), CML_STATUS_INVALID_ARGUMENT);
}

TEST(strings_and_choices) {
  opts_t o;
  ASSERT_STATUS_OK(parse(&o, "allocator=bfc"));
  ASSERT_STREQ(o.allocator, "bfc");
  ASSERT_STATUS_OK(parse(&o, "allocator=CUDA_ASYNC"));
  ASSERT_STREQ(o.allocator, "cuda_async");  // the canonical spelling
  cml_status_t st = parse(&o, "allocator=vmmx");
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(cml_status_message(st), "default|bfc|cuda_async");
  ASSERT_CONTAINS(cml_status_message(st), "\"vmmx\"");
  cml_status_free(st);

  // A free-form string that does not fit its array is an error, not a truncation.
  char path[8] = "";
  cml__option_spec_t spec = {
      .key = "path", .type = CML__OPT_STRING, .out = path, .capacity = sizeof path};
  ASSERT_STATUS_OK(cml__config_parse("test", "path=abcdefg", &spec, 1, NULL, NULL));
  ASSERT_STREQ(path, "abcdefg");
  ASSERT_STATUS_CODE(cml__config_parse("test", "path=abcdefgh", &spec, 1, NULL, NULL),
                     CML_STATUS_INVALID_ARGUMENT);
  ASSERT_STREQ(path, "abcdefg");
}

TEST(int_lists) {
  opts_t o;
  ASSERT_STATUS_OK(parse(&o, "visible_devices=0;1;2"));
  ASSERT_EQ_INT(o.devices.count, 3);
  ASSERT_EQ_INT(o.devices.values[0], 0);
  ASSERT_EQ_INT(o.devices.values[2], 2);
  ASSERT_STATUS_OK(parse(&o, "visible_devices=3:5"));
  ASSERT_EQ_INT(o.devices.count, 2);
  ASSERT_EQ_INT(o.devices.values[0], 3);
  ASSERT_EQ_INT(o.devices.values[1], 5);
  ASSERT_STATUS_OK(parse(&o, "visible_devices=7 8  9"));
  ASSERT_EQ_INT(o.devices.count, 3);
  ASSERT_EQ_INT(o.devices.values[2], 9);
  ASSERT_STATUS_OK(parse(&o, "visible_devices=-1;4;"));
  ASSERT_EQ_INT(o.devices.count, 2);
  ASSERT_EQ_INT(o.devices.values[0], -1);
  cml_status_t st = parse(&o, "visible_devices=0;x;2");
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(cml_status_message(st), "visible_devices");
  ASSERT_CONTAINS(cml_status_message(st), "list of ints");
  cml_status_free(st);
  char many[1024] = "visible_devices=";
  for (int i = 0; i < CML__INT_LIST_MAX + 1; ++i) strcat(many, "1;");
  ASSERT_STATUS_CODE(parse(&o, many), CML_STATUS_INVALID_ARGUMENT);
}

TEST(unknown_key_lists_valid_keys) {
  opts_t o;
  cml_status_t st = parse(&o, "fusion,bogus=1");
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_INVALID_ARGUMENT);
  const char* m = cml_status_message(st);
  ASSERT_CONTAINS(m, "unknown option \"bogus\"");
  ASSERT_CONTAINS(m, "fusion");
  ASSERT_CONTAINS(m, "shared_buffers (or shared_buffer)");
  ASSERT_CONTAINS(m, "threads");
  ASSERT_CONTAINS(m, "memory_fraction");
  ASSERT_CONTAINS(m, "allocator");
  ASSERT_CONTAINS(m, "visible_devices");
  ASSERT_CONTAINS(m, "help");
  cml_status_free(st);
  ASSERT_STATUS_CODE(parse(&o, "Fusion"), CML_STATUS_INVALID_ARGUMENT);  // keys are exact
}

TEST(help_lists_options) {
  opts_t o;
  cml_status_t st = parse(&o, "threads=2,help");
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_INVALID_ARGUMENT);
  const char* m = cml_status_message(st);
  ASSERT_CONTAINS(m, "test backend options:");
  ASSERT_CONTAINS(m, "threads=<int> [0..64]: worker threads");
  ASSERT_CONTAINS(m, "allocator=<string> (one of default|bfc|cuda_async)");
  ASSERT_CONTAINS(m, "visible_devices=<int list>");
  cml_status_free(st);

  cml__option_spec_t specs[6];
  opts_specs(&o, specs);
  size_t need = cml__config_format_help(specs, 6, NULL, 0);
  ASSERT_TRUE(need > 0);
  char small[10];
  ASSERT_EQ_INT(cml__config_format_help(specs, 6, small, sizeof small), need);
  ASSERT_EQ_INT(strlen(small), sizeof small - 1);
}

typedef struct extra_t {
  int calls;
  size_t index;
  char item[64];
} extra_t;

static cml_status_t extra_fn(void* user, size_t index, const char* item) {
  extra_t* e = (extra_t*)user;
  if (index != 0) return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "only first: %s", item);
  e->calls++;
  e->index = index;
  snprintf(e->item, sizeof e->item, "%s", item);
  return CML_OK;
}

TEST(extra_items_reach_the_callback) {
  opts_t o;
  cml__option_spec_t specs[6];
  opts_specs(&o, specs);
  extra_t e = {0, 99, ""};
  ASSERT_STATUS_OK(cml__config_parse("xla", "/opt/p/pjrt_c_api_cpu_plugin.so,threads=4", specs, 6,
                                     extra_fn, &e));
  ASSERT_EQ_INT(e.calls, 1);
  ASSERT_EQ_INT(e.index, 0);
  ASSERT_STREQ(e.item, "/opt/p/pjrt_c_api_cpu_plugin.so");
  ASSERT_EQ_INT(o.threads, 4);
  // An unknown key=value item reaches the callback whole.
  e.calls = 0;
  ASSERT_STATUS_OK(cml__config_parse("xla", "weird=1", specs, 6, extra_fn, &e));
  ASSERT_STREQ(e.item, "weird=1");
  ASSERT_STATUS_CODE(cml__config_parse("xla", "cpu,other", specs, 6, extra_fn, &e),
                     CML_STATUS_INVALID_ARGUMENT);
  cml_status_t st = cml__config_unknown_key("xla", "zzz", specs, 6);
  ASSERT_CONTAINS(cml_status_message(st), "unknown option \"zzz\"");
  ASSERT_CONTAINS(cml_status_message(st), "visible_devices");
  cml_status_free(st);
}

TEST(no_specs_rejects_everything_but_empty) {
  ASSERT_STATUS_OK(cml__config_parse("null", "", NULL, 0, NULL, NULL));
  cml_status_t st = cml__config_parse("null", "x=1", NULL, 0, NULL, NULL);
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(cml_status_message(st), "unknown option \"x\"");
  cml_status_free(st);
}

TEST(env_bool_and_int) {
  bool b = false;
  unsetenv("CML_TEST_FLAG");
  ASSERT_STATUS_OK(cml__env_bool("CML_TEST_FLAG", true, &b));
  ASSERT_TRUE(b);
  setenv("CML_TEST_FLAG", "", 1);
  ASSERT_STATUS_OK(cml__env_bool("CML_TEST_FLAG", true, &b));
  ASSERT_TRUE(b);
  setenv("CML_TEST_FLAG", "0", 1);
  ASSERT_STATUS_OK(cml__env_bool("CML_TEST_FLAG", true, &b));
  ASSERT_FALSE(b);
  setenv("CML_TEST_FLAG", "Enabled", 1);
  ASSERT_STATUS_OK(cml__env_bool("CML_TEST_FLAG", false, &b));
  ASSERT_TRUE(b);
  setenv("CML_TEST_FLAG", "sometimes", 1);
  cml_status_t st = cml__env_bool("CML_TEST_FLAG", false, &b);
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(cml_status_message(st), "CML_TEST_FLAG");
  ASSERT_CONTAINS(cml_status_message(st), "sometimes");
  cml_status_free(st);
  unsetenv("CML_TEST_FLAG");

  int64_t v = 0;
  ASSERT_STATUS_OK(cml__env_int("CML_TEST_INT", 5, &v));
  ASSERT_EQ_INT(v, 5);
  setenv("CML_TEST_INT", "-12", 1);
  ASSERT_STATUS_OK(cml__env_int("CML_TEST_INT", 5, &v));
  ASSERT_EQ_INT(v, -12);
  setenv("CML_TEST_INT", "12b", 1);
  ASSERT_STATUS_CODE(cml__env_int("CML_TEST_INT", 5, &v), CML_STATUS_INVALID_ARGUMENT);
  unsetenv("CML_TEST_INT");
}

TEST(split_at_first_colon) {
  char name[16];
  const char* rest = NULL;
  ASSERT_STATUS_OK(cml__config_split("xla:/abs/path:plugin.so", name, sizeof name, &rest));
  ASSERT_STREQ(name, "xla");
  ASSERT_STREQ(rest, "/abs/path:plugin.so");
  ASSERT_STATUS_OK(cml__config_split("c", name, sizeof name, &rest));
  ASSERT_STREQ(name, "c");
  ASSERT_STREQ(rest, "");
  ASSERT_STATUS_OK(cml__config_split(" go :threads=2", name, sizeof name, &rest));
  ASSERT_STREQ(name, "go");
  ASSERT_STREQ(rest, "threads=2");
  ASSERT_STATUS_OK(cml__config_split("", name, sizeof name, &rest));
  ASSERT_STREQ(name, "");
  ASSERT_STATUS_OK(cml__config_split(":x", name, sizeof name, &rest));
  ASSERT_STREQ(name, "");
  ASSERT_STREQ(rest, "x");
  ASSERT_STATUS_CODE(cml__config_split("averyveryverylongname:x", name, sizeof name, &rest),
                     CML_STATUS_INVALID_ARGUMENT);
}

TEST(string_helpers) {
  ASSERT_TRUE(cml__runtime_strieq("AbC", "aBc"));
  ASSERT_FALSE(cml__runtime_strieq("abc", "abcd"));
  ASSERT_TRUE(cml__runtime_strieq(NULL, NULL));
  ASSERT_FALSE(cml__runtime_strieq("a", NULL));
  char* s = cml__runtime_strdup(cml_allocator_system(), "hello");
  ASSERT_STREQ(s, "hello");
  cml__runtime_strfree(cml_allocator_system(), s);
  ASSERT_TRUE(cml__runtime_strdup(cml_allocator_system(), NULL) == NULL);
}

TEST_MAIN(TEST_ENTRY(empty_config_keeps_defaults), TEST_ENTRY(bool_spellings),
          TEST_ENTRY(bare_key_and_no_prefix), TEST_ENTRY(repeated_keys_are_rejected),
          TEST_ENTRY(ints_floats_and_spaces), TEST_ENTRY(bad_values_name_key_value_and_type),
          TEST_ENTRY(strings_and_choices), TEST_ENTRY(int_lists),
          TEST_ENTRY(unknown_key_lists_valid_keys), TEST_ENTRY(help_lists_options),
          TEST_ENTRY(extra_items_reach_the_callback),
          TEST_ENTRY(no_specs_rejects_everything_but_empty), TEST_ENTRY(env_bool_and_int),
          TEST_ENTRY(split_at_first_colon), TEST_ENTRY(string_helpers))
