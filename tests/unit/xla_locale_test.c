// SPDX-License-Identifier: Apache-2.0
// tests/unit/xla_locale_test.c: a program whose locale writes numbers with a comma (de_DE) still
// gets "1.5" in the StableHLO text cml writes for XLA and in the config strings it parses and
// writes, and its own locale is left as it was. Runs in a de_DE.UTF-8 locale (the build
// compiles one into the build tree with localedef and passes it in LOCPATH); exits 77 (skipped)
// when no comma locale can be set. With the XLA CPU plugin installed it also runs a module there.
#include <locale.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "backends/xla/stablehlo/emitter.h"
#include "builder_fake_backend.h"
#include "cml/cml.h"
#include "cml/fused.h"
#include "core/runtime_internal.h"
#include "test.h"

static bool decimal_point_is_comma(void) { return strcmp(localeconv()->decimal_point, ",") == 0; }

// main(x: f32[2,3], p: f32[3]) = BatchNormInference(x * 1.5 + f32(0.1 as f64), scale p,
// offset p, mean p, variance p, epsilon 1e-3, feature axis 1).
static cml_status_t build_graph(cml_backend_t* backend, cml_executable_t** out_exe) {
  *out_exe = NULL;
  cml_builder_t* b = NULL;
  CML_RETURN_IF_ERROR(cml_builder_create(backend, "locale", &b));
  cml_function_t* f = cml_builder_main(b);
  cml_shape_t s23 = cml_shape_make(CML_DTYPE_F32, 2, (int64_t[]){2, 3});
  cml_shape_t s3 = cml_shape_make(CML_DTYPE_F32, 1, (int64_t[]){3});
  cml_value_t x = cml_parameter(f, "x", &s23);
  cml_value_t p = cml_parameter(f, "p", &s3);
  cml_value_t y = cml_op_mul(f, x, cml_constant_scalar_f64(f, CML_DTYPE_F32, 1.5));
  cml_value_t tenth = cml_constant_scalar_f64(f, CML_DTYPE_F64, 0.1);
  y = cml_op_add(f, y, cml_op_convert_dtype(f, tenth, CML_DTYPE_F32));
  cml_value_t bn = cml_op_batch_norm_inference(f, y, p, p, p, p, 1e-3f, 1);
  cml_status_t st = cml_function_return(f, &bn, 1);
  if (st == CML_OK) st = cml_builder_compile(b, out_exe);
  cml_builder_destroy(b);
  return st;
}

TEST(stablehlo_numbers_use_a_decimal_point) {
  ASSERT_TRUE(decimal_point_is_comma());
  fake_backend_t* fb = fake_backend_new();
  ASSERT_TRUE(fb != NULL);
  cml_executable_t* exe = NULL;
  cml_status_t st = build_graph(&fb->base, &exe);
  char* text = NULL;
  if (st == CML_OK) {
    cml_xla_emit_options_t opts;
    cml_xla_emit_options_init(&opts);
    st = cml_xla_emit_stablehlo(fb->module, &opts, &text);
  }
  cml_executable_release(exe);
  cml_backend_release(&fb->base);
  ASSERT_STATUS_OK(st);
  bool ok = strstr(text, "dense<1.5>") && strstr(text, "dense<0.10000000000000001>") &&
            strstr(text, "epsilon = 1.000000047e-03") && !strstr(text, "1,5") &&
            !strstr(text, "0,1") && !strstr(text, "e-03,");
  if (!ok) fprintf(stderr, "%s\n", text);
  free(text);
  ASSERT_TRUE(ok);
  ASSERT_TRUE(decimal_point_is_comma());  // the caller's locale is unchanged
}

typedef struct option_values_t {
  double fraction;
  int64_t threads;
} option_values_t;

static cml_status_t parse_options(option_values_t* v, const char* config) {
  v->fraction = -1;
  v->threads = -1;
  const cml__option_spec_t specs[] = {
      {.key = "fraction",
       .type = CML__OPT_FLOAT,
       .out = &v->fraction,
       .check_range = true,
       .min = 0.25,
       .max = 0.75,
       .help = "a fraction"},
      {.key = "threads", .type = CML__OPT_INT, .out = &v->threads, .help = "threads"},
  };
  return cml__config_parse("test", config, specs, 2, NULL, NULL);
}

