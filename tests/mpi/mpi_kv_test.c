// SPDX-License-Identifier: Apache-2.0
// tests/mpi/mpi_kv_test.c: the key-value store served over MPI (src/distributed/mpi_kv.h) under
// `mpirun -np 2` and `-np 4`: every process puts its key and gets every other's (gets that wait
// for a put made later, on process 0 and elsewhere), try-get, a get of a key nobody puts (times
// out with a status, within bounds), replaced values, gets from many threads at once, a large
// value, separate stores, bad input.
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cml/backend_impl.h"
#include "cml/cml.h"
#include "distributed/mpi_comm.h"
#include "distributed/mpi_kv.h"
#include "test.h"

static int g_rank, g_size;
static cml__mpi_kv_t* g_kv;

static int64_t now_ms(void) { return cml_clock_monotonic_ns() / 1000000; }

static void value_of(int rank, char* out, size_t size) {
  snprintf(out, size, "value of process %d: %d", rank, rank * rank + 7);
}

// Gets |key| and checks that its value is |want|.
#define ASSERT_KV_VALUE(key, want, timeout_ms)                                             \
  do {                                                                                     \
    char* v_ = NULL;                                                                       \
    size_t n_ = 0;                                                                         \
    ASSERT_STATUS_OK(cml__mpi_kv_get(g_kv, (key), strlen(key), (timeout_ms), &v_, &n_));   \
    const int same_ = n_ == strlen(want) && memcmp(v_, (want), n_) == 0 && v_[n_] == '\0'; \
    if (!same_) fprintf(stderr, "rank %d: %s = \"%.*s\"\n", g_rank, (key), (int)n_, v_);   \
    free(v_);                                                                              \
    ASSERT_TRUE(same_);                                                                    \
  } while (0)

TEST(each_puts_then_gets_every_key) {
  ASSERT_EQ_INT(cml__mpi_kv_rank(g_kv), g_rank);
  ASSERT_EQ_INT(cml__mpi_kv_size(g_kv), g_size);
  char key[64], want[64];
  snprintf(key, sizeof key, "node/%d", g_rank);
  value_of(g_rank, want, sizeof want);
  ASSERT_STATUS_OK(cml__mpi_kv_put(g_kv, key, strlen(key), want, strlen(want)));
  // In an order that starts with keys other processes may not have put yet.
  for (int k = 1; k <= g_size; ++k) {
    const int r = (g_rank + k) % g_size;
    snprintf(key, sizeof key, "node/%d", r);
    value_of(r, want, sizeof want);
    ASSERT_KV_VALUE(key, want, 10000);
  }
}

// A get waits for a put made later: by process 0 (answered by its service thread to the others)
// and by the last process (process 0's own get is woken by a remote put).
TEST(get_waits_for_a_later_put) {
  ASSERT_STATUS_OK(cml__mpi_barrier(NULL));
  for (int putter = 0; putter < g_size; putter += g_size - 1) {
    char key[32];
    snprintf(key, sizeof key, "late/%d", putter);
    const int64_t t0 = now_ms();
    if (g_rank == putter) {
      usleep(300000);
      ASSERT_STATUS_OK(cml__mpi_kv_put(g_kv, key, strlen(key), "later", 5));
    }
    ASSERT_KV_VALUE(key, "later", 10000);
    const int64_t waited = now_ms() - t0;
    if (waited < 250) TEST_FAIL_("rank %d: %s came after %lld ms", g_rank, key, (long long)waited);
    ASSERT_STATUS_OK(cml__mpi_barrier(NULL));
  }
}

TEST(try_get) {
  ASSERT_STATUS_OK(cml__mpi_barrier(NULL));
  char* v = NULL;
  size_t n = 99;
  cml_status_t st = cml__mpi_kv_try_get(g_kv, "absent", 6, &v, &n);
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_NOT_FOUND);
  ASSERT_CONTAINS(cml_status_message(st), "\"absent\"");
  cml_status_free(st);
  ASSERT_TRUE(v == NULL);
  ASSERT_EQ_INT(n, 0);
  ASSERT_STATUS_OK(cml__mpi_kv_try_get(g_kv, "node/0", 6, &v, &n));
  char want[64];
  value_of(0, want, sizeof want);
  ASSERT_EQ_INT(n, strlen(want));
  ASSERT_TRUE(memcmp(v, want, n) == 0);
  free(v);
}

