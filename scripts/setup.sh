#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs what cml needs on a Debian/Ubuntu machine (build tools; python3 + pip for the XLA
# plugin installer). Safe to run again: it installs only what is missing.
# Extra tools can be named as arguments (each is a command and the Debian package of the same
# name), e.g. `scripts/setup.sh clang valgrind`, as the CI steps that need them do.
set -euo pipefail
need=()
command -v cc >/dev/null 2>&1 || need+=(build-essential)
command -v make >/dev/null 2>&1 || need+=(make)
command -v cmake >/dev/null 2>&1 || need+=(cmake)
command -v pkg-config >/dev/null 2>&1 || need+=(pkg-config)
command -v python3 >/dev/null 2>&1 || need+=(python3)
python3 -m pip --version >/dev/null 2>&1 || need+=(python3-pip)
# The sources of the de_DE locale, for the test that runs cml in a comma-decimal locale.
[ -e /usr/share/i18n/locales/de_DE ] || need+=(locales)
for tool in "$@"; do
  command -v "$tool" >/dev/null 2>&1 || need+=("$tool")
done
if [ ${#need[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" = 0 ] || SUDO="sudo"
  echo "setup: installing ${need[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}"
fi
if [ $# -eq 0 ]; then
  echo "setup: toolchain ready ($(cc --version | head -n1); $(cmake --version | head -n1))"
else
  echo "setup: ready: $*"
fi
