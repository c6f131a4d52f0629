// The CommonJS view of the same declarations (require('xattn') and require('xattn/worker')).
import createXattn = require('xattn');
import workerEntry = require('xattn/worker');

const t: createXattn.Tensor = { data: new Float32Array(4), shape: [2, 2] as const };
createXattn.createXattn({ simd: false }).then((xa) => {
  const r = xa.scaledDotProductAttention(t, t, t, { needWeights: true });
  const part: BlobPart = r.weights.data;
  void part;
  const mha = xa.createMultiheadAttention({ embedDim: 4, numHeads: 2 });
  const p: createXattn.StateDict = mha.parameters();
  mha.loadStateDict(p, { prefix: undefined });
  mha.forward(t, t, t, { isCausal: true, softcap: 2, window: { left: 1, right: 0 }, alibiSlopes: [0.5], keyLengths: [2] });
  mha.dispose();
  // The rules, the scores, float16 I/O, rotary and the KV cache's options, through the namespace's types.
  const options: createXattn.SdpaOptions = { softcap: 2, window: { left: 1 }, alibiSlopes: [0.5], returnScores: 'scaled' };
  const scores: createXattn.OutputTensor | undefined = xa.scaledDotProductAttention(t, t, t, options).scores;
  void scores;
  const h: createXattn.HalfTensor = { data: new Uint16Array(4), shape: [1, 1, 2, 2] };
  const halves: Uint16Array = xa.scaledDotProductAttention(h, h, h, options).output.data;
  const turned: Uint16Array = xa.applyRotaryEmbeddingGrad(h, { positions: [3, 4] }).data;
  void halves; void turned;
  const cache: createXattn.KvCache = xa.createKvCache({ kvHeads: 1, headDim: 2, capacity: 4, rolling: true, rotary: { interleaved: true } });
  cache.append(h, h, { counts: [1] });
  const lengths: Int32Array<ArrayBuffer> = cache.lengths;
  const attended: Uint16Array = cache.attend(h, { isCausal: true, window: { left: 3 } }).output.data;
  void lengths; void attended;
  // @ts-expect-error returnScores names a stage
  xa.scaledDotProductAttention(t, t, t, { returnScores: 'raw' });
  // @ts-expect-error a window is { left, right }
  xa.scaledDotProductAttention(t, t, t, { window: 5 });
  // @ts-expect-error a float16 call returns halves
  const notFloat: Float32Array = xa.scaledDotProductAttention(h, h, h).output.data;
  void notFloat;
  cache.dispose();
});
workerEntry.createXattnWorker().then(async (w) => {
  const r = await w.scaledDotProductAttention(t, t, t);
  // @ts-expect-error weights not asked for
  r.weights.data;
  await w.terminate();
});
// @ts-expect-error shape must be numbers
const bad: createXattn.Tensor = { data: new Float32Array(1), shape: ['1'] };
void bad;
