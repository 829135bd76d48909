#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# scripts/gpu_check.sh: one short check of the XLA backend on an NVIDIA GPU (not part of CI):
# the compliance suite on xla:cuda and a bf16 matmul benchmark, with the CUDA PJRT plugin that
# pip installed in the Python environment (jax[cuda13] or jax-cuda13-pjrt + jax-cuda13-plugin).
# Usage: scripts/gpu_check.sh [build-dir]
set -eu
build_dir="${1:-build}"
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
timeout 500 "$build_dir/cml" test --backend "xla:$plugin" || status=$?
# bf16 matmul benchmark (cml bench when it is built).
if "$build_dir/cml" bench --help >/dev/null 2>&1; then
  timeout 120 "$build_dir/cml" bench --backend "xla:$plugin" -o DotGeneral --dtype bf16 || true
fi
exit "${status:-0}"
