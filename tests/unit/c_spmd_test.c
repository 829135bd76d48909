// SPDX-License-Identifier: Apache-2.0
// tests/unit/c_spmd_test.c: SPMD programs on the c backend's devices, end to end through the
// public API (cml/distributed.h): every collective with hand-computed values, replica groups,
// several operands, every dtype of AllReduce, collectives inside While and If, device
// assignment, more slots than threads, concurrent executions, and the failure paths: a deadline
// or a cancel while one slot loops and the others wait at a collective, and an If on the
// replica id around an AllReduce (a status, never a hang). The kernels alone:
// c_spmd_kernels_test.c.
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backends/c/engine_internal.h"  // the plan's arena size
#include "cml/cml.h"
#include "cml/backend_impl.h"  // cml_clock_monotonic_ns
#include "cml/distributed.h"
#include "test.h"

#define MAX_DEV 8

static cml_shape_t vec(cml_dtype_t dtype, int64_t n) {
  return cml_shape_make(dtype, 1, (int64_t[]){n});
}

// Makes one buffer per device slot |j| on device |devices ? devices[j] : j| from host rows.
static cml_status_t put(cml_backend_t* be, const cml_shape_t* s, const void* data, size_t row,
                        int n, const int32_t* devices, size_t stride, size_t param,
                        cml_buffer_t** in) {
  for (int j = 0; j < n; ++j) {
    CML_RETURN_IF_ERROR(cml_buffer_from_host(be, devices ? devices[j] : j, s,
                                             (const char*)data + (size_t)j * row, row,
                                             &in[(size_t)j * stride + param]));
  }
  return CML_OK;
}

static void release_all(cml_buffer_t** b, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    cml_buffer_release(b[i]);
    b[i] = NULL;
  }
}

//===--- values ---===//

// AllReduce (sum) plus the replica id, on 4 devices.
TEST(all_reduce_plus_replica_id) {
  cml_backend_t* be = NULL;
  ASSERT_STATUS_OK(cml_backend_new_with_config("c:devices=4,threads=2", &be));
  cml_builder_t* b = NULL;
  ASSERT_STATUS_OK(cml_builder_create(be, "ar", &b));
  ASSERT_STATUS_OK(cml_builder_spmd(b, 4));
  cml_function_t* f = cml_builder_main(b);
  cml_shape_t s = vec(CML_DTYPE_F32, 3);
  cml_value_t x = cml_parameter(f, "x", &s), sum;
  ASSERT_TRUE(cml_op_all_reduce(f, &x, 1, CML_REDUCE_SUM, NULL, &sum));
  cml_value_t id = cml_op_convert_dtype(f, cml_op_replica_id(f), CML_DTYPE_F32);
  cml_value_t r = cml_op_add(f, sum, id);
  ASSERT_STATUS_OK(cml_function_return(f, &r, 1));
  cml_executable_t* exe = NULL;
  ASSERT_STATUS_OK(cml_builder_compile(b, &exe));
  cml_builder_destroy(b);
  ASSERT_EQ_INT(cml_executable_num_devices(exe), 4);
  float x_host[4][3];
  for (int j = 0; j < 4; ++j) {
    for (int i = 0; i < 3; ++i) x_host[j][i] = (float)(j * 10 + i);
  }
  cml_buffer_t* in[4] = {0};
  cml_buffer_t* out[4] = {0};
  ASSERT_STATUS_OK(put(be, &s, x_host, sizeof x_host[0], 4, NULL, 1, 0, in));
  for (int rep = 0; rep < 3; ++rep) {  // contexts are reused
    ASSERT_STATUS_OK(cml_executable_execute(exe, in, 4, NULL, 0, out));
    for (int j = 0; j < 4; ++j) {
      float got[3];
      ASSERT_EQ_INT(cml_buffer_device(out[j]), j);
      ASSERT_STATUS_OK(cml_buffer_copy_to_host(out[j], got, sizeof got));
      for (int i = 0; i < 3; ++i) ASSERT_EQ_DBL(got[i], 60 + 4 * i + j);
    }
    release_all(out, 4);
  }
  release_all(in, 4);
  cml_executable_release(exe);
  cml_backend_release(be);
}

