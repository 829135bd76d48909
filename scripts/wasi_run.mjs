// SPDX-License-Identifier: Apache-2.0
// scripts/wasi_run.mjs: runs a wasm32-wasi command module in Node's node:wasi.
//
//   node scripts/wasi_run.mjs program.wasm [args...]
//
// The program sees its arguments, the GOMLX_* / CML_* environment variables, and no files.
// Exits with the program's exit status.
import { readFile } from 'node:fs/promises';
import { argv, env, exit } from 'node:process';
import { setFlagsFromString } from 'node:v8';
import { WASI } from 'node:wasi';

// NOTE: with V8's dynamic tiering (Liftoff first, TurboFan in the background for hot
// functions), Node 20.20's process crashes with SIGSEGV in about half of the runs of the whole
// compliance suite (the main thread faults while a background thread is compiling; never under
// --single-threaded). Compiling every function up front avoids it; it must be set before the
// module is compiled.
setFlagsFromString('--no-wasm-dynamic-tiering');

if (argv.length < 3) {
  console.error('usage: node wasi_run.mjs program.wasm [args...]');
  exit(2);
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
