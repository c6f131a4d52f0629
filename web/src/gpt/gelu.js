// The exact GELU, x · Φ(x) = x/2 · (1 + erf(x / √2)), as torch.nn.GELU() (approximate='none') and the package's
// TransformerEncoderLayer compute it, for the feed-forward of the cached decoder (generate.js), which composes
// the layer from its parts. JavaScript has no erf.
//
// erfSeries: the Maclaurin series, summed in float64, exact to about 1e-10 for |z| < 4 (its terms grow to ~1e6
// before they fall) but some 50 terms long there. erf: the series tabulated once on a grid of 1/256 over [0, 4]
// with its derivative 2/√π · e^(−z²), and read between grid points by cubic Hermite interpolation, whose error is
// below h⁴/384 · max|erf⁗| ≈ 1e-11: a few operations per value. Past 4, 1 − |erf| < 1.6e-8, below float32's
// resolution at 1, so erf is ±1 there.

export function erfSeries(z) {
  return Math.abs(z) >= 4 ? Math.sign(z) : series(z);
}

function series(z) {
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

const STEPS = 1024;
const H = 4 / STEPS;
const VALUES = new Float64Array(STEPS + 1);
const SLOPES = new Float64Array(STEPS + 1);  // the derivative times H, as the Hermite basis takes it
for (let i = 0; i <= STEPS; i++) {
  const z = i * H;
  VALUES[i] = series(z);  // at 4 too: the last interval ends at erf(4), not 1
  SLOPES[i] = H * (2 / Math.sqrt(Math.PI)) * Math.exp(-z * z);
}

export function erf(z) {
  const a = Math.abs(z);
  if (!(a < 4)) return Number.isNaN(z) ? NaN : Math.sign(z);
  const u = a / H;
  const i = Math.floor(u);
  const t = u - i;
  const t2 = t * t;
  const t3 = t2 * t;
  const v = (2 * t3 - 3 * t2 + 1) * VALUES[i] + (t3 - 2 * t2 + t) * SLOPES[i]
    + (3 * t2 - 2 * t3) * VALUES[i + 1] + (t3 - t2) * SLOPES[i + 1];
  return z < 0 ? -v : v;
}

// In place over a Float32Array.
export function geluInPlace(x) {
  for (let k = 0; k < x.length; k++) x[k] = 0.5 * x[k] * (1 + erf(x[k] * Math.SQRT1_2));
  return x;
}
