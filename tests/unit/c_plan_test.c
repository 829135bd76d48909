// SPDX-License-Identifier: Apache-2.0
// tests/unit/c_plan_test.c: the C backend's planner and executor on hand-built IR modules:
// aliases, constants, in-place reuse, dead code, Call, If, While (with swaps and captures),
// nested closures, Sort (fast and general comparators), donation and concurrent executions.
// Expected values are computed by hand or by plain loops here.
#include <pthread.h>

#include "backends/c/engine_internal.h"
#include "cml/backend.h"
#include "test.h"

//===--- a tiny IR builder for tests ---===//

enum { TM_NODES = 128, TM_VALUES = 256, TM_FNS = 8, TM_IO = 8 };

typedef struct tmod_t {
  cml_module_t m;
  cml_ir_node_t nodes[TM_NODES];
  cml_ir_value_t values[TM_VALUES];
  cml_ir_function_t fns[TM_FNS];
  cml_ir_attrs_t attrs[TM_NODES];
  uint32_t inputs[TM_NODES][TM_IO];
  uint32_t fn_nodes[TM_FNS][TM_NODES];
  uint32_t fn_params[TM_FNS][TM_IO];
  uint32_t fn_cap_outer[TM_FNS][TM_IO], fn_cap_inner[TM_FNS][TM_IO];
  uint32_t fn_outputs[TM_FNS][TM_IO];
  _Alignas(64) uint8_t data[TM_NODES][128];
} tmod_t;

static tmod_t* tm_new(void) {
  tmod_t* t = calloc(1, sizeof *t);
  t->m.name = "test";
  t->m.nodes = t->nodes;
  t->m.values = t->values;
  t->m.value_count = 1;
  t->m.functions = t->fns;
  t->m.function_count = 1;
  t->m.num_devices = 1;
  t->fns[0].name = "main";
  t->fns[0].parent = -1;
  for (int f = 0; f < TM_FNS; ++f) {
    t->fns[f].nodes = t->fn_nodes[f];
    t->fns[f].params = t->fn_params[f];
    t->fns[f].captures_outer = t->fn_cap_outer[f];
    t->fns[f].captures_inner = t->fn_cap_inner[f];
    t->fns[f].outputs = t->fn_outputs[f];
  }
  return t;
}

static uint32_t tm_fn(tmod_t* t, int32_t parent, const char* name) {
  uint32_t f = t->m.function_count++;
  t->fns[f].name = name;
  t->fns[f].parent = parent;
  return f;
}

static cml_shape_t tm_shape(cml_dtype_t dtype, int32_t rank, int64_t d0, int64_t d1) {
  int64_t dims[2] = {d0, d1};
  return cml_shape_make(dtype, rank, dims);
}

// Adds a node; returns its first output value.
static uint32_t tm_node(tmod_t* t, uint32_t f, cml_op_t op, uint32_t n_in, const uint32_t* in,
                        uint32_t n_out, const cml_shape_t* out_shapes) {
  uint32_t ni = t->m.node_count++;
  cml_ir_node_t* n = &t->nodes[ni];
  n->op = op;
  n->function = f;
  n->input_count = n_in;
  for (uint32_t k = 0; k < n_in; ++k) t->inputs[ni][k] = in[k];
  n->inputs = t->inputs[ni];
  n->output_count = n_out;
  n->first_output = t->m.value_count;
  n->attrs = &t->attrs[ni];
  for (uint32_t o = 0; o < n_out; ++o) {
    t->values[t->m.value_count].node = ni;
    t->values[t->m.value_count].output = o;
    t->values[t->m.value_count].shape = out_shapes[o];
    ++t->m.value_count;
  }
  t->fn_nodes[f][t->fns[f].node_count++] = ni;
  return n->first_output;
}

static cml_ir_attrs_t* tm_attrs(tmod_t* t, uint32_t value) {
  return &t->attrs[t->values[value].node];
}

static const cml_shape_t* tm_vshape(tmod_t* t, uint32_t v) { return &t->values[v].shape; }

static uint32_t tm_param(tmod_t* t, uint32_t f, cml_shape_t s) {
  uint32_t v = tm_node(t, f, CML_OP_PARAMETER, 0, NULL, 1, &s);
  t->nodes[t->values[v].node].index = t->fns[f].param_count;
  t->fn_params[f][t->fns[f].param_count++] = v;
  return v;
}

static uint32_t tm_const(tmod_t* t, uint32_t f, cml_shape_t s, const void* data) {
  uint32_t v = tm_node(t, f, CML_OP_CONSTANT, 0, NULL, 1, &s);
  uint32_t ni = t->values[v].node;
  memcpy(t->data[ni], data, cml_shape_byte_size(&s));
  t->nodes[ni].data = t->data[ni];
  t->nodes[ni].data_size = cml_shape_byte_size(&s);
  return v;
}

static uint32_t tm_capture(tmod_t* t, uint32_t closure, uint32_t outer) {
  uint32_t v = tm_node(t, closure, CML_OP_CAPTURED_VALUE, 0, NULL, 1, tm_vshape(t, outer));
  uint32_t c = t->fns[closure].capture_count++;
  t->nodes[t->values[v].node].index = c;
  t->fn_cap_outer[closure][c] = outer;
  t->fn_cap_inner[closure][c] = v;
  return v;
}

static uint32_t tm_unary(tmod_t* t, uint32_t f, cml_op_t op, uint32_t x) {
  return tm_node(t, f, op, 1, &x, 1, tm_vshape(t, x));
}

static uint32_t tm_binary(tmod_t* t, uint32_t f, cml_op_t op, uint32_t a, uint32_t b) {
  uint32_t in[2] = {a, b};
  return tm_node(t, f, op, 2, in, 1, tm_vshape(t, a));
}

static uint32_t tm_compare(tmod_t* t, uint32_t f, cml_op_t op, uint32_t a, uint32_t b) {
  uint32_t in[2] = {a, b};
  cml_shape_t s = *tm_vshape(t, a);
  s.dtype = CML_DTYPE_BOOL;
  return tm_node(t, f, op, 2, in, 1, &s);
}

static void tm_return(tmod_t* t, uint32_t f, uint32_t n, const uint32_t* values) {
  for (uint32_t i = 0; i < n; ++i) t->fn_outputs[f][i] = values[i];
  t->fns[f].output_count = n;
}

//===--- compile / run helpers ---===//

static cml_backend_t* tm_backend(const char* config) {
  cml_backend_t* b = NULL;
  cml_status_t st = cml_backend_new_with_config(config, &b);
  if (st != CML_OK) {
    fprintf(stderr, "backend %s: %s\n", config, cml_status_message(st));
    cml_status_free(st);
    return NULL;
  }
  return b;
}

static cml_status_t tm_compile(cml_backend_t* b, tmod_t* t, cmlc_executable_t** out) {
  cmlc_executable_t* exe = calloc(1, sizeof *exe);
  pthread_mutex_init(&exe->mutex, NULL);
  cml_status_t st = cmlc_plan_build((cmlc_backend_t*)b, &t->m, exe);
  if (st != CML_OK) {
    cmlc_plan_deinit(exe);
    pthread_mutex_destroy(&exe->mutex);
    free(exe);
    *out = NULL;
    return st;
  }
  *out = exe;
  return CML_OK;
}

static void tm_exe_free(cmlc_executable_t* exe) {
  if (!exe) return;
  cmlc_exec_free_contexts(exe);
  cmlc_plan_deinit(exe);
  pthread_mutex_destroy(&exe->mutex);
  free(exe);
}

static cml_buffer_t* tm_buffer(cml_backend_t* b, cml_shape_t s, const void* data) {
  cml_buffer_t* buf = NULL;
  cml_status_t st = cml_buffer_from_host(b, 0, &s, data, cml_shape_byte_size(&s), &buf);
  if (st != CML_OK) {
    fprintf(stderr, "buffer: %s\n", cml_status_message(st));
    cml_status_free(st);
  }
  return buf;
}

static cml_status_t tm_run(cmlc_executable_t* exe, cml_buffer_t* const* inputs, const bool* donate,
                           cml_buffer_t** outs) {
  bool none[TM_IO] = {false};
  return cmlc_execute(exe, inputs, donate ? donate : none, 0, NULL, outs);
}

static void tm_release_all(cml_buffer_t** bufs, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (bufs[i]) cml_buffer_release(bufs[i]);
    bufs[i] = NULL;
  }
}

//===--- tests ---===//

