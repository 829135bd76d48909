// SPDX-License-Identifier: Apache-2.0
// tests/mpi/mpi_comm_test.c: the internal MPI layer (src/distributed/mpi_comm.h) under
// `mpirun -np 2` and `-np 4`: every collective with every reduction dtype class, groups that
// are subsets of the processes in another order, split messages, agreement, failure notices.
// Every process computes the expected values itself from the same formulas.
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <mpi.h>

#include "cml/cml.h"
#include "distributed/mpi_comm.h"
#include "test.h"

static int g_rank, g_size;

// The value of element |i| on process |r| (small integers: sums are exact in every float type).
static double value_of(int r, int64_t i) { return (double)((r * 7 + i * 3) % 11) - 5.0; }

TEST(init_rank_size) {
  ASSERT_TRUE(cml__mpi_built());
  ASSERT_STATUS_OK(cml__mpi_init());
  ASSERT_STATUS_OK(cml__mpi_init());  // idempotent
  ASSERT_EQ_INT(cml__mpi_rank(), g_rank);
  ASSERT_EQ_INT(cml__mpi_size(), g_size);
  ASSERT_TRUE(g_size >= 2);
}

TEST(all_reduce_f32_sum_max_in_place) {
  const int64_t counts[] = {1, 3, 1000, 1 << 20};  // fewer elements than processes, odd, pieces
  for (size_t c = 0; c < sizeof counts / sizeof counts[0]; ++c) {
    const int64_t n = counts[c];
    float* in = malloc((size_t)n * sizeof *in);
    float* out = malloc((size_t)n * sizeof *out);
    ASSERT_TRUE(in && out);
    for (int64_t i = 0; i < n; ++i) in[i] = (float)value_of(g_rank, i);
    ASSERT_STATUS_OK(cml__mpi_all_reduce(NULL, in, out, n, CML_DTYPE_F32, CML_REDUCE_SUM));
    for (int64_t i = 0; i < n; ++i) {
      double want = 0;
      for (int r = 0; r < g_size; ++r) want += value_of(r, i);
      if (out[i] != (float)want) {
        TEST_FAIL_("sum count %lld element %lld: %g != %g", (long long)n, (long long)i, out[i],
                   want);
      }
    }
    // In place, max, with a NaN on the last process at element 0 (NaN propagates).
    if (g_rank == g_size - 1) in[0] = NAN;
    ASSERT_STATUS_OK(cml__mpi_all_reduce(NULL, in, in, n, CML_DTYPE_F32, CML_REDUCE_MAX));
    ASSERT_TRUE(isnan(in[0]));
    for (int64_t i = 1; i < n; ++i) {
      double want = value_of(0, i);
      for (int r = 1; r < g_size; ++r) want = value_of(r, i) > want ? value_of(r, i) : want;
      if (in[i] != (float)want) {
        TEST_FAIL_("max count %lld element %lld: %g != %g", (long long)n, (long long)i, in[i],
                   want);
      }
    }
    free(in);
    free(out);
  }
}

TEST(all_reduce_integer_classes) {
  enum { N = 37 };
  int32_t a[N], b[N];
  uint8_t u[N], um[N];
  int64_t p[N], pp[N];
  for (int i = 0; i < N; ++i) {
    a[i] = (int32_t)((uint32_t)INT32_MAX - (uint32_t)i + (uint32_t)g_rank);  // the sum wraps
    u[i] = (uint8_t)(200 + g_rank * 13 + i);
    p[i] = (int64_t)(g_rank + 2) * (i % 3 == 0 ? -1 : 1);
  }
  ASSERT_STATUS_OK(cml__mpi_all_reduce(NULL, a, b, N, CML_DTYPE_I32, CML_REDUCE_SUM));
  ASSERT_STATUS_OK(cml__mpi_all_reduce(NULL, u, um, N, CML_DTYPE_U8, CML_REDUCE_MIN));
  ASSERT_STATUS_OK(cml__mpi_all_reduce(NULL, p, pp, N, CML_DTYPE_I64, CML_REDUCE_PRODUCT));
  for (int i = 0; i < N; ++i) {
    uint32_t s = 0;
    uint8_t m = 255;
    int64_t prod = 1;
    for (int r = 0; r < g_size; ++r) {
      s += (uint32_t)INT32_MAX - (uint32_t)i + (uint32_t)r;
      const uint8_t v = (uint8_t)(200 + r * 13 + i);
      m = v < m ? v : m;
      prod *= (int64_t)(r + 2) * (i % 3 == 0 ? -1 : 1);
    }
    ASSERT_EQ_INT(b[i], (int32_t)s);
    ASSERT_EQ_INT(um[i], m);
    ASSERT_EQ_INT(pp[i], prod);
  }
}

