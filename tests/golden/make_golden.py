#!/usr/bin/env python3
"""Writes the golden fixtures xattn is tested against, using PyTorch as the reference.

    python3 tests/golden/make_golden.py        # rewrites tests/golden/{sdpa,mha,sdpa_grad,mha_grad}.txt

Inputs are float32 (what xattn takes); expected outputs and weights are computed in float64
from those float32 values, so the fixtures hold the exact answer, not PyTorch's float32 rounding.

* multi_head_attention: torch.nn.MultiheadAttention itself, built in float64 and loaded with the
  case's float32 parameters through load_state_dict.
* scaled_dot_product_attention: Debian's python3-torch is 1.13, older than
  torch.nn.functional.scaled_dot_product_attention (2.0), its `scale` (2.1) and `enable_gqa` (2.5).
  `sdpa_math` below composes the PyTorch >= 2.5 math path from torch operations (matmul,
  repeat_interleave, tril, softmax); when the running torch has the function, every case is also
  checked against it.
* gradients (sdpa_grad.txt): torch autograd through `sdpa_math` in float64. For dropout the fixture uses
  xattn's keep mask (a splitmix64 hash of seed and position, re-implemented here) so torch and xattn drop
  the same weights; PyTorch's own random stream cannot be reproduced.
* MultiheadAttention gradients (mha_grad.txt): torch autograd through torch.nn.MultiheadAttention in
  float64, for the inputs and every parameter. For dropout (the module's `dropout` in training mode),
  torch.nn.functional.dropout is replaced during the call by xattn's keep mask over the weights
  (N·H, L, S_total), the shape in which PyTorch applies it.

Fixture format (plain text, read by tests/golden.cpp and the JS tests):
    case <name>
    op sdpa | mha
    opt <key> <value>                            (zero or more)
    tensor <name> <f32|f64|i32|bool> <rank> <dims…> <values…>
    end
Values are row-major; f32 is written with 9 significant digits (round-trips float32), f64 with 17;
non-finite values are spelled inf, -inf, nan.
"""
import math
import os
import sys

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
NEG_INF = float("-inf")


# ---------------------------------------------------------------- writing

def fmt(x, digits):
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return "%.*g" % (digits, x)


class Case:
    def __init__(self, name, op):
        self.name, self.op, self.opts, self.tensors = name, op, [], []

    def opt(self, key, value):
        if isinstance(value, bool):
            value = int(value)
        self.opts.append((key, value))

    def tensor(self, name, t):
        self.tensors.append((name, t))

    def render(self):
        lines = ["case " + self.name, "op " + self.op]
        lines += ["opt %s %s" % (k, fmt(v, 17) if isinstance(v, float) else v) for k, v in self.opts]
        for name, t in self.tensors:
            if t.dtype == torch.bool:
                kind, vals = "bool", " ".join("1" if b else "0" for b in t.flatten().tolist())
            elif t.dtype == torch.float32:
                kind, vals = "f32", " ".join(fmt(x, 9) for x in t.flatten().tolist())
            elif t.dtype in (torch.int32, torch.int64):
                kind, vals = "i32", " ".join(str(int(x)) for x in t.flatten().tolist())
            else:
                kind, vals = "f64", " ".join(fmt(x, 17) for x in t.double().flatten().tolist())
            dims = " ".join(str(d) for d in t.shape)
            lines.append("tensor %s %s %d%s%s %s" % (name, kind, t.dim(), " " if dims else "", dims, vals))
        lines.append("end")
        return "\n".join(lines) + "\n"


def randn(gen, *shape, scale=1.0):
    return (torch.randn(*shape, generator=gen, dtype=torch.float64) * scale).float()


# ---------------------------------------------------------------- scaled_dot_product_attention

