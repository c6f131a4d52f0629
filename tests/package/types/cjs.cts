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
  mha.dispose();
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
