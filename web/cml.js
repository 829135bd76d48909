// SPDX-License-Identifier: Apache-2.0
// web/cml.js: loads the cml WebAssembly module (cml_web.wasm, a WASI reactor built by
// scripts/build_wasm.sh) in a browser or in Node, and wraps its C entry points (web/cml_web.h).
//
//   import { loadCml, simd128Supported } from './cml.js';
//   const cml = await loadCml(simd128Supported() ? 'cml_web_simd128.wasm' : 'cml_web.wasm');
//   const { y, s } = cml.mlp(new Float32Array([1, -2, 0.5]), 1);
//   console.log(cml.backend(), y, s);
//
// The module needs only a handful of WASI calls (clock, stdout/stderr, an empty environment);
// they are implemented here, so no WASI library is needed. Anything else returns ENOSYS.

const WASI_ESUCCESS = 0;
const WASI_EBADF = 8;
const WASI_ENOSYS = 52;
const WASI_ESPIPE = 70;

// A module with one function, `i32.const 0; i8x16.splat`: it validates only where the engine
// has WebAssembly SIMD128.
const SIMD128_PROBE = new Uint8Array([
  0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,  // magic, version 1
  0x01, 0x05, 0x01, 0x60, 0x00, 0x01, 0x7b,        // type section: () -> v128
  0x03, 0x02, 0x01, 0x00,                          // function section: one function of type 0
  0x0a, 0x08, 0x01, 0x06, 0x00,                    // code section: one body, no locals
  0x41, 0x00, 0xfd, 0x0f, 0x0b,                    // i32.const 0; i8x16.splat; end
]);

/** Whether this engine runs WebAssembly SIMD128 (then cml_web_simd128.wasm can be loaded). */
export function simd128Supported() {
  return WebAssembly.validate(SIMD128_PROBE);
}

/** Thrown when the module calls exit(). */
export class CmlExit extends Error {
  constructor(code) {
    super(`cml module exited with status ${code}`);
    this.code = code;
  }
}

function makeWasiImports(getMemory, log) {
  const pending = { 1: '', 2: '' };
  const decoder = new TextDecoder();
  const view = () => new DataView(getMemory().buffer);
  const now = () => (typeof performance !== 'undefined' ? performance.now() : Date.now());
  const impl = {
    environ_sizes_get(countPtr, sizePtr) {
      view().setUint32(countPtr, 0, true);
      view().setUint32(sizePtr, 0, true);
      return WASI_ESUCCESS;
    },
    environ_get() { return WASI_ESUCCESS; },
    args_sizes_get(countPtr, sizePtr) { return impl.environ_sizes_get(countPtr, sizePtr); },
    args_get() { return WASI_ESUCCESS; },
    clock_time_get(id, precision, timePtr) {
      // 0: realtime, otherwise monotonic; nanoseconds as a u64.
      const ms = id === 0 ? Date.now() : now();
      view().setBigUint64(timePtr, BigInt(Math.round(ms * 1e6)), true);
      return WASI_ESUCCESS;
    },
    fd_write(fd, iovs, iovsLen, writtenPtr) {
      if (fd !== 1 && fd !== 2) return WASI_EBADF;
      const dv = view();
      let total = 0;
      for (let i = 0; i < iovsLen; ++i) {
        const base = dv.getUint32(iovs + 8 * i, true);
        const len = dv.getUint32(iovs + 8 * i + 4, true);
        pending[fd] += decoder.decode(new Uint8Array(getMemory().buffer, base, len));
        total += len;
      }
      let nl;
      while ((nl = pending[fd].indexOf('\n')) >= 0) {
        log(fd, pending[fd].slice(0, nl));
        pending[fd] = pending[fd].slice(nl + 1);
      }
      dv.setUint32(writtenPtr, total, true);
      return WASI_ESUCCESS;
    },
    fd_seek() { return WASI_ESPIPE; },
    fd_close() { return WASI_ESUCCESS; },
    sched_yield() { return WASI_ESUCCESS; },
    proc_exit(code) { throw new CmlExit(code); },
  };
  return new Proxy(impl, {
    get: (target, name) => (name in target ? target[name] : () => WASI_ENOSYS),
  });
}

function defaultLog(fd, line) {
  if (fd === 2) console.error(line); else console.log(line);
}

