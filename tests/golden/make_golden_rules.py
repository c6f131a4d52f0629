#!/usr/bin/env python3
"""Writes the golden fixtures of the attention rules beyond PyTorch's SDPA, in float64 torch:

    /usr/bin/python3 tests/golden/make_golden_rules.py   # rewrites tests/golden/{sdpa_rules,sdpa_rules_grad,rotary,mha_rules,kv_rules}.txt

Same format and conventions as make_golden.py (float32 inputs, float64 answers, autograd for gradients).
What each rule is computed from:

* soft-capping: Gemma 2's `softcap * tanh(scores / softcap)`, plain torch, applied before the masks.
* ALiBi: BLOOM's bias, plain torch: slope_h * (j - p) added to the scores. The generator checks that the
  weights equal those of BLOOM's own form, slope_h * j (a shift per row, which the softmax ignores).
* sliding windows: an explicit boolean mask (FlashAttention's window_size, p - left <= j <= p + right) through
  make_golden.sdpa_math, PyTorch's SDPA math path; the generator checks that its rule tensor gives the same.
* key lengths with causal and window alignment: ONNX Attention's published semantics (opset 24-25,
  nonpad_kv_seqlen: keys j >= len_b are padding, and a causal row sits at i + len_b - L), written here as
  float64 torch.
* returned scores: ONNX Attention's qk_matmul_output stages (scaled, after the soft-cap, after every bias).
* MultiheadAttention with the rules: its forward written out in torch, checked against torch.nn.MultiheadAttention
  with the rules as an explicit float attn_mask wherever there is no soft-cap; gradients by autograd.
* KV cache scenarios: appends (each element its own count), truncations and rolling buffers written as lists of
  positions in Python, keys turned as they go in; the attend is the rules above on what each element holds.
* rotary embeddings: ONNX RotaryEmbedding (opset 23) semantics; Hugging Face's rotate_half (non-interleaved)
  and GPT-J's pairs (interleaved), written in torch.

Query row i of problem (n, h) sits at p = i + offset: offset 0 (top-left) or len_n - L (bottom-right), len_n the
element's key length (S without key lengths).
"""
import math
import os

import torch

import make_golden as mg

HERE = os.path.dirname(os.path.abspath(__file__))
NEG_INF = float("-inf")


def bloom_slopes(H):
    """BLOOM's ALiBi slopes for H a power of two: 2^(-8 (h + 1) / H)."""
    return torch.tensor([2.0 ** (-8.0 * (h + 1) / H) for h in range(H)], dtype=torch.float32)


def flat_heads(shape):
    """(B, H) of a query shape (…, L, E): H = dim -3 (1 for 2-D), B = the dims before it."""
    lead = list(shape[:-2])
    H = lead[-1] if lead else 1
    B = 1
    for d in lead[:-1]:
        B *= d
    return B, H


def rule_tensors(q_shape, L, S, is_causal, bottom_right, window, alibi, key_lengths):
    """allowed (B, H, L, S) bool and bias (B, H, L, S) float64 of the rules (key lengths, causal, window, ALiBi)."""
    B, H = flat_heads(q_shape)
    lengths = [S] * B if key_lengths is None else [int(x) for x in key_lengths.tolist()]
    left, right = window
    allowed = torch.zeros(B, H, L, S, dtype=torch.bool)
    bias = torch.zeros(B, H, L, S, dtype=torch.float64)
    j = torch.arange(S).reshape(1, S)
    for n in range(B):
        offset = lengths[n] - L if bottom_right else 0
        p = (torch.arange(L) + offset).reshape(L, 1)
        ok = j < lengths[n]
        if is_causal:
            ok = ok & (j <= p)
        if left >= 0:
            ok = ok & (j >= p - left)
        if right >= 0:
            ok = ok & (j <= p + right)
        allowed[n] = ok
        if alibi is not None:
            for h in range(H):
                bias[n, h] = float(alibi[h]) * (j - p).double()
    return allowed, bias


def attention(q, k, v, mask=None, is_causal=False, bottom_right=False, scale=None, enable_gqa=False, softcap=0.0,
              window=(-1, -1), alibi=None, key_lengths=None, dropout=None):
    """float64 q (…, Hq, L, E), k (…, Hkv, S, E), v (…, Hkv, S, Ev) -> output, weights and the scores' stages."""
    L, S, E = q.size(-2), k.size(-2), q.size(-1)
    scale = 1.0 / math.sqrt(E) if scale is None else scale
    if enable_gqa and q.dim() >= 3 and q.size(-3) != k.size(-3):
        group = q.size(-3) // k.size(-3)
        k = k.repeat_interleave(group, dim=-3)
        v = v.repeat_interleave(group, dim=-3)
    scaled = q @ k.transpose(-2, -1) * scale                          # (…, L, S)
    capped = softcap * torch.tanh(scaled / softcap) if softcap > 0 else scaled
    allowed, bias = rule_tensors(q.shape, L, S, is_causal, bottom_right, window, alibi, key_lengths)
    shape = scaled.shape
    allowed, bias = allowed.reshape(shape), bias.reshape(shape)
    if mask is not None:
        if mask.dtype == torch.bool:
            allowed = allowed & mask.expand(shape)
        else:
            bias = bias + mask.double().expand(shape)
    biased = (capped + bias).masked_fill(~allowed, NEG_INF)
    fully_masked = torch.isneginf(biased).all(dim=-1, keepdim=True)
    weights = torch.softmax(biased.masked_fill(fully_masked, 0.0), dim=-1).masked_fill(fully_masked, 0.0)
    if dropout is not None:
        weights = weights * dropout
    return weights @ v, weights, {"scaled": scaled, "softcapped": capped, "biased": biased}


