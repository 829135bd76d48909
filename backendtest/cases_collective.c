// SPDX-License-Identifier: Apache-2.0
// backendtest/cases_collective.c: many devices (cml/distributed.h): every collective op under
// SPMD over 4 devices (AllReduce sum/product/max/min with several operands and replica groups,
// AllGather, ReduceScatter, AllToAll, CollectivePermute, CollectiveBroadcast, ReplicaId,
// PartitionId), and AutoSharding data-parallel and Megatron-style (column- then row-sharded Dot)
// programs. A backend without the strategy's capability bit or with fewer than 4 devices skips
// them with the reason.
//
// Device j's input element i is one of three formulas (see coll_input); the expected per-device
// results were computed independently, by a plain Python model of the StableHLO semantics (group
// order, parts, zero-filled permute targets), and are written out below. The AutoSharding cases
// compute their expected values with host loops over the whole (logical) tensors.
#include <string.h>

#include "backendtest/bt.h"

#define COLL_DEVICES 4

//===--- expected values (device-major: device 0's elements, then device 1's, ...) ---===//

// AllReduce Sum, all devices, f32 [2, 4], formula 0.
static const double kWantA[] = {60, 64, 68, 72, 76, 80, 84, 88, 60, 64, 68, 72, 76, 80, 84, 88,
                                60, 64, 68, 72, 76, 80, 84, 88, 60, 64, 68, 72, 76, 80, 84, 88};
// AllReduce Product, all devices, f32 [2, 3], formula 1.
static const double kWantB[] = {6, 12, 18, 6, 12, 18, 6, 12, 18, 6, 12, 18,
                                6, 12, 18, 6, 12, 18, 6, 12, 18, 6, 12, 18};
// AllReduce Max, groups {{0, 2}, {1, 3}}, i32 [2, 3], formula 2.
static const double kWantC[] = {4, 5, 6, 7, 8, 9, -5, -6, -7, -8, -9, -10,
                                4, 5, 6, 7, 8, 9, -5, -6, -7, -8, -9, -10};
// AllReduce Min, groups {{3, 1}, {2, 0}}, f32 [2, 3], formula 2.
static const double kWantD[] = {-2, -1, 0, 1, 2, 3, -11, -12, -13, -14, -15, -16,
                                -2, -1, 0, 1, 2, 3, -11, -12, -13, -14, -15, -16};
// AllReduce Sum of two operands, groups {{0, 1}, {2, 3}}: f32 [2, 2] formula 0, i32 [3]
// formula 1.
static const double kWantE1[] = {10, 12, 14, 16, 10, 12, 14, 16, 50, 52, 54, 56, 50, 52, 54, 56};
static const double kWantE2[] = {3, 5, 4, 3, 5, 4, 4, 3, 5, 4, 3, 5};
// AllGather axis 0, all devices, f32 [2, 2] -> [8, 2], formula 0.
static const double kWantF[] = {0, 1, 2, 3, 10, 11, 12, 13, 20, 21, 22, 23, 30, 31, 32, 33,
                                0, 1, 2, 3, 10, 11, 12, 13, 20, 21, 22, 23, 30, 31, 32, 33,
                                0, 1, 2, 3, 10, 11, 12, 13, 20, 21, 22, 23, 30, 31, 32, 33,
                                0, 1, 2, 3, 10, 11, 12, 13, 20, 21, 22, 23, 30, 31, 32, 33};
// AllGather axis 1, groups {{1, 0}, {3, 2}} (group order), i32 [2, 2] -> [2, 4], formula 0.
static const double kWantG[] = {10, 11, 0,  1,  12, 13, 2,  3,  10, 11, 0,  1,  12, 13, 2,  3,
                                30, 31, 20, 21, 32, 33, 22, 23, 30, 31, 20, 21, 32, 33, 22, 23};
// ReduceScatter Sum axis 0, all devices, f32 [8, 2] -> [2, 2], formula 0.
static const double kWantH[] = {60, 64, 68,  72,  76,  80,  84,  88,
                                92, 96, 100, 104, 108, 112, 116, 120};
// ReduceScatter Max axis 1, groups {{0, 1}, {2, 3}}, f32 [2, 4] -> [2, 2], formula 2.
static const double kWantI[] = {-2, -1, 2, 3, 0, 1, 4, 5, 4, 5, 8, 9, 6, 7, 10, 11};
// AllToAll split 0 concat 0, all devices, f32 [4, 2], formula 0.
static const double kWantJ[] = {0, 1, 10, 11, 20, 21, 30, 31, 2, 3, 12, 13, 22, 23, 32, 33,
                                4, 5, 14, 15, 24, 25, 34, 35, 6, 7, 16, 17, 26, 27, 36, 37};
// AllToAll split 1 concat 0, groups {{0, 1}, {2, 3}}, i32 [2, 4] -> [4, 2], formula 0.
static const double kWantK[] = {0,  1,  4,  5,  10, 11, 14, 15, 2,  3,  6,  7,  12, 13, 16, 17,
                                20, 21, 24, 25, 30, 31, 34, 35, 22, 23, 26, 27, 32, 33, 36, 37};
// CollectivePermute ring 0->1->2->3->0, f32 [2, 2], formula 0.
static const double kWantL[] = {30, 31, 32, 33, 0, 1, 2, 3, 10, 11, 12, 13, 20, 21, 22, 23};
// CollectivePermute {0->2, 3->1}: devices 0 and 3 receive nothing (zeros).
static const double kWantM[] = {0, 0, 0, 0, 30, 31, 32, 33, 0, 1, 2, 3, 0, 0, 0, 0};
// CollectiveBroadcast, groups {{2, 0, 1, 3}}: every device gets device 2's value.
static const double kWantN[] = {20, 21, 22, 23, 20, 21, 22, 23, 20, 21, 22, 23, 20, 21, 22, 23};
// CollectiveBroadcast, groups {{1, 0}, {3, 2}}, i32.
static const double kWantO[] = {10, 11, 12, 13, 10, 11, 12, 13, 30, 31, 32, 33, 30, 31, 32, 33};

