// SPDX-License-Identifier: Apache-2.0
// tests/unit/builder_test.c: the op table, builders, functions and closures, sticky errors,
// the capability gate, compile and the module contents.
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "builder_fake_backend.h"
#include "cml/graph.h"
#include "core/builder_internal.h"
#include "test.h"

#define SETUP()                                                \
  fake_backend_t* fb = fake_backend_new();                     \
  ASSERT_TRUE(fb != NULL);                                     \
  cml_builder_t* b = NULL;                                     \
  ASSERT_STATUS_OK(cml_builder_create(&fb->base, "unit", &b)); \
  cml_function_t* f = cml_builder_main(b);                     \
  ASSERT_TRUE(f != NULL)

#define RESETUP()                                              \
  fb = fake_backend_new();                                     \
  ASSERT_TRUE(fb != NULL);                                     \
  b = NULL;                                                    \
  ASSERT_STATUS_OK(cml_builder_create(&fb->base, "unit", &b)); \
  f = cml_builder_main(b)

#define TEARDOWN()        \
  cml_builder_destroy(b); \
  cml_backend_release(&fb->base)

#define SHAPE(dt, ...)                                                                \
  cml_shape_make((dt), (int32_t)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), \
                 (int64_t[]){__VA_ARGS__})

// True when the builder's error has |code| and its message contains every needle (prints the
// message otherwise).
static bool error_matches(const cml_builder_t* b, cml_status_code_t code,
                          const char* const* needles) {
  cml_status_t st = cml_builder_status(b);
  bool ok = cml_status_code(st) == code;
  for (const char* const* n = needles; ok && *n; ++n)
    ok = strstr(cml_status_message(st), *n) != NULL;
  if (!ok) {
    fprintf(stderr, "builder error: want %s, got %s: \"%s\"\n", cml_status_code_name(code),
            cml_status_code_name(cml_status_code(st)), cml_status_message(st));
  }
  cml_status_free(st);
  return ok;
}
#define ASSERT_BUILDER_ERROR(b, code, ...) \
  ASSERT_TRUE(error_matches((b), (code), (const char* const[]){__VA_ARGS__, NULL}))

static bool shape_is(const cml_builder_t* b, cml_value_t v, cml_shape_t want) {
  cml_shape_t got;
  if (!cml_builder_value_shape(b, v, &got)) {
    fprintf(stderr, "value %u has no shape\n", (unsigned)v);
    return false;
  }
  if (!cml_shape_equal(&got, &want)) {
    char g[128], w[128];
    fprintf(stderr, "shape %s, want %s\n", cml_shape_format(&got, g, sizeof g),
            cml_shape_format(&want, w, sizeof w));
    return false;
  }
  return true;
}
#define ASSERT_SHAPE(v, ...) ASSERT_TRUE(shape_is(b, (v), SHAPE(__VA_ARGS__)))

// Compiles |b| with main returning |outs|; returns the module the fake backend received.
static const cml_module_t* compile_main(cml_builder_t* b, const cml_value_t* outs, size_t n,
                                        fake_backend_t* fb) {
  cml_status_t st = cml_function_return(cml_builder_main(b), outs, n);
  if (st == CML_OK) {
    cml_executable_t* exe = NULL;
    st = cml_builder_compile(b, &exe);
    cml_executable_release(exe);
  }
  if (st != CML_OK) {
    fprintf(stderr, "compile: %s\n", cml_status_message(st));
    cml_status_free(st);
    return NULL;
  }
  return fb->module;
}

//===--- op table ---===//

TEST(op_table) {
  ASSERT_STREQ(cml_op_name(CML_OP_ADD), "Add");
  ASSERT_STREQ(cml_op_name(CML_OP_DOT_GENERAL), "DotGeneral");
  ASSERT_STREQ(cml_op_name(CML_OP_FUSED_SDPA), "FusedScaledDotProductAttention");
  ASSERT_STREQ(cml_op_name((cml_op_t)-1), "unknown");
  ASSERT_STREQ(cml_op_name(CML_OP_COUNT), "unknown");
  ASSERT_EQ_INT(cml_op_from_name("RNGBitGenerator"), CML_OP_RNG_BIT_GENERATOR);
  ASSERT_EQ_INT(cml_op_from_name("nope"), CML_OP_INVALID);
  ASSERT_EQ_INT(cml_op_from_name(NULL), CML_OP_INVALID);
  for (int op = 1; op < CML_OP_COUNT; ++op) {
    ASSERT_EQ_INT(cml_op_from_name(cml_op_name((cml_op_t)op)), op);
  }
  // Seed order: values matter (OpType enum).
  ASSERT_EQ_INT(CML_OP_PARAMETER, 1);
  ASSERT_EQ_INT(CML_OP_ABS, 10);
  ASSERT_EQ_INT(cml_op_kind(CML_OP_ADD), CML_OPK_BINARY);
  ASSERT_EQ_INT(cml_op_kind(CML_OP_SIN), CML_OPK_UNARY);
  ASSERT_EQ_INT(cml_op_kind(CML_OP_REDUCE_SUM), CML_OPK_REDUCE);
  ASSERT_EQ_INT(cml_op_kind(CML_OP_WHILE), CML_OPK_CONTROL);
  ASSERT_EQ_U64(cml_op_dtypes(CML_OP_LOGICAL_AND), CML_DTYPE_BIT(CML_DTYPE_BOOL));
  ASSERT_TRUE(cml_op_is_standard(CML_OP_PARAMETER));
  ASSERT_TRUE(cml_op_is_standard(CML_OP_CONSTANT));
  ASSERT_TRUE(cml_op_is_standard(CML_OP_ADD));
  ASSERT_TRUE(cml_op_is_standard(CML_OP_SORT));
  ASSERT_TRUE(cml_op_is_standard(CML_OP_SELECT_AND_SCATTER_SUM));
  ASSERT_FALSE(cml_op_is_standard(CML_OP_INVALID));
  ASSERT_FALSE(cml_op_is_standard(CML_OP_CAPTURED_VALUE));
  ASSERT_FALSE(cml_op_is_standard(CML_OP_ALL_REDUCE));
  ASSERT_FALSE(cml_op_is_standard(CML_OP_FUSED_SOFTMAX));
  ASSERT_FALSE(cml_op_is_standard(CML_OP_DYNAMIC_RESHAPE));
  ASSERT_FALSE(cml_op_is_standard(CML_OP_BLOCK_FOR_DOT_GENERAL));
  ASSERT_STREQ(cml_reduce_type_name(CML_REDUCE_SUM), "Sum");
  ASSERT_STREQ(cml_reduce_type_name(CML_REDUCE_MIN), "Min");
  ASSERT_STREQ(cml_reduce_type_name(CML_REDUCE_TYPE_COUNT), "unknown");
}

//===--- building and compiling ---===//

TEST(build_and_compile_mlp) {
  SETUP();
  cml_shape_t xs = SHAPE(CML_DTYPE_F32, 4, 3), ws = SHAPE(CML_DTYPE_F32, 3, 2);
  cml_value_t x = cml_parameter(f, "x", &xs);
  cml_value_t w = cml_parameter(f, "w", &ws);
  cml_value_t y = cml_op_dot(f, x, w);
  ASSERT_SHAPE(y, CML_DTYPE_F32, 4, 2);
  cml_value_t zero = cml_constant_scalar_f64(f, CML_DTYPE_F32, 0.0);
  ASSERT_TRUE(shape_is(b, zero, cml_shape_scalar(CML_DTYPE_F32)));
  cml_value_t r = cml_op_max(f, y, zero);
  ASSERT_SHAPE(r, CML_DTYPE_F32, 4, 2);
  const cml_module_t* m = compile_main(b, &r, 1, fb);
  ASSERT_TRUE(m != NULL);
  ASSERT_EQ_INT(m->function_count, 1);
  ASSERT_EQ_INT(m->num_devices, 1);
  ASSERT_STREQ(m->name, "unit");
  const cml_ir_function_t* mf = &m->functions[0];
  ASSERT_STREQ(mf->name, "main");
  ASSERT_EQ_INT(mf->parent, -1);
  ASSERT_EQ_INT(mf->param_count, 2);
  ASSERT_EQ_INT(mf->node_count, 5);
  static const cml_op_t kOps[] = {CML_OP_PARAMETER, CML_OP_PARAMETER, CML_OP_DOT, CML_OP_CONSTANT,
                                  CML_OP_MAX};
  for (uint32_t i = 0; i < 5; ++i) ASSERT_EQ_INT(m->nodes[mf->nodes[i]].op, kOps[i]);
  const cml_ir_node_t* px = &m->nodes[mf->nodes[0]];
  ASSERT_STREQ(px->name, "x");
  ASSERT_EQ_INT(px->index, 0);
  ASSERT_EQ_INT(m->nodes[mf->nodes[1]].index, 1);
  ASSERT_EQ_INT(mf->params[0], px->first_output);
  const cml_ir_node_t* dot = &m->nodes[mf->nodes[2]];
  ASSERT_EQ_INT(dot->input_count, 2);
  ASSERT_EQ_INT(dot->inputs[0], mf->params[0]);
  ASSERT_EQ_INT(dot->inputs[1], mf->params[1]);
  ASSERT_EQ_INT(dot->attrs->u.dot.lhs_contracting_count, 1);
  ASSERT_EQ_INT(dot->attrs->u.dot.lhs_contracting_axes[0], 1);
  ASSERT_EQ_INT(dot->attrs->u.dot.rhs_contracting_axes[0], 0);
  ASSERT_EQ_INT(dot->attrs->u.dot.accumulator_dtype, CML_DTYPE_F32);
  ASSERT_EQ_INT(dot->attrs->u.dot.output_dtype, CML_DTYPE_F32);
  const cml_ir_node_t* c = &m->nodes[mf->nodes[3]];
  ASSERT_EQ_INT(c->data_size, 4);
  ASSERT_EQ_INT((uintptr_t)c->data % 64, 0);
  ASSERT_EQ_DBL(*(const float*)c->data, 0.0);
  ASSERT_EQ_INT(mf->output_count, 1);
  ASSERT_EQ_INT(mf->outputs[0], m->nodes[mf->nodes[4]].first_output);
  ASSERT_TRUE(m->nodes[mf->nodes[4]].attrs != NULL);
  // Values know their node and shape.
  ASSERT_EQ_INT(m->values[dot->first_output].node, mf->nodes[2]);
  ASSERT_EQ_INT(m->values[dot->first_output].shape.dims[1], 2);
  // After compile: ops fail with FAILED_PRECONDITION.
  ASSERT_EQ_INT(cml_op_neg(f, x), CML_VALUE_INVALID);
  ASSERT_BUILDER_ERROR(b, CML_STATUS_FAILED_PRECONDITION, "Neg", "compiled");
  cml_executable_t* exe = NULL;
  ASSERT_STATUS_CODE(cml_builder_compile(b, &exe), CML_STATUS_FAILED_PRECONDITION);
  ASSERT_TRUE(exe == NULL);
  TEARDOWN();
}

TEST(executable_io_from_module) {
  SETUP();
  cml_shape_t s = SHAPE(CML_DTYPE_I32, 5);
  cml_value_t a = cml_parameter(f, NULL, &s);
  cml_value_t c = cml_parameter(f, "c", &s);
  cml_value_t sum = cml_op_add(f, a, c);
  ASSERT_STATUS_OK(cml_function_return(f, &sum, 1));
  cml_executable_t* exe = NULL;
  ASSERT_STATUS_OK(cml_builder_compile(b, &exe));
  cml_builder_destroy(b);  // the module outlives the builder
  ASSERT_EQ_INT(cml_executable_input_count(exe), 2);
  ASSERT_STREQ(cml_executable_input_name(exe, 0), "p0");
  ASSERT_STREQ(cml_executable_input_name(exe, 1), "c");
  ASSERT_EQ_INT(cml_executable_output_count(exe), 1);
  ASSERT_EQ_INT(cml_executable_output_shape(exe, 0)->dims[0], 5);
  ASSERT_EQ_INT(fb->module->values[fb->module->functions[0].outputs[0]].shape.dtype, CML_DTYPE_I32);
  cml_executable_release(exe);
  cml_backend_release(&fb->base);
}