def check_window_against_sdpa(q, k, v, out, L, S, is_causal, bottom_right, window, scale, enable_gqa):
    """A window alone is PyTorch's SDPA with the window as an explicit boolean mask."""
    allowed, _ = rule_tensors(q.shape, L, S, is_causal, bottom_right, window, None, None)
    explicit = allowed.reshape(q.shape[:-2] + (L, S))
    want, _ = mg.sdpa_math(q.double(), k.double(), v.double(), attn_mask=explicit, scale=scale, enable_gqa=enable_gqa)
    assert torch.allclose(out, want, atol=1e-12, rtol=1e-12), "window rule differs from SDPA with the explicit mask"


def check_alibi_against_bloom(q, k, v, weights, alibi, scale, enable_gqa):
    """BLOOM adds slope_h * j: the same weights as slope_h * (j - p), up to rounding."""
    S = k.size(-2)
    B, H = flat_heads(q.shape)
    bloom = (alibi.double().reshape(H, 1, 1) * torch.arange(S).double().reshape(1, 1, S)).expand(B, H, q.size(-2), S)
    _, want = mg.sdpa_math(q.double(), k.double(), v.double(), attn_mask=bloom.reshape(weights.shape), scale=scale,
                           enable_gqa=enable_gqa)
    assert torch.allclose(weights, want, atol=1e-12, rtol=1e-10), "ALiBi differs from BLOOM's form"


def options(c, is_causal, bottom_right, scale, enable_gqa, softcap, window, alibi, key_lengths):
    if is_causal:
        c.opt("is_causal", True)
    if is_causal or bottom_right:
        c.opt("causal_alignment", "bottom_right" if bottom_right else "top_left")
    if scale is not None:
        c.opt("scale", float(scale))
    if enable_gqa:
        c.opt("enable_gqa", True)
    if softcap > 0:
        c.opt("softcap", float(softcap))
    if window != (-1, -1):
        c.opt("window_left", window[0])
        c.opt("window_right", window[1])
    if alibi is not None:
        c.tensor("alibi_slopes", alibi)
    if key_lengths is not None:
        c.tensor("key_lengths", key_lengths)


def rules_case(gen, name, q_shape, k_shape, v_shape, mask=None, is_causal=False, bottom_right=False, scale=None,
               enable_gqa=False, softcap=0.0, window=(-1, -1), alibi=None, key_lengths=None, scores=None,
               input_scale=1.0, need_weights=True):
    q, k, v = (mg.randn(gen, *q_shape, scale=input_scale), mg.randn(gen, *k_shape, scale=input_scale),
               mg.randn(gen, *v_shape))
    out, weights, stages = attention(q.double(), k.double(), v.double(), mask, is_causal, bottom_right, scale,
                                     enable_gqa, softcap, window, alibi, key_lengths)
    L, S = q_shape[-2], k_shape[-2]
    if softcap == 0 and alibi is None and key_lengths is None and mask is None and window != (-1, -1):
        check_window_against_sdpa(q, k, v, out, L, S, is_causal, bottom_right, window, scale, enable_gqa)
    if alibi is not None and softcap == 0 and key_lengths is None and mask is None and not is_causal and \
            window == (-1, -1):
        check_alibi_against_bloom(q, k, v, weights, alibi, scale, enable_gqa)
    c = mg.Case(name, "sdpa")
    options(c, is_causal, bottom_right, scale, enable_gqa, softcap, window, alibi, key_lengths)
    c.opt("need_weights", need_weights)
    if scores is not None:
        c.opt("return_scores", scores)
    c.tensor("query", q)
    c.tensor("key", k)
    c.tensor("value", v)
    if mask is not None:
        c.tensor("attn_mask", mask)
    c.tensor("output", out)
    if need_weights:
        c.tensor("weights", weights)
    if scores is not None:
        c.tensor("scores", stages[scores])
    return c


