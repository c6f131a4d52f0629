// Every refusal xattn can give, as one table that both languages format from: C++ messages name C++ arguments
// (attn_mask, embed_dim), JavaScript messages name JavaScript ones (attnMask, embedDim), and neither patches the
// other's text. A refusal is data (xattn::Status, dims.hpp): a message id, the function, and its arguments,
// numbers and shapes. scripts/gen-boundary.mjs reads this file and writes the JavaScript side of the table
// (js/boundary-schema.js); tests/js/schema.test.mjs fails when that copy is stale.
//
// Placeholders in a template: {a0}…{a3} argument names (each language its own), {n0}…{n3} numbers (printed
// as JavaScript prints them), {s0}…{s5} shapes "(4, 10, 64)", {t0} {t1} free text (C++ only: the refusals that
// carry text never cross into JavaScript). Every message is printed after "<function>: ".
//
// Keep each X( … ) entry on one line: the generator reads them line by line.
#pragma once

// X(id, C++ name, JavaScript name)
#define XATTN_FUNCTIONS(X)                                                                     \
    X(sdpa, "scaled_dot_product_attention", "scaledDotProductAttention")                       \
    X(sdpa_backward, "scaled_dot_product_attention_backward", "scaledDotProductAttentionGrad") \
    X(mha_create, "multi_head_attention", "createMultiheadAttention")                          \
    X(mha_forward, "multi_head_attention", "MultiheadAttention.forward")                       \
    X(mha_backward, "multi_head_attention_backward", "MultiheadAttention.backward")            \
    X(mha_parameters, "multi_head_attention", "MultiheadAttention.setParameters")              \
    X(kv_create, "kv_cache", "createKvCache")                                                  \
    X(kv_append, "kv_cache: append", "KvCache.append")                                         \
    X(kv_truncate, "kv_cache: truncate", "KvCache.truncate")                                   \
    X(kv_attend, "kv_cache: attend", "KvCache.attend")                                         \
    X(kv_read, "kv_cache", "KvCache.keys")                                                     \
    X(rotary, "apply_rotary_embedding", "applyRotaryEmbedding")                                \
    X(linear, "linear", "linear")                                                              \
    X(linear_backward, "linear_backward", "linearGrad")                                        \
    X(layer_norm, "layer_norm", "layerNorm")                                                   \
    X(layer_norm_backward, "layer_norm_backward", "layerNormGrad")                             \
    X(encoder_create, "transformer_encoder_layer", "createTransformerEncoderLayer")            \
    X(encoder_forward, "transformer_encoder_layer", "TransformerEncoderLayer.forward")         \
    X(encoder_backward, "transformer_encoder_layer", "TransformerEncoderLayer.backward")       \
    X(encoder_parameters, "transformer_encoder_layer", "TransformerEncoderLayer.setParameters") \
    X(boundary, "xattn", "xattn")