TEST(parameters_and_constants) {
  SETUP();
  cml_shape_t s = SHAPE(CML_DTYPE_F32, 2);
  ASSERT_NE_INT(cml_parameter(f, "x", &s), CML_VALUE_INVALID);
  cml_shape_t packed = SHAPE(CML_DTYPE_I4, 3);
  cml_value_t p = cml_parameter(f, "q", &packed);
  ASSERT_SHAPE(p, CML_DTYPE_I4, 3);
  // Packed dtypes are storage types: Reshape and ConvertDType accept them, Add does not.
  cml_value_t r = cml_op_reshape(f, p, (int64_t[]){3, 1}, 2);
  ASSERT_SHAPE(r, CML_DTYPE_I4, 3, 1);
  cml_value_t conv = cml_op_convert_dtype(f, p, CML_DTYPE_F32);
  ASSERT_SHAPE(conv, CML_DTYPE_F32, 3);
  ASSERT_EQ_INT(cml_op_add(f, p, p), CML_VALUE_INVALID);
  ASSERT_BUILDER_ERROR(b, CML_STATUS_INVALID_ARGUMENT, "Add", "Int4", "(Int4)[3]");
  TEARDOWN();
}

TEST(parameter_duplicate_name) {
  SETUP();
  cml_shape_t s = SHAPE(CML_DTYPE_F32, 2);
  ASSERT_NE_INT(cml_parameter(f, "x", &s), CML_VALUE_INVALID);
  ASSERT_EQ_INT(cml_parameter(f, "x", &s), CML_VALUE_INVALID);
  ASSERT_BUILDER_ERROR(b, CML_STATUS_INVALID_ARGUMENT, "Parameter", "\"x\"");
  TEARDOWN();
}

// A made-up name never clashes with one the caller gave: "p1" taken, parameter 1 is "p1_1".
TEST(parameter_made_up_names_are_unique) {
  SETUP();
  cml_shape_t s = SHAPE(CML_DTYPE_F32, 2);
  cml_value_t v[4];
  v[0] = cml_parameter(f, "p1", &s);
  v[1] = cml_parameter(f, NULL, &s);
  v[2] = cml_parameter(f, "", &s);
  v[3] = cml_parameter(f, "p2_1", &s);
  for (int i = 0; i < 4; ++i) ASSERT_NE_INT(v[i], CML_VALUE_INVALID);
  cml_value_t sum = cml_op_add(f, cml_op_add(f, v[0], v[1]), cml_op_add(f, v[2], v[3]));
  ASSERT_STATUS_OK(cml_function_return(f, &sum, 1));
  cml_executable_t* exe = NULL;
  ASSERT_STATUS_OK(cml_builder_compile(b, &exe));
  ASSERT_STREQ(cml_executable_input_name(exe, 0), "p1");
  ASSERT_STREQ(cml_executable_input_name(exe, 1), "p1_1");
  ASSERT_STREQ(cml_executable_input_name(exe, 2), "p2");
  ASSERT_STREQ(cml_executable_input_name(exe, 3), "p2_1");
  cml_executable_release(exe);
  TEARDOWN();
}

TEST(constant_scalars_convert_like_convert_dtype) {
  SETUP();
  cml_value_t v[8];
  v[0] = cml_constant_scalar_f64(f, CML_DTYPE_I8, 300.0);  // saturates to 127
  v[1] = cml_constant_scalar_f64(f, CML_DTYPE_I32, -3.7);  // truncates to -3
  v[2] = cml_constant_scalar_f64(f, CML_DTYPE_U8, -5.0);   // saturates to 0
  v[3] = cml_constant_scalar_f64(f, CML_DTYPE_I64, NAN);   // NaN -> 0
  v[4] = cml_constant_scalar_i64(f, CML_DTYPE_U8, 258);    // wraps to 2
  v[5] = cml_constant_scalar_i64(f, CML_DTYPE_BOOL, -7);   // true
  v[6] = cml_constant_scalar_f64(f, CML_DTYPE_F16, 1.5);   // 0x3E00
  v[7] = cml_constant_scalar_i64(f, CML_DTYPE_C64, 3);     // 3 + 0i
  const cml_module_t* m = compile_main(b, v, 8, fb);
  ASSERT_TRUE(m != NULL);
  const cml_ir_function_t* mf = &m->functions[0];
  const void* d[8];
  for (int i = 0; i < 8; ++i) d[i] = m->nodes[m->values[mf->outputs[i]].node].data;
  ASSERT_EQ_INT(*(const int8_t*)d[0], 127);
  ASSERT_EQ_INT(*(const int32_t*)d[1], -3);
  ASSERT_EQ_INT(*(const uint8_t*)d[2], 0);
  ASSERT_EQ_INT(*(const int64_t*)d[3], 0);
  ASSERT_EQ_INT(*(const uint8_t*)d[4], 2);
  ASSERT_EQ_INT(*(const uint8_t*)d[5], 1);
  ASSERT_EQ_INT(*(const uint16_t*)d[6], 0x3E00);
  ASSERT_EQ_DBL(((const float*)d[7])[0], 3.0);
  ASSERT_EQ_DBL(((const float*)d[7])[1], 0.0);
  TEARDOWN();
}

// Int64 to BFloat16 rounds once (the value as ConvertDType would give it): through float first,
// 2^24 + 2^16 + 1 lost the 1 that breaks the tie.
TEST(constant_scalar_i64_to_bf16_rounds_once) {
  SETUP();
  static const int64_t in[6] = {16842753, 1571756293616507725, -16842753,
                                16842752, INT64_MIN,           INT64_MAX};
  // Rounded to 8 significant bits, ties to even: 16908288, 1576259869579673600, -16908288,
  // 16777216 (the tie goes down, to the even 2^24), -2^63, 2^63.
  static const uint16_t want[6] = {0x4b81, 0x5daf, 0xcb81, 0x4b80, 0xdf00, 0x5f00};
  cml_value_t v[6];
  for (int i = 0; i < 6; ++i) v[i] = cml_constant_scalar_i64(f, CML_DTYPE_BF16, in[i]);
  const cml_module_t* m = compile_main(b, v, 6, fb);
  ASSERT_TRUE(m != NULL);
  for (int i = 0; i < 6; ++i) {
    const uint16_t got =
        *(const uint16_t*)m->nodes[m->values[m->functions[0].outputs[i]].node].data;
    ASSERT_EQ_INT(got, want[i]);
  }
  TEARDOWN();
}

TEST(constant_copies_data) {
  SETUP();
  float data[6] = {1, 2, 3, 4, 5, 6};
  cml_shape_t s = SHAPE(CML_DTYPE_F32, 2, 3);
  cml_value_t c = cml_constant(f, &s, data);
  data[0] = 100;  // the graph holds a copy
  const cml_module_t* m = compile_main(b, &c, 1, fb);
  ASSERT_TRUE(m != NULL);
  const cml_ir_node_t* n = &m->nodes[m->values[m->functions[0].outputs[0]].node];
  ASSERT_EQ_INT(n->op, CML_OP_CONSTANT);
  ASSERT_EQ_INT(n->data_size, 24);
  ASSERT_EQ_INT((uintptr_t)n->data % 64, 0);
  ASSERT_EQ_DBL(((const float*)n->data)[0], 1.0);
  ASSERT_EQ_DBL(((const float*)n->data)[5], 6.0);
  TEARDOWN();
}

//===--- sticky errors ---===//

// Debug messages, kept for first_error_sticks.
typedef struct debug_log_t {
  int count;
  char last[512];
} debug_log_t;
static void debug_log_sink(void* user, cml_log_level_t level, const char* message) {
  debug_log_t* log = user;
  if (level != CML_LOG_DEBUG || !strstr(message, "first error")) return;
  ++log->count;
  snprintf(log->last, sizeof log->last, "%s", message);
}

TEST(first_error_sticks) {
  SETUP();
  cml_shape_t s23 = SHAPE(CML_DTYPE_F32, 2, 3), s32 = SHAPE(CML_DTYPE_F32, 3, 2);
  cml_value_t a = cml_parameter(f, "a", &s23);
  cml_value_t c = cml_parameter(f, "c", &s32);
  // The first error is logged at debug level from inside the failing call, once.
  debug_log_t log = {0};
  cml_set_log_handler(debug_log_sink, &log);
  ASSERT_EQ_INT(cml_op_add(f, a, c), CML_VALUE_INVALID);
  ASSERT_EQ_INT(log.count, 1);
  ASSERT_CONTAINS(log.last, "builder \"unit\"");
  ASSERT_CONTAINS(log.last, "after 2 ops");
  ASSERT_CONTAINS(log.last, "Add: incompatible shapes");
  ASSERT_EQ_INT(cml_op_neg(f, cml_op_mul(f, a, c)), CML_VALUE_INVALID);
  cml_set_log_handler(NULL, NULL);
  ASSERT_EQ_INT(log.count, 1);
  ASSERT_BUILDER_ERROR(b, CML_STATUS_INVALID_ARGUMENT, "Add", "(Float32)[2, 3]", "(Float32)[3, 2]");
  // Later errors do not overwrite the first; later ops return invalid silently.
  ASSERT_EQ_INT(cml_op_neg(f, CML_VALUE_INVALID), CML_VALUE_INVALID);
  ASSERT_EQ_INT(cml_op_transpose(f, a, (int64_t[]){0, 0}, 2), CML_VALUE_INVALID);
  ASSERT_BUILDER_ERROR(b, CML_STATUS_INVALID_ARGUMENT, "Add", "(Float32)[2, 3]");
  ASSERT_STATUS_CODE(cml_function_return(f, &a, 1), CML_STATUS_INVALID_ARGUMENT);
  cml_executable_t* exe = NULL;
  cml_status_t st = cml_builder_compile(b, &exe);
  ASSERT_CONTAINS(cml_status_message(st), "Add: incompatible shapes");
  cml_status_free(st);
  TEARDOWN();
}

TEST(dtype_mismatch_message) {
  SETUP();
  cml_shape_t f32 = SHAPE(CML_DTYPE_F32, 2), i32 = SHAPE(CML_DTYPE_I32, 2);
  cml_value_t a = cml_parameter(f, "a", &f32);
  cml_value_t c = cml_parameter(f, "c", &i32);
  ASSERT_EQ_INT(cml_op_mul(f, a, c), CML_VALUE_INVALID);
  ASSERT_BUILDER_ERROR(b, CML_STATUS_INVALID_ARGUMENT, "Mul", "Float32", "Int32", "(Int32)[2]");
  TEARDOWN();
}

TEST(wrong_kind_and_invalid_operand) {
  SETUP();
  cml_shape_t s = SHAPE(CML_DTYPE_F32, 2);
  cml_value_t a = cml_parameter(f, "a", &s);
  ASSERT_EQ_INT(cml_op_unary(f, CML_OP_ADD, a), CML_VALUE_INVALID);
  ASSERT_BUILDER_ERROR(b, CML_STATUS_INVALID_ARGUMENT, "Add");
  TEARDOWN();
  {
    RESETUP();
    ASSERT_EQ_INT(cml_op_exp(f, CML_VALUE_INVALID), CML_VALUE_INVALID);
    ASSERT_BUILDER_ERROR(b, CML_STATUS_INVALID_ARGUMENT, "Exp", "operand #0");
    TEARDOWN();
  }
  {
    RESETUP();
    cml_shape_t si = SHAPE(CML_DTYPE_I32, 2);
    cml_value_t i = cml_parameter(f, "i", &si);
    ASSERT_EQ_INT(cml_op_sin(f, i), CML_VALUE_INVALID);
    ASSERT_BUILDER_ERROR(b, CML_STATUS_INVALID_ARGUMENT, "Sin", "Int32");
    TEARDOWN();
  }
}

TEST(value_from_another_builder) {
  SETUP();
  cml_builder_t* b2 = NULL;
  ASSERT_STATUS_OK(cml_builder_create(&fb->base, "other", &b2));
  cml_shape_t s = SHAPE(CML_DTYPE_F32, 2);
  cml_value_t a = cml_parameter(f, "a", &s);
  cml_value_t foreign = cml_parameter(cml_builder_main(b2), "z", &s);
  ASSERT_NE_INT(foreign, CML_VALUE_INVALID);
  ASSERT_EQ_INT(cml_op_add(f, a, foreign), CML_VALUE_INVALID);
  ASSERT_BUILDER_ERROR(b, CML_STATUS_INVALID_ARGUMENT, "Add", "another builder");
  cml_shape_t tmp;
  ASSERT_FALSE(cml_builder_value_shape(b, foreign, &tmp));
  ASSERT_EQ_INT(tmp.dtype, CML_DTYPE_INVALID);
  cml_builder_destroy(b2);
  TEARDOWN();
}

