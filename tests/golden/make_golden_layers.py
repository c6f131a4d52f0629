#!/usr/bin/env python3
"""Writes the golden fixtures of linear, layer_norm and TransformerEncoderLayer, using PyTorch as the reference.

    python3 tests/golden/make_golden_layers.py   # rewrites tests/golden/{layers,transformer}.txt

The fixture format and its helpers are make_golden.py's (this script imports them). Inputs and parameters are
float32; every expected value is computed by torch in float64 from those float32 values, with autograd:

* layers.txt: torch.nn.functional.linear and torch.nn.functional.layer_norm, forward and backward (the
  gradients of sum(grad_output * output) with respect to the input and the weight and bias).
* transformer.txt: torch.nn.TransformerEncoderLayer built in float64 and loaded with the case's float32
  parameters through load_state_dict; its output, and the gradients reaching src and every parameter. Grad mode
  is on for every case, which keeps torch off its inference fast path (a different algorithm for padded inputs).
  torch 1.13's layer has no is_causal: causal cases pass the causal mask (bool, true above the diagonal) as
  src_mask, and the fixture records is_causal without a src_mask. For dropout (training cases), each call of
  torch.nn.functional.dropout is replaced by xattn's keep mask for that site, in the order the layer calls it:
  the attention weights (N·nhead, L, L) with the case's seed, dropout1 (src's shape) with seed + 1, the
  feed-forward's dropout (src's shape with dim_feedforward last) with seed + 2, dropout2 with seed + 3.
"""
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_golden import Case, dropout_multiplier, randn, random_bool  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


# ---------------------------------------------------------------- linear and layer_norm

def linear_case(gen, name, input_shape, out, bias=True, scale=1.0):
    x = randn(gen, *input_shape)
    w = randn(gen, out, input_shape[-1], scale=scale)
    b = randn(gen, out) if bias else None
    xd, wd = x.double().requires_grad_(), w.double().requires_grad_()
    bd = b.double().requires_grad_() if bias else None
    y = F.linear(xd, wd, bd)
    grad_out = randn(gen, *y.shape)
    y.backward(grad_out.double())
    c = Case(name, "linear")
    c.opt("bias", bias)
    c.tensor("input", x)
    c.tensor("weight", w)
    if bias:
        c.tensor("bias", b)
    c.tensor("grad_output", grad_out)
    c.tensor("output", y.detach())
    c.tensor("grad_input", xd.grad)
    c.tensor("grad_weight", wd.grad)
    if bias:
        c.tensor("grad_bias", bd.grad)
    return c


def layer_norm_case(gen, name, input_shape, normalized_shape, weight=True, bias=True, eps=1e-5, offset=0.0,
                    scale=1.0):
    x = (randn(gen, *input_shape, scale=scale).double() + offset).float()
    w = (1 + randn(gen, *normalized_shape, scale=0.3).double()).float() if weight else None
    b = randn(gen, *normalized_shape, scale=0.3) if bias else None
    xd = x.double().requires_grad_()
    wd = w.double().requires_grad_() if weight else None
    bd = b.double().requires_grad_() if bias else None
    y = F.layer_norm(xd, normalized_shape, wd, bd, eps)
    grad_out = randn(gen, *y.shape)
    y.backward(grad_out.double())
    c = Case(name, "layer_norm")
    c.opt("normalized_shape", ",".join(str(d) for d in normalized_shape))
    c.opt("eps", float(eps))
    c.tensor("input", x)
    if weight:
        c.tensor("weight", w)
    if bias:
        c.tensor("bias", b)
    c.tensor("grad_output", grad_out)
    c.tensor("output", y.detach())
    c.tensor("grad_input", xd.grad)
    if weight:
        c.tensor("grad_weight", wd.grad)
    if bias:
        c.tensor("grad_bias", bd.grad)
    return c


def layer_cases(gen):
    cases = []
    add = cases.append
    add(linear_case(gen, "linear_2d_bias", (3, 5), 4))
    add(linear_case(gen, "linear_3d_no_bias", (2, 3, 7), 5, bias=False))
    add(linear_case(gen, "linear_1d_input", (6,), 2))
    # Past the kernel's blocks: more rows than a 64-row block, `in` past a 256-deep slice, `out` not whole vectors.
    add(linear_case(gen, "linear_past_the_blocks", (70, 260), 9, scale=0.1))
    add(linear_case(gen, "linear_in_1", (4, 1), 3))
    add(linear_case(gen, "linear_out_1_rows_17", (17, 6), 1))
    add(linear_case(gen, "linear_no_rows", (0, 4), 3))
    add(layer_norm_case(gen, "layer_norm_last_dim", (4, 6), (6,)))
    add(layer_norm_case(gen, "layer_norm_two_dims", (2, 3, 5), (3, 5)))
    add(layer_norm_case(gen, "layer_norm_no_affine", (3, 7), (7,), weight=False, bias=False))
    add(layer_norm_case(gen, "layer_norm_weight_only", (5, 4), (4,), bias=False))
    add(layer_norm_case(gen, "layer_norm_bias_only", (5, 4), (4,), weight=False))
    add(layer_norm_case(gen, "layer_norm_eps_1e-3", (3, 9), (9,), eps=1e-3, scale=0.05))
    add(layer_norm_case(gen, "layer_norm_large_offset", (4, 33), (33,), offset=1000.0))
    add(layer_norm_case(gen, "layer_norm_one_element", (3, 1), (1,)))
    add(layer_norm_case(gen, "layer_norm_whole_tensor", (2, 3), (2, 3)))
    add(layer_norm_case(gen, "layer_norm_wide_rows", (3, 131), (131,)))
    return cases


