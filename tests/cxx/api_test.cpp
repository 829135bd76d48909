// SPDX-License-Identifier: Apache-2.0
// tests/cxx/api_test.cpp: a C++17 program using cml's public API, the backend-author API
// included: every public header compiles as C++, the object bases have the same layout for the
// C and the C++ compiler, a graph runs on the c backend, and a backend written in C++ (config
// options through cml_config_parse) registers, is created and released.
#include <cml/backend.h>
#include <cml/backend_impl.h>
#include <cml/backendtest.h>
#include <cml/base.h>
#include <cml/cml.h>
#include <cml/fused.h>
#include <cml/graph.h>
#include <cml/ir.h>
#include <cml/shape.h>
#include <cml/xla.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <new>
#include <string>
#include <type_traits>

#include "layout.h"

// The public macros expand to C++ casts here (built with -Wold-style-cast).
static_assert(CML_OK == 0, "CML_OK");
static_assert(CML_MAX_ELEMENTS == (int64_t{1} << 55), "CML_MAX_ELEMENTS");
static_assert(CML_DYNAMIC_DIM == -1, "CML_DYNAMIC_DIM");
static_assert(CML_DTYPE_BIT(CML_DTYPE_F32) != 0, "CML_DTYPE_BIT");
static_assert(CML_VALUE_INVALID == 0, "CML_VALUE_INVALID");
static_assert(std::is_standard_layout<cml_backend_t>::value, "cml_backend_t");
static_assert(std::is_standard_layout<cml_buffer_t>::value, "cml_buffer_t");
static_assert(std::is_standard_layout<cml_executable_t>::value, "cml_executable_t");
static_assert(std::is_trivially_copyable<cml_option_spec_t>::value, "cml_option_spec_t");