def rules_cases(gen):
    cases = []
    add = cases.append
    lengths = lambda *xs: torch.tensor(xs, dtype=torch.int32)  # noqa: E731
    # Soft-capping (Gemma 2 caps at 50; smaller caps so that the inputs reach the tanh's bend).
    add(rules_case(gen, "softcap_5", (2, 3, 17, 16), (2, 3, 33, 16), (2, 3, 33, 8), softcap=5.0, input_scale=3.0))
    add(rules_case(gen, "softcap_50_large_scores", (2, 9, 8), (2, 20, 8), (2, 20, 8), softcap=50.0, scale=4.0,
                   input_scale=3.0))
    add(rules_case(gen, "softcap_2_causal_bool_mask", (2, 7, 8), (2, 7, 8), (2, 7, 5), softcap=2.0, is_causal=True,
                   mask=mg.random_bool(gen, (7, 7), 0.8), input_scale=2.0))
    # Causal together with a mask (added to each other).
    add(rules_case(gen, "causal_with_float_mask", (2, 6, 8), (2, 9, 8), (2, 9, 8), is_causal=True,
                   mask=mg.randn(gen, 6, 9)))
    add(rules_case(gen, "causal_bottom_right_with_bool_mask", (2, 2, 5, 8), (2, 2, 9, 8), (2, 2, 9, 4),
                   is_causal=True, bottom_right=True, mask=mg.random_bool(gen, (2, 1, 1, 9), 0.7)))
    # Sliding windows: left only, both sides, wider than S, zero width, bottom-right with L > S.
    add(rules_case(gen, "window_left_3_causal", (2, 40, 8), (2, 40, 8), (2, 40, 6), is_causal=True, window=(3, -1)))
    add(rules_case(gen, "window_left_2_right_1", (2, 17, 8), (2, 17, 8), (2, 17, 8), window=(2, 1)))
    add(rules_case(gen, "window_right_only_2", (1, 9, 4), (1, 13, 4), (1, 13, 4), window=(-1, 2)))
    add(rules_case(gen, "window_wider_than_S", (2, 5, 8), (2, 30, 8), (2, 30, 8), window=(100, 100)))
    add(rules_case(gen, "window_zero_width", (2, 6, 8), (2, 6, 8), (2, 6, 8), window=(0, 0)))
    add(rules_case(gen, "window_bottom_right_L_gt_S", (2, 20, 8), (2, 9, 8), (2, 9, 5), bottom_right=True,
                   window=(2, 1)))
    add(rules_case(gen, "window_causal_bottom_right_L_lt_S", (2, 7, 8), (2, 30, 8), (2, 30, 8), is_causal=True,
                   bottom_right=True, window=(4, -1)))
    add(rules_case(gen, "window_across_tiles_130", (1, 130, 16), (1, 250, 16), (1, 250, 16), is_causal=True,
                   bottom_right=True, window=(50, -1)))
    add(rules_case(gen, "window_33_both_sides_across_groups", (2, 70, 9), (2, 70, 9), (2, 70, 7), window=(33, 20)))
    # ALiBi (BLOOM's slopes), per head, with GQA, with causal and bottom-right alignment.
    add(rules_case(gen, "alibi_4_heads", (2, 4, 9, 8), (2, 4, 12, 8), (2, 4, 12, 8), alibi=bloom_slopes(4)))
    add(rules_case(gen, "alibi_causal_bottom_right_gqa", (1, 8, 5, 8), (1, 2, 11, 8), (1, 2, 11, 8),
                   alibi=bloom_slopes(8), is_causal=True, bottom_right=True, enable_gqa=True))
    add(rules_case(gen, "alibi_3d_heads_first", (3, 17, 8), (3, 70, 8), (3, 70, 8), alibi=bloom_slopes(4)[:3] * 3.0))
    # Key lengths: each element its own count (0 and S included), causal aligned to its own length.
    add(rules_case(gen, "key_lengths_0_S_5", (3, 2, 4, 8), (3, 2, 9, 8), (3, 2, 9, 4), key_lengths=lengths(0, 9, 5)))
    add(rules_case(gen, "key_lengths_causal_bottom_right", (3, 2, 4, 8), (3, 2, 9, 8), (3, 2, 9, 4),
                   key_lengths=lengths(2, 9, 6), is_causal=True, bottom_right=True))
    add(rules_case(gen, "key_lengths_causal_top_left", (2, 1, 6, 8), (2, 1, 9, 8), (2, 1, 9, 8),
                   key_lengths=lengths(3, 7), is_causal=True))
    add(rules_case(gen, "key_lengths_across_tiles", (2, 2, 20, 16), (2, 2, 200, 16), (2, 2, 200, 16),
                   key_lengths=lengths(97, 161), is_causal=True, bottom_right=True))
    add(rules_case(gen, "key_lengths_3d", (2, 5, 8), (2, 11, 8), (2, 11, 8), key_lengths=lengths(6)))
    # Everything at once.
    add(rules_case(gen, "all_rules_gqa", (2, 4, 19, 8), (2, 2, 45, 8), (2, 2, 45, 6), enable_gqa=True, softcap=3.0,
                   is_causal=True, bottom_right=True, window=(10, -1), alibi=bloom_slopes(4),
                   key_lengths=lengths(45, 23), mask=mg.randn(gen, 19, 45), input_scale=2.0))
    add(rules_case(gen, "all_rules_no_weights", (2, 4, 19, 8), (2, 2, 45, 8), (2, 2, 45, 6), enable_gqa=True,
                   softcap=3.0, is_causal=True, bottom_right=True, window=(10, 2), alibi=bloom_slopes(4),
                   key_lengths=lengths(31, 44), input_scale=2.0, need_weights=False))
    # Returned scores at each stage (with and without the weights).
    for stage in ("scaled", "softcapped", "biased"):
        add(rules_case(gen, "scores_" + stage, (2, 2, 18, 8), (2, 2, 21, 8), (2, 2, 21, 8), softcap=2.0,
                       is_causal=True, window=(5, -1), alibi=bloom_slopes(2), key_lengths=lengths(21, 12),
                       bottom_right=True, mask=mg.random_bool(gen, (18, 21), 0.85), scores=stage,
                       need_weights=stage != "softcapped", input_scale=2.0))
    add(rules_case(gen, "scores_scaled_no_rules", (2, 5, 8), (2, 7, 8), (2, 7, 8), scores="scaled"))
    return cases