TEST(return_rules) {
  SETUP();
  cml_shape_t s = SHAPE(CML_DTYPE_F32, 2);
  cml_value_t a = cml_parameter(f, "a", &s);
  ASSERT_STATUS_CODE(cml_function_return(f, &a, 0), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_BUILDER_ERROR(b, CML_STATUS_INVALID_ARGUMENT, "Return", "at least one output");
  TEARDOWN();
  {
    // A second Return is refused with its own status but leaves the complete module intact.
    RESETUP();
    cml_value_t x = cml_parameter(f, "a", &s);
    ASSERT_STATUS_OK(cml_function_return(f, &x, 1));
    cml_status_t st = cml_function_return(f, &x, 1);
    ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_FAILED_PRECONDITION);
    ASSERT_CONTAINS(cml_status_message(st), "function \"main\" has already returned");
    cml_status_free(st);
    ASSERT_STATUS_OK(cml_builder_status(b));
    ASSERT_EQ_INT(cml_function_output_count(f), 1);
    cml_executable_t* exe = NULL;
    ASSERT_STATUS_OK(cml_builder_compile(b, &exe));
    ASSERT_TRUE(exe != NULL);
    cml_executable_release(exe);
    // After compile: Return and compile are refused, the builder still reports no error.
    ASSERT_STATUS_CODE(cml_function_return(f, &x, 1), CML_STATUS_FAILED_PRECONDITION);
    ASSERT_STATUS_CODE(cml_builder_compile(b, &exe), CML_STATUS_FAILED_PRECONDITION);
    ASSERT_STATUS_OK(cml_builder_status(b));
    TEARDOWN();
  }
  {
    RESETUP();
    cml_value_t x = cml_parameter(f, "a", &s);
    ASSERT_STATUS_OK(cml_function_return(f, &x, 1));
    ASSERT_EQ_INT(cml_op_neg(f, x), CML_VALUE_INVALID);  // ops after Return
    ASSERT_BUILDER_ERROR(b, CML_STATUS_FAILED_PRECONDITION, "Neg", "already returned");
    TEARDOWN();
  }
}

TEST(compile_requires_return) {
  SETUP();
  cml_shape_t s = SHAPE(CML_DTYPE_F32, 2);
  cml_value_t a = cml_parameter(f, "a", &s);
  (void)a;
  cml_executable_t* exe = NULL;
  cml_status_t st = cml_builder_compile(b, &exe);
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_FAILED_PRECONDITION);
  ASSERT_CONTAINS(cml_status_message(st), "main");
  cml_status_free(st);
  ASSERT_TRUE(exe == NULL);
  ASSERT_EQ_INT(fb->compile_count, 0);
  TEARDOWN();
}