def sdpa_math(q, k, v, attn_mask=None, is_causal=False, bottom_right=False, scale=None, enable_gqa=False,
              dropout=None):
    """PyTorch >= 2.5's math path for F.scaled_dot_product_attention, in float64.
    q (…, Hq, L, E), k (…, H, S, E), v (…, H, S, Ev) -> output (…, Hq, L, Ev), weights (…, Hq, L, S)."""
    L, S, E = q.size(-2), k.size(-2), q.size(-1)
    scale = 1.0 / math.sqrt(E) if scale is None else scale
    if enable_gqa and q.dim() >= 3 and q.size(-3) != k.size(-3):
        group = q.size(-3) // k.size(-3)          # query head h reads kv head h // group
        k = k.repeat_interleave(group, dim=-3)
        v = v.repeat_interleave(group, dim=-3)
    bias = torch.zeros(L, S, dtype=torch.float64)
    if is_causal:
        allowed = torch.ones(L, S, dtype=torch.bool).tril(diagonal=(S - L) if bottom_right else 0)
        bias = bias.masked_fill(~allowed, NEG_INF)
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:  # SDPA polarity: true = may attend
            bias = torch.zeros(attn_mask.shape, dtype=torch.float64).masked_fill(~attn_mask, NEG_INF)
        else:
            bias = attn_mask.double()
    scores = q @ k.transpose(-2, -1) * scale + bias          # (…, L, S)
    # PyTorch >= 2.5: a row whose every score is -inf gives weights 0 instead of NaN. The row is
    # replaced before the softmax too, so autograd sees no NaN there (its gradient is 0).
    fully_masked = torch.isneginf(scores).all(dim=-1, keepdim=True)
    weights = torch.softmax(scores.masked_fill(fully_masked, 0.0), dim=-1)   # (…, L, S)
    weights = weights.masked_fill(fully_masked, 0.0)
    if dropout is not None:
        weights = weights * dropout                           # xattn's keep mask, already / (1 - p)
    return weights @ v, weights                               # (…, L, Ev), (…, L, S)


def cross_check_with_torch(q, k, v, out, mask, is_causal, bottom_right, scale, enable_gqa):
    if not hasattr(F, "scaled_dot_product_attention") or bottom_right:
        return
    kwargs = {"attn_mask": mask, "is_causal": is_causal, "scale": scale}
    if enable_gqa:
        kwargs["enable_gqa"] = True
    got = F.scaled_dot_product_attention(q.double(), k.double(), v.double(), **kwargs)
    if not torch.allclose(got, out, atol=1e-9, rtol=1e-9, equal_nan=True):
        sys.exit("sdpa_math disagrees with torch.nn.functional.scaled_dot_product_attention")


def sdpa_case(gen, name, q_shape, k_shape, v_shape, mask=None, is_causal=False, bottom_right=False, scale=None,
              enable_gqa=False, need_weights=True, inputs=None):
    q, k, v = inputs if inputs is not None else (randn(gen, *q_shape), randn(gen, *k_shape), randn(gen, *v_shape))
    out, weights = sdpa_math(q.double(), k.double(), v.double(), mask, is_causal, bottom_right, scale, enable_gqa)
    cross_check_with_torch(q, k, v, out, mask, is_causal, bottom_right, scale, enable_gqa)
    c = Case(name, "sdpa")
    if is_causal:
        c.opt("is_causal", True)
        c.opt("causal_alignment", "bottom_right" if bottom_right else "top_left")
    if scale is not None:
        c.opt("scale", float(scale))
    if enable_gqa:
        c.opt("enable_gqa", True)
    c.opt("need_weights", need_weights)
    c.tensor("query", q)
    c.tensor("key", k)
    c.tensor("value", v)
    if mask is not None:
        c.tensor("attn_mask", mask)
    c.tensor("output", out)
    if need_weights:
        c.tensor("weights", weights)
    return c


def random_bool(gen, shape, p_true):
    return torch.rand(*shape, generator=gen) < p_true