TEST(aliases_constants_and_copies) {
  cml_backend_t* b = tm_backend("c:threads=2");
  ASSERT_TRUE(b != NULL);
  tmod_t* t = tm_new();
  uint32_t x = tm_param(t, 0, tm_shape(CML_DTYPE_F32, 2, 2, 3));
  cml_shape_t s32 = tm_shape(CML_DTYPE_F32, 2, 3, 2);
  uint32_t r = tm_node(t, 0, CML_OP_RESHAPE, 1, &x, 1, &s32);
  uint32_t id = tm_unary(t, 0, CML_OP_IDENTITY, x);
  float cdata[2] = {7, 8};
  uint32_t c = tm_const(t, 0, tm_shape(CML_DTYPE_F32, 1, 2, 0), cdata);
  cml_shape_t si = tm_shape(CML_DTYPE_I32, 2, 2, 3);
  uint32_t bc = tm_node(t, 0, CML_OP_BITCAST, 1, &x, 1, &si);
  uint32_t outs_v[5] = {r, id, c, bc, x};
  tm_return(t, 0, 5, outs_v);
  cmlc_executable_t* exe = NULL;
  ASSERT_STATUS_OK(tm_compile(b, t, &exe));
  ASSERT_EQ_U64(exe->functions[0].arena_size, 0);  // nothing computed: no arena
  float xin[6] = {1, 2, 3, 4, 5, 6.5f};
  cml_buffer_t* in = tm_buffer(b, tm_shape(CML_DTYPE_F32, 2, 2, 3), xin);
  cml_buffer_t* outs[5] = {0};
  ASSERT_STATUS_OK(tm_run(exe, &in, NULL, outs));
  float got[6];
  for (int o = 0; o < 2; ++o) {
    ASSERT_STATUS_OK(cml_buffer_copy_to_host(outs[o], got, sizeof got));
    for (int i = 0; i < 6; ++i) ASSERT_EQ_DBL(got[i], xin[i]);
    ASSERT_TRUE(((cmlc_buffer_t*)outs[o])->data != ((cmlc_buffer_t*)in)->data);
  }
  ASSERT_EQ_INT(cml_buffer_shape(outs[0])->dims[0], 3);
  float cgot[2];
  ASSERT_STATUS_OK(cml_buffer_copy_to_host(outs[2], cgot, sizeof cgot));
  ASSERT_EQ_DBL(cgot[0], 7);
  ASSERT_EQ_DBL(cgot[1], 8);
  int32_t bits[6];
  ASSERT_STATUS_OK(cml_buffer_copy_to_host(outs[3], bits, sizeof bits));
  int32_t want_bits;
  memcpy(&want_bits, &xin[5], 4);
  ASSERT_EQ_INT(bits[5], want_bits);
  ASSERT_TRUE(((cmlc_buffer_t*)outs[4])->data != ((cmlc_buffer_t*)in)->data);
  tm_release_all(outs, 5);
  cml_buffer_release(in);
  tm_exe_free(exe);
  free(t);
  cml_backend_release(b);
}

TEST(in_place_and_arena_reuse) {
  // Without fusion (which would compute the whole chain in one loop, with no arena at all).
  cml_backend_t* b = tm_backend("c:threads=2,fusion=false");
  ASSERT_TRUE(b != NULL);
  tmod_t* t = tm_new();
  enum { N = 1000 };
  uint32_t x = tm_param(t, 0, tm_shape(CML_DTYPE_F32, 1, N, 0));
  uint32_t y = tm_binary(t, 0, CML_OP_ADD, x, x);                      // 2x
  for (int i = 0; i < 10; ++i) y = tm_binary(t, 0, CML_OP_ADD, y, x);  // 12x
  uint32_t dead = tm_binary(t, 0, CML_OP_MUL, x, x);
  (void)dead;
  uint32_t w = tm_binary(t, 0, CML_OP_MUL, y, y);  // 144 x^2, written into the output buffer
  tm_return(t, 0, 1, &w);
  cmlc_executable_t* exe = NULL;
  ASSERT_STATUS_OK(tm_compile(b, t, &exe));
  // Every Add reuses the slot of the previous one: one f32[1000] slot (rounded to 64 bytes).
  ASSERT_EQ_U64(exe->functions[0].arena_size, 4032);
  float xin[N];
  for (int i = 0; i < N; ++i) xin[i] = (float)(i % 17) - 8.0f;
  cml_buffer_t* in = tm_buffer(b, tm_shape(CML_DTYPE_F32, 1, N, 0), xin);
  for (int round = 0; round < 3; ++round) {
    cml_buffer_t* out = NULL;
    ASSERT_STATUS_OK(tm_run(exe, &in, NULL, &out));
    static float got[N];
    ASSERT_STATUS_OK(cml_buffer_copy_to_host(out, got, sizeof got));
    cml_buffer_release(out);
    for (int i = 0; i < N; ++i) {
      float yy = xin[i] + xin[i];
      for (int k = 0; k < 10; ++k) yy += xin[i];
      ASSERT_EQ_DBL(got[i], yy * yy);
    }
  }
  cml_buffer_release(in);
  tm_exe_free(exe);
  free(t);
  cml_backend_release(b);
}

TEST(dead_code_and_missing_kernels) {
  cml_backend_t* b = tm_backend("c");
  ASSERT_TRUE(b != NULL);
  tmod_t* t = tm_new();
  uint32_t x = tm_param(t, 0, tm_shape(CML_DTYPE_F32, 1, 4, 0));
  uint32_t no_kernel = tm_unary(t, 0, CML_OP_BLOCK_FOR_DOT_GENERAL, x);
  tm_return(t, 0, 1, &x);
  cmlc_executable_t* exe = NULL;
  ASSERT_STATUS_OK(tm_compile(b, t, &exe));  // the dead node is never looked up
  tm_exe_free(exe);
  tm_return(t, 0, 1, &no_kernel);
  cml_status_t st = tm_compile(b, t, &exe);
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_UNIMPLEMENTED);
  ASSERT_CONTAINS(cml_status_message(st), "no kernel for BlockForDotGeneral");
  ASSERT_CONTAINS(cml_status_message(st), "Float32");
  cml_status_free(st);
  free(t);
  cml_backend_release(b);
}

TEST(call_named_function) {
  cml_backend_t* b = tm_backend("c");
  ASSERT_TRUE(b != NULL);
  tmod_t* t = tm_new();
  cml_shape_t s = tm_shape(CML_DTYPE_I32, 1, 3, 0);
  uint32_t x = tm_param(t, 0, s);
  uint32_t y = tm_param(t, 0, s);
  uint32_t g = tm_fn(t, -1, "g");
  uint32_t ga = tm_param(t, g, s);
  uint32_t gb = tm_param(t, g, s);
  uint32_t gsum = tm_binary(t, g, CML_OP_ADD, ga, gb);
  uint32_t gouts[3] = {gb, ga, gsum};
  tm_return(t, g, 3, gouts);
  cml_shape_t shapes[3] = {s, s, s};
  uint32_t call_in[2] = {x, y};
  uint32_t c = tm_node(t, 0, CML_OP_CALL, 2, call_in, 3, shapes);
  tm_attrs(t, c)->functions[0] = g;
  // Call twice: the second call's outputs must not disturb the first's.
  uint32_t c2 = tm_node(t, 0, CML_OP_CALL, 2, call_in, 3, shapes);
  tm_attrs(t, c2)->functions[0] = g;
  uint32_t sum = tm_binary(t, 0, CML_OP_ADD, c + 2, c2 + 2);
  uint32_t outs_v[3] = {c, c + 1, sum};
  tm_return(t, 0, 3, outs_v);
  cmlc_executable_t* exe = NULL;
  ASSERT_STATUS_OK(tm_compile(b, t, &exe));
  int32_t xd[3] = {1, 2, 3}, yd[3] = {10, 20, 30};
  cml_buffer_t* in[2] = {tm_buffer(b, s, xd), tm_buffer(b, s, yd)};
  cml_buffer_t* outs[3] = {0};
  ASSERT_STATUS_OK(tm_run(exe, in, NULL, outs));
  int32_t got[3];
  ASSERT_STATUS_OK(cml_buffer_copy_to_host(outs[0], got, sizeof got));
  for (int i = 0; i < 3; ++i) ASSERT_EQ_INT(got[i], yd[i]);
  ASSERT_STATUS_OK(cml_buffer_copy_to_host(outs[1], got, sizeof got));
  for (int i = 0; i < 3; ++i) ASSERT_EQ_INT(got[i], xd[i]);
  ASSERT_STATUS_OK(cml_buffer_copy_to_host(outs[2], got, sizeof got));
  for (int i = 0; i < 3; ++i) ASSERT_EQ_INT(got[i], 2 * (xd[i] + yd[i]));
  tm_release_all(outs, 3);
  tm_release_all(in, 2);
  tm_exe_free(exe);
  free(t);
  cml_backend_release(b);
}