// X(id, C++ name, JavaScript name)
#define XATTN_ARGUMENTS(X)                                     \
    X(query, "query", "query")                                 \
    X(key, "key", "key")                                       \
    X(value, "value", "value")                                 \
    X(attn_mask, "attn_mask", "attnMask")                      \
    X(is_causal, "is_causal", "isCausal")                      \
    X(grad_output, "grad_output", "gradOutput")                \
    X(scale, "scale", "scale")                                 \
    X(dropout_p, "dropout_p", "dropoutP")                      \
    X(enable_gqa, "enable_gqa", "enableGqa")                   \
    X(output, "output", "output")                              \
    X(weights, "weights", "weights")                           \
    X(per_head_weights, "per-head weights", "per-head weights") \
    X(merged_mask, "merged mask", "merged mask")               \
    X(projected_key, "projected key", "projected key")         \
    X(projected_value, "projected value", "projected value")   \
    X(embed_dim, "embed_dim", "embedDim")                      \
    X(num_heads, "num_heads", "numHeads")                      \
    X(kdim, "kdim", "kdim")                                    \
    X(vdim, "vdim", "vdim")                                    \
    X(dropout, "dropout", "dropout")                           \
    X(key_padding_mask, "key_padding_mask", "keyPaddingMask")  \
    X(in_proj_weight, "in_proj_weight", "in_proj_weight")      \
    X(out_proj_weight, "out_proj.weight", "out_proj.weight")   \
    X(batch, "batch", "batch")                                 \
    X(kv_heads, "kv_heads", "kvHeads")                         \
    X(head_dim, "head_dim", "headDim")                         \
    X(value_dim, "value_dim", "valueDim")                      \
    X(capacity, "capacity", "capacity")                        \
    X(keys, "keys", "keys")                                    \
    X(values, "values", "values")                              \
    X(length, "length", "length")                              \
    X(softcap, "softcap", "softcap")                           \
    X(window_left, "window left", "window.left")               \
    X(window_right, "window right", "window.right")            \
    X(alibi_slopes, "alibi_slopes", "alibiSlopes")             \
    X(key_lengths, "key_lengths", "keyLengths")                \
    X(scores, "scores", "scores")                              \
    X(add_bias_kv, "add_bias_kv", "addBiasKv")                 \
    X(add_zero_attn, "add_zero_attn", "addZeroAttn")           \
    X(counts, "counts", "counts")                              \
    X(lengths, "lengths", "lengths")                           \
    X(x, "x", "x")                                             \
    X(rotary_dim, "rotary_dim", "rotaryDim")                   \
    X(rotary_base, "base", "base")                             \
    X(positions, "positions", "positions")                     \
    X(position_offset, "position_offset", "positionOffset")    \
    X(input, "input", "input")                                 \
    X(weight, "weight", "weight")                              \
    X(bias, "bias", "bias")                                    \
    X(normalized_shape, "normalized_shape", "normalizedShape") \
    X(eps, "eps", "eps")                                       \
    X(src, "src", "src")                                       \
    X(src_mask, "src_mask", "srcMask")                         \
    X(src_key_padding_mask, "src_key_padding_mask", "srcKeyPaddingMask") \
    X(d_model, "d_model", "dModel")                            \
    X(nhead, "nhead", "nhead")                                 \
    X(dim_feedforward, "dim_feedforward", "dimFeedforward")    \
    X(layer_norm_eps, "layer_norm_eps", "layerNormEps")        \
    X(activation, "activation", "activation")                  \
    X(linear1_weight, "linear1.weight", "linear1.weight")      \
    X(feedforward_activations, "feed-forward activations", "feed-forward activations") \
    X(saved, "saved", "options.saved")                         \
    X(parameters, "parameters", "parameters")                  \
    X(training, "training", "training")                        \
    X(seed, "seed", "seed")

