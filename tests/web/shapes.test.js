// The shape trace the page shows, row by row, in the lesson's notation.
import test from 'node:test';
import assert from 'node:assert/strict';
import { formatShape, parseShape, traceShapes } from '../../web/src/shared/shapes.js';

const lesson = { B: 4, L: 10, S: 10, E: 64, Ev: 64 };
const shapeOf = (rows, name) => formatShape(rows.find((r) => r.name === name).shape);

test('shapes are written like (4, 10, 64), with Python\'s (4,) for one dim', () => {
  assert.equal(formatShape([4, 10, 64]), '(4, 10, 64)');
  assert.equal(formatShape([4]), '(4,)');
  assert.equal(formatShape([]), '()');
});

test("the lesson's example traces Q (4, 10, 64) → Kᵀ (4, 64, 10) → scores (4, 10, 10) → output (4, 10, 64)", () => {
  const rows = traceShapes(lesson);
  assert.deepEqual(
    rows.map((r) => [r.step, r.name, formatShape(r.shape)]),
    [
      ['', 'Q', '(4, 10, 64)'],
      ['', 'K', '(4, 10, 64)'],
      ['', 'V', '(4, 10, 64)'],
      ['1', 'Kᵀ', '(4, 64, 10)'],
      ['1', 'scores', '(4, 10, 10)'],
      ['2', 'scaled scores', '(4, 10, 10)'],
      ['3', 'weights', '(4, 10, 10)'],
      ['4', 'output', '(4, 10, 64)'],
    ],
  );
  assert.match(rows.find((r) => r.name === 'scaled scores').note, /1\/√E = 0\.125; same shape/);
});

test('L ≠ S and E ≠ Ev land in the right places', () => {
  const rows = traceShapes({ B: 2, L: 3, S: 5, E: 8, Ev: 6 });
  assert.equal(shapeOf(rows, 'Kᵀ'), '(2, 8, 5)');
  assert.equal(shapeOf(rows, 'weights'), '(2, 3, 5)');
  assert.equal(shapeOf(rows, 'output'), '(2, 3, 6)');
  assert.equal(formatShape(rows.find((r) => r.name === 'output').letters), '(B, L, Ev)');
});

test('heads add H after B; GQA adds the repeat step with Hkv heads on K and V', () => {
  const mha = traceShapes({ ...lesson, useHeads: true, H: 8, Hkv: 8 });
  assert.equal(shapeOf(mha, 'Q'), '(4, 8, 10, 64)');
  assert.equal(shapeOf(mha, 'K'), '(4, 8, 10, 64)');
  assert.equal(mha.find((r) => r.step === 'GQA'), undefined);
  const gqa = traceShapes({ ...lesson, useHeads: true, H: 8, Hkv: 2 });
  assert.equal(shapeOf(gqa, 'K'), '(4, 2, 10, 64)');
  assert.equal(formatShape(gqa.find((r) => r.name === 'K').letters), '(B, Hkv, S, E)');
  const repeat = gqa.find((r) => r.step === 'GQA');
  assert.equal(formatShape(repeat.shape), '(4, 8, 10, 64)');
  assert.match(repeat.note, /serves 4 query heads/);
  assert.equal(shapeOf(gqa, 'weights'), '(4, 8, 10, 10)');
  assert.equal(shapeOf(gqa, 'output'), '(4, 8, 10, 64)');
});

test('a mask adds a row with its own shape, placed before the softmax', () => {
  const rows = traceShapes(lesson, { maskShape: [4, 1, 10], maskKinds: 'key padding' });
  const names = rows.map((r) => r.name);
  assert.ok(names.indexOf('mask') === names.indexOf('weights') - 1);
  const mask = rows.find((r) => r.name === 'mask');
  assert.deepEqual(mask.shape, [4, 1, 10]);
  assert.equal(mask.note, 'key padding, broadcast to (4, 10, 10); false = this key is hidden from this query');
});

test('typed shapes are read in the usual spellings', () => {
  for (const text of ['(8, 128, 64)', '8,128,64', '[8, 128, 64]', '8 x 128 x 64', '8×128×64', 'torch.Size([8, 128, 64])', '  ( 8 ,128, 64 ) ']) {
    assert.deepEqual(parseShape(text), [8, 128, 64], text);
  }
  for (const text of ['', '()', 'eight', '(8, 128.5, 64)', '(8, -1, 64)', '(B, L, Ev)']) {
    assert.equal(parseShape(text), null, text);
  }
});

test('without a mask tensor the page\'s mask row still appears, saying so, with no shape', () => {
  const rows = traceShapes(lesson, { maskRow: { expr: '—', note: 'no mask' } });
  const row = rows.find((r) => r.name === 'mask');
  assert.equal(row.shape, null);
  assert.equal(row.note, 'no mask');
  assert.equal(rows.indexOf(row), rows.findIndex((r) => r.name === 'weights') - 1);
  assert.equal(traceShapes(lesson).some((r) => r.name === 'mask'), false);
});

test('a scale set by hand is written in the scaled scores row, with the default it replaces', () => {
  const row = traceShapes({ B: 4, L: 10, S: 10, E: 64, Ev: 64 }, { scale: 0.5 }).find((r) => r.name === 'scaled scores');
  assert.equal(row.expr, 'scores × 0.5');
  assert.match(row.note, /× 0\.5, set by hand \(1\/√E would be 0\.125\); same shape/);
  assert.deepEqual(row.shape, [4, 10, 10]);
});
