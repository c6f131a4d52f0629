// The hand-written wasm module that measures the SIMD mul+add peak for the speed chart.
import test from 'node:test';
import assert from 'node:assert/strict';
import { measureSimdPeak, peakModuleBytes } from '../../web/src/speed/simd-peak.js';

test('the module is valid wasm, and its loop computes what it says', () => {
  const bytes = peakModuleBytes();
  assert.equal(WebAssembly.validate(bytes), true);
  const { peak } = new WebAssembly.Instance(new WebAssembly.Module(bytes)).exports;
  // Lane 0 of the sum of every chain after n iterations: 7 multiply chains start at 1 + k/10 and are
  // multiplied by 0.9999999 each time, 7 add chains start at the same values and gain 0.9999999 each time.
  const expected = (n) => {
    let sum = 0;
    for (let k = 0; k < 7; k++) {
      let m = Math.fround(1 + k / 10);
      let a = m;
      for (let i = 0; i < n; i++) {
        m = Math.fround(m * Math.fround(0.9999999));
        a = Math.fround(a + Math.fround(0.9999999));
      }
      sum += m + a;
    }
    return sum;
  };
  for (const n of [1, 1000]) {
    const want = expected(n);
    assert.ok(Math.abs(peak(n) - want) < 1e-6 * Math.abs(want) + 1e-4, `n = ${n}: ${peak(n)} vs ${want}`);
  }
});

test('the measured peak is a positive rate from the given clock', () => {
  const g = measureSimdPeak({ clock: () => performance.now(), iterations: 200_000, repeats: 3 });
  assert.ok(g > 0.1 && g < 10_000, `peak ${g} GFLOP/s`);
});