TEST(if_with_captures) {
  cml_backend_t* b = tm_backend("c");
  ASSERT_TRUE(b != NULL);
  tmod_t* t = tm_new();
  cml_shape_t s = tm_shape(CML_DTYPE_I32, 1, 3, 0);
  uint32_t p = tm_param(t, 0, tm_shape(CML_DTYPE_BOOL, 0, 0, 0));
  uint32_t x = tm_param(t, 0, s);
  uint32_t y = tm_param(t, 0, s);
  uint32_t tb = tm_fn(t, 0, "");
  uint32_t tx = tm_capture(t, tb, x);
  uint32_t t2 = tm_binary(t, tb, CML_OP_ADD, tx, tx);
  tm_return(t, tb, 1, &t2);
  uint32_t fb = tm_fn(t, 0, "");
  uint32_t fy = tm_capture(t, fb, y);
  tm_return(t, fb, 1, &fy);
  uint32_t r = tm_node(t, 0, CML_OP_IF, 1, &p, 1, &s);
  tm_attrs(t, r)->functions[0] = tb;
  tm_attrs(t, r)->functions[1] = fb;
  tm_return(t, 0, 1, &r);
  cmlc_executable_t* exe = NULL;
  ASSERT_STATUS_OK(tm_compile(b, t, &exe));
  int32_t xd[3] = {1, 2, 3}, yd[3] = {10, 20, 30};
  for (int pv = 0; pv < 2; ++pv) {
    uint8_t pd = (uint8_t)pv;
    cml_buffer_t* in[3] = {tm_buffer(b, tm_shape(CML_DTYPE_BOOL, 0, 0, 0), &pd),
                           tm_buffer(b, s, xd), tm_buffer(b, s, yd)};
    cml_buffer_t* out = NULL;
    ASSERT_STATUS_OK(tm_run(exe, in, NULL, &out));
    int32_t got[3];
    ASSERT_STATUS_OK(cml_buffer_copy_to_host(out, got, sizeof got));
    for (int i = 0; i < 3; ++i) ASSERT_EQ_INT(got[i], pv ? 2 * xd[i] : yd[i]);
    cml_buffer_release(out);
    tm_release_all(in, 3);
  }
  tm_exe_free(exe);
  free(t);
  cml_backend_release(b);
}

// sum 1..n with a While whose condition captures n.
static tmod_t* tm_while_sum(void) {
  tmod_t* t = tm_new();
  cml_shape_t s = tm_shape(CML_DTYPE_I32, 0, 0, 0);
  uint32_t n = tm_param(t, 0, s);
  int32_t one = 1, zero = 0;
  uint32_t i0 = tm_const(t, 0, s, &one);
  uint32_t s0 = tm_const(t, 0, s, &zero);
  uint32_t cond = tm_fn(t, 0, "");
  uint32_t ci = tm_param(t, cond, s);
  tm_param(t, cond, s);
  uint32_t cn = tm_capture(t, cond, n);
  uint32_t le = tm_compare(t, cond, CML_OP_LESS_OR_EQUAL, ci, cn);
  tm_return(t, cond, 1, &le);
  uint32_t body = tm_fn(t, 0, "");
  uint32_t bi = tm_param(t, body, s);
  uint32_t bs = tm_param(t, body, s);
  uint32_t bone = tm_const(t, body, s, &one);
  uint32_t ni = tm_binary(t, body, CML_OP_ADD, bi, bone);
  uint32_t ns = tm_binary(t, body, CML_OP_ADD, bs, bi);
  uint32_t bout[2] = {ni, ns};
  tm_return(t, body, 2, bout);
  uint32_t win[2] = {i0, s0};
  cml_shape_t ss[2] = {s, s};
  uint32_t w = tm_node(t, 0, CML_OP_WHILE, 2, win, 2, ss);
  tm_attrs(t, w)->functions[0] = cond;
  tm_attrs(t, w)->functions[1] = body;
  uint32_t outs_v[2] = {w + 1, w};
  tm_return(t, 0, 2, outs_v);
  return t;
}

static int32_t tm_run_sum(cml_backend_t* b, cmlc_executable_t* exe, int32_t n, int* failed) {
  cml_buffer_t* in = tm_buffer(b, tm_shape(CML_DTYPE_I32, 0, 0, 0), &n);
  cml_buffer_t* outs[2] = {0};
  cml_status_t st = tm_run(exe, &in, NULL, outs);
  int32_t got[2] = {-1, -1};
  if (st == CML_OK) {
    cml_status_free(cml_buffer_copy_to_host(outs[0], &got[0], 4));
    cml_status_free(cml_buffer_copy_to_host(outs[1], &got[1], 4));
  } else {
    cml_status_free(st);
    *failed = 1;
  }
  if (got[1] != (n >= 1 ? n + 1 : 1)) *failed = 1;
  tm_release_all(outs, 2);
  cml_buffer_release(in);
  return got[0];
}

TEST(while_sum) {
  cml_backend_t* b = tm_backend("c");
  ASSERT_TRUE(b != NULL);
  tmod_t* t = tm_while_sum();
  cmlc_executable_t* exe = NULL;
  ASSERT_STATUS_OK(tm_compile(b, t, &exe));
  int failed = 0;
  ASSERT_EQ_INT(tm_run_sum(b, exe, 10, &failed), 55);
  ASSERT_EQ_INT(tm_run_sum(b, exe, 0, &failed), 0);  // zero iterations
  ASSERT_EQ_INT(tm_run_sum(b, exe, 1, &failed), 1);
  ASSERT_EQ_INT(tm_run_sum(b, exe, 100, &failed), 5050);
  ASSERT_EQ_INT(failed, 0);
  tm_exe_free(exe);
  free(t);
  cml_backend_release(b);
}

// One-element arithmetic and comparisons in loop bodies are planned as SCALAR steps (run
// inline), except in reference mode, where the kernels stay the oracle; both give the sum.
TEST(scalar_steps_in_loop_bodies) {
  const char* configs[2] = {"c", "c:reference=true"};
  for (int c = 0; c < 2; ++c) {
    cml_backend_t* b = tm_backend(configs[c]);
    ASSERT_TRUE(b != NULL);
    tmod_t* t = tm_while_sum();
    cmlc_executable_t* exe = NULL;
    ASSERT_STATUS_OK(tm_compile(b, t, &exe));
    const uint8_t want = c == 0 ? CMLC_STEP_SCALAR : CMLC_STEP_KERNEL;
    for (uint32_t fi = 1; fi <= 2; ++fi) {  // the condition and the body
      const cmlc_function_plan_t* fp = &exe->functions[fi];
      ASSERT_EQ_INT(fp->step_count, fi == 1 ? 1 : 2);
      for (uint32_t k = 0; k < fp->step_count; ++k) {
        ASSERT_EQ_INT(fp->steps[k].kind, want);
        ASSERT_EQ_INT(fp->steps[k].scalar_code != 0, c == 0);
      }
    }
    // Exact byte sizes are precomputed for every value of the loop state.
    ASSERT_EQ_INT(exe->values[t->m.functions[0].outputs[0]].bytes, 4);
    int failed = 0;
    ASSERT_EQ_INT(tm_run_sum(b, exe, 10, &failed), 55);
    ASSERT_EQ_INT(tm_run_sum(b, exe, 1000, &failed), 500500);
    ASSERT_EQ_INT(failed, 0);
    tm_exe_free(exe);
    free(t);
    cml_backend_release(b);
  }
}

typedef struct conc_arg_t {
  cml_backend_t* backend;
  cmlc_executable_t* exe;
  int failures;
} conc_arg_t;

static void* tm_concurrent_main(void* arg) {
  conc_arg_t* a = (conc_arg_t*)arg;
  for (int r = 0; r < 50; ++r) {
    int32_t n = (r * 7) % 40;
    int failed = 0;
    int32_t got = tm_run_sum(a->backend, a->exe, n, &failed);
    if (failed || got != n * (n + 1) / 2) ++a->failures;
  }
  return NULL;
}

