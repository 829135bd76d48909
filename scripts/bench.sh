#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the side-by-side benchmarks (Release, into build-bench/ or $CML_BENCH_BUILD_DIR) and
# runs them all: c vs c:reference=true vs xla:cpu (and OpenBLAS for matmul when installed).
# Arguments go to every program: --long, --filter TEXT, -b CONFIG (repeatable), --threads N,
# --reps N, --no-native. A default run takes about a minute; --long several.
# Benchmarks never gate anything: the script fails only when the build fails.
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${CML_BENCH_BUILD_DIR:-build-bench}"
jobs="${JOBS:-2}"
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release -DCML_BUILD_BENCH=ON -DCML_BUILD_TESTS=OFF \
  -DCML_BUILD_EXAMPLES=OFF >/dev/null
cmake --build "$dir" -j"$jobs" --target cml_bench >/dev/null
# OPENBLAS_CORETYPE=Haswell (set on some build machines) halves OpenBLAS on AVX-512 CPUs:
# let OpenBLAS detect the CPU, as a user's installation would.
unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE

cpu="$(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | sed 's/^ *//')"
isa="$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null | grep -o -w -E 'avx512f|avx512_bf16|avx2' \
  | sort -u | tr '\n' ' ')"
echo "# date: $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "# machine: ${cpu:-unknown CPU}, $(nproc) CPU(s), ISA: ${isa:-?}"
echo "# load average at start: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')"
echo "# ratios are time_xla / time_contender ('vs xla:cpu': > 1 means faster than xla:cpu)"
# CML_BENCH_RESULTS=file keeps the per-case medians (tab-separated, appended) for later analysis.
if [[ -n "${CML_BENCH_RESULTS:-}" ]]; then
  results="$CML_BENCH_RESULTS"
else
  results="$(mktemp)"
  trap 'rm -f "$results"' EXIT
fi
for program in matmul elementwise reduce nn overhead; do
  echo
  echo "######## bench_$program"
  "$dir/bench/bench_$program" --results "$results" "$@"
done
echo
echo "######## all cases: c vs xla:cpu (time_xla / time_c; < 1 means c is slower), biggest gaps first"
awk -F'\t' '$2 > 0 && $3 > 0 { printf "%.3f\t%s\t%.9g\t%.9g\n", $3 / $2, $1, $2, $3 }' \
  "$results" | sort -t$'\t' -k1,1g | awk -F'\t' '
  function t(s) { return s < 1e-3 ? sprintf("%8.2f us", s * 1e6) : sprintf("%8.3f ms", s * 1e3) }
  { printf "  %6.2fx  %-64s c %s  xla:cpu %s\n", $1, $2, t($3), t($4) }'
awk -F'\t' '$2 > 0 && $3 == 0 { printf "  (no xla:cpu figure) %s\n", $1 }' "$results"
echo
echo "# load average at end: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')"