TEST(all_reduce_halves_rounded_once_and_complex) {
  // Float16/BFloat16 sums are made in f32 over every process, then rounded once (1/3 and
  // 0.375 do not survive a rounding after each add).
  enum { N = 5 };
  uint16_t h[N], hs[N], f[N], fs[N];
  for (int i = 0; i < N; ++i) {
    h[i] = cml_f32_to_bf16(i == 0 ? 0.375f : (float)(i + 1));
    f[i] = cml_f32_to_f16(i == 0 ? 1.0f / 3.0f : (float)(-i));
  }
  ASSERT_STATUS_OK(cml__mpi_all_reduce(NULL, h, hs, N, CML_DTYPE_BF16, CML_REDUCE_SUM));
  ASSERT_STATUS_OK(cml__mpi_all_reduce(NULL, f, fs, N, CML_DTYPE_F16, CML_REDUCE_SUM));
  for (int i = 0; i < N; ++i) {
    float sh = 0, sf = 0;
    for (int r = 0; r < g_size; ++r) {
      sh += cml_bf16_to_f32(h[i]);
      sf += cml_f16_to_f32(f[i]);
    }
    ASSERT_EQ_INT(hs[i], cml_f32_to_bf16(sh));
    ASSERT_EQ_INT(fs[i], cml_f32_to_f16(sf));
  }
  // The local fold gives the same answers (sources in order, out aliasing a source).
  const void* srcs[4] = {h, h, h, h};
  uint16_t local[N];
  memcpy(local, h, sizeof local);
  srcs[0] = local;
  cml__mpi_reduce_local(srcs, g_size < 4 ? g_size : 4, local, N, CML_DTYPE_BF16, CML_REDUCE_SUM);
  if (g_size <= 4) {
    for (int i = 0; i < N; ++i) ASSERT_EQ_INT(local[i], hs[i]);
  }
  ASSERT_TRUE(cml__mpi_can_reduce(CML_DTYPE_BF16, CML_REDUCE_MIN));
  ASSERT_FALSE(cml__mpi_can_reduce(CML_DTYPE_C128, CML_REDUCE_MAX));
  ASSERT_FALSE(cml__mpi_can_reduce(CML_DTYPE_BOOL, CML_REDUCE_SUM));
  float c[4] = {1.0f + (float)g_rank, -1.0f, 0.5f, 2.0f};  // 2 complex numbers
  float cs[4];
  ASSERT_STATUS_OK(cml__mpi_all_reduce(NULL, c, cs, 2, CML_DTYPE_C64, CML_REDUCE_SUM));
  float want_re = 0;
  for (int r = 0; r < g_size; ++r) want_re += 1.0f + (float)r;
  ASSERT_TRUE(cs[0] == want_re && cs[1] == -(float)g_size && cs[2] == 0.5f * (float)g_size);
  cml_status_t st = cml__mpi_all_reduce(NULL, c, cs, 2, CML_DTYPE_C64, CML_REDUCE_MAX);
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_UNIMPLEMENTED);
  ASSERT_TRUE(strstr(cml_status_message(st), "Complex64") != NULL);
  cml_status_free(st);
}

