/// <reference lib="esnext.disposable" />
// Type declarations for xattn (ESM); they need TypeScript 5.7 or later (generic typed arrays).
// Dimension legend: B batch, H heads, L query length, S key/value length, E query/key dim (embedDim for
// MultiheadAttention), Ev value dim; "…" any number of leading dims.

/**
 * An input tensor: plain data, row-major and contiguous.
 *
 * `data.length` must equal the product of `shape`. Any Float32Array works: a subarray of a larger buffer, one
 * over a SharedArrayBuffer, one from another realm (an iframe, `node:vm`). Each tensor is read once per call.
 */
export interface Tensor {
  /** The values, row-major. */
  data: Float32Array;
  /** The dims: integers in [0, 2^31), at most 16 of them; a `readonly` array or tuple is fine. */
  shape: readonly number[];
}

/**
 * IEEE half-precision values: a Uint16Array of their bits, or a Float16Array where the runtime has one. Calls that
 * take halves (scaledDotProductAttention and its gradient, KvCache.append / attend, applyRotaryEmbedding) compute in
 * float32 and return halves (rounded to nearest even) in the same class as their first tensor's.
 */
export type HalfArray = Uint16Array | (typeof globalThis extends {
  /** The runtime's Float16Array class, where it has one. */
  Float16Array: {
    /** Its arrays: what a float16 tensor may hold besides a Uint16Array. */
    new (...args: never[]): infer F;
  };
} ? F : never);

/** A {@link Tensor} of halves: every tensor of a float16 call is one (a Float32Array among them is refused). */
export interface HalfTensor<H extends HalfArray = HalfArray> {
  /** The values' bits (Uint16Array) or values (Float16Array), row-major. */
  data: H;
  /** The dims, as for {@link Tensor}. */
  shape: readonly number[];
}

/** A result of a float16 call: `data` is a fresh array of the class its inputs were. */
export interface HalfOutputTensor<H extends HalfArray = HalfArray> {
  /** The values, row-major, as halves. */
  data: H;
  /** The dims. */
  shape: number[];
}

/**
 * A result tensor: `data` is a fresh Float32Array over its own ArrayBuffer, owned by the caller (never a
 * view of WebAssembly memory), so `data.buffer` is an `ArrayBuffer` and `data` is a `BlobPart`.
 * It is also a valid {@link Tensor} input.
 */
export interface OutputTensor {
  /** The values, row-major. */
  data: Float32Array<ArrayBuffer>;
  /** The dims. */
  shape: number[];
}

/**
 * A mask that broadcasts to the weights' shape.
 *
 * A Uint8Array is boolean (non-zero = true); its polarity depends on the function: for
 * `scaledDotProductAttention` true = **may attend**, for `MultiheadAttention.forward` true = **masked out**
 * (both as in PyTorch). A Float32Array is added to the scaled scores (`-Infinity` forbids).
 */
export interface Mask {
  /** Uint8Array: boolean; Float32Array: added to the scores. */
  data: Uint8Array | Float32Array;
  /** The dims, as for {@link Tensor}. */
  shape: readonly number[];
}

/** The option of the forward calls (scaledDotProductAttention, MultiheadAttention.forward, KvCache.attend). */
export interface OutOption {
  /**
   * Write the output into this array instead of a fresh one, and return it as `output.data` (no new array, no
   * new memory pages: for calls repeated with one output shape). A Float32Array over an ArrayBuffer (not a
   * SharedArrayBuffer) of exactly the output's length (else TypeError / RangeError, and nothing is written); it
   * may be an input's own array. The weights, when asked for, still come as a fresh array. Not through a worker.
   */
  out?: Float32Array<ArrayBuffer> | undefined;
}

/**
 * A sliding window (ONNX Attention's / FlashAttention's `window_size`): query i, at position p = i (top-left) or
 * p = i + S − L (bottom-right, see `causalAlignment`), sees key j when p − left ≤ j ≤ p + right. −1 (the default of
 * either side) leaves that side unbounded; `{ left: w, right: 0 }` is a causal window of w + 1 keys.
 */
export interface AttentionWindow {
  /** Keys before the query's position it may see: an integer ≥ −1; −1 unbounded. Default −1. */
  left?: number | undefined;
  /** Keys after the query's position it may see: an integer ≥ −1; −1 unbounded. Default −1. */
  right?: number | undefined;
}

/**
 * The rules beside the mask, shared by scaledDotProductAttention, MultiheadAttention and KvCache.attend. The
 * scores are scaled, then soft-capped, then the mask, the causal rule, the window, ALiBi and the key lengths
 * apply; softmax; a row that sees no key gives output 0, weights 0 and gradient 0 (never NaN).
 */
export interface AttentionRules {
  /**
   * Soft-capping (Gemma 2, ONNX Attention's `softcap`): scores become c · tanh(scores / c) before any mask; a
   * positive number, 0 for none. Default 0.
   */
  softcap?: number | undefined;
  /** A sliding window of keys around each query's position; see {@link AttentionWindow}. Default: no window. */
  window?: AttentionWindow | undefined;
  /**
   * ALiBi: one slope m_h per query head (dim −3; 1 for a 2-D query), adding m_h · (j − p) to the score of key j
   * for the query at position p (p placed as `causalAlignment` says). Finite numbers. Default: none.
   */
  alibiSlopes?: Float32Array | readonly number[] | undefined;
}

/** Options of {@link Xattn.scaledDotProductAttention}; without `out` and `returnScores`, of its gradient ({@link SdpaGradOptions}). */
export interface SdpaOptions extends OutOption, AttentionRules {
  /**
   * Broadcasts to (…, L, S). Boolean: **true = this query may attend to this key** (PyTorch's SDPA polarity);
   * float: added to the scaled (and soft-capped) scores. With `isCausal` both apply. Default: no mask.
   */
  attnMask?: Mask | undefined;
  /**
   * Hides the keys after each query: query i sees key j when j ≤ i (top-left) or j ≤ i + S − L
   * (bottom-right, see `causalAlignment`). Together with `attnMask`, both apply (ONNX Attention's rule).
   * Default false.
   */
  isCausal?: boolean | undefined;
  /**
   * Where the queries sit among the keys, for `isCausal`, `window` and `alibiSlopes`: `'top-left'` (query i at
   * position i; PyTorch's `is_causal`) or `'bottom-right'` (query i at i + S − L: the last query is the last key;
   * PyTorch's `causal_lower_right`, ONNX Attention's and FlashAttention's rule). With `keyLengths`, bottom-right
   * aligns each batch element to its own length. Default `'top-left'`.
   */
  causalAlignment?: 'top-left' | 'bottom-right' | undefined;
  /**
   * Keys per batch element (the dims before −3, flattened; one element for a 2-D or 3-D query): key j ≥
   * keyLengths[b] is padding, never seen (ONNX Attention's `nonpad_kv_seqlen`). Integers in [0, S]. Default: all S.
   */
  keyLengths?: Int32Array | readonly number[] | undefined;
  /**
   * Also return the scores (…, L, S) at a stage (ONNX Attention's `qk_matmul_output`): `'scaled'` (Q·Kᵀ times
   * scale), `'softcapped'` (after `softcap`), `'biased'` (after the mask, the causal rule, the window, ALiBi and the
   * key lengths: hidden cells are −Infinity). Before softmax and dropout. Default: none.
   */
  returnScores?: 'scaled' | 'softcapped' | 'biased' | undefined;
  /** Multiplies the scores. Default 1/√E; its float32 value must be finite and non-zero (else RangeError). */
  scale?: number | undefined;
  /**
   * Dropout on the weights, in [0, 1) (else RangeError); kept weights are scaled by 1/(1 − p). Default 0.
   * Which weights drop is a pure function of `seed` and the position (PyTorch's random stream is not reproduced).
   */
  dropoutP?: number | undefined;
  /** Dropout seed, an integer in [0, 2^53): the same seed drops the same weights. Default 0. */
  seed?: number | undefined;
  /**
   * Grouped-query attention: query heads Hq (dim −3) may be a multiple of the key/value heads Hkv; query head h
   * reads key/value head ⌊h / (Hq/Hkv)⌋. Default false.
   */
  enableGqa?: boolean | undefined;
  /** Also return the weights (…, L, S), after dropout. Default false. */
  needWeights?: boolean | undefined;
}