//===--- helpers ---===//

// Device |j|'s element |i| under |formula|: 0: 10j + i; 1: 1 + (i + j) mod 3; 2: (-1)^j (3j + i)
// - 2.
static double coll_input(int formula, int j, int64_t i) {
  switch (formula) {
    case 0:
      return 10.0 * j + (double)i;
    case 1:
      return 1.0 + (double)((i + j) % 3);
    default:
      return (j % 2 ? -1.0 : 1.0) * (3.0 * j + (double)i) - 2.0;
  }
}

// The per-device input tensors of one operand.
static bool coll_inputs(bt_t* t, cml_dtype_t dtype, int formula, int32_t rank, const int64_t* dims,
                        bt_tensor_t* out, size_t stride) {
  int64_t n = 1;
  for (int32_t d = 0; d < rank; ++d) n *= dims[d];
  double* values = bt_alloc(t, (size_t)(n + 1) * sizeof *values);
  if (!values) return false;
  for (int j = 0; j < COLL_DEVICES; ++j) {
    for (int64_t i = 0; i < n; ++i) values[i] = coll_input(formula, j, i);
    out[(size_t)j * stride] = bt_tensor_f64(t, dtype, rank, dims, values);
    if (!out[(size_t)j * stride].data) return false;
  }
  return true;
}

// Checks output |k| of |r| per device against |want| (device-major, |n| elements per device).
static void coll_expect(bt_t* t, const bt_tensor_t* out, size_t k, size_t r, cml_dtype_t dtype,
                        int32_t rank, const int64_t* dims, const double* want, int64_t n) {
  for (int j = 0; j < COLL_DEVICES; ++j) {
    char what[48];
    snprintf(what, sizeof what, "output %zu of device %d", k, j);
    bt_expect_f64(t, what, &out[(size_t)j * r + k], dtype, rank, dims, want + (size_t)j * n, 0);
  }
}

// Requires SPMD over 4 devices and |op|, and starts the builder.
static bool coll_begin(bt_t* t, cml_op_t op) {
  return bt_require_devices(t, CML_DISTRIBUTION_SPMD, COLL_DEVICES) && bt_require_op(t, op) &&
         bt_spmd(t, COLL_DEVICES);
}

typedef struct coll_spec_t {
  cml_op_t op;
  cml_reduce_type_t type;
  cml_dtype_t dtype;
  int formula;
  int64_t in_dims[2], out_dims[2];
  int64_t axis, axis2;  // AllGather / ReduceScatter axis; AllToAll split and concat axes
  const int32_t* groups;
  size_t group_count, group_size;
  const int32_t* pairs;  // CollectivePermute
  size_t pair_count;
  const double* want;
} coll_spec_t;

// Builds |spec|'s one-op program on one f32/i32 [a, b] operand, runs it on 4 devices and checks
// every device's result.
static void coll_run(bt_t* t, const coll_spec_t* spec) {
  if (!coll_begin(t, spec->op) || !bt_require_dtype(t, spec->dtype)) return;
  cml_function_t* f = bt_main(t);
  cml_shape_t s = cml_shape_make(spec->dtype, 2, spec->in_dims);
  cml_value_t x = cml_parameter(f, "x", &s), y = CML_VALUE_INVALID;
  cml_replica_groups_t g = {spec->groups, spec->group_count, spec->group_size};
  const cml_replica_groups_t* groups = spec->groups ? &g : NULL;
  switch (spec->op) {
    case CML_OP_ALL_REDUCE:
      (void)cml_op_all_reduce(f, &x, 1, spec->type, groups, &y);
      break;
    case CML_OP_ALL_GATHER:
      y = cml_op_all_gather(f, x, spec->axis, groups);
      break;
    case CML_OP_REDUCE_SCATTER:
      y = cml_op_reduce_scatter(f, x, spec->type, spec->axis, groups);
      break;
    case CML_OP_ALL_TO_ALL:
      y = cml_op_all_to_all(f, x, spec->axis, spec->axis2, groups);
      break;
    case CML_OP_COLLECTIVE_PERMUTE:
      y = cml_op_collective_permute(f, x, spec->pairs, spec->pair_count);
      break;
    default:
      y = cml_op_collective_broadcast(f, x, groups);
      break;
  }
  cml_executable_t* exe = bt_compile(t, &y, 1);
  if (!exe) return;
  bt_tensor_t in[COLL_DEVICES], out[COLL_DEVICES];
  if (!coll_inputs(t, spec->dtype, spec->formula, 2, spec->in_dims, in, 1)) return;
  if (!bt_run_devices(t, exe, in, NULL, out)) return;
  coll_expect(t, out, 0, 1, spec->dtype, 2, spec->out_dims, spec->want,
              spec->out_dims[0] * spec->out_dims[1]);
}

//===--- SPMD collectives ---===//

static const int32_t kPairsOf2[] = {0, 2, 1, 3};   // {{0, 2}, {1, 3}}
static const int32_t kMinGroups[] = {3, 1, 2, 0};  // {{3, 1}, {2, 0}}
static const int32_t kHalves[] = {0, 1, 2, 3};     // {{0, 1}, {2, 3}}
static const int32_t kSwapped[] = {1, 0, 3, 2};    // {{1, 0}, {3, 2}}
static const int32_t kFrom2[] = {2, 0, 1, 3};      // {{2, 0, 1, 3}}
static const int32_t kRing[] = {0, 1, 1, 2, 2, 3, 3, 0};
static const int32_t kPartial[] = {0, 2, 3, 1};