def sdpa_cases(gen):
    cases = []
    add = cases.append
    # The lesson's example and its quiz.
    add(sdpa_case(gen, "lesson_example_4x10x64", (4, 10, 64), (4, 10, 64), (4, 10, 64)))
    add(sdpa_case(gen, "lesson_quiz_8x128x32_value_64", (8, 128, 32), (8, 128, 32), (8, 128, 64), need_weights=False))
    # Ranks 2 to 5, L != S, Ev != E.
    add(sdpa_case(gen, "unbatched_2d", (5, 7), (9, 7), (9, 3)))
    add(sdpa_case(gen, "rank4_batch_heads", (2, 3, 5, 8), (2, 3, 6, 8), (2, 3, 6, 4)))
    add(sdpa_case(gen, "rank5", (2, 2, 2, 3, 4), (2, 2, 2, 5, 4), (2, 2, 2, 5, 6)))
    add(sdpa_case(gen, "L_lt_S_and_Ev_ne_E", (3, 4, 16), (3, 9, 16), (3, 9, 5)))
    add(sdpa_case(gen, "L_gt_S", (2, 9, 6), (2, 3, 6), (2, 3, 6)))
    # Boolean masks (true = attend) of several broadcast shapes.
    add(sdpa_case(gen, "bool_mask_L_S", (2, 3, 6, 8), (2, 3, 7, 8), (2, 3, 7, 8), mask=random_bool(gen, (6, 7), 0.7)))
    add(sdpa_case(gen, "bool_mask_B_1_1_S", (2, 3, 4, 8), (2, 3, 6, 8), (2, 3, 6, 5),
                  mask=random_bool(gen, (2, 1, 1, 6), 0.6) | (torch.arange(6) == 0)))
    add(sdpa_case(gen, "bool_mask_full_shape", (2, 5, 8), (2, 6, 8), (2, 6, 8), mask=random_bool(gen, (2, 5, 6), 0.5)))
    add(sdpa_case(gen, "bool_mask_H_1_S", (2, 3, 4, 8), (2, 3, 5, 8), (2, 3, 5, 8), mask=random_bool(gen, (3, 1, 5), 0.7)))
    # Float masks, added to the scaled scores.
    add(sdpa_case(gen, "float_mask_L_S", (2, 3, 6, 8), (2, 3, 7, 8), (2, 3, 7, 8), mask=randn(gen, 6, 7)))
    fm = randn(gen, 2, 5, 6, scale=2.0)
    fm[0, 1, 2] = NEG_INF
    fm[1, 3, :4] = NEG_INF
    add(sdpa_case(gen, "float_mask_full_shape_with_neg_inf", (2, 5, 8), (2, 6, 8), (2, 6, 8), mask=fm))
    add(sdpa_case(gen, "float_mask_1_L_1", (3, 4, 8), (3, 5, 8), (3, 5, 8), mask=randn(gen, 1, 4, 1)))
    # Causal, both alignments, square and L != S.
    add(sdpa_case(gen, "causal_square", (2, 6, 8), (2, 6, 8), (2, 6, 8), is_causal=True))
    add(sdpa_case(gen, "causal_square_bottom_right", (2, 6, 8), (2, 6, 8), (2, 6, 8), is_causal=True, bottom_right=True))
    add(sdpa_case(gen, "causal_L_lt_S_top_left", (2, 4, 8), (2, 7, 8), (2, 7, 5), is_causal=True))
    add(sdpa_case(gen, "causal_L_lt_S_bottom_right", (2, 4, 8), (2, 7, 8), (2, 7, 5), is_causal=True, bottom_right=True))
    add(sdpa_case(gen, "causal_L_gt_S_top_left", (2, 7, 8), (2, 4, 8), (2, 4, 5), is_causal=True))
    add(sdpa_case(gen, "causal_L_gt_S_bottom_right", (2, 7, 8), (2, 4, 8), (2, 4, 5), is_causal=True, bottom_right=True))
    add(sdpa_case(gen, "causal_rank4", (2, 2, 5, 4), (2, 2, 5, 4), (2, 2, 5, 4), is_causal=True))
    # Scale.
    add(sdpa_case(gen, "custom_scale", (2, 5, 8), (2, 6, 8), (2, 6, 8), scale=0.37))
    add(sdpa_case(gen, "negative_scale", (2, 5, 8), (2, 6, 8), (2, 6, 8), scale=-0.5))
    add(sdpa_case(gen, "large_scale", (2, 5, 8), (2, 6, 8), (2, 6, 8), scale=3.0))
    # Grouped-query attention.
    add(sdpa_case(gen, "gqa_6_heads_over_2", (2, 6, 5, 8), (2, 2, 7, 8), (2, 2, 7, 4), enable_gqa=True))
    add(sdpa_case(gen, "gqa_4_heads_over_1_causal", (4, 6, 8), (1, 6, 8), (1, 6, 8), enable_gqa=True, is_causal=True))
    add(sdpa_case(gen, "gqa_equal_heads", (2, 3, 4, 8), (2, 3, 4, 8), (2, 3, 4, 8), enable_gqa=True))
    add(sdpa_case(gen, "gqa_with_bool_mask", (1, 4, 3, 8), (1, 2, 5, 8), (1, 2, 5, 8), enable_gqa=True,
                  mask=random_bool(gen, (4, 3, 5), 0.7)))
    # Fully masked rows give weights 0 and output 0.
    bm = random_bool(gen, (4, 6), 0.7)
    bm[1, :] = False
    bm[3, :] = False
    add(sdpa_case(gen, "fully_masked_rows_bool", (2, 4, 8), (2, 6, 8), (2, 6, 8), mask=bm))
    fm = randn(gen, 4, 6)
    fm[2, :] = NEG_INF
    add(sdpa_case(gen, "fully_masked_row_float_neg_inf", (2, 4, 8), (2, 6, 8), (2, 6, 8), mask=fm))
    # Logits of +-1e4: integer inputs with scale 1 make every score exact in float32, so only the
    # softmax's stability is under test.
    q = torch.tensor([[100, 1], [-100, 0], [0, 100], [1, 1]], dtype=torch.float32)
    k = torch.tensor([[100, 0], [100, 1], [100, 2], [-100, 0], [0, 99]], dtype=torch.float32)
    v = randn(gen, 5, 3)
    add(sdpa_case(gen, "large_logits_1e4", None, None, None, scale=1.0, inputs=(q, k, v)))
    # Awkward sizes.
    add(sdpa_case(gen, "one_by_one_by_one", (1, 1, 1), (1, 1, 1), (1, 1, 1)))
    add(sdpa_case(gen, "odd_sizes_with_float_mask", (3, 5, 7), (3, 11, 7), (3, 11, 13), mask=randn(gen, 3, 5, 11)))
    add(sdpa_case(gen, "simd_width_edges", (2, 9, 3), (2, 17, 3), (2, 17, 15)))
    add(sdpa_case(gen, "single_key", (2, 4, 5), (2, 1, 5), (2, 1, 3)))
    add(sdpa_case(gen, "E_1", (2, 6, 1), (2, 6, 1), (2, 6, 2)))
    add(sdpa_case(gen, "saturating_inputs_x10", None, None, None,
                  inputs=(randn(gen, 2, 5, 8, scale=10.0), randn(gen, 2, 6, 8, scale=10.0), randn(gen, 2, 6, 8))))
    add(sdpa_case(gen, "e64_l33_s65", (2, 33, 64), (2, 65, 64), (2, 65, 64), is_causal=True, bottom_right=True))
    return cases


