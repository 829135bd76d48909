// SPDX-License-Identifier: Apache-2.0
// scripts/wasi_run.mjs: runs a wasm32-wasi command module in Node's node:wasi.
//
//   node scripts/wasi_run.mjs program.wasm [args...]
//
// The program sees its arguments, the GOMLX_* / CML_* environment variables, and no files.
// Exits with the program's exit status.
import { readFile } from 'node:fs/promises';
import { argv, env, exit } from 'node:process';
import { WASI } from 'node:wasi';

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
// NOTE: the exit status is set and Node exits on its own. process.exit() here made Node 20.20
// die with SIGSEGV in about half of the compliance suite's runs: V8 was still compiling the
// module's functions with TurboFan on background threads when the process was torn down.
process.exitCode = wasi.start(instance);
