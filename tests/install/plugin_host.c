// SPDX-License-Identifier: Apache-2.0
// tests/install/plugin_host.c: a program built against the INSTALLED headers and libraries that
// loads two plug-ins built out of tree the same way (scripts/test_install.sh):
//
//   plugin_host <null template plug-in> <name it registers> <ref example plug-in>
//
// The null template must load, create, and answer UNIMPLEMENTED (or a clear refusal by the
// core) without crashing; the "ref" example must pass a few compliance cases. Exits 0 when all
// checks pass.
#include <cml/backend_impl.h>
#include <cml/backendtest.h>
#include <cml/cml.h>
#include <stdio.h>
#include <string.h>

static int failures;

static void check(int ok, const char* what, cml_status_t st) {
  if (!ok) {
    fprintf(stderr, "plugin_host: FAILED: %s (%s: %s)\n", what,
            cml_status_code_name(cml_status_code(st)), st ? cml_status_message(st) : "OK");
    ++failures;
  }
}

// |st| must have |code| and a message containing |needle|; it is freed.
static void expect(cml_status_t st, cml_status_code_t code, const char* needle, const char* what) {
  check(cml_status_code(st) == code && strstr(st ? cml_status_message(st) : "", needle) != NULL,
        what, st);
  cml_status_free(st);
}

static void check_null_template(const char* path, const char* name) {
  cml_status_t st = cml_plugin_load(path);
  check(st == CML_OK, "load the null template plug-in", st);
  cml_status_free(st);
  cml_backend_t* be = NULL;
  st = cml_backend_new_with_config(name, &be);
  check(st == CML_OK && be != NULL, "create the null template backend", st);
  cml_status_free(st);
  if (!be) return;
  check(strcmp(cml_backend_name(be), name) == 0, "backend name", CML_OK);
  check(cml_backend_device_count(be) == 1, "one device", CML_OK);
  // No dtype or op is advertised: the core refuses before the backend is reached, or the
  // backend answers UNIMPLEMENTED; never OK.
  const int64_t dims[1] = {2};
  cml_shape_t shape = cml_shape_make(CML_DTYPE_F32, 1, dims);
  const float host[2] = {1, 2};
  cml_buffer_t* buf = NULL;
  st = cml_buffer_from_host(be, 0, &shape, host, sizeof host, &buf);
  check(st != CML_OK && buf == NULL, "buffer_from_host is refused", st);
  check(cml_status_code(st) == CML_STATUS_UNIMPLEMENTED, "buffer_from_host: UNIMPLEMENTED", st);
  cml_status_free(st);
  cml_builder_t* b = NULL;
  st = cml_builder_create(be, "t", &b);
  if (st == CML_OK) {
    cml_function_t* f = cml_builder_main(b);
    cml_value_t x = cml_parameter(f, "x", &shape);
    cml_value_t y = cml_op_add(f, x, x);
    st = cml_function_return(f, &y, 1);
    cml_executable_t* exe = NULL;
    if (st == CML_OK) st = cml_builder_compile(b, &exe);
    check(st != CML_OK && exe == NULL, "Add on the null template is refused", st);
    check(cml_status_code(st) == CML_STATUS_UNIMPLEMENTED, "Add: UNIMPLEMENTED", st);
    cml_executable_release(exe);
  }
  cml_status_free(st);
  cml_builder_destroy(b);
  cml_backend_release(be);
  // Options: none, so any is an error naming the backend; a repeated one too.
  char config[128];
  snprintf(config, sizeof config, "%s:threads=1", name);
  expect(cml_backend_new_with_config(config, &be), CML_STATUS_INVALID_ARGUMENT,
         "unknown option \"threads\"", "unknown option");
}

static void check_ref_example(const char* path) {
  cml_status_t st = cml_plugin_load(path);
  check(st == CML_OK, "load the ref plug-in", st);
  cml_status_free(st);
  cml_backend_t* be = NULL;
  st = cml_backend_new_with_config("ref", &be);
  check(st == CML_OK && be != NULL, "create the ref backend", st);
  cml_status_free(st);
  if (!be) return;
  cml_backendtest_options_t opts;
  cml_backendtest_options_init(&opts);
  opts.op_regex = "^(Add|Mul|ReduceSum|DotGeneral|Transpose)$";
  cml_backendtest_summary_t sum = {0, 0, 0, 0};
  st = cml_backendtest_run_all(be, &opts, &sum);
  check(st == CML_OK && sum.failed == 0 && sum.passed >= 3, "ref: compliance cases", st);
  printf("plugin_host: ref: %zu passed, %zu failed, %zu skipped\n", sum.passed, sum.failed,
         sum.skipped);
  cml_status_free(st);
  cml_backend_release(be);
}

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: plugin_host <null plug-in> <its name> <ref plug-in>\n");
    return 2;
  }
  check_null_template(argv[1], argv[2]);
  check_ref_example(argv[3]);
  if (failures) return 1;
  printf("plugin_host: null template and ref plug-ins ok\n");
  return 0;
}