static void case_all_reduce_sum(bt_t* t) {
  coll_spec_t s = {.op = CML_OP_ALL_REDUCE,
                   .type = CML_REDUCE_SUM,
                   .dtype = CML_DTYPE_F32,
                   .formula = 0,
                   .in_dims = {2, 4},
                   .out_dims = {2, 4},
                   .want = kWantA};
  coll_run(t, &s);
}

static void case_all_reduce_product(bt_t* t) {
  coll_spec_t s = {.op = CML_OP_ALL_REDUCE,
                   .type = CML_REDUCE_PRODUCT,
                   .dtype = CML_DTYPE_F32,
                   .formula = 1,
                   .in_dims = {2, 3},
                   .out_dims = {2, 3},
                   .want = kWantB};
  coll_run(t, &s);
}

static void case_all_reduce_max_groups(bt_t* t) {
  coll_spec_t s = {.op = CML_OP_ALL_REDUCE,
                   .type = CML_REDUCE_MAX,
                   .dtype = CML_DTYPE_I32,
                   .formula = 2,
                   .in_dims = {2, 3},
                   .out_dims = {2, 3},
                   .groups = kPairsOf2,
                   .group_count = 2,
                   .group_size = 2,
                   .want = kWantC};
  coll_run(t, &s);
}

static void case_all_reduce_min_groups(bt_t* t) {
  coll_spec_t s = {.op = CML_OP_ALL_REDUCE,
                   .type = CML_REDUCE_MIN,
                   .dtype = CML_DTYPE_F32,
                   .formula = 2,
                   .in_dims = {2, 3},
                   .out_dims = {2, 3},
                   .groups = kMinGroups,
                   .group_count = 2,
                   .group_size = 2,
                   .want = kWantD};
  coll_run(t, &s);
}

// Two operands of different dtypes and shapes in one AllReduce, with groups.
static void case_all_reduce_two_operands(bt_t* t) {
  if (!coll_begin(t, CML_OP_ALL_REDUCE) || !bt_require_dtype(t, CML_DTYPE_F32) ||
      !bt_require_dtype(t, CML_DTYPE_I32)) {
    return;
  }
  cml_function_t* f = bt_main(t);
  const int64_t d0[2] = {2, 2}, d1[1] = {3};
  cml_shape_t s0 = cml_shape_make(CML_DTYPE_F32, 2, d0), s1 = cml_shape_make(CML_DTYPE_I32, 1, d1);
  cml_value_t x[2] = {cml_parameter(f, "a", &s0), cml_parameter(f, "b", &s1)}, y[2];
  cml_replica_groups_t g = {kHalves, 2, 2};
  (void)cml_op_all_reduce(f, x, 2, CML_REDUCE_SUM, &g, y);
  cml_executable_t* exe = bt_compile(t, y, 2);
  if (!exe) return;
  bt_tensor_t in[2 * COLL_DEVICES], out[2 * COLL_DEVICES];
  if (!coll_inputs(t, CML_DTYPE_F32, 0, 2, d0, in, 2) ||
      !coll_inputs(t, CML_DTYPE_I32, 1, 1, d1, in + 1, 2)) {
    return;
  }
  if (!bt_run_devices(t, exe, in, NULL, out)) return;
  coll_expect(t, out, 0, 2, CML_DTYPE_F32, 2, d0, kWantE1, 4);
  coll_expect(t, out, 1, 2, CML_DTYPE_I32, 1, d1, kWantE2, 3);
}

static void case_all_gather_axis0(bt_t* t) {
  coll_spec_t s = {.op = CML_OP_ALL_GATHER,
                   .dtype = CML_DTYPE_F32,
                   .formula = 0,
                   .in_dims = {2, 2},
                   .out_dims = {8, 2},
                   .axis = 0,
                   .want = kWantF};
  coll_run(t, &s);
}

static void case_all_gather_axis1_groups(bt_t* t) {
  coll_spec_t s = {.op = CML_OP_ALL_GATHER,
                   .dtype = CML_DTYPE_I32,
                   .formula = 0,
                   .in_dims = {2, 2},
                   .out_dims = {2, 4},
                   .axis = 1,
                   .groups = kSwapped,
                   .group_count = 2,
                   .group_size = 2,
                   .want = kWantG};
  coll_run(t, &s);
}

static void case_reduce_scatter_sum(bt_t* t) {
  coll_spec_t s = {.op = CML_OP_REDUCE_SCATTER,
                   .type = CML_REDUCE_SUM,
                   .dtype = CML_DTYPE_F32,
                   .formula = 0,
                   .in_dims = {8, 2},
                   .out_dims = {2, 2},
                   .axis = 0,
                   .want = kWantH};
  coll_run(t, &s);
}

static void case_reduce_scatter_max_groups(bt_t* t) {
  coll_spec_t s = {.op = CML_OP_REDUCE_SCATTER,
                   .type = CML_REDUCE_MAX,
                   .dtype = CML_DTYPE_F32,
                   .formula = 2,
                   .in_dims = {2, 4},
                   .out_dims = {2, 2},
                   .axis = 1,
                   .groups = kHalves,
                   .group_count = 2,
                   .group_size = 2,
                   .want = kWantI};
  coll_run(t, &s);
}

static void case_all_to_all(bt_t* t) {
  coll_spec_t s = {.op = CML_OP_ALL_TO_ALL,
                   .dtype = CML_DTYPE_F32,
                   .formula = 0,
                   .in_dims = {4, 2},
                   .out_dims = {4, 2},
                   .axis = 0,
                   .axis2 = 0,
                   .want = kWantJ};
  coll_run(t, &s);
}

