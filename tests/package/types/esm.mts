// Compiled by tests/package/package.test.mjs with tsc (strict, exactOptionalPropertyTypes) against the packed
// tarball: what TypeScript users write must type-check, with exact result types; mistakes must not.
import createXattn, { createXattn as named, type Mask, type OutputTensor, type Tensor, type Xattn } from 'xattn';
import { createXattnWorker, type XattnWorker } from 'xattn/worker';

const xa: Xattn = await createXattn({ simd: undefined });
void named;

// wasmPaths: a base (a string or a URL) or a function of the file name; undefined as for every option.
await createXattn({ wasmPaths: 'https://cdn.example/xattn/dist/' });
await createXattn({ wasmPaths: new URL('./assets/', import.meta.url), threads: 1 });
await createXattn({ wasmPaths: (fileName) => new URL(fileName, 'https://cdn.example/xattn/dist/') });
await createXattn({ wasmPaths: undefined });
// @ts-expect-error a location, not a number
await createXattn({ wasmPaths: 3 });
// @ts-expect-error the function returns a location
await createXattn({ wasmPaths: (fileName: string) => fileName.length });

// Inputs: readonly and `as const` shapes, any Float32Array (over a SharedArrayBuffer too).
const q = { data: new Float32Array(4 * 10 * 64), shape: [4, 10, 64] as const };
const shared: Tensor = { data: new Float32Array(new SharedArrayBuffer(16)), shape: [2, 2] };
const dims: readonly number[] = [2, 2];
const fromReadonly: Tensor = { data: new Float32Array(4), shape: dims };
void shared; void fromReadonly;

// Results own plain ArrayBuffers: Blob parts, transferable, `.buffer` is an ArrayBuffer.
const r = xa.scaledDotProductAttention(q, q, q, { isCausal: true, needWeights: true });
const blob = new Blob([r.output.data, r.weights.data]);  // weights present: needWeights: true
const buffer: ArrayBuffer = r.output.data.buffer;
const rows: number[] = r.weights.shape;
void blob; void buffer; void rows;
// A result is a valid input.
const again: OutputTensor = xa.scaledDotProductAttention(r.output, q, q).output;
void again;

// Without needWeights: true, the weights may be absent.
const maybe = xa.scaledDotProductAttention(q, q, q);
// @ts-expect-error weights is possibly undefined
maybe.weights.data;
const chosen = xa.scaledDotProductAttention(q, q, q, { needWeights: false });
// @ts-expect-error weights is possibly undefined
chosen.weights.shape;

// exactOptionalPropertyTypes: undefined is accepted wherever an option is optional.
xa.scaledDotProductAttention(q, q, q, { needWeights: undefined, attnMask: undefined, scale: undefined });
// @ts-expect-error causalAlignment takes only the two alignments
xa.scaledDotProductAttention(q, q, q, { isCausal: true, causalAlignment: 'middle' });
// @ts-expect-error unknown options are errors
xa.scaledDotProductAttention(q, q, q, { isCasual: true });
// @ts-expect-error a Float64Array is not a tensor's data
xa.scaledDotProductAttention({ data: new Float64Array(4), shape: [2, 2] }, q, q);
const mask: Mask = { data: new Uint8Array(100), shape: [10, 10] };

// out: the caller's array comes back as output.data; over an ArrayBuffer only, and for forward calls only.
const reuse = new Float32Array(4 * 10 * 64);
const written: Float32Array<ArrayBuffer> = xa.scaledDotProductAttention(q, q, q, { out: reuse }).output.data;
void written;
// @ts-expect-error out must be over an ArrayBuffer, not a SharedArrayBuffer
xa.scaledDotProductAttention(q, q, q, { out: new Float32Array(new SharedArrayBuffer(16)) });
// @ts-expect-error the gradient has no out
xa.scaledDotProductAttentionGrad(q, q, q, q, { out: reuse });

const g = xa.scaledDotProductAttentionGrad(q, q, q, q, { attnMask: mask, needWeights: true });
const gw: Float32Array<ArrayBuffer> = g.weights.data;
void gw;

// MultiheadAttention: weights by default, absent with needWeights: false.
const mha = xa.createMultiheadAttention({ embedDim: 64, numHeads: 8, batchFirst: true, initSeed: 3, kdim: undefined });
const y = mha.forward(q, q, q, { keyPaddingMask: { data: new Uint8Array(40), shape: [4, 10] } });
const averaged: number[] = y.weights.shape;
void averaged;
const noWeights = mha.forward(q, q, q, { needWeights: false });
// @ts-expect-error no weights were asked for
noWeights.weights.data;
const seed: number = mha.config.initSeed;
void seed;
mha.loadStateDict(new Uint8Array(8), { prefix: 'encoder.layers.0.self_attn.' });
mha.loadStateDict({ in_proj_weight: new Float64Array(3 * 64 * 64), 'out_proj.bias': { data: new Uint16Array(64), dtype: 'bfloat16' } });
mha.loadStateDict(mha.parameters());
// @ts-expect-error a state dict entry must be a float typed array or a tensor
mha.loadStateDict({ in_proj_weight: [1, 2, 3] });
// @ts-expect-error parameters take Float32Arrays
mha.setParameters({ 'out_proj.bias': new Float64Array(64) });
// @ts-expect-error initSeed is a number
xa.createMultiheadAttention({ embedDim: 4, numHeads: 2, initSeed: 1n });
const grads = mha.backward(q, q, q, q, { training: true, seed: 1 });
const gradBias: Float32Array<ArrayBuffer> | undefined = grads.gradParameters['out_proj.bias'];
void gradBias;
// @ts-expect-error the backward has no weights to ask for
mha.backward(q, q, q, q, { needWeights: true });
mha.forward(q, q, q, { needWeights: false, out: reuse });
// @ts-expect-error nor an out
mha.backward(q, q, q, q, { out: reuse });
mha.dispose();

// The worker: the same types, in Promises.
const worker: XattnWorker = await createXattnWorker();
await (await createXattnWorker({ wasmPaths: (fileName) => `/static/${fileName}` })).terminate();
const controller = new AbortController();
const wr = await worker.scaledDotProductAttention(q, q, q, { needWeights: true }, { signal: controller.signal, transfer: true });
const ww: Float32Array<ArrayBuffer> = wr.weights.data;
void ww;
const remote = await worker.createMultiheadAttention({ embedDim: 64, numHeads: 8 });
const ry = await remote.forward(q, q, q);
void ry.weights.shape;
await remote.loadStateDict(new ArrayBuffer(8), { prefix: 'attn.' });
// @ts-expect-error call options are checked
await worker.memoryBytes({ signl: controller.signal });
// @ts-expect-error out is not available through a worker
await worker.scaledDotProductAttention(q, q, q, { out: reuse });
await remote.dispose();
await worker.terminate();