# ---------------------------------------------------------------- gradients

MASK64 = (1 << 64) - 1


def splitmix64(z):
    z = (z + 0x9E3779B97F4A7C15) & MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31)


def dropout_multiplier(seed, p, weights_shape):
    """xattn's dropout: weight (b, i, j) of the flattened problems is kept when
    uniform(splitmix64(seed ^ splitmix64(position))) >= p, and kept weights are scaled by 1/(1-p)."""
    L, S = weights_shape[-2], weights_shape[-1]
    n = 1
    for d in weights_shape:
        n *= d
    keep = torch.tensor([(splitmix64(seed ^ splitmix64(pos)) >> 11) * 2.0 ** -53 >= p for pos in range(n)])
    return (keep.double() / (1.0 - p)).reshape(weights_shape)


def grad_case(gen, name, q_shape, k_shape, v_shape, mask=None, is_causal=False, bottom_right=False, scale=None,
              enable_gqa=False, dropout_p=0.0, seed=0):
    q, k, v = randn(gen, *q_shape), randn(gen, *k_shape), randn(gen, *v_shape)
    qd, kd, vd = (x.double().requires_grad_() for x in (q, k, v))
    weights_shape = q_shape[:-1] + (k_shape[-2],)
    drop = dropout_multiplier(seed, dropout_p, weights_shape) if dropout_p > 0 else None
    out, _ = sdpa_math(qd, kd, vd, mask, is_causal, bottom_right, scale, enable_gqa, dropout=drop)
    grad_out = randn(gen, *out.shape)
    out.backward(grad_out.double())
    c = Case(name, "sdpa_grad")
    if is_causal:
        c.opt("is_causal", True)
        c.opt("causal_alignment", "bottom_right" if bottom_right else "top_left")
    if scale is not None:
        c.opt("scale", float(scale))
    if enable_gqa:
        c.opt("enable_gqa", True)
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