/** Options of {@link Xattn.scaledDotProductAttentionGrad}: the forward's without `returnScores`, and `out` by result. */
export interface SdpaGradOptions extends Omit<SdpaOptions, 'out' | 'returnScores'> {
  /** Arrays for some of the results ({@link SdpaGradOut}); float32 calls only. */
  out?: SdpaGradOut | undefined;
}

/**
 * The `out` of a backward: arrays for some of its results, by the result's name. Each array given receives that result instead of a fresh
 * array and comes back as its data (no new array, no new memory pages: for a training loop's repeated calls): a
 * Float32Array over an ArrayBuffer (not a SharedArrayBuffer) of exactly the result's length, each result its own
 * array (else TypeError / RangeError naming the field, and nothing is written). The results not given come as
 * fresh arrays. Not through a worker.
 */
export interface SdpaGradOut {
  /** For the forward output (…, L, Ev). */
  output?: Float32Array<ArrayBuffer> | undefined;
  /** For ∂/∂query, the query's length. */
  gradQuery?: Float32Array<ArrayBuffer> | undefined;
  /** For ∂/∂key, the key's length. */
  gradKey?: Float32Array<ArrayBuffer> | undefined;
  /** For ∂/∂value, the value's length. */
  gradValue?: Float32Array<ArrayBuffer> | undefined;
}

/** What attention returns: the output, and the weights when they were asked for. */
export interface AttentionResult {
  /** (…, L, Ev) for SDPA; shaped like the query for MultiheadAttention. */
  output: OutputTensor;
  /** (…, L, S) for SDPA; (N, L, S) or (N, H, L, S) for MultiheadAttention. Present when weights were asked for. */
  weights?: OutputTensor | undefined;
}

/** {@link AttentionResult} when the weights were asked for. */
export interface AttentionResultWithWeights extends AttentionResult {
  /** (…, L, S) for SDPA; (N, L, S) averaged over heads or (N, H, L, S) for MultiheadAttention. */
  weights: OutputTensor;
}

/** {@link AttentionResult} of a call made with `needWeights: false`. */
export interface AttentionResultWithoutWeights extends AttentionResult {
  weights?: undefined;
}

/** What {@link Xattn.scaledDotProductAttention} returns: with `returnScores`, the scores too. */
export interface SdpaResult extends AttentionResult {
  /** (…, L, S): the scores at the stage `returnScores` asked for. */
  scores?: OutputTensor | undefined;
}

/** What a float16 call of scaledDotProductAttention (or KvCache.attend) returns: every tensor as halves. */
export interface HalfAttentionResult<H extends HalfArray = HalfArray> {
  /** (…, L, Ev). */
  output: HalfOutputTensor<H>;
  /** (…, L, S), with `needWeights: true`. */
  weights?: HalfOutputTensor<H> | undefined;
  /** (…, L, S), with `returnScores`. */
  scores?: HalfOutputTensor<H> | undefined;
}

/** What {@link Xattn.scaledDotProductAttentionGrad} returns. */
export interface GradientResult {
  /** The forward output (…, L, Ev). */
  output: OutputTensor;
  /** ∂/∂query of Σ gradOutput ⊙ output: (…, L, E), shaped like the query. */
  gradQuery: OutputTensor;
  /** ∂/∂key: (…, S, E), shaped like the key (under GQA, summed over the query heads that read each key head). */
  gradKey: OutputTensor;
  /** ∂/∂value: (…, S, Ev), shaped like the value. */
  gradValue: OutputTensor;
  /** The forward weights (…, L, S), with `needWeights: true`. */
  weights?: OutputTensor | undefined;
}

/** {@link GradientResult} when the weights were asked for. */
export interface GradientResultWithWeights extends GradientResult {
  weights: OutputTensor;
}

/** What a float16 call of scaledDotProductAttentionGrad returns: every tensor as halves. */
export interface HalfGradientResult<H extends HalfArray = HalfArray> {
  /** The forward output, (…, L, Ev). */
  output: HalfOutputTensor<H>;
  /** ∂/∂query, (…, L, E). */
  gradQuery: HalfOutputTensor<H>;
  /** ∂/∂key, (…, S, E). */
  gradKey: HalfOutputTensor<H>;
  /** ∂/∂value, (…, S, Ev). */
  gradValue: HalfOutputTensor<H>;
  /** The attention weights (…, L, S), with `needWeights`. */
  weights?: HalfOutputTensor<H> | undefined;
}

/** The configuration of {@link Xattn.createMultiheadAttention}, as `torch.nn.MultiheadAttention` takes it. */
export interface MultiheadAttentionConfig {
  /** E, the model dim: an integer ≥ 1, a multiple of `numHeads`. */
  embedDim: number;
  /** H, the number of heads: an integer ≥ 1 that divides `embedDim`. */
  numHeads: number;
  /** The key's last dim. Default `embedDim`. */
  kdim?: number | undefined;
  /** The value's last dim. Default `embedDim`. */
  vdim?: number | undefined;
  /** Biases on the input and output projections (`in_proj_bias`, `out_proj.bias`). Default true. */
  bias?: boolean | undefined;
  /** Inputs and output are (N, L, E) instead of (L, N, E). Default false. */
  batchFirst?: boolean | undefined;
  /** Appends the learned `bias_k` and `bias_v` as one more key and value. Default false. */
  addBiasKv?: boolean | undefined;
  /** Appends a key and a value of zeros. Default false. */
  addZeroAttn?: boolean | undefined;
  /**
   * Seeds the initial parameters, drawn from PyTorch's distributions (Xavier-uniform in-projections, uniform
   * out-projection, zero biases, Xavier-normal bias_k/bias_v; not PyTorch's random values): an integer in
   * [0, 2^53). Default 0.
   */
  initSeed?: number | undefined;
  /**
   * PyTorch's `dropout`: in [0, 1) (else RangeError), on the attention weights of calls made with
   * `training: true`, kept or dropped by a hash of (seed, position). Default 0.
   */
  dropout?: number | undefined;
}

/** A {@link MultiheadAttentionConfig} with every default filled in. */
export interface ResolvedMultiheadAttentionConfig {
  /** E, the model dim. */
  embedDim: number;
  /** H, the number of heads. */
  numHeads: number;
  /** The key's last dim (embedDim unless set). */
  kdim: number;
  /** The value's last dim (embedDim unless set). */
  vdim: number;
  /** Whether the projections have biases. */
  bias: boolean;
  /** Whether inputs and output are (N, L, E). */
  batchFirst: boolean;
  /** Whether bias_k and bias_v are appended. */
  addBiasKv: boolean;
  /** Whether a zero key and value are appended. */
  addZeroAttn: boolean;
  /** The seed of the initial parameters. */
  initSeed: number;
  /** The dropout applied by calls with `training: true`. */
  dropout: number;
}

/**
 * Parameters for {@link MultiheadAttention.setParameters}, keyed by PyTorch's state-dict names, in PyTorch's
 * layouts (row-major). Any subset may be given; the ones this configuration lacks are refused.
 */