TEST(named_functions) {
  SETUP();
  cml_function_t* g = NULL;
  ASSERT_STATUS_CODE(cml_builder_new_function(b, "main", &g), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_STATUS_CODE(cml_builder_new_function(b, "", &g), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_STATUS_OK(cml_builder_new_function(b, "square", &g));
  ASSERT_STATUS_CODE(cml_builder_new_function(b, "square", &g), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_STATUS_OK(cml_builder_new_function(b, "sq2", &g));
  ASSERT_STREQ(cml_function_name(g), "sq2");
  ASSERT_TRUE(cml_function_builder(g) == b);
  ASSERT_TRUE(cml_function_parent(g) == NULL);
  cml_shape_t s = SHAPE(CML_DTYPE_F32, 3);
  cml_value_t gx = cml_parameter(g, "x", &s);
  cml_value_t gy = cml_op_mul(g, gx, gx);
  ASSERT_STATUS_OK(cml_function_return(g, &gy, 1));
  cml_value_t x = cml_parameter(f, "x", &s);
  cml_value_t out[1];
  ASSERT_TRUE(cml_op_call(f, g, &x, 1, out));
  ASSERT_SHAPE(out[0], CML_DTYPE_F32, 3);
  // Wrong argument shape.
  cml_shape_t s4 = SHAPE(CML_DTYPE_F32, 4);
  cml_value_t x4 = cml_parameter(f, "x4", &s4);
  ASSERT_FALSE(cml_op_call(f, g, &x4, 1, out));
  ASSERT_EQ_INT(out[0], CML_VALUE_INVALID);
  ASSERT_BUILDER_ERROR(b, CML_STATUS_INVALID_ARGUMENT, "Call", "(Float32)[3]", "(Float32)[4]");
  TEARDOWN();
}

TEST(named_function_cannot_capture) {
  SETUP();
  cml_shape_t s = SHAPE(CML_DTYPE_F32, 3);
  cml_value_t x = cml_parameter(f, "x", &s);
  cml_function_t* g = NULL;
  ASSERT_STATUS_OK(cml_builder_new_function(b, "g", &g));
  ASSERT_EQ_INT(cml_op_neg(g, x), CML_VALUE_INVALID);
  ASSERT_BUILDER_ERROR(b, CML_STATUS_INVALID_ARGUMENT, "Neg", "ancestors", "\"main\"");
  TEARDOWN();
}

TEST(compile_requires_named_functions_returned) {
  SETUP();
  cml_function_t* g = NULL;
  ASSERT_STATUS_OK(cml_builder_new_function(b, "g", &g));
  cml_shape_t s = SHAPE(CML_DTYPE_F32, 3);
  cml_value_t x = cml_parameter(f, "x", &s);
  ASSERT_STATUS_OK(cml_function_return(f, &x, 1));
  cml_executable_t* exe = NULL;
  cml_status_t st = cml_builder_compile(b, &exe);
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_FAILED_PRECONDITION);
  ASSERT_CONTAINS(cml_status_message(st), "\"g\"");
  cml_status_free(st);
  TEARDOWN();
}

//===--- capability gate ---===//

TEST(capability_gate_op) {
  SETUP();
  cml_capabilities_set_op(&fb->base.capabilities, CML_OP_SIN, false);
  cml_shape_t s = SHAPE(CML_DTYPE_F32, 2);
  cml_value_t x = cml_parameter(f, "x", &s);
  ASSERT_NE_INT(cml_op_cos(f, x), CML_VALUE_INVALID);
  ASSERT_EQ_INT(cml_op_sin(f, x), CML_VALUE_INVALID);
  ASSERT_BUILDER_ERROR(b, CML_STATUS_UNIMPLEMENTED, "Sin", "\"fake\"");
  TEARDOWN();
}

TEST(capability_gate_dtype) {
  SETUP();
  fb->base.capabilities.dtypes &= ~CML_DTYPE_BIT(CML_DTYPE_F64);
  cml_shape_t s32 = SHAPE(CML_DTYPE_F32, 2), s64 = SHAPE(CML_DTYPE_F64, 2);
  cml_value_t x = cml_parameter(f, "x", &s32);
  ASSERT_EQ_INT(cml_op_convert_dtype(f, x, CML_DTYPE_F64), CML_VALUE_INVALID);
  ASSERT_BUILDER_ERROR(b, CML_STATUS_UNIMPLEMENTED, "ConvertDType", "Float64", "\"fake\"");
  TEARDOWN();
  {
    RESETUP();
    fb->base.capabilities.dtypes &= ~CML_DTYPE_BIT(CML_DTYPE_F64);
    ASSERT_EQ_INT(cml_parameter(f, "y", &s64), CML_VALUE_INVALID);
    ASSERT_BUILDER_ERROR(b, CML_STATUS_UNIMPLEMENTED, "Parameter", "Float64", "\"fake\"");
    TEARDOWN();
  }
}

TEST(capability_gate_functions) {
  SETUP();
  fb->base.capabilities.functions = false;
  cml_function_t* c = NULL;
  ASSERT_STATUS_OK(cml_function_new_closure(f, &c));
  cml_value_t t = cml_constant_scalar_i64(c, CML_DTYPE_BOOL, 1);
  ASSERT_STATUS_OK(cml_function_return(c, &t, 1));
  cml_value_t init = cml_constant_scalar_i64(f, CML_DTYPE_I32, 0);
  cml_value_t out[1];
  ASSERT_FALSE(cml_op_if(f, t, c, c, out));
  ASSERT_BUILDER_ERROR(b, CML_STATUS_UNIMPLEMENTED, "If", "\"fake\"");
  (void)init;
  TEARDOWN();
}

TEST(dot_falls_back_to_dot_general) {
  SETUP();
  cml_capabilities_set_op(&fb->base.capabilities, CML_OP_DOT, false);
  cml_shape_t v = SHAPE(CML_DTYPE_F32, 3);
  cml_value_t a = cml_parameter(f, "a", &v);
  cml_value_t d = cml_op_dot(f, a, a);
  ASSERT_TRUE(shape_is(b, d, cml_shape_scalar(CML_DTYPE_F32)));
  const cml_module_t* m = compile_main(b, &d, 1, fb);
  ASSERT_TRUE(m != NULL);
  ASSERT_EQ_INT(m->nodes[m->values[m->functions[0].outputs[0]].node].op, CML_OP_DOT_GENERAL);
  TEARDOWN();
}

//===--- closures and control flow ---===//

TEST(closure_captures_propagate) {
  SETUP();
  cml_shape_t s = SHAPE(CML_DTYPE_F32, 2);
  cml_shape_t bs = cml_shape_scalar(CML_DTYPE_BOOL);
  cml_value_t x = cml_parameter(f, "x", &s);
  cml_value_t p = cml_parameter(f, "p", &bs);
  cml_function_t *c1 = NULL, *c2 = NULL, *c3 = NULL;
  ASSERT_STATUS_OK(cml_function_new_closure(f, &c1));
  ASSERT_STATUS_OK(cml_function_new_closure(c1, &c2));
  ASSERT_STATUS_OK(cml_function_new_closure(c1, &c3));
  ASSERT_TRUE(cml_function_parent(c2) == c1);
  ASSERT_STREQ(cml_function_name(c2), "");
  // c2 uses main's x: c1 captures x, and c2 captures c1's copy.
  cml_value_t n = cml_op_neg(c2, x);
  ASSERT_STATUS_OK(cml_function_return(c2, &n, 1));
  cml_value_t e = cml_op_exp(c3, x);
  ASSERT_STATUS_OK(cml_function_return(c3, &e, 1));
  cml_value_t branch[1];
  ASSERT_TRUE(cml_op_if(c1, p, c2, c3, branch));
  ASSERT_STATUS_OK(cml_function_return(c1, branch, 1));
  cml_value_t out[1];
  ASSERT_TRUE(cml_op_call(f, c1, NULL, 0, out));
  ASSERT_SHAPE(out[0], CML_DTYPE_F32, 2);
  const cml_module_t* m = compile_main(b, out, 1, fb);
  ASSERT_TRUE(m != NULL);
  ASSERT_EQ_INT(m->function_count, 4);
  const cml_ir_function_t* m0 = &m->functions[0];
  const cml_ir_function_t* f1 = &m->functions[1];
  const cml_ir_function_t* f2 = &m->functions[2];
  const cml_ir_function_t* f3 = &m->functions[3];
  ASSERT_EQ_INT(f1->parent, 0);
  ASSERT_EQ_INT(f2->parent, 1);
  ASSERT_EQ_INT(f3->parent, 1);
  // c1 captured x (first, through c2) and then p.
  ASSERT_EQ_INT(f1->capture_count, 2);
  ASSERT_EQ_INT(f1->captures_outer[0], m0->params[0]);
  ASSERT_EQ_INT(f1->captures_outer[1], m0->params[1]);
  // c2 and c3 capture c1's value for x, not main's.
  ASSERT_EQ_INT(f2->capture_count, 1);
  ASSERT_EQ_INT(f2->captures_outer[0], f1->captures_inner[0]);
  ASSERT_EQ_INT(f3->capture_count, 1);
  ASSERT_EQ_INT(f3->captures_outer[0], f1->captures_inner[0]);
  // Inner values are CapturedValue nodes of their closure with the capture index.
  const cml_ir_node_t* cap = &m->nodes[m->values[f1->captures_inner[1]].node];
  ASSERT_EQ_INT(cap->op, CML_OP_CAPTURED_VALUE);
  ASSERT_EQ_INT(cap->function, 1);
  ASSERT_EQ_INT(cap->index, 1);
  ASSERT_EQ_INT(m->values[f1->captures_inner[1]].shape.dtype, CML_DTYPE_BOOL);
  // c2's Neg reads c2's captured value.
  const cml_ir_node_t* neg = &m->nodes[f2->nodes[f2->node_count - 1]];
  ASSERT_EQ_INT(neg->op, CML_OP_NEG);
  ASSERT_EQ_INT(neg->inputs[0], f2->captures_inner[0]);
  // The If in c1 refers to c2 and c3; the Call in main to c1.
  const cml_ir_node_t* ifn = &m->nodes[f1->nodes[f1->node_count - 1]];
  ASSERT_EQ_INT(ifn->op, CML_OP_IF);
  ASSERT_EQ_INT(ifn->attrs->functions[0], 2);
  ASSERT_EQ_INT(ifn->attrs->functions[1], 3);
  ASSERT_EQ_INT(ifn->inputs[0], f1->captures_inner[1]);
  const cml_ir_node_t* call = &m->nodes[m0->nodes[m0->node_count - 1]];
  ASSERT_EQ_INT(call->op, CML_OP_CALL);
  ASSERT_EQ_INT(call->attrs->functions[0], 1);
  ASSERT_EQ_INT(call->input_count, 0);
  // Dump names every node.
  FILE* tmp = tmpfile();
  ASSERT_TRUE(tmp != NULL);
  cml_module_dump(m, tmp);
  long size = ftell(tmp);
  rewind(tmp);
  char text[4096] = {0};
  size_t got = fread(text, 1, sizeof text - 1, tmp);
  fclose(tmp);
  ASSERT_TRUE(size > 0 && got > 0);
  ASSERT_CONTAINS(text, "CapturedValue");
  ASSERT_CONTAINS(text, "If(");
  ASSERT_CONTAINS(text, "Parameter \"x\"");
  ASSERT_CONTAINS(text, "(Float32)[2]");
  TEARDOWN();
}

TEST(convert_to_own_dtype_adds_no_node) {
  SETUP();
  cml_shape_t s = SHAPE(CML_DTYPE_F32, 2);
  cml_value_t x = cml_parameter(f, "x", &s);
  // In the function itself: the value, no node.
  ASSERT_EQ_INT(cml_op_convert_dtype(f, x, CML_DTYPE_F32), x);
  cml_value_t h = cml_op_convert_dtype(f, x, CML_DTYPE_F16);
  ASSERT_SHAPE(h, CML_DTYPE_F16, 2);
  ASSERT_EQ_INT(cml_op_convert_dtype(f, h, CML_DTYPE_F16), h);
  // In a closure, a parent's value becomes the closure's capture of it, as any operand would.
  cml_function_t* c = NULL;
  ASSERT_STATUS_OK(cml_function_new_closure(f, &c));
  cml_value_t y = cml_op_convert_dtype(c, x, CML_DTYPE_F32);
  ASSERT_TRUE(y != CML_VALUE_INVALID && y != x);
  ASSERT_STATUS_OK(cml_function_return(c, &y, 1));
  cml_value_t out[2];
  ASSERT_TRUE(cml_op_call(f, c, NULL, 0, out));
  out[1] = cml_op_convert_dtype(f, h, CML_DTYPE_F32);
  const cml_module_t* m = compile_main(b, out, 2, fb);
  ASSERT_TRUE(m != NULL);
  const cml_ir_function_t* m0 = &m->functions[0];
  const cml_ir_function_t* f1 = &m->functions[1];
  // main: Parameter, ConvertDType to f16, Call, ConvertDType to f32; the closure: its capture.
  int converts = 0;
  for (uint32_t i = 0; i < m0->node_count; ++i)
    converts += m->nodes[m0->nodes[i]].op == CML_OP_CONVERT_DTYPE;
  ASSERT_EQ_INT(converts, 2);
  ASSERT_EQ_INT(f1->node_count, 1);
  ASSERT_EQ_INT(f1->capture_count, 1);
  ASSERT_EQ_INT(f1->outputs[0], f1->captures_inner[0]);
  TEARDOWN();
}

TEST(closure_value_not_visible_in_parent) {
  SETUP();
  cml_function_t* c = NULL;
  ASSERT_STATUS_OK(cml_function_new_closure(f, &c));
  cml_value_t k = cml_constant_scalar_f64(c, CML_DTYPE_F32, 1.0);
  ASSERT_EQ_INT(cml_op_neg(f, k), CML_VALUE_INVALID);
  ASSERT_BUILDER_ERROR(b, CML_STATUS_INVALID_ARGUMENT, "Neg", "closure");
  TEARDOWN();
}

TEST(closure_must_return_before_use) {
  SETUP();
  cml_function_t *cond = NULL, *body = NULL;
  ASSERT_STATUS_OK(cml_function_new_closure(f, &cond));
  ASSERT_STATUS_OK(cml_function_new_closure(f, &body));
  cml_shape_t s = cml_shape_scalar(CML_DTYPE_I32);
  cml_value_t ci = cml_parameter(cond, "i", &s);
  cml_value_t lim = cml_constant_scalar_i64(cond, CML_DTYPE_I32, 10);
  cml_value_t lt = cml_op_less_than(cond, ci, lim);
  ASSERT_STATUS_OK(cml_function_return(cond, &lt, 1));
  cml_value_t bi = cml_parameter(body, "i", &s);
  cml_value_t one = cml_constant_scalar_i64(body, CML_DTYPE_I32, 1);
  cml_value_t next = cml_op_add(body, bi, one);
  (void)next;  // body not returned yet
  cml_value_t init = cml_constant_scalar_i64(f, CML_DTYPE_I32, 0);
  cml_value_t out[1];
  ASSERT_FALSE(cml_op_while(f, cond, body, &init, 1, out));
  ASSERT_BUILDER_ERROR(b, CML_STATUS_FAILED_PRECONDITION, "While", "body", "not returned");
  TEARDOWN();
}

TEST(while_loop) {
  SETUP();
  cml_function_t *cond = NULL, *body = NULL;
  ASSERT_STATUS_OK(cml_function_new_closure(f, &cond));
  ASSERT_STATUS_OK(cml_function_new_closure(f, &body));
  cml_shape_t s = cml_shape_scalar(CML_DTYPE_I32), v = SHAPE(CML_DTYPE_F32, 4);
  cml_value_t ci = cml_parameter(cond, "i", &s);
  cml_value_t cv = cml_parameter(cond, "v", &v);
  (void)cv;
  cml_value_t lt = cml_op_less_than(cond, ci, cml_constant_scalar_i64(cond, CML_DTYPE_I32, 10));
  ASSERT_STATUS_OK(cml_function_return(cond, &lt, 1));
  cml_value_t bi = cml_parameter(body, "i", &s);
  cml_value_t bv = cml_parameter(body, "v", &v);
  cml_value_t bout[2] = {cml_op_add(body, bi, cml_constant_scalar_i64(body, CML_DTYPE_I32, 1)),
                         cml_op_add(body, bv, bv)};
  ASSERT_STATUS_OK(cml_function_return(body, bout, 2));
  cml_value_t x = cml_parameter(f, "x", &v);
  cml_value_t init[2] = {cml_constant_scalar_i64(f, CML_DTYPE_I32, 0), x};
  cml_value_t out[2];
  ASSERT_TRUE(cml_op_while(f, cond, body, init, 2, out));
  ASSERT_TRUE(shape_is(b, out[0], s));
  ASSERT_SHAPE(out[1], CML_DTYPE_F32, 4);
  ASSERT_EQ_INT(out[1], out[0] + 1);
  const cml_module_t* m = compile_main(b, out, 2, fb);
  ASSERT_TRUE(m != NULL);
  const cml_ir_node_t* w = &m->nodes[m->values[m->functions[0].outputs[0]].node];
  ASSERT_EQ_INT(w->op, CML_OP_WHILE);
  ASSERT_EQ_INT(w->output_count, 2);
  ASSERT_EQ_INT(w->attrs->functions[0], 1);
  ASSERT_EQ_INT(w->attrs->functions[1], 2);
  TEARDOWN();
}

// The output array may be the operand array (cml_op_while(f, cond, body, state, n, state)):
// the operands are read before the outputs are written. They once were cleared first, and the
// op failed with "operand #0 is CML_VALUE_INVALID". On failure the outputs are INVALID.
TEST(control_outputs_may_alias_operands) {
  SETUP();
  cml_function_t *cond = NULL, *body = NULL, *callee = NULL, *cmp = NULL;
  ASSERT_STATUS_OK(cml_function_new_closure(f, &cond));
  ASSERT_STATUS_OK(cml_function_new_closure(f, &body));
  ASSERT_STATUS_OK(cml_function_new_closure(f, &callee));
  ASSERT_STATUS_OK(cml_function_new_closure(f, &cmp));
  cml_shape_t s = cml_shape_scalar(CML_DTYPE_I32), v = SHAPE(CML_DTYPE_F32, 4);
  cml_shape_t sf = cml_shape_scalar(CML_DTYPE_F32);
  cml_value_t ci = cml_parameter(cond, "i", &s);
  cml_parameter(cond, "v", &v);
  cml_value_t lt = cml_op_less_than(cond, ci, cml_constant_scalar_i64(cond, CML_DTYPE_I32, 3));
  ASSERT_STATUS_OK(cml_function_return(cond, &lt, 1));
  cml_value_t bi = cml_parameter(body, "i", &s);
  cml_value_t bv = cml_parameter(body, "v", &v);
  cml_value_t bout[2] = {cml_op_add(body, bi, cml_constant_scalar_i64(body, CML_DTYPE_I32, 1)),
                         cml_op_add(body, bv, bv)};
  ASSERT_STATUS_OK(cml_function_return(body, bout, 2));
  cml_value_t cx = cml_parameter(callee, "x", &v);
  cml_value_t cn = cml_op_neg(callee, cx);
  ASSERT_STATUS_OK(cml_function_return(callee, &cn, 1));
  cml_value_t l = cml_parameter(cmp, "l", &sf), r = cml_parameter(cmp, "r", &sf);
  cml_value_t less = cml_op_less_than(cmp, l, r);
  ASSERT_STATUS_OK(cml_function_return(cmp, &less, 1));

  cml_value_t x = cml_parameter(f, "x", &v);
  cml_value_t state[2] = {cml_constant_scalar_i64(f, CML_DTYPE_I32, 0), x};
  ASSERT_TRUE(cml_op_while(f, cond, body, state, 2, state));
  ASSERT_TRUE(shape_is(b, state[0], s));
  ASSERT_SHAPE(state[1], CML_DTYPE_F32, 4);
  cml_value_t y[1] = {state[1]};
  ASSERT_TRUE(cml_op_call(f, callee, y, 1, y));
  ASSERT_SHAPE(y[0], CML_DTYPE_F32, 4);
  ASSERT_TRUE(cml_op_sort(f, cmp, 0, true, y, 1, y));
  ASSERT_SHAPE(y[0], CML_DTYPE_F32, 4);
  const cml_module_t* m = compile_main(b, y, 1, fb);
  ASSERT_TRUE(m != NULL);
  // Sort(Call(While(...)[1])): each reads the one before.
  const cml_ir_node_t* sort = &m->nodes[m->values[m->functions[0].outputs[0]].node];
  ASSERT_EQ_INT(sort->op, CML_OP_SORT);
  const cml_ir_node_t* call = &m->nodes[m->values[sort->inputs[0]].node];
  ASSERT_EQ_INT(call->op, CML_OP_CALL);
  const cml_ir_node_t* loop = &m->nodes[m->values[call->inputs[0]].node];
  ASSERT_EQ_INT(loop->op, CML_OP_WHILE);
  TEARDOWN();
}

TEST(control_outputs_alias_invalid_on_failure) {
  SETUP();
  cml_function_t *cond = NULL, *bad = NULL;
  ASSERT_STATUS_OK(cml_function_new_closure(f, &cond));
  ASSERT_STATUS_OK(cml_function_new_closure(f, &bad));
  cml_shape_t s = cml_shape_scalar(CML_DTYPE_I32), v = SHAPE(CML_DTYPE_F32, 4);
  cml_value_t ci = cml_parameter(cond, "i", &s);
  cml_parameter(cond, "v", &v);
  cml_value_t lt = cml_op_less_than(cond, ci, cml_constant_scalar_i64(cond, CML_DTYPE_I32, 3));
  ASSERT_STATUS_OK(cml_function_return(cond, &lt, 1));
  cml_value_t bad_i = cml_parameter(bad, "i", &s);
  cml_parameter(bad, "v", &v);
  cml_value_t bad_out[2] = {bad_i, bad_i};  // output #1 has the wrong shape
  ASSERT_STATUS_OK(cml_function_return(bad, bad_out, 2));
  cml_value_t state[2] = {cml_constant_scalar_i64(f, CML_DTYPE_I32, 0), cml_parameter(f, "x", &v)};
  ASSERT_FALSE(cml_op_while(f, cond, bad, state, 2, state));
  ASSERT_EQ_INT(state[0], CML_VALUE_INVALID);
  ASSERT_EQ_INT(state[1], CML_VALUE_INVALID);
  ASSERT_BUILDER_ERROR(b, CML_STATUS_INVALID_ARGUMENT, "While", "body output #1");
  TEARDOWN();
}

TEST(while_signature_errors) {
  SETUP();
  cml_function_t *cond = NULL, *body = NULL;
  ASSERT_STATUS_OK(cml_function_new_closure(f, &cond));
  ASSERT_STATUS_OK(cml_function_new_closure(f, &body));
  cml_shape_t s = cml_shape_scalar(CML_DTYPE_I32);
  cml_value_t ci = cml_parameter(cond, "i", &s);
  ASSERT_STATUS_OK(cml_function_return(cond, &ci, 1));  // returns Int32, not Bool
  cml_value_t bi = cml_parameter(body, "i", &s);
  ASSERT_STATUS_OK(cml_function_return(body, &bi, 1));
  cml_value_t init = cml_constant_scalar_i64(f, CML_DTYPE_I32, 0);
  cml_value_t out[1];
  ASSERT_FALSE(cml_op_while(f, cond, body, &init, 1, out));
  ASSERT_BUILDER_ERROR(b, CML_STATUS_INVALID_ARGUMENT, "While", "cond", "(Int32)", "(Bool)");
  TEARDOWN();
  {
    RESETUP();
    cml_function_t *c2 = NULL, *b2 = NULL;
    ASSERT_STATUS_OK(cml_function_new_closure(f, &c2));
    ASSERT_STATUS_OK(cml_function_new_closure(f, &b2));
    cml_value_t i2 = cml_parameter(c2, "i", &s);
    cml_value_t t = cml_op_less_than(c2, i2, i2);
    ASSERT_STATUS_OK(cml_function_return(c2, &t, 1));
    cml_value_t j = cml_parameter(b2, "i", &s);
    cml_value_t jf = cml_op_convert_dtype(b2, j, CML_DTYPE_F32);  // changes the state dtype
    ASSERT_STATUS_OK(cml_function_return(b2, &jf, 1));
    cml_value_t init2 = cml_constant_scalar_i64(f, CML_DTYPE_I32, 0);
    ASSERT_FALSE(cml_op_while(f, c2, b2, &init2, 1, out));
    ASSERT_BUILDER_ERROR(b, CML_STATUS_INVALID_ARGUMENT, "While", "body", "(Float32)", "(Int32)");
    TEARDOWN();
  }
}

TEST(if_branch_mismatch) {
  SETUP();
  cml_function_t *t = NULL, *e = NULL;
  ASSERT_STATUS_OK(cml_function_new_closure(f, &t));
  ASSERT_STATUS_OK(cml_function_new_closure(f, &e));
  cml_value_t tv = cml_constant_scalar_f64(t, CML_DTYPE_F32, 1.0);
  ASSERT_STATUS_OK(cml_function_return(t, &tv, 1));
  cml_value_t ev = cml_constant_scalar_f64(e, CML_DTYPE_F64, 2.0);
  ASSERT_STATUS_OK(cml_function_return(e, &ev, 1));
  cml_value_t pred = cml_constant_scalar_i64(f, CML_DTYPE_BOOL, 1);
  cml_value_t out[1];
  ASSERT_FALSE(cml_op_if(f, pred, t, e, out));
  ASSERT_BUILDER_ERROR(b, CML_STATUS_INVALID_ARGUMENT, "If", "false branch", "(Float64)",
                       "(Float32)");
  TEARDOWN();
  {
    RESETUP();
    cml_function_t* t2 = NULL;
    ASSERT_STATUS_OK(cml_function_new_closure(f, &t2));
    cml_value_t one = cml_constant_scalar_f64(t2, CML_DTYPE_F32, 1.0);
    ASSERT_STATUS_OK(cml_function_return(t2, &one, 1));
    cml_value_t notbool = cml_constant_scalar_i64(f, CML_DTYPE_I32, 1);
    ASSERT_FALSE(cml_op_if(f, notbool, t2, t2, out));
    ASSERT_BUILDER_ERROR(b, CML_STATUS_INVALID_ARGUMENT, "If", "predicate", "(Int32)");
    TEARDOWN();
  }
}

TEST(sort_comparator) {
  SETUP();
  cml_function_t* cmp = NULL;
  ASSERT_STATUS_OK(cml_function_new_closure(f, &cmp));
  cml_shape_t f32 = cml_shape_scalar(CML_DTYPE_F32), i32 = cml_shape_scalar(CML_DTYPE_I32);
  // Interleaved order: (lhs_0, rhs_0, lhs_1, rhs_1).
  cml_value_t l0 = cml_parameter(cmp, "l0", &f32);
  cml_value_t r0 = cml_parameter(cmp, "r0", &f32);
  cml_parameter(cmp, "l1", &i32);
  cml_parameter(cmp, "r1", &i32);
  cml_value_t lt = cml_op_less_than(cmp, l0, r0);
  ASSERT_STATUS_OK(cml_function_return(cmp, &lt, 1));
  cml_shape_t k = SHAPE(CML_DTYPE_F32, 2, 5), v = SHAPE(CML_DTYPE_I32, 2, 5);
  cml_value_t ops[2] = {cml_parameter(f, "k", &k), cml_parameter(f, "v", &v)};
  cml_value_t out[2];
  ASSERT_TRUE(cml_op_sort(f, cmp, 1, true, ops, 2, out));
  ASSERT_SHAPE(out[0], CML_DTYPE_F32, 2, 5);
  ASSERT_SHAPE(out[1], CML_DTYPE_I32, 2, 5);
  const cml_module_t* m = compile_main(b, out, 2, fb);
  ASSERT_TRUE(m != NULL);
  const cml_ir_node_t* n = &m->nodes[m->values[m->functions[0].outputs[0]].node];
  ASSERT_EQ_INT(n->op, CML_OP_SORT);
  ASSERT_EQ_INT(n->attrs->axis, 1);
  ASSERT_TRUE(n->attrs->flag);
  ASSERT_EQ_INT(n->attrs->functions[0], 1);
  TEARDOWN();
}

// cml_ir_plain_comparator: a single compare of operand 0's lhs and rhs, written either way
// round; anything else is not plain.
TEST(plain_comparator) {
  SETUP();
  cml_shape_t f32 = cml_shape_scalar(CML_DTYPE_F32), i32 = cml_shape_scalar(CML_DTYPE_I32);
  enum { kCases = 7 };
  cml_function_t* cmp[kCases];
  for (int i = 0; i < kCases; ++i) {
    ASSERT_STATUS_OK(cml_function_new_closure(f, &cmp[i]));
    cml_function_t* c = cmp[i];
    cml_value_t l0 = cml_parameter(c, "l0", &f32);
    cml_value_t r0 = cml_parameter(c, "r0", &f32);
    cml_value_t l1 = cml_parameter(c, "l1", &i32);
    cml_value_t r1 = cml_parameter(c, "r1", &i32);
    cml_value_t res;
    switch (i) {
      case 0:
        res = cml_op_less_than(c, l0, r0);
        break;
      case 1:  // rhs > lhs is lhs < rhs
        res = cml_op_greater_than(c, r0, l0);
        break;
      case 2:  // rhs <= lhs (total order) is lhs >= rhs
        res = cml_op_less_or_equal_total_order(c, r0, l0);
        break;
      case 3:  // operand 1's parameters
        res = cml_op_less_than(c, l1, r1);
        break;
      case 4:  // one more node
        res = cml_op_logical_not(c, cml_op_greater_or_equal(c, l0, r0));
        break;
      case 5:  // not an order
        res = cml_op_equal(c, l0, r0);
        break;
      default:  // lhs against itself
        res = cml_op_less_than(c, l0, l0);
        break;
    }
    ASSERT_STATUS_OK(cml_function_return(c, &res, 1));
  }
  cml_shape_t k = SHAPE(CML_DTYPE_F32, 5), v = SHAPE(CML_DTYPE_I32, 5);
  cml_value_t ops[2] = {cml_parameter(f, "k", &k), cml_parameter(f, "v", &v)};
  cml_value_t out[2 * kCases];
  for (int i = 0; i < kCases; ++i)
    ASSERT_TRUE(cml_op_sort(f, cmp[i], 0, true, ops, 2, out + 2 * i));
  const cml_module_t* m = compile_main(b, out, 2 * kCases, fb);
  ASSERT_TRUE(m != NULL);
  const cml_op_t want[kCases] = {
      CML_OP_LESS_THAN, CML_OP_LESS_THAN, CML_OP_GREATER_OR_EQUAL_TOTAL_ORDER,
      CML_OP_INVALID,   CML_OP_INVALID,   CML_OP_INVALID,
      CML_OP_INVALID};
  for (int i = 0; i < kCases; ++i) {
    const cml_ir_node_t* n = &m->nodes[m->values[m->functions[0].outputs[2 * i]].node];
    ASSERT_EQ_INT(n->op, CML_OP_SORT);
    ASSERT_EQ_INT(cml_ir_plain_comparator(m, n->attrs->functions[0]), want[i]);
  }
  ASSERT_EQ_INT(cml_ir_plain_comparator(m, m->function_count), CML_OP_INVALID);
  ASSERT_EQ_INT(cml_ir_plain_comparator(NULL, 0), CML_OP_INVALID);
  TEARDOWN();
}

TEST(sort_comparator_errors) {
  SETUP();
  cml_function_t* cmp = NULL;
  ASSERT_STATUS_OK(cml_function_new_closure(f, &cmp));
  cml_shape_t f32 = cml_shape_scalar(CML_DTYPE_F32), f64 = cml_shape_scalar(CML_DTYPE_F64);
  cml_value_t l0 = cml_parameter(cmp, "l0", &f64);  // wrong dtype
  cml_value_t r0 = cml_parameter(cmp, "r0", &f64);
  cml_value_t lt = cml_op_less_than(cmp, l0, r0);
  ASSERT_STATUS_OK(cml_function_return(cmp, &lt, 1));
  cml_shape_t k = SHAPE(CML_DTYPE_F32, 5);
  cml_value_t x = cml_parameter(f, "k", &k);
  cml_value_t out[1];
  ASSERT_FALSE(cml_op_sort(f, cmp, 0, false, &x, 1, out));
  ASSERT_BUILDER_ERROR(b, CML_STATUS_INVALID_ARGUMENT, "Sort", "comparator", "(Float64)",
                       "(Float32)");
  TEARDOWN();
  {
    RESETUP();
    cml_function_t* c2 = NULL;
    ASSERT_STATUS_OK(cml_function_new_closure(f, &c2));
    cml_value_t a = cml_parameter(c2, "a", &f32);
    cml_parameter(c2, "b", &f32);
    ASSERT_STATUS_OK(cml_function_return(c2, &a, 1));  // returns Float32, not Bool
    cml_value_t y = cml_parameter(f, "k", &k);
    ASSERT_FALSE(cml_op_sort(f, c2, 0, false, &y, 1, out));
    ASSERT_BUILDER_ERROR(b, CML_STATUS_INVALID_ARGUMENT, "Sort", "comparator", "(Bool)");
    TEARDOWN();
  }
  {
    RESETUP();
    cml_function_t* c3 = NULL;
    ASSERT_STATUS_OK(cml_function_new_closure(f, &c3));
    cml_value_t a = cml_parameter(c3, "a", &f32);
    cml_value_t bb = cml_parameter(c3, "b", &f32);
    cml_value_t t = cml_op_less_than(c3, a, bb);
    ASSERT_STATUS_OK(cml_function_return(c3, &t, 1));
    cml_value_t y = cml_parameter(f, "k", &k);
    ASSERT_FALSE(cml_op_sort(f, c3, 1, false, &y, 1, out));
    ASSERT_BUILDER_ERROR(b, CML_STATUS_INVALID_ARGUMENT, "Sort", "axis 1", "(Float32)[5]");
    TEARDOWN();
  }
}

TEST(closure_of_other_function_rejected) {
  SETUP();
  cml_function_t *c = NULL, *inner = NULL;
  ASSERT_STATUS_OK(cml_function_new_closure(f, &c));
  ASSERT_STATUS_OK(cml_function_new_closure(c, &inner));
  cml_value_t t = cml_constant_scalar_i64(inner, CML_DTYPE_BOOL, 1);
  ASSERT_STATUS_OK(cml_function_return(inner, &t, 1));
  cml_value_t pred = cml_constant_scalar_i64(f, CML_DTYPE_BOOL, 1);
  cml_value_t out[1];
  // |inner| is a grandchild of main: If in main cannot use it.
  ASSERT_FALSE(cml_op_if(f, pred, inner, inner, out));
  ASSERT_BUILDER_ERROR(b, CML_STATUS_INVALID_ARGUMENT, "If", "closure of function \"main\"");
  TEARDOWN();
}

TEST(multi_output_ops) {
  SETUP();
  cml_shape_t st = SHAPE(CML_DTYPE_U64, 3);
  cml_value_t state = cml_parameter(f, "state", &st);
  cml_shape_t vs = SHAPE(CML_DTYPE_U32, 2, 8);
  cml_value_t ns, vals;
  ASSERT_TRUE(cml_op_rng_bit_generator(f, state, &vs, &ns, &vals));
  ASSERT_SHAPE(ns, CML_DTYPE_U64, 3);
  ASSERT_SHAPE(vals, CML_DTYPE_U32, 2, 8);
  cml_shape_t bad = SHAPE(CML_DTYPE_U64, 2);
  cml_value_t state2 = cml_parameter(f, "state2", &bad);
  ASSERT_FALSE(cml_op_rng_bit_generator(f, state2, &vs, &ns, &vals));
  ASSERT_EQ_INT(ns, CML_VALUE_INVALID);
  ASSERT_BUILDER_ERROR(b, CML_STATUS_INVALID_ARGUMENT, "RNGBitGenerator", "(Uint64)[2]");
  TEARDOWN();
  {
    RESETUP();
    cml_shape_t xs = SHAPE(CML_DTYPE_F32, 2, 3, 4), cs = SHAPE(CML_DTYPE_F32, 3);
    cml_value_t x = cml_parameter(f, "x", &xs);
    cml_value_t sc = cml_parameter(f, "scale", &cs);
    cml_value_t of = cml_parameter(f, "offset", &cs);
    cml_value_t outs[3];
    ASSERT_TRUE(cml_op_batch_norm_training(f, x, sc, of, 1e-3f, 1, outs));
    ASSERT_SHAPE(outs[0], CML_DTYPE_F32, 2, 3, 4);
    ASSERT_SHAPE(outs[1], CML_DTYPE_F32, 3);
    ASSERT_SHAPE(outs[2], CML_DTYPE_F32, 3);
    cml_value_t g[3];
    ASSERT_TRUE(cml_op_batch_norm_gradient(f, x, sc, outs[1], outs[2], outs[0], 1e-3f, 1, g));
    ASSERT_SHAPE(g[0], CML_DTYPE_F32, 2, 3, 4);
    ASSERT_SHAPE(g[2], CML_DTYPE_F32, 3);
    cml_value_t inf = cml_op_batch_norm_inference(f, x, sc, of, outs[1], outs[2], 1e-3f, 1);
    ASSERT_SHAPE(inf, CML_DTYPE_F32, 2, 3, 4);
    cml_value_t ob[2];
    cml_value_t in2[2] = {x, sc};
    ASSERT_TRUE(cml_op_optimization_barrier(f, in2, 2, ob));
    ASSERT_SHAPE(ob[1], CML_DTYPE_F32, 3);
    cml_value_t sb = cml_op_scheduling_barrier(f, x, &sc, 1);
    ASSERT_SHAPE(sb, CML_DTYPE_F32, 2, 3, 4);
    // Batch norm on the wrong feature axis.
    ASSERT_EQ_INT(cml_op_batch_norm_inference(f, x, sc, of, sc, sc, 1e-3f, 2), CML_VALUE_INVALID);
    ASSERT_BUILDER_ERROR(b, CML_STATUS_INVALID_ARGUMENT, "BatchNormForInference", "(Float32)[3]",
                         "(Float32)[4]");
    TEARDOWN();
  }
}

TEST(attrs_defaults_in_module) {
  SETUP();
  cml_shape_t xs = SHAPE(CML_DTYPE_F32, 1, 4, 6, 2), ks = SHAPE(CML_DTYPE_F32, 3, 3, 2, 8);
  cml_value_t x = cml_parameter(f, "x", &xs);  // NHWC
  cml_value_t k = cml_parameter(f, "k", &ks);  // HWIO
  cml_conv_config_t cc;
  memset(&cc, 0, sizeof cc);
  cc.spatial_count = 2;
  cc.input_batch_axis = 0;
  cc.input_channel_axis = 3;
  cc.input_spatial_axes[0] = 1;
  cc.input_spatial_axes[1] = 2;
  cc.kernel_input_channel_axis = 2;
  cc.kernel_output_channel_axis = 3;
  cc.kernel_spatial_axes[0] = 0;
  cc.kernel_spatial_axes[1] = 1;
  cc.output_batch_axis = 0;
  cc.output_channel_axis = 3;
  cc.output_spatial_axes[0] = 1;
  cc.output_spatial_axes[1] = 2;
  cml_value_t conv = cml_op_conv_general(f, x, k, &cc);
  ASSERT_SHAPE(conv, CML_DTYPE_F32, 1, 2, 4, 8);  // (4-3)/1+1, (6-3)/1+1
  cml_value_t sl = cml_op_slice(f, x, (int64_t[]){0, 1, 0, 0}, (int64_t[]){1, 4, 6, 2}, NULL, 4);
  ASSERT_SHAPE(sl, CML_DTYPE_F32, 1, 3, 6, 2);
  cml_window_config_t wc;
  memset(&wc, 0, sizeof wc);
  wc.rank = 4;
  wc.window_dims[0] = 1;
  wc.window_dims[1] = 2;
  wc.window_dims[2] = 3;
  wc.window_dims[3] = 1;
  cml_value_t rw = cml_op_reduce_window(f, x, CML_REDUCE_MAX, &wc);
  ASSERT_SHAPE(rw, CML_DTYPE_F32, 1, 2, 2, 2);  // strides default to the window
  cml_value_t rs = cml_op_reduce_sum(f, x, (int64_t[]){3, 1}, 2);
  ASSERT_SHAPE(rs, CML_DTYPE_F32, 1, 6);
  cml_value_t fill = cml_constant_scalar_f64(f, CML_DTYPE_F32, 0.0);
  cml_pad_axis_t pa = {1, 2, 0};
  cml_value_t pd = cml_op_pad(f, x, fill, &pa, 1);
  ASSERT_SHAPE(pd, CML_DTYPE_F32, 4, 4, 6, 2);
  cml_value_t outs[5] = {conv, sl, rw, rs, pd};
  const cml_module_t* m = compile_main(b, outs, 5, fb);
  ASSERT_TRUE(m != NULL);
  const cml_ir_function_t* mf = &m->functions[0];
  const cml_ir_attrs_t* a;
  a = m->nodes[m->values[mf->outputs[0]].node].attrs;
  ASSERT_EQ_INT(a->u.conv.strides[0], 1);
  ASSERT_EQ_INT(a->u.conv.strides[1], 1);
  ASSERT_EQ_INT(a->u.conv.input_dilations[1], 1);
  ASSERT_EQ_INT(a->u.conv.kernel_dilations[0], 1);
  ASSERT_EQ_INT(a->u.conv.channel_group_count, 1);
  ASSERT_EQ_INT(a->u.conv.batch_group_count, 1);
  ASSERT_EQ_INT(a->u.conv.output_dtype, CML_DTYPE_F32);
  a = m->nodes[m->values[mf->outputs[1]].node].attrs;
  ASSERT_EQ_INT(a->axis_count, 4);
  ASSERT_EQ_INT(a->starts[1], 1);
  ASSERT_EQ_INT(a->limits[2], 6);
  ASSERT_EQ_INT(a->strides[0], 1);
  ASSERT_EQ_INT(a->strides[3], 1);
  a = m->nodes[m->values[mf->outputs[2]].node].attrs;
  ASSERT_EQ_INT(a->reduce_type, CML_REDUCE_MAX);
  ASSERT_EQ_INT(a->u.window.strides[1], 2);
  ASSERT_EQ_INT(a->u.window.strides[2], 3);
  ASSERT_EQ_INT(a->u.window.input_dilations[2], 1);
  ASSERT_EQ_INT(a->u.window.window_dilations[0], 1);
  a = m->nodes[m->values[mf->outputs[3]].node].attrs;
  ASSERT_EQ_INT(a->axis_count, 2);
  ASSERT_EQ_INT(a->axes[0], 1);
  ASSERT_EQ_INT(a->axes[1], 3);
  a = m->nodes[m->values[mf->outputs[4]].node].attrs;
  ASSERT_EQ_INT(a->pads[0].low, 1);
  ASSERT_EQ_INT(a->pads[0].high, 2);
  ASSERT_EQ_INT(a->pads[3].low, 0);
  ASSERT_EQ_INT(a->pads[3].interior, 0);
  TEARDOWN();
}

TEST(dot_general_output_dtype) {
  SETUP();
  cml_shape_t ls = SHAPE(CML_DTYPE_BF16, 2, 3, 4), rs = SHAPE(CML_DTYPE_BF16, 2, 4, 5);
  cml_value_t l = cml_parameter(f, "l", &ls);
  cml_value_t r = cml_parameter(f, "r", &rs);
  cml_dot_config_t c;
  memset(&c, 0, sizeof c);
  c.lhs_contracting_count = c.rhs_contracting_count = 1;
  c.lhs_contracting_axes[0] = 2;
  c.rhs_contracting_axes[0] = 1;
  c.lhs_batch_count = c.rhs_batch_count = 1;
  c.accumulator_dtype = CML_DTYPE_F32;
  cml_value_t d = cml_op_dot_general(f, l, r, &c);
  ASSERT_SHAPE(d, CML_DTYPE_F32, 2, 3, 5);  // output defaults to the accumulator
  c.output_dtype = CML_DTYPE_BF16;
  cml_value_t d2 = cml_op_dot_general(f, l, r, &c);
  ASSERT_SHAPE(d2, CML_DTYPE_BF16, 2, 3, 5);
  c.accumulator_dtype = CML_DTYPE_INVALID;
  c.output_dtype = CML_DTYPE_INVALID;
  cml_value_t d3 = cml_op_dot_general(f, l, r, &c);
  ASSERT_SHAPE(d3, CML_DTYPE_BF16, 2, 3, 5);
  c.rhs_contracting_axes[0] = 2;  // 4 vs 5
  ASSERT_EQ_INT(cml_op_dot_general(f, l, r, &c), CML_VALUE_INVALID);
  ASSERT_BUILDER_ERROR(b, CML_STATUS_INVALID_ARGUMENT, "DotGeneral", "(BFloat16)[2, 3, 4]",
                       "(BFloat16)[2, 4, 5]");
  TEARDOWN();
}

TEST(value_shape_accessor) {
  SETUP();
  cml_shape_t s = SHAPE(CML_DTYPE_I16, 7);
  cml_value_t x = cml_parameter(f, "x", &s);
  cml_shape_t got;
  ASSERT_TRUE(cml_builder_value_shape(b, x, &got));
  ASSERT_EQ_INT(got.dtype, CML_DTYPE_I16);
  ASSERT_EQ_INT(got.dims[0], 7);
  ASSERT_FALSE(cml_builder_value_shape(b, CML_VALUE_INVALID, &got));
  ASSERT_FALSE(cml_builder_value_shape(b, x + 1000, &got));
  TEARDOWN();
}

// A parameter of shape |dtype|[dims...] where the dims may be beyond what an op may produce.
static cml_value_t param_dims(cml_function_t* f, cml_dtype_t dtype, int32_t rank,
                              const int64_t* dims) {
  cml_shape_t s = cml_shape_make(dtype, rank, dims);
  return cml_parameter(f, NULL, &s);
}

// Every op's output shape is checked once, where nodes are added: more than CML_MAX_ELEMENTS
// (2^55) elements fails with INVALID_ARGUMENT naming the op, the output and the inputs.
TEST(output_shapes_checked_centrally) {
  SETUP();
  const int64_t big = (int64_t)1 << 31;
  cml_value_t scalar = cml_parameter(f, "s", &(cml_shape_t){CML_DTYPE_F32, 0, {0}});
  ASSERT_EQ_INT(cml_op_broadcast_in_dim(f, scalar, (int64_t[]){big, big, big}, 3, NULL, 0),
                CML_VALUE_INVALID);
  ASSERT_BUILDER_ERROR(b, CML_STATUS_INVALID_ARGUMENT, "BroadcastInDim", "output #0",
                       "(Float32)[2147483648, 2147483648, 2147483648]", "too large",
                       "inputs (Float32)");
  TEARDOWN();

  // The limit itself is accepted (2^55 elements of any dtype), one more element is not.
  RESETUP();
  cml_value_t bs = cml_parameter(f, "b", &(cml_shape_t){CML_DTYPE_BOOL, 0, {0}});
  cml_value_t cs = cml_parameter(f, "c", &(cml_shape_t){CML_DTYPE_C128, 0, {0}});
  const int64_t limit = (int64_t)1 << 55;
  cml_value_t at_limit = cml_op_broadcast_in_dim(f, bs, &limit, 1, NULL, 0);
  ASSERT_SHAPE(at_limit, CML_DTYPE_BOOL, limit);
  cml_value_t c_limit =
      cml_op_broadcast_in_dim(f, cs, (int64_t[]){(int64_t)1 << 27, (int64_t)1 << 28}, 2, NULL, 0);
  ASSERT_SHAPE(c_limit, CML_DTYPE_C128, (int64_t)1 << 27, (int64_t)1 << 28);
  // Zero dims count as 1 in the limit (so the strides of empty shapes fit too).
  cml_value_t empty = cml_op_broadcast_in_dim(
      f, bs, (int64_t[]){(int64_t)1 << 27, 0, (int64_t)1 << 28}, 3, NULL, 0);
  ASSERT_SHAPE(empty, CML_DTYPE_BOOL, (int64_t)1 << 27, 0, (int64_t)1 << 28);
  const int64_t over = limit + 1;
  ASSERT_EQ_INT(cml_op_broadcast_in_dim(f, bs, &over, 1, NULL, 0), CML_VALUE_INVALID);
  ASSERT_BUILDER_ERROR(b, CML_STATUS_INVALID_ARGUMENT, "BroadcastInDim",
                       "(Bool)[36028797018963969]", "too large", "2^55");
  TEARDOWN();
  RESETUP();
  bs = cml_parameter(f, "b", &(cml_shape_t){CML_DTYPE_BOOL, 0, {0}});
  ASSERT_EQ_INT(cml_op_broadcast_in_dim(f, bs, (int64_t[]){(int64_t)1 << 28, 0, (int64_t)1 << 28},
                                        3, NULL, 0),
                CML_VALUE_INVALID);
  ASSERT_BUILDER_ERROR(b, CML_STATUS_INVALID_ARGUMENT, "BroadcastInDim",
                       "(Bool)[268435456, 0, 268435456]");
  TEARDOWN();

  RESETUP();
  cml_value_t l = param_dims(f, CML_DTYPE_F32, 2, (int64_t[]){big, 1});
  cml_value_t r = param_dims(f, CML_DTYPE_F32, 2, (int64_t[]){1, big});
  ASSERT_EQ_INT(cml_op_dot(f, l, r), CML_VALUE_INVALID);
  ASSERT_BUILDER_ERROR(b, CML_STATUS_INVALID_ARGUMENT, "Dot", "(Float32)[2147483648, 2147483648]",
                       "(Float32)[2147483648, 1]", "(Float32)[1, 2147483648]");
  TEARDOWN();

  RESETUP();
  cml_value_t x = param_dims(f, CML_DTYPE_F32, 1, (int64_t[]){3});
  cml_value_t fill = cml_parameter(f, "fill", &(cml_shape_t){CML_DTYPE_F32, 0, {0}});
  cml_pad_axis_t interior = {2, 0, ((int64_t)1 << 54) - 2};  // 2 + 3 + 2 * (2^54 - 2) elements
  ASSERT_EQ_INT(cml_op_pad(f, x, fill, &interior, 1), CML_VALUE_INVALID);
  ASSERT_BUILDER_ERROR(b, CML_STATUS_INVALID_ARGUMENT, "Pad", "(Float32)[36028797018963969]",
                       "inputs (Float32)[3], (Float32)");
  TEARDOWN();

  // Concatenate of five Bool[2^54]: over the limit; the message lists four inputs and a count.
  RESETUP();
  cml_value_t part = param_dims(f, CML_DTYPE_BOOL, 1, (int64_t[]){(int64_t)1 << 54});
  cml_value_t parts[5] = {part, part, part, part, part};
  ASSERT_EQ_INT(cml_op_concatenate(f, 0, parts, 5), CML_VALUE_INVALID);
  ASSERT_BUILDER_ERROR(b, CML_STATUS_INVALID_ARGUMENT, "Concatenate", "(Bool)[90071992547409920]",
                       "and 1 more");
  TEARDOWN();

  // Windowed ops with padding that overflows int64 never record a node.
  RESETUP();
  cml_value_t w4 = param_dims(f, CML_DTYPE_F32, 1, (int64_t[]){4});
  cml_window_config_t w;
  memset(&w, 0, sizeof w);
  w.rank = 1;
  w.window_dims[0] = 2;
  w.strides[0] = 1;
  w.padding_low[0] = w.padding_high[0] = INT64_MAX;
  ASSERT_EQ_INT(cml_op_reduce_window(f, w4, CML_REDUCE_SUM, &w), CML_VALUE_INVALID);
  ASSERT_BUILDER_ERROR(b, CML_STATUS_INVALID_ARGUMENT, "ReduceWindow", "out of range",
                       "(Float32)[4]");
  TEARDOWN();
}

// Misuse after success: calls with a status of their own (Return twice on a closure or main, a
// closure of a returned function) report FAILED_PRECONDITION without touching the builder, so
// the complete module still compiles; ops have no status and record it (sticky).
TEST(misuse_after_success_keeps_builder) {
  SETUP();
  cml_shape_t s = SHAPE(CML_DTYPE_F32, 2);
  cml_shape_t bs = cml_shape_scalar(CML_DTYPE_BOOL);
  cml_value_t x = cml_parameter(f, "x", &s);
  cml_value_t p = cml_parameter(f, "p", &bs);
  cml_function_t *t = NULL, *e = NULL, *late = NULL;
  ASSERT_STATUS_OK(cml_function_new_closure(f, &t));
  ASSERT_STATUS_OK(cml_function_new_closure(f, &e));
  cml_value_t tn = cml_op_neg(t, x), en = cml_op_exp(e, x);
  ASSERT_STATUS_OK(cml_function_return(t, &tn, 1));
  ASSERT_STATUS_OK(cml_function_return(e, &en, 1));
  cml_status_t st = cml_function_return(t, &en, 1);  // twice, with another (foreign) value
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_FAILED_PRECONDITION);
  ASSERT_CONTAINS(cml_status_message(st), "closure #1");
  ASSERT_CONTAINS(cml_status_message(st), "already returned");
  cml_status_free(st);
  st = cml_function_new_closure(t, &late);
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_FAILED_PRECONDITION);
  ASSERT_TRUE(late == NULL);
  cml_status_free(st);
  ASSERT_STATUS_OK(cml_builder_status(b));
  ASSERT_EQ_INT(cml_function_output_count(t), 1);
  cml_value_t out[1];
  ASSERT_TRUE(cml_op_if(f, p, t, e, out));
  const cml_module_t* m = compile_main(b, out, 1, fb);
  ASSERT_TRUE(m != NULL);
  // t kept its first outputs: Neg of its captured x.
  const cml_ir_function_t* ft = &m->functions[1];
  ASSERT_EQ_INT(ft->output_count, 1);
  ASSERT_EQ_INT(m->nodes[m->values[ft->outputs[0]].node].op, CML_OP_NEG);
  TEARDOWN();
  {
    // A parameter of a returned closure: an op, so the error sticks.
    RESETUP();
    cml_function_t* c = NULL;
    ASSERT_STATUS_OK(cml_function_new_closure(f, &c));
    cml_value_t k = cml_constant_scalar_f64(c, CML_DTYPE_F32, 1.0);
    ASSERT_STATUS_OK(cml_function_return(c, &k, 1));
    ASSERT_EQ_INT(cml_parameter(c, "late", &s), CML_VALUE_INVALID);
    ASSERT_BUILDER_ERROR(b, CML_STATUS_FAILED_PRECONDITION, "Parameter", "closure #1",
                         "already returned");
    TEARDOWN();
  }
}

