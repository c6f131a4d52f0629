// Compiled by tests/package/package.test.mjs with TypeScript 5 (7 has no node10 resolution) as a CommonJS project
// of the older kind: moduleResolution node10, module commonjs, esModuleInterop. Both entries resolve, the default
// import is the callable factory, and the option types are the same as everywhere else.
import createXattn from 'xattn';
import xattn = require('xattn');
import { createXattnWorker, type XattnWorker } from 'xattn/worker';

const t: xattn.Tensor = { data: new Float32Array(4), shape: [2, 2] };

async function main(): Promise<void> {
  const xa: xattn.Xattn = await createXattn({ simd: false, wasmPaths: './assets' });
  const named: xattn.Xattn = await xattn.createXattn({ wasmPaths: (fileName: string) => new URL(fileName, 'https://cdn.example/xattn/') });
  const viaDefault: xattn.Xattn = await xattn.default({ wasmPaths: new URL('https://cdn.example/xattn/dist/') });
  void named; void viaDefault;
  const r = xa.scaledDotProductAttention(t, t, t, { needWeights: true });
  const weights: Float32Array<ArrayBuffer> = r.weights.data;
  void weights;
  const h: xattn.HalfTensor = { data: new Uint16Array(4), shape: [2, 2] };
  const halves: Uint16Array = xa.scaledDotProductAttentionGrad(h, h, h, h, { isCausal: true, window: { left: 0 }, keyLengths: [2] }).gradKey.data;
  void halves;
  const cache = xa.createKvCache({ kvHeads: 1, headDim: 2, capacity: 4, rolling: true, rotary: true, dtype: 'float16' });
  const positions: Int32Array<ArrayBuffer> = cache.positions;
  void positions;
  // @ts-expect-error returnScores names a stage
  xa.scaledDotProductAttention(t, t, t, { returnScores: 'raw' });
  // @ts-expect-error a float16 gradient returns halves
  const notFloat: Float32Array = xa.scaledDotProductAttentionGrad(h, h, h, h).gradQuery.data;
  void notFloat;
  const paths: xattn.WasmPaths = (fileName) => `/static/${fileName}`;
  const worker: XattnWorker = await createXattnWorker({ threads: 1, wasmPaths: paths });
  const wr = await worker.scaledDotProductAttention(t, t, t);
  // @ts-expect-error weights not asked for
  wr.weights.data;
  await worker.terminate();
  // @ts-expect-error wasmPaths is a location or a function, not a number
  await createXattn({ wasmPaths: 3 });
  // @ts-expect-error the function returns a location
  await createXattn({ wasmPaths: () => 3 });
  // @ts-expect-error unknown options are errors
  await createXattn({ wasmPath: './assets' });
}
void main;