export interface MultiheadAttentionParameters {
  /** (3E, E): the query, key and value projections stacked; when kdim = vdim = embedDim. */
  in_proj_weight?: Float32Array | undefined;
  /** (3E), with `bias`. */
  in_proj_bias?: Float32Array | undefined;
  /** (E, E), when kdim or vdim differs from embedDim. */
  q_proj_weight?: Float32Array | undefined;
  /** (E, kdim), when kdim or vdim differs from embedDim. */
  k_proj_weight?: Float32Array | undefined;
  /** (E, vdim), when kdim or vdim differs from embedDim. */
  v_proj_weight?: Float32Array | undefined;
  /** (E, E). */
  'out_proj.weight'?: Float32Array | undefined;
  /** (E), with `bias`. */
  'out_proj.bias'?: Float32Array | undefined;
  /** (1, 1, E), with `addBiasKv`. */
  bias_k?: Float32Array | undefined;
  /** (1, 1, E), with `addBiasKv`. */
  bias_v?: Float32Array | undefined;
}

/** The state-dict names of MultiheadAttention's parameters, as PyTorch spells them. */
export type MultiheadAttentionParameterName = 'in_proj_weight' | 'in_proj_bias' | 'q_proj_weight' | 'k_proj_weight'
  | 'v_proj_weight' | 'out_proj.weight' | 'out_proj.bias' | 'bias_k' | 'bias_v';

/**
 * One entry of a state dict given as an object: the values, optionally the shape (then it must be the
 * parameter's exact shape), and the format. Float32Array and Float64Array say their own format; a Uint16Array
 * holds the bits of float16 or bfloat16 values and needs `dtype`.
 */
export interface StateDictTensor {
  /** The values, row-major: float32, float64, or the 16-bit patterns of float16 or bfloat16 values. */
  data: Float32Array | Float64Array | Uint16Array;
  /** The parameter's shape, checked when given. */
  shape?: readonly number[] | undefined;
  /** The values' format; needed for a Uint16Array, else it must agree with the array's type. */
  dtype?: 'float32' | 'float64' | 'float16' | 'bfloat16' | undefined;
}

/**
 * Where {@link MultiheadAttention.loadStateDict} reads parameters from: the bytes of a `.safetensors` file
 * (F32, F64, F16 and BF16 entries), or an object keyed by PyTorch's state-dict names (`in_proj_weight`,
 * `out_proj.weight`, …) whose values are typed arrays or {@link StateDictTensor}s — what
 * {@link MultiheadAttention.parameters} returns.
 */
export type StateDictSource = ArrayBufferLike | Uint8Array
  | { readonly [name: string]: Float32Array | Float64Array | StateDictTensor };

/** Options of {@link MultiheadAttention.loadStateDict}. */
export interface LoadStateDictOptions {
  /**
   * Only entries whose names start with it are read, and it is removed from them: `'encoder.layers.0.self_attn.'`
   * picks one attention out of a whole model's file. Entries outside the prefix are ignored. Default `''`.
   */
  prefix?: string | undefined;
}

/** A module's parameters by PyTorch name: what {@link MultiheadAttention.parameters} returns. */
export type StateDict = { [name: string]: OutputTensor };

/** Options of {@link MultiheadAttention.forward}. */
export interface MultiheadAttentionForwardOptions extends OutOption, AttentionRules {
  /** (N, S), or (S) for unbatched inputs. Boolean: **true = ignore this key**; float: added. Default: none. */
  keyPaddingMask?: Mask | undefined;
  /**
   * (L, S) or (N·H, L, S). Boolean: **true = NOT allowed** — the opposite of SDPA's polarity, as in PyTorch;
   * float: added. Default: none.
   */
  attnMask?: Mask | undefined;
  /** Return the weights. Default **true** (as PyTorch). */
  needWeights?: boolean | undefined;
  /** Weights averaged over heads (N, L, S), else per head (N, H, L, S). Default true. */
  averageAttnWeights?: boolean | undefined;
  /**
   * Applies the causal rule (top-left unless `causalAlignment` says otherwise). **An extension** without
   * `attnMask`: PyTorch raises "Need attn_mask if specifying the is_causal hint" there. With `attnMask`, both apply
   * (PyTorch takes `is_causal` as a hint that the mask is causal: the same result whenever the hint is true).
   * Default false.
   */
  isCausal?: boolean | undefined;
  /**
   * Where the queries sit among the keys, for `isCausal`, `window` and `alibiSlopes` (as in
   * {@link SdpaOptions.causalAlignment}). `alibiSlopes` has one slope per head (numHeads). Default `'top-left'`.
   */
  causalAlignment?: 'top-left' | 'bottom-right' | undefined;
  /**
   * Keys per batch element (N; one for unbatched inputs): key j ≥ keyLengths[n] is ignored, as a key padding mask
   * would make it. Integers in [0, S]. `window`, `alibiSlopes` and `keyLengths` cannot be combined with the config's
   * `addBiasKv` or `addZeroAttn` (their keys have no position). Default: all S.
   */
  keyLengths?: Int32Array | readonly number[] | undefined;
  /** Apply the config's `dropout` (PyTorch's `module.train()`). Default false (`module.eval()`). */
  training?: boolean | undefined;
  /** With `training`: an integer in [0, 2^53); the same seed drops the same weights. Default 0. */
  seed?: number | undefined;
}

/** Options of {@link MultiheadAttention.backward}: the forward's without the weights, and `out` by result. */
export interface MultiheadAttentionBackwardOptions
  extends Omit<MultiheadAttentionForwardOptions, 'needWeights' | 'averageAttnWeights' | 'out'> {
  /** Arrays for some of the results, as {@link SdpaGradOut} has them, and for parameters' gradients by name. */
  out?: MultiheadAttentionGradOut | undefined;
}

/** A {@link MultiheadAttention.backward}'s `out`: {@link SdpaGradOut}'s fields, and `gradParameters` by PyTorch name. */
export interface MultiheadAttentionGradOut extends SdpaGradOut {
  /** For some parameters' gradients, each the parameter's length. */
  gradParameters?: MultiheadAttentionParameterGradients | undefined;
}

/** Each parameter's gradient, named and laid out as {@link MultiheadAttention.setParameters} takes it. */
export type MultiheadAttentionParameterGradients = { [name in keyof MultiheadAttentionParameters]?: Float32Array<ArrayBuffer> };

/** What {@link MultiheadAttention.backward} returns. */
export interface MultiheadAttentionGradients {
  /** The forward output, laid out like the query. */
  output: OutputTensor;
  /** ∂/∂query of Σ gradOutput ⊙ output, shaped like the query. */
  gradQuery: OutputTensor;
  /** ∂/∂key, shaped like the key. */
  gradKey: OutputTensor;
  /** ∂/∂value, shaped like the value. */
  gradValue: OutputTensor;
  /** Every parameter's gradient under its PyTorch name, laid out as setParameters takes it. */
  gradParameters: MultiheadAttentionParameterGradients;
}

/**
 * `torch.nn.MultiheadAttention`: the forward (with the config's dropout in calls made with `training: true`)
 * and the backward. Its parameters live in WebAssembly memory until
 * {@link MultiheadAttention.dispose} (or garbage collection); it works with `using`.
 */