// Nesting depth: closures nest at most CML_MAX_NESTING_DEPTH levels (main is level 1); the
// error is sticky and names the depth and the limit. A returned closure counts in its parent's
// height, used or not, and so do callees: a named function's height limits where it is called.
TEST(nesting_depth_limit) {
  SETUP();
  cml_shape_t s = cml_shape_scalar(CML_DTYPE_F32);
  cml_value_t x = cml_parameter(f, "x", &s);
  cml_function_t* cur = f;
  for (int k = 2; k <= CML_MAX_NESTING_DEPTH; ++k) {
    cml_function_t* next = NULL;
    ASSERT_STATUS_OK(cml_function_new_closure(cur, &next));
    ASSERT_EQ_INT(next->depth, k);
    cur = next;
  }
  ASSERT_NE_INT(cml_op_neg(cur, x), CML_VALUE_INVALID);  // captured through 255 closures
  ASSERT_EQ_INT(cur->captures_outer.count, 1);
  cml_function_t* deeper = NULL;
  cml_status_t st = cml_function_new_closure(cur, &deeper);
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(cml_status_message(st), "nesting depth 257");
  ASSERT_CONTAINS(cml_status_message(st), "CML_MAX_NESTING_DEPTH (256)");
  cml_status_free(st);
  ASSERT_TRUE(deeper == NULL);
  ASSERT_BUILDER_ERROR(b, CML_STATUS_INVALID_ARGUMENT, "cml_function_new_closure",
                       "nesting depth 257");
  TEARDOWN();
  {
    // g holds an unused chain of 200 closures: its height is 201, so calling it from a closure
    // at depth 56 (56 + 201 = 257) fails, from depth 55 it fits.
    RESETUP();
    cml_function_t* g = NULL;
    ASSERT_STATUS_OK(cml_builder_new_function(b, "g", &g));
    cml_value_t gx = cml_parameter(g, "x", &s);
    cml_function_t* chain[201] = {g};
    for (int k = 1; k <= 200; ++k) {
      ASSERT_STATUS_OK(cml_function_new_closure(chain[k - 1], &chain[k]));
    }
    for (int k = 200; k >= 1; --k) {
      cml_value_t one = cml_constant_scalar_f64(chain[k], CML_DTYPE_F32, 1.0);
      ASSERT_STATUS_OK(cml_function_return(chain[k], &one, 1));
    }
    ASSERT_STATUS_OK(cml_function_return(g, &gx, 1));
    ASSERT_EQ_INT(g->height, 201);
    cml_value_t mx = cml_parameter(f, "x", &s);
    cml_function_t* c = f;
    for (int k = 2; k <= 55; ++k) ASSERT_STATUS_OK(cml_function_new_closure(c, &c));
    ASSERT_EQ_INT(c->depth, 55);
    cml_value_t out[1];
    ASSERT_TRUE(cml_op_call(c, g, &mx, 1, out));
    ASSERT_EQ_INT(c->height, 202);
    ASSERT_STATUS_OK(cml_function_new_closure(c, &c));
    ASSERT_FALSE(cml_op_call(c, g, &mx, 1, out));
    ASSERT_BUILDER_ERROR(b, CML_STATUS_INVALID_ARGUMENT, "Call", "function \"g\"",
                         "nests 201 levels", "nesting depth 257", "CML_MAX_NESTING_DEPTH (256)");
    TEARDOWN();
  }
}

