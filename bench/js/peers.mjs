// Every implementation the benchmark races, behind one interface:
//   { key, label, role, tolerance, version, prepare(problem) → run, release() }
// where run() goes from the problem's Float32Arrays to a fresh Float32Array output (BH, L, Ev), copies
// included, and may return a promise. role: 'xattn', 'peer' (wasm/JS, what the speedup is measured
// against) or 'native' (onnxruntime-node, shown for reference only). A peer that fails to load is kept with
// `unavailable` set, so the report says why instead of silently dropping a column.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

import { relaxedSimdSupported } from '../../js/detect.js';
import { createXattn } from '../../js/node.js';
import { attentionModel } from './onnx-model.mjs';
import { attentionReference } from '../../web/src/shared/attention-reference.js';

const require = createRequire(import.meta.url);

// The installed version, from the package's own package.json (some packages do not export that subpath):
// walk up from the resolved entry to the directory that holds it.
function versionOf(pkg) {
  for (let dir = path.dirname(require.resolve(pkg)); dir !== path.dirname(dir); dir = path.dirname(dir)) {
    try {
      const json = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8'));
      if (json.name === pkg) return json.version;
    } catch { /* not here: keep walking */ }
  }
  return 'unknown';
}

// One tolerance for everyone, the golden one. The float32 peers need no looser allowance: at these
// shapes they stay within ~1e-6 of the float64 reference (the run prints each one's max |Δ|).
export const TOLERANCE = { atol: 1e-5, rtol: 1e-4 };

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// dist/ may be mid-rebuild by another process (npm run build:wasm): retry a few times before giving up.
// One thread unless asked: the main table compares single-threaded runs (threads.mjs compares 1 with 2).
// The SIMD build is the plain one unless `relaxed`: every section measures the same build whatever the engine
// offers, and the relaxed one only where asked (its own column and the relaxed-vs-plain lines).
export async function loadXattn(simd, threads = 1, relaxed = false) {
  for (let attempt = 1; ; attempt++) {
    try {
      return await createXattn(simd ? { simd, threads, relaxedSimd: relaxed } : { simd, threads });
    } catch (err) {
      if (attempt >= 5) throw err;
      await sleep(2000);
    }
  }
}

export function xattnImpl(simd, threads = 1, relaxed = false) {
  return {
    key: relaxed ? 'xattnRelaxed' : simd ? 'xattnSimd' : 'xattnScalar',
    label: relaxed ? 'xattn relaxed SIMD' : simd ? 'xattn SIMD' : 'xattn scalar',
    role: 'xattn',
    tolerance: TOLERANCE,
    async load() {
      if (relaxed && !relaxedSimdSupported()) {
        throw new Error('no relaxed SIMD in this engine (Node 20: run with --experimental-wasm-relaxed-simd, as npm run bench does)');
      }
      this.xa = await loadXattn(simd, threads, relaxed);
      this.version = this.xa.version;
    },
    prepare({ query, key, value }) {
      const options = { needWeights: false };
      return () => this.xa.scaledDotProductAttention(query, key, value, options).output.data;
    },
  };
}

