// Compiled by tests/package/package.test.mjs with tsc (strict, exactOptionalPropertyTypes) against the packed
// tarball: what TypeScript users write must type-check, with exact result types; mistakes must not.
import createXattn, {
  createXattn as named, type HalfOutputTensor, type HalfTensor, type Mask, type OutputTensor, type SdpaOptions, type Tensor, type Xattn,
} from 'xattn';
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

// The rules beside the mask, causal together with a mask, and the scores at a stage.
const ruled = xa.scaledDotProductAttention(q, q, q, {
  isCausal: true, attnMask: mask, causalAlignment: 'bottom-right', softcap: 50, window: { left: 4096, right: 0 },
  alibiSlopes: new Float32Array(10), keyLengths: new Int32Array([10, 9, 8, 7]), returnScores: 'biased', needWeights: true,
});
const ruledWeights: Float32Array<ArrayBuffer> = ruled.weights.data;
const stage: OutputTensor | undefined = ruled.scores;
void ruledWeights; void stage;
const slopes = [0.5, 0.25] as const;
const options: SdpaOptions = { alibiSlopes: slopes, keyLengths: [10, 10, 10, 10], window: { left: -1 }, returnScores: 'softcapped' };
xa.scaledDotProductAttention(q, q, q, { ...options, softcap: undefined, window: undefined, alibiSlopes: undefined, returnScores: undefined });
// @ts-expect-error the scores may be absent without returnScores
xa.scaledDotProductAttention(q, q, q, { needWeights: true }).scores.data;
// @ts-expect-error returnScores names a stage: 'scaled', 'softcapped' or 'biased'
xa.scaledDotProductAttention(q, q, q, { returnScores: 'raw' });
// @ts-expect-error a window is { left, right }, not a width
xa.scaledDotProductAttention(q, q, q, { window: 5 });
// @ts-expect-error a window's sides are left and right
xa.scaledDotProductAttention(q, q, q, { window: { before: 5 } });
// @ts-expect-error softcap is a number
xa.scaledDotProductAttention(q, q, q, { softcap: '50' });
// @ts-expect-error keyLengths are integers: an Int32Array or an Array
xa.scaledDotProductAttention(q, q, q, { keyLengths: new Float32Array(4) });
// @ts-expect-error alibiSlopes are a Float32Array or an Array
xa.scaledDotProductAttention(q, q, q, { alibiSlopes: new Float64Array(4) });
const ruledGrad = xa.scaledDotProductAttentionGrad(q, q, q, q, {
  isCausal: true, attnMask: mask, softcap: 3, window: { left: 2, right: 2 }, alibiSlopes: [1, 2], keyLengths: [1, 2, 3, 4],
  causalAlignment: 'top-left', needWeights: true,
});
const ruledGradWeights: Float32Array<ArrayBuffer> = ruledGrad.weights.data;
void ruledGradWeights;
// @ts-expect-error the gradient returns no scores
xa.scaledDotProductAttentionGrad(q, q, q, q, { returnScores: 'scaled' });

// float16 I/O: halves in (a Uint16Array of their bits), halves out, of the same class; no out.
const hq = { data: new Uint16Array(4 * 10 * 64), shape: [4, 10, 64] as const };
const halfInput: HalfTensor = hq;
const h = xa.scaledDotProductAttention(halfInput, hq, hq, { needWeights: true, returnScores: 'biased', isCausal: true, attnMask: mask });
const hOut: Uint16Array = h.output.data;
const hWeights: Uint16Array | undefined = h.weights?.data;
const hScores: HalfOutputTensor<Uint16Array> | undefined = h.scores;
void hOut; void hWeights; void hScores;
// @ts-expect-error a float16 call returns halves, not a Float32Array
const notFloat: Float32Array = h.output.data;
void notFloat;
// @ts-expect-error a float16 call takes no out
xa.scaledDotProductAttention(hq, hq, hq, { out: reuse });
// @ts-expect-error every tensor of a float16 call is halves
xa.scaledDotProductAttention(hq, q, hq);
const hg = xa.scaledDotProductAttentionGrad(hq, hq, hq, hq, { isCausal: true, keyLengths: [1, 2, 3, 4], softcap: 5, needWeights: true });
const hgq: Uint16Array = hg.gradQuery.data, hgk: Uint16Array = hg.gradKey.data, hgv: Uint16Array = hg.gradValue.data;
const hgo: Uint16Array = hg.output.data, hgw: Uint16Array | undefined = hg.weights?.data;
void hgq; void hgk; void hgv; void hgo; void hgw;
// @ts-expect-error a float16 gradient returns halves
const notFloatGrad: Float32Array = hg.gradKey.data;
void notFloatGrad;
// @ts-expect-error gradOutput is halves too
xa.scaledDotProductAttentionGrad(hq, hq, hq, q);