TEST(concurrent_executions) {
  cml_backend_t* b = tm_backend("c:threads=2");
  ASSERT_TRUE(b != NULL);
  tmod_t* t = tm_while_sum();
  cmlc_executable_t* exe = NULL;
  ASSERT_STATUS_OK(tm_compile(b, t, &exe));
  pthread_t th[4];
  conc_arg_t args[4];
  for (int i = 0; i < 4; ++i) {
    args[i] = (conc_arg_t){b, exe, 0};
    pthread_create(&th[i], NULL, tm_concurrent_main, &args[i]);
  }
  int failures = 0;
  for (int i = 0; i < 4; ++i) {
    pthread_join(th[i], NULL);
    failures += args[i].failures;
  }
  ASSERT_EQ_INT(failures, 0);
  tm_exe_free(exe);
  free(t);
  cml_backend_release(b);
}

// State (c, a, b) -> (c + 1, b, a) while c < 3: a and b are swapped three times, which needs
// the two copies of the state.
TEST(while_swaps_state) {
  cml_backend_t* b = tm_backend("c");
  ASSERT_TRUE(b != NULL);
  tmod_t* t = tm_new();
  cml_shape_t sc = tm_shape(CML_DTYPE_I32, 0, 0, 0);
  cml_shape_t sv = tm_shape(CML_DTYPE_F32, 1, 4, 0);
  uint32_t a = tm_param(t, 0, sv);
  uint32_t bb = tm_param(t, 0, sv);
  int32_t zero = 0, three = 3, one = 1;
  uint32_t c0 = tm_const(t, 0, sc, &zero);
  uint32_t lim = tm_const(t, 0, sc, &three);
  uint32_t cond = tm_fn(t, 0, "");
  uint32_t cc = tm_param(t, cond, sc);
  tm_param(t, cond, sv);
  tm_param(t, cond, sv);
  uint32_t cl = tm_capture(t, cond, lim);
  uint32_t lt = tm_compare(t, cond, CML_OP_LESS_THAN, cc, cl);
  tm_return(t, cond, 1, &lt);
  uint32_t body = tm_fn(t, 0, "");
  uint32_t bc = tm_param(t, body, sc);
  uint32_t ba = tm_param(t, body, sv);
  uint32_t bbv = tm_param(t, body, sv);
  uint32_t bone = tm_const(t, body, sc, &one);
  uint32_t nc = tm_binary(t, body, CML_OP_ADD, bc, bone);
  uint32_t bout[3] = {nc, bbv, ba};
  tm_return(t, body, 3, bout);
  uint32_t win[3] = {c0, a, bb};
  cml_shape_t ss[3] = {sc, sv, sv};
  uint32_t w = tm_node(t, 0, CML_OP_WHILE, 3, win, 3, ss);
  tm_attrs(t, w)->functions[0] = cond;
  tm_attrs(t, w)->functions[1] = body;
  uint32_t outs_v[3] = {w, w + 1, w + 2};
  tm_return(t, 0, 3, outs_v);
  cmlc_executable_t* exe = NULL;
  ASSERT_STATUS_OK(tm_compile(b, t, &exe));
  float ad[4] = {1, 2, 3, 4}, bd[4] = {-1, -2, -3, -4};
  cml_buffer_t* in[2] = {tm_buffer(b, sv, ad), tm_buffer(b, sv, bd)};
  cml_buffer_t* outs[3] = {0};
  ASSERT_STATUS_OK(tm_run(exe, in, NULL, outs));
  int32_t c;
  float ga[4], gb[4];
  ASSERT_STATUS_OK(cml_buffer_copy_to_host(outs[0], &c, 4));
  ASSERT_STATUS_OK(cml_buffer_copy_to_host(outs[1], ga, sizeof ga));
  ASSERT_STATUS_OK(cml_buffer_copy_to_host(outs[2], gb, sizeof gb));
  ASSERT_EQ_INT(c, 3);
  for (int i = 0; i < 4; ++i) {
    ASSERT_EQ_DBL(ga[i], bd[i]);  // odd number of swaps
    ASSERT_EQ_DBL(gb[i], ad[i]);
  }
  tm_release_all(outs, 3);
  tm_release_all(in, 2);
  tm_exe_free(exe);
  free(t);
  cml_backend_release(b);
}

// A While body containing an If whose branch uses a value of main through the body's capture.
TEST(nested_closures) {
  cml_backend_t* b = tm_backend("c");
  ASSERT_TRUE(b != NULL);
  tmod_t* t = tm_new();
  cml_shape_t s = tm_shape(CML_DTYPE_I32, 0, 0, 0);
  uint32_t step = tm_param(t, 0, s);  // added on even iterations
  uint32_t n = tm_param(t, 0, s);
  int32_t zero = 0, one = 1;
  uint32_t i0 = tm_const(t, 0, s, &zero);
  uint32_t acc0 = tm_const(t, 0, s, &zero);
  uint32_t cond = tm_fn(t, 0, "");
  uint32_t ci = tm_param(t, cond, s);
  tm_param(t, cond, s);
  uint32_t cn = tm_capture(t, cond, n);
  uint32_t lt = tm_compare(t, cond, CML_OP_LESS_THAN, ci, cn);
  tm_return(t, cond, 1, &lt);
  uint32_t body = tm_fn(t, 0, "");
  uint32_t bi = tm_param(t, body, s);
  uint32_t bacc = tm_param(t, body, s);
  uint32_t bstep = tm_capture(t, body, step);
  uint32_t bone = tm_const(t, body, s, &one);
  uint32_t bit = tm_binary(t, body, CML_OP_BITWISE_AND, bi, bone);
  int32_t zero2 = 0;
  uint32_t bzero = tm_const(t, body, s, &zero2);
  uint32_t even = tm_compare(t, body, CML_OP_EQUAL, bit, bzero);
  uint32_t tb = tm_fn(t, (int32_t)body, "");
  uint32_t tstep = tm_capture(t, tb, bstep);
  tm_return(t, tb, 1, &tstep);
  uint32_t fb = tm_fn(t, (int32_t)body, "");
  uint32_t fone = tm_capture(t, fb, bone);
  tm_return(t, fb, 1, &fone);
  uint32_t inc = tm_node(t, body, CML_OP_IF, 1, &even, 1, &s);
  tm_attrs(t, inc)->functions[0] = tb;
  tm_attrs(t, inc)->functions[1] = fb;
  uint32_t nacc = tm_binary(t, body, CML_OP_ADD, bacc, inc);
  uint32_t ni = tm_binary(t, body, CML_OP_ADD, bi, bone);
  uint32_t bout[2] = {ni, nacc};
  tm_return(t, body, 2, bout);
  uint32_t win[2] = {i0, acc0};
  cml_shape_t ss[2] = {s, s};
  uint32_t w = tm_node(t, 0, CML_OP_WHILE, 2, win, 2, ss);
  tm_attrs(t, w)->functions[0] = cond;
  tm_attrs(t, w)->functions[1] = body;
  uint32_t res = w + 1;
  tm_return(t, 0, 1, &res);
  cmlc_executable_t* exe = NULL;
  ASSERT_STATUS_OK(tm_compile(b, t, &exe));
  int32_t stepv = 100, nv = 7;
  cml_buffer_t* in[2] = {tm_buffer(b, s, &stepv), tm_buffer(b, s, &nv)};
  cml_buffer_t* out = NULL;
  ASSERT_STATUS_OK(tm_run(exe, in, NULL, &out));
  int32_t got;
  ASSERT_STATUS_OK(cml_buffer_copy_to_host(out, &got, 4));
  int32_t want = 0;
  for (int32_t i = 0; i < nv; ++i) want += (i % 2 == 0) ? stepv : 1;
  ASSERT_EQ_INT(got, want);  // 4 * 100 + 3
  cml_buffer_release(out);
  tm_release_all(in, 2);
  tm_exe_free(exe);
  free(t);
  cml_backend_release(b);
}

// Sorts keys [rows, cols] (f32 or i32) with an i32 payload (the flat index) along axis 1 and
// returns both outputs (|got_keys| in the key dtype's bytes). |general|: the comparator the fast
// path does not recognize (Neg of both sides, swapped).
static void tm_sort_prefix(int* test_failed_, cml_dtype_t kd, cml_op_t cmp_op, bool general,
                           int64_t rows, int64_t cols, int64_t prefix, const void* keys,
                           void* got_keys, int32_t* got_payload, int64_t* prepared);

