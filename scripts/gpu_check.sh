#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# scripts/gpu_check.sh: one short check of the XLA backend on an NVIDIA GPU (not part of CI):
# the compliance suite on xla:cuda and a bf16 matmul benchmark, with the CUDA PJRT plugin that
# pip installed in the Python environment (jax[cuda13] or jax-cuda13-pjrt + jax-cuda13-plugin).
# Usage: scripts/gpu_check.sh [build-dir] [case-regex]
# The suite runs with tf32=false: the CUDA default (tf32=true, as the seed says) rounds Float32
# dot operands to TF32 (about 1e-3 relative), outside the suite's Float32 tolerances.
set -eu
build_dir="${1:-build}"
cases="${2:-}"
if ! ls /dev/nvidia* >/dev/null 2>&1 && ! nvidia-smi >/dev/null 2>&1; then
  echo "gpu_check: no NVIDIA GPU here: nothing to check" >&2
  exit 77
fi
plugin=$(python3 - <<'PY'
import glob, site
for d in site.getsitepackages() + [site.getusersitepackages()]:
    hits = sorted(glob.glob(d + "/jax_plugins/xla_cuda*/xla_cuda_plugin.so"), reverse=True)
    if hits:
        print(hits[0]); break
PY
)
if [ -z "$plugin" ]; then
  echo "gpu_check: no pip-installed CUDA plugin (pip install 'jax[cuda13]')" >&2
  exit 77
fi
echo "gpu_check: plugin $plugin"
export GOMLX_NO_AUTO_INSTALL=1
"$build_dir/cml" info --backend "xla:$plugin"
# The compliance suite on the GPU (cases the emitter cannot lower yet report UNSUPPORTED).
timeout 500 "$build_dir/cml" test --backend "xla:$plugin,tf32=false" ${cases:+--op "$cases"} ||
  status=$?
# bf16 matmul benchmark: 4096x4096 @ 4096x4096, through the public API.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/bench.c" <<'C'
#include <cml/cml.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
int main(int argc, char** argv) {
  const int64_t n = 4096;
  cml_backend_t* be = NULL; cml_builder_t* b = NULL; cml_executable_t* exe = NULL;
  cml_status_t st = cml_backend_new_with_config(argv[1], &be);
  cml_shape_t s = cml_shape_make(CML_DTYPE_BF16, 2, (int64_t[]){n, n});
  if (st == CML_OK) st = cml_builder_create(be, "bench", &b);
  if (st == CML_OK) {
    cml_function_t* f = cml_builder_main(b);
    cml_value_t y[2];
    y[0] = cml_op_dot(f, cml_parameter(f, "a", &s), cml_parameter(f, "b", &s));
    /* A scalar that needs all of y: copying it back waits for the product without timing a
       32 MiB transfer. */
    y[1] = cml_op_reduce_sum(f, y[0], (int64_t[]){0, 1}, 2);
    st = cml_function_return(f, y, 2);
    if (st == CML_OK) st = cml_builder_compile(b, &exe);
  }
  uint16_t* host = malloc(n * n * 2);
  for (int64_t i = 0; i < n * n; ++i) host[i] = cml_f32_to_bf16((float)(i % 7) * 0.125f);
  cml_buffer_t *a = NULL, *out[2] = {NULL, NULL};
  if (st == CML_OK) st = cml_buffer_from_host(be, 0, &s, host, n * n * 2, &a);
  double best = 1e9;
  for (int it = 0; it < 10 && st == CML_OK; ++it) {
    double t0 = now();
    st = cml_executable_execute(exe, (cml_buffer_t*[]){a, a}, 2, NULL, 0, out);
    if (st == CML_OK) st = cml_buffer_copy_to_host(out[1], host, 2);  /* waits */
    double t = now() - t0;
    if (t < best) best = t;
    for (int k = 0; k < 2; ++k)
      if (out[k]) cml_buffer_release(out[k]);
  }
  if (st != CML_OK) { fprintf(stderr, "bench: %s\n", cml_status_message(st)); return 1; }
  printf("bf16 matmul %lldx%lld: best %.3f ms, %.1f TFLOP/s\n", (long long)n, (long long)n,
         best * 1e3, 2.0 * n * n * n / best / 1e12);
  return 0;
}
C
cc -O2 -I include -o "$tmp/bench" "$tmp/bench.c" -L "$build_dir" -lcml -Wl,-rpath,"$PWD/$build_dir"
timeout 120 "$tmp/bench" "xla:$plugin" || status=$?
exit "${status:-0}"