// Nobody puts the key: every process's get ends with DEADLINE_EXCEEDED after its timeout.
TEST(get_of_a_key_never_put_times_out) {
  ASSERT_STATUS_OK(cml__mpi_barrier(NULL));
  char* v = NULL;
  size_t n = 0;
  const int64_t t0 = now_ms();
  cml_status_t st = cml__mpi_kv_get(g_kv, "never/put", 9, 300, &v, &n);
  const int64_t waited = now_ms() - t0;
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_DEADLINE_EXCEEDED);
  ASSERT_CONTAINS(cml_status_message(st), "\"never/put\"");
  ASSERT_CONTAINS(cml_status_message(st), "300 ms");
  ASSERT_CONTAINS(cml_status_message(st), "CML_MPI_TIMEOUT_MS");
  cml_status_free(st);
  ASSERT_TRUE(v == NULL);
  if (waited < 280 || waited > 5000) {
    TEST_FAIL_("rank %d: the get gave up after %lld ms, not about 300", g_rank, (long long)waited);
  }
}

TEST(put_replaces_the_value) {
  ASSERT_STATUS_OK(cml__mpi_barrier(NULL));
  if (g_rank == 0) ASSERT_STATUS_OK(cml__mpi_kv_put(g_kv, "x", 1, "1", 1));
  ASSERT_STATUS_OK(cml__mpi_barrier(NULL));
  ASSERT_KV_VALUE("x", "1", 1000);
  ASSERT_STATUS_OK(cml__mpi_barrier(NULL));
  if (g_rank == g_size - 1) ASSERT_STATUS_OK(cml__mpi_kv_put(g_kv, "x", 1, "twenty-two", 10));
  ASSERT_STATUS_OK(cml__mpi_barrier(NULL));
  ASSERT_KV_VALUE("x", "twenty-two", 1000);
  // An empty value is a value.
  if (g_rank == 0) ASSERT_STATUS_OK(cml__mpi_kv_put(g_kv, "empty", 5, NULL, 0));
  ASSERT_STATUS_OK(cml__mpi_barrier(NULL));
  ASSERT_KV_VALUE("empty", "", 1000);
}

enum { kThreads = 4 };

typedef struct getter_t {
  int source;  // the process whose key this thread waits for
  int index;
  cml_status_t status;
  char value[64];
} getter_t;

static void* getter_main(void* arg) {
  getter_t* g = arg;
  char key[64];
  snprintf(key, sizeof key, "thread/%d/%d", g->source, g->index);
  char* v = NULL;
  size_t n = 0;
  g->status = cml__mpi_kv_get(g_kv, key, strlen(key), 15000, &v, &n);
  if (g->status == CML_OK) {
    snprintf(g->value, sizeof g->value, "%.*s", (int)n, v);
    free(v);
  }
  return NULL;
}

// Several threads of each process wait at once (as a plugin's threads do) for keys the next
// process puts only after they started.
TEST(gets_from_many_threads) {
  ASSERT_STATUS_OK(cml__mpi_barrier(NULL));
  getter_t getters[kThreads];
  pthread_t threads[kThreads];
  const int source = (g_rank + 1) % g_size;
  for (int i = 0; i < kThreads; ++i) {
    getters[i] = (getter_t){.source = source, .index = i, .status = CML_OK};
    ASSERT_EQ_INT(pthread_create(&threads[i], NULL, getter_main, &getters[i]), 0);
  }
  usleep(100000);
  for (int i = kThreads - 1; i >= 0; --i) {
    char key[64], value[64];
    snprintf(key, sizeof key, "thread/%d/%d", g_rank, i);
    snprintf(value, sizeof value, "%d-%d", g_rank, i * 11);
    ASSERT_STATUS_OK(cml__mpi_kv_put(g_kv, key, strlen(key), value, strlen(value)));
  }
  for (int i = 0; i < kThreads; ++i) pthread_join(threads[i], NULL);
  for (int i = 0; i < kThreads; ++i) {
    ASSERT_STATUS_OK(getters[i].status);
    char want[64];
    snprintf(want, sizeof want, "%d-%d", source, i * 11);
    ASSERT_STREQ(getters[i].value, want);
  }
}