// Rotary embeddings: float32 or halves, the same class back.
const turned: OutputTensor = xa.applyRotaryEmbedding(q, { positions: new Int32Array(10), base: 10000, rotaryDim: 32, interleaved: true });
const turnedBack: Float32Array<ArrayBuffer> = xa.applyRotaryEmbeddingGrad(q, { positions: [0, 1, 2], interleaved: undefined }).data;
const turnedHalves: Uint16Array = xa.applyRotaryEmbedding(hq, { positionOffset: 3 }).data;
const turnedHalvesBack: Uint16Array = xa.applyRotaryEmbeddingGrad(hq).data;
void turned; void turnedBack; void turnedHalves; void turnedHalvesBack;
// @ts-expect-error rotary's options are positions, positionOffset, base, rotaryDim and interleaved
xa.applyRotaryEmbedding(q, { offset: 3 });
// @ts-expect-error positions are integers: an Int32Array or an Array
xa.applyRotaryEmbedding(q, { positions: new Float32Array(10) });
// @ts-expect-error rotary of halves returns halves
const notFloatTurned: Float32Array = xa.applyRotaryEmbeddingGrad(hq).data;
void notFloatTurned;

// The KV cache: rolling, rotary keys, per-element counts and lengths, positions; float32 or halves in.
const cache = xa.createKvCache({
  batch: 2, kvHeads: 2, headDim: 64, capacity: 4096, dtype: 'float16', rolling: true, rotary: { base: 10000, rotaryDim: 32, interleaved: false },
});
xa.createKvCache({ kvHeads: 2, headDim: 64, capacity: 8, rotary: true, rolling: undefined }).dispose();
const kvHalves = { data: new Uint16Array(2 * 2 * 3 * 64), shape: [2, 2, 3, 64] };
const kvFloats = { data: new Float32Array(2 * 2 * 3 * 64), shape: [2, 2, 3, 64] };
cache.append(kvHalves, kvHalves, { counts: new Int32Array([3, 1]) });
cache.append(kvFloats, kvFloats, { counts: [3, 1] });
cache.truncate([10, 9]);
cache.truncate(new Int32Array([1, 2]));
cache.truncate(5);
const lengths: Int32Array<ArrayBuffer> = cache.lengths;
const positions: Int32Array<ArrayBuffer> = cache.positions;
const held: number = cache.length;
const rolling: boolean = cache.config.rolling;
const rotaryDim: number | undefined = cache.config.rotary?.rotaryDim;
const storage: 'float32' | 'float16' = cache.config.dtype;
void lengths; void positions; void held; void rolling; void rotaryDim; void storage;
// @ts-expect-error a cache without rotary has config.rotary null
cache.config.rotary.base;
// @ts-expect-error lengths is read-only
cache.lengths = new Int32Array(2);
// @ts-expect-error counts go in the options
cache.append(kvHalves, kvHalves, [3, 1]);
// @ts-expect-error dtype is 'float32' or 'float16'
xa.createKvCache({ kvHeads: 2, headDim: 64, capacity: 8, dtype: 'bfloat16' });
// @ts-expect-error rotary is true or its options
xa.createKvCache({ kvHeads: 2, headDim: 64, capacity: 8, rotary: 'rope' });
const q4 = { data: new Float32Array(2 * 4 * 1 * 64), shape: [2, 4, 1, 64] };
const attended = cache.attend(q4, {
  isCausal: true, attnMask: mask, softcap: 30, window: { left: 4095 }, alibiSlopes: [1, 2, 3, 4], scale: 0.125, needWeights: true,
});
const attendedWeights: Float32Array<ArrayBuffer> = attended.weights.data;
const hq4 = { data: new Uint16Array(2 * 4 * 1 * 64), shape: [2, 4, 1, 64] };
const attendedHalves = cache.attend(hq4, { isCausal: true, needWeights: true, window: { left: 7 } });
const attendedHalvesOutput: Uint16Array = attendedHalves.output.data;
void attendedWeights; void attendedHalvesOutput;
// @ts-expect-error attend's key lengths are the cache's own
cache.attend(q4, { keyLengths: [1, 2] });
// @ts-expect-error attend's rows are each element's last ones: no causalAlignment
cache.attend(q4, { causalAlignment: 'top-left' });
// @ts-expect-error a float16 attend takes no out
cache.attend(hq4, { out: reuse });
// @ts-expect-error attend returns no scores
cache.attend(q4, { returnScores: 'scaled' });
cache.dispose();

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
// @ts-expect-error a backward's out is an object of arrays by result
mha.backward(q, q, q, q, { out: reuse });
mha.backward(q, q, q, q, { out: { gradQuery: reuse, gradParameters: { 'in_proj_weight': new Float32Array(3 * 64 * 64) } } });
// @ts-expect-error no result is named gradInput
mha.backward(q, q, q, q, { out: { gradInput: reuse } });
// MultiheadAttention takes the rules (float32 only; no scores).
mha.forward(q, q, q, {
  isCausal: true, attnMask: mask, causalAlignment: 'bottom-right', softcap: 50, window: { left: 3 }, alibiSlopes: new Float32Array(8),
  keyLengths: [10, 9, 8, 7],
});
mha.backward(q, q, q, q, { isCausal: true, attnMask: mask, softcap: 2, window: { left: 3, right: 0 }, alibiSlopes: [1, 2], keyLengths: new Int32Array(4) });
// @ts-expect-error MultiheadAttention returns no scores
mha.forward(q, q, q, { returnScores: 'scaled' });
// @ts-expect-error MultiheadAttention takes float32 only
mha.forward(hq, hq, hq);
// @ts-expect-error a window is { left, right }
mha.backward(q, q, q, q, { window: 5 });
mha.dispose();

