#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs the build in $1 (default build/) into a fresh temporary prefix and checks, with NO
# LD_LIBRARY_PATH anywhere (installed binaries find their libraries through an $ORIGIN RPATH):
#   1. the installed `cml info` and `cml test --backend c` run;
#   2. programs build against the installed headers and run: with pkg-config, with
#      find_package(cml), and out of tree from copies of the sources: the examples, the null
#      backend template and the "ref" example as shared-library plug-ins, loaded by a host
#      program with cml_plugin_load (tests/install/);
#   3. the installed tree still works after being moved elsewhere;
#   4. the build tree's own binaries still run;
#   5. the license is installed, and the `uninstall` target removes every installed file and
#      cml's own directories.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
build="${1:-build}"
case "$build" in /*) ;; *) build="$root/$build" ;; esac
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
prefix="$work/prefix"
fail() { echo "install test: $*" >&2; exit 1; }
# Runs a command with LD_LIBRARY_PATH unset; names it when it fails.
run() { env -u LD_LIBRARY_PATH "$@" >"$work/run.log" 2>&1 || { cat "$work/run.log" >&2; fail "failed: $*"; }; }
cc="${CC:-cc}"

cmake --install "$build" --prefix "$prefix" >/dev/null
pc="$(find "$prefix" -name cml.pc | head -n1)"
[ -n "$pc" ] || fail "no cml.pc installed"
libdir="$(cd "$(dirname "$pc")/.." && pwd)"
test -x "$prefix/bin/cml" || fail "no bin/cml installed"

# 1. The installed tool, from a directory unrelated to the prefix.
(cd "$work" && run "$prefix/bin/cml" info)
(cd "$work" && run "$prefix/bin/cml" test --backend c)
grep -q " 0 failed" "$work/run.log" || fail "installed cml test --backend c: $(tail -n1 "$work/run.log")"
# ... and with an empty environment (no HOME, no GOMLX_* or PJRT_* variables, a minimal PATH).
(cd "$work" && run env -i PATH=/usr/bin:/bin "$prefix/bin/cml" test --backend c --op "Add|DotGeneral|While")
grep -q " 0 failed" "$work/run.log" || fail "cml test in an empty environment: $(tail -n1 "$work/run.log")"
# Without HOME the xla backend cannot find its plugin: a status naming the cause, not a crash.
if "$prefix/bin/cml" info | grep -q "^  xla"; then
  rc=0
  (cd "$work" && env -i PATH=/usr/bin:/bin "$prefix/bin/cml" info --backend xla:cpu >"$work/run.log" 2>&1) || rc=$?
  [ "$rc" -eq 2 ] && grep -q "HOME is not set" "$work/run.log" ||
    { cat "$work/run.log" >&2; fail "cml info --backend xla:cpu without HOME: exit $rc"; }
fi

# 2a. pkg-config. cml.pc finds its prefix relative to itself (${pcfiledir}), so this install in
# a temporary prefix, different from the configure-time one, must work as it is. The consumer
# chooses how to find the library at run time: here an RPATH to the libdir.
export PKG_CONFIG_PATH="$libdir/pkgconfig"
pc_flags="$(pkg-config --cflags --libs cml)"
case "$pc_flags" in *"$prefix"*|*pcfiledir*|*"/../"*) ;; *) fail "unexpected pkg-config flags: $pc_flags";; esac
"$cc" -std=c11 -Wall -Wextra -Werror -o "$work/consumer_pc" tests/install/consumer.c $pc_flags -lm \
  -Wl,-rpath,"$libdir"
run "$work/consumer_pc"
# The compliance suite's library, as a third-party backend's author links it (it requires cml).
bt_flags="$(pkg-config --cflags --libs cml_backendtest)"
case "$bt_flags" in *-lcml_backendtest*-lcml*) ;; *) fail "unexpected cml_backendtest flags: $bt_flags";; esac
"$cc" -std=c11 -Wall -Wextra -Werror -o "$work/suite_consumer" tests/install/suite_consumer.c \
  $bt_flags -Wl,-rpath,"$libdir"
run "$work/suite_consumer"

# 2b. find_package(cml) (CMake gives imported libraries a build RPATH itself).
cmake -S tests/install/cmake_consumer -B "$work/cmake_build" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/cmake_build" >/dev/null
run "$work/cmake_build/consumer"

# 2c. Out of tree, from copies: nothing of the source tree is on the include path.
src="$work/src"
mkdir -p "$src"
cp tests/install/out_of_tree/CMakeLists.txt tests/install/plugin_host.c \
   examples/plugin_backend/ref_backend.c src/backends/null/null.c "$src/"
for ex in mlp topk while_solver; do cp "examples/$ex/main.c" "$src/$ex.c"; done
# The null template, built the way its header comment says (renamed: the built-in "null" exists).
"$cc" -std=c11 -Wall -Wextra -Wno-unused-parameter -Werror -shared -fPIC -DCML_NULL_NAME='"null_copy"' \
  -o "$src/libcml_null_copy.so" "$src/null.c" $pc_flags
nm -D --defined-only "$src/libcml_null_copy.so" | grep -q " cml_plugin_query$" \
  || fail "the null template plug-in does not export cml_plugin_query"
cmake -S "$src" -B "$work/oot_build" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/oot_build" >/dev/null
for ex in mlp topk while_solver; do GOMLX_BACKEND=c run "$work/oot_build/example_$ex"; done
run "$work/oot_build/plugin_host" "$src/libcml_null_copy.so" null_copy \
  "$work/oot_build/libcml_ref_backend.so"

# 3. Move the installed tree: its binaries must not remember the old prefix.
moved="$work/elsewhere/cml"
mkdir -p "$(dirname "$moved")"
mv "$prefix" "$moved"
(cd "$work" && run "$moved/bin/cml" info)
(cd "$work" && run "$moved/bin/cml" test --backend c --op "Add|DotGeneral|ReduceSum")
grep -q " 0 failed" "$work/run.log" || fail "moved cml test: $(tail -n1 "$work/run.log")"
moved_libdir="$moved/${libdir#"$prefix"/}"
"$cc" -std=c11 -o "$work/consumer_moved" tests/install/consumer.c -I"$moved/include" \
  -L"$moved_libdir" -lcml -lm -Wl,-rpath,"$moved_libdir"
run "$work/consumer_moved"

# 4. The build tree's binaries (build RPATH).
run "$build/cml" info
for ex in "$build"/example_*; do
  [ -x "$ex" ] || continue
  case "$ex" in
    *data_parallel) GOMLX_BACKEND=c:devices=4 run "$ex" ;;  # needs 4 devices (exit 77 with 1)
    *) GOMLX_BACKEND=c run "$ex" ;;
  esac
done
# 5. The license, then `uninstall` (it reads the manifest of the last install: this one).
prefix2="$work/prefix2"
cmake --install "$build" --prefix "$prefix2" >/dev/null
test -f "$prefix2/share/doc/cml/LICENSE" || fail "no share/doc/cml/LICENSE installed"
cmake --build "$build" --target uninstall >"$work/run.log" 2>&1 ||
  { cat "$work/run.log" >&2; fail "the uninstall target failed"; }
left="$(find "$prefix2" ! -type d)"
[ -z "$left" ] || fail "files left after uninstall: $left"
for dir in include/cml share/doc/cml; do
  [ ! -e "$prefix2/$dir" ] || fail "$dir left after uninstall"
done
[ -z "$(find "$prefix2" -type d -path '*/cmake/cml')" ] || fail "<libdir>/cmake/cml left after uninstall"
echo "install test: installed and moved cml, pkg-config, find_package, out-of-tree examples and plug-ins, build tree, uninstall ok"
