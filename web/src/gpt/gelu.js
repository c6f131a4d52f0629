// The exact GELU, x · Φ(x) = x/2 · (1 + erf(x / √2)), as torch.nn.GELU() (approximate='none') and the package's
// TransformerEncoderLayer compute it, for the feed-forward of the cached decoder (generate.js), which composes
// the layer from its parts. JavaScript has no erf: its Maclaurin series, summed in float64, is exact to about
// 1e-10 for |z| < 4 (the terms grow to ~1e6 before they fall); past 4, 1 − |erf| < 1.6e-8, below float32's
// resolution of 1, so erf is ±1 there.

export function erf(z) {
  const a = Math.abs(z);
  if (a >= 4) return Math.sign(z);
  const z2 = z * z;
  let term = z;       // (−1)^n z^(2n+1) / n!
  let sum = z;        // Σ term / (2n + 1)
  for (let n = 1; n < 80; n++) {
    term *= -z2 / n;
    const add = term / (2 * n + 1);
    sum += add;
    if (Math.abs(add) < 1e-17 * Math.abs(sum)) break;
  }
  return (2 / Math.sqrt(Math.PI)) * sum;
}

// In place over a Float32Array.
export function geluInPlace(x) {
  for (let k = 0; k < x.length; k++) x[k] = 0.5 * x[k] * (1 + erf(x[k] * Math.SQRT1_2));
  return x;
}