static void tm_sort_any(int* test_failed_, cml_dtype_t kd, cml_op_t cmp_op, bool general,
                        int64_t rows, int64_t cols, const void* keys, void* got_keys,
                        int32_t* got_payload) {
  tm_sort_prefix(test_failed_, kd, cmp_op, general, rows, cols, 0, keys, got_keys, got_payload,
                 NULL);
}

// Sorts |rows| x |cols| keys of |kd| with an i32 payload (each element's flat index) along
// axis 1 (tm_sort_any); with |prefix| > 0 the results are Slices of the first |prefix| columns
// of each line (top-k: got_keys and got_payload hold rows x prefix; with |prefix| negative, the
// first -prefix, and the function also returns the whole sorted keys, a third result that
// needs whole lines). |prepared| (optional):
// the executable's count of steps with prepared data (Sort's read prefix).
static void tm_sort_prefix(int* test_failed_, cml_dtype_t kd, cml_op_t cmp_op, bool general,
                           int64_t rows, int64_t cols, int64_t prefix, const void* keys,
                           void* got_keys, int32_t* got_payload, int64_t* prepared) {
  // The general comparator on the reference backend, which calls it (elsewhere it runs as a
  // program: c_sort_program_test).
  cml_backend_t* b = tm_backend(general ? "c:threads=2,reference=true" : "c:threads=2");
  ASSERT_TRUE(b != NULL);
  tmod_t* t = tm_new();
  cml_shape_t sk = tm_shape(kd, 2, rows, cols);
  cml_shape_t sp = tm_shape(CML_DTYPE_I32, 2, rows, cols);
  uint32_t k = tm_param(t, 0, sk);
  uint32_t p = tm_param(t, 0, sp);
  uint32_t cmp = tm_fn(t, 0, "");
  cml_shape_t fs = tm_shape(kd, 0, 0, 0), is = tm_shape(CML_DTYPE_I32, 0, 0, 0);
  uint32_t l0 = tm_param(t, cmp, fs);
  uint32_t r0 = tm_param(t, cmp, fs);
  tm_param(t, cmp, is);
  tm_param(t, cmp, is);
  uint32_t res = general ? tm_compare(t, cmp, cmp_op, tm_unary(t, cmp, CML_OP_NEG, r0),
                                      tm_unary(t, cmp, CML_OP_NEG, l0))
                         : tm_compare(t, cmp, cmp_op, l0, r0);
  tm_return(t, cmp, 1, &res);
  uint32_t sin[2] = {k, p};
  cml_shape_t ss[2] = {sk, sp};
  uint32_t s = tm_node(t, 0, CML_OP_SORT, 2, sin, 2, ss);
  tm_attrs(t, s)->functions[0] = cmp;
  tm_attrs(t, s)->axis = 1;
  tm_attrs(t, s)->flag = true;
  uint32_t outs_v[2] = {s, s + 1};
  cml_shape_t rk = sk, rp = sp;
  const bool also_whole = prefix < 0;
  if (also_whole) prefix = -prefix;
  if (prefix > 0) {
    rk.dims[1] = rp.dims[1] = prefix;
    for (int i = 0; i < 2; ++i) {
      uint32_t sl = tm_node(t, 0, CML_OP_SLICE, 1, &outs_v[i], 1, i ? &rp : &rk);
      cml_ir_attrs_t* a = tm_attrs(t, sl);
      a->limits[0] = rows;
      a->limits[1] = prefix;
      a->strides[0] = a->strides[1] = 1;
      outs_v[i] = sl;
    }
  }
  uint32_t results[3] = {outs_v[0], outs_v[1], s};
  tm_return(t, 0, also_whole ? 3 : 2, results);
  cmlc_executable_t* exe = NULL;
  ASSERT_STATUS_OK(tm_compile(b, t, &exe));
  if (prepared) *prepared = (int64_t)exe->stats.prepared;
  int32_t* payload = malloc(sizeof(int32_t) * (size_t)(rows * cols));
  ASSERT_TRUE(payload != NULL);
  for (int64_t i = 0; i < rows * cols; ++i) payload[i] = (int32_t)i;
  cml_buffer_t* in[2] = {tm_buffer(b, sk, keys), tm_buffer(b, sp, payload)};
  cml_buffer_t* outs[3] = {0};
  ASSERT_STATUS_OK(tm_run(exe, in, NULL, outs));
  ASSERT_STATUS_OK(cml_buffer_copy_to_host(outs[0], got_keys, cml_shape_byte_size(&rk)));
  ASSERT_STATUS_OK(cml_buffer_copy_to_host(outs[1], got_payload, cml_shape_byte_size(&rp)));
  tm_release_all(outs, also_whole ? 3 : 2);
  tm_release_all(in, 2);
  tm_exe_free(exe);
  free(payload);
  free(t);
  cml_backend_release(b);
}

// Sort f32[2, 6] keys with i32 payload along axis 1 (tm_sort_any) against the expected keys
// and payload.
static void tm_sort_case(int* test_failed_, cml_op_t cmp_op, bool general, const float* keys,
                         const float* want_keys, const int32_t* want_payload) {
  float gk[12];
  int32_t gp[12];
  tm_sort_any(test_failed_, CML_DTYPE_F32, cmp_op, general, 2, 6, keys, gk, gp);
  if (*test_failed_) return;
  for (int i = 0; i < 12; ++i) {
    ASSERT_EQ_DBL(gk[i], want_keys[i]);
    ASSERT_EQ_INT(gp[i], want_payload[i]);
  }
}

TEST(sort_fast_and_general_stable) {
  const float keys[12] = {3, 1, 2, 1, 5, 0, /* row 1 */ -1, 4, 4, -2, 4, 0};
  // Ascending, stable: equal keys keep their original order (payload = original flat index).
  const float asc[12] = {0, 1, 1, 2, 3, 5, -2, -1, 0, 4, 4, 4};
  const int32_t asc_p[12] = {5, 1, 3, 2, 0, 4, 9, 6, 11, 7, 8, 10};
  tm_sort_case(test_failed_, CML_OP_LESS_THAN, false, keys, asc, asc_p);
  if (*test_failed_) return;
  tm_sort_case(test_failed_, CML_OP_LESS_THAN, true, keys, asc, asc_p);
  if (*test_failed_) return;
  const float desc[12] = {5, 3, 2, 1, 1, 0, 4, 4, 4, 0, -1, -2};
  const int32_t desc_p[12] = {4, 0, 2, 1, 3, 5, 7, 8, 10, 11, 6, 9};
  tm_sort_case(test_failed_, CML_OP_GREATER_THAN, false, keys, desc, desc_p);
}

TEST(sort_typed_lines_match_general) {
  // The fast comparators on f32 and i32 keys sort (key, index) pairs with the comparison
  // inlined; the result must be the general path's, permutation included: duplicates (stable
  // order), infinities, -0 and +0, lines of 17 to 1000. (NaN keys have no place under the
  // general comparator; the fast paths' placement is the compliance cases' control/sort_nan_*.)
  static const int64_t shapes[][2] = {{3, 1000}, {4, 17}, {2, 33}, {1, 257}};
  static const cml_op_t ops[2] = {CML_OP_LESS_THAN, CML_OP_GREATER_THAN};
  for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; ++si) {
    const int64_t rows = shapes[si][0], cols = shapes[si][1], n = rows * cols;
    float* fk = malloc(sizeof(float) * (size_t)n);
    int32_t* ik = malloc(sizeof(int32_t) * (size_t)n);
    float *fa = malloc(sizeof(float) * (size_t)n), *fb = malloc(sizeof(float) * (size_t)n);
    int32_t *ia = malloc(sizeof(int32_t) * (size_t)n), *ib = malloc(sizeof(int32_t) * (size_t)n);
    int32_t *pa = malloc(sizeof(int32_t) * (size_t)n), *pb = malloc(sizeof(int32_t) * (size_t)n);
    ASSERT_TRUE(fk && ik && fa && fb && ia && ib && pa && pb);
    for (int64_t i = 0; i < n; ++i) {
      uint32_t h = (uint32_t)i * 2654435761u;
      h ^= h >> 15;
      fk[i] = (float)(h % 97u) / 8.0f - 6.0f;  // many duplicates
      ik[i] = (int32_t)(h % 101u) - 50;
      if (h % 41u == 0) fk[i] = (h & 1) ? INFINITY : -INFINITY;
      if (h % 43u == 0) fk[i] = -0.0f;
      if (h % 47u == 0) fk[i] = 0.0f;
    }
    for (int oi = 0; oi < 2; ++oi) {
      tm_sort_any(test_failed_, CML_DTYPE_F32, ops[oi], false, rows, cols, fk, fa, pa);
      if (*test_failed_) return;
      tm_sort_any(test_failed_, CML_DTYPE_F32, ops[oi], true, rows, cols, fk, fb, pb);
      if (*test_failed_) return;
      ASSERT_TRUE(memcmp(fa, fb, sizeof(float) * (size_t)n) == 0);
      ASSERT_TRUE(memcmp(pa, pb, sizeof(int32_t) * (size_t)n) == 0);
      tm_sort_any(test_failed_, CML_DTYPE_I32, ops[oi], false, rows, cols, ik, ia, pa);
      if (*test_failed_) return;
      tm_sort_any(test_failed_, CML_DTYPE_I32, ops[oi], true, rows, cols, ik, ib, pb);
      if (*test_failed_) return;
      ASSERT_TRUE(memcmp(ia, ib, sizeof(int32_t) * (size_t)n) == 0);
      ASSERT_TRUE(memcmp(pa, pb, sizeof(int32_t) * (size_t)n) == 0);
      // Sorted (ignoring NaN keys in f32) and stable on equal keys.
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t c = 1; c < cols; ++c) {
          const int64_t i = r * cols + c;
          const bool asc = ops[oi] == CML_OP_LESS_THAN;
          ASSERT_TRUE(asc ? ia[i - 1] <= ia[i] : ia[i - 1] >= ia[i]);
          if (ia[i - 1] == ia[i]) ASSERT_TRUE(pa[i - 1] < pa[i]);
        }
      }
    }
    free(fk), free(ik), free(fa), free(fb), free(ia), free(ib), free(pa), free(pb);
  }
}

