// The call record: what crosses between JavaScript and the wasm module on every call, as plain doubles in one
// array of the module's memory. One schema, this file: the bindings (embind.cpp) read and write the record from
// these lists, and scripts/gen-boundary.mjs writes the JavaScript side (js/boundary-schema.js) from the same
// lists; tests/js/schema.test.mjs fails when that copy is stale, and the module's signature() (a hash of the
// lists below and of xattn/messages.hpp's ids) must equal the generated one or the package refuses to start.
//
// A call is at most two crossings:
//   prepare(op)  JS has written op's request; the module checks it, plans, places every buffer of the call in
//                one block of its own memory (allocating only when its kept block is too small), and writes the
//                reply: each buffer's address, the output shapes. Or it refuses: a message id and what fills it
//                (the error record), nothing allocated, nothing changed.
//   execute()    after JS copied the inputs in: runs the prepared call. JS then copies the outputs out.
// Operations without inputs to copy (creating, reading, truncating) finish in prepare.
//
// Kinds and their slots: shape = 1 + XATTN_RECORD_MAX_RANK (the rank, then the dims, zeros past the rank),
// list = 1 + XATTN_RECORD_MAX_LIST (the count, then the values: a rule's per-head or per-element numbers, which
// the plan checks before anything is placed), number / flag / address = 1. Keep each entry on one line: the
// generator reads them line by line.
#pragma once

#define XATTN_RECORD_MAX_RANK 16
#define XATTN_RECORD_MAX_LIST 256
#define XATTN_RECORD_SLOTS 1024
// Entries of the parameter table a created module's reply carries (each: name, offset, rank, d0, d1, d2).
#define XATTN_RECORD_PARAMETERS 16

// X(op)
#define XATTN_OPERATIONS(X) \
    X(sdpa)                 \
    X(sdpa_backward)        \
    X(mha_create)           \
    X(mha_forward)          \
    X(mha_backward)         \
    X(kv_create)            \
    X(kv_append)            \
    X(kv_truncate)          \
    X(kv_read)              \
    X(kv_attend)            \
    X(rotary)               \
    X(linear)               \
    X(linear_backward)      \
    X(layer_norm)           \
    X(layer_norm_backward)  \
    X(encoder_create)       \
    X(encoder_forward)      \
    X(encoder_backward)

// Requests: F(field, kind), in record order.
#define XATTN_REQUEST_sdpa(F)                                                                                  \
    F(query, shape) F(key, shape) F(value, shape) F(attn_mask, shape) F(mask_kind, number) F(is_causal, flag) \
    F(bottom_right, flag) F(has_scale, flag) F(scale, number) F(dropout_p, number) F(seed, number)            \
    F(enable_gqa, flag) F(need_weights, flag) F(softcap, number) F(window_left, number)                       \
    F(window_right, number) F(alibi_slopes, list) F(key_lengths, list) F(return_scores, number) F(float16, flag)
#define XATTN_REQUEST_sdpa_backward(F) XATTN_REQUEST_sdpa(F) F(grad_output, shape)
#define XATTN_REQUEST_mha_create(F)                                                                             \
    F(embed_dim, number) F(num_heads, number) F(kdim, number) F(vdim, number) F(bias, flag) F(batch_first, flag) \
    F(add_bias_kv, flag) F(add_zero_attn, flag) F(dropout, number) F(init_seed, number)
#define XATTN_REQUEST_mha_forward(F)                                                                              \
    F(module, number) F(query, shape) F(key, shape) F(value, shape) F(key_padding_mask, shape) F(attn_mask, shape) \
    F(kpm_kind, number) F(attn_kind, number) F(need_weights, flag) F(average_attn_weights, flag) F(is_causal, flag) \
    F(training, flag) F(seed, number) F(bottom_right, flag) F(softcap, number) F(window_left, number)            \
    F(window_right, number) F(alibi_slopes, list) F(key_lengths, list)
#define XATTN_REQUEST_mha_backward(F) XATTN_REQUEST_mha_forward(F) F(grad_output, shape)
#define XATTN_REQUEST_kv_create(F)                                                                                   \
    F(batch, number) F(kv_heads, number) F(head_dim, number) F(value_dim, number) F(capacity, number) F(float16, flag) \
    F(rolling, flag) F(rotary, flag) F(rotary_base, number) F(rotary_dim, number) F(rotary_interleaved, flag)
#define XATTN_REQUEST_kv_append(F) F(module, number) F(key, shape) F(value, shape) F(counts, list) F(float16, flag)
#define XATTN_REQUEST_kv_truncate(F) F(module, number) F(length, number) F(lengths, list)
#define XATTN_REQUEST_kv_read(F) F(module, number) F(values, flag)
#define XATTN_REQUEST_kv_attend(F)                                                                          \
    F(module, number) F(query, shape) F(attn_mask, shape) F(mask_kind, number) F(is_causal, flag)           \
    F(has_scale, flag) F(scale, number) F(need_weights, flag) F(softcap, number) F(window_left, number)     \
    F(window_right, number) F(alibi_slopes, list) F(float16, flag)