def grad_cases(gen):
    cases = []
    add = cases.append
    add(grad_case(gen, "lesson_example_4x10x64", (4, 10, 64), (4, 10, 64), (4, 10, 64)))
    add(grad_case(gen, "unbatched_2d", (5, 7), (9, 7), (9, 3)))
    add(grad_case(gen, "rank4_L_ne_S_Ev_ne_E", (2, 3, 5, 8), (2, 3, 7, 8), (2, 3, 7, 4)))
    add(grad_case(gen, "bool_mask_L_S", (2, 4, 8), (2, 6, 8), (2, 6, 8), mask=random_bool(gen, (4, 6), 0.7)))
    add(grad_case(gen, "bool_mask_B_1_1_S", (2, 2, 3, 8), (2, 2, 5, 8), (2, 2, 5, 4),
                  mask=random_bool(gen, (2, 1, 1, 5), 0.6) | (torch.arange(5) == 0)))
    fm = randn(gen, 2, 4, 6)
    fm[1, 2, :3] = NEG_INF
    add(grad_case(gen, "float_mask_with_neg_inf", (2, 4, 8), (2, 6, 8), (2, 6, 8), mask=fm))
    add(grad_case(gen, "causal_top_left_L_lt_S", (2, 4, 8), (2, 7, 8), (2, 7, 5), is_causal=True))
    add(grad_case(gen, "causal_bottom_right_L_lt_S", (2, 4, 8), (2, 7, 8), (2, 7, 5), is_causal=True, bottom_right=True))
    add(grad_case(gen, "causal_top_left_L_gt_S", (2, 7, 8), (2, 4, 8), (2, 4, 5), is_causal=True))
    add(grad_case(gen, "causal_bottom_right_L_gt_S_fully_masked_rows", (2, 7, 8), (2, 4, 8), (2, 4, 5), is_causal=True,
                  bottom_right=True))
    add(grad_case(gen, "custom_scale", (2, 5, 8), (2, 6, 8), (2, 6, 8), scale=0.37))
    add(grad_case(gen, "negative_scale", (2, 5, 8), (2, 6, 8), (2, 6, 8), scale=-0.5))
    add(grad_case(gen, "gqa_6_heads_over_2", (2, 6, 5, 8), (2, 2, 7, 8), (2, 2, 7, 4), enable_gqa=True))
    add(grad_case(gen, "gqa_4_over_1_causal", (4, 6, 8), (1, 6, 8), (1, 6, 8), enable_gqa=True, is_causal=True))
    bm = random_bool(gen, (4, 6), 0.7)
    bm[1, :] = False
    add(grad_case(gen, "fully_masked_row", (2, 4, 8), (2, 6, 8), (2, 6, 8), mask=bm))
    add(grad_case(gen, "dropout_0_3_seed_7", (2, 5, 8), (2, 6, 8), (2, 6, 4), dropout_p=0.3, seed=7))
    add(grad_case(gen, "dropout_causal_gqa", (1, 4, 5, 8), (1, 2, 5, 8), (1, 2, 5, 8), is_causal=True, enable_gqa=True,
                  dropout_p=0.5, seed=123456789))
    add(grad_case(gen, "odd_sizes", (3, 5, 7), (3, 11, 7), (3, 11, 13), mask=randn(gen, 3, 5, 11)))
    add(grad_case(gen, "one_by_one_by_one", (1, 1, 1), (1, 1, 1), (1, 1, 1)))
    return cases


# ---------------------------------------------------------------- multi_head_attention

def mha_case(gen, name, E, H, L, S, N, kdim=None, vdim=None, bias=True, batch_first=False, add_bias_kv=False,
             add_zero_attn=False, kpm=None, attn_mask=None, is_causal=False, need_weights=True,
             average_attn_weights=True, param_scale=0.5):
    """N None = unbatched. kpm / attn_mask: tensors in MultiheadAttention's polarity (true = masked).

    param_scale: the parameters' standard deviation. Wide models use one near PyTorch's own init
    (~1/sqrt(E)): with 0.5 at E = 64 the scores saturate the softmax and PyTorch's own float32 forward
    misses the float64 answer by more than the tolerance (3 of 2560 outputs, up to 1.1e-4)."""
    kd, vd = kdim or E, vdim or E
    torch.manual_seed(int(torch.randint(0, 2**31 - 1, (1,), generator=gen)))
    module = torch.nn.MultiheadAttention(E, H, bias=bias, add_bias_kv=add_bias_kv, add_zero_attn=add_zero_attn,
                                         kdim=kdim, vdim=vdim, batch_first=batch_first, dtype=torch.float64)
    module.eval()
    # Parameters in float32 (what xattn stores), biases made non-zero so they are under test.
    state = {name: randn(gen, *p.shape, scale=param_scale) for name, p in module.state_dict().items()}
    module.load_state_dict({k: v.double() for k, v in state.items()})

    def layout(T, D):
        if N is None:
            return (T, D)
        return (N, T, D) if batch_first else (T, N, D)

    q, k, v = randn(gen, *layout(L, E)), randn(gen, *layout(S, kd)), randn(gen, *layout(S, vd))
    mask = attn_mask
    if is_causal:  # xattn builds this from is_causal; torch 1.13 takes it explicitly
        mask = torch.ones(L, S, dtype=torch.bool).triu(diagonal=1)
    with torch.no_grad():
        out, weights = module(q.double(), k.double(), v.double(), key_padding_mask=kpm, attn_mask=mask,
                              need_weights=True, average_attn_weights=average_attn_weights)
        # xattn's documented difference: a fully masked row attends to nothing, so its attention is 0
        # and its output is out_proj applied to zeros (= out_proj.bias); PyTorch gives NaN there.
        zero_out = F.linear(torch.zeros(E, dtype=torch.float64), module.out_proj.weight, module.out_proj.bias)
        out = torch.where(torch.isnan(out), zero_out.expand_as(out), out)
        weights = torch.nan_to_num(weights, nan=0.0)

    c = Case(name, "mha")
    for key, value in [("embed_dim", E), ("num_heads", H), ("kdim", kd), ("vdim", vd), ("bias", bias),
                       ("batch_first", batch_first), ("add_bias_kv", add_bias_kv), ("add_zero_attn", add_zero_attn),
                       ("need_weights", need_weights), ("average_attn_weights", average_attn_weights),
                       ("is_causal", is_causal)]:
        c.opt(key, value)
    for pname, p in state.items():
        c.tensor("param:" + pname, p)
    c.tensor("query", q)
    c.tensor("key", k)
    c.tensor("value", v)
    if kpm is not None:
        c.tensor("key_padding_mask", kpm)
    if attn_mask is not None:
        c.tensor("attn_mask", attn_mask)
    c.tensor("output", out)
    if need_weights:
        c.tensor("weights", weights)
    return c


