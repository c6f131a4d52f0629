/// <reference lib="esnext.disposable" />
// Type declarations for 'xattn/worker' (ESM): the xattn API run in a Worker, every method returning a Promise.
// The tensor, option and result types are the main entry's (index.d.ts), without `out`: the worker cannot
// write into the calling thread's arrays (js/worker-client.js refuses it).
import type {
  AttentionResult, AttentionResultWithWeights, AttentionResultWithoutWeights, GradientResult, GradientResultWithWeights,
  HalfArray, HalfAttentionResult, HalfGradientResult, HalfOutputTensor, HalfTensor, KvAppendOptions, RotaryOptions, SdpaResult,
  KvAttendOptions, KvCache, KvCacheConfig, LoadStateDictOptions, MultiheadAttention, OutputTensor, ResolvedKvCacheConfig, MultiheadAttentionBackwardOptions, MultiheadAttentionConfig, MultiheadAttentionForwardOptions,
  MultiheadAttentionGradients, MultiheadAttentionParameters,
  ResolvedMultiheadAttentionConfig, SdpaGradOptions, SdpaOptions, StateDict, StateDictSource, Tensor, XattnOptions,
  LayerNormGradOptions, LayerNormGradients, LayerNormOptions, LinearGradients, ResolvedTransformerEncoderLayerConfig,
  TransformerEncoderLayerBackwardOptions, TransformerEncoderLayerConfig, TransformerEncoderLayerForwardOptions,
  TransformerEncoderLayerGradients, TransformerEncoderLayerParameters, OutputResult, TransformerEncoderLayer,
  TransformerEncoderLayerSavingOptions,
} from './index.js';

/** What the calls need of an `AbortSignal` (the DOM's and Node's both fit). */
export interface AbortSignalLike {
  /** Whether the call is cancelled. */
  readonly aborted: boolean;
  /** The rejection's reason; without one the call rejects with an Error named `AbortError`. */
  readonly reason?: unknown;
  /** Called with `'abort'` to be told when the signal aborts. */
  addEventListener(type: 'abort', listener: () => void, options?: { once?: boolean }): void;
  /** Called with `'abort'` once the call has settled. */
  removeEventListener(type: 'abort', listener: () => void): void;
}

/** The last argument of every worker method. */
export interface CallOptions {
  /**
   * Cancels the call: while it waits in the queue it is removed and never runs; once it runs, it finishes in the
   * worker but its Promise rejects at once. Rejects with `signal.reason` (an `AbortError` by default).
   */
  signal?: AbortSignalLike | undefined;
  /**
   * Move the input buffers to the worker instead of copying them: the caller's typed arrays (their whole
   * ArrayBuffers) are detached when the call is made. SharedArrayBuffer-backed arrays are shared, never moved.
   * Default false: inputs are copied when the call is made, so later changes to them do not reach it.
   */
  transfer?: boolean | undefined;
}

/** A {@link MultiheadAttention} living in the worker: the same methods, returning Promises. */
export interface MultiheadAttentionWorker {
  /** See MultiheadAttention.setParameters. */
  setParameters(parameters: MultiheadAttentionParameters, call?: CallOptions): Promise<void>;
  /** See MultiheadAttention.loadStateDict: the source is copied (or moved, with `transfer`) to the worker. */
  loadStateDict(source: StateDictSource, options?: LoadStateDictOptions, call?: CallOptions): Promise<void>;
  /** See MultiheadAttention.parameters. */
  parameters(call?: CallOptions): Promise<StateDict>;
  /** See MultiheadAttention.forward; the weights are returned unless `needWeights: false`. */
  forward(query: Tensor, key: Tensor, value: Tensor,
    options: Omit<MultiheadAttentionForwardOptions, 'out'> & { needWeights: false },
    call?: CallOptions): Promise<AttentionResultWithoutWeights>;
  /** See MultiheadAttention.forward: with the weights (the default). */
  forward(query: Tensor, key: Tensor, value: Tensor,
    options?: Omit<MultiheadAttentionForwardOptions, 'out'> & { needWeights?: true | undefined },
    call?: CallOptions): Promise<AttentionResultWithWeights>;
  /** See MultiheadAttention.forward. */
  forward(query: Tensor, key: Tensor, value: Tensor, options?: Omit<MultiheadAttentionForwardOptions, 'out'>,
    call?: CallOptions): Promise<AttentionResult>;
  /** See MultiheadAttention.backward. */
  backward(query: Tensor, key: Tensor, value: Tensor, gradOutput: Tensor,
    options?: Omit<MultiheadAttentionBackwardOptions, 'out'>, call?: CallOptions): Promise<MultiheadAttentionGradients>;
  /** The configuration, every default filled in. */
  readonly config: ResolvedMultiheadAttentionConfig;
  /** Frees the module in the worker (after the calls queued before it); later calls reject. Idempotent. */
  dispose(): Promise<void>;
  /** The same as dispose(), for `await using`. */
  [Symbol.asyncDispose](): Promise<void>;
}