// The longest chain of functions run one inside the other, starting at |fi|, computed from the
// IR alone (callees of Call, While, If, Sort nodes), as a backend that recurses would see it.
static uint32_t ir_chain_length(const cml_module_t* m, uint32_t fi) {
  uint32_t height[1024] = {0};
  if (m->function_count > 1024) return 0;
  for (uint32_t i = 0; i < m->function_count; ++i) height[i] = 1;
  for (bool changed = true; changed;) {  // a DAG: converges within function_count rounds
    changed = false;
    for (uint32_t i = 0; i < m->node_count; ++i) {
      const cml_ir_node_t* n = &m->nodes[i];
      uint32_t callees = n->op == CML_OP_WHILE || n->op == CML_OP_IF    ? 2
                         : n->op == CML_OP_CALL || n->op == CML_OP_SORT ? 1
                                                                        : 0;
      for (uint32_t k = 0; k < callees; ++k) {
        uint32_t h = height[n->attrs->functions[k]] + 1;
        if (h > height[n->function]) {
          height[n->function] = h;
          changed = true;
        }
      }
    }
  }
  return height[fi];
}

// At the limit exactly: main -> If branch (depth 2) -> g_254 -> ... -> g_1 is 256 functions deep.
TEST(nesting_depth_at_limit_in_ir) {
  SETUP();
  cml_shape_t s = cml_shape_scalar(CML_DTYPE_F32);
  cml_shape_t bs = cml_shape_scalar(CML_DTYPE_BOOL);
  cml_function_t* prev = NULL;
  for (int k = 1; k <= CML_MAX_NESTING_DEPTH - 2; ++k) {
    char name[16];
    snprintf(name, sizeof name, "g_%d", k);
    cml_function_t* g = NULL;
    ASSERT_STATUS_OK(cml_builder_new_function(b, name, &g));
    cml_value_t x = cml_parameter(g, "x", &s), y = x;
    if (prev) ASSERT_TRUE(cml_op_call(g, prev, &x, 1, &y));
    ASSERT_STATUS_OK(cml_function_return(g, &y, 1));
    prev = g;
  }
  cml_value_t x = cml_parameter(f, "x", &s);
  cml_value_t p = cml_parameter(f, "p", &bs);
  cml_function_t *t = NULL, *e = NULL;
  ASSERT_STATUS_OK(cml_function_new_closure(f, &t));
  ASSERT_STATUS_OK(cml_function_new_closure(f, &e));
  cml_value_t ty = CML_VALUE_INVALID;
  ASSERT_TRUE(cml_op_call(t, prev, &x, 1, &ty));
  ASSERT_STATUS_OK(cml_function_return(t, &ty, 1));
  ASSERT_STATUS_OK(cml_function_return(e, &x, 1));
  cml_value_t out[1];
  ASSERT_TRUE(cml_op_if(f, p, t, e, out));
  ASSERT_EQ_INT(f->height, CML_MAX_NESTING_DEPTH);
  const cml_module_t* m = compile_main(b, out, 1, fb);
  ASSERT_TRUE(m != NULL);
  ASSERT_EQ_INT(ir_chain_length(m, 0), CML_MAX_NESTING_DEPTH);
  TEARDOWN();
}

