// The training panel's status line: while training it says the pace the worker's steps wait by (as the worker
// last said it, so a new pace shows once it applies), then the step, the measured rate and the held-out figures.
import test from 'node:test';
import assert from 'node:assert/strict';
import { trainStatus } from '../../web/src/train/train-status.js';

const evals = [{ step: 40, sequence: 0.5, token: 0.875, loss: 0.4321 }];

test('training at a pace says it, then the measured rate and what full speed would be', () => {
  const s = trainStatus({ running: true, pace: 4, step: 42, stepsPerSecond: 3.98, computeStepsPerSecond: 250, evals });
  assert.equal(s, 'Training at a pace of 4 steps/s: step 42 · 3.98 steps/s (full speed would be about 250) · held-out (step 40): exact sequences 50.0%, tokens 87.5%, loss 0.432.');
});

test('training at full speed says so, with no full-speed estimate beside the rate', () => {
  const s = trainStatus({ running: true, pace: 0, step: 40, stepsPerSecond: 240, computeStepsPerSecond: 250, evals });
  assert.equal(s, 'Training at full speed: step 40 · 240 steps/s · held-out (now): exact sequences 50.0%, tokens 87.5%, loss 0.432.');
});

test('paused: the step only, no pace; no rate before any step', () => {
  assert.equal(trainStatus({ running: false, pace: 4, step: 0, stepsPerSecond: null, computeStepsPerSecond: null, evals: [] }), 'Paused at step 0.');
  assert.match(trainStatus({ running: false, pace: 0, step: 40, stepsPerSecond: 240, computeStepsPerSecond: 250, evals }), /^Paused at step 40 · 240 steps\/s · held-out \(now\)/);
});
