#!/usr/bin/env python3
"""Trains nanoGPT's cheap configuration (bench/gpt/model.py) in PyTorch on CPU, the reference the lab's
"Build a GPT" chapter is measured against: wall time per step and validation loss at steps 500, 1000, 1500 and
2000, on a given thread count (2 by default, as the browser bench uses).

    bash bench/gpt/setup.sh                        # Debian's python3-torch and OpenBLAS
    /usr/bin/python3 bench/gpt/train_torch.py      # --threads N, --steps N (fewer, for a quick look)

Torch must do its products on OpenBLAS: the script stops when libblas.so.3 is not OpenBLAS in this process
(--allow-reference-blas runs anyway, for comparison). Evaluation time is not counted as training time.
"""
import argparse
import os
import statistics
import sys
import time

parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
parser.add_argument("--threads", type=int, default=2)
parser.add_argument("--steps", type=int, default=None, help="train this many steps (default: the config's 2000)")
parser.add_argument("--allow-reference-blas", action="store_true")
parser.add_argument("--interleave", action="store_true",
                    help="train only when told: each stdin line 'to N' trains up to step N, then prints 'at N'")
args = parser.parse_args()
# Before torch loads: OpenBLAS reads its thread count once, at load time.
os.environ["OPENBLAS_NUM_THREADS"] = str(args.threads)
os.environ["OMP_NUM_THREADS"] = str(args.threads)

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from model import CONFIG, load_corpus, lr_at, make_model, make_optimizer, random_batch, validation_loss  # noqa: E402


def blas_in_use():
    """The BLAS library this process mapped, after a product has run, and the product's GFLOP/s."""
    a, b = torch.randn(1024, 1024), torch.randn(1024, 1024)
    a @ b
    t0 = time.perf_counter()
    for _ in range(5):
        a @ b
    gflops = 5 * 2 * 1024**3 / (time.perf_counter() - t0) * 1e-9
    with open("/proc/self/maps") as maps:
        libs = sorted({line.split()[-1] for line in maps if "blas" in line.lower()})
    return libs, gflops


def wait_for_turn(at, steps):
    """--interleave: reports the step reached and waits for the next 'to N' on stdin; returns N."""
    print("at %d" % at, flush=True)
    line = sys.stdin.readline()
    if not line.startswith("to "):
        sys.exit("train_torch: expected 'to N' on stdin, got %r" % line)
    return min(int(line.split()[1]), steps)


def main():
    torch.set_num_threads(args.threads)
    libs, gflops = blas_in_use()
    openblas = any("openblas" in lib for lib in libs)
    print("torch %s, %d threads, BLAS: %s (1024x1024 float32 product: %.1f GFLOP/s)"
          % (torch.__version__, torch.get_num_threads(), ", ".join(libs) or "none mapped", gflops))
    if not openblas and not args.allow_reference_blas:
        sys.exit("train_torch: torch is not running on OpenBLAS (run bench/gpt/setup.sh); --allow-reference-blas "
                 "runs anyway")

    c = dict(CONFIG)
    steps = args.steps or c["max_iters"]
    chars, train, val = load_corpus()
    torch.manual_seed(c["seed"])
    model = make_model(len(chars), c)
    optimizer = make_optimizer(model, c)
    generator = torch.Generator().manual_seed(c["seed"])
    n_params = sum(p.numel() for p in model.parameters())
    print("model: %d layers, %d heads, %d channels, context %d, batch %d, vocabulary %d, %d parameters; %d train / "
          "%d validation tokens" % (c["n_layer"], c["n_head"], c["n_embd"], c["block_size"], c["batch_size"],
                                    len(chars), n_params, len(train), len(val)))

    step_times, losses = [], {}
    model.train()
    until = 0 if args.interleave else steps  # the step it may train up to (--interleave: the last 'to N')
    for it in range(1, steps + 1):
        if args.interleave and it > until:
            until = wait_for_turn(it - 1, steps)
        t0 = time.perf_counter()
        for group in optimizer.param_groups:
            group["lr"] = lr_at(it - 1, c)
        x, y = random_batch(train, c["batch_size"], c["block_size"], generator)
        logits = model(x)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), c["grad_clip"])
        optimizer.step()
        step_times.append(time.perf_counter() - t0)
        if it % 100 == 0:
            recent = step_times[-100:]
            print("step %4d  train loss %.4f  %.1f ms/step (median of the last 100)  %.1f s of training so far"
                  % (it, loss.item(), 1e3 * statistics.median(recent), sum(step_times)), flush=True)
        if it % 500 == 0 or it == steps:
            losses[it] = validation_loss(model, val, c)
            print("step %4d  validation loss %.4f" % (it, losses[it]), flush=True)

    if args.interleave:
        print("at %d" % steps, flush=True)
    total = sum(step_times)
    print("\nPyTorch %s on %d threads (%s): %d steps in %.1f s of training, %.1f ms/step (median %.1f ms)"
          % (torch.__version__, args.threads, "OpenBLAS" if openblas else "not OpenBLAS", steps, total,
             1e3 * total / steps, 1e3 * statistics.median(step_times)))
    print("validation loss: " + ", ".join("%.4f at %d" % (v, k) for k, v in sorted(losses.items())))


if __name__ == "__main__":
    main()