/**
 * Instantiates the module. |source| is a URL (fetched) or the module's bytes.
 * |options.log(fd, line)| receives the module's stdout (1) and stderr (2) lines.
 * |options.synchronous| compiles with `new WebAssembly.Module` instead of the asynchronous
 * WebAssembly.instantiate: it blocks for the compile (tens of milliseconds for cml_web.wasm;
 * browsers allow it on the main thread for modules up to 8 MB), but nothing else can run
 * meanwhile, which headless Chromium's --virtual-time-budget needs (it does not wait for an
 * asynchronous compile).
 */
export async function loadCml(source, options = {}) {
  const bytes = typeof source === 'string' || source instanceof URL
    ? await (await fetch(source)).arrayBuffer()
    : source;
  let memory = null;
  const imports = {
    wasi_snapshot_preview1: makeWasiImports(() => memory, options.log || defaultLog),
  };
  const instance = options.synchronous
    ? new WebAssembly.Instance(new WebAssembly.Module(bytes), imports)
    : (await WebAssembly.instantiate(bytes, imports)).instance;
  const ex = instance.exports;
  memory = ex.memory;
  if (ex._initialize) ex._initialize();
  return new Cml(ex);
}

/** The module's entry points, with JavaScript arrays in and out. */
export class Cml {
  constructor(exports) {
    this.exports = exports;
  }

  cString(pointer) {
    const bytes = new Uint8Array(this.exports.memory.buffer, pointer);
    const end = bytes.indexOf(0);
    return new TextDecoder().decode(bytes.subarray(0, end < 0 ? 0 : end));
  }

  /** The backend the entry points use, e.g. "c (pure C backend (scalar, 1 thread, 1 device))". */
  backend() { return this.cString(this.exports.cml_web_backend()); }

  /**
   * Runs the demo MLP (3 inputs, 5 hidden, 2 outputs) on |batch| rows of |x| (a Float32Array
   * of batch * 3 values). Returns { y: Float32Array(batch * 2), s: Float32Array(batch) }.
   * Throws an Error with cml's message on failure.
   */
  mlp(x, batch) {
    // Checked here: a short |x| would leave rows of leftover wasm memory as inputs, and a
    // fractional batch would size the results wrongly.
    if (!Number.isInteger(batch) || batch < 1 || batch > 4096) {
      throw new Error(`cml: batch must be an integer in [1, 4096], got ${batch}`);
    }
    if (!(x instanceof Float32Array) || x.length < batch * 3) {
      throw new Error(`cml: x must be a Float32Array of at least ${batch * 3} values (batch ${batch} x 3)`);
    }
    const ex = this.exports;
    const xp = ex.cml_web_malloc(batch * 3 * 4);
    const yp = ex.cml_web_malloc(batch * 2 * 4);
    const sp = ex.cml_web_malloc(batch * 4);
    try {
      if (!xp || !yp || !sp) throw new Error('cml: out of wasm memory');
      new Float32Array(ex.memory.buffer, xp, batch * 3).set(x.subarray(0, batch * 3));
      if (ex.cml_web_mlp(xp, batch, yp, sp) !== 0) {
        throw new Error(`cml: ${this.cString(ex.cml_web_error())}`);
      }
      // Copied out: the memory's buffer changes when it grows.
      return {
        y: new Float32Array(ex.memory.buffer, yp, batch * 2).slice(),
        s: new Float32Array(ex.memory.buffer, sp, batch).slice(),
      };
    } finally {
      ex.cml_web_free(xp);
      ex.cml_web_free(yp);
      ex.cml_web_free(sp);
    }
  }

  /**
   * Times an MLP of the given sizes: returns { executeUs, compileUs } (microseconds; execute is
   * the mean over |iterations| runs). Throws on failure.
   */
  bench(batch, inputs, hidden, outputs, iterations) {
    const ex = this.exports;
    const cp = ex.cml_web_malloc(8);
    try {
      const us = ex.cml_web_mlp_bench(batch, inputs, hidden, outputs, iterations, cp);
      if (us < 0) throw new Error(`cml: ${this.cString(ex.cml_web_error())}`);
      return { executeUs: us, compileUs: new Float64Array(ex.memory.buffer, cp, 1)[0] };
    } finally {
      ex.cml_web_free(cp);
    }
  }
}
