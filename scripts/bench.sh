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
# CML_BENCH_NO_BUILD=1 reuses the programs already built (repeated runs of one build).
if [[ -z "${CML_BENCH_NO_BUILD:-}" ]]; then
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release -DCML_BUILD_BENCH=ON -DCML_BUILD_TESTS=OFF \
    -DCML_BUILD_EXAMPLES=OFF >/dev/null
  cmake --build "$dir" -j"$jobs" --target cml_bench >/dev/null
fi
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
# CML_BENCH_RUNS=N repeats the whole set N times (interleaved programs); the final table then
# gives the median over the runs of each case's ratio, which is steadier on a shared machine.
runs="${CML_BENCH_RUNS:-1}"
for ((run = 1; run <= runs; ++run)); do
  for program in matmul elementwise reduce ops nn zoo overhead; do
    echo
    echo "######## bench_$program (run $run of $runs)"
    "$dir/bench/bench_$program" --results "$results" "$@"
  done
done
echo
echo "######## all cases: c vs xla:cpu = time_xla / time_c (< 1: c is slower), biggest gaps first"
echo "# median over $runs run(s) [per-run ratios]; c and xla:cpu: median times; c/native: OpenBLAS"
awk -F'\t' '
  function median(list,   n, v, i, j, t) {
    n = split(list, v, " ")
    for (i = 2; i <= n; ++i) { t = v[i] + 0; for (j = i - 1; j >= 1 && v[j] + 0 > t; --j) v[j + 1] = v[j]; v[j + 1] = t }
    return n == 0 ? 0 : (n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2)
  }
  function t(s) { return s <= 0 ? "-" : s < 1e-3 ? sprintf("%.2f us", s * 1e6) : sprintf("%.3f ms", s * 1e3) }
  {
    if (!($1 in seen)) { seen[$1] = 1; order[++count] = $1 }
    if ($2 > 0) ct[$1] = ct[$1] " " $2
    if ($3 > 0) xt[$1] = xt[$1] " " $3
    if ($2 > 0 && $3 > 0) { xr[$1] = xr[$1] " " $3 / $2; shown[$1] = shown[$1] sprintf(" %.2f", $3 / $2) }
    if ($2 > 0 && $6 > 0) nr[$1] = nr[$1] " " $6 / $2
  }
  END {
    for (i = 1; i <= count; ++i) {
      k = order[i]
      r = xr[k] == "" ? 1e9 : median(xr[k])
      printf "%.6f\t%s\t%s\t%s\t%s\t%s\n", r, k, substr(shown[k], 2), t(median(ct[k])),
             t(median(xt[k])), nr[k] == "" ? "-" : sprintf("%.2fx", median(nr[k]))
    }
  }' "$results" | sort -t$'\t' -k1,1g | awk -F'\t' '
  { printf "  %8s  %-64s [%s]  c %s  xla:cpu %s  c/native %s\n",
           ($1 >= 1e9 ? "no xla" : sprintf("%.2fx", $1)), $2, $3, $4, $5, $6 }'
echo
echo "# load average at end: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')"
