// SPDX-License-Identifier: Apache-2.0
// bench/bench_collective.c: the c backend on several devices: AllReduce of 64 MiB of f32 over 4
// device slots against memcpy bandwidth in the same run, and one data-parallel MLP training
// step on c:devices=2,threads=2 against the same step on one device with 2 threads.
//
// AllReduce is timed three ways: one execute per AllReduce (end to end: the 4 fresh 64 MiB
// output buffers are part of it, page faults included), 8 AllReduces chained in a While loop in
// one execute (the state stays in the arena: the steady-state cost of the collective), and one
// execute per AllReduce of 64 MiB of bf16 (mixed-precision gradients, summed in f32). The
// figures are algorithm bandwidth (operand bytes / time) and NCCL's bus bandwidth (algorithm
// bandwidth x 2(n-1)/n), each as a ratio against a 64 MiB memcpy between two warm buffers
// (bytes / time). Never part of CI; prints figures only.
//
// What the machine allows is printed next to it: the same memcpy split over the backend's
// threads (the copy bandwidth of all cores), and the AllReduce's floor, the time its memory
// traffic takes at that rate. An AllReduce of n separate f32 buffers reads n operands and
// writes n results: n times the bytes of one memcpy, so at best 1/n of the memcpy ratio as
// algorithm bandwidth (read as bus bandwidth, 2(n-1)/n^2).
//
// Usage: bench_collective [--reps N] [--mib M] [--devices N] [--threads T] (the c backend's
// threads, 2 by default) [--mlp-only CONFIG] (only the MLP step on CONFIG, for a profiler)
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "cml/cml.h"
#include "cml/distributed.h"
#include "tools/cml/machine.h"