// Capture lookups are hashed: a closure using 5,000 distinct outer values captures each once,
// and a repeated use maps to the same captured value.
TEST(many_captures_hashed) {
  SETUP();
  enum { kCount = 5000 };
  cml_shape_t s = cml_shape_scalar(CML_DTYPE_F32);
  static cml_value_t outer[kCount], first[kCount];
  for (int i = 0; i < kCount; ++i) outer[i] = cml_constant_scalar_f64(f, CML_DTYPE_F32, i);
  cml_function_t *c1 = NULL, *c2 = NULL;
  ASSERT_STATUS_OK(cml_function_new_closure(f, &c1));
  ASSERT_STATUS_OK(cml_function_new_closure(c1, &c2));
  for (int i = 0; i < kCount; ++i) first[i] = cml_op_neg(c2, outer[i]);
  for (int i = kCount - 1; i >= 0; --i) {
    cml_value_t again = cml_op_neg(c2, outer[i]);
    ASSERT_NE_INT(again, CML_VALUE_INVALID);
    const cml__module_impl_t* impl = b->impl;
    uint32_t a = impl->nodes[impl->values[again & CML__VALUE_INDEX_MASK].node].inputs[0];
    uint32_t f0 = impl->nodes[impl->values[first[i] & CML__VALUE_INDEX_MASK].node].inputs[0];
    ASSERT_EQ_INT(a, f0);
  }
  ASSERT_EQ_INT(c1->captures_outer.count, kCount);
  ASSERT_EQ_INT(c2->captures_outer.count, kCount);
  ASSERT_EQ_INT(c2->captures_outer.data[17], c1->captures_inner.data[17]);
  ASSERT_EQ_INT(c1->captures_outer.data[17], outer[17] & CML__VALUE_INDEX_MASK);
  (void)s;
  TEARDOWN();
}