static void case_all_to_all_groups(bt_t* t) {
  coll_spec_t s = {.op = CML_OP_ALL_TO_ALL,
                   .dtype = CML_DTYPE_I32,
                   .formula = 0,
                   .in_dims = {2, 4},
                   .out_dims = {4, 2},
                   .axis = 1,
                   .axis2 = 0,
                   .groups = kHalves,
                   .group_count = 2,
                   .group_size = 2,
                   .want = kWantK};
  coll_run(t, &s);
}

static void case_collective_permute_ring(bt_t* t) {
  coll_spec_t s = {.op = CML_OP_COLLECTIVE_PERMUTE,
                   .dtype = CML_DTYPE_F32,
                   .formula = 0,
                   .in_dims = {2, 2},
                   .out_dims = {2, 2},
                   .pairs = kRing,
                   .pair_count = 4,
                   .want = kWantL};
  coll_run(t, &s);
}

static void case_collective_permute_partial(bt_t* t) {
  coll_spec_t s = {.op = CML_OP_COLLECTIVE_PERMUTE,
                   .dtype = CML_DTYPE_F32,
                   .formula = 0,
                   .in_dims = {2, 2},
                   .out_dims = {2, 2},
                   .pairs = kPartial,
                   .pair_count = 2,
                   .want = kWantM};
  coll_run(t, &s);
}

static void case_collective_broadcast(bt_t* t) {
  coll_spec_t s = {.op = CML_OP_COLLECTIVE_BROADCAST,
                   .dtype = CML_DTYPE_F32,
                   .formula = 0,
                   .in_dims = {2, 2},
                   .out_dims = {2, 2},
                   .groups = kFrom2,
                   .group_count = 1,
                   .group_size = 4,
                   .want = kWantN};
  coll_run(t, &s);
}

static void case_collective_broadcast_groups(bt_t* t) {
  coll_spec_t s = {.op = CML_OP_COLLECTIVE_BROADCAST,
                   .dtype = CML_DTYPE_I32,
                   .formula = 0,
                   .in_dims = {2, 2},
                   .out_dims = {2, 2},
                   .groups = kSwapped,
                   .group_count = 2,
                   .group_size = 2,
                   .want = kWantO};
  coll_run(t, &s);
}

// ReplicaId per device, and used in arithmetic: x * f32(replica id) with x = [1, 2].
static void case_replica_id(bt_t* t) {
  if (!coll_begin(t, CML_OP_REPLICA_ID) || !bt_require_dtype(t, CML_DTYPE_U32) ||
      !bt_require_op(t, CML_OP_CONVERT_DTYPE) || !bt_require_op(t, CML_OP_MUL)) {
    return;
  }
  cml_function_t* f = bt_main(t);
  const int64_t d[1] = {2};
  cml_shape_t s = cml_shape_make(CML_DTYPE_F32, 1, d);
  cml_value_t x = cml_parameter(f, "x", &s);
  cml_value_t id = cml_op_replica_id(f);
  cml_value_t y = cml_op_mul(f, x, cml_op_convert_dtype(f, id, CML_DTYPE_F32));
  cml_value_t outs[2] = {id, y};
  cml_executable_t* exe = bt_compile(t, outs, 2);
  if (!exe) return;
  bt_tensor_t in[COLL_DEVICES], out[2 * COLL_DEVICES];
  for (int j = 0; j < COLL_DEVICES; ++j)
    in[j] = bt_tensor_f64(t, CML_DTYPE_F32, 1, d, (double[]){1, 2});
  if (!bt_run_devices(t, exe, in, NULL, out)) return;
  for (int j = 0; j < COLL_DEVICES; ++j) {
    bt_expect_i64(t, "replica id", &out[2 * j], CML_DTYPE_U32, 0, NULL, (int64_t[]){j});
    bt_expect_f64(t, "x * replica id", &out[2 * j + 1], CML_DTYPE_F32, 1, d, (double[]){j, 2.0 * j},
                  0);
  }
}

// PartitionId is 0 on every device of an SPMD module (one partition).
static void case_partition_id(bt_t* t) {
  if (!coll_begin(t, CML_OP_PARTITION_ID) || !bt_require_dtype(t, CML_DTYPE_U32)) return;
  cml_function_t* f = bt_main(t);
  cml_value_t id = cml_op_partition_id(f);
  cml_executable_t* exe = bt_compile(t, &id, 1);
  if (!exe) return;
  bt_tensor_t out[COLL_DEVICES];
  if (!bt_run_devices(t, exe, NULL, NULL, out)) return;
  for (int j = 0; j < COLL_DEVICES; ++j) {
    bt_expect_i64(t, "partition id", &out[j], CML_DTYPE_U32, 0, NULL, (int64_t[]){0});
  }
}

// AllReduce of a per-device gradient on a permuted device assignment: slot j runs on device
// 3 - j, its inputs and outputs live there, and the sum is the same.
static void case_all_reduce_device_assignment(bt_t* t) {
  if (!coll_begin(t, CML_OP_ALL_REDUCE) || !bt_require_dtype(t, CML_DTYPE_F32)) return;
  static const int32_t devices[COLL_DEVICES] = {3, 2, 1, 0};
  if (!bt_ok(t, cml_builder_device_assignment(bt_builder(t), devices, COLL_DEVICES),
             "cml_builder_device_assignment")) {
    return;
  }
  cml_function_t* f = bt_main(t);
  const int64_t d[2] = {2, 4};
  cml_shape_t s = cml_shape_make(CML_DTYPE_F32, 2, d);
  cml_value_t x = cml_parameter(f, "x", &s), y;
  (void)cml_op_all_reduce(f, &x, 1, CML_REDUCE_SUM, NULL, &y);
  cml_executable_t* exe = bt_compile(t, &y, 1);
  if (!exe) return;
  bt_tensor_t in[COLL_DEVICES], out[COLL_DEVICES];
  if (!coll_inputs(t, CML_DTYPE_F32, 0, 2, d, in, 1)) return;
  if (!bt_run_devices(t, exe, in, devices, out)) return;
  coll_expect(t, out, 0, 1, CML_DTYPE_F32, 2, d, kWantA, 8);
}