// A multi-operand AllReduce whose operands die there computes each sum into its operand's
// storage (in place): the arena holds the two operands (and the kernel's scratch) but no second
// copy for the sums. Unfused, so that each operand is an arena value of its own.
TEST(all_reduce_in_place_of_dying_operands) {
  enum { N = 1000, M = 500 };
  cml_backend_t* be = NULL;
  ASSERT_STATUS_OK(cml_backend_new_with_config("c:devices=2,threads=2,fusion=false", &be));
  cml_builder_t* b = NULL;
  ASSERT_STATUS_OK(cml_builder_create(be, "ar_in_place", &b));
  ASSERT_STATUS_OK(cml_builder_spmd(b, 2));
  cml_function_t* f = cml_builder_main(b);
  cml_shape_t xs = vec(CML_DTYPE_F32, N), ys = vec(CML_DTYPE_I32, M);
  cml_value_t x = cml_parameter(f, "x", &xs), y = cml_parameter(f, "y", &ys);
  cml_value_t parts[2] = {cml_op_mul(f, x, x),
                          cml_op_add(f, y, cml_constant_scalar_i64(f, CML_DTYPE_I32, 1))};
  cml_value_t sums[2];
  ASSERT_TRUE(cml_op_all_reduce(f, parts, 2, CML_REDUCE_SUM, NULL, sums));
  cml_value_t outs[2] = {cml_op_mul(f, sums[0], cml_constant_scalar_f64(f, CML_DTYPE_F32, 3.0)),
                         cml_op_sub(f, sums[1], cml_constant_scalar_i64(f, CML_DTYPE_I32, 1))};
  ASSERT_STATUS_OK(cml_function_return(f, outs, 2));
  cml_executable_t* exe = NULL;
  ASSERT_STATUS_OK(cml_builder_compile(b, &exe));
  cml_builder_destroy(b);
  // f32[1000] and i32[500] (rounded to 64 bytes) and the scratch; without in place, 2 more.
  const uint64_t arena = ((const cmlc_executable_t*)exe)->functions[0].arena_size;
  ASSERT_TRUE(arena >= 4032 + 2048);
  ASSERT_TRUE(arena < 2 * (4032 + 2048));
  static float xh[2][N];
  static int32_t yh[2][M];
  for (int j = 0; j < 2; ++j) {
    for (int i = 0; i < N; ++i) xh[j][i] = (float)(i % 13) + (float)j;
    for (int i = 0; i < M; ++i) yh[j][i] = i * (j + 1);
  }
  cml_buffer_t* in[4] = {0};
  for (int j = 0; j < 2; ++j) {
    ASSERT_STATUS_OK(cml_buffer_from_host(be, j, &xs, xh[j], sizeof xh[j], &in[2 * j]));
    ASSERT_STATUS_OK(cml_buffer_from_host(be, j, &ys, yh[j], sizeof yh[j], &in[2 * j + 1]));
  }
  for (int rep = 0; rep < 2; ++rep) {  // the context (and its arena) is reused
    cml_buffer_t* out[4] = {0};
    ASSERT_STATUS_OK(cml_executable_execute(exe, in, 4, NULL, 0, out));
    for (int j = 0; j < 2; ++j) {
      static float gx[N];
      static int32_t gy[M];
      ASSERT_STATUS_OK(cml_buffer_copy_to_host(out[2 * j], gx, sizeof gx));
      ASSERT_STATUS_OK(cml_buffer_copy_to_host(out[2 * j + 1], gy, sizeof gy));
      int bad = 0;
      for (int i = 0; i < N; ++i) {
        const float a = (float)(i % 13), c = a + 1.0f;
        bad += gx[i] != 3.0f * (a * a + c * c);
      }
      for (int i = 0; i < M; ++i) bad += gy[i] != 3 * i + 1;  // (i + 1) + (2i + 1) - 1
      ASSERT_EQ_INT(bad, 0);
    }
    release_all(out, 4);
  }
  release_all(in, 4);
  cml_executable_release(exe);
  // The same dying value as both operands: operand 1 must read the values, not operand 0's
  // sums (so neither result takes its storage).
  ASSERT_STATUS_OK(cml_builder_create(be, "ar_twice", &b));
  ASSERT_STATUS_OK(cml_builder_spmd(b, 2));
  f = cml_builder_main(b);
  x = cml_parameter(f, "x", &xs);
  cml_value_t sq = cml_op_mul(f, x, x), twice[2] = {sq, sq};
  ASSERT_TRUE(cml_op_all_reduce(f, twice, 2, CML_REDUCE_SUM, NULL, sums));
  cml_value_t both = cml_op_add(f, sums[0], sums[1]);
  ASSERT_STATUS_OK(cml_function_return(f, &both, 1));
  ASSERT_STATUS_OK(cml_builder_compile(b, &exe));
  cml_builder_destroy(b);
  for (int j = 0; j < 2; ++j) {
    ASSERT_STATUS_OK(cml_buffer_from_host(be, j, &xs, xh[j], sizeof xh[j], &in[j]));
  }
  cml_buffer_t* out[2] = {0};
  ASSERT_STATUS_OK(cml_executable_execute(exe, in, 2, NULL, 0, out));
  for (int j = 0; j < 2; ++j) {
    static float gx[N];
    ASSERT_STATUS_OK(cml_buffer_copy_to_host(out[j], gx, sizeof gx));
    int bad = 0;
    for (int i = 0; i < N; ++i) {
      const float a = (float)(i % 13), c = a + 1.0f;
      bad += gx[i] != 2.0f * (a * a + c * c);
    }
    ASSERT_EQ_INT(bad, 0);
  }
  release_all(out, 2);
  release_all(in, 2);
  cml_executable_release(exe);
  cml_backend_release(be);
}

// One module with every other collective on 2 devices; dev0 [0 1 2 3], dev1 [100 .. 103]
// (the reference's values, distributed.md §2.2).
TEST(every_collective_reference_values) {
  cml_backend_t* be = NULL;
  ASSERT_STATUS_OK(cml_backend_new_with_config("c:devices=2", &be));
  cml_builder_t* b = NULL;
  ASSERT_STATUS_OK(cml_builder_create(be, "all", &b));
  ASSERT_STATUS_OK(cml_builder_spmd(b, 2));
  cml_function_t* f = cml_builder_main(b);
  cml_shape_t s = vec(CML_DTYPE_F32, 4);
  cml_value_t x = cml_parameter(f, "x", &s);
  const int32_t swap[] = {0, 1, 1, 0}, one_way[] = {0, 1};
  const int32_t reversed_ids[] = {1, 0};
  cml_replica_groups_t reversed = {reversed_ids, 1, 2};
  cml_value_t r[8] = {
      cml_op_all_gather(f, x, 0, NULL),
      cml_op_reduce_scatter(f, x, CML_REDUCE_SUM, 0, NULL),
      cml_op_all_to_all(f, x, 0, 0, NULL),
      cml_op_collective_permute(f, x, swap, 2),
      cml_op_collective_permute(f, x, one_way, 1),
      cml_op_collective_broadcast(f, x, &reversed),
      cml_op_partition_id(f),
      cml_op_replica_id(f),
  };
  ASSERT_STATUS_OK(cml_function_return(f, r, 8));
  cml_executable_t* exe = NULL;
  ASSERT_STATUS_OK(cml_builder_compile(b, &exe));
  cml_builder_destroy(b);
  const float xh[2][4] = {{0, 1, 2, 3}, {100, 101, 102, 103}};
  cml_buffer_t* in[2] = {0};
  cml_buffer_t* out[16] = {0};
  ASSERT_STATUS_OK(put(be, &s, xh, sizeof xh[0], 2, NULL, 1, 0, in));
  ASSERT_STATUS_OK(cml_executable_execute(exe, in, 2, NULL, 0, out));
  const float gather[8] = {0, 1, 2, 3, 100, 101, 102, 103};
  const float scatter[2][2] = {{100, 102}, {104, 106}};
  const float a2a[2][4] = {{0, 1, 100, 101}, {2, 3, 102, 103}};
  for (int j = 0; j < 2; ++j) {
    cml_buffer_t** o = out + 8 * j;
    float g[8], rs[2], t[4], p[4], q[4], bc[4];
    uint32_t pid, rid;
    ASSERT_STATUS_OK(cml_buffer_copy_to_host(o[0], g, sizeof g));
    ASSERT_STATUS_OK(cml_buffer_copy_to_host(o[1], rs, sizeof rs));
    ASSERT_STATUS_OK(cml_buffer_copy_to_host(o[2], t, sizeof t));
    ASSERT_STATUS_OK(cml_buffer_copy_to_host(o[3], p, sizeof p));
    ASSERT_STATUS_OK(cml_buffer_copy_to_host(o[4], q, sizeof q));
    ASSERT_STATUS_OK(cml_buffer_copy_to_host(o[5], bc, sizeof bc));
    ASSERT_STATUS_OK(cml_buffer_copy_to_host(o[6], &pid, sizeof pid));
    ASSERT_STATUS_OK(cml_buffer_copy_to_host(o[7], &rid, sizeof rid));
    for (int i = 0; i < 8; ++i) ASSERT_EQ_DBL(g[i], gather[i]);
    for (int i = 0; i < 2; ++i) ASSERT_EQ_DBL(rs[i], scatter[j][i]);
    for (int i = 0; i < 4; ++i) {
      ASSERT_EQ_DBL(t[i], a2a[j][i]);
      ASSERT_EQ_DBL(p[i], xh[1 - j][i]);             // swapped
      ASSERT_EQ_DBL(q[i], j == 1 ? xh[0][i] : 0.f);  // slot 0 is no target: zeros
      ASSERT_EQ_DBL(bc[i], xh[1][i]);                // the group's first member is slot 1
    }
    ASSERT_EQ_INT(pid, 0);
    ASSERT_EQ_INT(rid, j);
  }
  release_all(out, 16);
  release_all(in, 2);
  cml_executable_release(exe);
  cml_backend_release(be);
}

