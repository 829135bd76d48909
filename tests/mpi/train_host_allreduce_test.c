// SPDX-License-Identifier: Apache-2.0
// tests/mpi/train_host_allreduce_test.c: the host-staged AllReduce (cml/host_collective.h) across
// the processes of `mpirun -np 2` / `-np 4`, each process its own `c:devices=2` client (as XLA
// clients are): sums and means over every device of every process in f32, bf16 and i32, and
// cml_host_process_info. Every process computes the expected values from the same formulas.
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cml/cml.h"
#include "cml/host_collective.h"
#include "test.h"

static int g_rank, g_size;

// Element |i| on device |d| of process |r|: small integers, so every sum is exact.
static double value_of(int r, int d, int64_t i) { return (double)((r * 5 + d * 3 + i) % 9) - 4; }

TEST(process_info) {
  int rank = -1, count = -1;
  cml_host_process_info(&rank, &count);
  ASSERT_EQ_INT(rank, g_rank);
  ASSERT_EQ_INT(count, g_size);
}

TEST(sum_and_mean_across_processes) {
  cml_backend_t* be = NULL;
  ASSERT_STATUS_OK(cml_backend_new_with_config("c:devices=2", &be));
  enum { kN = 1000 };
  cml_shape_t fs = cml_shape_make(CML_DTYPE_F32, 1, (int64_t[]){kN});
  cml_shape_t hs = cml_shape_make(CML_DTYPE_BF16, 2, (int64_t[]){2, 3});
  cml_shape_t is = cml_shape_scalar(CML_DTYPE_I32);
  static float f[kN];
  uint16_t h[6];
  cml_buffer_t* in[2 * 3];
  for (int d = 0; d < 2; ++d) {
    for (int64_t i = 0; i < kN; ++i) f[i] = (float)value_of(g_rank, d, i);
    for (int64_t i = 0; i < 6; ++i) h[i] = cml_f32_to_bf16((float)value_of(g_rank, d, i));
    int32_t n = 1000 * g_rank + d;
    ASSERT_STATUS_OK(cml_buffer_from_host(be, d, &fs, f, sizeof f, &in[d * 3]));
    ASSERT_STATUS_OK(cml_buffer_from_host(be, d, &hs, h, sizeof h, &in[d * 3 + 1]));
    ASSERT_STATUS_OK(cml_buffer_from_host(be, d, &is, &n, sizeof n, &in[d * 3 + 2]));
  }
  cml_buffer_t* out[6];
  ASSERT_STATUS_OK(cml_host_all_reduce(in, 2, 3, CML_HOST_REDUCE_SUM, true, out));
  int32_t want_n = 0;
  for (int r = 0; r < g_size; ++r) want_n += 2000 * r + 1;
  for (int d = 0; d < 2; ++d) {
    int32_t n = 0;
    ASSERT_STATUS_OK(cml_buffer_copy_to_host(out[d * 3], f, sizeof f));
    ASSERT_STATUS_OK(cml_buffer_copy_to_host(out[d * 3 + 1], h, sizeof h));
    ASSERT_STATUS_OK(cml_buffer_copy_to_host(out[d * 3 + 2], &n, sizeof n));
    ASSERT_EQ_INT(n, want_n);
    for (int64_t i = 0; i < kN; ++i) {
      double want = 0;
      for (int r = 0; r < g_size; ++r) want += value_of(r, 0, i) + value_of(r, 1, i);
      if (f[i] != (float)want) TEST_FAIL_("f32 element %lld: %g != %g", (long long)i, f[i], want);
      if (i < 6 && cml_bf16_to_f32(h[i]) != (float)want) {
        TEST_FAIL_("bf16 element %lld: %g != %g", (long long)i, cml_bf16_to_f32(h[i]), want);
      }
    }
  }
  for (int k = 0; k < 6; ++k) cml_buffer_release(out[k]);
  // Mean of the f32 value: divided by 2 devices x the process count.
  ASSERT_STATUS_OK(
      cml_host_all_reduce((cml_buffer_t*[]){in[0], in[3]}, 2, 1, CML_HOST_REDUCE_MEAN, true, out));
  ASSERT_STATUS_OK(cml_buffer_copy_to_host(out[1], f, sizeof f));
  for (int64_t i = 0; i < kN; ++i) {
    double want = 0;
    for (int r = 0; r < g_size; ++r) want += value_of(r, 0, i) + value_of(r, 1, i);
    want /= 2.0 * g_size;
    if (f[i] != (float)want) TEST_FAIL_("mean element %lld: %g != %g", (long long)i, f[i], want);
  }
  cml_buffer_release(out[0]);
  cml_buffer_release(out[1]);
  for (int k = 0; k < 6; ++k) cml_buffer_release(in[k]);
  cml_backend_release(be);
}

