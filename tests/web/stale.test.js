// The stale note names what is still shown and says each problem as a sentence of its own.
import test from 'node:test';
import assert from 'node:assert/strict';
import { staleReason } from '../../web/src/shared/stale.js';

const shown = { B: 4, L: 10, S: 10, E: 64, Ev: 64 };

test('each problem is its own sentence, whatever its first letter', () => {
  assert.equal(
    staleReason(['These shapes need 4.25 GiB of float32 data. Make B, H, L or S smaller.'], shown),
    'Not updated: still showing B = 4, L = 10, S = 10, E = 64, Ev = 64. These shapes need 4.25 GiB of float32 data. Make B, H, L or S smaller.',
  );
  assert.equal(
    staleReason(['B must be a whole number from 1 to 64; got 100', 'keys kept by b = 1 must be a whole number from 0 to 10; got 99'], shown),
    'Not updated: still showing B = 4, L = 10, S = 10, E = 64, Ev = 64. B must be a whole number from 1 to 64; got 100. Keys kept by b = 1 must be a whole number from 0 to 10; got 99.',
  );
  assert.equal(staleReason(['L must be a whole number from 1 to 4096; got 0'], null), 'Nothing computed. L must be a whole number from 1 to 4096; got 0.');
});