def mha_cases(gen):
    cases = []
    add = cases.append
    add(mha_case(gen, "self_attention_seq_first", E=8, H=2, L=5, S=5, N=3))
    add(mha_case(gen, "cross_attention_batch_first", E=12, H=3, L=4, S=6, N=2, batch_first=True))
    add(mha_case(gen, "unbatched", E=8, H=4, L=5, S=7, N=None))
    add(mha_case(gen, "kdim_vdim", E=8, H=4, L=3, S=6, N=2, kdim=5, vdim=3))
    add(mha_case(gen, "kdim_vdim_batch_first_no_bias", E=6, H=2, L=4, S=5, N=2, kdim=7, vdim=4, bias=False,
                 batch_first=True))
    add(mha_case(gen, "no_bias", E=8, H=2, L=4, S=4, N=2, bias=False))
    kpm = torch.zeros(2, 6, dtype=torch.bool)
    kpm[0, 4:] = True
    kpm[1, 1] = True
    add(mha_case(gen, "key_padding_mask_bool", E=8, H=2, L=5, S=6, N=2, kpm=kpm))
    add(mha_case(gen, "key_padding_mask_float", E=8, H=2, L=5, S=6, N=2, kpm=randn(gen, 2, 6)))
    add(mha_case(gen, "attn_mask_bool_L_S", E=8, H=2, L=5, S=6, N=2, attn_mask=random_bool(gen, (5, 6), 0.3)))
    add(mha_case(gen, "attn_mask_float_per_head", E=8, H=2, L=5, S=6, N=3, attn_mask=randn(gen, 6, 5, 6)))
    add(mha_case(gen, "attn_mask_and_key_padding_bool", E=8, H=2, L=4, S=5, N=2, batch_first=True,
                 attn_mask=random_bool(gen, (4, 5), 0.3), kpm=torch.tensor([[False] * 4 + [True], [False] * 5])))
    add(mha_case(gen, "per_head_weights", E=12, H=3, L=4, S=5, N=2, average_attn_weights=False))
    add(mha_case(gen, "add_bias_kv", E=8, H=2, L=4, S=5, N=2, add_bias_kv=True))
    add(mha_case(gen, "add_zero_attn", E=8, H=2, L=4, S=5, N=2, add_zero_attn=True))
    add(mha_case(gen, "bias_kv_zero_attn_with_masks", E=8, H=2, L=4, S=5, N=2, add_bias_kv=True, add_zero_attn=True,
                 attn_mask=random_bool(gen, (4, 5), 0.3), kpm=torch.tensor([[False] * 3 + [True] * 2, [False] * 5])))
    add(mha_case(gen, "is_causal", E=8, H=2, L=6, S=6, N=2, is_causal=True))
    add(mha_case(gen, "is_causal_batch_first_per_head", E=8, H=4, L=5, S=5, N=2, batch_first=True, is_causal=True,
                 average_attn_weights=False))
    add(mha_case(gen, "need_weights_false", E=8, H=2, L=4, S=5, N=2, need_weights=False))
    add(mha_case(gen, "unbatched_with_masks", E=8, H=2, L=4, S=5, N=None,
                 kpm=torch.tensor([False, False, True, False, False]), attn_mask=randn(gen, 2, 4, 5)))
    add(mha_case(gen, "fully_masked_batch_element", E=8, H=2, L=3, S=4, N=2,
                 kpm=torch.tensor([[True] * 4, [False, True, False, False]])))
    add(mha_case(gen, "wide_64_8_heads", E=64, H=8, L=20, S=20, N=2, param_scale=0.125))
    return cases


