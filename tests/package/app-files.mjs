// The files of the throwaway projects that use the packed tarball. Each computes the lesson's
// example and reports the largest error against the PyTorch fixture.

// Shared by every browser page: compute, compare, publish window.__result.
export const pageCheck = `
export async function check(createXattn) {
  const c = await (await fetch(new URL('./case.json', location.href))).json();
  const xa = await createXattn();
  const r = xa.scaledDotProductAttention(
    { data: Float32Array.from(c.query.values), shape: c.query.shape },
    { data: Float32Array.from(c.key.values), shape: c.key.shape },
    { data: Float32Array.from(c.value.values), shape: c.value.shape }, { needWeights: true });
  let maxExcess = 0;
  r.output.data.forEach((g, i) => {
    const w = c.output.values[i];
    maxExcess = Math.max(maxExcess, Math.abs(g - w) / (1e-5 + 1e-4 * Math.abs(w)));
  });
  return { simd: xa.simd, shape: r.output.shape, maxExcess, weightsShape: r.weights.shape };
}
`;

export const plainHtml = `<!doctype html>
<meta charset="utf-8">
<link rel="icon" href="data:,">
<script type="importmap">{ "imports": { "xattn": "./node_modules/xattn/js/browser.js" } }</script>
<script type="module">
  import { createXattn } from 'xattn';
  import { check } from './check.js';
  check(createXattn).then((r) => { window.__result = r; }, (e) => { window.__result = { error: String(e) }; });
</script>`;

export const workerHtml = `<!doctype html>
<meta charset="utf-8">
<link rel="icon" href="data:,">
<script type="module">
  const worker = new Worker(new URL('./worker.js', location.href), { type: 'module' });
  worker.onmessage = (e) => { window.__result = e.data; };
  worker.onerror = (e) => { window.__result = { error: String(e.message) }; };
</script>`;

// Module workers have no import maps: import the package's browser entry by path.
export const workerJs = `
import { createXattn } from './node_modules/xattn/js/browser.js';
import { check } from './check.js';
check(createXattn).then((r) => postMessage(r), (e) => postMessage({ error: String(e) }));
`;

export const viteHtml = `<!doctype html>
<meta charset="utf-8">
<link rel="icon" href="data:,">
<script type="module" src="./main.js"></script>`;

export const viteMain = `
import createXattn from 'xattn';
import { check } from './check.js';
check(createXattn).then((r) => { window.__result = r; }, (e) => { window.__result = { error: String(e) }; });
`;

export const esmScript = (goldenUrl) => `
import createXattn, { createXattn as named } from 'xattn';
import { loadCases, mismatch, tensor } from '${goldenUrl}';
if (createXattn !== named) throw new Error('default and named exports differ');
const c = loadCases('sdpa.txt').find((x) => x.name === 'lesson_example_4x10x64');
for (const simd of [true, false]) {
  const xa = await createXattn({ simd });
  const r = xa.scaledDotProductAttention(tensor(c.tensors.query), tensor(c.tensors.key), tensor(c.tensors.value));
  const bad = mismatch(r.output, c.tensors.output);
  if (bad) throw new Error('ESM ' + (simd ? 'SIMD' : 'scalar') + ': ' + bad);
}
console.log('esm ok');
`;

export const cjsScript = (goldenPath) => `
const createXattn = require('xattn');
if (typeof createXattn !== 'function' || createXattn.createXattn !== createXattn || createXattn.default !== createXattn) {
  throw new Error('require("xattn") is not the createXattn factory');
}
(async () => {
  const { loadCases, mismatch, tensor } = await import(${JSON.stringify(goldenPath)});
  const c = loadCases('sdpa.txt').find((x) => x.name === 'causal_L_lt_S_bottom_right');
  const xa = await createXattn.createXattn({ simd: false });
  const r = xa.scaledDotProductAttention(tensor(c.tensors.query), tensor(c.tensors.key), tensor(c.tensors.value),
    { isCausal: true, causalAlignment: 'bottom-right', needWeights: true });
  const bad = mismatch(r.weights, c.tensors.weights);
  if (bad) throw new Error('CJS: ' + bad);
  console.log('cjs ok');
})().catch((e) => { console.error(e); process.exitCode = 1; });
`;

export const tsEsm = `
import createXattn, { createXattn as named, type Tensor, type Xattn } from 'xattn';
const t: Tensor = { data: new Float32Array(4), shape: [2, 2] };
const xa: Xattn = await createXattn({ simd: false });
const r = xa.scaledDotProductAttention(t, t, t, { isCausal: true, causalAlignment: 'bottom-right' });
const rows: number = r.output.shape[0];
const g = xa.scaledDotProductAttentionGrad(t, t, t, t, { enableGqa: false });
const gq: Float32Array = g.gradQuery.data;
const mha = xa.createMultiheadAttention({ embedDim: 2, numHeads: 1, batchFirst: true });
mha.setParameters({ outProjBias: new Float32Array(2) });
mha.forward(t, t, t, { keyPaddingMask: { data: new Uint8Array(2), shape: [2] } }).weights?.data;
void named; void rows; void gq;
// @ts-expect-error causalAlignment takes only the two alignments
xa.scaledDotProductAttention(t, t, t, { causalAlignment: 'middle' });
`;

export const tsCjs = `
import createXattn = require('xattn');
const t: createXattn.Tensor = { data: new Float32Array(4), shape: [2, 2] };
createXattn.createXattn({ simd: false }).then((xa) => xa.scaledDotProductAttention(t, t, t).output.data);
createXattn().then((xa: createXattn.Xattn) => xa.createMultiheadAttention({ embedDim: 4, numHeads: 2 }).dispose());
// @ts-expect-error shape must be numbers
const bad: createXattn.Tensor = { data: new Float32Array(1), shape: ['1'] };
void bad;
`;