def rules_grad_case(gen, name, q_shape, k_shape, v_shape, mask=None, is_causal=False, bottom_right=False, scale=None,
                    enable_gqa=False, softcap=0.0, window=(-1, -1), alibi=None, key_lengths=None, dropout_p=0.0, seed=0,
                    input_scale=1.0):
    q, k, v = (mg.randn(gen, *q_shape, scale=input_scale), mg.randn(gen, *k_shape, scale=input_scale),
               mg.randn(gen, *v_shape))
    qd, kd, vd = (x.double().requires_grad_() for x in (q, k, v))
    weights_shape = tuple(q_shape[:-1]) + (k_shape[-2],)
    drop = mg.dropout_multiplier(seed, dropout_p, weights_shape) if dropout_p > 0 else None
    out, _, _ = attention(qd, kd, vd, mask, is_causal, bottom_right, scale, enable_gqa, softcap, window, alibi,
                          key_lengths, dropout=drop)
    grad_out = mg.randn(gen, *out.shape)
    out.backward(grad_out.double())
    c = mg.Case(name, "sdpa_grad")
    options(c, is_causal, bottom_right, scale, enable_gqa, softcap, window, alibi, key_lengths)
    if dropout_p > 0:
        c.opt("dropout_p", float(dropout_p))
        c.opt("seed", seed)
    c.tensor("query", q)
    c.tensor("key", k)
    c.tensor("value", v)
    if mask is not None:
        c.tensor("attn_mask", mask)
    c.tensor("grad_output", grad_out)
    c.tensor("output", out.detach())
    c.tensor("grad_query", qd.grad)
    c.tensor("grad_key", kd.grad)
    c.tensor("grad_value", vd.grad)
    return c


def rules_grad_cases(gen):
    cases = []
    add = cases.append
    lengths = lambda *xs: torch.tensor(xs, dtype=torch.int32)  # noqa: E731
    add(rules_grad_case(gen, "softcap_5", (2, 3, 17, 16), (2, 3, 33, 16), (2, 3, 33, 8), softcap=5.0, input_scale=3.0))
    add(rules_grad_case(gen, "softcap_causal_mask", (2, 7, 8), (2, 7, 8), (2, 7, 5), softcap=2.0, is_causal=True,
                        mask=mg.randn(gen, 7, 7), input_scale=2.0))
    add(rules_grad_case(gen, "window_left_3_causal", (2, 40, 8), (2, 40, 8), (2, 40, 6), is_causal=True,
                        window=(3, -1)))
    add(rules_grad_case(gen, "window_both_sides_bottom_right_L_gt_S", (2, 20, 8), (2, 9, 8), (2, 9, 5),
                        bottom_right=True, window=(2, 1)))
    add(rules_grad_case(gen, "window_across_tiles", (1, 130, 16), (1, 250, 16), (1, 250, 16), is_causal=True,
                        bottom_right=True, window=(50, 3)))
    add(rules_grad_case(gen, "alibi_gqa_causal", (1, 8, 5, 8), (1, 2, 11, 8), (1, 2, 11, 8), alibi=bloom_slopes(8),
                        is_causal=True, bottom_right=True, enable_gqa=True))
    add(rules_grad_case(gen, "key_lengths_causal_bottom_right", (3, 2, 4, 8), (3, 2, 9, 8), (3, 2, 9, 4),
                        key_lengths=lengths(0, 9, 6), is_causal=True, bottom_right=True))
    add(rules_grad_case(gen, "key_lengths_across_tiles", (2, 2, 20, 16), (2, 2, 200, 16), (2, 2, 200, 16),
                        key_lengths=lengths(97, 161), is_causal=True, bottom_right=True))
    add(rules_grad_case(gen, "all_rules_dropout", (2, 4, 19, 8), (2, 2, 45, 8), (2, 2, 45, 6), enable_gqa=True,
                        softcap=3.0, is_causal=True, bottom_right=True, window=(10, -1), alibi=bloom_slopes(4),
                        key_lengths=lengths(45, 23), mask=mg.randn(gen, 19, 45), dropout_p=0.25, seed=9,
                        input_scale=2.0))
    # The forward's edge cases, backward: a window that sees only the query's own position, one wider than S on
    # both sides, and key lengths of 0 and S beside one between (top-left: without causal or a window the
    # alignment moves nothing; then with causal, each row at its own index). Drawn from their own generator so
    # that the fixtures written after this file keep their values.
    edge = torch.Generator().manual_seed(20270102)
    add(rules_grad_case(edge, "window_zero_width", (2, 6, 8), (2, 6, 8), (2, 6, 8), window=(0, 0)))
    add(rules_grad_case(edge, "window_wider_than_S", (2, 5, 8), (2, 30, 8), (2, 30, 8), window=(100, 100)))
    add(rules_grad_case(edge, "key_lengths_0_S_5", (3, 2, 4, 8), (3, 2, 9, 8), (3, 2, 9, 4),
                        key_lengths=lengths(0, 9, 5)))
    add(rules_grad_case(edge, "key_lengths_0_S_5_causal_top_left", (3, 2, 4, 8), (3, 2, 9, 8), (3, 2, 9, 4),
                        key_lengths=lengths(0, 9, 5), is_causal=True))
    return cases


