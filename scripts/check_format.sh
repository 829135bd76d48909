#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Fails when a C source or header differs from .clang-format (Google base, 100 columns).
# `scripts/check_format.sh --fix` rewrites the files instead.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v clang-format >/dev/null 2>&1 || scripts/setup.sh clang-format
mapfile -t files < <(git ls-files '*.c' '*.h')
if [ "${1:-}" = "--fix" ]; then
  clang-format -i "${files[@]}"
  exit 0
fi
clang-format --dry-run --Werror "${files[@]}"
echo "format: ${#files[@]} files match .clang-format"
