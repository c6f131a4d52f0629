// Type declarations for xattn under require('xattn'): the same API as index.d.ts, where
// module.exports is the createXattn function itself (with .createXattn and .default pointing to it).
type CreateXattn = (options?: { simd?: boolean }) => Promise<createXattn.Xattn>;

/** Loads a build: SIMD when the engine has it, unless { simd } forces one. */
declare const createXattn: CreateXattn & { createXattn: CreateXattn; default: CreateXattn };

declare namespace createXattn {
  /** Plain data: row-major and contiguous; data.length equals the product of shape. */
  interface Tensor {
    data: Float32Array;
    shape: number[];
  }

  /** Uint8Array = boolean (non-zero = true); Float32Array = added to the scaled scores. */
  interface Mask {
    data: Uint8Array | Float32Array;
    shape: number[];
  }

  interface SdpaOptions {
    /** Broadcasts to (…, L, S). Boolean: true = this query may attend to this key. */
    attnMask?: Mask;
    /** Query i sees key j when j <= i (top-left) or j <= i + S - L (bottom-right). Not with attnMask. */
    isCausal?: boolean;
    causalAlignment?: 'top-left' | 'bottom-right';
    /** Default 1/sqrt(E); finite and non-zero. */
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

  interface AttentionResult {
    /** (…, L, Ev) for SDPA; the query's layout for MultiheadAttention. */
    output: Tensor;
    /** Present when weights were asked for. */
    weights?: Tensor;
  }

  interface GradientResult {
    /** The forward output (…, L, Ev). */
    output: Tensor;
    /** Shaped like query, key and value. */
    gradQuery: Tensor;
    gradKey: Tensor;
    gradValue: Tensor;
    /** Present with needWeights. */
    weights?: Tensor;
  }

  interface MultiheadAttentionConfig {
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
  }

  /** PyTorch's state-dict names in camelCase; any subset may be given. */
  interface MultiheadAttentionParameters {
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

  interface MultiheadAttentionForwardOptions {
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
  }

  interface MultiheadAttention {
    setParameters(p: MultiheadAttentionParameters): void;
    forward(query: Tensor, key: Tensor, value: Tensor, options?: MultiheadAttentionForwardOptions): AttentionResult;
    /** Frees its wasm memory; later calls throw. */
    dispose(): void;
  }

  interface Xattn {
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
}

export = createXattn;