export interface MultiheadAttention {
  /**
   * Sets any subset of the parameters (PyTorch's layouts). All given ones are checked before any is set.
   * @throws TypeError for a name this configuration lacks or a value that is not a Float32Array;
   *   RangeError for a wrong length (the message names the parameter and its shape).
   */
  setParameters(parameters: MultiheadAttentionParameters): void;
  /**
   * Sets every parameter in one call from a PyTorch state dict: a `.safetensors` file's bytes or an object of
   * tensors keyed by PyTorch's names; float16, bfloat16 and float64 become float32. The entries under
   * `options.prefix` must be exactly this module's parameters, each of its shape.
   * @throws TypeError for a malformed file, a non-float entry or a bad value; RangeError naming every missing,
   *   unexpected or mis-shaped entry. A refused load sets nothing.
   */
  loadStateDict(source: StateDictSource, options?: LoadStateDictOptions): void;
  /** Copies of every parameter, keyed by PyTorch's names in PyTorch's order, in PyTorch's shapes. */
  parameters(): StateDict;
  /**
   * Attention over query (L, N, E) — (N, L, E) with `batchFirst`, (L, E) unbatched — key (S, N, kdim) and
   * value (S, N, vdim). Returns the output, shaped like the query, and (by default) the weights.
   * @throws TypeError for wrong types or unknown options; RangeError for shapes that do not fit (the message
   *   names the argument and the shapes); Error once the module was disposed.
   */
  forward(query: Tensor, key: Tensor, value: Tensor,
    options: MultiheadAttentionForwardOptions & { needWeights: false }): AttentionResultWithoutWeights;
  /**
   * Attention over query (L, N, E) — (N, L, E) with `batchFirst`, (L, E) unbatched — key (S, N, kdim) and
   * value (S, N, vdim). Returns the output, shaped like the query, and the weights: (N, L, S) averaged over
   * heads, or (N, H, L, S) with `averageAttnWeights: false`.
   * @throws TypeError for wrong types or unknown options; RangeError for shapes that do not fit (the message
   *   names the argument and the shapes); Error once the module was disposed.
   */
  forward(query: Tensor, key: Tensor, value: Tensor,
    options?: MultiheadAttentionForwardOptions & { needWeights?: true | undefined }): AttentionResultWithWeights;
  /** Attention over query, key and value (see the other signatures); weights unless `needWeights` is false. */
  forward(query: Tensor, key: Tensor, value: Tensor, options?: MultiheadAttentionForwardOptions): AttentionResult;
  /**
   * The backward pass: the output and the gradients of Σ gradOutput ⊙ output with respect to query, key, value
   * and every parameter. gradOutput is shaped like the output (like the query).
   * @throws as {@link MultiheadAttention.forward}, and TypeError when gradOutput is missing.
   */
  backward(query: Tensor, key: Tensor, value: Tensor, gradOutput: Tensor,
    options?: MultiheadAttentionBackwardOptions): MultiheadAttentionGradients;
  /** The configuration, every default filled in. */
  readonly config: ResolvedMultiheadAttentionConfig;
  /**
   * Frees its WebAssembly memory now; later calls throw. Idempotent. A module that is never disposed is freed
   * when garbage-collected.
   */
  dispose(): void;
  /** The same as dispose(), for `using mha = xa.createMultiheadAttention(…)`. */
  [Symbol.dispose](): void;
}

/** What {@link Xattn.linearGrad} returns. */
export interface LinearGradients {
  /** ∂/∂input of Σ gradOutput ⊙ output: (…, in), shaped like the input (gradOutput · weight). */
  gradInput: OutputTensor;
  /** ∂/∂weight: (out, in) (gradOutputᵀ · input, summed over every leading dim). */
  gradWeight: OutputTensor;
  /** ∂/∂bias: (out), the sum of gradOutput's rows; only when a bias was given. */
  gradBias?: OutputTensor | undefined;
}

/** Options of {@link Xattn.layerNorm}: `torch.nn.functional.layer_norm`'s. */
export interface LayerNormOptions extends OutOption {
  /** Multiplies each normalized row; shaped like `normalizedShape`. Default: none (1). */
  weight?: Tensor | null | undefined;
  /** Added after the weight; shaped like `normalizedShape`. Default: none (0). */
  bias?: Tensor | null | undefined;
  /** Added to the variance before its square root: finite and ≥ 0 (else RangeError). Default 1e-5. */
  eps?: number | undefined;
}

/** Options of {@link Xattn.layerNormGrad}: the forward's, with `out` by result. */
export interface LayerNormGradOptions extends Omit<LayerNormOptions, 'out'> {
  /** Arrays for some of the gradients ({@link LinearGradOut}'s fields). */
  out?: LinearGradOut | undefined;
}

/** Options of {@link Xattn.linearGrad}. */
export interface LinearGradOptions {
  /** Arrays for some of the gradients ({@link LinearGradOut}). */
  out?: LinearGradOut | undefined;
}

/**
 * The `out` of linearGrad and layerNormGrad: arrays for some of the gradients, by name. Each array given receives that result instead of a fresh
 * array and comes back as its data (no new array, no new memory pages: for a training loop's repeated calls): a
 * Float32Array over an ArrayBuffer (not a SharedArrayBuffer) of exactly the result's length, each result its own
 * array (else TypeError / RangeError naming the field, and nothing is written). The results not given come as
 * fresh arrays. Not through a worker.
 */
export interface LinearGradOut {
  /** For ∂/∂input, the input's length. */
  gradInput?: Float32Array<ArrayBuffer> | undefined;
  /** For ∂/∂weight, the weight's length; only when a weight was given. */
  gradWeight?: Float32Array<ArrayBuffer> | undefined;
  /** For ∂/∂bias, the bias's length; only when a bias was given. */
  gradBias?: Float32Array<ArrayBuffer> | undefined;
}

/** What {@link Xattn.layerNormGrad} returns. */
export interface LayerNormGradients {
  /** ∂/∂input of Σ gradOutput ⊙ output, shaped like the input. */
  gradInput: OutputTensor;
  /** ∂/∂weight, shaped like `normalizedShape`; only when a weight was given. */
  gradWeight?: OutputTensor | undefined;
  /** ∂/∂bias, shaped like `normalizedShape`; only when a bias was given. */
  gradBias?: OutputTensor | undefined;
}

/** The configuration of {@link Xattn.createTransformerEncoderLayer}, as `torch.nn.TransformerEncoderLayer` takes it. */
export interface TransformerEncoderLayerConfig {
  /** E, the model dim: an integer ≥ 1, a multiple of `nhead`. */
  dModel: number;
  /** H, the attention's heads: an integer ≥ 1 that divides `dModel`. */
  nhead: number;
  /** F, the feed-forward's hidden size. Default 2048 (as PyTorch). */
  dimFeedforward?: number | undefined;
  /**
   * In [0, 1) (else RangeError): on the attention weights, after the attention block (dropout1), inside the
   * feed-forward block and after it (dropout2), in calls made with `training: true`. Default 0.1 (as PyTorch).
   */
  dropout?: number | undefined;
  /** The feed-forward's activation: `'relu'` or `'gelu'` (the exact, erf form). Default `'relu'`. */
  activation?: 'relu' | 'gelu' | undefined;
  /** The LayerNorms' eps: finite and ≥ 0. Default 1e-5. */
  layerNormEps?: number | undefined;
  /** src and output are (N, L, E) instead of (L, N, E). Default false. */
  batchFirst?: boolean | undefined;
  /** Pre-norm (x + sa(norm1(x)), then x + ff(norm2(x))) instead of post-norm. Default false. */
  normFirst?: boolean | undefined;
  /** Seeds the initial parameters, drawn from PyTorch's distributions: an integer in [0, 2^53). Default 0. */
  initSeed?: number | undefined;
}

/** How a {@link KvCache} turns its keys, every default filled in (see {@link RotaryOptions}). */
export interface ResolvedKvRotary {
  /** The angles' base. */
  base: number;
  /** How many leading dims of each key are turned. */
  rotaryDim: number;
  /** GPT-J's interleaved pairs rather than rotate_half's halves. */
  interleaved: boolean;
}

/** A {@link TransformerEncoderLayerConfig} with every default filled in. */
export interface ResolvedTransformerEncoderLayerConfig {
  /** E, the model dim. */
  dModel: number;
  /** H, the attention's heads. */
  nhead: number;
  /** F, the feed-forward block's inner dim. */
  dimFeedforward: number;
  /** The dropout probability of calls made with `training`. */
  dropout: number;
  /** The feed-forward block's activation. */
  activation: 'relu' | 'gelu';
  /** The LayerNorms' eps. */
  layerNormEps: number;
  /** Whether src is (N, L, E) rather than (L, N, E). */
  batchFirst: boolean;
  /** Whether each LayerNorm comes before its block (pre-norm) rather than after the residual sum. */
  normFirst: boolean;
  /** The seed of the initial parameters. */
  initSeed: number;
}