// Process 0 reduces 4 values where the others reduce 5 (then an Int32 where they have a
// Float32): every process gets FAILED_PRECONDITION naming both, none returns OK with a sum of
// mismatched buffers, and the job goes on (the next matching call works).
TEST(mismatched_arguments_across_processes) {
  cml_backend_t* be = NULL;
  ASSERT_STATUS_OK(cml_backend_new_with_config("c:devices=1", &be));
  const int64_t n = g_rank == 0 ? 4 : 5;
  cml_shape_t fs = cml_shape_make(CML_DTYPE_F32, 1, &n);
  cml_shape_t is = cml_shape_make(CML_DTYPE_I32, 1, (int64_t[]){4});
  const float f[5] = {1, 2, 3, 4, 5};
  const int32_t i4[4] = {1, 2, 3, 4};
  cml_buffer_t *in = NULL, *out = NULL;
  ASSERT_STATUS_OK(cml_buffer_from_host(be, 0, &fs, f, sizeof(float) * (size_t)n, &in));
  cml_status_t st = cml_host_all_reduce(&in, 1, 1, CML_HOST_REDUCE_SUM, true, &out);
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_FAILED_PRECONDITION);
  ASSERT_CONTAINS(cml_status_message(st), "argument list of cml_host_all_reduce differs");
  ASSERT_CONTAINS(cml_status_message(st), "(Float32)[4]");
  ASSERT_CONTAINS(cml_status_message(st), "(Float32)[5]");
  cml_status_free(st);
  ASSERT_TRUE(out == NULL);
  cml_buffer_release(in);
  if (g_rank == 0) {
    ASSERT_STATUS_OK(cml_buffer_from_host(be, 0, &is, i4, sizeof i4, &in));
  } else {
    cml_shape_t f4 = cml_shape_make(CML_DTYPE_F32, 1, (int64_t[]){4});
    ASSERT_STATUS_OK(cml_buffer_from_host(be, 0, &f4, f, sizeof(float) * 4, &in));
  }
  st = cml_host_all_reduce(&in, 1, 1, CML_HOST_REDUCE_SUM, true, &out);
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_FAILED_PRECONDITION);
  ASSERT_CONTAINS(cml_status_message(st), "(Int32)[4]");
  cml_status_free(st);
  cml_buffer_release(in);
  // 600 values, the last one a different shape on the processes after 0: past the part of the
  // argument list that fits the compared text (it was cut there: OK with garbage on one side).
  {
    enum { kMany = 600 };
    cml_buffer_t** many = calloc(kMany, sizeof *many);
    cml_buffer_t** outs = calloc(kMany, sizeof *outs);
    ASSERT_TRUE(many && outs);
    const float sixteen[16] = {0};
    for (int v = 0; v < kMany; ++v) {
      const int64_t len = v == kMany - 1 && g_rank != 0 ? 16 : 4;
      cml_shape_t vs = cml_shape_make(CML_DTYPE_F32, 1, &len);
      ASSERT_STATUS_OK(
          cml_buffer_from_host(be, 0, &vs, sixteen, sizeof(float) * (size_t)len, &many[v]));
    }
    st = cml_host_all_reduce(many, 1, kMany, CML_HOST_REDUCE_SUM, true, outs);
    ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_FAILED_PRECONDITION);
    ASSERT_CONTAINS(cml_status_message(st), "argument list of cml_host_all_reduce differs");
    cml_status_free(st);
    for (int v = 0; v < kMany; ++v) {
      ASSERT_TRUE(outs[v] == NULL);
      cml_buffer_release(many[v]);
    }
    free(many);
    free(outs);
  }
  // In step again: the same call everywhere sums.
  ASSERT_STATUS_OK(cml_buffer_from_host(be, 0, &is, i4, sizeof i4, &in));
  ASSERT_STATUS_OK(cml_host_all_reduce(&in, 1, 1, CML_HOST_REDUCE_SUM, true, &out));
  int32_t got[4];
  ASSERT_STATUS_OK(cml_buffer_copy_to_host(out, got, sizeof got));
  for (int k = 0; k < 4; ++k) ASSERT_EQ_INT(got[k], (k + 1) * g_size);
  cml_buffer_release(out);
  cml_buffer_release(in);
  cml_backend_release(be);
}

static const test_entry_t kTests[] = {
    TEST_ENTRY(process_info),
    TEST_ENTRY(sum_and_mean_across_processes),
    TEST_ENTRY(mismatched_arguments_across_processes),
};

int main(void) {
  const char* r = getenv("OMPI_COMM_WORLD_RANK");
  const char* s = getenv("OMPI_COMM_WORLD_SIZE");
  if (!r || !s) {
    fprintf(stderr, "train_host_allreduce_test: run under mpirun (-np 2 or more)\n");
    return 77;
  }
  g_rank = atoi(r);
  g_size = atoi(s);
  int failed_total = 0;
  for (size_t i = 0; i < sizeof kTests / sizeof kTests[0]; ++i) {
    int failed = 0;
    kTests[i].fn(&failed);
    if (failed) fprintf(stderr, "[rank %d] FAILED %s\n", g_rank, kTests[i].name);
    failed_total += failed;
  }
  if (g_rank == 0)
    printf("train_host_allreduce_test: %d processes, %d failed\n", g_size, failed_total);
  return failed_total ? 1 : 0;
}
