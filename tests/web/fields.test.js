// Every numeric field is read and bounded before any work, and a refusal quotes what was typed.
import test from 'node:test';
import assert from 'node:assert/strict';
import { FIELDS, checkHeads, headsHint, parseField, parseScale } from '../../web/src/shared/fields.js';

test('values inside the bounds are read as numbers', () => {
  assert.deepEqual(parseField(FIELDS.B, '4'), { value: 4 });
  assert.deepEqual(parseField(FIELDS.B, ' 64 '), { value: 64 });
  assert.deepEqual(parseField(FIELDS.seed, '0'), { value: 0 });
  assert.deepEqual(parseField(FIELDS.spread, '0.1'), { value: 0.1 });
  assert.deepEqual(parseField(FIELDS.spread, '1e20'), { value: 1e20 });
});

test('B beyond its maximum of 64 is refused, quoting the number typed', () => {
  assert.equal(parseField(FIELDS.B, '100000').problem, 'B must be a whole number from 1 to 64; got 100000');
  assert.equal(parseField(FIELDS.B, '65').problem, 'B must be a whole number from 1 to 64; got 65');
});

test('−3, 2.5, 1e3, 6e, −−5, 1−2 and an empty field are named as typed, never as NaN', () => {
  const typed = { '-3': '−3', '2.5': '2.5', '1e3': '1e3', '': 'an empty field', abc: 'abc', '6e': '6e', '--5': '−−5', '1-2': '1−2' };
  for (const [text, shown] of Object.entries(typed)) {
    const { problem } = parseField(FIELDS.L, text);
    assert.equal(problem, `L must be a whole number from 1 to 4096; got ${shown}`, text);
    assert.doesNotMatch(problem, /NaN/);
  }
  assert.match(parseField(FIELDS.spread, '0').problem, /data spread must be a number above 0 .*; got 0$/);
  assert.match(parseField(FIELDS.spread, '1e39').problem, /got 1e39$/);
  assert.match(parseField(FIELDS.seed, '4294967296').problem, /from 0 to 4294967295; got 4294967296/);
});

test('padding-style bounds come from the caller: 99 and −2 are refused for S = 10', () => {
  const spec = { label: 'keys kept by b = 1', kind: 'int', min: 0, max: 10 };
  assert.deepEqual(parseField(spec, '0'), { value: 0 });
  assert.equal(parseField(spec, '99').problem, 'keys kept by b = 1 must be a whole number from 0 to 10; got 99');
  assert.equal(parseField(spec, '-2').problem, 'keys kept by b = 1 must be a whole number from 0 to 10; got −2');
});

test('head checks: Hkv above H, and H not a multiple of Hkv', () => {
  assert.deepEqual(checkHeads(8, 2), []);
  assert.deepEqual(checkHeads(8, 16), ['Hkv = 16 key/value heads cannot be more than H = 8 query heads']);
  assert.match(checkHeads(8, 3)[0], /H must be a multiple of Hkv/);
});

test('the GQA hint speaks of valid dims only, in the singular when there is one head', () => {
  assert.equal(headsHint({ useHeads: false, H: 4, Hkv: 4 }), null);
  assert.equal(headsHint({ useHeads: true, H: 8, Hkv: 2 }), 'GQA: 8 query heads share 2 key/value heads, 4 query heads per key/value head (enableGqa).');
  assert.equal(headsHint({ useHeads: true, H: 4, Hkv: 1 }), 'GQA: 4 query heads share 1 key/value head, 4 query heads per key/value head (enableGqa).');
  assert.match(headsHint({ useHeads: true, H: 1, Hkv: 1 }), /each of the 1 query head has/);
});

test('the scale field: empty is the default 1/√E, a positive number is taken, anything else refused as typed', () => {
  assert.deepEqual(parseScale(''), { value: null });
  assert.deepEqual(parseScale('  '), { value: null });
  assert.deepEqual(parseScale('0.5'), { value: 0.5 });
  assert.deepEqual(parseScale('1e-9'), { value: 1e-9 });
  for (const [typed, shown] of [['0', '0'], ['-1', '−1'], ['x', 'x'], ['2e6', '2e6']]) {
    assert.equal(parseScale(typed).problem, `scale must be a number above 0 and at most 1.0e6, or empty for 1/√E; got ${shown}`, typed);
  }
});
