#!/usr/bin/env python3
"""Fits P in e^r ~ 1 + r + r^2 P(r) on [-ln2/2, ln2/2] for src/kernels/exp.hpp.

Weighted least squares on Chebyshev nodes, then Lawson iterations towards the minimax
relative error. Prints the coefficients (lowest power first) and the max relative error.
Needs numpy (Debian's python3-numpy: /usr/bin/python3 src/kernels/fit_exp.py).
"""
import numpy as np

half_ln2 = np.log(2) / 2
k = np.arange(4000)
r = half_ln2 * np.cos((2 * k + 1) * np.pi / (2 * len(k)))
target = (np.expm1(r) - r) / r**2
w = r**2 / np.exp(r)  # turns the residual in P into the relative error of e^r
for degree in (3, 4, 5):
    A = np.vander(r, degree + 1, increasing=True) * w[:, None]
    weights = np.ones_like(r)
    for _ in range(200):
        c, *_ = np.linalg.lstsq(A * np.sqrt(weights)[:, None], target * w * np.sqrt(weights), rcond=None)
        weights *= np.abs(A @ c - target * w)
        weights /= weights.sum()
    x = np.linspace(-half_ln2, half_ln2, 200001)
    approx = 1 + x + x**2 * np.polyval(c[::-1], x)
    print("degree %d: max relative error %.3g, P = %s" %
          (degree + 2, np.max(np.abs(approx / np.exp(x) - 1)), ", ".join("%.9e" % v for v in c)))
