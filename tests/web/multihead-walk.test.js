// The multi-head walk against torch.nn.MultiheadAttention on its example (tests/web/fixtures/mha_walk.txt, written by
// make_mha_walk_fixture.py with python3-torch): the inputs bit for bit, every step and the module's own output and
// weights within the golden tolerance, on the package directly and through createXattnWorker as the panel runs it.
import test from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createXattn } from 'xattn';
import { createXattnWorker } from 'xattn/worker';
import { parseCases } from '../js/golden-cases.mjs';
import { WALK_EXAMPLE, walkInputs } from '../../web/src/multihead/walk-inputs.js';
import { walkShapes } from '../../web/src/multihead/walk-shapes.js';
import { readWalkSettings } from '../../web/src/multihead/walk-settings.js';
import { computeWalk } from '../../web/src/multihead/walk.js';

const fixture = parseCases(readFileSync(new URL('./fixtures/mha_walk.txt', import.meta.url), 'utf8'), 'mha_walk.txt')[0];
const t = fixture.tensors;
// The golden tolerance of the package's fixtures: float32 results against float64 answers.
const close = (got, want, label) => {
  assert.equal(got.length, want.length, `${label}: ${got.length} values, want ${want.length}`);
  for (let k = 0; k < want.length; k++) assert.ok(Math.abs(got[k] - want[k]) <= 1e-5 + 1e-4 * Math.abs(want[k]), `${label}[${k}]: ${got[k]}, want ${want[k]}`);
};
const f32 = (values) => Float32Array.from(values);

test("the example is the fixture's: the same settings, and X and every parameter bit for bit", () => {
  const o = fixture.opts;
  assert.deepEqual(WALK_EXAMPLE, { B: Number(o.batch), L: Number(o.length), E: Number(o.embed_dim), H: Number(o.num_heads), seed: Number(o.seed) });
  const { x, parameters } = walkInputs(WALK_EXAMPLE);
  assert.deepEqual(x.shape, t.x.shape);
  assert.deepEqual(x.data, f32(t.x.values));
  for (const name of ['in_proj_weight', 'in_proj_bias', 'out_proj.weight', 'out_proj.bias']) assert.deepEqual(parameters[name], f32(t[name].values), name);
});

test("the walk's shape rows are the shapes torch's steps have", () => {
  const rows = Object.fromEntries(walkShapes(WALK_EXAMPLE).map((r) => [r.id, r.shape]));
  assert.deepEqual(rows.x, t.x.shape);
  assert.deepEqual(rows.q, t.q.shape);
  assert.deepEqual(rows.heads, t.q_heads.shape);
  assert.deepEqual(rows.weights, t.weights.shape);
  assert.deepEqual(rows.headsOut, t.heads_output.shape);
  assert.deepEqual(rows.concat, t.concat.shape);
  assert.deepEqual(rows.output, t.output.shape);
});

for (const [label, open] of [['the package directly', () => createXattn({ threads: 1 })], ['createXattnWorker, as the panel', () => createXattnWorker({ threads: 1 })]]) {
  test(`every step of the walk matches torch.nn.MultiheadAttention (${label})`, async () => {
    const xa = await open();
    try {
      const walk = await computeWalk(xa, WALK_EXAMPLE);
      const s = walk.steps;
      // The module holds exactly the parameters the walk drew, and reports them.
      for (const name of ['in_proj_weight', 'out_proj.weight']) assert.deepEqual(walk.parameters[name].data, f32(t[name].values), name);
      for (const [step, name] of [['q', 'q'], ['k', 'k'], ['v', 'v'], ['heads', 'q_heads'], ['kHeads', 'k_heads'], ['vHeads', 'v_heads'], ['weights', 'weights'], ['headsOut', 'heads_output'], ['concat', 'concat'], ['output', 'output']]) {
        close(s[step].data, t[name].values, step);
      }
      // The split is Q's own numbers, viewed with a head dim.
      assert.deepEqual(s.split.shape, [2, 5, 2, 4]);
      assert.deepEqual(s.split.data, s.q.data);
      // The module's own forward: the output and the per-head weights torch gives.
      close(walk.module.output.data, t.output.values, 'module output');
      close(walk.module.weights.data, t.weights.values, 'module weights');
      assert.deepEqual(walk.module.weights.shape, t.weights.shape);
      assert.ok(walk.diff.output < 1e-5 && walk.diff.weights < 1e-5, JSON.stringify(walk.diff));
    } finally {
      await xa.terminate?.();
    }
  });
}

test('other settings walk too, and E must split into H heads', async () => {
  const xa = await createXattn({ threads: 1 });
  const walk = await computeWalk(xa, { B: 1, L: 3, E: 12, H: 3, seed: 5 });
  assert.deepEqual(walk.steps.heads.shape, [1, 3, 3, 4]);
  assert.ok(walk.diff.output < 1e-5, JSON.stringify(walk.diff));
  assert.deepEqual(readWalkSettings({ B: '2', L: '5', E: '8', H: '3', seed: '1' }).problems, ['E = 8 features cannot be split into H = 3 heads: E must be a multiple of H']);
  assert.match(readWalkSettings({ B: '9', L: '5', E: '8', H: '2', seed: '-1' }).problems.join('; '), /B must be one of 1, 2, 3, 4; got 9; seed must be a whole number/);
});