/** What {@link TransformerEncoderLayerWorker.forward} resolves to with `saveForBackward`. */
export interface SavedForwardResultWorker extends OutputResult {
  /** Pass it as the backward's `options.saved`. */
  saved: SavedForwardWorker;
}

/** A forward's kept activations, kept in the worker (see SavedForward); spent by the backward given it. */
export interface SavedForwardWorker {
  /** Frees them in the worker; a backward given this token afterwards rejects. Idempotent. */
  dispose(): Promise<void>;
  /** The same as dispose(), for `await using`. */
  [Symbol.asyncDispose](): Promise<void>;
}

/** A {@link TransformerEncoderLayer} living in the worker: the same methods, returning Promises. */
export interface TransformerEncoderLayerWorker {
  /** See TransformerEncoderLayer.setParameters. */
  setParameters(parameters: TransformerEncoderLayerParameters, call?: CallOptions): Promise<void>;
  /** See TransformerEncoderLayer.loadStateDict: the source is copied (or moved, with `transfer`) to the worker. */
  loadStateDict(source: StateDictSource, options?: LoadStateDictOptions, call?: CallOptions): Promise<void>;
  /** See TransformerEncoderLayer.parameters. */
  parameters(call?: CallOptions): Promise<StateDict>;
  /** See TransformerEncoderLayer.forward; with `saveForBackward`, the activations are kept in the worker. */
  forward(src: Tensor, options: Omit<TransformerEncoderLayerSavingOptions, 'out'>,
    call?: CallOptions): Promise<SavedForwardResultWorker>;
  /** See TransformerEncoderLayer.forward: the output only. */
  forward(src: Tensor, options?: Omit<TransformerEncoderLayerForwardOptions, 'out'>,
    call?: CallOptions): Promise<OutputResult>;
  /** See TransformerEncoderLayer.backward. */
  backward(src: Tensor, gradOutput: Tensor,
    options?: Omit<TransformerEncoderLayerBackwardOptions, 'saved' | 'out'> & { saved?: SavedForwardWorker | undefined },
    call?: CallOptions): Promise<TransformerEncoderLayerGradients>;
  /** The configuration, every default filled in. */
  readonly config: ResolvedTransformerEncoderLayerConfig;
  /** Frees the layer in the worker (after the calls queued before it); later calls reject. Idempotent. */
  dispose(): Promise<void>;
  /** The same as dispose(), for `await using`. */
  [Symbol.asyncDispose](): Promise<void>;
}