# ---------------------------------------------------------------- MultiheadAttention with the rules

def mha_rules_torch(module, q, k, v, N, batch_first, kpm=None, attn_mask=None, **rules):
    """torch.nn.MultiheadAttention's forward written out in torch (its projections, heads and masks), with the
    rules in every head: output and the weights averaged over heads. A row with every key hidden gives 0."""
    E, H = module.embed_dim, module.num_heads
    hd = E // H

    def rows(x):  # (N, T, C)
        if N is None:
            return x.unsqueeze(0)
        return x if batch_first else x.transpose(0, 1)

    xq, xk, xv = rows(q), rows(k), rows(v)
    if module._qkv_same_embed_dim:
        Wq, Wk, Wv = module.in_proj_weight.chunk(3)
    else:
        Wq, Wk, Wv = module.q_proj_weight, module.k_proj_weight, module.v_proj_weight
    bq, bk, bv = module.in_proj_bias.chunk(3) if module.in_proj_bias is not None else (None, None, None)
    n, L, S = xq.size(0), xq.size(1), xk.size(1)
    heads = lambda x, T: torch.nn.functional.linear(*x).reshape(n, T, H, hd).transpose(1, 2)  # noqa: E731
    Q, K, V = heads((xq, Wq, bq), L), heads((xk, Wk, bk), S), heads((xv, Wv, bv), S)  # (N, H, T, hd)
    bias = torch.zeros(n, H, L, S, dtype=torch.float64)
    if attn_mask is not None:  # MHA polarity: a true boolean forbids
        m = torch.zeros(attn_mask.shape, dtype=torch.float64).masked_fill(attn_mask, NEG_INF) \
            if attn_mask.dtype == torch.bool else attn_mask.double()
        bias = bias + (m.reshape(n, H, L, S) if m.dim() == 3 else m)
    if kpm is not None:
        m = torch.zeros(kpm.shape, dtype=torch.float64).masked_fill(kpm, NEG_INF) if kpm.dtype == torch.bool \
            else kpm.double()
        bias = bias + m.reshape(n, 1, 1, S)
    out, weights, _ = attention(Q, K, V, mask=bias, **rules)            # (N, H, L, hd), (N, H, L, S)
    out = out.transpose(1, 2).reshape(n, L, E)
    out = torch.nn.functional.linear(out, module.out_proj.weight, module.out_proj.bias)
    out = out.squeeze(0) if N is None else (out if batch_first else out.transpose(0, 1))
    weights = weights.mean(dim=1)
    return out, weights.squeeze(0) if N is None else weights


def check_mha_against_torch(module, q, k, v, out, kpm, attn_mask, L, S, N, rules):
    """Without a soft-cap, the rules are a float attn_mask (N·H, L, S) to torch.nn.MultiheadAttention itself."""
    H = module.num_heads
    n = 1 if N is None else N
    allowed, bias = rule_tensors((n, H, L, 1), L, S, rules.get("is_causal", False), rules.get("bottom_right", False),
                                 rules.get("window", (-1, -1)), rules.get("alibi"), rules.get("key_lengths"))
    explicit = bias.masked_fill(~allowed, NEG_INF)
    if attn_mask is not None:
        m = torch.zeros(attn_mask.shape, dtype=torch.float64).masked_fill(attn_mask, NEG_INF) \
            if attn_mask.dtype == torch.bool else attn_mask.double()
        explicit = explicit + (m.reshape(n, H, L, S) if m.dim() == 3 else m)
    with torch.no_grad():
        want, _ = module(q.double(), k.double(), v.double(), key_padding_mask=kpm,
                         attn_mask=explicit.reshape(n * H, L, S), need_weights=False)
    keep = ~torch.isnan(want)  # rows with every key hidden: NaN in PyTorch, 0 here
    assert torch.allclose(out.detach()[keep], want[keep], atol=1e-10, rtol=1e-10), "MHA rules differ from torch's MHA"