// onnxruntime-web (its SIMD wasm build) and onnxruntime-node share the model; each uses its own module's
// InferenceSession and Tensor (the two packages may hold separate copies of onnxruntime-common).
export function ortImpl(native, threads = 1) {
  return {
    key: native ? 'ortNode' : 'ortWeb',
    label: native ? 'ort-node native' : 'ort-web wasm',
    role: native ? 'native' : 'peer',
    tolerance: TOLERANCE,
    async load() {
      if (native) {
        this.ort = require('onnxruntime-node');
        this.version = versionOf('onnxruntime-node');
        // One thread and sequential execution: the same budget as every other column.
        this.sessionOptions = { executionProviders: ['cpu'], intraOpNumThreads: 1, interOpNumThreads: 1, executionMode: 'sequential' };
      } else {
        this.ort = await import('onnxruntime-web');
        // Must be set before the first session: it sizes the wasm thread pool process-wide (so threads.mjs runs
        // each count in a process of its own).
        this.ort.env.wasm.numThreads = threads;
        this.version = versionOf('onnxruntime-web');
        this.sessionOptions = { executionProviders: ['wasm'] };
      }
      this.sessionOptions.graphOptimizationLevel = 'all';
    },
    async prepare({ dims, query, key, value, scale }) {
      // A session per shape, with fixed dims, so the runtime plans for exactly this problem.
      this.session = await this.ort.InferenceSession.create(attentionModel(dims, scale), this.sessionOptions);
      const { Tensor } = this.ort;
      const session = this.session;
      return async () => {
        const feeds = {
          query: new Tensor('float32', query.data, query.shape),
          key: new Tensor('float32', key.data, key.shape),
          value: new Tensor('float32', value.data, value.shape),
        };
        const { output } = await session.run(feeds);
        return output.data;
      };
    },
    async release() {
      await this.session?.release();
      this.session = null;
    },
  };
}

// tfjs-backend-wasm routes matMul to XNNPACK only for 2-D operands without transpose flags; anything else
// (a batched matMul, transposeB) runs a scalar loop. So: one head at a time, K transposed explicitly.
function tfjsImpl() {
  return {
    key: 'tfjsWasm',
    label: 'tfjs-wasm',
    role: 'peer',
    tolerance: TOLERANCE,
    async load() {
      this.tf = await import('@tensorflow/tfjs-core');
      const wasm = await import('@tensorflow/tfjs-backend-wasm');
      // In Node the backend must be told where its .wasm files are: a directory path ending in '/'.
      const dist = path.dirname(require.resolve('@tensorflow/tfjs-backend-wasm/dist/tfjs-backend-wasm.wasm')) + path.sep;
      wasm.setWasmPaths(dist);
      if (!(await this.tf.setBackend('wasm'))) throw new Error('tf.setBackend("wasm") failed');
      await this.tf.ready();
      this.version = versionOf('@tensorflow/tfjs-backend-wasm');
    },
    prepare({ dims: { BH, L, S, E, Ev }, query, key, value, scale }) {
      const tf = this.tf;
      return () => {
        const out = new Float32Array(BH * L * Ev);
        for (let m = 0; m < BH; m++) {
          tf.tidy(() => {
            // Scaling the queries (L·E values) rather than the scores (L·S) is what a careful user does.
            const q = tf.mul(tf.tensor2d(query.data.subarray(m * L * E, (m + 1) * L * E), [L, E]), scale);
            const k = tf.tensor2d(key.data.subarray(m * S * E, (m + 1) * S * E), [S, E]);
            const v = tf.tensor2d(value.data.subarray(m * S * Ev, (m + 1) * S * Ev), [S, Ev]);
            const weights = tf.softmax(tf.matMul(q, tf.transpose(k)));
            out.set(tf.matMul(weights, v).dataSync(), m * L * Ev);
          });
        }
        return out;
      };
    },
  };
}

function plainImpl() {
  return {
    key: 'plainJs',
    label: 'plain JS',
    role: 'peer',
    tolerance: TOLERANCE,
    version: process.version,
    load() {},
    prepare({ query, key, value, scale }) {
      // The float64 reference, one row of weights at a time: the plain JavaScript a user without WebAssembly writes.
      return () => attentionReference(query, key, value, { scale, needWeights: false }).output.data;
    },
  };
}

// The columns, in table order.
export async function loadImplementations() {
  const impls = [xattnImpl(true), xattnImpl(true, 1, true), xattnImpl(false), ortImpl(false), tfjsImpl(), plainImpl(), ortImpl(true)];
  for (const impl of impls) {
    try {
      await impl.load();
    } catch (err) {
      impl.unavailable = `failed to load: ${err?.message ?? err}`.split('\n')[0];
    }
  }
  return impls;
}