TEST(reduce_scatter_gather_alltoall_broadcast) {
  enum { K = 6 };
  const int n = g_size;
  double* in = malloc((size_t)n * K * sizeof *in);
  double* out = malloc((size_t)n * K * sizeof *out);
  ASSERT_TRUE(in && out);
  for (int64_t i = 0; i < (int64_t)n * K; ++i) in[i] = value_of(g_rank, i);
  ASSERT_STATUS_OK(cml__mpi_reduce_scatter(NULL, in, out, K, CML_DTYPE_F64, CML_REDUCE_SUM));
  for (int i = 0; i < K; ++i) {
    double want = 0;
    for (int r = 0; r < n; ++r) want += value_of(r, (int64_t)g_rank * K + i);
    ASSERT_TRUE(out[i] == want);
  }
  // AllGather: block r = process r's first K values.
  ASSERT_STATUS_OK(cml__mpi_all_gather(NULL, in, out, K * (int64_t)sizeof(double)));
  for (int r = 0; r < n; ++r) {
    for (int i = 0; i < K; ++i) ASSERT_TRUE(out[r * K + i] == value_of(r, i));
  }
  // AllToAll: block k of |out| is block |rank| of process k's input.
  ASSERT_STATUS_OK(cml__mpi_all_to_all(NULL, in, out, K * (int64_t)sizeof(double)));
  for (int k = 0; k < n; ++k) {
    for (int i = 0; i < K; ++i) ASSERT_TRUE(out[k * K + i] == value_of(k, g_rank * K + i));
  }
  // Broadcast from the last process.
  memcpy(out, in, K * sizeof(double));
  ASSERT_STATUS_OK(cml__mpi_broadcast(NULL, n - 1, out, K * (int64_t)sizeof(double)));
  for (int i = 0; i < K; ++i) ASSERT_TRUE(out[i] == value_of(n - 1, i));
  ASSERT_STATUS_OK(cml__mpi_barrier(NULL));
  free(in);
  free(out);
}

TEST(all_gather_v_and_subgroups) {
  // Process r contributes r + 1 bytes.
  const int n = g_size;
  int64_t sizes[64] = {0};
  int64_t total = 0;
  for (int r = 0; r < n; ++r) total += sizes[r] = r + 1;
  uint8_t mine[64], all[64 * 64];
  memset(mine, 'a' + g_rank, sizeof mine);
  ASSERT_STATUS_OK(cml__mpi_all_gather_v(NULL, mine, all, sizes));
  int64_t at = 0;
  for (int r = 0; r < n; ++r) {
    for (int64_t k = 0; k < sizes[r]; ++k) ASSERT_EQ_INT(all[at + k], 'a' + r);
    at += sizes[r];
  }
  ASSERT_EQ_INT(at, total);
  // Pairs {1, 0}, {3, 2}: group order reversed; a sum of i32 ordered by group position.
  const int partner = g_rank ^ 1;
  if (partner < n) {
    const int ranks[2] = {g_rank | 1, g_rank & ~1};
    const cml__mpi_group_t group = {ranks, 2};
    int32_t v[3] = {g_rank, 10 * g_rank, -g_rank}, s[3];
    ASSERT_STATUS_OK(cml__mpi_all_reduce(&group, v, s, 3, CML_DTYPE_I32, CML_REDUCE_SUM));
    ASSERT_EQ_INT(s[0], g_rank + partner);
    ASSERT_EQ_INT(s[1], 10 * (g_rank + partner));
    int32_t gathered[2];
    ASSERT_STATUS_OK(cml__mpi_all_gather(&group, v, gathered, sizeof(int32_t)));
    ASSERT_EQ_INT(gathered[0], g_rank | 1);  // group position 0 is the odd rank
    ASSERT_EQ_INT(gathered[1], g_rank & ~1);
  }
  // A group without this process, and a bad rank.
  const int other[1] = {(g_rank + 1) % n};
  const cml__mpi_group_t not_member = {other, 1};
  cml_status_t st = cml__mpi_barrier(&not_member);
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_INVALID_ARGUMENT);
  cml_status_free(st);
  const int bad[2] = {g_rank, n + 3};
  const cml__mpi_group_t bad_group = {bad, 2};
  st = cml__mpi_barrier(&bad_group);
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_TRUE(strstr(cml_status_message(st), "rank") != NULL);
  cml_status_free(st);
}