TEST(config_floats_read_with_a_decimal_point) {
  option_values_t v;
  ASSERT_STATUS_OK(parse_options(&v, "fraction=0.5,threads=3"));
  ASSERT_TRUE(v.fraction == 0.5);
  ASSERT_EQ_INT(v.threads, 3);
  ASSERT_STATUS_OK(parse_options(&v, "fraction=2.5e-1"));
  ASSERT_TRUE(v.fraction == 0.25);
  // Out of range: the message gives the range as it must be written.
  cml_status_t st = parse_options(&v, "fraction=0.9");
  bool named = cml_status_code(st) == CML_STATUS_INVALID_ARGUMENT &&
               strstr(cml_status_message(st), "[0.25, 0.75]") != NULL;
  if (!named) fprintf(stderr, "%s\n", cml_status_message(st));
  cml_status_free(st);
  ASSERT_TRUE(named);
  ASSERT_TRUE(decimal_point_is_comma());
}

// Status messages write their numbers in the C locale too, so a message can be read (and its
// numbers pasted) the same in every locale: an op's builder error and cml_status_make.
TEST(messages_use_a_decimal_point) {
  fake_backend_t* fb = fake_backend_new();
  ASSERT_TRUE(fb != NULL);
  cml_builder_t* b = NULL;
  ASSERT_STATUS_OK(cml_builder_create(&fb->base, "messages", &b));
  cml_function_t* f = cml_builder_main(b);
  cml_shape_t s = cml_shape_make(CML_DTYPE_F32, 2, (int64_t[]){2, 3});
  cml_value_t x = cml_parameter(f, "x", &s);
  (void)cml_op_fused_layer_norm(f, x, (int64_t[]){1}, 1, -0.5, CML_VALUE_INVALID,
                                CML_VALUE_INVALID);
  cml_status_t st = cml_builder_status(b);
  bool builder_ok = strstr(cml_status_message(st), "-0.5") != NULL;
  if (!builder_ok) fprintf(stderr, "%s\n", cml_status_message(st));
  cml_status_free(st);
  cml_builder_destroy(b);
  cml_backend_release(&fb->base);
  st = cml_status_make(CML_STATUS_INTERNAL, "%.2f", 2.25);
  bool made_ok = strcmp(cml_status_message(st), "2.25") == 0;
  cml_status_free(st);
  ASSERT_TRUE(builder_ok);
  ASSERT_TRUE(made_ok);
  // A subnormal float option is a value (strtod reports ERANGE for it), 1e-400 is not.
  option_values_t v;
  const cml__option_spec_t spec = {.key = "fraction", .type = CML__OPT_FLOAT, .out = &v.fraction};
  ASSERT_STATUS_OK(cml__config_parse("test", "fraction=5e-324", &spec, 1, NULL, NULL));
  ASSERT_TRUE(v.fraction > 0 && v.fraction < 1e-300);
  ASSERT_STATUS_CODE(cml__config_parse("test", "fraction=1e-400", &spec, 1, NULL, NULL),
                     CML_STATUS_INVALID_ARGUMENT);
  ASSERT_TRUE(decimal_point_is_comma());
}

// A thread that set its own locale (uselocale) keeps it across cml calls.
static void* thread_locale_main(void* arg) {
  int* result = arg;
  locale_t c = newlocale(LC_ALL_MASK, "C", (locale_t)0);
  if (!c) return NULL;
  uselocale(c);
  option_values_t v;
  cml_status_t st = parse_options(&v, "fraction=0.75");
  *result = st == CML_OK && v.fraction == 0.75 && uselocale((locale_t)0) == c &&
            strcmp(localeconv()->decimal_point, ".") == 0;
  cml_status_free(st);
  uselocale(LC_GLOBAL_LOCALE);
  freelocale(c);
  return NULL;
}

TEST(thread_locale_is_restored) {
  int result = 0;
  pthread_t t;
  ASSERT_EQ_INT(pthread_create(&t, NULL, thread_locale_main, &result), 0);
  pthread_join(t, NULL);
  ASSERT_EQ_INT(result, 1);
  ASSERT_TRUE(decimal_point_is_comma());
}