//===--- AutoSharding ---===//

// A one-axis mesh named "mesh" with axis |axis| of COLL_DEVICES devices (case-owned through
// |*out|; destroy it at the end).
static cml_mesh_t* coll_mesh(bt_t* t, const char* axis) {
  cml_mesh_t* m = NULL;
  const int64_t size = COLL_DEVICES;
  if (!bt_ok(t, cml_mesh_create("mesh", &axis, &size, 1, &m), "cml_mesh_create")) return NULL;
  return m;
}

// Data parallel: x [8, 3] batch-sharded over "data", w [3, 2] replicated. Results: y = x.w
// (batch-sharded: each device its [2, 2] rows), total = sum(y) (replicated scalar) and
// g = transpose(x).y (replicated [3, 2]: a contraction over the sharded batch).
static void run_data_parallel(bt_t* t, cml_mesh_t* m) {
  cml_builder_t* b = bt_builder(t);
  cml_function_t* f = bt_main(t);
  const cml_mesh_t* meshes[1] = {m};
  if (!b || !bt_auto_sharding(t, meshes, 1)) return;
  cml_sharding_t batch, replicated;
  if (!bt_ok(t, cml_sharding_make(m, (const char* const[]){"data"}, 1, &batch),
             "cml_sharding_make")) {
    return;
  }
  cml_sharding_replicated(m, &replicated);
  const int64_t xd[2] = {8, 3}, wd[2] = {3, 2};
  cml_shape_t xs = cml_shape_make(CML_DTYPE_F32, 2, xd), ws = cml_shape_make(CML_DTYPE_F32, 2, wd);
  cml_value_t x = cml_parameter_sharded(f, "x", &xs, &batch);
  cml_value_t w = cml_parameter_sharded(f, "w", &ws, &replicated);
  cml_value_t y = cml_op_dot(f, x, w);
  cml_value_t total = cml_op_reduce_sum(f, y, (const int64_t[]){0, 1}, 2);
  cml_value_t g = cml_op_dot(f, cml_op_transpose(f, x, (const int64_t[]){1, 0}, 2), y);
  cml_value_t outs[3] = {y, total, g};
  cml_sharding_t specs[3] = {batch, replicated, replicated};
  cml_executable_t* exe = bt_compile_sharded(t, outs, 3, specs);
  if (!exe) return;

  // Host values and the whole-tensor reference.
  double xv[24], wv[6] = {1, -1, 2, 0.5, -1, 3}, yv[16], gv[6] = {0}, tv = 0;
  for (int i = 0; i < 24; ++i) xv[i] = (double)((i * 5) % 7) - 3;
  for (int r = 0; r < 8; ++r) {
    for (int c = 0; c < 2; ++c) {
      double acc = 0;
      for (int k = 0; k < 3; ++k) acc += xv[r * 3 + k] * wv[k * 2 + c];
      yv[r * 2 + c] = acc;
      tv += acc;
    }
  }
  for (int k = 0; k < 3; ++k) {
    for (int c = 0; c < 2; ++c) {
      for (int r = 0; r < 8; ++r) gv[k * 2 + c] += xv[r * 3 + k] * yv[r * 2 + c];
    }
  }
  // Device j gets rows 2j, 2j + 1 of x and all of w.
  bt_tensor_t in[2 * COLL_DEVICES], out[3 * COLL_DEVICES];
  const int64_t shard_dims[2] = {2, 3};
  for (int j = 0; j < COLL_DEVICES; ++j) {
    in[2 * j] = bt_tensor_f64(t, CML_DTYPE_F32, 2, shard_dims, xv + 6 * j);
    in[2 * j + 1] = bt_tensor_f64(t, CML_DTYPE_F32, 2, wd, wv);
  }
  if (!bt_run_devices(t, exe, in, NULL, out)) return;
  const int64_t yd[2] = {2, 2}, gd[2] = {3, 2};
  for (int j = 0; j < COLL_DEVICES; ++j) {
    char what[64];
    snprintf(what, sizeof what, "y rows %d..%d on device %d", 2 * j, 2 * j + 1, j);
    bt_expect_f64(t, what, &out[3 * j], CML_DTYPE_F32, 2, yd, yv + 4 * j, 0);
    snprintf(what, sizeof what, "sum(y) on device %d", j);
    bt_expect_f64(t, what, &out[3 * j + 1], CML_DTYPE_F32, 0, NULL, &tv, 0);
    snprintf(what, sizeof what, "x^T.y on device %d", j);
    bt_expect_f64(t, what, &out[3 * j + 2], CML_DTYPE_F32, 2, gd, gv, 0);
  }
}

