// linear (torch.nn.functional.linear) and layerNorm (torch.nn.functional.layer_norm), forward and backward, over
// the boundary (js/boundary.js): two crossings each. The pieces around a stack of TransformerEncoderLayers: an
// embedding's projection, a final LayerNorm, a head.
import {
  MAX_RANK, checkNumber, checkOptions, checkOut, checkOutFields, checkOutLength, checkTensor, shapeString, typeName,
} from './validate.js';

const LINEAR = 'linear';
const LINEAR_GRAD = 'linearGrad';
const LAYER_NORM = 'layerNorm';
const LAYER_NORM_GRAD = 'layerNormGrad';

// Copies the inputs in, runs, and copies the outputs out: [name, reply field, shape, into?].
function run(boundary, fn, reply, inputs, outputs) {
  for (const [field, data] of inputs) boundary.copyIn(reply[field], data);
  boundary.execute(fn);
  const result = {};
  for (const [name, field, shape, into] of outputs) {
    result[name] = { data: boundary.copyOut(reply[field], boundary.count(shape), into), shape: [...shape] };
  }
  return result;
}

// normalizedShape: an Array of dims (the input's trailing ones), copied once read.
function checkNormalizedShape(fn, given) {
  if (!Array.isArray(given)) throw new TypeError(`${fn}: normalizedShape must be an Array of dims, got ${typeName(given)}`);
  const shape = Array.from(given);
  if (shape.length > MAX_RANK) throw new RangeError(`${fn}: normalizedShape has ${shape.length} dims, more than ${MAX_RANK}`);
  shape.forEach((d, i) => {
    if (!(i in given) || typeof d !== 'number' || !Number.isInteger(d) || d < 0 || d > 0x7fffffff) {
      throw new RangeError(`${fn}: normalizedShape[${i}] must be an integer in [0, 2^31), got ${typeof d === 'number' ? d : typeName(d)}`);
    }
  });
  return shape;
}

// The bias, when given: a tensor, or null / undefined for none.
const optionalBias = (fn, bias) => (bias === undefined || bias === null ? null : checkTensor(fn, 'bias', bias));

function linear(boundary, input, weight, bias, options) {
  const x = checkTensor(LINEAR, 'input', input);
  const w = checkTensor(LINEAR, 'weight', weight);
  const b = optionalBias(LINEAR, bias);
  const o = checkOptions(LINEAR, 'options', options, ['out']);
  const out = checkOut(LINEAR, o.out);
  const reply = boundary.prepare('linear', { input: x.shape, weight: w.shape, bias: b ? b.shape : null, hasBias: b !== null }, LINEAR);
  checkOutLength(LINEAR, out, reply.outputShape);
  const inputs = [['input', x.data], ['weight', w.data]];
  if (b) inputs.push(['bias', b.data]);
  return run(boundary, LINEAR, reply, inputs, [['output', 'output', reply.outputShape, out]]);
}

function linearGrad(boundary, input, weight, bias, gradOutput, options) {
  const x = checkTensor(LINEAR_GRAD, 'input', input);
  const w = checkTensor(LINEAR_GRAD, 'weight', weight);
  const b = optionalBias(LINEAR_GRAD, bias);
  const dy = checkTensor(LINEAR_GRAD, 'gradOutput', gradOutput);
  const o = checkOptions(LINEAR_GRAD, 'options', options, ['out']);
  const reply = boundary.prepare('linearBackward', {
    input: x.shape, weight: w.shape, bias: b ? b.shape : null, hasBias: b !== null, gradOutput: dy.shape,
  }, LINEAR_GRAD);
  const shapes = { gradInput: x.shape, gradWeight: w.shape };
  if (b) shapes.gradBias = b.shape;
  return run(boundary, LINEAR_GRAD, reply, [['input', x.data], ['weight', w.data], ['gradOutput', dy.data]],
    outputsOf(shapes, checkOutFields(LINEAR_GRAD, o.out, shapes)));
}