TEST(sort_prefix_selection_matches_whole_sort) {
  // Sorts of f32 or i32 keys under a plain LessThan / GreaterThan whose results only Slices of
  // the first k columns read (top-k) select those k per line instead of sorting the line; they
  // must be the first k of the whole sort, payload included: ties in their original order, -0
  // and +0 (equal under LessThan), lines with a NaN (sorted whole: a plain comparison with NaN
  // is not a strict weak order), an ascending run (every element enters the buffer). f64 keys,
  // TotalOrder and LessOrEqual comparators, bf16 keys, a prefix over a quarter of the line, a
  // general comparator and a whole sorted line among the results sort whole lines (no
  // prepared prefix), with the same results.
  static const struct {
    int64_t rows, cols, k;
    cml_dtype_t dt;
    cml_op_t op;
    bool general;
    bool selects;
    bool also_whole;  // the whole sorted keys are a result too: no selection
  } cases[] = {
      {5, 1000, 40, CML_DTYPE_F32, CML_OP_GREATER_THAN, false, true, false},
      {5, 1000, 40, CML_DTYPE_F32, CML_OP_LESS_THAN, false, true, false},
      {4, 257, 64, CML_DTYPE_I32, CML_OP_GREATER_THAN, false, true, false},
      {4, 257, 1, CML_DTYPE_I32, CML_OP_LESS_THAN, false, true, false},
      {3, 600, 33, CML_DTYPE_F64, CML_OP_GREATER_THAN, false, false, false},
      {3, 600, 17, CML_DTYPE_F32, CML_OP_LESS_THAN_TOTAL_ORDER, false, false, false},
      {3, 600, 17, CML_DTYPE_F32, CML_OP_LESS_OR_EQUAL, false, false, false},
      {2, 100, 30, CML_DTYPE_F32, CML_OP_GREATER_THAN, false, false, false},
      {2, 300, 20, CML_DTYPE_F32, CML_OP_GREATER_THAN, true, false, false},
      {3, 300, 20, CML_DTYPE_F32, CML_OP_GREATER_THAN, false, false, true},
      {3, 300, 20, CML_DTYPE_BF16, CML_OP_GREATER_THAN, false, false, false},
      {3, 300, 20, CML_DTYPE_BF16, CML_OP_GREATER_THAN_TOTAL_ORDER, false, false, false},
  };
  for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ++ci) {
    const int64_t rows = cases[ci].rows, cols = cases[ci].cols, k = cases[ci].k, n = rows * cols;
    const size_t es = (size_t)cml_dtype_bits(cases[ci].dt) / 8;
    uint8_t* keys = malloc(es * (size_t)n);
    uint8_t *whole = malloc(es * (size_t)n), *top = malloc(es * (size_t)n);
    int32_t *pw = malloc(sizeof(int32_t) * (size_t)n), *pt = malloc(sizeof(int32_t) * (size_t)n);
    ASSERT_TRUE(keys && whole && top && pw && pt);
    for (int64_t i = 0; i < n; ++i) {
      uint32_t h = (uint32_t)i * 2654435761u;
      h ^= h >> 15;
      double v = (double)(h % 97u) / 8.0 - 6.0;  // many ties
      if (h % 43u == 0) v = -0.0;
      if (h % 47u == 0) v = 0.0;
      if (i / cols == 1 && h % 41u == 0) v = NAN;                  // NaNs in line 1 only
      if (i / cols == 2 && i % cols < 50) v = (double)(i % cols);  // an ascending run
      if (cases[ci].dt == CML_DTYPE_F32) ((float*)(void*)keys)[i] = (float)v;
      if (cases[ci].dt == CML_DTYPE_F64) ((double*)(void*)keys)[i] = v;
      if (cases[ci].dt == CML_DTYPE_I32) ((int32_t*)(void*)keys)[i] = (int32_t)(h % 101u) - 50;
      if (cases[ci].dt == CML_DTYPE_BF16) ((uint16_t*)(void*)keys)[i] = cml_f32_to_bf16((float)v);
    }
    int64_t prepared = -1;
    tm_sort_prefix(test_failed_, cases[ci].dt, cases[ci].op, cases[ci].general, rows, cols, 0, keys,
                   whole, pw, NULL);
    if (*test_failed_) return;
    tm_sort_prefix(test_failed_, cases[ci].dt, cases[ci].op, cases[ci].general, rows, cols,
                   cases[ci].also_whole ? -k : k, keys, top, pt, &prepared);
    if (*test_failed_) return;
    ASSERT_EQ_INT(prepared, cases[ci].selects ? 1 : 0);
    for (int64_t r = 0; r < rows; ++r) {
      if (memcmp(top + (size_t)(r * k) * es, whole + (size_t)(r * cols) * es, (size_t)k * es) !=
              0 ||
          memcmp(pt + r * k, pw + r * cols, sizeof(int32_t) * (size_t)k) != 0) {
        TEST_FAIL_("case %zu line %lld: the first %lld differ from the whole sort's", ci,
                   (long long)r, (long long)k);
      }
    }
    free(keys), free(whole), free(top), free(pw), free(pt);
  }
}

// Long lines of i32 or f32 keys under a plain LessThan / GreaterThan take a radix sort: the same
// keys and payload permutation as the general comparator's merge sort (called per comparison),
// with ties (few distinct values; f32: -0 and +0 among them), wide values (every byte varies:
// four passes; f32: infinities, subnormals, negatives) and a line of one value (every pass
// skipped) or, for f32, a line of three values and infinities, lines of 4096 and 5000. (NaN
// keys: the compliance case control/sort_nan_long_row.)
static float tm_radix_f32(int64_t line, uint32_t h, size_t si) {
  if (line == 0) return h % 11u == 0 ? -0.0f : h % 13u == 0 ? 0.0f : (float)(h % 37u) / 4 - 4;
  if (line == 1) {
    const uint32_t bits = h * 2246822519u;
    float v;
    memcpy(&v, &bits, sizeof v);
    if (v != v) v = h % 2 ? INFINITY : -INFINITY;  // no NaN here
    return v;
  }
  return si == 0 && h % 97u == 5 ? ((h & 8) ? INFINITY : -INFINITY) : (float)(h % 3u) - 1.5f;
}