// Float16 sums and products across devices combine in f32 and round once, as one device
// computes them. SPMD: AllReduce and ReduceScatter of v, where element j is 2048 on device j and
// 1 elsewhere (2051: 2052 in Float16; summed in Float16 from the 2048 on it stays 2048), and an
// AllReduce product of 256, 256, 2^-8, 2^-8 (1; in Float16, 256 * 256 overflows). AutoSharding:
// ReduceSum of [2048, 1 x 7] and ReduceProduct of [256 x 4, 2^-8 x 4], both split over the
// mesh (2055: 2056 in Float16; 1, where each device's own product 256 * 256 overflowed).
static void case_half_reductions_round_once(bt_t* t) {
  if (!bt_require_dtype(t, CML_DTYPE_F16) || !coll_begin(t, CML_OP_ALL_REDUCE) ||
      !bt_require_op(t, CML_OP_REDUCE_SCATTER)) {
    return;
  }
  cml_function_t* f = bt_main(t);
  const int64_t n = COLL_DEVICES;
  cml_shape_t s = cml_shape_make(CML_DTYPE_F16, 1, &n);
  cml_value_t v = cml_parameter(f, "v", &s), p = cml_parameter(f, "p", &s);
  cml_value_t outs[3] = {CML_VALUE_INVALID, CML_VALUE_INVALID, CML_VALUE_INVALID};
  (void)cml_op_all_reduce(f, &v, 1, CML_REDUCE_SUM, NULL, &outs[0]);
  outs[1] = cml_op_reduce_scatter(f, v, CML_REDUCE_SUM, 0, NULL);
  (void)cml_op_all_reduce(f, &p, 1, CML_REDUCE_PRODUCT, NULL, &outs[2]);
  cml_executable_t* exe = bt_compile(t, outs, 3);
  if (!exe) return;
  bt_tensor_t in[2 * COLL_DEVICES], out[3 * COLL_DEVICES];
  for (int j = 0; j < COLL_DEVICES; ++j) {
    double vv[COLL_DEVICES], pv[COLL_DEVICES];
    for (int i = 0; i < COLL_DEVICES; ++i) {
      vv[i] = i == j ? 2048 : 1;
      pv[i] = j < COLL_DEVICES / 2 ? 256 : 1.0 / 256;
    }
    in[2 * j] = bt_tensor_f64(t, CML_DTYPE_F16, 1, &n, vv);
    in[2 * j + 1] = bt_tensor_f64(t, CML_DTYPE_F16, 1, &n, pv);
  }
  if (!bt_run_devices(t, exe, in, NULL, out)) return;
  const double sums[COLL_DEVICES] = {2052, 2052, 2052, 2052}, ones[COLL_DEVICES] = {1, 1, 1, 1};
  const int64_t one = 1;
  for (int j = 0; j < COLL_DEVICES; ++j) {
    char what[80];
    snprintf(what, sizeof what, "AllReduce sum on device %d", j);
    bt_expect_f64(t, what, &out[3 * j], CML_DTYPE_F16, 1, &n, sums, 0);
    snprintf(what, sizeof what, "ReduceScatter sum on device %d", j);
    bt_expect_f64(t, what, &out[3 * j + 1], CML_DTYPE_F16, 1, &one, sums, 0);
    snprintf(what, sizeof what, "AllReduce product on device %d", j);
    bt_expect_f64(t, what, &out[3 * j + 2], CML_DTYPE_F16, 1, &n, ones, 0);
  }
}

// AutoSharding over a 1-D mesh "data" of COLL_DEVICES: |split| splits a tensor's first axis
// over it, |replicated| replicates. Returns the mesh (the caller destroys it), NULL after
// recording a failure.
static cml_mesh_t* coll_split_setup(bt_t* t, cml_sharding_t* split, cml_sharding_t* replicated) {
  cml_mesh_t* m = coll_mesh(t, "data");
  if (!m) return NULL;
  const cml_mesh_t* meshes[1] = {m};
  if (!bt_builder(t) || !bt_auto_sharding(t, meshes, 1) ||
      !bt_ok(t, cml_sharding_make(m, (const char* const[]){"data"}, 1, split),
             "cml_sharding_make")) {
    cml_mesh_destroy(m);
    return NULL;
  }
  cml_sharding_replicated(m, replicated);
  return m;
}

static void case_auto_sharding_half_reductions(bt_t* t) {
  if (!bt_require_dtype(t, CML_DTYPE_F16) || !bt_require_op(t, CML_OP_REDUCE_SUM) ||
      !bt_require_op(t, CML_OP_REDUCE_PRODUCT) ||
      !bt_require_devices(t, CML_DISTRIBUTION_AUTO_SHARDING, COLL_DEVICES)) {
    return;
  }
  cml_sharding_t split, replicated;
  cml_mesh_t* m = coll_split_setup(t, &split, &replicated);
  if (!m) return;
  cml_function_t* f = bt_main(t);
  const int64_t n = 2 * COLL_DEVICES, axis = 0;
  cml_shape_t s = cml_shape_make(CML_DTYPE_F16, 1, &n);
  cml_value_t x = cml_parameter_sharded(f, "x", &s, &split);
  cml_value_t y = cml_parameter_sharded(f, "y", &s, &split);
  cml_value_t outs[2] = {cml_op_reduce_sum(f, x, &axis, 1), cml_op_reduce_product(f, y, &axis, 1)};
  cml_sharding_t specs[2] = {replicated, replicated};
  cml_executable_t* exe = bt_compile_sharded(t, outs, 2, specs);
  if (exe) {
    bt_tensor_t in[2 * COLL_DEVICES], out[2 * COLL_DEVICES];
    const int64_t shard = 2;
    for (int j = 0; j < COLL_DEVICES; ++j) {
      const double xv[2] = {j == 0 ? 2048 : 1, 1};
      const double yv[2] = {j < COLL_DEVICES / 2 ? 256 : 1.0 / 256,
                            j < COLL_DEVICES / 2 ? 256 : 1.0 / 256};
      in[2 * j] = bt_tensor_f64(t, CML_DTYPE_F16, 1, &shard, xv);
      in[2 * j + 1] = bt_tensor_f64(t, CML_DTYPE_F16, 1, &shard, yv);
    }
    if (bt_run_devices(t, exe, in, NULL, out)) {
      const double sum = 2056, product = 1;
      for (int j = 0; j < COLL_DEVICES; ++j) {
        char what[80];
        snprintf(what, sizeof what, "ReduceSum on device %d", j);
        bt_expect_f64(t, what, &out[2 * j], CML_DTYPE_F16, 0, NULL, &sum, 0);
        snprintf(what, sizeof what, "ReduceProduct on device %d", j);
        bt_expect_f64(t, what, &out[2 * j + 1], CML_DTYPE_F16, 0, NULL, &product, 0);
      }
    }
  }
  cml_mesh_destroy(m);
}

