// SPDX-License-Identifier: Apache-2.0
// scripts/wasi_run.mjs: runs a wasm32-wasi command module in Node's node:wasi.
//
//   node scripts/wasi_run.mjs program.wasm [args...]
//
// The program sees its arguments, the GOMLX_* / CML_* environment variables, and no files.
// Exits with the program's exit status.
//
// NOTE: V8 runs in --single-threaded mode (this script starts itself again with the flag when
// it is missing). With V8's background compile threads, Node 20.20 died with SIGSEGV in a
// quarter to two thirds of the runs of the whole compliance suite (cml.wasm, 2 MB), after the
// program's last output; 0 of 40 runs crashed with --single-threaded.
import { spawnSync } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { argv, env, execArgv, execPath, exit } from 'node:process';
import { fileURLToPath } from 'node:url';
import { WASI } from 'node:wasi';

if (argv.length < 3) {
  console.error('usage: node wasi_run.mjs program.wasm [args...]');
  exit(2);
}
if (!execArgv.includes('--single-threaded')) {
  const child = spawnSync(
      execPath, ['--single-threaded', '--no-warnings', ...execArgv, fileURLToPath(import.meta.url),
                 ...argv.slice(2)],
      { stdio: 'inherit' });
  if (child.error) {
    console.error(`wasi_run: cannot start node: ${child.error.message}`);
    exit(2);
  }
  exit(child.status === null ? 128 + 11 : child.status);
}

const path = argv[2];
const programEnv = {};
for (const [key, value] of Object.entries(env)) {
  if (key.startsWith('GOMLX_') || key.startsWith('CML_')) programEnv[key] = value;
}
const wasi = new WASI({
  version: 'preview1',
  args: [path.split('/').pop(), ...argv.slice(3)],
  env: programEnv,
  returnOnExit: true,
});
const module = await WebAssembly.compile(await readFile(path));
const instance = await WebAssembly.instantiate(module, wasi.getImportObject());
exit(wasi.start(instance));
