#!/usr/bin/env python3
"""Fits Q in 2^r ~ 1 + r Q(r) on [-1/2, 1/2] for src/kernels/exp2.hpp.

Weighted least squares on Chebyshev nodes, then Lawson iterations towards the minimax
relative error. Prints the coefficients (lowest power first) and the max relative error.
Needs numpy (Debian's python3-numpy: /usr/bin/python3 src/kernels/fit_exp2.py).
"""
import numpy as np

k = np.arange(4000)
r = 0.5 * np.cos((2 * k + 1) * np.pi / (2 * len(k)))
target = np.expm1(r * np.log(2)) / r
w = r / np.exp2(r)  # turns the residual in Q into the relative error of 2^r
for degree in (4, 5, 6):
    A = np.vander(r, degree + 1, increasing=True) * w[:, None]
    weights = np.ones_like(r)
    for _ in range(200):
        c, *_ = np.linalg.lstsq(A * np.sqrt(weights)[:, None], target * w * np.sqrt(weights), rcond=None)
        weights *= np.abs(A @ c - target * w)
        weights /= weights.sum()
    x = np.linspace(-0.5, 0.5, 200001)
    approx = 1 + x * np.polyval(c[::-1], x)
    print("degree %d: max relative error %.3g, Q = %s" %
          (degree + 1, np.max(np.abs(approx / np.exp2(x) - 1)), ", ".join("%.9e" % v for v in c)))