// No two live builders share a value tag while fewer than 256 are alive, so a value of one is
// always recognized as foreign by every other; beyond 255 live builders tags are shared, and
// creating builders still works.
TEST(builder_tags_distinct_while_alive) {
  fake_backend_t* fb = fake_backend_new();
  ASSERT_TRUE(fb != NULL);
  enum { kLive = 255 };
  cml_builder_t* builders[kLive + 1] = {NULL};
  cml_value_t values[kLive + 1] = {0};
  bool tag_used[256] = {false};
  cml_shape_t s = SHAPE(CML_DTYPE_F32, 2);
  for (int i = 0; i < kLive; ++i) {
    ASSERT_STATUS_OK(cml_builder_create(&fb->base, "tags", &builders[i]));
    values[i] = cml_parameter(cml_builder_main(builders[i]), "x", &s);
    ASSERT_NE_INT(values[i], CML_VALUE_INVALID);
    uint32_t tag = values[i] >> CML__VALUE_INDEX_BITS;
    ASSERT_TRUE(tag >= 1 && tag <= 255);
    ASSERT_FALSE(tag_used[tag]);
    tag_used[tag] = true;
  }
  // The value of builder 0 is foreign to each of the 254 others.
  for (int i = 1; i < kLive; ++i) {
    cml_function_t* fi = cml_builder_main(builders[i]);
    ASSERT_EQ_INT(cml_op_neg(fi, values[0]), CML_VALUE_INVALID);
    cml_builder_t* b = builders[i];
    ASSERT_BUILDER_ERROR(b, CML_STATUS_INVALID_ARGUMENT, "Neg", "another builder");
  }
  // A 256th live builder shares a tag but works on its own values.
  ASSERT_STATUS_OK(cml_builder_create(&fb->base, "shared", &builders[kLive]));
  cml_function_t* last = cml_builder_main(builders[kLive]);
  values[kLive] = cml_parameter(last, "x", &s);
  ASSERT_NE_INT(cml_op_neg(last, values[kLive]), CML_VALUE_INVALID);
  // Once builder 7 is gone, its tag is the only one nobody holds: the next builder gets it.
  uint32_t freed = values[7] >> CML__VALUE_INDEX_BITS;
  cml_builder_destroy(builders[7]);
  ASSERT_STATUS_OK(cml_builder_create(&fb->base, "again", &builders[7]));
  cml_value_t v7 = cml_parameter(cml_builder_main(builders[7]), "x", &s);
  ASSERT_EQ_INT(v7 >> CML__VALUE_INDEX_BITS, freed);
  for (int i = 0; i <= kLive; ++i) cml_builder_destroy(builders[i]);
  cml_backend_release(&fb->base);
}

typedef struct tag_thread_t {
  fake_backend_t* fb;
  cml_value_t foreign;  // a value of a builder that stays alive meanwhile
  atomic_int* collisions;
} tag_thread_t;

static void* tag_thread_main(void* arg) {
  tag_thread_t* t = (tag_thread_t*)arg;
  cml_shape_t s = SHAPE(CML_DTYPE_F32, 2);
  for (int i = 0; i < 300; ++i) {
    cml_builder_t* b = NULL;
    cml_status_t st = cml_builder_create(&t->fb->base, "thread", &b);
    if (st != CML_OK) {
      cml_status_free(st);
      atomic_fetch_add(t->collisions, 1000);
      return NULL;
    }
    cml_function_t* f = cml_builder_main(b);
    cml_value_t own = cml_parameter(f, "x", &s);
    if ((own >> CML__VALUE_INDEX_BITS) == (t->foreign >> CML__VALUE_INDEX_BITS) ||
        cml_op_neg(f, t->foreign) != CML_VALUE_INVALID) {
      atomic_fetch_add(t->collisions, 1);
    }
    cml_builder_destroy(b);
  }
  return NULL;
}

// Builders created and destroyed concurrently never get the tag of a live builder.
TEST(builder_tags_concurrent) {
  SETUP();
  cml_shape_t s = SHAPE(CML_DTYPE_F32, 2);
  cml_value_t x = cml_parameter(f, "x", &s);
  atomic_int collisions = 0;
  enum { kThreads = 4 };
  pthread_t threads[kThreads];
  tag_thread_t args[kThreads];
  for (int i = 0; i < kThreads; ++i) {
    args[i] = (tag_thread_t){fb, x, &collisions};
    ASSERT_EQ_INT(pthread_create(&threads[i], NULL, tag_thread_main, &args[i]), 0);
  }
  for (int i = 0; i < kThreads; ++i) pthread_join(threads[i], NULL);
  ASSERT_EQ_INT(atomic_load(&collisions), 0);
  ASSERT_NE_INT(cml_op_neg(f, x), CML_VALUE_INVALID);  // still valid in its own builder
  TEARDOWN();
}

TEST_MAIN(TEST_ENTRY(op_table), TEST_ENTRY(build_and_compile_mlp),
          TEST_ENTRY(executable_io_from_module), TEST_ENTRY(parameters_and_constants),
          TEST_ENTRY(parameter_duplicate_name), TEST_ENTRY(parameter_made_up_names_are_unique),
          TEST_ENTRY(constant_scalars_convert_like_convert_dtype),
          TEST_ENTRY(constant_scalar_i64_to_bf16_rounds_once), TEST_ENTRY(constant_copies_data),
          TEST_ENTRY(first_error_sticks), TEST_ENTRY(dtype_mismatch_message),
          TEST_ENTRY(wrong_kind_and_invalid_operand), TEST_ENTRY(value_from_another_builder),
          TEST_ENTRY(return_rules), TEST_ENTRY(compile_requires_return),
          TEST_ENTRY(named_functions), TEST_ENTRY(named_function_cannot_capture),
          TEST_ENTRY(compile_requires_named_functions_returned), TEST_ENTRY(capability_gate_op),
          TEST_ENTRY(capability_gate_dtype), TEST_ENTRY(capability_gate_functions),
          TEST_ENTRY(dot_falls_back_to_dot_general), TEST_ENTRY(closure_captures_propagate),
          TEST_ENTRY(convert_to_own_dtype_adds_no_node),
          TEST_ENTRY(closure_value_not_visible_in_parent),
          TEST_ENTRY(closure_must_return_before_use), TEST_ENTRY(while_loop),
          TEST_ENTRY(control_outputs_may_alias_operands),
          TEST_ENTRY(control_outputs_alias_invalid_on_failure), TEST_ENTRY(while_signature_errors),
          TEST_ENTRY(if_branch_mismatch), TEST_ENTRY(sort_comparator), TEST_ENTRY(plain_comparator),
          TEST_ENTRY(sort_comparator_errors), TEST_ENTRY(closure_of_other_function_rejected),
          TEST_ENTRY(multi_output_ops), TEST_ENTRY(attrs_defaults_in_module),
          TEST_ENTRY(dot_general_output_dtype), TEST_ENTRY(value_shape_accessor),
          TEST_ENTRY(output_shapes_checked_centrally),
          TEST_ENTRY(misuse_after_success_keeps_builder), TEST_ENTRY(nesting_depth_limit),
          TEST_ENTRY(nesting_depth_at_limit_in_ir), TEST_ENTRY(many_captures_hashed),
          TEST_ENTRY(builder_tags_distinct_while_alive), TEST_ENTRY(builder_tags_concurrent))