// A Float16 dot product contracting a split dimension: one device sums in Float32 and rounds
// once (2048 + 7 ones = 2055 -> 2056, ties to even), and so must the devices together (each
// part rounded to Float16 first gave 2048 + 2 + 2 + 2 = 2054).
static void case_auto_sharding_half_dot(bt_t* t) {
  if (!bt_require_dtype(t, CML_DTYPE_F16) || !bt_require_op(t, CML_OP_DOT_GENERAL) ||
      !bt_require_devices(t, CML_DISTRIBUTION_AUTO_SHARDING, COLL_DEVICES)) {
    return;
  }
  cml_sharding_t split, replicated;
  cml_mesh_t* m = coll_split_setup(t, &split, &replicated);
  if (!m) return;
  cml_function_t* f = bt_main(t);
  const int64_t n = 2 * COLL_DEVICES;
  cml_shape_t s = cml_shape_make(CML_DTYPE_F16, 1, &n);
  cml_value_t x = cml_parameter_sharded(f, "x", &s, &split);
  cml_value_t w = cml_parameter_sharded(f, "w", &s, &split);
  cml_dot_config_t dot;
  memset(&dot, 0, sizeof dot);
  dot.lhs_contracting_count = dot.rhs_contracting_count = 1;
  cml_value_t out_value = cml_op_dot_general(f, x, w, &dot);
  cml_executable_t* exe = bt_compile_sharded(t, &out_value, 1, &replicated);
  if (exe) {
    bt_tensor_t in[2 * COLL_DEVICES], out[COLL_DEVICES];
    const int64_t shard = 2;
    for (int j = 0; j < COLL_DEVICES; ++j) {
      const double xv[2] = {j == 0 ? 2048 : 1, 1}, wv[2] = {1, 1};
      in[2 * j] = bt_tensor_f64(t, CML_DTYPE_F16, 1, &shard, xv);
      in[2 * j + 1] = bt_tensor_f64(t, CML_DTYPE_F16, 1, &shard, wv);
    }
    if (bt_run_devices(t, exe, in, NULL, out)) {
      const double want = 2056;
      for (int j = 0; j < COLL_DEVICES; ++j) {
        char what[80];
        snprintf(what, sizeof what, "DotGeneral on device %d", j);
        bt_expect_f64(t, what, &out[j], CML_DTYPE_F16, 0, NULL, &want, 0);
      }
    }
  }
  cml_mesh_destroy(m);
}

static void case_auto_sharding_data_parallel(bt_t* t) {
  if (!bt_require_op(t, CML_OP_DOT_GENERAL) || !bt_require_op(t, CML_OP_REDUCE_SUM) ||
      !bt_require_op(t, CML_OP_TRANSPOSE) ||
      !bt_require_devices(t, CML_DISTRIBUTION_AUTO_SHARDING, COLL_DEVICES)) {
    return;
  }
  cml_mesh_t* m = coll_mesh(t, "data");
  if (!m) return;
  run_data_parallel(t, m);
  cml_mesh_destroy(m);
}