# ---------------------------------------------------------------- MultiheadAttention gradients

def mha_grad_case(gen, name, E, H, L, S, N, kdim=None, vdim=None, bias=True, batch_first=False, add_bias_kv=False,
                  add_zero_attn=False, kpm=None, attn_mask=None, is_causal=False, dropout=0.0, training=False, seed=0,
                  param_scale=0.5):
    """N None = unbatched. Masks in MultiheadAttention's polarity (true = masked); no row may be fully masked.

    param_scale: the parameters' standard deviation. A wide model needs one near PyTorch's own init
    (~1/sqrt(E)): with 0.5 at E = 64 the scores reach ~14, the softmax saturates, and float32 itself
    (PyTorch's float32 autograd included) misses the float64 gradients by 1e-3, 50x the tolerance."""
    kd, vd = kdim or E, vdim or E
    torch.manual_seed(int(torch.randint(0, 2**31 - 1, (1,), generator=gen)))
    module = torch.nn.MultiheadAttention(E, H, dropout=dropout, bias=bias, add_bias_kv=add_bias_kv,
                                         add_zero_attn=add_zero_attn, kdim=kdim, vdim=vdim, batch_first=batch_first,
                                         dtype=torch.float64)
    module.train(training)
    state = {pname: randn(gen, *p.shape, scale=param_scale) for pname, p in module.state_dict().items()}
    module.load_state_dict({k: v.double() for k, v in state.items()})

    def layout(T, D):
        if N is None:
            return (T, D)
        return (N, T, D) if batch_first else (T, N, D)

    q, k, v = randn(gen, *layout(L, E)), randn(gen, *layout(S, kd)), randn(gen, *layout(S, vd))
    qd, kd_, vd_ = (x.double().requires_grad_() for x in (q, k, v))
    mask = attn_mask
    if is_causal:  # xattn builds this from is_causal; torch 1.13 takes it explicitly
        mask = torch.ones(L, S, dtype=torch.bool).triu(diagonal=1)
    S_total = S + int(add_bias_kv) + int(add_zero_attn)
    original_dropout = F.dropout
    if training and dropout > 0:
        multiplier = dropout_multiplier(seed, dropout, ((N or 1) * H, L, S_total))
        F.dropout = lambda x, p=0.5, training=True, inplace=False: x * multiplier
    try:
        out, _ = module(qd, kd_, vd_, key_padding_mask=kpm, attn_mask=mask, need_weights=True)
    finally:
        F.dropout = original_dropout
    assert not torch.isnan(out).any(), name + ": a fully masked row (torch gives NaN, xattn 0)"
    grad_out = randn(gen, *out.shape)
    out.backward(grad_out.double())

    c = Case(name, "mha_grad")
    for key, value in [("embed_dim", E), ("num_heads", H), ("kdim", kd), ("vdim", vd), ("bias", bias),
                       ("batch_first", batch_first), ("add_bias_kv", add_bias_kv), ("add_zero_attn", add_zero_attn),
                       ("is_causal", is_causal), ("dropout", dropout), ("training", training), ("seed", seed)]:
        c.opt(key, value)
    for pname, p in state.items():
        c.tensor("param:" + pname, p)
    c.tensor("query", q)
    c.tensor("key", k)
    c.tensor("value", v)
    if kpm is not None:
        c.tensor("key_padding_mask", kpm)
    if attn_mask is not None:
        c.tensor("attn_mask", attn_mask)
    c.tensor("grad_output", grad_out)
    c.tensor("output", out.detach())
    c.tensor("grad_query", qd.grad)
    c.tensor("grad_key", kd_.grad)
    c.tensor("grad_value", vd_.grad)
    for pname, p in module.named_parameters():
        c.tensor("grad:" + pname, p.grad)
    return c


