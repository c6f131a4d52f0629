#!/usr/bin/env python3
"""PyTorch's torch.nn.MultiheadAttention on this CPU, one thread: the reference figure `npm run bench` prints
beside xattn's MHA forward and backward (bench/js/training.mjs runs this script with Debian's python3-torch).

    python3 bench/torch_mha.py [E H L N]        # default 512 8 256 8; prints one JSON line

Reports the median over several runs of the forward (no weights) and of forward + backward, float32, and
which BLAS library the process loaded (Debian's torch is built with BLAS_INFO=generic: its matrix products
go through the system libblas, the reference BLAS unless an optimised one is installed)."""
import json
import os
import statistics
import sys
import time

import torch


def loaded_blas():
    with open("/proc/self/maps") as maps:
        paths = {line.split()[-1] for line in maps if "blas" in line.split()[-1]}
    # The file name says which BLAS it is (libblas.so.3.x is the reference one); the folder says nothing more.
    return sorted(os.path.basename(os.path.realpath(p)) for p in paths)


def median_ms(fn, runs):
    fn()  # warm-up
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def main():
    E, H, L, N = (int(x) for x in sys.argv[1:5]) if len(sys.argv) >= 5 else (512, 8, 256, 8)
    torch.set_num_threads(1)
    torch.manual_seed(0)
    mha = torch.nn.MultiheadAttention(E, H)
    x = torch.randn(L, N, E)
    grad = torch.randn(L, N, E)

    def forward():
        with torch.no_grad():
            mha(x, x, x, need_weights=False)

    def forward_backward():
        xr = x.clone().requires_grad_()
        out, _ = mha(xr, xr, xr, need_weights=False)
        out.backward(grad)

    runs = 5
    print(json.dumps({
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "shape": {"E": E, "H": H, "L": L, "S": L, "N": N},
        "forwardMs": median_ms(forward, runs),
        "forwardBackwardMs": median_ms(forward_backward, runs),
        "blas": loaded_blas(),
        "runs": runs,
    }))


if __name__ == "__main__":
    main()
