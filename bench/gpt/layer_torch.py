#!/usr/bin/env python3
"""One torch.nn.TransformerEncoderLayer of the GPT chapter's model (bench/gpt/model.py: d_model 128, 4 heads,
feed-forward 512, exact GELU, pre-norm, batch first, the causal mask, no dropout) on a (12, 64, 128) batch: the
median time of its forward, and of a forward and backward (gradients of src and every parameter), in training mode
with autograd recording, as the GPT trains it. Prints one JSON line; bench/gpt/layer-bench.mjs runs it beside the package's layer.

    /usr/bin/python3 bench/gpt/layer_torch.py --threads 2 --rounds 5
"""
import argparse
import json
import os
import statistics
import time

parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
parser.add_argument("--threads", type=int, default=2)
parser.add_argument("--rounds", type=int, default=7)
parser.add_argument("--calls", type=int, default=20, help="calls timed together in one round")
args = parser.parse_args()
os.environ["OPENBLAS_NUM_THREADS"] = str(args.threads)  # before torch loads: OpenBLAS reads it once
os.environ["OMP_NUM_THREADS"] = str(args.threads)

import torch  # noqa: E402

B, T, C, H = 12, 64, 128, 4


def main():
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(C, H, dim_feedforward=4 * C, dropout=0.0, activation="gelu",
                                             batch_first=True, norm_first=True)
    layer.train()
    causal = torch.ones(T, T, dtype=torch.bool).triu(1)                 # (T, T) True = not allowed
    src = torch.randn(B, T, C, requires_grad=True)                      # (B, T, C)
    grad_output = torch.randn(B, T, C)                                  # (B, T, C)

    def forward():  # as training runs it: recording what the backward needs
        layer(src, src_mask=causal)

    def forward_backward():
        layer.zero_grad(set_to_none=True)
        src.grad = None
        layer(src, src_mask=causal).backward(grad_output)

    def median_ms(fn):
        fn()  # warm-up
        times = []
        for _ in range(args.rounds):
            t0 = time.perf_counter()
            for _ in range(args.calls):
                fn()
            times.append((time.perf_counter() - t0) / args.calls * 1e3)
        return statistics.median(times)

    print(json.dumps({"torch": torch.__version__, "threads": torch.get_num_threads(),
                      "forwardMs": median_ms(forward), "forwardBackwardMs": median_ms(forward_backward)}))


main()