/** A {@link KvCache} living in the worker: the same methods, returning Promises. */
export interface KvCacheWorker {
  /** See KvCache.append. */
  append(key: Tensor | HalfTensor, value: Tensor | HalfTensor, options?: KvAppendOptions, call?: CallOptions): Promise<void>;
  /** See KvCache.attend: with the weights. */
  attend(query: Tensor, options: Omit<KvAttendOptions, 'out'> & { needWeights: true },
    call?: CallOptions): Promise<AttentionResultWithWeights>;
  /** See KvCache.attend. */
  attend(query: Tensor, options?: Omit<KvAttendOptions, 'out'>, call?: CallOptions): Promise<AttentionResult>;
  /** See KvCache.attend: a query of halves. */
  attend<H extends HalfArray>(query: HalfTensor<H>, options?: Omit<KvAttendOptions, 'out'>,
    call?: CallOptions): Promise<HalfAttentionResult<H>>;
  /** See KvCache.truncate. */
  truncate(length: number | Int32Array | readonly number[], call?: CallOptions): Promise<void>;
  /** See KvCache.keys. */
  keys(call?: CallOptions): Promise<OutputTensor>;
  /** See KvCache.values. */
  values(call?: CallOptions): Promise<OutputTensor>;
  /** Positions held (the cache lives in the worker, so this is a call). */
  length(call?: CallOptions): Promise<number>;
  /** Positions each batch element holds (see KvCache.lengths). */
  lengths(call?: CallOptions): Promise<Int32Array<ArrayBuffer>>;
  /** Each batch element's next position (see KvCache.positions). */
  positions(call?: CallOptions): Promise<Int32Array<ArrayBuffer>>;
  /** Positions it can hold. */
  readonly capacity: number;
  /** The configuration, every default filled in. */
  readonly config: ResolvedKvCacheConfig;
  /** Frees the cache in the worker (after the calls queued before it); later calls reject. Idempotent. */
  dispose(): Promise<void>;
  /** The same as dispose(), for `await using`. */
  [Symbol.asyncDispose](): Promise<void>;
}

