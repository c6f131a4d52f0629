#!/usr/bin/env python3
"""Fits erf(u) ~ u P(u^2) / Q(u^2), Q(0) = 1, on [0, 3.92] for GELU's erf in src/layer_ops.cpp.

erf(3.92) = 1 - 5.6e-9 rounds to 1 in float32, so the function is clamped there. Linearised least squares on
Chebyshev nodes (u P - erf (Q - 1) = erf), divided by the last Q, with Lawson weights towards the minimax error.
Prints the coefficients (lowest power first), the fit's error, and its error when evaluated in float32.
Needs numpy (Debian's python3-numpy: /usr/bin/python3 src/fit_erf.py).
"""
import math

import numpy as np

C = 3.92
k = np.arange(6000)
u = C / 2 * (1 + np.cos((2 * k + 1) * np.pi / (2 * len(k))))
target = np.array([math.erf(x) for x in u])
t = u * u
m, n = 6, 5  # degrees of P and Q in t
weights = np.ones_like(u)
q_values = np.ones_like(u)
for _ in range(60):
    A = np.hstack([u[:, None] * t[:, None] ** np.arange(m + 1),
                   -target[:, None] * t[:, None] ** np.arange(1, n + 1)]) / q_values[:, None]
    s = np.sqrt(weights)
    sol, *_ = np.linalg.lstsq(A * s[:, None], target / q_values * s, rcond=None)
    p, q = sol[:m + 1], np.concatenate([[1.0], sol[m + 1:]])
    q_values = np.polyval(q[::-1], t)
    err = u * np.polyval(p[::-1], t) / q_values - target
    weights = weights * np.abs(err) + 1e-30
    weights /= weights.sum()

x = np.linspace(0, C, 200001).astype(np.float32)
tx = x * x
P = np.float32(p[-1])
for a in p[-2::-1]:
    P = P * tx + np.float32(a)
Q = np.float32(q[-1])
for a in q[-2::-1]:
    Q = Q * tx + np.float32(a)
in_float32 = np.max(np.abs((x * P / Q).astype(np.float64) - np.array([math.erf(float(v)) for v in x])))
print("max error %.3g (float64 evaluation), %.3g (float32 evaluation)" % (np.max(np.abs(err)), in_float32))
print("P = %s" % ", ".join("%.9e" % v for v in p))
print("Q = %s" % ", ".join("%.9e" % v for v in q))