TEST(sort_radix_matches_general) {
  static const int64_t shapes[][2] = {{3, 5000}, {2, 4096}};
  static const cml_op_t ops[2] = {CML_OP_LESS_THAN, CML_OP_GREATER_THAN};
  for (int f32 = 0; f32 < 2; ++f32) {
    for (size_t si = 0; si < 2; ++si) {
      const int64_t rows = shapes[si][0], cols = shapes[si][1], n = rows * cols;
      uint32_t* keys = malloc(sizeof(uint32_t) * (size_t)n);
      uint32_t *ka = malloc(sizeof(uint32_t) * (size_t)n),
               *kb = malloc(sizeof(uint32_t) * (size_t)n);
      int32_t *pa = malloc(sizeof(int32_t) * (size_t)n), *pb = malloc(sizeof(int32_t) * (size_t)n);
      ASSERT_TRUE(keys && ka && kb && pa && pb);
      for (int64_t i = 0; i < n; ++i) {
        uint32_t h = (uint32_t)i * 2654435761u;
        h ^= h >> 13;
        const float v = tm_radix_f32(i / cols, h, si);
        if (f32) memcpy(&keys[i], &v, sizeof v);
      }
      if (!f32) {
        for (int64_t i = 0; i < n; ++i) {
          uint32_t h = (uint32_t)i * 2654435761u;
          h ^= h >> 13;
          const int64_t line = i / cols;
          keys[i] = (uint32_t)(line == 0   ? (int32_t)(h % 37u) - 18
                               : line == 1 ? (int32_t)(h * 2246822519u)
                                           : (si == 0 ? 7 : (int32_t)(h % 3u) - 100000));
        }
      }
      const cml_dtype_t dt = f32 ? CML_DTYPE_F32 : CML_DTYPE_I32;
      for (int oi = 0; oi < 2; ++oi) {
        tm_sort_any(test_failed_, dt, ops[oi], false, rows, cols, keys, ka, pa);
        if (*test_failed_) return;
        tm_sort_any(test_failed_, dt, ops[oi], true, rows, cols, keys, kb, pb);
        if (*test_failed_) return;
        if (memcmp(ka, kb, sizeof(uint32_t) * (size_t)n) != 0 ||
            memcmp(pa, pb, sizeof(int32_t) * (size_t)n) != 0) {
          TEST_FAIL_("%s %s [%lld, %lld]: the radix sort differs from the merge sort",
                     cml_dtype_name(dt), cml_op_name(ops[oi]), (long long)rows, (long long)cols);
        }
      }
      free(keys), free(ka), free(kb), free(pa), free(pb);
    }
  }
}

// The comparators Sort runs as programs, seen through the scratch they plan: a program adds
// its keys (len int64 slots each) and, when it is a plain lexicographic order of at most 64 key
// bits (the encoded sort), two more slots per element; the reference backend (which calls every
// comparator) and comparators off the grammar add nothing. Which comparator runs as what
// decides the speed only; c_sort_program_test checks the results.
typedef enum {
  TM_CMP_PLAIN,          // LessThan(l0, r0): the fast comparator
  TM_CMP_ABS_GT,         // GreaterThan(Abs(l0), Abs(r0))
  TM_CMP_LEXI,           // Or(LessThan(l1, r1), And(Equal(l1, r1), LessThan(l0, r0)))
  TM_CMP_SAME_KEY,       // Or(LessThan(l0, r0), And(Equal(r0, l0), GreaterThan(r0, l0)))
  TM_CMP_NEG_LE,         // LessOrEqual(Neg(r0), Neg(l0))
  TM_CMP_OTHER_TIE,      // Or(LessThan(l0, r0), And(Equal(l1, r1), LessThan(Abs(l0), Abs(r0))))
  TM_CMP_NO_AND,         // Or(LessThan(l0, r0), LessThan(l1, r1))
  TM_CMP_CROSSED,        // LessThan(l0, r1)
  TM_CMP_CHAIN_DIFFERS,  // LessThan(Abs(l0), Neg(r0))
} tm_cmp_kind_t;

static uint32_t tm_sort_program_node(tmod_t* t, tm_cmp_kind_t kind, int64_t len) {
  cml_shape_t sk = tm_shape(CML_DTYPE_F32, 2, 3, len), sp = tm_shape(CML_DTYPE_I32, 2, 3, len);
  uint32_t in[3] = {tm_param(t, 0, sk), tm_param(t, 0, sk), tm_param(t, 0, sp)};
  uint32_t cmp = tm_fn(t, 0, "");
  cml_shape_t fs = tm_shape(CML_DTYPE_F32, 0, 0, 0), is = tm_shape(CML_DTYPE_I32, 0, 0, 0);
  uint32_t l0 = tm_param(t, cmp, fs), r0 = tm_param(t, cmp, fs);
  uint32_t l1 = tm_param(t, cmp, fs), r1 = tm_param(t, cmp, fs);
  tm_param(t, cmp, is);
  tm_param(t, cmp, is);
  uint32_t res = 0;
  switch (kind) {
    case TM_CMP_PLAIN:
      res = tm_compare(t, cmp, CML_OP_LESS_THAN, l0, r0);
      break;
    case TM_CMP_ABS_GT:
      res = tm_compare(t, cmp, CML_OP_GREATER_THAN, tm_unary(t, cmp, CML_OP_ABS, l0),
                       tm_unary(t, cmp, CML_OP_ABS, r0));
      break;
    case TM_CMP_LEXI:
      res =
          tm_binary(t, cmp, CML_OP_LOGICAL_OR, tm_compare(t, cmp, CML_OP_LESS_THAN, l1, r1),
                    tm_binary(t, cmp, CML_OP_LOGICAL_AND, tm_compare(t, cmp, CML_OP_EQUAL, l1, r1),
                              tm_compare(t, cmp, CML_OP_LESS_THAN, l0, r0)));
      break;
    case TM_CMP_SAME_KEY:
      res =
          tm_binary(t, cmp, CML_OP_LOGICAL_OR, tm_compare(t, cmp, CML_OP_LESS_THAN, l0, r0),
                    tm_binary(t, cmp, CML_OP_LOGICAL_AND, tm_compare(t, cmp, CML_OP_EQUAL, r0, l0),
                              tm_compare(t, cmp, CML_OP_GREATER_THAN, r0, l0)));
      break;
    case TM_CMP_NEG_LE:
      res = tm_compare(t, cmp, CML_OP_LESS_OR_EQUAL, tm_unary(t, cmp, CML_OP_NEG, r0),
                       tm_unary(t, cmp, CML_OP_NEG, l0));
      break;
    case TM_CMP_OTHER_TIE:
      res =
          tm_binary(t, cmp, CML_OP_LOGICAL_OR, tm_compare(t, cmp, CML_OP_LESS_THAN, l0, r0),
                    tm_binary(t, cmp, CML_OP_LOGICAL_AND, tm_compare(t, cmp, CML_OP_EQUAL, l1, r1),
                              tm_compare(t, cmp, CML_OP_LESS_THAN, tm_unary(t, cmp, CML_OP_ABS, l0),
                                         tm_unary(t, cmp, CML_OP_ABS, r0))));
      break;
    case TM_CMP_NO_AND:
      res = tm_binary(t, cmp, CML_OP_LOGICAL_OR, tm_compare(t, cmp, CML_OP_LESS_THAN, l0, r0),
                      tm_compare(t, cmp, CML_OP_LESS_THAN, l1, r1));
      break;
    case TM_CMP_CROSSED:
      res = tm_compare(t, cmp, CML_OP_LESS_THAN, l0, r1);
      break;
    case TM_CMP_CHAIN_DIFFERS:
      res = tm_compare(t, cmp, CML_OP_LESS_THAN, tm_unary(t, cmp, CML_OP_ABS, l0),
                       tm_unary(t, cmp, CML_OP_NEG, r0));
      break;
  }
  tm_return(t, cmp, 1, &res);
  cml_shape_t ss[3] = {sk, sk, sp};
  uint32_t s = tm_node(t, 0, CML_OP_SORT, 3, in, 3, ss);
  tm_attrs(t, s)->functions[0] = cmp;
  tm_attrs(t, s)->axis = 1;
  tm_attrs(t, s)->flag = true;
  return t->values[s].node;
}