/** The state-dict names of a TransformerEncoderLayer's parameters, in PyTorch's order. */
export type TransformerEncoderLayerParameterName = 'self_attn.in_proj_weight' | 'self_attn.in_proj_bias'
  | 'self_attn.out_proj.weight' | 'self_attn.out_proj.bias' | 'linear1.weight' | 'linear1.bias' | 'linear2.weight'
  | 'linear2.bias' | 'norm1.weight' | 'norm1.bias' | 'norm2.weight' | 'norm2.bias';

/**
 * Parameters for {@link TransformerEncoderLayer.setParameters}, keyed by PyTorch's state-dict names, in PyTorch's
 * layouts: `self_attn.in_proj_weight` (3E, E), `self_attn.in_proj_bias` (3E), `self_attn.out_proj.weight` (E, E),
 * `self_attn.out_proj.bias` (E), `linear1.weight` (F, E), `linear1.bias` (F), `linear2.weight` (E, F),
 * `linear2.bias` (E), `norm1.weight`, `norm1.bias`, `norm2.weight`, `norm2.bias` (E each). Any subset may be given.
 */
export type TransformerEncoderLayerParameters = { [name in TransformerEncoderLayerParameterName]?: Float32Array | undefined };

/** Options of {@link TransformerEncoderLayer.forward}. */
export interface TransformerEncoderLayerForwardOptions extends OutOption {
  /**
   * (L, L) or (N·nhead, L, L). Boolean: **true = NOT allowed** (PyTorch's polarity for this layer); float: added.
   * Default: none.
   */
  srcMask?: Mask | undefined;
  /** (N, L), or (L) for unbatched src. Boolean: **true = ignore this position**; float: added. Default: none. */
  srcKeyPaddingMask?: Mask | undefined;
  /** Without `srcMask`: applies the top-left causal mask (with it, the mask is used as given). Default false. */
  isCausal?: boolean | undefined;
  /** Apply the config's `dropout` (PyTorch's `module.train()`). Default false (`module.eval()`). */
  training?: boolean | undefined;
  /**
   * With `training`: an integer in [0, 2^53); the same seed drops the same values. The attention weights use
   * `seed`, dropout1 `seed + 1`, the feed-forward's dropout `seed + 2` and dropout2 `seed + 3`, each at every
   * element's index in its tensor. Default 0.
   */
  seed?: number | undefined;
  /** Keep the activations for the backward: see {@link TransformerEncoderLayerSavingOptions}. Default false. */
  saveForBackward?: boolean | undefined;
}

/** Options of {@link TransformerEncoderLayer.forward} that keeps its activations for the backward. */
export interface TransformerEncoderLayerSavingOptions extends TransformerEncoderLayerForwardOptions {
  /**
   * Keep the activations for one {@link TransformerEncoderLayer.backward} of the same arguments, which then need
   * not run the forward again (about a third of the layer's products). The result's `saved` stands for them.
   */
  saveForBackward: true;
}

/**
 * What a forward with `saveForBackward` kept for one backward: WebAssembly memory about the size of the
 * backward's workspace. That backward frees it; so do dispose(), the layer's dispose(), and garbage collection.
 */
export interface SavedForward {
  /** Frees the activations now; a backward given this token afterwards throws. Idempotent. */
  dispose(): void;
  /** The same as dispose(), for `using`. */
  [Symbol.dispose](): void;
}

/** What {@link TransformerEncoderLayer.forward} returns with `saveForBackward`. */
export interface SavedForwardResult extends OutputResult {
  /** Pass it as the backward's `options.saved`. */
  saved: SavedForward;
}

/** Options of {@link TransformerEncoderLayer.backward}: the forward's, with `out` by result. */
export interface TransformerEncoderLayerBackwardOptions extends Omit<TransformerEncoderLayerForwardOptions, 'out'> {
  /** Arrays for some of the results ({@link TransformerEncoderLayerGradOut}). */
  out?: TransformerEncoderLayerGradOut | undefined;
  /**
   * A forward's kept activations (its `saved`): the backward uses them rather than running the forward again, and
   * frees them. src, the masks, isCausal, training, seed and the layer's parameters must be those of that
   * forward, bit for bit. Default: none (the backward runs its own forward).
   * @throws RangeError naming what differs, or when it was used or released already.
   */
  saved?: SavedForward | undefined;
}

/**
 * A {@link TransformerEncoderLayer.backward}'s `out`: arrays for some of its results, by the result's name (a
 * parameter's gradient by its PyTorch name). Each array given receives that result instead of a fresh
 * array and comes back as its data (no new array, no new memory pages: for a training loop's repeated calls): a
 * Float32Array over an ArrayBuffer (not a SharedArrayBuffer) of exactly the result's length, each result its own
 * array (else TypeError / RangeError naming the field, and nothing is written). The results not given come as
 * fresh arrays. Not through a worker.
 */
export interface TransformerEncoderLayerGradOut {
  /** For the forward output, src's length. */
  output?: Float32Array<ArrayBuffer> | undefined;
  /** For ∂/∂src, src's length. */
  gradSrc?: Float32Array<ArrayBuffer> | undefined;
  /** For some parameters' gradients, each the parameter's length. */
  gradParameters?: Partial<TransformerEncoderLayerParameterGradients> | undefined;
}

/** Every parameter's gradient under its PyTorch name, laid out as {@link TransformerEncoderLayer.setParameters} takes it. */
export type TransformerEncoderLayerParameterGradients = { [name in TransformerEncoderLayerParameterName]: Float32Array<ArrayBuffer> };

/** A call's one result: the output tensor. */
export interface OutputResult {
  /** The result, a fresh array (or the `out` array given). */
  output: OutputTensor;
}

/** What {@link TransformerEncoderLayer.backward} returns. */
export interface TransformerEncoderLayerGradients {
  /** The forward output, shaped like src. */
  output: OutputTensor;
  /** ∂/∂src of Σ gradOutput ⊙ output, shaped like src. */
  gradSrc: OutputTensor;
  /** Every parameter's gradient under its PyTorch name, laid out as setParameters takes it. */
  gradParameters: TransformerEncoderLayerParameterGradients;
}

/**
 * `torch.nn.TransformerEncoderLayer`: self-attention and a feed-forward block, each with a residual connection
 * and a LayerNorm (post-norm, or pre-norm with `normFirst`), forward and backward. Its parameters live in
 * WebAssembly memory until {@link TransformerEncoderLayer.dispose} (or garbage collection); it works with `using`.
 */
export interface TransformerEncoderLayer {
  /**
   * Sets any subset of the parameters (PyTorch's layouts). All given ones are checked before any is set.
   * @throws TypeError for an unknown name or a value that is not a Float32Array; RangeError for a wrong length.
   */
  setParameters(parameters: TransformerEncoderLayerParameters): void;
  /**
   * Sets every parameter in one call from a PyTorch state dict (a `.safetensors` file's bytes or an object of
   * tensors): `{ prefix: 'layers.0.' }` picks one layer out of a whole model's file.
   * @throws TypeError for a malformed file or a bad value; RangeError naming every missing, unexpected or
   *   mis-shaped entry. A refused load sets nothing.
   */
  loadStateDict(source: StateDictSource, options?: LoadStateDictOptions): void;
  /** Copies of every parameter, keyed by PyTorch's names in PyTorch's order, in PyTorch's shapes. */
  parameters(): StateDict;
  /**
   * The layer over src (L, N, E) — (N, L, E) with `batchFirst`, (L, E) unbatched. Returns the output, shaped
   * like src. A position whose every key is masked attends to nothing (PyTorch gives NaN).
   * @throws TypeError for wrong types or unknown options; RangeError for shapes that do not fit (the message
   *   names the argument and the shapes); Error once the layer was disposed.
   */
  forward(src: Tensor, options: TransformerEncoderLayerSavingOptions): SavedForwardResult;
  /**
   * The layer over src, as above, without keeping its activations: the result holds only the output.
   * @throws as the signature above.
   */
  forward(src: Tensor, options?: TransformerEncoderLayerForwardOptions): OutputResult;
  /**
   * The backward pass: the output and the gradients of Σ gradOutput ⊙ output with respect to src and every
   * parameter. gradOutput is shaped like src.
   * @throws as {@link TransformerEncoderLayer.forward}, and TypeError when gradOutput is missing.
   */
  backward(src: Tensor, gradOutput: Tensor, options?: TransformerEncoderLayerBackwardOptions): TransformerEncoderLayerGradients;
  /** The configuration, every default filled in. */
  readonly config: ResolvedTransformerEncoderLayerConfig;
  /** Frees its WebAssembly memory now; later calls throw. Idempotent. */
  dispose(): void;
  /** The same as dispose(), for `using layer = xa.createTransformerEncoderLayer(…)`. */
  [Symbol.dispose](): void;
}