// Two operands of two dtypes, groups {0, 1} and {2, 3}, max; on devices 3, 2, 1, 0.
TEST(groups_several_operands_device_assignment) {
  cml_backend_t* be = NULL;
  ASSERT_STATUS_OK(cml_backend_new_with_config("c:devices=4,threads=1", &be));
  cml_builder_t* b = NULL;
  ASSERT_STATUS_OK(cml_builder_create(be, "groups", &b));
  ASSERT_STATUS_OK(cml_builder_spmd(b, 4));
  const int32_t da[] = {3, 2, 1, 0};
  ASSERT_STATUS_OK(cml_builder_device_assignment(b, da, 4));
  cml_function_t* f = cml_builder_main(b);
  cml_shape_t sf = vec(CML_DTYPE_F64, 2), si = vec(CML_DTYPE_I32, 1);
  cml_value_t x[2] = {cml_parameter(f, "a", &sf), cml_parameter(f, "b", &si)}, r[2];
  const int32_t ids[] = {0, 1, 2, 3};
  cml_replica_groups_t groups = {ids, 2, 2};
  ASSERT_TRUE(cml_op_all_reduce(f, x, 2, CML_REDUCE_MAX, &groups, r));
  ASSERT_STATUS_OK(cml_function_return(f, r, 2));
  cml_executable_t* exe = NULL;
  ASSERT_STATUS_OK(cml_builder_compile(b, &exe));
  cml_builder_destroy(b);
  const double ah[4][2] = {{1, -1}, {5, -5}, {-7, 7}, {3, 8}};
  const int32_t bh[4] = {10, -20, 30, 40};
  cml_buffer_t* in[8] = {0};
  cml_buffer_t* out[8] = {0};
  ASSERT_STATUS_OK(put(be, &sf, ah, sizeof ah[0], 4, da, 2, 0, in));
  ASSERT_STATUS_OK(put(be, &si, bh, sizeof bh[0], 4, da, 2, 1, in));
  ASSERT_STATUS_OK(cml_executable_execute(exe, in, 8, NULL, 0, out));
  const double want_a[4][2] = {{5, -1}, {5, -1}, {3, 8}, {3, 8}};
  const int32_t want_b[4] = {10, 10, 40, 40};
  for (int j = 0; j < 4; ++j) {
    double a[2];
    int32_t bb;
    ASSERT_EQ_INT(cml_buffer_device(out[2 * j]), da[j]);
    ASSERT_STATUS_OK(cml_buffer_copy_to_host(out[2 * j], a, sizeof a));
    ASSERT_STATUS_OK(cml_buffer_copy_to_host(out[2 * j + 1], &bb, sizeof bb));
    ASSERT_EQ_DBL(a[0], want_a[j][0]);
    ASSERT_EQ_DBL(a[1], want_a[j][1]);
    ASSERT_EQ_INT(bb, want_b[j]);
  }
  release_all(out, 8);
  release_all(in, 8);
  cml_executable_release(exe);
  cml_backend_release(be);
}

// Writes |v| as one element of |dtype| (|v| small and exact in every dtype).
static void put_value(cml_dtype_t dtype, double v, void* p) {
  switch (dtype) {
    case CML_DTYPE_I8:
      *(int8_t*)p = (int8_t)v;
      break;
    case CML_DTYPE_I16:
      *(int16_t*)p = (int16_t)v;
      break;
    case CML_DTYPE_I32:
      *(int32_t*)p = (int32_t)v;
      break;
    case CML_DTYPE_I64:
      *(int64_t*)p = (int64_t)v;
      break;
    case CML_DTYPE_U8:
      *(uint8_t*)p = (uint8_t)v;
      break;
    case CML_DTYPE_U16:
      *(uint16_t*)p = (uint16_t)v;
      break;
    case CML_DTYPE_U32:
      *(uint32_t*)p = (uint32_t)v;
      break;
    case CML_DTYPE_U64:
      *(uint64_t*)p = (uint64_t)v;
      break;
    case CML_DTYPE_F16:
      *(uint16_t*)p = cml_f32_to_f16((float)v);
      break;
    case CML_DTYPE_BF16:
      *(uint16_t*)p = cml_f32_to_bf16((float)v);
      break;
    case CML_DTYPE_F32:
      *(float*)p = (float)v;
      break;
    case CML_DTYPE_F64:
      *(double*)p = v;
      break;
    case CML_DTYPE_C64:
      ((float*)p)[0] = (float)v, ((float*)p)[1] = (float)(2 * v);
      break;
    case CML_DTYPE_C128:
      ((double*)p)[0] = v, ((double*)p)[1] = 2 * v;
      break;
    default:
      break;
  }
}

