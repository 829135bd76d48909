// SPDX-License-Identifier: Apache-2.0
// tests/unit/host_collective_test.c: the host-staged AllReduce (cml/host_collective.h) over the 4
// devices of the `c` backend in one process: sums and means in f32, bf16, f64 and i32, outputs on
// the inputs' devices, and the bad inputs; xla's distributed option. (Across processes:
// tests/mpi.)
#include <stdint.h>

#include "cml/cml.h"
#include "cml/host_collective.h"
#include "test.h"

static bool status_matches(cml_status_t st, cml_status_code_t code, const char* const* needles) {
  bool ok = cml_status_code(st) == code;
  for (const char* const* n = needles; ok && *n; ++n) {
    ok = strstr(cml_status_message(st), *n) != NULL;
  }
  if (!ok) {
    fprintf(stderr, "status: want %s, got %s: \"%s\"\n", cml_status_code_name(code),
            cml_status_code_name(cml_status_code(st)), cml_status_message(st));
  }
  cml_status_free(st);
  return ok;
}
#define ASSERT_STATUS(expr, code, ...) \
  ASSERT_TRUE(status_matches((expr), (code), (const char* const[]){__VA_ARGS__, NULL}))

TEST(sum_and_mean_over_local_devices) {
  cml_backend_t* be = NULL;
  ASSERT_STATUS_OK(cml_backend_new_with_config("c:devices=4", &be));
  // Two values per device: f32[3] = {d, 10 d, 0.5} and i32[2] = {d, -d}.
  cml_buffer_t* in[4 * 2];
  cml_shape_t fs = cml_shape_make(CML_DTYPE_F32, 1, (int64_t[]){3});
  cml_shape_t is = cml_shape_make(CML_DTYPE_I32, 1, (int64_t[]){2});
  for (int d = 0; d < 4; ++d) {
    float f[3] = {(float)d, 10.0f * (float)d, 0.5f};
    int32_t i[2] = {d, -d};
    ASSERT_STATUS_OK(cml_buffer_from_host(be, d, &fs, f, sizeof f, &in[d * 2]));
    ASSERT_STATUS_OK(cml_buffer_from_host(be, d, &is, i, sizeof i, &in[d * 2 + 1]));
  }
  cml_buffer_t* out[8];
  ASSERT_STATUS_OK(cml_host_all_reduce(in, 4, 2, CML_HOST_REDUCE_SUM, false, out));
  for (int d = 0; d < 4; ++d) {
    float f[3];
    int32_t i[2];
    ASSERT_EQ_INT(cml_buffer_device(out[d * 2]), d);
    ASSERT_STATUS_OK(cml_buffer_copy_to_host(out[d * 2], f, sizeof f));
    ASSERT_STATUS_OK(cml_buffer_copy_to_host(out[d * 2 + 1], i, sizeof i));
    ASSERT_EQ_DBL(f[0], 6);
    ASSERT_EQ_DBL(f[1], 60);
    ASSERT_EQ_DBL(f[2], 2);
    ASSERT_EQ_INT(i[0], 6);
    ASSERT_EQ_INT(i[1], -6);
  }
  for (int k = 0; k < 8; ++k) cml_buffer_release(out[k]);
  // Mean of integers is refused; of the float value alone it divides by 4.
  ASSERT_STATUS(cml_host_all_reduce(in, 4, 2, CML_HOST_REDUCE_MEAN, false, out),
                CML_STATUS_UNIMPLEMENTED, "value 1", "Int32", "Mean");
  ASSERT_TRUE(out[0] == NULL);
  cml_buffer_t* fin[4] = {in[0], in[2], in[4], in[6]};
  ASSERT_STATUS_OK(cml_host_all_reduce(fin, 4, 1, CML_HOST_REDUCE_MEAN, false, out));
  float f[3];
  ASSERT_STATUS_OK(cml_buffer_copy_to_host(out[3], f, sizeof f));
  ASSERT_EQ_DBL(f[0], 1.5);
  ASSERT_EQ_DBL(f[1], 15);
  ASSERT_EQ_DBL(f[2], 0.5);
  for (int k = 0; k < 4; ++k) cml_buffer_release(out[k]);
  for (int k = 0; k < 8; ++k) cml_buffer_release(in[k]);
  cml_backend_release(be);
}

