#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Configures and builds cml into build/ (or the directory given as $1, with extra cmake args).
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${1:-build}"
shift || true
jobs="$(nproc 2>/dev/null || echo 2)"
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
cmake --build "$dir" -j"$jobs"