// Every dtype AllReduce takes (sum over 3 slots: 1 + 2 + 3 = 6, complex (6, 12); max: 3).
TEST(all_reduce_every_dtype) {
  cml_backend_t* be = NULL;
  ASSERT_STATUS_OK(cml_backend_new_with_config("c:devices=3", &be));
  const cml_dtype_t dtypes[] = {CML_DTYPE_I8,  CML_DTYPE_I16,  CML_DTYPE_I32, CML_DTYPE_I64,
                                CML_DTYPE_U8,  CML_DTYPE_U16,  CML_DTYPE_U32, CML_DTYPE_U64,
                                CML_DTYPE_F16, CML_DTYPE_BF16, CML_DTYPE_F32, CML_DTYPE_F64,
                                CML_DTYPE_C64, CML_DTYPE_C128};
  int checked = 0;
  for (size_t d = 0; d < sizeof dtypes / sizeof *dtypes; ++d) {
    const cml_dtype_t dt = dtypes[d];
    const bool complex = dt == CML_DTYPE_C64 || dt == CML_DTYPE_C128;
    for (int t = 0; t < (complex ? 1 : 2); ++t) {
      const cml_reduce_type_t type = t ? CML_REDUCE_MAX : CML_REDUCE_SUM;
      cml_builder_t* b = NULL;
      ASSERT_STATUS_OK(cml_builder_create(be, "dt", &b));
      ASSERT_STATUS_OK(cml_builder_spmd(b, 3));
      cml_function_t* f = cml_builder_main(b);
      cml_shape_t s = vec(dt, 2);
      cml_value_t x = cml_parameter(f, "x", &s), r;
      ASSERT_TRUE(cml_op_all_reduce(f, &x, 1, type, NULL, &r));
      ASSERT_STATUS_OK(cml_function_return(f, &r, 1));
      cml_executable_t* exe = NULL;
      cml_status_t st = cml_builder_compile(b, &exe);
      cml_builder_destroy(b);
      if (st != CML_OK) fprintf(stderr, "%s: ", cml_dtype_name(dt));
      ASSERT_STATUS_OK(st);
      const size_t es = cml_shape_byte_size(&s) / 2;
      uint8_t host[3][32], got[32], want[32];
      for (int j = 0; j < 3; ++j) {
        put_value(dt, j + 1, host[j]);
        put_value(dt, j + 1, host[j] + es);
      }
      cml_buffer_t* in[3] = {0};
      cml_buffer_t* out[3] = {0};
      for (int j = 0; j < 3; ++j) {
        ASSERT_STATUS_OK(cml_buffer_from_host(be, j, &s, host[j], 2 * es, &in[j]));
      }
      ASSERT_STATUS_OK(cml_executable_execute(exe, in, 3, NULL, 0, out));
      put_value(dt, t ? 3 : 6, want);
      for (int j = 0; j < 3; ++j) {
        ASSERT_STATUS_OK(cml_buffer_copy_to_host(out[j], got, 2 * es));
        ASSERT_TRUE(memcmp(got, want, es) == 0);
        ASSERT_TRUE(memcmp(got + es, want, es) == 0);
      }
      ++checked;
      release_all(out, 3);
      release_all(in, 3);
      cml_executable_release(exe);
    }
  }
  ASSERT_EQ_INT(checked, 26);
  cml_backend_release(be);
}

//===--- control flow ---===//

// x -> While (i < 5) { x = AllReduce(x) } on 2 devices: each iteration is a new round.
// Then an If on a parameter every slot agrees on, with an AllGather in one branch.
TEST(collectives_inside_while_and_if) {
  cml_backend_t* be = NULL;
  ASSERT_STATUS_OK(cml_backend_new_with_config("c:devices=2,threads=2", &be));
  cml_builder_t* b = NULL;
  ASSERT_STATUS_OK(cml_builder_create(be, "loop", &b));
  ASSERT_STATUS_OK(cml_builder_spmd(b, 2));
  cml_function_t* f = cml_builder_main(b);
  cml_shape_t s = vec(CML_DTYPE_F32, 2), is = cml_shape_make(CML_DTYPE_I32, 0, NULL);
  cml_shape_t bs = cml_shape_make(CML_DTYPE_BOOL, 0, NULL);
  cml_value_t x = cml_parameter(f, "x", &s), pred = cml_parameter(f, "pred", &bs);
  cml_function_t *cond = NULL, *body = NULL, *yes = NULL, *no = NULL;
  ASSERT_STATUS_OK(cml_function_new_closure(f, &cond));
  ASSERT_STATUS_OK(cml_function_new_closure(f, &body));
  cml_value_t ci = cml_parameter(cond, "i", &is);
  (void)cml_parameter(cond, "x", &s);
  cml_value_t go = cml_op_less_than(cond, ci, cml_constant_scalar_i64(cond, CML_DTYPE_I32, 5));
  ASSERT_STATUS_OK(cml_function_return(cond, &go, 1));
  cml_value_t bi = cml_parameter(body, "i", &is), bx = cml_parameter(body, "x", &s);
  cml_value_t next[2] = {cml_op_add(body, bi, cml_constant_scalar_i64(body, CML_DTYPE_I32, 1))};
  ASSERT_TRUE(cml_op_all_reduce(body, &bx, 1, CML_REDUCE_SUM, NULL, &next[1]));
  ASSERT_STATUS_OK(cml_function_return(body, next, 2));
  cml_value_t init[2] = {cml_constant_scalar_i64(f, CML_DTYPE_I32, 0), x}, loop[2];
  ASSERT_TRUE(cml_op_while(f, cond, body, init, 2, loop));
  ASSERT_STATUS_OK(cml_function_new_closure(f, &yes));
  ASSERT_STATUS_OK(cml_function_new_closure(f, &no));
  cml_value_t g = cml_op_all_gather(yes, loop[1], 0, NULL);
  ASSERT_STATUS_OK(cml_function_return(yes, &g, 1));
  cml_value_t c = cml_op_concatenate(no, 0, (cml_value_t[]){loop[1], loop[1]}, 2);
  ASSERT_STATUS_OK(cml_function_return(no, &c, 1));
  cml_value_t r;
  ASSERT_TRUE(cml_op_if(f, pred, yes, no, &r));
  ASSERT_STATUS_OK(cml_function_return(f, &r, 1));
  cml_executable_t* exe = NULL;
  ASSERT_STATUS_OK(cml_builder_compile(b, &exe));
  cml_builder_destroy(b);
  // Slot 0 [1 2], slot 1 [3 4]: sum [4 6], then doubled 4 more times: [64 96].
  const float xh[2][2] = {{1, 2}, {3, 4}};
  for (int p = 0; p < 2; ++p) {
    const uint8_t ph[2] = {(uint8_t)p, (uint8_t)p};
    cml_buffer_t* in[4] = {0};
    cml_buffer_t* out[2] = {0};
    ASSERT_STATUS_OK(put(be, &s, xh, sizeof xh[0], 2, NULL, 2, 0, in));
    ASSERT_STATUS_OK(put(be, &bs, ph, 1, 2, NULL, 2, 1, in));
    ASSERT_STATUS_OK(cml_executable_execute(exe, in, 4, NULL, 0, out));
    for (int j = 0; j < 2; ++j) {
      float got[4];
      ASSERT_STATUS_OK(cml_buffer_copy_to_host(out[j], got, sizeof got));
      ASSERT_EQ_DBL(got[0], 64);
      ASSERT_EQ_DBL(got[1], 96);
      ASSERT_EQ_DBL(got[2], 64);
      ASSERT_EQ_DBL(got[3], 96);
    }
    release_all(out, 2);
    release_all(in, 4);
  }
  cml_executable_release(exe);
  cml_backend_release(be);
}

