// The decoding panel's Worker: holds one DecodeSession (its KvCache lives in this Worker's WebAssembly
// memory) and runs a step per request, so the page's thread only draws. Loads the package as a user would.
// Requests (worker-serve.js protocol): configure(settings) → the full causal weights; step() → one step;
// reset() → an empty cache.
import { createXattn } from 'xattn';
import { serve } from '../worker-serve.js';
import { DecodeSession } from './decode-session.js';

let loading = null; // the package, loading or loaded: 'init' and a 'configure' right behind it share one
let lib = null;
let session = null;

// 1 thread: a step attends one query row per head to at most 32 positions (E ≤ 64), far below what the package
// would share between threads, so a threaded instance would only start a pool of Workers that never work,
// beside the page's compute workers.
async function init() {
  loading ??= createXattn({ threads: 1 });
  lib = await loading;
  return { simd: lib.simd, version: lib.version, threads: lib.threads };
}

async function configure(settings) {
  await init();
  session?.dispose();
  session = null;
  session = new DecodeSession(lib, settings);
  // The reference, for the page's test hook: (1, H, T, T), a copy so the session keeps its own.
  return { settings, full: session.full.weights.slice() };
}

function requireSession() {
  if (!session) throw new Error('no sequence yet: configure first');
  return session;
}

function step() {
  return requireSession().step();
}

function reset() {
  requireSession().reset();
  return { length: 0 };
}

serve({ init, configure, step, reset });
