#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# New machine, main job: install what is needed, build, then show the backends (`cml info`) and
# build, compile and run a small model on the default backend (examples/mlp).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh build
build/cml info
build/example_mlp