# ---------------------------------------------------------------- TransformerEncoderLayer

def encoder_case(gen, name, E, H, F_, L, N, activation="relu", norm_first=False, batch_first=False, eps=1e-5,
                 kpm=None, src_mask=None, is_causal=False, dropout=0.0, training=False, seed=0, attn_scale=0.5):
    """N None = unbatched. Masks in the layer's polarity (bool true = masked); no row may be fully masked.

    attn_scale: the attention projections' standard deviation (0.5 for the small models, near 1/sqrt(E) for
    wider ones, where 0.5 would saturate the softmax beyond what float32 can follow)."""
    torch.manual_seed(int(torch.randint(0, 2**31 - 1, (1,), generator=gen)))
    layer = torch.nn.TransformerEncoderLayer(E, H, dim_feedforward=F_, dropout=dropout, activation=activation,
                                             layer_norm_eps=eps, batch_first=batch_first, norm_first=norm_first,
                                             dtype=torch.float64)
    layer.train(training)
    state = {}
    for pname, p in layer.state_dict().items():
        if pname.startswith("norm") and pname.endswith("weight"):
            state[pname] = (1 + randn(gen, *p.shape, scale=0.2).double()).float()
        elif pname.startswith("norm"):
            state[pname] = randn(gen, *p.shape, scale=0.2)
        elif pname.startswith("self_attn"):
            state[pname] = randn(gen, *p.shape, scale=attn_scale)
        else:  # linear1, linear2: near nn.Linear's own scale, 1/sqrt(in)
            state[pname] = randn(gen, *p.shape, scale=1.0 / p.shape[-1] ** 0.5)
    layer.load_state_dict({k: v.double() for k, v in state.items()})

    shape = (L, E) if N is None else ((N, L, E) if batch_first else (L, N, E))
    src = randn(gen, *shape)
    src_d = src.double().requires_grad_()
    mask = src_mask
    if is_causal:
        mask = torch.ones(L, L, dtype=torch.bool).triu(diagonal=1)
    hidden_shape = shape[:-1] + (F_,)
    original_dropout = F.dropout
    sites = []
    if training and dropout > 0:
        sites = [dropout_multiplier(seed, dropout, ((N or 1) * H, L, L)),
                 dropout_multiplier(seed + 1, dropout, shape),
                 dropout_multiplier(seed + 2, dropout, hidden_shape),
                 dropout_multiplier(seed + 3, dropout, shape)]
    calls = []

    def keep_mask(x, p=0.5, training=True, inplace=False):
        if not training or p == 0:
            return x
        multiplier = sites[len(calls)]
        assert tuple(x.shape) == tuple(multiplier.shape), (name, x.shape, multiplier.shape)
        calls.append(x.shape)
        return x * multiplier

    F.dropout = keep_mask
    try:
        out = layer(src_d, src_mask=mask, src_key_padding_mask=kpm)
    finally:
        F.dropout = original_dropout
    assert len(calls) == len(sites), name + ": dropout called %d times, expected %d" % (len(calls), len(sites))
    assert not torch.isnan(out).any(), name + ": a fully masked row (torch gives NaN, xattn 0)"
    grad_out = randn(gen, *out.shape)
    out.backward(grad_out.double())

    c = Case(name, "transformer_encoder_layer")
    for key, value in [("d_model", E), ("nhead", H), ("dim_feedforward", F_), ("dropout", float(dropout)),
                       ("activation", activation), ("layer_norm_eps", float(eps)), ("batch_first", batch_first),
                       ("norm_first", norm_first), ("is_causal", is_causal), ("training", training), ("seed", seed)]:
        c.opt(key, value)
    for pname, p in state.items():
        c.tensor("param:" + pname, p)
    c.tensor("src", src)
    if src_mask is not None:
        c.tensor("src_mask", src_mask)
    if kpm is not None:
        c.tensor("src_key_padding_mask", kpm)
    c.tensor("grad_output", grad_out)
    c.tensor("output", out.detach())
    c.tensor("grad_src", src_d.grad)
    for pname, p in layer.named_parameters():
        c.tensor("grad:" + pname, p.grad)
    return c