def mha_grad_cases(gen):
    cases = []
    add = cases.append
    add(mha_grad_case(gen, "self_attention_seq_first", E=8, H=2, L=5, S=5, N=3))
    add(mha_grad_case(gen, "cross_attention_batch_first", E=12, H=3, L=4, S=6, N=2, batch_first=True))
    add(mha_grad_case(gen, "unbatched", E=8, H=4, L=5, S=7, N=None))
    add(mha_grad_case(gen, "kdim_vdim", E=8, H=2, L=3, S=6, N=2, kdim=5, vdim=3))
    add(mha_grad_case(gen, "kdim_vdim_batch_first_no_bias", E=6, H=2, L=4, S=5, N=2, kdim=7, vdim=4, bias=False,
                      batch_first=True))
    kpm = torch.zeros(2, 6, dtype=torch.bool)
    kpm[0, 4:] = True
    kpm[1, 1] = True
    add(mha_grad_case(gen, "key_padding_mask_bool", E=8, H=2, L=5, S=6, N=2, kpm=kpm))
    add(mha_grad_case(gen, "key_padding_mask_float", E=8, H=2, L=5, S=6, N=2, kpm=randn(gen, 2, 6)))
    am = torch.zeros(5, 6, dtype=torch.bool)
    am[0, 1:] = True
    am[3, :2] = True
    add(mha_grad_case(gen, "attn_mask_bool_L_S", E=8, H=2, L=5, S=6, N=2, attn_mask=am))
    add(mha_grad_case(gen, "attn_mask_float_per_head", E=8, H=2, L=5, S=6, N=3, attn_mask=randn(gen, 6, 5, 6)))
    add(mha_grad_case(gen, "attn_mask_and_key_padding_bool", E=8, H=2, L=5, S=6, N=2, batch_first=True,
                      kpm=kpm, attn_mask=am))
    add(mha_grad_case(gen, "float_attn_mask_and_bool_key_padding", E=8, H=2, L=5, S=6, N=2, kpm=kpm,
                      attn_mask=randn(gen, 5, 6)))
    add(mha_grad_case(gen, "bias_kv_zero_attn_with_masks", E=8, H=2, L=5, S=6, N=2, add_bias_kv=True,
                      add_zero_attn=True, kpm=kpm, attn_mask=am))
    add(mha_grad_case(gen, "is_causal", E=8, H=2, L=6, S=6, N=2, is_causal=True))
    add(mha_grad_case(gen, "is_causal_key_padding_bias_kv", E=8, H=2, L=6, S=6, N=2, is_causal=True,
                      add_bias_kv=True, kpm=torch.tensor([[False] * 5 + [True], [False] * 6])))
    add(mha_grad_case(gen, "dropout_training_seed_11", E=8, H=2, L=5, S=6, N=2, dropout=0.3, training=True, seed=11))
    add(mha_grad_case(gen, "dropout_masks_bias_kv_batch_first", E=12, H=3, L=4, S=5, N=2, batch_first=True,
                      add_bias_kv=True, add_zero_attn=True, kpm=kpm[:, :5], dropout=0.25, training=True, seed=3))
    add(mha_grad_case(gen, "dropout_configured_but_eval", E=8, H=2, L=4, S=4, N=2, dropout=0.5, training=False))
    add(mha_grad_case(gen, "wider_64_8_heads", E=64, H=8, L=16, S=16, N=2, param_scale=0.125))
    # Beside the small ones above: head dims that are not multiples of the 4-lane vectors, more query rows than a
    # 16-row group and more keys than a 96-key tile (appended last, so the cases above keep their random draws).
    kpm_wide = random_bool(gen, (2, 100), 0.3)
    add(mha_grad_case(gen, "head_dim_17_kdim_vdim_past_the_tiles", E=34, H=2, L=20, S=100, N=2, kdim=5, vdim=3,
                      kpm=kpm_wide, attn_mask=randn(gen, 20, 100), param_scale=0.17))
    add(mha_grad_case(gen, "head_dim_3_causal_bias_kv_zero_attn_batch_first", E=15, H=5, L=20, S=40, N=2, kdim=7,
                      vdim=11, bias=False, batch_first=True, add_bias_kv=True, add_zero_attn=True, is_causal=True,
                      param_scale=0.25))
    return cases


def main():
    gen = torch.Generator().manual_seed(20261129)
    header = "# xattn golden fixtures, written by tests/golden/make_golden.py with torch %s; do not edit\n" % torch.__version__
    for fname, make in (("sdpa.txt", sdpa_cases), ("mha.txt", mha_cases), ("sdpa_grad.txt", grad_cases),
                        ("mha_grad.txt", mha_grad_cases)):
        cases = make(gen)
        with open(os.path.join(HERE, fname), "w") as f:
            f.write(header)
            for c in cases:
                f.write(c.render())
        print("wrote %d cases to %s" % (len(cases), fname))


if __name__ == "__main__":
    main()