/** A KV cache's configuration. Keys are (B, Hkv, ·, E) = (batch, kvHeads, ·, headDim). */
export interface KvCacheConfig {
  /** B. Default 1. */
  batch?: number | undefined;
  /** Hkv: key/value heads. */
  kvHeads: number;
  /** E: the query/key dim (at most 16384). */
  headDim: number;
  /** Ev: the value dim (at most 16384). Default headDim. */
  valueDim?: number | undefined;
  /** Positions it can hold; its memory is taken at creation. */
  capacity: number;
  /**
   * Storage: 'float16' halves the memory and the bytes each step reads; keys and values are rounded to
   * nearest even on append and widened in the kernel. Default 'float32'.
   */
  dtype?: 'float32' | 'float16' | undefined;
  /**
   * A rolling buffer (Mistral's): appending past `capacity` overwrites each batch element's oldest positions,
   * and positions keep counting, so the cache holds the last `capacity` keys (with `window: { left: capacity − 1 }`,
   * a sliding window). Default false: appending past `capacity` throws.
   */
  rolling?: boolean | undefined;
  /**
   * Turn keys by their positions as they are appended (see {@link Xattn.applyRotaryEmbedding}): `true` for every
   * feature, base 10000 and rotate_half pairs, or the options. Values are stored as given. Default: no rotation.
   */
  rotary?: boolean | KvRotaryOptions | undefined;
}

/** How a KV cache turns its keys (see {@link RotaryOptions}). */
export interface KvRotaryOptions {
  /** θ's base. Default 10000. */
  base?: number | undefined;
  /** Features turned (even, ≤ headDim); 0 for all. Default 0. */
  rotaryDim?: number | undefined;
  /** GPT-J's adjacent pairs instead of rotate_half's halves. Default false. */
  interleaved?: boolean | undefined;
}

/** The configuration of a {@link KvCache}, every default filled in. */
export interface ResolvedKvCacheConfig {
  /** B. */
  batch: number;
  /** Hkv: key/value heads. */
  kvHeads: number;
  /** E: the query/key dim. */
  headDim: number;
  /** Ev: the value dim. */
  valueDim: number;
  /** Positions it can hold. */
  capacity: number;
  /** How keys and values are stored. */
  dtype: 'float32' | 'float16';
  /** Whether appending past capacity overwrites the oldest positions. */
  rolling: boolean;
  /** How keys are turned as they are appended, or null. */
  rotary: ResolvedKvRotary | null;
}

/**
 * attend's options: scaledDotProductAttention's, with enableGqa implied, no dropout, and the rules placed
 * bottom-right in each batch element: its L queries are its last L positions, so `isCausal`, `window` and
 * `alibiSlopes` follow each element's own length (and, in a rolling cache, its absolute positions).
 */
export interface KvAttendOptions extends OutOption, AttentionRules {
  /** Default 1/√E; its float32 value must be finite and non-zero. */
  scale?: number | undefined;
  /** Bottom-right: the L queries are the last L positions, query l sees positions j ≤ l + length − L. */
  isCausal?: boolean | undefined;
  /**
   * Broadcasts to (B, Hq, L, length), `length` the most any element holds (the slots in a rolling cache). Boolean:
   * true = this query may attend to this position. Both apply with `isCausal`.
   */
  attnMask?: Mask | undefined;
  /** Also return the weights (B, Hq, L, length). Default false. */
  needWeights?: boolean | undefined;
}

/**
 * Keys and values held in WebAssembly memory between calls, for decoding one token at a time without copying
 * the whole K and V in again. Created by {@link Xattn.createKvCache}.
 */
export interface KvCache {
  /** Positions held: the most any batch element holds. */
  readonly length: number;
  /** Positions each batch element holds (B of them). */
  readonly lengths: Int32Array<ArrayBuffer>;
  /** Positions each batch element has appended in all: its next position (past `lengths` once a rolling cache rolls). */
  readonly positions: Int32Array<ArrayBuffer>;
  /** Positions it can hold. */
  readonly capacity: number;
  /** The configuration, every default filled in. */
  readonly config: ResolvedKvCacheConfig;
  /**
   * Appends n ≥ 1 positions: key (B, Hkv, n, E), value (B, Hkv, n, Ev), Float32Arrays or halves
   * ({@link HalfTensor}, both alike). With `options.counts`, batch element b appends only its first counts[b]
   * positions (onnxruntime GroupQueryAttention's per-sequence lengths). With `rotary`, keys are turned at their
   * positions.
   * @throws RangeError for other shapes, counts, or (not rolling) more positions than an element has room for
   *   (nothing is appended).
   */
  append(key: Tensor | HalfTensor, value: Tensor | HalfTensor, options?: KvAppendOptions): void;
  /**
   * scaledDotProductAttention(query, K, V, options) on the held K (B, Hkv, length, E) and V: query
   * (B, Hq, L, E) with Hq a multiple of Hkv (grouped-query attention implied) → output (B, Hq, L, Ev), and
   * with `needWeights: true` the weights (B, Hq, L, length). Decoding steps read each cached key and value once.
   * @throws TypeError / RangeError as scaledDotProductAttention does, naming `KvCache.attend`.
   */
  attend(query: Tensor, options: KvAttendOptions & { needWeights: true }): AttentionResultWithWeights;
  /** As above; the weights only with `needWeights: true`. */
  attend(query: Tensor, options?: KvAttendOptions): AttentionResult;
  /** As above with a query of halves: the output (and weights) come back as halves of the query's class. */
  attend<H extends HalfArray>(query: HalfTensor<H>, options?: Omit<KvAttendOptions, 'out'>): HalfAttentionResult<H>;
  /**
   * Drops the positions ≥ length (speculative decoding, retries): one length for every batch element, or one each
   * (B of them), counted in positions appended.
   * @throws RangeError for a length past what an element appended, or, once a rolling cache has rolled, before the
   *   oldest position it holds.
   */
  truncate(length: number | Int32Array | readonly number[]): void;
  /** A copy of the held keys (B, Hkv, length, E), as float32 (float16 storage widened). */
  keys(): OutputTensor;
  /** A copy of the held values (B, Hkv, length, Ev), as float32. */
  values(): OutputTensor;
  /** Frees its memory now; later calls throw. Idempotent; a cache never disposed is freed when garbage-collected. */
  dispose(): void;
  /** The same as dispose(), for `using cache = xa.createKvCache(…)`. */
  [Symbol.dispose](): void;
}

/** {@link KvCache.append}'s options. */
export interface KvAppendOptions {
  /** How many of the n positions given each batch element appends (its first ones): B integers in [0, n]. Default: n each. */
  counts?: Int32Array | readonly number[] | undefined;
}

/**
 * Rotary position embeddings (ONNX RotaryEmbedding, opset 23): each pair of features (x₁, x₂) of the row at position
 * p is turned by the angle p · θ_i, θ_i = base^(−2i / rotaryDim). Pairs are the halves of the first rotaryDim features
 * (Hugging Face's rotate_half) or, `interleaved`, adjacent features (GPT-J); features past rotaryDim pass unchanged.
 */