// X(id, template)
#define XATTN_MESSAGES(X)                                                                                                               \
    X(rank_below_two, "{a0} must have at least 2 dims (…, L or S, E or Ev), got shape {s0}")                                            \
    X(rank_mismatch, "query, key and value must have the same rank (query {s0}, key {s1}, value {s2})")                                 \
    X(key_dim_mismatch, "key last dim {n0} != query last dim {n1} (E) (query {s0}, key {s1}, value {s2})")                              \
    X(value_length_mismatch, "value dim -2 {n0} != key dim -2 {n1} (S) (query {s0}, key {s1}, value {s2})")                             \
    X(value_leading_mismatch, "value leading dims {s3} != key leading dims {s4} (query {s0}, key {s1}, value {s2})")                    \
    X(gqa_heads, "{a0}: query heads {n0} (dim -3) are not a multiple of key/value heads {n1} (query {s0}, key {s1}, value {s2})")        \
    X(key_leading_mismatch, "key leading dims {s4} != query leading dims {s3} (no broadcasting between query, key and value) (query {s0}, key {s1}, value {s2})") \
    X(head_count_mismatch, "key leading dims {s4} != query leading dims {s3} (no broadcasting between query, key and value; different head counts need {a0}) (query {s0}, key {s1}, value {s2})") \
    X(scale_not_finite, "{a0} must be finite and non-zero as a float32, got {n0} (float32 {n1})")                                      \
    X(probability_range, "{a0} must be in [0, 1), got {n0}")                                                                            \
    X(mask_broadcast, "{a0} shape {s0} does not broadcast to the weights' shape {s1} (…, L, S)")                                       \
    X(tensor_too_large, "{a0} of shape {s0} needs {n0} bytes, more than the limit of {n1} bytes per tensor")                           \
    X(tensor_size_overflow, "{a0} of shape {s0} needs more than 2^64 bytes, more than the limit of {n1} bytes per tensor")             \
    X(grad_output_shape, "{a0} shape {s0} != output shape {s1} (…, L, Ev)")                                                             \
    X(mha_grad_output_shape, "{a0} shape {s0} != output shape {s1} (the query's)")                                                      \
    X(dims_not_positive, "{a0} and {a1} must be positive, got {a0} {n0}, {a1} {n1}")                                                    \
    X(heads_not_divisor, "{a0} {n0} is not divisible by {a1} {n1}")                                                                     \
    X(parameters_too_large, "the parameters of {a0} {n0} need {n1} bytes, more than the memory left can hold")                         \
    X(parameter_unknown, "no parameter named '{t0}' in this configuration (it has {t1})")                                              \
    X(parameter_size, "{t0} needs {n0} values for shape {s0}, got {n1}")                                                                \
    X(mha_query_rank_seq_first, "query must be 3-D (L, N, E) or 2-D (L, E) unbatched, got shape {s0}")                                  \
    X(mha_query_rank_batch_first, "query must be 3-D (N, L, E) or 2-D (L, E) unbatched, got shape {s0}")                                \
    X(mha_rank_mismatch, "key and value must have the same rank as query (query {s0}, key {s1}, value {s2})")                          \
    X(mha_embedding_mismatch, "{a0} embedding size {n0} != {a1} {n1} (query {s0}, key {s1}, value {s2})")                              \
    X(mha_batch_mismatch, "query, key and value batch sizes differ (query {s0}, key {s1}, value {s2})")                                 \
    X(mha_length_mismatch, "key and value sequence lengths differ (query {s0}, key {s1}, value {s2})")                                 \
    X(mha_padding_shape, "{a0} shape {s3} != {s4} (N, S) (query {s0}, key {s1}, value {s2})")                                          \
    X(mha_padding_shape_unbatched, "{a0} shape {s3} != {s4} (S,) (query {s0}, key {s1}, value {s2})")                                  \
    X(mha_attn_mask_shape, "{a0} shape {s3} is neither {s4} (L, S) nor {s5} (N·H, L, S) (query {s0}, key {s1}, value {s2})")           \
    X(cache_dims_not_positive, "{a0}, {a1}, {a2} and {a3} must be positive, got {a0} {n0}, {a1} {n1}, {a2} {n2}, {a3} {n3}")           \
    X(cache_head_dim_limit, "{a0} and {a1} must be at most {n0}, got {n1} and {n2}")                                                    \
    X(cache_too_large, "the cache needs {n0} bytes of storage, more than the memory left can hold")                                    \
    X(cache_append_shape, "key must be (B, Hkv, n, E) = ({n0}, {n1}, n, {n2}) and value ({n0}, {n1}, n, {n3}) with the same n (key {s0}, value {s1})") \
    X(cache_append_empty, "n must be at least 1 (key {s0}, value {s1})")                                                                \
    X(cache_append_full, "{n0} positions do not fit: the cache holds {n1} of its capacity {n2}; nothing was appended (key {s0}, value {s1})") \
    X(cache_truncate_past, "{a0} {n0} is past the {n1} positions held")                                                                 \
    X(cache_query_shape, "query must be (B, Hq, L, E) with B = {n0}, E = {n1} and Hq a multiple of the cache's {n2} key/value heads, got shape {s0}") \
    X(call_too_large, "the call needs {n0} bytes of WebAssembly memory for its inputs, outputs and working memory, more than it can hold (now {n1} bytes, at most {n2})") \
    X(object_disposed, "this object was disposed")                                                                                     \
    X(softcap_range, "{a0} must be 0 (none) or a positive number finite and non-zero as a float32, got {n0}")                           \
    X(window_side, "{a0} must be -1 (unbounded) or a count of keys >= 0, got {n0}")                                                     \
    X(per_head_count, "{a0} has {n0} values, expected one per query head: Hq = {n1} (query dim -3 of {s0})")                           \
    X(per_module_head_count, "{a0} has {n0} values, expected one per head: {a1} = {n1}")                                                \
    X(per_element_count, "{a0} has {n0} values, expected one per batch element: B = {n1} (the query dims before -3 of {s0})")          \
    X(per_element_count_n, "{a0} has {n0} values, expected one per batch element: N = {n1}")                                            \
    X(per_element_count_b, "{a0} has {n0} values, expected one per batch element: B = {n1}")                                            \
    X(value_not_finite, "{a0}[{n0}] must be finite, got {n1}")                                                                           \
    X(length_range, "{a0}[{n0}] = {n1} is outside [0, S] = [0, {n2}]")                                                                 \
    X(positioned_rule_appended_keys, "{a0} needs keys with positions, which {a1} and {a2} append without")                             \
    X(cache_count_range, "{a0}[{n0}] = {n1} is outside [0, n] = [0, {n2}] (key {s0}, value {s1})")                                     \
    X(cache_append_full_element, "{n0} positions do not fit: element {n1} holds {n2} of its capacity {n3}; nothing was appended (key {s0}, value {s1})") \
    X(cache_append_rolling, "{n0} positions are more than a rolling cache of capacity {n1} holds at once; nothing was appended (key {s0}, value {s1})") \
    X(cache_truncate_element_past, "{a0}[{n0}] = {n1} is past the {n2} positions element {n0} has")                                      \
    X(cache_truncate_before_oldest, "{a0}[{n0}] = {n1} is before position {n2}, the oldest this rolling cache still holds for element {n0}") \
    X(cache_rotary_dim, "{a0} must be even and at most {a1} = {n0} (0 = {a1}), got {n1}")                                              \
    X(rotary_rank, "{a0} must have at least 2 dims (…, L, D), got shape {s0}")                                                         \
    X(rotary_dim_range, "{a0} must be even and at most D = {n0} (0 = D), got {n1} for {a1} of shape {s0}")                              \
    X(base_range, "{a0} must be finite and > 0, got {n0}")                                                                              \
    X(positions_count, "{a0} has {n0} values, expected L = {n1} or B·L = {n2} (B: the dims before -3 of {s0})")                        \
    X(position_range, "{a0}[{n0}] = {n1} is outside [0, 2^31)")                                                                         \
    X(position_offset_range, "{a0} must be in [0, 2^31 - L], got {n0}")                                                                \
    X(shape_mismatch, "{a0} shape {s0} != {a1} shape {s1}")                                                                             \
    X(dim_not_positive, "{a0} must be positive, got {n0}")                                                                              \
    X(finite_nonnegative, "{a0} must be finite and >= 0, got {n0}")                                                                     \
    X(activation_unknown, "{a0} must be relu or gelu")                                                                                  \
    X(parameter_shape, "{t0} has shape {s0}, got {s1}")                                                                                 \
    X(linear_input_rank, "{a0} must have at least 1 dim (…, in), got a 0-D tensor ({a0} {s0}, {a1} {s1})")                             \
    X(linear_weight_rank, "{a1} must be 2-D (out, in) ({a0} {s0}, {a1} {s1})")                                                         \
    X(linear_in_mismatch, "{a0}'s last dim {n0} != {a1}'s in {n1} ({a0} {s0}, {a1} {s1})")                                              \
    X(linear_bias_shape, "{a2} must be 1-D (out,) = ({n0},) ({a0} {s0}, {a1} {s1}, {a2} {s2})")                                         \
    X(norm_shape_empty, "{a1} must have at least 1 dim ({a0} {s0}, {a1} {s1})")                                                        \
    X(norm_shape_trailing, "{a1} must be {a0}'s trailing dims ({a0} {s0}, {a1} {s1})")                                                 \
    X(norm_affine_shape, "{a2} shape {s2} != {a1} ({a0} {s0}, {a1} {s1})")                                                             \
    X(encoder_src_rank_seq_first, "{a0} must be 3-D (L, N, E) or 2-D (L, E) unbatched, got shape {s0}")                                 \
    X(encoder_src_rank_batch_first, "{a0} must be 3-D (N, L, E) or 2-D (L, E) unbatched, got shape {s0}")                               \
    X(encoder_src_dim, "{a0}'s last dim {n0} != {a1} {n1} ({a0} {s0})")                                                                 \
    X(encoder_padding_shape, "{a0} shape {s1} != {s2} (N, L) ({a1} {s0})")                                                              \
    X(encoder_padding_shape_unbatched, "{a0} shape {s1} != {s2} (L,) ({a1} {s0})")                                                      \
    X(encoder_mask_shape, "{a0} shape {s1} is neither {s2} (L, L) nor {s3} (N·nhead, L, L) ({a1} {s0})") \
    X(encoder_saved_other_layer, "{a0} was kept by another layer's forward")                                                            \
    X(encoder_saved_gone, "{a0} was used by a backward already, or released: a saving forward serves one backward")     \
    X(encoder_saved_differs, "{a0} was kept by a forward with other {a1} than this call's: pass the forward's arguments, and change no parameter between the two")
