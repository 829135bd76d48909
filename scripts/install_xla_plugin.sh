#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# scripts/install_xla_plugin.sh: installs the XLA CPU PJRT plugin for CI and development, with
# the same pinned, sha256-checked wheel as `cml install cpu` (src/backends/xla/install/install.c).
# Usage: scripts/install_xla_plugin.sh [build-dir]   (uses <build-dir>/cml when it exists)
set -eu
build_dir="${1:-build}"
if [ -x "$build_dir/cml" ]; then
  exec "$build_dir/cml" install cpu
fi
# Without a built cml: the same steps by hand.
package=lammps-jax-pjrt-cpu
version=0.11.2
sha256=1319390d948b39f69f7dade496b7c385149d9ca6097a6b62114da113216d9ad1
member=lammps_jax_pjrt_cpu/pjrt_c_api_cpu_plugin.so
dest="$HOME/.local/lib/go-xla"
mkdir -p "$dest"
# The pid in the name tells `cml install` (which removes the directories of dead installers)
# that this one is alive.
tmp=$(mktemp -d "$dest/.cml-install-$$-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# A pip that hangs (no network, a stuck proxy) fails after CML_XLA_INSTALL_TIMEOUT_S seconds.
limit="${CML_XLA_INSTALL_TIMEOUT_S:-1200}"
run_limited() {
  if command -v timeout >/dev/null 2>&1; then timeout -s KILL "$limit" "$@"; else "$@"; fi
}
run_limited python3 -m pip download --no-deps --only-binary=:all: --disable-pip-version-check \
  -d "$tmp" "$package==$version"
wheel=$(ls "$tmp"/*.whl)
echo "$sha256  $wheel" | sha256sum -c -
run_limited python3 -c "import sys,zipfile,shutil
with zipfile.ZipFile(sys.argv[1]) as z, z.open(sys.argv[2]) as s, open(sys.argv[3],'wb') as o:
    shutil.copyfileobj(s,o,1<<20)" "$wheel" "$member" "$tmp/plugin.so"
chmod 755 "$tmp/plugin.so"
# The manifest cml writes, so that the backend checks the plugin's size and sha256 before loading
# it (and repairs it when damaged). Manifest first, as cml does.
so_size=$(wc -c < "$tmp/plugin.so" | tr -d ' ')
so_sha=$(sha256sum "$tmp/plugin.so" | cut -d' ' -f1)
printf 'package=%s\nversion=%s\nwheel_sha256=%s\nmember=%s\nsize=%s\nsha256=%s\n' \
  "$package" "$version" "$sha256" "$member" "$so_size" "$so_sha" > "$tmp/manifest"
mv "$tmp/manifest" "$dest/pjrt_c_api_cpu_plugin.so.manifest"
mv "$tmp/plugin.so" "$dest/pjrt_c_api_cpu_plugin.so"
echo "$dest/pjrt_c_api_cpu_plugin.so"