export interface RotaryOptions {
  /**
   * The position of each row, x being (…, L, D) laid out as SDPA's query: L of them (every batch element alike) or
   * B·L, B the dims before −3 flattened (row l of element b at positions[b·L + l]; every head alike). Integers in
   * [0, 2^31). Not with `positionOffset`.
   */
  positions?: Int32Array | readonly number[] | undefined;
  /** Without `positions`: row i (along dim −2) is at positionOffset + i. An integer ≥ 0. Default 0. */
  positionOffset?: number | undefined;
  /** θ's base, positive and finite. Default 10000. */
  base?: number | undefined;
  /** Features turned: even, at most the last dim; 0 for all. Default 0. */
  rotaryDim?: number | undefined;
  /** GPT-J's adjacent pairs instead of rotate_half's halves. Default false. */
  interleaved?: boolean | undefined;
}

/** One instance of the WebAssembly module, with its own memory: what {@link createXattn} resolves to. */
export interface Xattn {
  /** Whether the SIMD build runs. */
  readonly simd: boolean;
  /**
   * Whether the relaxed-SIMD variant of the SIMD build runs (its products are `f32x4.relaxed_madd`, fused
   * multiply-adds where the CPU has them); false: the plain SIMD or the scalar build.
   */
  readonly relaxedSimd: boolean;
  /**
   * How many threads each call runs on: the calling thread and `threads - 1` workers of the threaded build
   * (1: the plain SIMD or scalar build). Results are bit-identical whatever the count.
   */
  readonly threads: number;
  /** How long the helper threads poll for the next call before they sleep (see {@link XattnOptions.spinMicroseconds}). */
  readonly spinMicroseconds: number;
  /**
   * The kernels every call runs: `'scalar'`, or the SIMD builds' `'wasm-simd128'` / `'wasm-relaxed-simd'` in
   * blocks of 8 accumulators, or the same with `'/16'` in blocks of 16, which the instance picks where the CPU
   * has 32 vector registers (Arm, RISC-V; x86 has 16). Both blockings give the same bits.
   */
  readonly kernels: string;
  /** The package version, compiled into the module. */
  readonly version: string;
  /** Current size of the instance's WebAssembly linear memory, in bytes (it grows, and never shrinks). */
  memoryBytes(): number;
  /**
   * Releases the instance: stops its threads and lets its WebAssembly memory go. Every later call, and every
   * call of a module or cache made from it, throws. Idempotent. An instance dropped without it is released by
   * garbage collection once neither it nor any module or cache made from it is reachable.
   */
  dispose(): void;
  /** The same as dispose(), for `using xa = await createXattn()`. */
  [Symbol.dispose](): void;
  /** Whether {@link Xattn.dispose} was called. */
  readonly disposed: boolean;
  /**
   * `torch.nn.functional.scaled_dot_product_attention`: query (…, L, E), key (…, S, E), value (…, S, Ev) →
   * output (…, L, Ev), and with `needWeights: true` the weights (…, L, S). Leading dims must be equal (no
   * broadcasting), except the heads under `enableGqa`. A row that sees no key gives weights 0 and output 0.
   * @throws TypeError for wrong types or unknown options; RangeError for shapes that do not fit, bad values or
   *   sizes beyond WebAssembly memory (the message names the argument and the shapes, e.g. "key last dim 6 !=
   *   query last dim 8 (E) (query (2, 5, 8), key (2, 7, 6), …)").
   */
  scaledDotProductAttention(query: Tensor, key: Tensor, value: Tensor,
    options: SdpaOptions & { needWeights: true }): AttentionResultWithWeights & SdpaResult;
  /**
   * `torch.nn.functional.scaled_dot_product_attention`: query (…, L, E), key (…, S, E), value (…, S, Ev) →
   * output (…, L, Ev); the weights (…, L, S) only with `needWeights: true`, the scores with `returnScores`.
   * @throws TypeError for wrong types or unknown options; RangeError for shapes that do not fit, bad values or
   *   sizes beyond WebAssembly memory (the message names the argument and the shapes).
   */
  scaledDotProductAttention(query: Tensor, key: Tensor, value: Tensor, options?: SdpaOptions): SdpaResult;
  /**
   * The same on IEEE halves ({@link HalfTensor}: query, key and value all Uint16Array or all Float16Array),
   * computed in float32; every result comes back as halves of the query's class (no `out`).
   */
  scaledDotProductAttention<H extends HalfArray>(query: HalfTensor<H>, key: HalfTensor<H>, value: HalfTensor<H>,
    options?: Omit<SdpaOptions, 'out'>): HalfAttentionResult<H>;
  /**
   * The backward pass: the output and the gradients of Σ gradOutput ⊙ output with respect to query, key and
   * value, for every forward option (masks, causal, the rules, scale, GQA, dropout with the same seed). gradOutput is
   * (…, L, Ev). A fully masked row passes gradient 0.
   * @throws as {@link Xattn.scaledDotProductAttention}, and RangeError when gradOutput is not the output's shape.
   */
  scaledDotProductAttentionGrad(query: Tensor, key: Tensor, value: Tensor, gradOutput: Tensor,
    options: SdpaGradOptions & { needWeights: true }): GradientResultWithWeights;
  /**
   * The backward pass: the output and the gradients of Σ gradOutput ⊙ output with respect to query, key and
   * value. gradOutput is (…, L, Ev).
   * @throws as {@link Xattn.scaledDotProductAttention}, and RangeError when gradOutput is not the output's shape.
   */
  scaledDotProductAttentionGrad(query: Tensor, key: Tensor, value: Tensor, gradOutput: Tensor,
    options?: SdpaGradOptions): GradientResult;
  /** The backward pass on IEEE halves (every tensor of one class), computed in float32, returned as halves. */
  scaledDotProductAttentionGrad<H extends HalfArray>(query: HalfTensor<H>, key: HalfTensor<H>, value: HalfTensor<H>,
    gradOutput: HalfTensor<H>, options?: Omit<SdpaGradOptions, 'out'>): HalfGradientResult<H>;
  /**
   * Rotary position embeddings ({@link RotaryOptions}): x (…, L, D) → x turned, the same shape. Float32Array or
   * halves (returned in the same class).
   * @throws TypeError for wrong types or unknown options; RangeError for an odd or too large `rotaryDim`, a bad
   *   base, or positions of the wrong count.
   */
  applyRotaryEmbedding(x: Tensor, options?: RotaryOptions): OutputTensor;
  /** {@link Xattn.applyRotaryEmbedding} on halves, returned in the same class. */
  applyRotaryEmbedding<H extends HalfArray>(x: HalfTensor<H>, options?: RotaryOptions): HalfOutputTensor<H>;
  /**
   * The backward of {@link Xattn.applyRotaryEmbedding}: gradOutput turned back by the same angles (the gradient
   * with respect to x), with the same options.
   */
  applyRotaryEmbeddingGrad(gradOutput: Tensor, options?: RotaryOptions): OutputTensor;
  /** {@link Xattn.applyRotaryEmbeddingGrad} on halves, returned in the same class. */
  applyRotaryEmbeddingGrad<H extends HalfArray>(gradOutput: HalfTensor<H>, options?: RotaryOptions): HalfOutputTensor<H>;
  /**
   * A new `torch.nn.MultiheadAttention` with initial parameters drawn from PyTorch's distributions
   * (`initSeed`); set PyTorch's with {@link MultiheadAttention.loadStateDict} or
   * {@link MultiheadAttention.setParameters}.
   * @throws TypeError for unknown fields or wrong types; RangeError for bad dims (embedDim not a multiple of
   *   numHeads) or parameters too large for WebAssembly memory.
   */
  createMultiheadAttention(config: MultiheadAttentionConfig): MultiheadAttention;
  /**
   * A KV cache for incremental decoding: keys and values that stay in WebAssembly memory between calls.
   * @throws TypeError for unknown fields or wrong types; RangeError for bad dims or a capacity whose memory
   *   cannot be had (the message says how many bytes it needs).
   */
  createKvCache(config: KvCacheConfig): KvCache;
  /**
   * `torch.nn.functional.linear`: input (…, in) · weightᵀ (in, out) + bias (out) → output (…, out); weight
   * (out, in) as PyTorch stores it. Float32 sums, threaded, the same bits at every thread count.
   * @throws TypeError for wrong types; RangeError for shapes that do not fit (the message names the argument and
   *   the shapes).
   */
  linear(input: Tensor, weight: Tensor, bias?: Tensor | null, options?: OutOption): OutputResult;
  /**
   * linear's backward: the gradients of Σ gradOutput ⊙ output with respect to input, weight and (when a bias is
   * given; its values are not read) bias. gradOutput is (…, out).
   * @throws as {@link Xattn.linear}, and RangeError when gradOutput is not the output's shape.
   */
  linearGrad(input: Tensor, weight: Tensor, bias: Tensor | null | undefined, gradOutput: Tensor,
    options?: LinearGradOptions): LinearGradients;
  /**
   * `torch.nn.functional.layer_norm`: each row of `normalizedShape` (the input's trailing dims) becomes
   * (x − mean) / sqrt(var + eps) · weight + bias, the variance biased; means and variances summed in float64.
   * @throws TypeError for wrong types; RangeError for shapes that do not fit or a bad eps.
   */
  layerNorm(input: Tensor, normalizedShape: readonly number[], options?: LayerNormOptions): OutputResult;
  /**
   * layerNorm's backward: the gradients of Σ gradOutput ⊙ output with respect to the input and the weight and
   * bias when given. gradOutput is shaped like the input.
   * @throws as {@link Xattn.layerNorm}, and RangeError when gradOutput is not the input's shape.
   */
  layerNormGrad(input: Tensor, normalizedShape: readonly number[], gradOutput: Tensor,
    options?: LayerNormGradOptions): LayerNormGradients;
  /**
   * A new `torch.nn.TransformerEncoderLayer` with initial parameters drawn from PyTorch's distributions
   * (`initSeed`); set PyTorch's with {@link TransformerEncoderLayer.loadStateDict}.
   * @throws TypeError for unknown fields, wrong types or an unknown activation; RangeError for bad dims (dModel
   *   not a multiple of nhead), a dropout outside [0, 1), or parameters too large for WebAssembly memory.
   */
  createTransformerEncoderLayer(config: TransformerEncoderLayerConfig): TransformerEncoderLayer;
}