// If (replica_id < 2) { AllReduce(x) } else { x } on 4 devices: slots 2 and 3 never reach the
// AllReduce that slots 0 and 1 wait at. XLA would hang; the c backend fails the execution.
TEST(if_on_replica_id_around_all_reduce_is_a_status_not_a_hang) {
  cml_backend_t* be = NULL;
  ASSERT_STATUS_OK(cml_backend_new_with_config("c:devices=4,threads=2", &be));
  cml_builder_t* b = NULL;
  ASSERT_STATUS_OK(cml_builder_create(be, "diverge", &b));
  ASSERT_STATUS_OK(cml_builder_spmd(b, 4));
  cml_function_t* f = cml_builder_main(b);
  cml_shape_t s = vec(CML_DTYPE_F32, 2);
  cml_value_t x = cml_parameter(f, "x", &s);
  cml_value_t low =
      cml_op_less_than(f, cml_op_replica_id(f), cml_constant_scalar_i64(f, CML_DTYPE_U32, 2));
  cml_function_t *yes = NULL, *no = NULL;
  ASSERT_STATUS_OK(cml_function_new_closure(f, &yes));
  ASSERT_STATUS_OK(cml_function_new_closure(f, &no));
  cml_value_t y;
  ASSERT_TRUE(cml_op_all_reduce(yes, &x, 1, CML_REDUCE_SUM, NULL, &y));
  ASSERT_STATUS_OK(cml_function_return(yes, &y, 1));
  ASSERT_STATUS_OK(cml_function_return(no, &x, 1));
  cml_value_t r;
  ASSERT_TRUE(cml_op_if(f, low, yes, no, &r));
  ASSERT_STATUS_OK(cml_function_return(f, &r, 1));
  cml_executable_t* exe = NULL;
  ASSERT_STATUS_OK(cml_builder_compile(b, &exe));
  cml_builder_destroy(b);
  const float xh[4][2] = {{1, 2}, {3, 4}, {5, 6}, {7, 8}};
  cml_buffer_t* in[4] = {0};
  cml_buffer_t* out[4] = {0};
  ASSERT_STATUS_OK(put(be, &s, xh, sizeof xh[0], 4, NULL, 1, 0, in));
  for (int rep = 0; rep < 5; ++rep) {
    cml_status_t st = cml_executable_execute(exe, in, 4, NULL, 0, out);
    ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_FAILED_PRECONDITION);
    ASSERT_CONTAINS(cml_status_message(st), "AllReduce (run 1) of replica group {0, 1, 2, 3}");
    ASSERT_CONTAINS(cml_status_message(st), "finished its program without reaching it");
    cml_status_free(st);
    for (int j = 0; j < 4; ++j) ASSERT_TRUE(out[j] == NULL);
  }
  // The executable still runs programs whose slots agree: nothing was left behind.
  release_all(in, 4);
  cml_executable_release(exe);
  cml_backend_release(be);
}

// A named function doing ReduceScatter then AllGather (an AllReduce in two steps), called twice
// from main: each call is a new round of both collectives.
TEST(collectives_inside_call) {
  cml_backend_t* be = NULL;
  ASSERT_STATUS_OK(cml_backend_new_with_config("c:devices=4,threads=2", &be));
  cml_builder_t* b = NULL;
  ASSERT_STATUS_OK(cml_builder_create(be, "call", &b));
  ASSERT_STATUS_OK(cml_builder_spmd(b, 4));
  cml_shape_t s = vec(CML_DTYPE_I32, 8);
  cml_function_t* g = NULL;
  ASSERT_STATUS_OK(cml_builder_new_function(b, "two_step_sum", &g));
  cml_value_t gx = cml_parameter(g, "x", &s);
  cml_value_t part = cml_op_reduce_scatter(g, gx, CML_REDUCE_SUM, 0, NULL);
  cml_value_t whole = cml_op_all_gather(g, part, 0, NULL);
  ASSERT_STATUS_OK(cml_function_return(g, &whole, 1));
  cml_function_t* f = cml_builder_main(b);
  cml_value_t x = cml_parameter(f, "x", &s), once, twice;
  ASSERT_TRUE(cml_op_call(f, g, &x, 1, &once));
  ASSERT_TRUE(cml_op_call(f, g, &once, 1, &twice));
  ASSERT_STATUS_OK(cml_function_return(f, &twice, 1));
  cml_executable_t* exe = NULL;
  ASSERT_STATUS_OK(cml_builder_compile(b, &exe));
  cml_builder_destroy(b);
  int32_t xh[4][8];
  for (int j = 0; j < 4; ++j) {
    for (int i = 0; i < 8; ++i) xh[j][i] = i * (j + 1);  // sum over slots: 10 i; twice: 40 i
  }
  cml_buffer_t* in[4] = {0};
  cml_buffer_t* out[4] = {0};
  ASSERT_STATUS_OK(put(be, &s, xh, sizeof xh[0], 4, NULL, 1, 0, in));
  ASSERT_STATUS_OK(cml_executable_execute(exe, in, 4, NULL, 0, out));
  for (int j = 0; j < 4; ++j) {
    int32_t got[8];
    ASSERT_STATUS_OK(cml_buffer_copy_to_host(out[j], got, sizeof got));
    for (int i = 0; i < 8; ++i) ASSERT_EQ_INT(got[i], 40 * i);
  }
  release_all(out, 4);
  release_all(in, 4);
  cml_executable_release(exe);
  cml_backend_release(be);
}

// A module without parameters takes no inputs: NULL is a valid input list (clang's UBSan saw
// NULL + 0 in the slot setup; found by the graph fuzzer).
TEST(no_parameters_null_inputs) {
  cml_backend_t* be = NULL;
  ASSERT_STATUS_OK(cml_backend_new_with_config("c:devices=2,threads=1", &be));
  cml_builder_t* b = NULL;
  ASSERT_STATUS_OK(cml_builder_create(be, "ids", &b));
  ASSERT_STATUS_OK(cml_builder_spmd(b, 2));
  cml_value_t id = cml_op_replica_id(cml_builder_main(b));
  ASSERT_STATUS_OK(cml_function_return(cml_builder_main(b), &id, 1));
  cml_executable_t* exe = NULL;
  ASSERT_STATUS_OK(cml_builder_compile(b, &exe));
  cml_builder_destroy(b);
  cml_buffer_t* out[2] = {0};
  ASSERT_STATUS_OK(cml_executable_execute(exe, NULL, 0, NULL, 0, out));
  for (uint32_t j = 0; j < 2; ++j) {
    uint32_t v = 99;
    ASSERT_STATUS_OK(cml_buffer_copy_to_host(out[j], &v, sizeof v));
    ASSERT_EQ_INT(v, j);
  }
  release_all(out, 2);
  cml_executable_release(exe);
  cml_backend_release(be);
}