TEST(exchange_ring) {
  // Every process sends its rank to the next and receives from the previous one.
  const int n = g_size;
  int64_t send = 1000 + g_rank, recv = -1;
  const cml__mpi_transfer_t s = {(g_rank + 1) % n, &send, sizeof send};
  const cml__mpi_transfer_t r = {(g_rank + n - 1) % n, &recv, sizeof recv};
  ASSERT_STATUS_OK(cml__mpi_exchange(&s, 1, &r, 1, "CollectivePermute"));
  ASSERT_EQ_INT(recv, 1000 + (g_rank + n - 1) % n);
}

TEST(agree) {
  const char same[] = "devices=2";
  ASSERT_STATUS_OK(cml__mpi_agree(same, sizeof same, "test configuration"));
  char mine[32];
  snprintf(mine, sizeof mine, "devices=%d", g_rank == 1 ? 3 : 2);
  cml_status_t st = cml__mpi_agree(mine, strlen(mine), "test configuration");
  // Every process fails, and the message names the differing process and both values.
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_FAILED_PRECONDITION);
  ASSERT_TRUE(strstr(cml_status_message(st), "test configuration differs") != NULL);
  ASSERT_TRUE(strstr(cml_status_message(st), "process 1 has \"devices=3\"") != NULL);
  cml_status_free(st);
}

// Last: after a failure every operation fails.
TEST(failure_notice_reaches_every_process) {
  // A notice ends a peer's current operation, whatever it is: the failing process first waits
  // until every process is done with the earlier tests (agree's messages above), else they
  // could fail there.
  cml_status_t st = cml__mpi_barrier(NULL);
  if (g_rank == g_size - 1) {
    ASSERT_STATUS_OK(st);
    cml__mpi_fail("the test failed this process on purpose");
    st = cml__mpi_failure();
  } else if (st == CML_OK) {
    // The others block in a barrier that the failed process never joins: the notice ends it
    // (or already ended the first one).
    st = cml__mpi_barrier(NULL);
  }
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_FAILED_PRECONDITION);
  char want[64];
  snprintf(want, sizeof want, "process %d failed", g_size - 1);
  ASSERT_TRUE(strstr(cml_status_message(st), want) != NULL);
  ASSERT_TRUE(strstr(cml_status_message(st), "on purpose") != NULL);
  cml_status_free(st);
  st = cml__mpi_barrier(NULL);
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_FAILED_PRECONDITION);
  cml_status_free(st);
}

//===--- failures with messages in flight (one scenario per run: a failure is final) ---===//