def encoder_cases(gen):
    cases = []
    add = cases.append
    add(encoder_case(gen, "post_norm_relu_seq_first", E=8, H=2, F_=12, L=5, N=3))
    add(encoder_case(gen, "pre_norm_gelu_batch_first", E=12, H=3, F_=20, L=6, N=2, activation="gelu",
                     norm_first=True, batch_first=True))
    add(encoder_case(gen, "unbatched_post_norm_gelu", E=8, H=4, F_=16, L=7, N=None, activation="gelu"))
    add(encoder_case(gen, "unbatched_pre_norm_masks", E=8, H=2, F_=10, L=5, N=None, norm_first=True,
                     kpm=torch.tensor([False, False, True, False, False]), src_mask=randn(gen, 2, 5, 5)))
    kpm = torch.zeros(2, 6, dtype=torch.bool)
    kpm[0, 4:] = True
    kpm[1, 1] = True
    add(encoder_case(gen, "key_padding_bool_post_norm", E=8, H=2, F_=12, L=6, N=2, kpm=kpm))
    add(encoder_case(gen, "key_padding_float_pre_norm_gelu", E=8, H=2, F_=12, L=6, N=2, norm_first=True,
                     activation="gelu", kpm=randn(gen, 2, 6)))
    am = torch.zeros(6, 6, dtype=torch.bool)
    am[0, 1:] = True
    am[3, :2] = True
    add(encoder_case(gen, "src_mask_bool_post_norm_batch_first", E=8, H=2, F_=12, L=6, N=2, batch_first=True,
                     src_mask=am))
    add(encoder_case(gen, "src_mask_float_per_head_pre_norm", E=8, H=2, F_=12, L=5, N=3, norm_first=True,
                     src_mask=randn(gen, 6, 5, 5)))
    add(encoder_case(gen, "src_mask_and_key_padding_bool", E=8, H=2, F_=12, L=6, N=2, src_mask=am, kpm=kpm))
    add(encoder_case(gen, "causal_pre_norm_gelu_batch_first", E=16, H=4, F_=64, L=8, N=2, activation="gelu",
                     norm_first=True, batch_first=True, is_causal=True))
    add(encoder_case(gen, "causal_post_norm_key_padding", E=8, H=2, F_=12, L=6, N=2, is_causal=True,
                     kpm=torch.tensor([[False] * 5 + [True], [False] * 6])))
    add(encoder_case(gen, "dropout_training_post_norm_relu", E=8, H=2, F_=12, L=5, N=2, dropout=0.2, training=True,
                     seed=5))
    add(encoder_case(gen, "dropout_training_pre_norm_gelu_causal_batch_first", E=12, H=3, F_=16, L=6, N=2,
                     activation="gelu", norm_first=True, batch_first=True, is_causal=True, dropout=0.3,
                     training=True, seed=77))
    add(encoder_case(gen, "dropout_training_unbatched_masks", E=8, H=2, F_=10, L=5, N=None, dropout=0.25,
                     training=True, seed=12345678901, kpm=torch.tensor([False, True, False, False, False])))
    add(encoder_case(gen, "dropout_configured_but_eval", E=8, H=2, F_=12, L=4, N=2, dropout=0.5, training=False))
    add(encoder_case(gen, "layer_norm_eps_1e-3_pre_norm", E=8, H=2, F_=12, L=4, N=2, norm_first=True, eps=1e-3))
    add(encoder_case(gen, "one_position", E=4, H=1, F_=3, L=1, N=1))
    add(encoder_case(gen, "head_dim_3_batch_first_gelu", E=15, H=5, F_=7, L=9, N=3, batch_first=True,
                     activation="gelu"))
    # Past the kernels' blocks: 80 rows (64-row blocks), dim_feedforward 300 (256-deep slices, not whole vectors),
    # head dim 17, more than 16 queries and causal.
    add(encoder_case(gen, "past_the_blocks_pre_norm_gelu_causal", E=34, H=2, F_=300, L=40, N=2, activation="gelu",
                     norm_first=True, is_causal=True, attn_scale=0.17))
    add(encoder_case(gen, "past_the_blocks_post_norm_relu_batch_first", E=34, H=2, F_=300, L=40, N=2,
                     batch_first=True, kpm=random_bool(gen, (2, 40), 0.2) & (torch.arange(40) > 0),
                     attn_scale=0.17))
    return cases


def main():
    gen = torch.Generator().manual_seed(20261207)
    header = ("# xattn golden fixtures, written by tests/golden/make_golden_layers.py with torch %s; do not edit\n"
              % torch.__version__)
    for fname, make in (("layers.txt", layer_cases), ("transformer.txt", encoder_cases)):
        cases = make(gen)
        with open(os.path.join(HERE, fname), "w") as f:
            f.write(header)
            for c in cases:
                # No trailing space after an empty tensor's dims: the JS reader splits lines on single spaces.
                f.write("".join(line.rstrip() + "\n" for line in c.render().splitlines()))
        print("wrote %d cases to %s" % (len(cases), fname))


if __name__ == "__main__":
    main()