TEST(sort_programs_recognized) {
  static const struct {
    tm_cmp_kind_t kind;
    int64_t extra;  // int64 slots per element the program adds
  } cases[] = {
      {TM_CMP_PLAIN, 0},    {TM_CMP_ABS_GT, 3},  {TM_CMP_LEXI, 4},
      {TM_CMP_SAME_KEY, 3}, {TM_CMP_NEG_LE, 1},  {TM_CMP_OTHER_TIE, 3},
      {TM_CMP_NO_AND, 0},   {TM_CMP_CROSSED, 0}, {TM_CMP_CHAIN_DIFFERS, 0},
  };
  const int64_t len = 37;
  cmlc_options_t opts, ref;
  memset(&opts, 0, sizeof opts);
  opts.threads = 1;
  ref = opts;
  ref.reference = true;
  for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ++ci) {
    tmod_t* t = tm_new();
    ASSERT_TRUE(t != NULL);
    const cml_ir_node_t* n = &t->nodes[tm_sort_program_node(t, cases[ci].kind, len)];
    const size_t with = cmlc_sort_scratch(&t->m, n, &opts),
                 without = cmlc_sort_scratch(&t->m, n, &ref);
    free(t);
    if ((int64_t)(with - without) != cases[ci].extra * len * 8) {
      TEST_FAIL_("comparator %d: %zu scratch bytes, %zu on the reference (want %lld more)",
                 (int)cases[ci].kind, with, without, (long long)(cases[ci].extra * len * 8));
    }
  }
}

TEST(sort_total_order_nan) {
  const float nan = NAN;
  const float keys[12] = {1, -nan, 0.0f, -0.0f, nan, -INFINITY, /* row 1 */ 2, 1, 0, -1, -2, -3};
  // -NaN < -Inf < -0 < +0 < 1 < +NaN.
  float want[12] = {-nan, -INFINITY, -0.0f, 0.0f, 1, nan, -3, -2, -1, 0, 1, 2};
  const int32_t want_p[12] = {1, 5, 3, 2, 0, 4, 11, 10, 9, 8, 7, 6};
  tm_sort_case(test_failed_, CML_OP_LESS_THAN_TOTAL_ORDER, false, keys, want, want_p);
}

TEST(donation_and_aliased_outputs) {
  cml_backend_t* b = tm_backend("c");
  ASSERT_TRUE(b != NULL);
  tmod_t* t = tm_new();
  cml_shape_t s = tm_shape(CML_DTYPE_F32, 1, 4, 0);
  uint32_t x = tm_param(t, 0, s);
  uint32_t y = tm_binary(t, 0, CML_OP_ADD, x, x);
  uint32_t outs_v[3] = {x, y, y};  // a parameter, and one kernel result returned twice
  tm_return(t, 0, 3, outs_v);
  cmlc_executable_t* exe = NULL;
  ASSERT_STATUS_OK(tm_compile(b, t, &exe));
  float xd[4] = {1, 2, 3, 4};
  for (int donate = 0; donate < 2; ++donate) {
    cml_buffer_t* in = tm_buffer(b, s, xd);
    void* in_data = ((cmlc_buffer_t*)in)->data;
    bool d[1] = {donate != 0};
    cml_buffer_t* outs[3] = {0};
    ASSERT_STATUS_OK(tm_run(exe, &in, d, outs));
    void* out0 = ((cmlc_buffer_t*)outs[0])->data;
    ASSERT_TRUE(donate ? out0 == in_data : out0 != in_data);
    ASSERT_TRUE(((cmlc_buffer_t*)outs[1])->data != ((cmlc_buffer_t*)outs[2])->data);
    float g[4];
    ASSERT_STATUS_OK(cml_buffer_copy_to_host(outs[0], g, sizeof g));
    for (int i = 0; i < 4; ++i) ASSERT_EQ_DBL(g[i], xd[i]);
    for (int o = 1; o < 3; ++o) {
      ASSERT_STATUS_OK(cml_buffer_copy_to_host(outs[o], g, sizeof g));
      for (int i = 0; i < 4; ++i) ASSERT_EQ_DBL(g[i], 2 * xd[i]);
    }
    tm_release_all(outs, 3);
    cml_buffer_release(in);
  }
  tm_exe_free(exe);
  free(t);
  cml_backend_release(b);
}

TEST(backend_options_and_devices) {
  cml_backend_t* b = tm_backend("c:threads=3,devices=2,reference=true");
  ASSERT_TRUE(b != NULL);
  ASSERT_STREQ(cml_backend_name(b), "c");
  ASSERT_EQ_INT(cml_backend_device_count(b), 2);
  ASSERT_CONTAINS(cml_backend_device_description(b, 1), "cpu:1 (scalar");
  ASSERT_CONTAINS(cml_backend_device_description(b, 0), "3 threads");
  const cmlc_backend_t* cb = (const cmlc_backend_t*)b;
  ASSERT_EQ_INT(cb->options.isa, CMLC_ISA_SCALAR);
  ASSERT_FALSE(cb->options.fusion);
  ASSERT_EQ_INT(cmlc_pool_thread_count(cb->pool), 3);
  const cml_capabilities_t* caps = cml_backend_capabilities(b);
  ASSERT_TRUE(cml_capabilities_has_op(caps, CML_OP_WHILE));
  ASSERT_TRUE(cml_capabilities_has_op(caps, CML_OP_SORT));
  ASSERT_TRUE(cml_capabilities_has_dtype(caps, CML_DTYPE_BF16));
  ASSERT_TRUE(cml_capabilities_has_dtype(caps, CML_DTYPE_I4));
  ASSERT_TRUE(caps->functions);
  // Buffers: shared data, copies between virtual devices.
  cml_shape_t s = tm_shape(CML_DTYPE_I32, 1, 3, 0);
  cml_buffer_t* sh = NULL;
  void* data = NULL;
  ASSERT_STATUS_OK(cml_buffer_create_shared(b, 0, &s, &sh, &data));
  ASSERT_TRUE(((uintptr_t)data % 64) == 0);
  int32_t* d = (int32_t*)data;
  d[0] = 5, d[1] = 6, d[2] = 7;
  cml_buffer_t* moved = NULL;
  ASSERT_STATUS_OK(cml_buffer_copy_to_device(sh, 1, &moved));
  ASSERT_EQ_INT(cml_buffer_device(moved), 1);
  int32_t got[3];
  ASSERT_STATUS_OK(cml_buffer_copy_to_host(moved, got, sizeof got));
  ASSERT_EQ_INT(got[2], 7);
  cml_buffer_release(moved);
  cml_buffer_release(sh);
  cml_backend_release(b);
  // Bad options are errors naming the key.
  cml_backend_t* bad = NULL;
  cml_status_t st = cml_backend_new_with_config("c:threads=x", &bad);
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(cml_status_message(st), "threads");
  cml_status_free(st);
  st = cml_backend_new_with_config("c:bogus=1", &bad);
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_INVALID_ARGUMENT);
  cml_status_free(st);
  ASSERT_TRUE(bad == NULL);
}

TEST(env_options) {
  setenv("GOMLX_FUSION", "0", 1);
  setenv("GOMLX_SIMD_AVX512", "false", 1);
  cml_backend_t* b = tm_backend("c:threads=1");
  ASSERT_TRUE(b != NULL);
  const cmlc_backend_t* cb = (const cmlc_backend_t*)b;
  ASSERT_FALSE(cb->options.fusion);
  ASSERT_TRUE(cb->options.isa != CMLC_ISA_AVX512);
  cml_backend_release(b);
  b = tm_backend("c:threads=1,fusion=true");  // config overrides the environment
  ASSERT_TRUE(b != NULL);
  ASSERT_TRUE(((const cmlc_backend_t*)b)->options.fusion);
  cml_backend_release(b);
  setenv("GOMLX_FUSION", "maybe", 1);
  cml_backend_t* bad = NULL;
  cml_status_t st = cml_backend_new_with_config("c", &bad);
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(cml_status_message(st), "GOMLX_FUSION");
  cml_status_free(st);
  unsetenv("GOMLX_FUSION");
  unsetenv("GOMLX_SIMD_AVX512");
}

TEST_MAIN(TEST_ENTRY(aliases_constants_and_copies), TEST_ENTRY(in_place_and_arena_reuse),
          TEST_ENTRY(dead_code_and_missing_kernels), TEST_ENTRY(call_named_function),
          TEST_ENTRY(if_with_captures), TEST_ENTRY(while_sum), TEST_ENTRY(concurrent_executions),
          TEST_ENTRY(while_swaps_state), TEST_ENTRY(nested_closures),
          TEST_ENTRY(sort_fast_and_general_stable), TEST_ENTRY(sort_total_order_nan),
          TEST_ENTRY(sort_radix_matches_general), TEST_ENTRY(sort_typed_lines_match_general),
          TEST_ENTRY(sort_prefix_selection_matches_whole_sort),
          TEST_ENTRY(sort_programs_recognized), TEST_ENTRY(donation_and_aliased_outputs),
          TEST_ENTRY(backend_options_and_devices), TEST_ENTRY(env_options),
          TEST_ENTRY(scalar_steps_in_loop_bodies))