// CPU seconds (user + system) of the whole process so far.
static double cpu_s(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec +
         (double)ru.ru_stime.tv_sec + 1e-6 * (double)ru.ru_stime.tv_usec;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct copy_part_t {
  char* dst;
  const char* src;
  size_t bytes;
} copy_part_t;

static void* copy_part(void* arg) {
  const copy_part_t* p = (const copy_part_t*)arg;
  memcpy(p->dst, p->src, p->bytes);
  return NULL;
}

// memcpy of |bytes| split over |threads| threads (the caller is one of them).
static void parallel_memcpy(void* dst, const void* src, size_t bytes, int threads) {
  pthread_t t[64];
  copy_part_t part[64];
  const size_t per = (bytes / (size_t)threads + 63) & ~(size_t)63;
  int started = 0;
  for (int k = 0; k < threads; ++k) {
    size_t at = per * (size_t)k;
    part[k].dst = (char*)dst + at;
    part[k].src = (const char*)src + at;
    part[k].bytes = at >= bytes ? 0 : (bytes - at < per ? bytes - at : per);
  }
  for (int k = 1; k < threads; ++k) {
    if (pthread_create(&t[k], NULL, copy_part, &part[k]) != 0) break;
    started = k;
  }
  copy_part(&part[0]);
  for (int k = started + 1; k < threads; ++k) copy_part(&part[k]);  // threads that failed
  for (int k = 1; k <= started; ++k) pthread_join(t[k], NULL);
}

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

static double median(double* v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return v[n / 2];
}

static bool check(cml_status_t st, const char* what) {
  if (st == CML_OK) return true;
  fprintf(stderr, "bench_collective: %s: %s\n", what, cml_status_message(st));
  cml_status_free(st);
  return false;
}

//===--- AllReduce vs memcpy ---===//

// x -> AllReduce(x) once, or |loops| times in a While loop.
static cml_status_t build_all_reduce(cml_backend_t* be, int devices, cml_dtype_t dtype, int64_t n,
                                     int loops, cml_executable_t** out) {
  cml_builder_t* b = NULL;
  CML_RETURN_IF_ERROR(cml_builder_create(be, "all_reduce", &b));
  cml_status_t st = cml_builder_spmd(b, devices);
  cml_function_t* f = cml_builder_main(b);
  cml_shape_t s = cml_shape_make(dtype, 1, (int64_t[]){n});
  cml_value_t x = cml_parameter(f, "x", &s), r = CML_VALUE_INVALID;
  if (loops <= 1) {
    cml_op_all_reduce(f, &x, 1, CML_REDUCE_SUM, NULL, &r);
  } else {
    cml_function_t *cond = NULL, *body = NULL;
    if (st == CML_OK) st = cml_function_new_closure(f, &cond);
    if (st == CML_OK) st = cml_function_new_closure(f, &body);
    if (st == CML_OK) {
      cml_shape_t is = cml_shape_make(CML_DTYPE_I32, 0, NULL);
      cml_value_t ci = cml_parameter(cond, "i", &is);
      (void)cml_parameter(cond, "x", &s);
      cml_value_t go =
          cml_op_less_than(cond, ci, cml_constant_scalar_i64(cond, CML_DTYPE_I32, loops));
      st = cml_function_return(cond, &go, 1);
      cml_value_t bi = cml_parameter(body, "i", &is);
      cml_value_t bx = cml_parameter(body, "x", &s);
      cml_value_t next[2] = {cml_op_add(body, bi, cml_constant_scalar_i64(body, CML_DTYPE_I32, 1)),
                             CML_VALUE_INVALID};
      cml_op_all_reduce(body, &bx, 1, CML_REDUCE_SUM, NULL, &next[1]);
      if (st == CML_OK) st = cml_function_return(body, next, 2);
      cml_value_t init[2] = {cml_constant_scalar_i64(f, CML_DTYPE_I32, 0), x}, outs[2];
      cml_op_while(f, cond, body, init, 2, outs);
      r = outs[1];
    }
  }
  if (st == CML_OK) st = cml_function_return(f, &r, 1);
  if (st == CML_OK) st = cml_builder_compile(b, out);
  cml_builder_destroy(b);
  return st;
}

static int bench_all_reduce(int reps, int64_t mib, int devices, int threads) {
  const int64_t n = mib * (1 << 20) / 4;
  const size_t bytes = (size_t)n * 4;
  char config[64];
  snprintf(config, sizeof config, "c:devices=%d,threads=%d", devices, threads);
  cml_backend_t* be = NULL;
  if (!check(cml_backend_new_with_config(config, &be), config)) return 1;
  printf("AllReduce (sum) of %lld MiB f32 over %d devices on %s\n", (long long)mib, devices,
         cml_backend_description(be));
  float* host = malloc(bytes);
  for (int64_t i = 0; i < n; ++i) host[i] = (float)(i % 1024);
  cml_buffer_t* in[64] = {0};
  cml_shape_t s = cml_shape_make(CML_DTYPE_F32, 1, (int64_t[]){n});
  for (int j = 0; j < devices; ++j) {
    if (!check(cml_buffer_from_host(be, j, &s, host, bytes, &in[j]), "buffer")) return 1;
  }
  // memcpy between two warm buffers.
  void* a = malloc(bytes);
  void* b = malloc(bytes);
  memset(a, 1, bytes);
  memset(b, 2, bytes);
  double* t = calloc((size_t)reps, sizeof(double));
  double c0 = cpu_s();
  for (int r = 0; r < reps; ++r) {
    double t0 = now_s();
    memcpy(b, a, bytes);
    t[r] = now_s() - t0;
  }
  const double memcpy_cpu = (cpu_s() - c0) / reps;
  const double memcpy_s = median(t, reps);
  const double memcpy_gbs = (double)bytes / memcpy_s / 1e9;
  printf("  %-44s %9.2f ms %8.2f GB/s  (CPU %.1f ms)\n", "memcpy (64 MiB, warm buffers)",
         memcpy_s * 1e3, memcpy_gbs, memcpy_cpu * 1e3);
  // The same copy on every thread the backend has: the machine's copy bandwidth.
  c0 = cpu_s();
  for (int r = 0; r < reps; ++r) {
    double t0 = now_s();
    parallel_memcpy(b, a, bytes, threads);
    t[r] = now_s() - t0;
  }
  const double pmemcpy_cpu = (cpu_s() - c0) / reps;
  const double pmemcpy_s = median(t, reps);
  char label[64];
  snprintf(label, sizeof label, "memcpy (64 MiB) split over %d threads", threads);
  printf("  %-44s %9.2f ms %8.2f GB/s  %.2fx memcpy  (CPU %.1f ms)\n", label, pmemcpy_s * 1e3,
         (double)bytes / pmemcpy_s / 1e9, memcpy_s / pmemcpy_s, pmemcpy_cpu * 1e3);
  // The floor: |devices| operands read and |devices| results written, at the faster copy rate.
  const double floor_s = devices * (pmemcpy_s < memcpy_s ? pmemcpy_s : memcpy_s);
  printf("  %-44s %9.2f ms %8.2f GB/s  %.2fx memcpy\n", "floor (n reads + n writes at that rate)",
         floor_s * 1e3, (double)bytes / floor_s / 1e9, memcpy_s / floor_s);
  // BFloat16 operands of the same byte size (2n elements): mixed-precision gradients.
  const int64_t nb = 2 * n;
  uint16_t* host_bf16 = malloc(bytes);
  for (int64_t i = 0; i < nb; ++i) host_bf16[i] = cml_f32_to_bf16((float)(i % 1024));
  cml_buffer_t* in_bf16[64] = {0};
  cml_shape_t sb = cml_shape_make(CML_DTYPE_BF16, 1, (int64_t[]){nb});
  for (int j = 0; j < devices; ++j) {
    if (!check(cml_buffer_from_host(be, j, &sb, host_bf16, bytes, &in_bf16[j]), "buffer")) return 1;
  }
  const int loops[3] = {1, 8, 1};
  for (int v = 0; v < 3; ++v) {
    const bool bf16 = v == 2;
    cml_executable_t* exe = NULL;
    if (!check(build_all_reduce(be, devices, bf16 ? CML_DTYPE_BF16 : CML_DTYPE_F32, bf16 ? nb : n,
                                loops[v], &exe),
               "compile")) {
      return 1;
    }
    cml_buffer_t* out[64] = {0};
    bool ok = true;
    double cpu = 0;
    for (int r = -1; ok && r < reps; ++r) {  // r = -1: warm-up
      double c1 = cpu_s();
      double t0 = now_s();
      ok = check(cml_executable_execute(exe, bf16 ? in_bf16 : in, (size_t)devices, NULL, 0, out),
                 "execute");
      double dt = now_s() - t0;
      if (r >= 0) t[r] = dt / loops[v];
      if (r >= 0) cpu += (cpu_s() - c1) / loops[v];
      if (ok && r == reps - 1) {  // check slot 1's result
        float probe[1];
        cml_buffer_t* o = out[devices > 1 ? 1 : 0];
        uint8_t* all = malloc(bytes);
        ok = check(cml_buffer_copy_to_host(o, all, bytes), "copy");
        if (bf16) {
          uint16_t h;
          memcpy(&h, all + 1000 * sizeof h, sizeof h);
          probe[0] = cml_bf16_to_f32(h);
        } else {
          memcpy(probe, all + 1000 * sizeof(float), sizeof probe);
        }
        free(all);
        float want = 1000.f;  // x[1000] summed over the devices, |loops| times
        for (int k = 0; k < loops[v]; ++k) want *= (float)devices;
        if (ok && probe[0] != want) printf("  WRONG RESULT: %g, want %g\n", probe[0], want);
      }
      for (int j = 0; j < devices; ++j) cml_buffer_release(out[j]);
    }
    cml_executable_release(exe);
    if (!ok) return 1;
    const double s_per = median(t, reps);
    const double gbs = (double)bytes / s_per / 1e9;
    const double bus = gbs * 2.0 * (devices - 1) / devices;
    printf(
        "  %-44s %9.2f ms %8.2f GB/s  %.2fx memcpy (bus %.2f GB/s: %.2fx), %.2fx the floor  "
        "(CPU %.1f ms)\n",
        v == 0   ? "AllReduce, one per execute (+ new outputs)"
        : v == 1 ? "AllReduce, 8 in a While loop (per AllReduce)"
                 : "AllReduce of bf16 (64 MiB), one per execute",
        s_per * 1e3, gbs, gbs / memcpy_gbs, bus, bus / memcpy_gbs, floor_s / s_per,
        cpu / reps * 1e3);
  }
  for (int j = 0; j < devices; ++j) cml_buffer_release(in[j]), cml_buffer_release(in_bf16[j]);
  free(host_bf16);
  free(t);
  free(a);
  free(b);
  free(host);
  cml_backend_release(be);
  return 0;
}

//===--- data-parallel MLP step ---===//

enum { MLP_B = 512, MLP_D = 512, MLP_H = 1024, MLP_O = 256 };

static cml_value_t transpose2(cml_function_t* f, cml_value_t x) {
  return cml_op_transpose(f, x, (const int64_t[]){1, 0}, 2);
}

// One SGD step of a 2-layer ReLU MLP with squared error on a batch of |batch| rows: returns the
// new w1, w2. With |devices| > 1 the module is SPMD and the gradients are summed by AllReduce.
static cml_status_t build_mlp(cml_backend_t* be, int devices, int64_t batch,
                              cml_executable_t** out) {
  cml_builder_t* b = NULL;
  CML_RETURN_IF_ERROR(cml_builder_create(be, "mlp_step", &b));
  cml_status_t st = devices > 1 ? cml_builder_spmd(b, devices) : CML_OK;
  cml_function_t* f = cml_builder_main(b);
  cml_shape_t xs = cml_shape_make(CML_DTYPE_F32, 2, (int64_t[]){batch, MLP_D});
  cml_shape_t ys = cml_shape_make(CML_DTYPE_F32, 2, (int64_t[]){batch, MLP_O});
  cml_shape_t w1s = cml_shape_make(CML_DTYPE_F32, 2, (int64_t[]){MLP_D, MLP_H});
  cml_shape_t w2s = cml_shape_make(CML_DTYPE_F32, 2, (int64_t[]){MLP_H, MLP_O});
  cml_value_t x = cml_parameter(f, "x", &xs), y = cml_parameter(f, "y", &ys);
  cml_value_t w1 = cml_parameter(f, "w1", &w1s), w2 = cml_parameter(f, "w2", &w2s);
  cml_value_t zero = cml_constant_scalar_f64(f, CML_DTYPE_F32, 0.0);
  cml_value_t pre = cml_op_dot(f, x, w1);
  cml_value_t h = cml_op_max(f, pre, zero);
  cml_value_t o = cml_op_dot(f, h, w2);
  const double scale = 2.0 / (double)MLP_B;  // mean over the global batch
  cml_value_t d_o =
      cml_op_mul(f, cml_op_sub(f, o, y), cml_constant_scalar_f64(f, CML_DTYPE_F32, scale));
  cml_value_t g2 = cml_op_dot(f, transpose2(f, h), d_o);
  cml_value_t d_h =
      cml_op_mul(f, cml_op_dot(f, d_o, transpose2(f, w2)),
                 cml_op_convert_dtype(f, cml_op_greater_than(f, pre, zero), CML_DTYPE_F32));
  cml_value_t g1 = cml_op_dot(f, transpose2(f, x), d_h);
  cml_value_t grads[2] = {g1, g2};
  if (devices > 1) {
    cml_value_t summed[2];
    cml_op_all_reduce(f, grads, 2, CML_REDUCE_SUM, NULL, summed);
    grads[0] = summed[0];
    grads[1] = summed[1];
  }
  cml_value_t lr = cml_constant_scalar_f64(f, CML_DTYPE_F32, 0.01);
  cml_value_t outs[2] = {cml_op_sub(f, w1, cml_op_mul(f, grads[0], lr)),
                         cml_op_sub(f, w2, cml_op_mul(f, grads[1], lr))};
  if (st == CML_OK) st = cml_function_return(f, outs, 2);
  if (st == CML_OK) st = cml_builder_compile(b, out);
  cml_builder_destroy(b);
  return st;
}

static float lcg(uint32_t* s) {
  *s = *s * 1664525u + 1013904223u;
  return (float)(*s >> 8) / (float)(1 << 24) - 0.5f;
}

// One configuration of the MLP step: its backend, executable and per-device inputs.
typedef struct mlp_side_t {
  const char* config;
  int devices;
  cml_backend_t* be;
  cml_executable_t* exe;
  cml_buffer_t* in[4 * 8];
  double* t;   // seconds per timed step
  double cpu;  // process CPU seconds over the timed steps
  float w2;    // the new w2[0] after the last step
} mlp_side_t;

static bool mlp_open(mlp_side_t* m, const char* config, int devices, int reps) {
  memset(m, 0, sizeof *m);
  m->config = config;
  m->devices = devices;
  m->t = calloc((size_t)reps, sizeof(double));
  if (!m->t || !check(cml_backend_new_with_config(config, &m->be), config)) return false;
  const int64_t batch = MLP_B / devices;
  if (!check(build_mlp(m->be, devices, batch, &m->exe), "compile mlp")) return false;
  uint32_t seed = 7;
  float* x = malloc(sizeof(float) * MLP_B * MLP_D);
  float* y = malloc(sizeof(float) * MLP_B * MLP_O);
  float* w1 = malloc(sizeof(float) * MLP_D * MLP_H);
  float* w2 = malloc(sizeof(float) * MLP_H * MLP_O);
  bool ok = x && y && w1 && w2;
  for (int i = 0; ok && i < MLP_B * MLP_D; ++i) x[i] = lcg(&seed);
  for (int i = 0; ok && i < MLP_B * MLP_O; ++i) y[i] = lcg(&seed);
  for (int i = 0; ok && i < MLP_D * MLP_H; ++i) w1[i] = 0.05f * lcg(&seed);
  for (int i = 0; ok && i < MLP_H * MLP_O; ++i) w2[i] = 0.05f * lcg(&seed);
  cml_shape_t xs = cml_shape_make(CML_DTYPE_F32, 2, (int64_t[]){batch, MLP_D});
  cml_shape_t ys = cml_shape_make(CML_DTYPE_F32, 2, (int64_t[]){batch, MLP_O});
  cml_shape_t w1s = cml_shape_make(CML_DTYPE_F32, 2, (int64_t[]){MLP_D, MLP_H});
  cml_shape_t w2s = cml_shape_make(CML_DTYPE_F32, 2, (int64_t[]){MLP_H, MLP_O});
  cml_buffer_t** in = m->in;
  for (int j = 0; ok && j < devices; ++j) {
    ok =
        check(cml_buffer_from_host(m->be, j, &xs, x + (size_t)j * batch * MLP_D,
                                   sizeof(float) * (size_t)(batch * MLP_D), &in[4 * j]),
              "x") &&
        check(cml_buffer_from_host(m->be, j, &ys, y + (size_t)j * batch * MLP_O,
                                   sizeof(float) * (size_t)(batch * MLP_O), &in[4 * j + 1]),
              "y") &&
        check(
            cml_buffer_from_host(m->be, j, &w1s, w1, sizeof(float) * MLP_D * MLP_H, &in[4 * j + 2]),
            "w1") &&
        check(
            cml_buffer_from_host(m->be, j, &w2s, w2, sizeof(float) * MLP_H * MLP_O, &in[4 * j + 3]),
            "w2");
  }
  free(x);
  free(y);
  free(w1);
  free(w2);
  return ok;
}

// One step on |m|; timed into step |r| when r >= 0; reads w2[0] back when |read_w|.
static bool mlp_step(mlp_side_t* m, int r, bool read_w) {
  cml_buffer_t* out[16] = {0};
  const double c0 = cpu_s(), t0 = now_s();
  bool ok =
      check(cml_executable_execute(m->exe, m->in, (size_t)(4 * m->devices), NULL, 0, out), "step");
  if (r >= 0) {
    m->t[r] = now_s() - t0;
    m->cpu += cpu_s() - c0;
  }
  if (ok && read_w) {
    float* w = malloc(sizeof(float) * MLP_H * MLP_O);
    ok = w && check(cml_buffer_copy_to_host(out[1], w, sizeof(float) * MLP_H * MLP_O), "copy");
    if (ok) m->w2 = w[0];
    free(w);
  }
  for (int k = 0; k < 2 * m->devices; ++k) cml_buffer_release(out[k]);
  return ok;
}

static void mlp_close(mlp_side_t* m) {
  for (int k = 0; k < 4 * m->devices; ++k) cml_buffer_release(m->in[k]);
  cml_executable_release(m->exe);
  cml_backend_release(m->be);
  free(m->t);
}

// --mlp-only CONFIG: |reps| steps on one configuration alone (1 device for "c:threads=T", else
// the devices= count), for a profiler (perf, callgrind) to see one side at a time.
static int bench_mlp_one(int reps, const char* config) {
  const char* d = strstr(config, "devices=");
  const int devices = d ? atoi(d + 8) : 1;
  if (devices < 1 || devices > 8 || MLP_B % devices) return 2;
  mlp_side_t m;
  bool ok = mlp_open(&m, config, devices, reps);
  for (int r = -2; ok && r < reps; ++r) ok = mlp_step(&m, r, r == reps - 1);
  if (ok) {
    printf("  %-44s %9.2f ms  (CPU %.1f ms)  w2[0] %.7g\n", config, median(m.t, reps) * 1e3,
           m.cpu / reps * 1e3, m.w2);
  }
  mlp_close(&m);
  return ok ? 0 : 1;
}

// Both configurations live in one process and alternate step by step (the order flipping each
// step), so that a change of the machine's speed (other tenants of a VM) hits both alike; the
// ratio is the median of the per-pair ratios, next to the ratio of the medians.
static int bench_mlp(int reps) {
  printf("Data-parallel MLP step (%dx%d -> %d ReLU -> %d, batch %d, SGD on both weights)\n", MLP_B,
         MLP_D, MLP_H, MLP_O, MLP_B);
  mlp_side_t one, two;
  memset(&one, 0, sizeof one);
  memset(&two, 0, sizeof two);
  const int steps = 4 * reps;
  bool ok =
      mlp_open(&one, "c:threads=2", 1, steps) && mlp_open(&two, "c:devices=2,threads=2", 2, steps);
  for (int r = -3; ok && r < steps; ++r) {
    mlp_side_t* first = (r & 1) ? &two : &one;
    mlp_side_t* second = (r & 1) ? &one : &two;
    ok = mlp_step(first, r, r == steps - 1) && mlp_step(second, r, r == steps - 1);
  }
  if (ok) {
    double* pair = calloc((size_t)steps, sizeof(double));
    for (int r = 0; pair && r < steps; ++r) pair[r] = one.t[r] / two.t[r];
    const double t1 = median(one.t, steps), t2 = median(two.t, steps);
    const double flops = 3.0 * 2.0 * MLP_B * ((double)MLP_D * MLP_H + (double)MLP_H * MLP_O);
    printf("  %-44s %9.2f ms %8.2f GFLOP/s  (CPU %.1f ms)\n", "one device, c:threads=2", t1 * 1e3,
           flops / t1 / 1e9, one.cpu / steps * 1e3);
    printf("  %-44s %9.2f ms %8.2f GFLOP/s  (CPU %.1f ms)\n",
           "2 devices (batch split, AllReduce), threads=2", t2 * 1e3, flops / t2 / 1e9,
           two.cpu / steps * 1e3);
    printf("  2 devices vs one: %.2fx (median of %d step pairs; ratio of the medians %.2fx)\n",
           pair ? median(pair, steps) : 0.0, steps, t1 / t2);
    printf("  w2[0] after the step: %.7g (one device) vs %.7g (2 devices)\n", one.w2, two.w2);
    free(pair);
  }
  mlp_close(&one);
  mlp_close(&two);
  return ok ? 0 : 1;
}

int main(int argc, char** argv) {
  int reps = 7, devices = 4, threads = 2;
  int64_t mib = 64;
  const char* mlp_only = NULL;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--reps") && i + 1 < argc) {
      reps = atoi(argv[++i]);
    } else if (!strcmp(argv[i], "--mib") && i + 1 < argc) {
      mib = atoll(argv[++i]);
    } else if (!strcmp(argv[i], "--devices") && i + 1 < argc) {
      devices = atoi(argv[++i]);
    } else if (!strcmp(argv[i], "--threads") && i + 1 < argc) {
      threads = atoi(argv[++i]);
    } else if (!strcmp(argv[i], "--mlp-only") && i + 1 < argc) {
      mlp_only = argv[++i];
    } else {
      fprintf(stderr,
              "usage: %s [--reps N] [--mib M] [--devices N] [--threads T] "
              "[--mlp-only CONFIG]\n",
              argv[0]);
      return 2;
    }
  }
  if (reps < 1 || mib < 1 || devices < 1 || devices > 64 || threads < 1 || threads > 64) return 2;
  char model[160];
  cml_cli_cpu_model(model, sizeof model);
  printf("CPU: %s, %ld online\n", model, sysconf(_SC_NPROCESSORS_ONLN));
  if (mlp_only) return bench_mlp_one(reps, mlp_only);
  if (bench_all_reduce(reps, mib, devices, threads)) return 1;
  return bench_mlp(reps);
}