//===--- stops ---===//

// counter loop: While (i < n) { i + 1 }, then AllReduce(i). Slot 0 gets n = 2^40 and loops for
// hours; the others wait at the AllReduce until the deadline (or the token) stops slot 0.
static cml_status_t build_long_loop(cml_backend_t* be, int devices, cml_executable_t** exe) {
  cml_builder_t* b = NULL;
  CML_RETURN_IF_ERROR(cml_builder_create(be, "long", &b));
  cml_status_t st = cml_builder_spmd(b, devices);
  cml_function_t* f = cml_builder_main(b);
  cml_shape_t is = cml_shape_make(CML_DTYPE_I64, 0, NULL);
  cml_value_t n = cml_parameter(f, "n", &is);
  cml_function_t *cond = NULL, *body = NULL;
  if (st == CML_OK) st = cml_function_new_closure(f, &cond);
  if (st == CML_OK) st = cml_function_new_closure(f, &body);
  if (st == CML_OK) {
    cml_value_t ci = cml_parameter(cond, "i", &is);
    cml_value_t go = cml_op_less_than(cond, ci, n);
    st = cml_function_return(cond, &go, 1);
  }
  if (st == CML_OK) {
    cml_value_t bi = cml_parameter(body, "i", &is);
    cml_value_t next = cml_op_add(body, bi, cml_constant_scalar_i64(body, CML_DTYPE_I64, 1));
    st = cml_function_return(body, &next, 1);
  }
  cml_value_t init = cml_constant_scalar_i64(f, CML_DTYPE_I64, 0), i, sum;
  cml_op_while(f, cond, body, &init, 1, &i);
  cml_op_all_reduce(f, &i, 1, CML_REDUCE_SUM, NULL, &sum);
  if (st == CML_OK) st = cml_function_return(f, &sum, 1);
  if (st == CML_OK) st = cml_builder_compile(b, exe);
  cml_builder_destroy(b);
  return st;
}

TEST(deadline_while_one_slot_loops_and_the_others_wait) {
  cml_backend_t* be = NULL;
  ASSERT_STATUS_OK(cml_backend_new_with_config("c:devices=4,threads=1", &be));
  cml_executable_t* exe = NULL;
  ASSERT_STATUS_OK(build_long_loop(be, 4, &exe));
  cml_shape_t is = cml_shape_make(CML_DTYPE_I64, 0, NULL);
  const int64_t nh[4] = {(int64_t)1 << 40, 1, 2, 3};
  cml_buffer_t* in[4] = {0};
  cml_buffer_t* out[4] = {0};
  ASSERT_STATUS_OK(put(be, &is, nh, sizeof nh[0], 4, NULL, 1, 0, in));
  cml_execute_options_t opts;
  cml_execute_options_init(&opts);
  opts.timeout_ns = 200 * 1000000;
  const int64_t start = cml_clock_monotonic_ns();
  cml_status_t st = cml_executable_execute_with_options(exe, in, 4, &opts, out);
  const int64_t took = cml_clock_monotonic_ns() - start;
  // Which slot reports the stop depends on scheduling: slot 0 sees the deadline in its While
  // (it names itself and the While), or, when slot 0 is not scheduled within the rendezvous'
  // grace period (a loaded machine), a slot waiting at the AllReduce reports it and names slot
  // 0 among the slots it waits for. Either way the status blames slot 0 and the While's
  // missing AllReduce, never a slot that finished its loop.
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_DEADLINE_EXCEEDED);
  const char* msg = cml_status_message(st);
  if (!strstr(msg, "while waiting at")) {
    ASSERT_CONTAINS(msg, "device slot 0 (device 0) of 4");
    ASSERT_CONTAINS(msg, "While");
  } else {
    ASSERT_CONTAINS(msg, "while waiting at AllReduce (run 1) of group {0, 1, 2, 3}");
    // The members that have not arrived are listed in group order: slot 0 first.
    ASSERT_CONTAINS(msg, "for device slot(s) 0");
    ASSERT_FALSE(strstr(msg, "device slot 0 (device 0) of 4") != NULL);
  }
  cml_status_free(st);
  for (int j = 0; j < 4; ++j) ASSERT_TRUE(out[j] == NULL);
  // Slot 0 would loop for hours: returning at all shows that the deadline stopped it (the
  // bound only guards against a hang; it is far above the 200 ms deadline).
  ASSERT_TRUE(took < (int64_t)30 * 1000000000);
  // The same executable with short loops everywhere: sum 1 + 1 + 2 + 3 = 7. A generous
  // deadline: it stays armed (the waits poll it) without racing a loaded machine.
  release_all(in, 4);
  const int64_t short_n[4] = {1, 1, 2, 3};
  ASSERT_STATUS_OK(put(be, &is, short_n, sizeof short_n[0], 4, NULL, 1, 0, in));
  opts.timeout_ns = (int64_t)60 * 1000000000;
  ASSERT_STATUS_OK(cml_executable_execute_with_options(exe, in, 4, &opts, out));
  for (int j = 0; j < 4; ++j) {
    int64_t v = 0;
    ASSERT_STATUS_OK(cml_buffer_copy_to_host(out[j], &v, sizeof v));
    ASSERT_EQ_INT(v, 7);
  }
  release_all(out, 4);
  release_all(in, 4);
  cml_executable_release(exe);
  cml_backend_release(be);
}

typedef struct canceller_t {
  cml_cancel_token_t* token;
  int delay_ms;
} canceller_t;

static void* cancel_later(void* arg) {
  canceller_t* c = (canceller_t*)arg;
  struct timespec ts = {0, (long)c->delay_ms * 1000000};
  nanosleep(&ts, NULL);
  cml_cancel_token_cancel(c->token);
  return NULL;
}