/** The xattn API in a Worker: what {@link createXattnWorker} resolves to. Calls run one at a time, in order. */
export interface XattnWorker {
  /** Whether the worker runs the SIMD build. */
  readonly simd: boolean;
  /** Whether the worker runs the relaxed-SIMD variant of it (see {@link XattnOptions.relaxedSimd}). */
  readonly relaxedSimd: boolean;
  /** How many threads the worker's instance runs (see {@link XattnOptions.threads}). */
  readonly threads: number;
  /** How long its helper threads poll before they sleep (see {@link XattnOptions.spinMicroseconds}). */
  readonly spinMicroseconds: number;
  /** The kernels the worker's instance runs (see Xattn.kernels). */
  readonly kernels: string;
  /** The package version. */
  readonly version: string;
  /** Calls made and not yet settled, the running one included. */
  readonly pendingCalls: number;
  /** The worker instance's WebAssembly memory, in bytes. */
  memoryBytes(call?: CallOptions): Promise<number>;
  /** See Xattn.scaledDotProductAttention; rejects with the same TypeError or RangeError. */
  scaledDotProductAttention(query: Tensor, key: Tensor, value: Tensor,
    options: Omit<SdpaOptions, 'out'> & { needWeights: true }, call?: CallOptions): Promise<AttentionResultWithWeights & SdpaResult>;
  /** See Xattn.scaledDotProductAttention; the weights only with `needWeights: true`. */
  scaledDotProductAttention(query: Tensor, key: Tensor, value: Tensor, options?: Omit<SdpaOptions, 'out'>,
    call?: CallOptions): Promise<SdpaResult>;
  /** See Xattn.scaledDotProductAttention: on halves. */
  scaledDotProductAttention<H extends HalfArray>(query: HalfTensor<H>, key: HalfTensor<H>, value: HalfTensor<H>,
    options?: Omit<SdpaOptions, 'out'>, call?: CallOptions): Promise<HalfAttentionResult<H>>;
  /** See Xattn.scaledDotProductAttentionGrad. */
  scaledDotProductAttentionGrad(query: Tensor, key: Tensor, value: Tensor, gradOutput: Tensor,
    options: Omit<SdpaGradOptions, 'out'> & { needWeights: true }, call?: CallOptions): Promise<GradientResultWithWeights>;
  /** See Xattn.scaledDotProductAttentionGrad. */
  scaledDotProductAttentionGrad(query: Tensor, key: Tensor, value: Tensor, gradOutput: Tensor,
    options?: Omit<SdpaGradOptions, 'out'>, call?: CallOptions): Promise<GradientResult>;
  /** See Xattn.scaledDotProductAttentionGrad: on halves. */
  scaledDotProductAttentionGrad<H extends HalfArray>(query: HalfTensor<H>, key: HalfTensor<H>, value: HalfTensor<H>,
    gradOutput: HalfTensor<H>, options?: Omit<SdpaGradOptions, 'out'>, call?: CallOptions): Promise<HalfGradientResult<H>>;
  /** See Xattn.applyRotaryEmbedding. */
  applyRotaryEmbedding(x: Tensor, options?: RotaryOptions, call?: CallOptions): Promise<OutputTensor>;
  /** See Xattn.applyRotaryEmbedding: on halves. */
  applyRotaryEmbedding<H extends HalfArray>(x: HalfTensor<H>, options?: RotaryOptions,
    call?: CallOptions): Promise<HalfOutputTensor<H>>;
  /** See Xattn.applyRotaryEmbeddingGrad. */
  applyRotaryEmbeddingGrad(gradOutput: Tensor, options?: RotaryOptions, call?: CallOptions): Promise<OutputTensor>;
  /** See Xattn.applyRotaryEmbeddingGrad: on halves. */
  applyRotaryEmbeddingGrad<H extends HalfArray>(gradOutput: HalfTensor<H>, options?: RotaryOptions,
    call?: CallOptions): Promise<HalfOutputTensor<H>>;
  /** See Xattn.createMultiheadAttention: the module lives in the worker. */
  createMultiheadAttention(config: MultiheadAttentionConfig, call?: CallOptions): Promise<MultiheadAttentionWorker>;
  /** See Xattn.createKvCache: the cache lives in the worker. */
  createKvCache(config: KvCacheConfig, call?: CallOptions): Promise<KvCacheWorker>;
  /** See Xattn.linear. */
  linear(input: Tensor, weight: Tensor, bias?: Tensor | null, options?: Record<string, never>,
    call?: CallOptions): Promise<OutputResult>;
  /** See Xattn.linearGrad. */
  linearGrad(input: Tensor, weight: Tensor, bias: Tensor | null | undefined, gradOutput: Tensor,
    call?: CallOptions): Promise<LinearGradients>;
  /** See Xattn.layerNorm. */
  layerNorm(input: Tensor, normalizedShape: readonly number[], options?: Omit<LayerNormOptions, 'out'>,
    call?: CallOptions): Promise<OutputResult>;
  /** See Xattn.layerNormGrad. */
  layerNormGrad(input: Tensor, normalizedShape: readonly number[], gradOutput: Tensor,
    options?: Omit<LayerNormGradOptions, 'out'>, call?: CallOptions): Promise<LayerNormGradients>;
  /** See Xattn.createTransformerEncoderLayer: the layer lives in the worker. */
  createTransformerEncoderLayer(config: TransformerEncoderLayerConfig,
    call?: CallOptions): Promise<TransformerEncoderLayerWorker>;
  /** Stops the worker: the running and queued calls, and every later one, reject. */
  terminate(): Promise<void>;
  /** The same as terminate(): the name an instance in this thread (`Xattn`) has for it. */
  dispose(): Promise<void>;
  /** The same as terminate(), for `await using`. */
  [Symbol.asyncDispose](): Promise<void>;
}

/**
 * Starts xattn in a Worker (a module Worker in pages and bundlers, a worker_threads Worker in Node) and resolves
 * once it is ready. Arguments are copied when a call is made (or moved, with `{ transfer: true }`); results come
 * back by transfer. In Node an idle worker does not keep the process alive. `wasmPaths` is read on the calling
 * thread (a relative base against the page's base URL, not the worker script's; a function called there for every
 * file any build may load) and tells the worker where the files are (see {@link XattnOptions.wasmPaths}); the
 * Worker's own script is not among them. Where the package is loaded from another origin than the page's (a CDN
 * that sends `Access-Control-Allow-Origin`), the Worker is a module of the page's origin that imports its script.
 * @throws (rejects) TypeError for bad options (a `wasmPaths` that is not a base or a function, or whose function
 *   returns something else); Error when the worker or the WebAssembly build cannot start (a file that cannot be
 *   had is named).
 */
export function createXattnWorker(options?: XattnOptions): Promise<XattnWorker>;
export default createXattnWorker;