namespace {

int failures = 0;

void Check(bool ok, const std::string& what) {
  if (!ok) {
    std::fprintf(stderr, "FAILED: %s\n", what.c_str());
    ++failures;
  }
}

// Checks |st| has |code| and a message containing |needle|; frees it.
void CheckStatus(cml_status_t st, cml_status_code_t code, const char* needle,
                 const std::string& what) {
  std::string message = st ? cml_status_message(st) : "OK";
  Check(cml_status_code(st) == code && message.find(needle) != std::string::npos,
        what + ": got " + cml_status_code_name(cml_status_code(st)) + " \"" + message + "\"");
  cml_status_free(st);
}

void CheckLayout() {
  const size_t cxx[] = {CML_CXX_LAYOUT_VALUES};
  size_t c[sizeof cxx / sizeof cxx[0]] = {};
  size_t n = cml_cxx_layout_c(c, sizeof c / sizeof c[0]);
  Check(n == sizeof cxx / sizeof cxx[0], "layout: value count");
  for (size_t i = 0; i < n && i < sizeof c / sizeof c[0]; ++i) {
    Check(c[i] == cxx[i], "layout value #" + std::to_string(i) + ": C " + std::to_string(c[i]) +
                              ", C++ " + std::to_string(cxx[i]));
  }
}

// Sum of squares of {1, 2, 3, 4} on the c backend: 30.
void CheckGraph() {
  cml_backend_t* be = nullptr;
  cml_status_t st = cml_backend_new_with_config("c", &be);
  if (cml_status_code(st) == CML_STATUS_NOT_FOUND) {  // built without the c backend
    cml_status_free(st);
    return;
  }
  cml_builder_t* b = nullptr;
  if (st == CML_OK) st = cml_builder_create(be, "cxx", &b);
  cml_executable_t* exe = nullptr;
  const int64_t dims[] = {4};
  cml_shape_t shape = cml_shape_make(CML_DTYPE_F32, 1, dims);
  if (st == CML_OK) {
    cml_function_t* f = cml_builder_main(b);
    cml_value_t x = cml_parameter(f, "x", &shape);
    cml_value_t sum = cml_op_reduce_sum(f, cml_op_mul(f, x, x), nullptr, 0);
    st = cml_function_return(f, &sum, 1);
    if (st == CML_OK) st = cml_builder_compile(b, &exe);
  }
  const float host[4] = {1, 2, 3, 4};
  float result = 0;
  cml_buffer_t* in = nullptr;
  cml_buffer_t* out[1] = {nullptr};
  if (st == CML_OK) st = cml_buffer_from_host(be, 0, &shape, host, sizeof host, &in);
  if (st == CML_OK) st = cml_executable_execute(exe, &in, 1, nullptr, 0, out);
  if (st == CML_OK) st = cml_buffer_copy_to_host(out[0], &result, sizeof result);
  Check(st == CML_OK, std::string("graph: ") + (st ? cml_status_message(st) : ""));
  Check(st != CML_OK || result == 30.0f, "graph: sum of squares " + std::to_string(result));
  cml_status_free(st);
  cml_buffer_release(in);
  cml_buffer_release(out[0]);
  cml_executable_release(exe);
  cml_builder_destroy(b);
  cml_backend_release(be);
}

//===--- a backend written in C++ ---===//

struct CxxBackend {
  cml_backend_t base;  // at offset 0
  int64_t answer;
};

void CxxDestroy(cml_backend_t* backend) {
  CxxBackend* b = reinterpret_cast<CxxBackend*>(backend);
  cml_allocator_t allocator = backend->allocator;
  cml_backend_deinit_base(backend);
  b->~CxxBackend();
  cml_allocator_free(allocator, b, sizeof *b);
}

cml_status_t CxxCreate(const char* config, cml_allocator_t allocator, cml_backend_t** out) {
  *out = nullptr;
  int64_t answer = 0;
  cml_option_spec_t specs[1] = {};
  specs[0].key = "answer";
  specs[0].type = CML_OPTION_INT;
  specs[0].out = &answer;
  specs[0].check_range = true;
  specs[0].min = 0;
  specs[0].max = 100;
  specs[0].help = "the answer";
  CML_RETURN_IF_ERROR(cml_config_parse("cxx", config, specs, 1, nullptr, nullptr));
  static const cml_backend_vtable_t vtable = [] {
    cml_backend_vtable_t v = {};
    v.struct_size = sizeof v;
    v.destroy = CxxDestroy;
    return v;
  }();
  void* memory = cml_allocator_malloc(allocator, sizeof(CxxBackend), alignof(CxxBackend));
  if (!memory) return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
  CxxBackend* b = new (memory) CxxBackend();
  b->answer = answer;
  cml_status_t st = cml_backend_init_base(&b->base, &vtable, allocator, "cxx", "cxx", 1);
  if (st != CML_OK) {
    cml_allocator_free(allocator, memory, sizeof(CxxBackend));
    return st;
  }
  *out = &b->base;
  return CML_OK;
}

void CheckCxxBackend() {
  static const cml_backend_factory_t factory = [] {
    cml_backend_factory_t f = {};
    f.struct_size = sizeof f;
    f.api_major = CML_BACKEND_API_MAJOR;
    f.api_minor = CML_BACKEND_API_MINOR;
    f.name = "cxx";
    f.description = "a backend written in C++ (test)";
    f.create = CxxCreate;
    return f;
  }();
  cml_status_t st = cml_backend_register(&factory);
  Check(st == CML_OK, "register the C++ backend");
  cml_status_free(st);

  cml_backend_t* be = nullptr;
  st = cml_backend_new_with_config("cxx:answer=42", &be);
  Check(st == CML_OK && be != nullptr, "create cxx:answer=42");
  cml_status_free(st);
  if (be) {
    Check(reinterpret_cast<CxxBackend*>(be)->answer == 42, "cxx: answer=42 parsed");
    Check(std::strcmp(cml_backend_name(be), "cxx") == 0, "cxx: name");
    Check(cml_backend_retain(be) == be, "cxx: retain");
    cml_backend_release(be);
    Check(cml_backend_device_count(be) == 1, "cxx: alive after retain + release");
    cml_backend_release(be);
  }
  be = nullptr;
  CheckStatus(cml_backend_new_with_config("cxx:answer=1,answer=2", &be),
              CML_STATUS_INVALID_ARGUMENT, "option \"answer\" is given more than once",
              "repeated option");
  Check(be == nullptr, "repeated option: no backend");
  CheckStatus(cml_backend_new_with_config("cxx:answer=101", &be), CML_STATUS_INVALID_ARGUMENT,
              "invalid value \"101\" for option \"answer\"", "out-of-range option");
  CheckStatus(cml_backend_new_with_config("cxx:question=1", &be), CML_STATUS_INVALID_ARGUMENT,
              "unknown option \"question\"", "unknown option");
}

// The op list read as ops.def's header says: KIND and GROUP pasted onto the public enums, the
// TRAITS names defined by the includer; the same values as the run-time accessors.
struct OpRow {
  const char* name;
  cml_op_kind_t kind;
  cml_op_group_t group;
  uint32_t traits;
};
#define PURE CML_OP_TRAIT_PURE
#define FOLD CML_OP_TRAIT_FOLDABLE
#define MULTI CML_OP_TRAIT_MULTI_OUTPUT
#define CALLEE CML_OP_TRAIT_ONE_CALLEE
#define CALLEE2 CML_OP_TRAIT_TWO_CALLEES
#define ALIAS CML_OP_TRAIT_MAY_ALIAS_INPUT
const OpRow kOpRows[] = {
#define CML_OP(ENUM, NAME, lower, KIND, GROUP, TRAITS, DTYPES, OUT) \
  {NAME, CML_OPK_##KIND, CML_OPG_##GROUP, static_cast<uint32_t>(TRAITS)},
#include <cml/ops.def>
};
#undef PURE
#undef FOLD
#undef MULTI
#undef CALLEE
#undef CALLEE2
#undef ALIAS

void CheckOpsDef() {
  Check(sizeof kOpRows / sizeof kOpRows[0] == CML_OP_COUNT, "ops.def has CML_OP_COUNT rows");
  for (int i = 0; i < CML_OP_COUNT; ++i) {
    const cml_op_t op = static_cast<cml_op_t>(i);
    const std::string what = std::string("ops.def row ") + kOpRows[i].name;
    Check(std::strcmp(kOpRows[i].name, cml_op_name(op)) == 0, what + ": name");
    Check(kOpRows[i].kind == cml_op_kind(op), what + ": kind");
    Check(kOpRows[i].group == cml_op_group(op), what + ": group");
    Check(kOpRows[i].traits == cml_op_traits(op), what + ": traits");
  }
}

}  // namespace

int main() {
  CheckLayout();
  CheckGraph();
  CheckCxxBackend();
  CheckOpsDef();
  if (failures) {
    std::fprintf(stderr, "cxx_api_test: %d failure(s)\n", failures);
    return 1;
  }
  std::printf("cxx_api_test: ok\n");
  return 0;
}
