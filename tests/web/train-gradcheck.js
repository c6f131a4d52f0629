// Central differences for the training modules' gradient tests: the derivative of a scalar function f
// of a Float32Array at index k, from the values actually stored after the nudge (float32 rounds x ± h),
// so the quotient uses the real step and not the intended one.
export function centralDifference(f, x, k, h = 1e-2) {
  const keep = x[k];
  x[k] = keep + h;
  const up = x[k];
  const fUp = f();
  x[k] = keep - h;
  const down = x[k];
  const fDown = f();
  x[k] = keep;
  return (fUp - fDown) / (up - down);
}

// Σ a ⊙ b in float64: the scalar whose gradient with respect to y is a, for checking a backward pass
// against its forward with an arbitrary upstream gradient a.
export function dot(a, b) {
  let s = 0;
  for (let k = 0; k < a.length; k++) s += a[k] * b[k];
  return s;
}