TEST(cancel_while_one_slot_loops) {
  cml_backend_t* be = NULL;
  ASSERT_STATUS_OK(cml_backend_new_with_config("c:devices=2,threads=2", &be));
  cml_executable_t* exe = NULL;
  ASSERT_STATUS_OK(build_long_loop(be, 2, &exe));
  cml_shape_t is = cml_shape_make(CML_DTYPE_I64, 0, NULL);
  const int64_t nh[2] = {5, (int64_t)1 << 40};
  cml_buffer_t* in[2] = {0};
  cml_buffer_t* out[2] = {0};
  ASSERT_STATUS_OK(put(be, &is, nh, sizeof nh[0], 2, NULL, 1, 0, in));
  cml_cancel_token_t* token = NULL;
  ASSERT_STATUS_OK(cml_cancel_token_create(cml_allocator_system(), &token));
  canceller_t c = {token, 50};
  pthread_t th;
  ASSERT_EQ_INT(pthread_create(&th, NULL, cancel_later, &c), 0);
  cml_execute_options_t opts;
  cml_execute_options_init(&opts);
  opts.cancel_token = token;
  cml_status_t st = cml_executable_execute_with_options(exe, in, 2, &opts, out);
  pthread_join(th, NULL);
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_CANCELLED);
  ASSERT_CONTAINS(cml_status_message(st), "device slot");
  cml_status_free(st);
  cml_cancel_token_destroy(token);
  release_all(in, 2);
  cml_executable_release(exe);
  cml_backend_release(be);
}

//===--- threads ---===//

typedef struct runner_t {
  cml_executable_t* exe;
  cml_buffer_t** in;
  int devices;
  int reps;
  int bad;
} runner_t;

static void* run_many(void* arg) {
  runner_t* r = (runner_t*)arg;
  for (int k = 0; k < r->reps; ++k) {
    cml_buffer_t* out[MAX_DEV] = {0};
    cml_status_t st = cml_executable_execute(r->exe, r->in, (size_t)r->devices, NULL, 0, out);
    if (st != CML_OK) {
      cml_status_free(st);
      ++r->bad;
      continue;
    }
    float v[2];
    for (int j = 0; j < r->devices; ++j) {
      st = cml_buffer_copy_to_host(out[j], v, sizeof v);
      if (st != CML_OK || v[0] != 36.f || v[1] != 72.f) ++r->bad;
      cml_status_free(st);
    }
    release_all(out, (size_t)r->devices);
  }
  return NULL;
}

// 8 slots on 2 threads, one executable executed by two threads at once.
TEST(more_slots_than_threads_and_concurrent_executions) {
  cml_backend_t* be = NULL;
  ASSERT_STATUS_OK(cml_backend_new_with_config("c:devices=8,threads=2", &be));
  cml_builder_t* b = NULL;
  ASSERT_STATUS_OK(cml_builder_create(be, "many", &b));
  ASSERT_STATUS_OK(cml_builder_spmd(b, 8));
  cml_function_t* f = cml_builder_main(b);
  cml_shape_t s = vec(CML_DTYPE_F32, 2);
  cml_value_t x = cml_parameter(f, "x", &s), r;
  ASSERT_TRUE(cml_op_all_reduce(f, &x, 1, CML_REDUCE_SUM, NULL, &r));
  ASSERT_STATUS_OK(cml_function_return(f, &r, 1));
  cml_executable_t* exe = NULL;
  ASSERT_STATUS_OK(cml_builder_compile(b, &exe));
  cml_builder_destroy(b);
  float xh[8][2];
  for (int j = 0; j < 8; ++j) xh[j][0] = (float)(j + 1), xh[j][1] = (float)(2 * (j + 1));
  cml_buffer_t* in[8] = {0};
  ASSERT_STATUS_OK(put(be, &s, xh, sizeof xh[0], 8, NULL, 1, 0, in));
  runner_t r1 = {exe, in, 8, 20, 0}, r2 = r1;
  pthread_t t1, t2;
  ASSERT_EQ_INT(pthread_create(&t1, NULL, run_many, &r1), 0);
  ASSERT_EQ_INT(pthread_create(&t2, NULL, run_many, &r2), 0);
  pthread_join(t1, NULL);
  pthread_join(t2, NULL);
  ASSERT_EQ_INT(r1.bad + r2.bad, 0);
  release_all(in, 8);
  cml_executable_release(exe);
  cml_backend_release(be);
}

// Donated inputs under SPMD: a returned parameter takes over each slot's donated storage.
TEST(donated_inputs_per_slot) {
  cml_backend_t* be = NULL;
  ASSERT_STATUS_OK(cml_backend_new_with_config("c:devices=2", &be));
  cml_builder_t* b = NULL;
  ASSERT_STATUS_OK(cml_builder_create(be, "donate", &b));
  ASSERT_STATUS_OK(cml_builder_spmd(b, 2));
  cml_function_t* f = cml_builder_main(b);
  cml_shape_t s = vec(CML_DTYPE_F32, 2);
  cml_value_t x = cml_parameter(f, "x", &s), r[2];
  ASSERT_TRUE(cml_op_all_reduce(f, &x, 1, CML_REDUCE_MIN, NULL, &r[0]));
  r[1] = x;
  ASSERT_STATUS_OK(cml_function_return(f, r, 2));
  cml_executable_t* exe = NULL;
  ASSERT_STATUS_OK(cml_builder_compile(b, &exe));
  cml_builder_destroy(b);
  const float xh[2][2] = {{1, 20}, {10, 2}};
  cml_buffer_t* in[2] = {0};
  cml_buffer_t* out[4] = {0};
  ASSERT_STATUS_OK(put(be, &s, xh, sizeof xh[0], 2, NULL, 1, 0, in));
  const bool donate[2] = {true, true};
  ASSERT_STATUS_OK(cml_executable_execute(exe, in, 2, donate, 0, out));
  for (int j = 0; j < 2; ++j) {
    float m[2], back[2];
    ASSERT_STATUS_OK(cml_buffer_copy_to_host(out[2 * j], m, sizeof m));
    ASSERT_STATUS_OK(cml_buffer_copy_to_host(out[2 * j + 1], back, sizeof back));
    ASSERT_EQ_DBL(m[0], 1);
    ASSERT_EQ_DBL(m[1], 2);
    ASSERT_EQ_DBL(back[0], xh[j][0]);
    ASSERT_EQ_DBL(back[1], xh[j][1]);
    ASSERT_EQ_INT(cml_buffer_device(out[2 * j + 1]), j);
  }
  // The donated inputs are spent.
  float spent[2];
  ASSERT_STATUS_CODE(cml_buffer_copy_to_host(in[0], spent, sizeof spent),
                     CML_STATUS_FAILED_PRECONDITION);
  release_all(out, 4);
  release_all(in, 2);
  cml_executable_release(exe);
  cml_backend_release(be);
}

//===--- bad input ---===//