// Makes MPI progress for about |ms| milliseconds (every call polls the failure notices, which
// drives Open MPI's progress engine), so that data of requests still in flight would land.
static void progress_for_ms(int ms) {
  for (int i = 0; i < ms; ++i) {
    cml_status_free(cml__mpi_barrier(NULL));
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
}

// A status from an operation that the failure of process |failed| may or may not have reached
// (it may have completed first): OK, or FAILED_PRECONDITION naming that process.
static void expect_ok_or_failure_of(int* test_failed_, cml_status_t st, int failed,
                                    const char* what) {
  if (st == CML_OK) {
    printf("[rank %d] %s completed before the failure notice\n", g_rank, what);
    return;
  }
  char want[64];
  snprintf(want, sizeof want, "process %d failed", failed);
  if (cml_status_code(st) != CML_STATUS_FAILED_PRECONDITION ||
      !strstr(cml_status_message(st), want)) {
    TEST_FAIL_("%s: %s", what, cml_status_message(st));
  }
  cml_status_free(st);
}

enum { kInFlightBytes = 64 << 20 };

// Process 1 sends 64 MiB to process 0 while process 2 fails after 20 ms. Process 0's receive
// is matched and streaming when the notice arrives: when its exchange returns, MPI must be done
// with its buffer (the rest of the message may not land later in memory the caller owns again).
TEST(fail_in_flight_exchange) {
  ASSERT_TRUE(g_size >= 3);
  ASSERT_STATUS_OK(cml__mpi_barrier(NULL));
  uint8_t* data = malloc(kInFlightBytes);
  ASSERT_TRUE(data != NULL);
  memset(data, g_rank == 1 ? 0x5A : 0, kInFlightBytes);
  if (g_rank == 2) {
    struct timespec ts = {0, 20 * 1000000};
    nanosleep(&ts, NULL);
    cml__mpi_fail("the test failed this process on purpose");
  } else if (g_rank == 0 || g_rank == 1) {
    int32_t never = 0;
    const cml__mpi_transfer_t big = {g_rank == 0 ? 1 : 0, data, kInFlightBytes};
    const cml__mpi_transfer_t from_2 = {2, &never, sizeof never};  // process 2 never sends
    const cml__mpi_transfer_t receives[2] = {big, from_2};
    cml_status_t st = g_rank == 0 ? cml__mpi_exchange(NULL, 0, receives, 2, "in-flight test")
                                  : cml__mpi_exchange(&big, 1, NULL, 0, "in-flight test");
    if (g_rank == 0) {
      // Process 0 waits for process 2, so it cannot succeed.
      ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_FAILED_PRECONDITION);
      cml_status_free(st);
    } else {
      expect_ok_or_failure_of(test_failed_, st, 2, "the 64 MiB send");
    }
    // The caller owns the buffer again: nothing may write into it any more.
    memset(data, 0xC3, kInFlightBytes);
  }
  progress_for_ms(300);
  int64_t changed = -1;
  for (int64_t i = 0; i < kInFlightBytes && changed < 0 && g_rank < 2; ++i) {
    if (data[i] != 0xC3) changed = i;
  }
  free(data);
  if (changed >= 0)
    TEST_FAIL_("byte %lld of the buffer changed after the call returned", (long long)changed);
  ASSERT_STATUS_CODE(cml__mpi_failure(), CML_STATUS_FAILED_PRECONDITION);
}

// Processes 0, 1 and 2 all-reduce 64 MiB among themselves while process 3 fails after 20 ms:
// the notice arrives while pieces stream into the reduction's own receive buffers and the
// gather writes into |out|. When the call returns, nothing may land in freed memory
// (AddressSanitizer builds see it) or in |out|.
TEST(fail_in_flight_all_reduce) {
  ASSERT_TRUE(g_size >= 4);
  ASSERT_STATUS_OK(cml__mpi_barrier(NULL));
  const int64_t n = kInFlightBytes / (int64_t)sizeof(float);
  float* in = malloc((size_t)kInFlightBytes);
  float* out = malloc((size_t)kInFlightBytes);
  ASSERT_TRUE(in && out);
  for (int64_t i = 0; i < n; ++i) in[i] = (float)value_of(g_rank, i);
  if (g_rank == 3) {
    struct timespec ts = {0, 20 * 1000000};
    nanosleep(&ts, NULL);
    cml__mpi_fail("the test failed this process on purpose");
  } else if (g_rank < 3) {
    const int ranks[3] = {0, 1, 2};
    const cml__mpi_group_t group = {ranks, 3};
    cml_status_t st = cml__mpi_all_reduce(&group, in, out, n, CML_DTYPE_F32, CML_REDUCE_SUM);
    expect_ok_or_failure_of(test_failed_, st, 3, "the 64 MiB AllReduce");
    memset(out, 0xC3, (size_t)kInFlightBytes);
  }
  free(in);
  progress_for_ms(300);
  int64_t changed = -1;
  const uint8_t* bytes = (const uint8_t*)out;
  for (int64_t i = 0; i < kInFlightBytes && changed < 0 && g_rank < 3; ++i) {
    if (bytes[i] != 0xC3) changed = i;
  }
  free(out);
  if (changed >= 0)
    TEST_FAIL_("byte %lld of |out| changed after the call returned", (long long)changed);
  // Once more after the frees: late data would land in freed memory now.
  progress_for_ms(100);
  ASSERT_STATUS_CODE(cml__mpi_failure(), CML_STATUS_FAILED_PRECONDITION);
}

