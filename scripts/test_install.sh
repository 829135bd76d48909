#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs the build in $1 (default build/) into a temporary prefix and builds a program against
# the installed headers twice: with pkg-config and with find_package(cml). Both must run.
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
prefix="$(mktemp -d)"
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
libdir="$prefix/lib"
[ -d "$prefix/lib64" ] && libdir="$prefix/lib64"
[ -d "$libdir/pkgconfig" ] || libdir="$(dirname "$(find "$prefix" -name cml.pc | head -n1)")/.."
export PKG_CONFIG_PATH="$libdir/pkgconfig"
# cml.pc finds its prefix relative to itself (${pcfiledir}), so this install in a temporary
# prefix, different from the configure-time one, must work as it is.
pc_flags="$(pkg-config --cflags --libs cml)"
case "$pc_flags" in *"$prefix"*|*pcfiledir*|*"/../"*) ;; *) echo "install test: unexpected pkg-config flags: $pc_flags"; exit 1;; esac
cc -std=c11 -Wall -Wextra -o "$prefix/consumer_pc" tests/install/consumer.c $pc_flags -lm
LD_LIBRARY_PATH="$libdir" "$prefix/consumer_pc"
cmake -S tests/install/cmake_consumer -B "$prefix/cmake_build" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$prefix/cmake_build" >/dev/null
LD_LIBRARY_PATH="$libdir" "$prefix/cmake_build/consumer"
test -x "$prefix/bin/cml"
LD_LIBRARY_PATH="$libdir" "$prefix/bin/cml" info >/dev/null
echo "install test: pkg-config and find_package consumers ok"