/** What {@link createXattn} may be asked for. */
export interface XattnOptions {
  /** Force the SIMD build (true; throws where the engine has no WebAssembly SIMD) or the scalar one (false). */
  simd?: boolean | undefined;
  /**
   * Threads per call, 1 to 4. Default: in Node min(4, available cores); in a browser min(4,
   * navigator.hardwareConcurrency) when the page is cross-origin isolated, else 1 (no error, no warning).
   * More than 1 runs the threaded SIMD build and needs shared memory: where the page is not cross-origin
   * isolated (headers `Cross-Origin-Opener-Policy: same-origin`, `Cross-Origin-Embedder-Policy: require-corp`)
   * asking for it throws an Error that says so. The API stays synchronous; the calling thread takes part.
   */
  threads?: number | undefined;
  /**
   * Force the relaxed-SIMD variant of the SIMD build (true; throws where the engine has no WebAssembly relaxed
   * SIMD, or with `simd: false`) or the plain SIMD build (false). Default: relaxed wherever the engine validates
   * it (Chromium 114+, Firefox 146+, Node 20 with `--experimental-wasm-relaxed-simd`). Combines with `threads`.
   * Results may differ from the plain build's in the last bits (a fused multiply-add rounds once).
   */
  relaxedSimd?: boolean | undefined;
  /**
   * How long each helper thread keeps polling for the next call after finishing one before it sleeps, in
   * microseconds, 0 to 1,000,000 (default 200; no effect on one thread). A call that finds its helpers polling
   * starts them at once; waking a sleeping one costs tens of microseconds or more (an operating system's
   * wake-up), which a short call, such as a decoding step at a few hundred positions, loses much of its second
   * thread to. The default covers back-to-back calls. A decoder that does other work between its attention
   * calls can set it to cover that work, at the price of the helpers keeping their cores busy while they poll
   * (they sleep once the time has passed with no call). The same trade as OpenMP's blocktime and onnxruntime's
   * thread spinning.
   */
  spinMicroseconds?: number | undefined;
  /**
   * Where the files that a build fetches at run time are, when they are not beside the package's entry: a
   * bundler that does not rewrite `new URL('…', import.meta.url)` (esbuild), files on a CDN or another origin, a
   * folder of your choosing. (A package loaded from a CDN as it is finds them beside itself.) The files it
   * covers, by their names in the package's `dist/` (`<build>`: `simd`, `relaxed-simd`, `scalar`, `simd-threads`,
   * `relaxed-simd-threads`):
   * - every build: its WebAssembly module, `xattn-<build>.wasm`;
   * - the threaded builds in browsers: their glue `xattn-<build>.mjs`, which each pthread worker imports again;
   * - the threaded builds in Node: the pthread worker script `xattn-<build>-node.worker.cjs` and the glue
   *   `xattn-<build>-node.cjs` that it reads (both files: a path or a `file:` URL).
   *
   * Not covered: the package's JavaScript, which your bundle or import map carries: the glue modules the entries
   * import themselves (`xattn-<build>.mjs` on the main thread, `xattn-<build>-worker-source.mjs`,
   * `xattn-<build>-node.cjs` as Node's main thread requires it) and the Worker script of `createXattnWorker`
   * ('xattn/worker'). Serve the files of this same version: the pthread workers run the glue they fetch beside
   * the one your bundle holds.
   *
   * Either a base, the folder holding the files under their own names (a final `/` is added when missing): a
   * `URL`, or a string that in browsers is a URL, a relative one resolved against the document's base URL (in a
   * Worker, its own URL), and in Node also a directory path (from the working directory); Node reads `file:` URLs
   * from disk and fetches others. Or a function `(fileName) => string | URL` returning each file's location
   * (strings read as a base's); through `createXattnWorker` it is called on the calling thread when the worker
   * starts, once for every file any build may load, since a function cannot be sent to a worker.
   *
   * Files on another origin need `Access-Control-Allow-Origin` on their responses, which is all a cross-origin
   * isolated page needs of them too (they are CORS requests: no `Cross-Origin-Resource-Policy`). A file that
   * cannot be had rejects with its URL and what went wrong (`HTTP 404`, a missing CORS header), and says to set
   * or check `wasmPaths`.
   * @example { wasmPaths: 'https://cdn.example/xattn@0.1.0/dist/' }
   * @example { wasmPaths: (fileName) => new URL(`/assets/${fileName}`, location.origin) }
   */
  wasmPaths?: WasmPaths | undefined;
}

/**
 * Where the package's run-time files are (see {@link XattnOptions.wasmPaths}): the folder holding them under their
 * own names, or a function giving each file's location.
 */
export type WasmPaths = string | URL | ((fileName: string) => string | URL);

/**
 * Loads and starts a WebAssembly build: SIMD when the engine has it (its relaxed-SIMD variant where the engine
 * has that too), unless `{ simd }` or `{ relaxedSimd }` forces one, on as many threads as `{ threads }` asks
 * or the environment offers. Each call makes an independent instance. Rejects (never hangs) when the build
 * cannot be compiled or started.
 * @throws (rejects) TypeError for unknown options or wrong types (a `wasmPaths` that is not a base or a
 *   function, or whose function returns something else); RangeError for `threads` outside 1…4 or
 *   `spinMicroseconds` outside 0…1,000,000; Error when a forced build cannot run here (no SIMD, no relaxed SIMD,
 *   or no shared memory for threads), or when a file cannot be fetched or read (the message names its URL).
 */
export function createXattn(options?: XattnOptions): Promise<Xattn>;
export default createXattn;