// The failure scenarios, each run alone (argv[1]) in a job of its own.
// The program finalizes MPI itself while cml still uses it (its own run: MPI is gone after):
// every later operation is FAILED_PRECONDITION saying so, where Open MPI used to abort the
// process, and a failure notice is dropped quietly.
TEST(after_user_finalize) {
  ASSERT_STATUS_OK(cml__mpi_init());
  ASSERT_EQ_INT(MPI_Finalize(), MPI_SUCCESS);
  float x = 1, y = 0;
  cml_status_t st = cml__mpi_all_reduce(NULL, &x, &y, 1, CML_DTYPE_F32, CML_REDUCE_SUM);
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_FAILED_PRECONDITION);
  ASSERT_CONTAINS(cml_status_message(st), "MPI_Finalize");
  cml_status_free(st);
  cml__mpi_fail("after finalize");
  st = cml__mpi_barrier(NULL);
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_FAILED_PRECONDITION);
  cml_status_free(st);
}

static const test_entry_t kFailureTests[] = {
    TEST_ENTRY(fail_in_flight_exchange),
    TEST_ENTRY(fail_in_flight_all_reduce),
    TEST_ENTRY(after_user_finalize),
};

static const test_entry_t kTests[] = {
    TEST_ENTRY(init_rank_size),
    TEST_ENTRY(all_reduce_f32_sum_max_in_place),
    TEST_ENTRY(all_reduce_integer_classes),
    TEST_ENTRY(all_reduce_halves_rounded_once_and_complex),
    TEST_ENTRY(reduce_scatter_gather_alltoall_broadcast),
    TEST_ENTRY(all_gather_v_and_subgroups),
    TEST_ENTRY(exchange_ring),
    TEST_ENTRY(agree),
    TEST_ENTRY(failure_notice_reaches_every_process),
};

int main(int argc, char** argv) {
  // The ranks from Open MPI's environment, to check cml__mpi_rank/size against.
  const char* r = getenv("OMPI_COMM_WORLD_RANK");
  const char* s = getenv("OMPI_COMM_WORLD_SIZE");
  if (!r || !s) {
    fprintf(stderr, "mpi_comm_test: run under mpirun (-np 2 or more)\n");
    return 77;
  }
  g_rank = atoi(r);
  g_size = atoi(s);
  int failed_total = 0, ran = 0;
  const test_entry_t* list = argc > 1 ? kFailureTests : kTests;
  const size_t count =
      argc > 1 ? sizeof kFailureTests / sizeof kFailureTests[0] : sizeof kTests / sizeof kTests[0];
  for (size_t i = 0; i < count; ++i) {
    if (argc > 1 && strcmp(argv[1], list[i].name) != 0) continue;
    int failed = 0;
    list[i].fn(&failed);
    if (failed) fprintf(stderr, "[rank %d] FAILED %s\n", g_rank, list[i].name);
    failed_total += failed;
    ++ran;
  }
  if (ran == 0) {
    fprintf(stderr, "mpi_comm_test: no test named %s\n", argv[1]);
    return 1;
  }
  if (g_rank == 0) printf("mpi_comm_test: %d processes, %d failed\n", g_size, failed_total);
  return failed_total ? 1 : 0;
}
