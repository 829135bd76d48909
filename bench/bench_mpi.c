// SPDX-License-Identifier: Apache-2.0
// bench/bench_mpi.c: multi-process collectives side by side (run with mpirun -np 2):
//   1. AllReduce (sum) of 4 MiB .. 256 MiB of f32 over 2 processes: cml on
//      "c:distributed=mpi,devices=1" (an SPMD module of one AllReduce, executed) against
//      MPI_Allreduce called directly on the same data; GB/s (bytes reduced per second) and the
//      ratio cml / MPI.
//   2. A data-parallel step (dense layer forward, gradient, gradient AllReduce) over 2 processes
//      x 1 device against 1 process x 2 devices ("c:devices=2"); ms per step and the ratio.
// Every figure is the median of several runs; the processes start each run together (barrier).
// Built with MPI only (without it the program says so and exits 0).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cml/cml.h"

#if defined(CML_BENCH_HAVE_MPI) && CML_BENCH_HAVE_MPI

#include <mpi.h>
#include <time.h>

#include "tools/cml/machine.h"

static double now_s(void) { return MPI_Wtime(); }

static int cmp_double(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

static double median(double* v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return v[n / 2];
}

#define CHECK(expr)                                                                           \
  do {                                                                                        \
    cml_status_t st_ = (expr);                                                                \
    if (st_ != CML_OK) {                                                                      \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #expr, cml_status_message(st_)); \
      MPI_Abort(MPI_COMM_WORLD, 1);                                                           \
    }                                                                                         \
  } while (0)

static cml_executable_t* build_all_reduce(cml_backend_t* be, int devices, int64_t count) {
  cml_builder_t* b = NULL;
  CHECK(cml_builder_create(be, "all_reduce", &b));
  CHECK(cml_builder_spmd(b, devices));
  cml_function_t* f = cml_builder_main(b);
  cml_shape_t s = cml_shape_make(CML_DTYPE_F32, 1, &count);
  cml_value_t x = cml_parameter(f, "x", &s), y;
  cml_op_all_reduce(f, &x, 1, CML_REDUCE_SUM, NULL, &y);
  CHECK(cml_function_return(f, &y, 1));
  cml_executable_t* exe = NULL;
  CHECK(cml_builder_compile(b, &exe));
  cml_builder_destroy(b);
  return exe;
}

// y = x @ w; g = x^T (y - t) summed over the devices; returns y and the summed g.
static cml_executable_t* build_step(cml_backend_t* be, int devices, int64_t batch, int64_t in,
                                    int64_t out) {
  cml_builder_t* b = NULL;
  CHECK(cml_builder_create(be, "dp_step", &b));
  CHECK(cml_builder_spmd(b, devices));
  cml_function_t* f = cml_builder_main(b);
  cml_shape_t xs = cml_shape_make(CML_DTYPE_F32, 2, (int64_t[]){batch, in});
  cml_shape_t ws = cml_shape_make(CML_DTYPE_F32, 2, (int64_t[]){in, out});
  cml_shape_t ts = cml_shape_make(CML_DTYPE_F32, 2, (int64_t[]){batch, out});
  cml_value_t x = cml_parameter(f, "x", &xs), w = cml_parameter(f, "w", &ws);
  cml_value_t t = cml_parameter(f, "t", &ts);
  cml_value_t y = cml_op_tanh(f, cml_op_dot(f, x, w));
  cml_value_t d = cml_op_sub(f, y, t);
  cml_dot_config_t c;
  memset(&c, 0, sizeof c);
  c.lhs_contracting_count = c.rhs_contracting_count = 1;
  cml_value_t g = cml_op_dot_general(f, x, d, &c), gs;
  cml_op_all_reduce(f, &g, 1, CML_REDUCE_SUM, NULL, &gs);
  cml_value_t new_w =
      cml_op_sub(f, w, cml_op_mul(f, gs, cml_constant_scalar_f64(f, CML_DTYPE_F32, 1e-3)));
  CHECK(cml_function_return(f, &new_w, 1));
  cml_executable_t* exe = NULL;
  CHECK(cml_builder_compile(b, &exe));
  cml_builder_destroy(b);
  return exe;
}

static cml_buffer_t* filled(cml_backend_t* be, int device, const cml_shape_t* s, float v) {
  const int64_t n = cml_shape_element_count(s);
  float* host = malloc((size_t)n * sizeof *host);
  for (int64_t i = 0; i < n; ++i) host[i] = v + (float)(i % 7) * 0.125f;
  cml_buffer_t* buf = NULL;
  CHECK(cml_buffer_from_host(be, device, s, host, (size_t)n * sizeof *host, &buf));
  free(host);
  return buf;
}

// Waits for the other process without spinning a core (it is timing something).
static void idle_barrier(void) {
  MPI_Request req;
  MPI_Ibarrier(MPI_COMM_WORLD, &req);
  int done = 0;
  while (!done) {
    MPI_Test(&req, &done, MPI_STATUS_IGNORE);
    if (!done) {
      struct timespec ts = {0, 2000000};
      nanosleep(&ts, NULL);
    }
  }
}

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != 2) {
    if (rank == 0) fprintf(stderr, "bench_mpi: run with mpirun -np 2\n");
    MPI_Finalize();
    return 2;
  }
  const int reps = argc > 1 ? atoi(argv[1]) : 7;
  cml_backend_t* mp = NULL;
  CHECK(cml_backend_new_with_config("c:distributed=mpi,devices=1,threads=1", &mp));
  char cpu[160];
  cml_cli_cpu_model(cpu, sizeof cpu);
  if (rank == 0) {
    printf("bench_mpi: 2 processes, %s, %s\n", cpu, cml_backend_description(mp));
    printf(
        "\nAllReduce sum f32 over 2 processes (GB/s = bytes of one buffer / time; median of "
        "%d)\n",
        reps);
    printf("%-10s %12s %12s %12s %12s %8s\n", "size", "cml ms", "MPI ms", "cml GB/s", "MPI GB/s",
           "ratio");
  }
  const int64_t mib[] = {4, 16, 64, 256};
  double* t_cml = malloc(sizeof(double) * (size_t)reps);
  double* t_mpi = malloc(sizeof(double) * (size_t)reps);
  for (size_t k = 0; k < sizeof mib / sizeof mib[0]; ++k) {
    const int64_t count = mib[k] * 1024 * 1024 / 4;
    cml_executable_t* exe = build_all_reduce(mp, 2, count);
    cml_shape_t s = cml_shape_make(CML_DTYPE_F32, 1, &count);
    cml_buffer_t* in[2] = {NULL, NULL};
    in[rank] = filled(mp, rank, &s, (float)rank);
    float* a = malloc((size_t)count * sizeof *a);
    float* r = malloc((size_t)count * sizeof *r);
    for (int64_t i = 0; i < count; ++i) a[i] = (float)rank + (float)(i % 7) * 0.125f;
    memset(r, 0, (size_t)count * sizeof *r);  // touch the pages once, as cml's are reused
    for (int rep = -1; rep < reps; ++rep) {   // rep -1 warms up
      // Interleaved: cml, then MPI, so that both see the same machine state.
      cml_buffer_t* out[2] = {NULL, NULL};
      MPI_Barrier(MPI_COMM_WORLD);
      double t0 = now_s();
      CHECK(cml_executable_execute(exe, in, 2, NULL, 0, out));
      double t1 = now_s();
      cml_buffer_release(out[rank]);
      MPI_Barrier(MPI_COMM_WORLD);
      double t2 = now_s();
      MPI_Allreduce(a, r, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      double t3 = now_s();
      if (rep >= 0) {
        t_cml[rep] = t1 - t0;
        t_mpi[rep] = t3 - t2;
      }
    }
    const double c = median(t_cml, reps), m = median(t_mpi, reps);
    const double bytes = (double)count * 4;
    if (rank == 0) {
      printf("%4lld MiB   %12.2f %12.2f %12.2f %12.2f %7.2fx\n", (long long)mib[k], c * 1e3,
             m * 1e3, bytes / c / 1e9, bytes / m / 1e9, m / c);
      fflush(stdout);
    }
    free(a);
    free(r);
    cml_buffer_release(in[rank]);
    cml_executable_release(exe);
  }

  // Data-parallel step: per device batch 256 x 512 -> 512.
  const int64_t batch = 256, din = 512, dout = 512;
  cml_shape_t xs = cml_shape_make(CML_DTYPE_F32, 2, (int64_t[]){batch, din});
  cml_shape_t ws = cml_shape_make(CML_DTYPE_F32, 2, (int64_t[]){din, dout});
  cml_shape_t ts = cml_shape_make(CML_DTYPE_F32, 2, (int64_t[]){batch, dout});
  const int steps = 10;
  double* t_one = malloc(sizeof(double) * (size_t)reps);
  {
    cml_executable_t* exe = build_step(mp, 2, batch, din, dout);
    cml_buffer_t* in[6] = {NULL};
    in[rank * 3 + 0] = filled(mp, rank, &xs, 0.01f * (float)rank);
    in[rank * 3 + 1] = filled(mp, rank, &ws, 0.02f);
    in[rank * 3 + 2] = filled(mp, rank, &ts, 0.5f);
    for (int rep = -1; rep < reps; ++rep) {
      MPI_Barrier(MPI_COMM_WORLD);
      const double t0 = now_s();
      for (int s = 0; s < steps; ++s) {
        cml_buffer_t* out[2] = {NULL, NULL};
        CHECK(cml_executable_execute(exe, in, 6, NULL, 0, out));
        cml_buffer_release(out[rank]);
      }
      if (rep >= 0) t_cml[rep] = (now_s() - t0) / steps;
    }
    for (int i = 0; i < 3; ++i) cml_buffer_release(in[rank * 3 + i]);
    cml_executable_release(exe);
  }
  // One process with both devices (one pool thread, plus the slot threads).
  if (rank == 0) {
    cml_backend_t* one = NULL;
    CHECK(cml_backend_new_with_config("c:devices=2,threads=1", &one));
    cml_executable_t* exe = build_step(one, 2, batch, din, dout);
    cml_buffer_t* in[6];
    for (int d = 0; d < 2; ++d) {
      in[d * 3 + 0] = filled(one, d, &xs, 0.01f * (float)d);
      in[d * 3 + 1] = filled(one, d, &ws, 0.02f);
      in[d * 3 + 2] = filled(one, d, &ts, 0.5f);
    }
    for (int rep = -1; rep < reps; ++rep) {
      const double t0 = now_s();
      for (int s = 0; s < steps; ++s) {
        cml_buffer_t* out[2] = {NULL, NULL};
        CHECK(cml_executable_execute(exe, in, 6, NULL, 0, out));
        cml_buffer_release(out[0]);
        cml_buffer_release(out[1]);
      }
      if (rep >= 0) t_one[rep] = (now_s() - t0) / steps;
    }
    for (int i = 0; i < 6; ++i) cml_buffer_release(in[i]);
    cml_executable_release(exe);
    cml_backend_release(one);
  }
  idle_barrier();
  if (rank == 0) {
    const double two = median(t_cml, reps), one = median(t_one, reps);
    printf(
        "\nData-parallel step (x[%lld,%lld] @ w[%lld,%lld], tanh, gradient AllReduce of "
        "%lld KiB), ms per step, median of %d x %d steps\n",
        (long long)batch, (long long)din, (long long)din, (long long)dout,
        (long long)(din * dout * 4 / 1024), reps, steps);
    printf("2 processes x 1 device (c:distributed=mpi,devices=1,threads=1): %8.2f ms\n", two * 1e3);
    printf("1 process x 2 devices  (c:devices=2,threads=1):                   %8.2f ms\n",
           one * 1e3);
    printf("ratio (1 process time / 2 processes time): %.2fx\n", one / two);
  }
  free(t_cml);
  free(t_mpi);
  free(t_one);
  cml_backend_release(mp);
  MPI_Finalize();
  return 0;
}

#else  // !CML_BENCH_HAVE_MPI

int main(void) {
  printf("bench_mpi: this build has no MPI (rebuild with -DCML_WITH_MPI=ON)\n");
  return 0;
}

#endif