TEST(large_value) {
  ASSERT_STATUS_OK(cml__mpi_barrier(NULL));
  const size_t n = (5u << 20) + 3;
  if (g_rank == g_size - 1) {
    unsigned char* big = malloc(n);
    ASSERT_TRUE(big != NULL);
    for (size_t i = 0; i < n; ++i) big[i] = (unsigned char)(i * 31 + 7);
    cml_status_t st = cml__mpi_kv_put(g_kv, "big", 3, big, n);
    free(big);
    ASSERT_STATUS_OK(st);
  }
  char* v = NULL;
  size_t got = 0;
  ASSERT_STATUS_OK(cml__mpi_kv_get(g_kv, "big", 3, 10000, &v, &got));
  ASSERT_EQ_U64(got, n);
  size_t bad = n;
  for (size_t i = 0; i < n && bad == n; ++i) {
    if ((unsigned char)v[i] != (unsigned char)(i * 31 + 7)) bad = i;
  }
  free(v);
  ASSERT_EQ_U64(bad, n);
}

// Two stores never see each other's keys.
TEST(stores_are_separate) {
  cml__mpi_kv_t* other = NULL;
  ASSERT_STATUS_OK(cml__mpi_kv_create("second store", &other));
  char* v = NULL;
  size_t n = 0;
  cml_status_t st = cml__mpi_kv_try_get(other, "node/0", 6, &v, &n);
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_NOT_FOUND);
  ASSERT_CONTAINS(cml_status_message(st), "second store");
  cml_status_free(st);
  ASSERT_STATUS_OK(cml__mpi_barrier(NULL));
  if (g_rank == 0) ASSERT_STATUS_OK(cml__mpi_kv_put(other, "node/0", 6, "other", 5));
  ASSERT_STATUS_OK(cml__mpi_kv_get(other, "node/0", 6, 5000, &v, &n));
  ASSERT_TRUE(n == 5 && memcmp(v, "other", 5) == 0);
  free(v);
  cml__mpi_kv_destroy(other);
  char want[64];
  value_of(0, want, sizeof want);
  ASSERT_KV_VALUE("node/0", want, 1000);
}

TEST(bad_input) {
  char* v = NULL;
  size_t n = 0;
  ASSERT_STATUS_CODE(cml__mpi_kv_get(g_kv, "", 0, 10, &v, &n), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_STATUS_CODE(cml__mpi_kv_put(g_kv, "", 0, "a", 1), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_STATUS_CODE(cml__mpi_kv_put(g_kv, "k", 1, NULL, 4), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_STATUS_CODE(cml__mpi_kv_put(NULL, "k", 1, "a", 1), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_STATUS_CODE(cml__mpi_kv_get(g_kv, "k", 1, 10, NULL, &n), CML_STATUS_INVALID_ARGUMENT);
  cml_status_t st = cml__mpi_kv_put(g_kv, "k", 1, "a", CML__MPI_KV_MAX_BYTES);
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(cml_status_message(st), "bytes");
  cml_status_free(st);
}

static const test_entry_t kTests[] = {
    TEST_ENTRY(each_puts_then_gets_every_key),
    TEST_ENTRY(get_waits_for_a_later_put),
    TEST_ENTRY(try_get),
    TEST_ENTRY(get_of_a_key_never_put_times_out),
    TEST_ENTRY(put_replaces_the_value),
    TEST_ENTRY(gets_from_many_threads),
    TEST_ENTRY(large_value),
    TEST_ENTRY(stores_are_separate),
    TEST_ENTRY(bad_input),
};

int main(void) {
  const char* r = getenv("OMPI_COMM_WORLD_RANK");
  const char* s = getenv("OMPI_COMM_WORLD_SIZE");
  if (!r || !s) {
    fprintf(stderr, "mpi_kv_test: run under mpirun (-np 2 or more)\n");
    return 77;
  }
  g_rank = atoi(r);
  g_size = atoi(s);
  cml_status_t st = cml__mpi_kv_create("test store", &g_kv);
  if (st != CML_OK) {
    fprintf(stderr, "rank %d: %s\n", g_rank, cml_status_message(st));
    cml_status_free(st);
    return 1;
  }
  int failed_total = 0;
  for (size_t i = 0; i < sizeof kTests / sizeof kTests[0]; ++i) {
    int failed = 0;
    kTests[i].fn(&failed);
    if (failed) fprintf(stderr, "[rank %d] FAILED %s\n", g_rank, kTests[i].name);
    failed_total += failed;
  }
  const int64_t t0 = now_ms();
  cml__mpi_kv_destroy(g_kv);
  if (g_rank == 0) {
    printf("mpi_kv_test: %d processes, %d failed, destroy took %lld ms\n", g_size, failed_total,
           (long long)(now_ms() - t0));
  }
  return failed_total ? 1 : 0;
}