#define XATTN_REQUEST_rotary(F)                                                                           \
    F(x, shape) F(positions, shape) F(position_offset, number) F(base, number) F(rotary_dim, number)      \
    F(interleaved, flag) F(backward, flag) F(float16, flag)
#define XATTN_REQUEST_linear(F) F(input, shape) F(weight, shape) F(bias, shape) F(has_bias, flag)
#define XATTN_REQUEST_linear_backward(F) XATTN_REQUEST_linear(F) F(grad_output, shape)
#define XATTN_REQUEST_layer_norm(F) \
    F(input, shape) F(normalized_shape, shape) F(has_weight, flag) F(has_bias, flag) F(eps, number)
#define XATTN_REQUEST_layer_norm_backward(F) XATTN_REQUEST_layer_norm(F) F(grad_output, shape)
#define XATTN_REQUEST_encoder_create(F)                                                                         \
    F(d_model, number) F(nhead, number) F(dim_feedforward, number) F(dropout, number) F(gelu, flag)             \
    F(layer_norm_eps, number) F(batch_first, flag) F(norm_first, flag) F(init_seed, number)
#define XATTN_REQUEST_encoder_forward(F)                                                                        \
    F(module, number) F(src, shape) F(src_mask, shape) F(src_key_padding_mask, shape) F(mask_kind, number)     \
    F(kpm_kind, number) F(is_causal, flag) F(training, flag) F(seed, number) F(save, flag)
#define XATTN_REQUEST_encoder_backward(F) XATTN_REQUEST_encoder_forward(F) F(grad_output, shape) F(saved, number)

// The reply to a prepare that succeeded: F(field, kind), in record order. An address is 0 for a buffer the call
// does not have. An encoder forward with `save` replies with the handle of what it kept for one backward (that
// backward's `saved`). A created module's reply also holds its handle, where its parameters live (data, floats of
// them; a TransformerEncoderLayer keeps those from offset rest_from on at rest_data, apart from its self_attn's)
// and its parameter table (after these fields: XATTN_RECORD_PARAMETERS entries of six numbers, the name's
// index in XATTN_PARAMETER_NAMES or -1 past the last, then offset, rank, d0, d1, d2). The layers' calls use
// input (a TransformerEncoderLayer's src) and grad_input (its grad_src), attn_mask (its src_mask) and
// key_padding_mask (its src_key_padding_mask).
#define XATTN_REPLY(F)                                                                                         \
    F(query, address) F(key, address) F(value, address) F(attn_mask, address) F(key_padding_mask, address)     \
    F(grad_output, address) F(output, address) F(weights, address) F(grad_query, address) F(grad_key, address) \
    F(grad_value, address) F(grad_parameters, address) F(output_shape, shape) F(weights_shape, shape)          \
    F(handle, number) F(data, address) F(floats, number) F(length, number) F(scores, address) F(x, address)    \
    F(positions, address) F(input, address) F(weight, address) F(bias, address) F(grad_input, address)          \
    F(grad_weight, address) F(grad_bias, address) F(rest_from, number) F(rest_data, address)

// A refusal: F(field, kind), in record order (the ids are those of xattn/messages.hpp; shapes past
// shape_count are empty).
#define XATTN_ERROR(F)                                                                                    \
    F(code, number) F(function, number) F(argument0, number) F(argument1, number) F(argument2, number)    \
    F(argument3, number) F(number0, number) F(number1, number) F(number2, number) F(number3, number)     \
    F(shape_count, number) F(shape0, shape) F(shape1, shape) F(shape2, shape) F(shape3, shape)           \
    F(shape4, shape) F(shape5, shape)

// The names a parameter table may hold (PyTorch's state_dict names), by index.
#define XATTN_PARAMETER_NAMES(X) \
    X("in_proj_weight")          \
    X("q_proj_weight")           \
    X("k_proj_weight")           \
    X("v_proj_weight")           \
    X("in_proj_bias")            \
    X("bias_k")                  \
    X("bias_v")                  \
    X("out_proj.weight")         \
    X("out_proj.bias")           \
    X("self_attn.in_proj_weight") \
    X("self_attn.in_proj_bias")  \
    X("self_attn.out_proj.weight") \
    X("self_attn.out_proj.bias") \
    X("linear1.weight")          \
    X("linear1.bias")            \
    X("linear2.weight")          \
    X("linear2.bias")            \
    X("norm1.weight")            \
    X("norm1.bias")              \
    X("norm2.weight")            \
    X("norm2.bias")