// Megatron MLP (1-D tensor parallel): x [2, 4] replicated, W1 [4, 8] column-sharded over
// "model", relu, W2 [8, 4] row-sharded over "model"; y = relu(x.W1).W2 replicated [2, 4] (the
// partitioner adds one AllReduce), and h = relu(x.W1) returned column-sharded ([2, 2] per
// device).
static void case_auto_sharding_megatron(bt_t* t) {
  if (!bt_require_op(t, CML_OP_DOT_GENERAL) || !bt_require_op(t, CML_OP_MAX) ||
      !bt_require_devices(t, CML_DISTRIBUTION_AUTO_SHARDING, COLL_DEVICES)) {
    return;
  }
  cml_mesh_t* m = coll_mesh(t, "model");
  if (!m) return;
  const cml_mesh_t* meshes[1] = {m};
  cml_sharding_t cols, rows, replicated;
  cml_sharding_replicated(m, &replicated);
  if (!bt_auto_sharding(t, meshes, 1) ||
      !bt_ok(t, cml_sharding_make(m, (const char* const[]){NULL, "model"}, 2, &cols),
             "cml_sharding_make") ||
      !bt_ok(t, cml_sharding_make(m, (const char* const[]){"model"}, 1, &rows),
             "cml_sharding_make")) {
    cml_mesh_destroy(m);
    return;
  }
  cml_function_t* f = bt_main(t);
  const int64_t xd[2] = {2, 4}, w1d[2] = {4, 8}, w2d[2] = {8, 4};
  cml_shape_t xs = cml_shape_make(CML_DTYPE_F32, 2, xd);
  cml_shape_t w1s = cml_shape_make(CML_DTYPE_F32, 2, w1d);
  cml_shape_t w2s = cml_shape_make(CML_DTYPE_F32, 2, w2d);
  cml_value_t x = cml_parameter_sharded(f, "x", &xs, &replicated);
  cml_value_t w1 = cml_parameter_sharded(f, "w1", &w1s, &cols);
  cml_value_t w2 = cml_parameter_sharded(f, "w2", &w2s, &rows);
  cml_value_t h = cml_op_max(f, cml_op_dot(f, x, w1), cml_constant_scalar_f64(f, CML_DTYPE_F32, 0));
  cml_value_t y = cml_op_dot(f, h, w2);
  cml_value_t outs[2] = {y, h};
  cml_sharding_t specs[2] = {replicated, cols};
  cml_executable_t* exe = bt_compile_sharded(t, outs, 2, specs);
  cml_mesh_destroy(m);
  if (!exe) return;

  double xv[8], w1v[32], w2v[32], hv[16], yv[8];
  for (int i = 0; i < 8; ++i) xv[i] = (double)(i % 5) - 2;
  for (int i = 0; i < 32; ++i) w1v[i] = (double)((i * 3) % 7) - 3;
  for (int i = 0; i < 32; ++i) w2v[i] = (double)((i * 5) % 9) * 0.5 - 2;
  for (int r = 0; r < 2; ++r) {
    for (int c = 0; c < 8; ++c) {
      double acc = 0;
      for (int k = 0; k < 4; ++k) acc += xv[r * 4 + k] * w1v[k * 8 + c];
      hv[r * 8 + c] = acc > 0 ? acc : 0;
    }
    for (int c = 0; c < 4; ++c) {
      double acc = 0;
      for (int k = 0; k < 8; ++k) acc += hv[r * 8 + k] * w2v[k * 4 + c];
      yv[r * 4 + c] = acc;
    }
  }
  // Device j: x whole, columns 2j, 2j + 1 of W1, rows 2j, 2j + 1 of W2.
  bt_tensor_t in[3 * COLL_DEVICES], out[2 * COLL_DEVICES];
  const int64_t w1_shard[2] = {4, 2}, w2_shard[2] = {2, 4}, h_shard[2] = {2, 2};
  for (int j = 0; j < COLL_DEVICES; ++j) {
    double w1j[8];
    for (int k = 0; k < 4; ++k) {
      w1j[k * 2] = w1v[k * 8 + 2 * j];
      w1j[k * 2 + 1] = w1v[k * 8 + 2 * j + 1];
    }
    in[3 * j] = bt_tensor_f64(t, CML_DTYPE_F32, 2, xd, xv);
    in[3 * j + 1] = bt_tensor_f64(t, CML_DTYPE_F32, 2, w1_shard, w1j);
    in[3 * j + 2] = bt_tensor_f64(t, CML_DTYPE_F32, 2, w2_shard, w2v + 8 * j);
  }
  if (!bt_run_devices(t, exe, in, NULL, out)) return;
  for (int j = 0; j < COLL_DEVICES; ++j) {
    double hj[4] = {hv[2 * j], hv[2 * j + 1], hv[8 + 2 * j], hv[8 + 2 * j + 1]};
    char what[64];
    snprintf(what, sizeof what, "relu(x.W1).W2 on device %d", j);
    bt_expect_f64(t, what, &out[2 * j], CML_DTYPE_F32, 2, xd, yv, 0);
    snprintf(what, sizeof what, "relu(x.W1) columns %d..%d on device %d", 2 * j, 2 * j + 1, j);
    bt_expect_f64(t, what, &out[2 * j + 1], CML_DTYPE_F32, 2, h_shard, hj, 0);
  }
}

const bt_case_t bt_cases_collective[] = {
    {"all_reduce_sum", CML_OP_ALL_REDUCE, case_all_reduce_sum},
    {"all_reduce_product", CML_OP_ALL_REDUCE, case_all_reduce_product},
    {"all_reduce_max_groups_i32", CML_OP_ALL_REDUCE, case_all_reduce_max_groups},
    {"all_reduce_min_groups", CML_OP_ALL_REDUCE, case_all_reduce_min_groups},
    {"all_reduce_two_operands", CML_OP_ALL_REDUCE, case_all_reduce_two_operands},
    {"all_reduce_device_assignment", CML_OP_ALL_REDUCE, case_all_reduce_device_assignment},
    {"all_gather_axis0", CML_OP_ALL_GATHER, case_all_gather_axis0},
    {"all_gather_axis1_groups_i32", CML_OP_ALL_GATHER, case_all_gather_axis1_groups},
    {"reduce_scatter_sum", CML_OP_REDUCE_SCATTER, case_reduce_scatter_sum},
    {"reduce_scatter_max_groups", CML_OP_REDUCE_SCATTER, case_reduce_scatter_max_groups},
    {"all_to_all", CML_OP_ALL_TO_ALL, case_all_to_all},
    {"all_to_all_groups_i32", CML_OP_ALL_TO_ALL, case_all_to_all_groups},
    {"collective_permute_ring", CML_OP_COLLECTIVE_PERMUTE, case_collective_permute_ring},
    {"collective_permute_partial", CML_OP_COLLECTIVE_PERMUTE, case_collective_permute_partial},
    {"collective_broadcast", CML_OP_COLLECTIVE_BROADCAST, case_collective_broadcast},
    {"collective_broadcast_groups_i32", CML_OP_COLLECTIVE_BROADCAST,
     case_collective_broadcast_groups},
    {"replica_id", CML_OP_REPLICA_ID, case_replica_id},
    {"partition_id", CML_OP_PARTITION_ID, case_partition_id},
    {"half_reductions_round_once", CML_OP_ALL_REDUCE, case_half_reductions_round_once},
    {"auto_sharding_half_reductions", CML_OP_INVALID, case_auto_sharding_half_reductions},
    {"auto_sharding_half_dot", CML_OP_INVALID, case_auto_sharding_half_dot},
    {"auto_sharding_data_parallel", CML_OP_INVALID, case_auto_sharding_data_parallel},
    {"auto_sharding_megatron", CML_OP_INVALID, case_auto_sharding_megatron},
};
const size_t bt_cases_collective_count = sizeof bt_cases_collective / sizeof bt_cases_collective[0];