TEST(bf16_and_f64) {
  cml_backend_t* be = NULL;
  ASSERT_STATUS_OK(cml_backend_new_with_config("c:devices=2", &be));
  cml_shape_t hs = cml_shape_make(CML_DTYPE_BF16, 1, (int64_t[]){2});
  cml_shape_t ds = cml_shape_scalar(CML_DTYPE_F64);
  cml_buffer_t* in[4];
  // bf16 values are combined in f32 and rounded once: (1.5 + 2.25) / 2 = 1.875 exactly.
  uint16_t h0[2] = {cml_f32_to_bf16(1.5f), cml_f32_to_bf16(-3.0f)};
  uint16_t h1[2] = {cml_f32_to_bf16(2.25f), cml_f32_to_bf16(1.0f)};
  double d0 = 0.1, d1 = 0.2;
  ASSERT_STATUS_OK(cml_buffer_from_host(be, 0, &hs, h0, sizeof h0, &in[0]));
  ASSERT_STATUS_OK(cml_buffer_from_host(be, 0, &ds, &d0, sizeof d0, &in[1]));
  ASSERT_STATUS_OK(cml_buffer_from_host(be, 1, &hs, h1, sizeof h1, &in[2]));
  ASSERT_STATUS_OK(cml_buffer_from_host(be, 1, &ds, &d1, sizeof d1, &in[3]));
  cml_buffer_t* out[4];
  ASSERT_STATUS_OK(cml_host_all_reduce(in, 2, 2, CML_HOST_REDUCE_MEAN, false, out));
  uint16_t h[2];
  double d = 0;
  ASSERT_STATUS_OK(cml_buffer_copy_to_host(out[2], h, sizeof h));
  ASSERT_STATUS_OK(cml_buffer_copy_to_host(out[3], &d, sizeof d));
  ASSERT_EQ_DBL(cml_bf16_to_f32(h[0]), 1.875);
  ASSERT_EQ_DBL(cml_bf16_to_f32(h[1]), -1.0);
  ASSERT_EQ_DBL(d, (0.1 + 0.2) / 2);
  for (int k = 0; k < 4; ++k) {
    cml_buffer_release(out[k]);
    cml_buffer_release(in[k]);
  }
  cml_backend_release(be);
}

TEST(bad_input) {
  cml_backend_t* be = NULL;
  ASSERT_STATUS_OK(cml_backend_new_with_config("c:devices=2", &be));
  cml_shape_t a = cml_shape_make(CML_DTYPE_F32, 1, (int64_t[]){3});
  cml_shape_t b = cml_shape_make(CML_DTYPE_F32, 1, (int64_t[]){4});
  cml_shape_t u = cml_shape_make(CML_DTYPE_U8, 1, (int64_t[]){3});
  float z[4] = {0};
  uint8_t zu[3] = {0};
  cml_buffer_t* in[3];
  ASSERT_STATUS_OK(cml_buffer_from_host(be, 0, &a, z, 12, &in[0]));
  ASSERT_STATUS_OK(cml_buffer_from_host(be, 1, &b, z, 16, &in[1]));
  ASSERT_STATUS_OK(cml_buffer_from_host(be, 1, &u, zu, 3, &in[2]));
  cml_buffer_t* out[2] = {NULL, NULL};
  ASSERT_STATUS(cml_host_all_reduce(in, 2, 1, CML_HOST_REDUCE_SUM, false, out),
                CML_STATUS_INVALID_ARGUMENT, "value 0", "device 1", "[4]", "[3]");
  ASSERT_STATUS(cml_host_all_reduce(&in[2], 1, 1, CML_HOST_REDUCE_SUM, false, out),
                CML_STATUS_UNIMPLEMENTED, "Uint8");
  cml_buffer_t* with_null[2] = {in[0], NULL};
  ASSERT_STATUS(cml_host_all_reduce(with_null, 2, 1, CML_HOST_REDUCE_SUM, false, out),
                CML_STATUS_INVALID_ARGUMENT, "device 1", "NULL");
  ASSERT_STATUS(cml_host_all_reduce(in, 0, 1, CML_HOST_REDUCE_SUM, false, out),
                CML_STATUS_INVALID_ARGUMENT, "0 devices");
  ASSERT_STATUS(cml_host_all_reduce(in, 1, 1, (cml_host_reduce_t)9, false, out),
                CML_STATUS_INVALID_ARGUMENT, "unknown op");
  ASSERT_TRUE(out[0] == NULL && out[1] == NULL);
  int rank = -1, count = -1;
  cml_host_process_info(&rank, &count);  // not started by mpirun: one process
  ASSERT_EQ_INT(rank, 0);
  ASSERT_EQ_INT(count, 1);
  for (int k = 0; k < 3; ++k) cml_buffer_release(in[k]);
  cml_backend_release(be);
}

// The `distributed` option of xla takes none or mpi (xla:...,distributed=mpi itself is tested
// under mpirun: tests/mpi/xla_distributed_test.c, mpi_config_check.c).
TEST(xla_distributed_option) {
  if (!cml_backend_registered_aliases("xla")) return;  // built without the XLA backend
  cml_backend_t* be = NULL;
  ASSERT_STATUS(cml_backend_new_with_config("xla:cpu,distributed=tcp", &be),
                CML_STATUS_INVALID_ARGUMENT, "distributed");
  ASSERT_TRUE(be == NULL);
}

TEST_MAIN(TEST_ENTRY(sum_and_mean_over_local_devices), TEST_ENTRY(bf16_and_f64),
          TEST_ENTRY(bad_input), TEST_ENTRY(xla_distributed_option))