def mha_rules_case(gen, name, E, H, L, S, N, batch_first=False, kpm=None, attn_mask=None, param_scale=0.5, **rules):
    torch.manual_seed(int(torch.randint(0, 2**31 - 1, (1,), generator=gen)))
    module = torch.nn.MultiheadAttention(E, H, batch_first=batch_first, dtype=torch.float64)
    state = {pname: mg.randn(gen, *p.shape, scale=param_scale) for pname, p in module.state_dict().items()}
    module.load_state_dict({key: val.double() for key, val in state.items()})

    def layout(T):
        if N is None:
            return (T, E)
        return (N, T, E) if batch_first else (T, N, E)

    q, k, v = mg.randn(gen, *layout(L)), mg.randn(gen, *layout(S)), mg.randn(gen, *layout(S))
    qd, kd, vd = (x.double().requires_grad_() for x in (q, k, v))
    rules.setdefault("scale", None)
    out, weights = mha_rules_torch(module, qd, kd, vd, N, batch_first, kpm, attn_mask, **rules)
    if rules.get("softcap", 0.0) == 0.0:
        check_mha_against_torch(module, q, k, v, out, kpm, attn_mask, L, S, N, rules)
    grad_out = mg.randn(gen, *out.shape)
    out.backward(grad_out.double())
    c = mg.Case(name, "mha_grad")
    for key, value in [("embed_dim", E), ("num_heads", H), ("kdim", E), ("vdim", E), ("bias", True),
                       ("batch_first", batch_first), ("add_bias_kv", False), ("add_zero_attn", False),
                       ("need_weights", True), ("average_attn_weights", True)]:
        c.opt(key, value)
    options(c, rules.get("is_causal", False), rules.get("bottom_right", False), None, False, rules.get("softcap", 0.0),
            rules.get("window", (-1, -1)), rules.get("alibi"), rules.get("key_lengths"))
    for pname, p in state.items():
        c.tensor("param:" + pname, p)
    c.tensor("query", q)
    c.tensor("key", k)
    c.tensor("value", v)
    if kpm is not None:
        c.tensor("key_padding_mask", kpm)
    if attn_mask is not None:
        c.tensor("attn_mask", attn_mask)
    c.tensor("output", out.detach())
    c.tensor("weights", weights.detach())
    c.tensor("grad_output", grad_out)
    c.tensor("grad_query", qd.grad)
    c.tensor("grad_key", kd.grad)
    c.tensor("grad_value", vd.grad)
    for pname, p in module.named_parameters():
        c.tensor("grad:" + pname, p.grad)
    return c


def mha_rules_cases(gen):
    cases = []
    add = cases.append
    lengths = lambda *xs: torch.tensor(xs, dtype=torch.int32)  # noqa: E731
    add(mha_rules_case(gen, "softcap_causal", E=8, H=2, L=6, S=6, N=2, softcap=1.5, is_causal=True))
    add(mha_rules_case(gen, "window_alibi_batch_first", E=12, H=3, L=9, S=9, N=2, batch_first=True, is_causal=True,
                       window=(3, -1), alibi=bloom_slopes(4)[:3]))
    add(mha_rules_case(gen, "key_lengths_bottom_right_cross", E=8, H=2, L=4, S=7, N=3, is_causal=True,
                       bottom_right=True, key_lengths=lengths(7, 5, 2)))
    add(mha_rules_case(gen, "causal_with_attn_mask_and_padding", E=8, H=4, L=5, S=5, N=2, is_causal=True,
                       attn_mask=mg.randn(gen, 5, 5), kpm=torch.tensor([[False] * 4 + [True], [False] * 5])))
    add(mha_rules_case(gen, "all_rules_unbatched", E=8, H=2, L=7, S=11, N=None, softcap=2.0, window=(4, 1),
                       alibi=bloom_slopes(2), key_lengths=lengths(9), bottom_right=True, is_causal=True))
    return cases


# ---------------------------------------------------------------- rotary embeddings