TEST(bad_input_statuses) {
  cml_backend_t* be = NULL;
  ASSERT_STATUS_OK(cml_backend_new_with_config("c:devices=2", &be));
  // More slots than devices.
  cml_builder_t* b = NULL;
  ASSERT_STATUS_OK(cml_builder_create(be, "too_many", &b));
  ASSERT_STATUS_CODE(cml_builder_spmd(b, 3), CML_STATUS_INVALID_ARGUMENT);
  cml_builder_destroy(b);
  // Device-major inputs: the wrong count, and slot 1's input on device 0.
  ASSERT_STATUS_OK(cml_builder_create(be, "ok", &b));
  ASSERT_STATUS_OK(cml_builder_spmd(b, 2));
  cml_function_t* f = cml_builder_main(b);
  cml_shape_t s = vec(CML_DTYPE_F32, 2);
  cml_value_t x = cml_parameter(f, "x", &s), r;
  ASSERT_TRUE(cml_op_all_reduce(f, &x, 1, CML_REDUCE_SUM, NULL, &r));
  ASSERT_STATUS_OK(cml_function_return(f, &r, 1));
  cml_executable_t* exe = NULL;
  ASSERT_STATUS_OK(cml_builder_compile(b, &exe));
  cml_builder_destroy(b);
  const float xh[2] = {1, 2};
  cml_buffer_t* in[2] = {0};
  cml_buffer_t* out[2] = {0};
  ASSERT_STATUS_OK(cml_buffer_from_host(be, 0, &s, xh, sizeof xh, &in[0]));
  ASSERT_STATUS_OK(cml_buffer_from_host(be, 0, &s, xh, sizeof xh, &in[1]));
  ASSERT_STATUS_CODE(cml_executable_execute(exe, in, 1, NULL, 0, out), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_STATUS_CODE(cml_executable_execute(exe, in, 2, NULL, 0, out), CML_STATUS_INVALID_ARGUMENT);
  release_all(in, 2);
  cml_executable_release(exe);
  cml_backend_release(be);
}

// An AllReduce whose outputs are larger than the caches takes the streaming path (blocks
// reduced in L1, written to every output with non-temporal stores): odd element counts, so that
// the members' ranges start unaligned, f32 and Int8 (wrapping) operands, 8 threads (2 per
// slot, so the pool splits each member's range too), every element of every output checked,
// twice.
TEST(all_reduce_larger_than_the_caches) {
  enum { F = 2097157, B = 8388617 };  // x 4 devices: just above 32 MiB written per operand
  cml_backend_t* be = NULL;
  ASSERT_STATUS_OK(cml_backend_new_with_config("c:devices=4,threads=8", &be));
  cml_builder_t* b = NULL;
  ASSERT_STATUS_OK(cml_builder_create(be, "big", &b));
  ASSERT_STATUS_OK(cml_builder_spmd(b, 4));
  cml_function_t* f = cml_builder_main(b);
  cml_shape_t fs = vec(CML_DTYPE_F32, F), bs = vec(CML_DTYPE_I8, B);
  cml_value_t x[2] = {cml_parameter(f, "x", &fs), cml_parameter(f, "y", &bs)}, r[2];
  ASSERT_TRUE(cml_op_all_reduce(f, x, 2, CML_REDUCE_SUM, NULL, r));
  ASSERT_STATUS_OK(cml_function_return(f, r, 2));
  cml_executable_t* exe = NULL;
  ASSERT_STATUS_OK(cml_builder_compile(b, &exe));
  cml_builder_destroy(b);
  float* xf = malloc(sizeof(float) * F);
  int8_t* xb = malloc(B);
  float* gf = malloc(sizeof(float) * F);
  int8_t* gb = malloc(B);
  ASSERT_TRUE(xf && xb && gf && gb);
  cml_buffer_t* in[8] = {0};
  for (int j = 0; j < 4; ++j) {
    for (int64_t i = 0; i < F; ++i) xf[i] = (float)(i % 4093) + 10000.0f * (float)j;
    for (int64_t i = 0; i < B; ++i) xb[i] = (int8_t)(uint8_t)(i * 7 + j * 61);
    ASSERT_STATUS_OK(cml_buffer_from_host(be, j, &fs, xf, sizeof(float) * F, &in[2 * j]));
    ASSERT_STATUS_OK(cml_buffer_from_host(be, j, &bs, xb, B, &in[2 * j + 1]));
  }
  for (int rep = 0; rep < 2; ++rep) {
    cml_buffer_t* out[8] = {0};
    ASSERT_STATUS_OK(cml_executable_execute(exe, in, 8, NULL, 0, out));
    for (int j = 0; j < 4; ++j) {
      ASSERT_STATUS_OK(cml_buffer_copy_to_host(out[2 * j], gf, sizeof(float) * F));
      ASSERT_STATUS_OK(cml_buffer_copy_to_host(out[2 * j + 1], gb, B));
      int64_t bad_f = 0, bad_b = 0;
      for (int64_t i = 0; i < F; ++i) {
        bad_f += gf[i] != 4.0f * (float)(i % 4093) + 60000.0f;
      }
      for (int64_t i = 0; i < B; ++i) {
        bad_b += gb[i] != (int8_t)(uint8_t)(4 * (uint32_t)i * 7 + 6 * 61);
      }
      ASSERT_EQ_INT(bad_f, 0);
      ASSERT_EQ_INT(bad_b, 0);
    }
    release_all(out, 8);
  }
  release_all(in, 8);
  free(xf);
  free(xb);
  free(gf);
  free(gb);
  cml_executable_release(exe);
  cml_backend_release(be);
}

TEST_MAIN(TEST_ENTRY(all_reduce_plus_replica_id), TEST_ENTRY(all_reduce_larger_than_the_caches),
          TEST_ENTRY(all_reduce_in_place_of_dying_operands),
          TEST_ENTRY(every_collective_reference_values),
          TEST_ENTRY(groups_several_operands_device_assignment), TEST_ENTRY(all_reduce_every_dtype),
          TEST_ENTRY(collectives_inside_while_and_if), TEST_ENTRY(collectives_inside_call),
          TEST_ENTRY(if_on_replica_id_around_all_reduce_is_a_status_not_a_hang),
          TEST_ENTRY(no_parameters_null_inputs),
          TEST_ENTRY(deadline_while_one_slot_loops_and_the_others_wait),
          TEST_ENTRY(cancel_while_one_slot_loops),
          TEST_ENTRY(more_slots_than_threads_and_concurrent_executions),
          TEST_ENTRY(donated_inputs_per_slot), TEST_ENTRY(bad_input_statuses))