// The encoder layer: a forward that keeps its activations returns `saved`; only the backward takes it.
const layer = xa.createTransformerEncoderLayer({ dModel: 64, nhead: 8, dimFeedforward: 128, normFirst: true, activation: 'gelu' });
const src = { data: new Float32Array(10 * 4 * 64), shape: [10, 4, 64] as const };
const kept = layer.forward(src, { isCausal: true, saveForBackward: true });
const keptOut: Float32Array<ArrayBuffer> = kept.output.data;
const layerGrads = layer.backward(src, kept.output, { isCausal: true, saved: kept.saved });
const gradLinear1: Float32Array<ArrayBuffer> | undefined = layerGrads.gradParameters['linear1.weight'];
void keptOut; void gradLinear1;
// @ts-expect-error a forward that keeps nothing returns no `saved`
void layer.forward(src).saved;
// @ts-expect-error `saved` is the forward's token, not a boolean
layer.backward(src, src, { saved: true });
kept.saved.dispose();
void xa.linear(src, { data: new Float32Array(32 * 64), shape: [32, 64] }, null).output.shape;
void xa.layerNorm(src, [64], { eps: 1e-5 }).output.data;
// A training loop's backwards write into kept arrays: out by result, a layer's parameters' gradients by name.
const keptGrad = new Float32Array(src.data.length);
const reused: Float32Array<ArrayBuffer> = layer.backward(src, src, { out: { gradSrc: keptGrad, gradParameters: { 'norm1.weight': new Float32Array(64) } } }).gradSrc.data;
void reused;
xa.linearGrad(src, { data: new Float32Array(32 * 64), shape: [32, 64] }, null, src, { out: { gradWeight: new Float32Array(32 * 64) } });
xa.layerNormGrad(src, [64], src, { out: { gradInput: keptGrad } });
xa.scaledDotProductAttentionGrad(q, q, q, q, { out: { gradKey: reuse } });
// @ts-expect-error a layer's parameters are named as PyTorch names them
layer.backward(src, src, { out: { gradParameters: { norm1_weight: new Float32Array(64) } } });
// @ts-expect-error float16 calls return their own arrays
xa.scaledDotProductAttentionGrad(hq, hq, hq, hq, { out: { gradKey: reuse } });
layer.dispose();

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
const workerHalves = await worker.scaledDotProductAttentionGrad(hq, hq, hq, hq, { softcap: 3, window: { left: 2 } });
const workerGradQuery: Uint16Array = workerHalves.gradQuery.data;
const workerTurned: Uint16Array = (await worker.applyRotaryEmbeddingGrad(hq, { positionOffset: 1 })).data;
const workerScores: OutputTensor | undefined = (await worker.scaledDotProductAttention(q, q, q, { returnScores: 'softcapped', softcap: 20 })).scores;
void workerGradQuery; void workerTurned; void workerScores;
const workerCache = await worker.createKvCache({ kvHeads: 2, headDim: 64, capacity: 8, rolling: true, rotary: true, dtype: 'float16' });
await workerCache.append(kvHalves, kvHalves, { counts: [3, 1] });
const workerLengths: Int32Array<ArrayBuffer> = await workerCache.lengths();
const workerPositions: Int32Array<ArrayBuffer> = await workerCache.positions();
const workerAttended: Uint16Array = (await workerCache.attend(hq4, { isCausal: true, alibiSlopes: [1, 2, 3, 4] })).output.data;
void workerLengths; void workerPositions; void workerAttended;
// @ts-expect-error the worker's lengths is a call
const notCalled: Int32Array = workerCache.lengths;
void notCalled;
// @ts-expect-error returnScores names a stage
await worker.scaledDotProductAttention(q, q, q, { returnScores: 'raw' });
// @ts-expect-error a float16 call through the worker returns halves
const notFloatRemote: Float32Array = (await worker.scaledDotProductAttention(hq, hq, hq)).output.data;
void notFloatRemote;
await workerCache.dispose();
const remoteLayer = await worker.createTransformerEncoderLayer({ dModel: 64, nhead: 8 });
const remoteKept = await remoteLayer.forward(src, { saveForBackward: true });
await remoteLayer.backward(src, remoteKept.output, { saved: remoteKept.saved });
// @ts-expect-error the worker cannot write into this thread's arrays
await remoteLayer.backward(src, src, { out: { gradSrc: keptGrad } });
// @ts-expect-error a forward kept in the worker is spent by the worker's backward, not the page's
layer.backward(src, src, { saved: remoteKept.saved });
// @ts-expect-error without saveForBackward there is no `saved`
void (await remoteLayer.forward(src)).saved;
await remoteLayer.dispose();
await worker.terminate();
