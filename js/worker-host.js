// The worker's side of createXattnWorker (js/worker-client.js): one xattn instance and its modules, driven by
// messages. The client sends one call at a time, so calls run in the order they were made.
//   in:  { id, op: 'init', options } | { id, op: 'xattn', method, args } | { id, op: 'module', module, method, args }
//   out: { id, ok: true, value } with the result's buffers transferred | { id, ok: false, error: { name, message } }
import { SPENT_FORWARD } from './encoder.js';
import { buffersIn } from './worker-snapshot.js';

const XATTN_METHODS = new Set(['scaledDotProductAttention', 'scaledDotProductAttentionGrad', 'createMultiheadAttention',
  'createKvCache', 'applyRotaryEmbedding', 'applyRotaryEmbeddingGrad', 'memoryBytes', 'linear', 'linearGrad', 'layerNorm',
  'layerNormGrad', 'createTransformerEncoderLayer']);
// Methods that create an object the worker keeps, and what the page may call on each kind.
const CREATES = new Set(['createMultiheadAttention', 'createKvCache', 'createTransformerEncoderLayer']);
const MODULE_METHODS = new Set(['forward', 'backward', 'setParameters', 'loadStateDict', 'parameters', 'dispose',
  'append', 'attend', 'truncate', 'keys', 'values', 'length', 'lengths', 'positions']);
// Properties of a KvCache, read rather than called.
const PROPERTIES = new Set(['length', 'lengths', 'positions']);

// The page's options.wasmPaths function arrives as the location of every file (js/worker-client.js).
function withWasmPaths(options) {
  const files = options?.wasmPaths?.files;
  if (!files) return options;
  return { ...options, wasmPaths: (fileName) => files[fileName] };
}

// `port`: { post(message, transfer), listen(onMessage) } over the worker's global scope or parentPort.
export function serve(createXattn, port) {
  let xa = null;
  const modules = new Map();  // module id -> MultiheadAttention or KvCache
  let nextModule = 1;

  // A layer forward's `saved` stays here under an id the page's token carries ({ kept: id }, js/worker-client.js).
  function adopt(saved) {
    const id = nextModule++;
    modules.set(id, saved);
    return id;
  }

  // A backward's options.saved { kept: id } becomes the token it stands for (a spent one when the id is gone, which
  // the layer refuses in its own words); its id, which the backward spends.
  function keptIn(args) {
    const options = args[2];
    const id = options?.saved?.kept;
    if (typeof id !== 'number') return null;
    args[2] = { ...options, saved: modules.get(id) ?? SPENT_FORWARD };
    return id;
  }

  function run(message) {
    const { op, method, args } = message;
    if (op === 'xattn' && XATTN_METHODS.has(method)) {
      const value = xa[method](...args);
      if (!CREATES.has(method)) return value;
      const id = nextModule++;
      modules.set(id, value);
      return { module: id, config: value.config };
    }
    if (op === 'module' && MODULE_METHODS.has(method) && modules.has(message.module)) {
      const target = modules.get(message.module);
      if (PROPERTIES.has(method)) return target[method];
      if (typeof target[method] !== 'function') throw new Error(`xattn worker: this object has no method ${method}`);
      const spent = method === 'backward' ? keptIn(args) : null;
      const value = target[method](...args);
      if (method === 'dispose') modules.delete(message.module);
      if (spent) modules.delete(spent);
      return value?.saved ? { ...value, saved: { kept: adopt(value.saved) } } : value;
    }
    throw new Error(`xattn worker: unknown request ${JSON.stringify({ op, method })}`);
  }

  port.listen(async (message) => {
    try {
      let value;
      if (message.op === 'init') {
        xa = await createXattn(withWasmPaths(message.options));
        value = { simd: xa.simd, relaxedSimd: xa.relaxedSimd, threads: xa.threads, spinMicroseconds: xa.spinMicroseconds, kernels: xa.kernels, version: xa.version };
      } else {
        value = run(message);
      }
      port.post({ id: message.id, ok: true, value }, buffersIn(value));
    } catch (e) {
      port.post({ id: message.id, ok: false, error: { name: e?.name ?? 'Error', message: String(e?.message ?? e) } }, []);
    }
  });
}
