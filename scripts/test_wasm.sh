#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Tests cml's WebAssembly build (docs/wasm.md): builds it with scripts/build_wasm.sh, then
#   1. the compliance suite (`cml test`) in Node's node:wasi, on the scalar and SIMD128 builds,
#      plus c:reference=true and the fused ops' decomposition (c:fusion=false) on the scalar one;
#      each run must end with "N passed, 0 failed, M skipped";
#   2. examples/mlp and web/mlp_bench.c as WASI commands (results checked by the programs);
#   3. the web module through web/cml.js in Node, then web/index.html in headless Chromium
#      (served by python3 -m http.server on 127.0.0.1): the dumped page must show the MLP's
#      numbers and "ok".
#
#   scripts/test_wasm.sh [BUILD_DIR]     (default build-wasm)
# CML_WASM_SKIP_BROWSER=1 leaves out step 3's Chromium part. Exits non-zero on any failure;
# prints "SKIPPED: ..." (exit 0) when the toolchain cannot be installed.
set -uo pipefail
cd "$(dirname "$0")/.."
root="$(pwd)"
out="${1:-build-wasm}"
case "$out" in /*) ;; *) out="$root/$out" ;; esac

build_log="$(mktemp)"
tmp="$(mktemp -d)"
server_pid=""
cleanup() {
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null
  rm -rf "$tmp" "$build_log"
}
trap cleanup EXIT

failed=0
fail() {
  echo "FAIL: $*"
  failed=1
}

apt_install() {  # PACKAGE...: installs with apt-get (as root, or with sudo); false if it cannot
  local SUDO=""
  [ "$(id -u)" = 0 ] || SUDO="sudo"
  command -v apt-get >/dev/null 2>&1 || return 1
  echo "test_wasm: installing $*"
  $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "$@"
}

if ! scripts/build_wasm.sh "$out" >"$build_log" 2>&1; then
  cat "$build_log"
  echo "FAIL: scripts/build_wasm.sh"
  exit 1
fi
if grep -q "^SKIPPED: " "$build_log"; then
  grep "^SKIPPED: " "$build_log"
  exit 0
fi
grep -A20 "^== sizes" "$build_log"

if ! node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 20 ? 0 : 1)' \
    2>/dev/null; then
  apt_install nodejs || true
  if ! node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 20 ? 0 : 1)' \
      2>/dev/null; then
    # The wasm build itself succeeded above; only the runner is missing on this machine.
    echo "SKIPPED: running the wasm build needs Node.js 20 or newer (node:wasi preview1); found $(node --version 2>&1)"
    exit 0
  fi
fi
wasi_run() { node --no-warnings "$root/scripts/wasi_run.mjs" "$@"; }

#===--- 1. compliance suite ---===#
# compliance NAME WASM ARGS...: the run must exit 0 and end with "N passed, 0 failed, M skipped"
# where N > 0.
compliance() {
  local name="$1" wasm="$2" log="$tmp/compliance.log" start=$SECONDS
  shift 2
  wasi_run "$wasm" test "$@" >"$log" 2>&1
  local rc=$? last
  last="$(tail -n1 "$log")"
  echo "  $name: $last ($((SECONDS - start))s)"
  if [ $rc -ne 0 ] || ! [[ "$last" =~ ^([1-9][0-9]*)\ passed,\ 0\ failed,\ [0-9]+\ skipped$ ]]; then
    grep -E "^(FAIL|  )" "$log" | head -40
    fail "compliance $name (exit $rc)"
  fi
}
echo "== compliance suite in node:wasi"
compliance "scalar c" "$out/scalar/cml.wasm" --backend c
compliance "scalar c:reference=true" "$out/scalar/cml.wasm" --backend c:reference=true
compliance "scalar c:fusion=false fused" "$out/scalar/cml.wasm" --backend c:fusion=false --op fused
if [ -f "$out/simd128/cml.wasm" ]; then
  compliance "simd128 c" "$out/simd128/cml.wasm" --backend c
fi

#===--- 2. examples ---===#
echo "== examples in node:wasi"
for variant in scalar simd128; do
  [ -f "$out/$variant/example_mlp.wasm" ] || continue
  if wasi_run "$out/$variant/example_mlp.wasm" >"$tmp/mlp.log" 2>&1 &&
     grep -q "^ok: results match" "$tmp/mlp.log"; then
    echo "  $variant examples/mlp: $(tail -n1 "$tmp/mlp.log")"
  else
    cat "$tmp/mlp.log"
    fail "$variant examples/mlp"
  fi
  if wasi_run "$out/$variant/mlp_bench.wasm" >"$tmp/bench.log" 2>&1; then
    echo "  $variant web/mlp_bench: $(tail -n1 "$tmp/bench.log")"
  else
    cat "$tmp/bench.log"
    fail "$variant web/mlp_bench"
  fi
  # Limits that must be statuses, not traps (tests/wasm/limits.c).
  if wasi_run "$out/$variant/wasm_limits.wasm" >"$tmp/limits.log" 2>&1 &&
     grep -q "^ok: " "$tmp/limits.log"; then
    echo "  $variant tests/wasm/limits: $(tail -n1 "$tmp/limits.log")"
  else
    cat "$tmp/limits.log"
    fail "$variant tests/wasm/limits"
  fi
done

#===--- 3. the web module ---===#
echo "== web module"
# The values examples/mlp's model gives (hand-computed; examples/mlp checks them in plain C).
want_rows=(
  "<td>[1.775000, 2.800000]</td><td>4.575000</td>"
  "<td>[4.562500, -1.493750]</td><td>3.068750</td>"
  "<td>[-0.781250, 2.528125]</td><td>1.746875</td>"
  "<td>[0.500000, -0.250000]</td><td>0.250000</td>"
)
cat >"$tmp/loader.mjs" <<'JS'
import { readFile } from 'node:fs/promises';
const [cmlJs, wasm] = process.argv.slice(2);
const { loadCml } = await import(cmlJs);
const cml = await loadCml(await readFile(wasm));
const { y, s } = cml.mlp(new Float32Array([1, -2, 0.5, 0, 1.5, -1]), 2);
const want = { y: [1.775, 2.8, 4.5625, -1.49375], s: [4.575, 3.06875] };
const bad = [...want.y.map((v, i) => Math.abs(y[i] - v) > 1e-5),
             ...want.s.map((v, i) => Math.abs(s[i] - v) > 1e-5)].some(Boolean);
// Bad calls throw with a message (a short x used leftover wasm memory as rows, and a bench
// whose sizes overflow 32 bits wrote past a malloc(0)).
const errors = [];
for (const [call, want] of [
  [() => cml.mlp(new Float32Array(3), 0), 'batch must be'],
  [() => cml.mlp(new Float32Array(6), 1.7), 'batch must be'],
  [() => cml.mlp(new Float32Array([1]), 4), 'at least 12 values'],
  [() => cml.bench(32768, 65536, 1, 1, 1), 'too large for wasm memory'],
]) {
  try { call(); errors.push(`no error (want "${want}")`); } catch (e) {
    if (!e.message.includes(want)) errors.push(`"${e.message}" (want "${want}")`);
  }
}
console.log(`node: ${cml.backend()}: y = [${Array.from(y)}], s = [${Array.from(s)}]`);
if (bad || errors.length) {
  console.log(`FAIL: wrong results, or bad calls: ${errors.join('; ')}`);
  process.exit(1);
}
JS
for module in "$out"/web/*.wasm; do
  if node "$tmp/loader.mjs" "$out/web/cml.js" "$module" >"$tmp/loader.log" 2>&1; then
    echo "  ${module##*/} $(cat "$tmp/loader.log")"
  else
    cat "$tmp/loader.log"
    fail "web/cml.js + ${module##*/} in node"
  fi
