#!/usr/bin/env python3
"""Fits P in tanh(x) ~ x (1 + u P(u)), u = x^2, on [0, 0.625] for src/kernels/tanh.hpp.

Weighted least squares on Chebyshev nodes, then Lawson iterations towards the minimax relative
error. Prints the coefficients (lowest power first) and the max relative error.
Needs numpy (Debian's python3-numpy: /usr/bin/python3 src/kernels/fit_tanh.py).
"""
import numpy as np

X = 0.625
k = np.arange(4000)
x = X / 2 * (1 + np.cos((2 * k + 1) * np.pi / (2 * len(k))))
u = x * x
target = (np.tanh(x) / x - 1) / u
w = u / (np.tanh(x) / x)  # turns the residual in P into the relative error of tanh
for degree in (4, 5, 6):
    A = np.vander(u, degree + 1, increasing=True) * w[:, None]
    weights = np.ones_like(u)
    for _ in range(200):
        c, *_ = np.linalg.lstsq(A * np.sqrt(weights)[:, None], target * w * np.sqrt(weights), rcond=None)
        weights *= np.abs(A @ c - target * w)
        weights /= weights.sum()
    t = np.linspace(1e-6, X, 200001)
    approx = t * (1 + t * t * np.polyval(c[::-1], t * t))
    print("degree %d: max relative error %.3g, P = %s" %
          (degree, np.max(np.abs(approx / np.tanh(t) - 1)), ", ".join("%.9e" % v for v in c)))
