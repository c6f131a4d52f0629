/// <reference lib="esnext.disposable" />
// Type declarations for xattn (ESM). Dimension legend: B batch, H heads, L query length,
// S key length, E query/key dim, Ev value dim; "…" any leading dims.

/** Plain data: row-major and contiguous; data.length equals the product of shape. */
export interface Tensor {
  data: Float32Array;
  shape: number[];
}

/** Uint8Array = boolean (non-zero = true); Float32Array = added to the scaled scores. */
export interface Mask {
  data: Uint8Array | Float32Array;
  shape: number[];
}

export interface SdpaOptions {
  /** Broadcasts to (…, L, S). Boolean: true = this query may attend to this key. */
  attnMask?: Mask;
  /** Query i sees key j when j <= i (top-left) or j <= i + S - L (bottom-right). Not with attnMask. */
  isCausal?: boolean;
  /** Only with isCausal: true. Default 'top-left'. */
  causalAlignment?: 'top-left' | 'bottom-right';
  /** Default 1/sqrt(E); its float32 value must be finite and non-zero. */
  scale?: number;
  /** In [0, 1); applied to the weights, kept weights scaled by 1/(1 - p). */
  dropoutP?: number;
  /** Integer in [0, 2^53): the same seed drops the same weights. Default 0. */
  seed?: number;
  /** Query heads Hq (dim -3) may be a multiple of key/value heads. */
  enableGqa?: boolean;
  /** Also return the weights (…, L, S). Default false. */
  needWeights?: boolean;
}

export interface AttentionResult {
  /** (…, L, Ev) for SDPA; the query's layout for MultiheadAttention. */
  output: Tensor;
  /** Present when weights were asked for. */
  weights?: Tensor;
}

export interface GradientResult {
  /** The forward output (…, L, Ev). */
  output: Tensor;
  /** Shaped like query, key and value. */
  gradQuery: Tensor;
  gradKey: Tensor;
  gradValue: Tensor;
  /** Present with needWeights. */
  weights?: Tensor;
}

export interface MultiheadAttentionConfig {
  embedDim: number;
  numHeads: number;
  /** Default embedDim. */
  kdim?: number;
  /** Default embedDim. */
  vdim?: number;
  /** Default true. */
  bias?: boolean;
  /** Inputs (N, L, E) instead of (L, N, E). Default false. */
  batchFirst?: boolean;
  addBiasKv?: boolean;
  addZeroAttn?: boolean;
  /** Integer in [0, 2^53): seeds the default initialisation (PyTorch's distributions). Default 0. */
  initSeed?: number;
  /** PyTorch's `dropout`: in [0, 1), on the attention weights of calls made with `training: true`. Default 0. */
  dropout?: number;
}

/** PyTorch's state-dict names in camelCase; any subset may be given. */
export interface MultiheadAttentionParameters {
  /** (3E, E), when kdim = vdim = embedDim. */
  inProjWeight?: Float32Array;
  /** (3E), with bias. */
  inProjBias?: Float32Array;
  /** (E, E), when kdim or vdim differs from embedDim. */
  qProjWeight?: Float32Array;
  /** (E, kdim). */
  kProjWeight?: Float32Array;
  /** (E, vdim). */
  vProjWeight?: Float32Array;
  /** (E, E). */
  outProjWeight?: Float32Array;
  /** (E), with bias. */
  outProjBias?: Float32Array;
  /** (1, 1, E), with addBiasKv. */
  biasK?: Float32Array;
  /** (1, 1, E), with addBiasKv. */
  biasV?: Float32Array;
}

export interface MultiheadAttentionForwardOptions {
  /** (N, S) or (S,) unbatched. Boolean: true = ignore this key. */
  keyPaddingMask?: Mask;
  /** (L, S) or (N·numHeads, L, S). Boolean: true = NOT allowed (the opposite of SDPA's polarity). */
  attnMask?: Mask;
  /** Default true. */
  needWeights?: boolean;
  /** Weights (N, L, S) averaged over heads, or (N, H, L, S). Default true. */
  averageAttnWeights?: boolean;
  /** Builds the causal mask when no attnMask is given. */
  isCausal?: boolean;
  /** Apply the module's dropout (PyTorch's module.train()). Default false (module.eval()). */
  training?: boolean;
  /** Integer in [0, 2^53): with training, the same seed drops the same weights. Default 0. */
  seed?: number;
}

/** The backward's options: the forward's, without the weights. */
export type MultiheadAttentionBackwardOptions = Omit<MultiheadAttentionForwardOptions, 'needWeights' | 'averageAttnWeights'>;

export interface MultiheadAttentionGradients {
  /** The forward output, laid out like query. */
  output: Tensor;
  /** Shaped like query, key and value. */
  gradQuery: Tensor;
  gradKey: Tensor;
  gradValue: Tensor;
  /** Every parameter's gradient, named and laid out as setParameters takes it. */
  gradParameters: MultiheadAttentionParameters;
}

export interface MultiheadAttention {
  setParameters(p: MultiheadAttentionParameters): void;
  forward(query: Tensor, key: Tensor, value: Tensor, options?: MultiheadAttentionForwardOptions): AttentionResult;
  /**
   * The gradients of Σ gradOutput ⊙ output with respect to query, key, value and every parameter.
   * gradOutput is shaped like the output (like query).
   */
  backward(query: Tensor, key: Tensor, value: Tensor, gradOutput: Tensor,
    options?: MultiheadAttentionBackwardOptions): MultiheadAttentionGradients;
  /** The configuration it was created with, every default filled in. */
  readonly config: Required<MultiheadAttentionConfig>;
  /**
   * Frees its wasm memory now; later calls throw. Idempotent. A module that is never disposed is freed
   * when garbage-collected.
   */
  dispose(): void;
  /** The same as dispose(), for `using mha = xa.createMultiheadAttention(…)`. */
  [Symbol.dispose](): void;
}

export interface Xattn {
  /** Which build is running. */
  readonly simd: boolean;
  readonly version: string;
  /** Current size of the module's linear memory. */
  memoryBytes(): number;
  scaledDotProductAttention(query: Tensor, key: Tensor, value: Tensor, options?: SdpaOptions): AttentionResult;
  /** The backward pass: gradients of Σ gradOutput ⊙ output with respect to query, key and value. */
  scaledDotProductAttentionGrad(query: Tensor, key: Tensor, value: Tensor, gradOutput: Tensor,
    options?: SdpaOptions): GradientResult;
  createMultiheadAttention(config: MultiheadAttentionConfig): MultiheadAttention;
}

/** Loads a build: SIMD when the engine has it, unless { simd } forces one. */
export function createXattn(options?: { simd?: boolean }): Promise<Xattn>;
export default createXattn;