done

if [ "${CML_WASM_SKIP_BROWSER:-0}" = 1 ]; then
  echo "  chromium: left out (CML_WASM_SKIP_BROWSER=1)"
else
  chrome="$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)"
  if [ -z "$chrome" ]; then
    apt_install chromium >/dev/null || true
    chrome="$(command -v chromium || true)"
  fi
  if [ -z "$chrome" ]; then
    echo "  chromium: SKIPPED: not installed and apt-get could not install it (the Node checks of web/cml.js above still ran)"
  else
    port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
    python3 -m http.server "$port" --bind 127.0.0.1 --directory "$out/web" >"$tmp/http.log" 2>&1 &
    server_pid=$!
    for _ in $(seq 50); do
      python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$port/index.html')" \
        2>/dev/null && break
      sleep 0.1
    done
    root_flags=()
    [ "$(id -u)" = 0 ] && root_flags+=(--no-sandbox)
    timeout 120 "$chrome" --headless "${root_flags[@]}" --disable-gpu --disable-quic \
      --no-first-run --disable-background-networking --disable-component-update --disable-sync \
      --user-data-dir="$tmp/chrome" --virtual-time-budget=10000 \
      --dump-dom "http://127.0.0.1:$port/index.html" >"$tmp/dom.html" 2>"$tmp/chrome.log"
    rc=$?
    ok=1
    [ $rc -eq 0 ] || ok=0
    grep -q '<p id="status" class="ok">ok: all 12 values match' "$tmp/dom.html" || ok=0
    for row in "${want_rows[@]}"; do
      grep -qF "$row" "$tmp/dom.html" || ok=0
    done
    if [ $ok = 1 ]; then
      echo "  chromium: $(sed -n 's/.*<p id="status" class="ok">\([^<]*\)<.*/\1/p' "$tmp/dom.html")"
      echo "  chromium: backend $(sed -n 's/.*<span id="backend">\([^<]*\)<.*/\1/p' "$tmp/dom.html")"
      echo "  chromium: module $(sed -n 's/.*<span id="module">\([^<]*\)<.*/\1/p' "$tmp/dom.html")"
    else
      echo "  chromium exit $rc; page:"
      sed -n '/<body>/,/<\/body>/p' "$tmp/dom.html" | grep -v "^  *[a-z].*{" | head -30
      tail -5 "$tmp/chrome.log"
      fail "web/index.html in chromium"
    fi
    kill "$server_pid" 2>/dev/null
    wait "$server_pid" 2>/dev/null
    server_pid=""
  fi
fi

if [ $failed -ne 0 ]; then
  echo "test_wasm: FAILED"
  exit 1
fi
echo "test_wasm: all passed"