// A backward's outputs for run(): each result under its own name and reply field, into out's array when given.
const outputsOf = (shapes, out) => Object.entries(shapes).map(([name, shape]) => [name, name, shape, out?.[name]]);

// The options both layerNorm calls take: { weight, bias, eps, out } (the forward's out one array, the backward's
// an object of arrays by result).
function normCall(fn, input, normalizedShape, gradOutput, options) {
  const x = checkTensor(fn, 'input', input);
  const ns = checkNormalizedShape(fn, normalizedShape);
  const o = checkOptions(fn, 'options', options, ['weight', 'bias', 'eps', 'out']);
  const w = o.weight === undefined || o.weight === null ? null : checkTensor(fn, 'weight', o.weight);
  const b = o.bias === undefined || o.bias === null ? null : checkTensor(fn, 'bias', o.bias);
  const eps = o.eps === undefined ? 1e-5 : checkNumber(fn, 'eps', o.eps);
  // Only normalizedShape crosses: the weight's and bias's data are placed by it, so their shapes are checked here.
  for (const [name, t] of [['weight', w], ['bias', b]]) {
    if (t && t.shape.join() !== ns.join()) {
      throw new RangeError(`${fn}: ${name} shape ${shapeString(t.shape)} != normalizedShape (input ${shapeString(x.shape)}, normalizedShape ${shapeString(ns)})`);
    }
  }
  const dy = gradOutput ? checkTensor(fn, 'gradOutput', gradOutput) : null;
  return {
    x, w, b, dy, out: gradOutput ? o.out : checkOut(fn, o.out),  // a backward's out is checked by its fields
    call: { input: x.shape, normalizedShape: ns, hasWeight: w !== null, hasBias: b !== null, eps, gradOutput: dy ? dy.shape : null },
  };
}

function layerNorm(boundary, input, normalizedShape, options) {
  const { x, w, b, out, call } = normCall(LAYER_NORM, input, normalizedShape, null, options);
  const reply = boundary.prepare('layerNorm', call, LAYER_NORM);
  checkOutLength(LAYER_NORM, out, reply.outputShape);
  const inputs = [['input', x.data]];
  if (w) inputs.push(['weight', w.data]);
  if (b) inputs.push(['bias', b.data]);
  return run(boundary, LAYER_NORM, reply, inputs, [['output', 'output', reply.outputShape, out]]);
}

function layerNormGrad(boundary, input, normalizedShape, gradOutput, options) {
  if (gradOutput === undefined) throw new TypeError(`${LAYER_NORM_GRAD}: gradOutput is required (shaped like input)`);
  const { x, w, b, dy, out, call } = normCall(LAYER_NORM_GRAD, input, normalizedShape, gradOutput, options);
  const reply = boundary.prepare('layerNormBackward', call, LAYER_NORM_GRAD);
  const inputs = [['input', x.data], ['gradOutput', dy.data]];
  if (w) inputs.push(['weight', w.data]);
  const shapes = { gradInput: x.shape };
  if (w) shapes.gradWeight = w.shape;
  if (b) shapes.gradBias = b.shape;
  return run(boundary, LAYER_NORM_GRAD, reply, inputs, outputsOf(shapes, checkOutFields(LAYER_NORM_GRAD, out, shapes)));
}

// The four calls of an instance, each inside the boundary's guard.
export function layerFunctions(boundary) {
  const { guarded } = boundary;
  return {
    linear: (input, weight, bias, options) => guarded(() => linear(boundary, input, weight, bias, options)),
    linearGrad: (input, weight, bias, gradOutput, options) =>
      guarded(() => linearGrad(boundary, input, weight, bias, gradOutput, options)),
    layerNorm: (input, normalizedShape, options) => guarded(() => layerNorm(boundary, input, normalizedShape, options)),
    layerNormGrad: (input, normalizedShape, gradOutput, options) =>
      guarded(() => layerNormGrad(boundary, input, normalizedShape, gradOutput, options)),
  };
}