// End to end on XLA's CPU plugin when it is installed: the config's memory_fraction is read and
// written back for the plugin, and the module's constants and epsilon reach XLA as written.
TEST(xla_cpu_runs_in_a_comma_locale) {
  cml_backend_t* be = NULL;
  cml_status_t st = cml_backend_new_with_config("xla:cpu,memory_fraction=0.5", &be);
  if (st != CML_OK) {
    bool missing = cml_status_code(st) == CML_STATUS_NOT_FOUND ||
                   cml_status_code(st) == CML_STATUS_UNAVAILABLE;
    if (!missing)
      fprintf(stderr, "%s\n", cml_status_message(st));
    else
      printf("(no XLA CPU plugin: %s)\n", cml_status_message(st));
    cml_status_free(st);
    ASSERT_TRUE(missing);
    return;
  }
  cml_executable_t* exe = NULL;
  st = build_graph(be, &exe);
  const float x[6] = {0, 1, 2, -1, -2, 4}, p[3] = {0.5f, 1, 2};
  cml_buffer_t* in[2] = {NULL, NULL};
  cml_buffer_t* out = NULL;
  if (st == CML_OK) {
    cml_shape_t s23 = cml_shape_make(CML_DTYPE_F32, 2, (int64_t[]){2, 3});
    cml_shape_t s3 = cml_shape_make(CML_DTYPE_F32, 1, (int64_t[]){3});
    st = cml_buffer_from_host(be, 0, &s23, x, sizeof x, &in[0]);
    if (st == CML_OK) st = cml_buffer_from_host(be, 0, &s3, p, sizeof p, &in[1]);
  }
  if (st == CML_OK) st = cml_executable_execute(exe, in, 2, NULL, 0, &out);
  float got[6] = {0};
  if (st == CML_OK) st = cml_buffer_copy_to_host(out, got, sizeof got);
  cml_buffer_release(in[0]);
  cml_buffer_release(in[1]);
  cml_buffer_release(out);
  cml_executable_release(exe);
  cml_backend_release(be);
  ASSERT_STATUS_OK(st);
  for (int i = 0; i < 6; ++i) {
    double y = x[i] * 1.5 + 0.1, m = p[i % 3];  // scale = offset = mean = variance = m
    double want = (y - m) / sqrt(m + 1e-3) * m + m;
    ASSERT_NEAR(got[i], want, 1e-5 * (1 + fabs(want)));
  }
  ASSERT_TRUE(decimal_point_is_comma());
}

int main(int argc, char** argv) {
  static const char* const names[] = {"de_DE.UTF-8", "de_DE.utf8", "de_DE", "fr_FR.UTF-8",
                                      "fr_FR.utf8"};
  const char* chosen = NULL;
  for (size_t i = 0; i < sizeof names / sizeof names[0] && !chosen; ++i) {
    if (setlocale(LC_ALL, names[i]) && decimal_point_is_comma()) chosen = names[i];
  }
  if (!chosen) {
    printf("SKIPPED: no locale with a comma decimal separator (de_DE.UTF-8 in LOCPATH)\n");
    return 77;
  }
  printf("locale %s\n", chosen);
  setenv("GOMLX_NO_AUTO_INSTALL", "1", 1);  // tests never download
  static const test_entry_t tests[] = {
      TEST_ENTRY(stablehlo_numbers_use_a_decimal_point),
      TEST_ENTRY(config_floats_read_with_a_decimal_point),
      TEST_ENTRY(messages_use_a_decimal_point),
      TEST_ENTRY(thread_locale_is_restored),
      TEST_ENTRY(xla_cpu_runs_in_a_comma_locale),
  };
  int failures = 0;
  for (size_t i = 0; i < sizeof tests / sizeof tests[0]; ++i) {
    if (argc > 1 && strcmp(argv[1], tests[i].name) != 0) continue;
    int failed = 0;
    tests[i].fn(&failed);
    printf("%s %s\n", failed ? "FAIL" : "ok  ", tests[i].name);
    failures += failed;
  }
  return failures ? 1 : 0;
}