def rotary(x, positions, base, rotary_dim, interleaved):
    """ONNX RotaryEmbedding on x (…, L, D) with positions broadcasting to (…, L): the first rotary_dim features
    rotated by angle position · base^(-2k / rotary_dim), the rest passed through."""
    r = rotary_dim
    inv_freq = base ** (-torch.arange(0, r, 2, dtype=torch.float64) / r)     # (r/2)
    angles = positions.double().unsqueeze(-1) * inv_freq                     # (…, L, r/2)
    cos, sin = torch.cos(angles), torch.sin(angles)
    rot, rest = x[..., :r], x[..., r:]
    if interleaved:  # GPT-J: pairs (x[2k], x[2k+1])
        even, odd = rot[..., 0::2], rot[..., 1::2]
        out = torch.stack((even * cos - odd * sin, odd * cos + even * sin), dim=-1).flatten(-2)
    else:  # Hugging Face: x · cos + rotate_half(x) · sin, rotate_half(x) = (-x2, x1)
        x1, x2 = rot[..., : r // 2], rot[..., r // 2:]
        rotate_half = torch.cat((-x2, x1), dim=-1)
        out = rot * torch.cat((cos, cos), dim=-1) + rotate_half * torch.cat((sin, sin), dim=-1)
    return torch.cat((out, rest), dim=-1)


def rotary_case(gen, name, shape, positions=None, position_offset=0, base=10000.0, rotary_dim=None, interleaved=False):
    x = mg.randn(gen, *shape)
    L, D = shape[-2], shape[-1]
    r = D if rotary_dim is None else rotary_dim
    B, _ = flat_heads(shape)
    if positions is None:
        pos = torch.arange(L) + position_offset                               # (L)
        pos_b = pos.reshape(1, L)
    else:
        pos_b = positions.reshape(-1, L).long()                               # (1 or B, L)
    lead = shape[:-2]
    # (B, H, L) positions for the flattened (B, H, L, D) input; one row of positions per batch element
    heads = lead[-1] if lead else 1
    pos_full = pos_b.expand(B, L).reshape(B, 1, L).expand(B, heads, L).reshape(tuple(lead) + (L,))
    xd = x.double().requires_grad_()
    out = rotary(xd, pos_full, base, r, interleaved)
    grad_out = mg.randn(gen, *out.shape)
    out.backward(grad_out.double())
    c = mg.Case(name, "rotary")
    c.opt("base", float(base))
    c.opt("rotary_dim", r)
    c.opt("interleaved", interleaved)
    if positions is None:
        c.opt("position_offset", position_offset)
    c.tensor("x", x)
    if positions is not None:
        c.tensor("positions", positions)
    c.tensor("output", out.detach())
    c.tensor("grad_output", grad_out)
    c.tensor("grad_x", xd.grad)
    return c


def rotary_cases(gen):
    cases = []
    add = cases.append
    ints = lambda rows: torch.tensor(rows, dtype=torch.int32)  # noqa: E731
    add(rotary_case(gen, "rotate_half_llama_1x4x6x64", (1, 4, 6, 64)))
    add(rotary_case(gen, "gptj_interleaved_2x2x5x16", (2, 2, 5, 16), interleaved=True))
    add(rotary_case(gen, "partial_rotary_dim_8_of_12", (2, 3, 4, 12), rotary_dim=8))
    add(rotary_case(gen, "partial_interleaved_dim_6_of_10", (1, 2, 7, 10), rotary_dim=6, interleaved=True))
    add(rotary_case(gen, "position_offset_4090_base_500000", (1, 2, 3, 32), position_offset=4090, base=500000.0))
    add(rotary_case(gen, "positions_per_batch_element", (2, 3, 4, 8), positions=ints([[0, 1, 2, 3], [7, 9, 100, 4]])))
    add(rotary_case(gen, "positions_shared_3d", (3, 5, 6), positions=ints([5, 3, 1, 0, 8191]), interleaved=True))
    add(rotary_case(gen, "unbatched_2d", (9, 4)))
    return cases


# ---------------------------------------------------------------- KV cache scenarios

def kv_scenario(gen, name, B, Hkv, Hq, E, Ev, capacity, steps, L, rolling=False, rotary_rule=None, mask=None,
                **rules):
    """A cache written as a list per element of (position, key row, value row): appends (`n` rows, optional
    per-element `counts`) and truncations (per-element lengths), then an attend of L query rows, each element's
    last L positions, with the rules over the positions each element still holds (ONNX Attention's
    nonpad_kv_seqlen alignment). Keys turn by their positions (ONNX RotaryEmbedding) as they go in."""
    held = [[] for _ in range(B)]  # per element: (position, key (Hkv, E), value (Hkv, Ev)), oldest first
    appended = [0] * B
    c = mg.Case(name, "kv_cache")
    for key, value in [("batch", B), ("kv_heads", Hkv), ("head_dim", E), ("value_dim", Ev), ("capacity", capacity),
                       ("rolling", rolling), ("steps", len(steps))]:
        c.opt(key, value)
    if rotary_rule is not None:
        c.opt("rotary_base", float(rotary_rule[0]))
        c.opt("rotary_dim", rotary_rule[1])
        c.opt("rotary_interleaved", rotary_rule[2])
    for i, step in enumerate(steps):
        if "truncate" in step:
            t = torch.tensor(step["truncate"], dtype=torch.int32)
            c.tensor("step%d_truncate" % i, t)
            for b in range(B):
                held[b] = [entry for entry in held[b] if entry[0] < int(t[b])]
                appended[b] = int(t[b])
            continue
        n = step["n"]
        k, v = mg.randn(gen, B, Hkv, n, E), mg.randn(gen, B, Hkv, n, Ev)
        c.tensor("step%d_key" % i, k)
        c.tensor("step%d_value" % i, v)
        counts = step.get("counts", [n] * B)
        if "counts" in step:
            c.tensor("step%d_counts" % i, torch.tensor(counts, dtype=torch.int32))
        for b in range(B):
            for t in range(counts[b]):
                pos = appended[b] + t
                key = k[b, :, t].double()                                          # (Hkv, E)
                if rotary_rule is not None:
                    key = rotary(key.unsqueeze(1), torch.tensor([pos]), *rotary_rule).squeeze(1)
                held[b].append((pos, key, v[b, :, t].double()))
            appended[b] += counts[b]
            if rolling:
                held[b] = held[b][-capacity:]
    S = max(len(h) for h in held)
    K = torch.zeros(B, Hkv, S, E, dtype=torch.float64)
    V = torch.zeros(B, Hkv, S, Ev, dtype=torch.float64)
    for b in range(B):
        for j, (_, key, value) in enumerate(held[b]):
            K[b, :, j], V[b, :, j] = key, value
    lengths = torch.tensor([len(h) for h in held], dtype=torch.int32)
    q = mg.randn(gen, B, Hq, L, E)
    out, weights, _ = attention(q.double(), K, V, mask=mask, bottom_right=True, enable_gqa=True, key_lengths=lengths,
                                **rules)
    options(c, rules.get("is_causal", False), False, None, False, rules.get("softcap", 0.0),
            rules.get("window", (-1, -1)), rules.get("alibi"), None)
    c.opt("need_weights", True)
    c.tensor("query", q)
    if mask is not None:
        c.tensor("attn_mask", mask)
    c.tensor("lengths", lengths)
    c.tensor("keys", K)
    c.tensor("output", out)
    c.tensor("weights", weights)
    return c


def kv_cases(gen):
    cases = []
    add = cases.append
    # Mistral-like: a rolling buffer of the window, keys turned as they go in, one row a step after a prefill.
    add(kv_scenario(gen, "rolling_window_rotary_decode", B=2, Hkv=2, Hq=4, E=8, Ev=6, capacity=5,
                    steps=[{"n": 3}, {"n": 1}, {"n": 1}, {"n": 1}, {"n": 2}], L=1, rolling=True,
                    rotary_rule=(10000.0, 8, False), is_causal=True, window=(4, -1)))
    # Batched serving: each element appends its own count; ALiBi and a soft-cap, three rows of prefill.
    add(kv_scenario(gen, "per_element_counts_alibi_softcap", B=3, Hkv=1, Hq=2, E=8, Ev=8, capacity=20,
                    steps=[{"n": 4, "counts": [4, 1, 0]}, {"n": 5, "counts": [2, 5, 3]}], L=3,
                    alibi=bloom_slopes(2), softcap=2.0, is_causal=True))
    # Truncated on its own, per element, in a rolled ring; a mask beside the causal rule; GPT-J rotary.
    add(kv_scenario(gen, "rolled_then_truncated_masked", B=2, Hkv=2, Hq=2, E=6, Ev=4, capacity=6,
                    steps=[{"n": 5}, {"n": 4, "counts": [4, 2]}, {"truncate": [8, 6]}, {"n": 1}], L=2, rolling=True,
                    rotary_rule=(500.0, 4, True), is_causal=True, mask=mg.randn(gen, 1, 1, 2, 6)))
    # A wide ring across the decoding kernel's tiles (64 slots) and chunks, with a window inside it.
    add(kv_scenario(gen, "rolling_across_tiles", B=1, Hkv=1, Hq=3, E=16, Ev=16, capacity=150,
                    steps=[{"n": 100}, {"n": 90}, {"n": 1}], L=1, rolling=True, window=(120, -1), is_causal=True))
    return cases


def main():
    gen = torch.Generator().manual_seed(20270101)
    header = ("# xattn golden fixtures, written by tests/golden/make_golden_rules.py with torch %s; do not edit\n"
              % torch.__version__)
    for fname, make in (("sdpa_rules.txt", rules_cases), ("sdpa_rules_grad.txt", rules_grad_cases),
                        ("rotary.txt", rotary_cases), ("mha_rules.txt", mha_rules_cases), ("kv_rules.txt", kv_cases)):
        cases = make(gen)
        with open(os.path.join(HERE, fname), "w") as f:
            f.write(header)
            for c in cases:
                f.write(c.render())
        print("wrote %d cases to %s" % (len(cases), fname))


if __name__ == "__main__":
    main()
