// scaledDotProductAttention and its gradient over the boundary (js/boundary.js): two crossings each.
import { ruleFields } from './rules.js';
import {
  checkBoolean, checkInteger, checkMask, checkNumber, checkOptions, checkOut, checkOutFields, checkOutLength, checkTensors,
} from './validate.js';

const SDPA = 'scaledDotProductAttention';
const SDPA_GRAD = 'scaledDotProductAttentionGrad';
const RULE_OPTIONS = ['attnMask', 'isCausal', 'causalAlignment', 'scale', 'dropoutP', 'seed', 'enableGqa', 'needWeights',
  'softcap', 'window', 'alibiSlopes', 'keyLengths'];
const GRAD_OPTIONS = [...RULE_OPTIONS, 'out'];      // out: an object of arrays by result
const OPTIONS = [...RULE_OPTIONS, 'returnScores', 'out'];  // the forward's: scores, and its output into the caller's array

// The tensors' shapes and the options, checked, as the call record's fields: one object literal (spreading
// a partial one into another measured 11 µs a call in V8, a third of a small call).
function sdpaCall(fn, options, query, key, value, gradOutput, half) {
  const o = checkOptions(fn, 'options', options, gradOutput ? GRAD_OPTIONS : OPTIONS);
  const mask = checkMask(fn, 'attnMask', o.attnMask);
  const rules = ruleFields(fn, o, gradOutput ? GRAD_OPTIONS : OPTIONS);
  const hasScale = o.scale !== undefined;
  const out = gradOutput ? o.out : checkOut(fn, o.out);  // a backward's object of arrays is checked once planned
  if (out && half) {
    throw new TypeError(gradOutput ? `${fn}: out is not for float16 calls: they return their own arrays`
      : `${fn}: out must be a Float32Array, and float16 calls return their own arrays`);
  }
  return {
    mask,
    out,
    call: {
      query: query.shape, key: key.shape, value: value.shape, gradOutput: gradOutput ? gradOutput.shape : null,
      attnMask: mask ? mask.shape : null,
      maskKind: mask ? mask.kind : 0,
      isCausal: checkBoolean(fn, 'isCausal', o.isCausal, false),
      bottomRight: rules.bottomRight,
      hasScale,
      scale: hasScale ? checkNumber(fn, 'scale', o.scale) : 0,
      dropoutP: o.dropoutP === undefined ? 0 : checkNumber(fn, 'dropoutP', o.dropoutP),
      seed: o.seed === undefined ? 0 : checkInteger(fn, 'seed', o.seed, 0, Number.MAX_SAFE_INTEGER),
      enableGqa: checkBoolean(fn, 'enableGqa', o.enableGqa, false),
      needWeights: checkBoolean(fn, 'needWeights', o.needWeights, false),
      softcap: rules.softcap,
      windowLeft: rules.windowLeft,
      windowRight: rules.windowRight,
      alibiSlopes: rules.alibiSlopes,
      keyLengths: rules.keyLengths,
      returnScores: rules.returnScores ?? 0,
      float16: half !== null,
    },
  };
}

// Copies the inputs in, runs, and copies out each output: [name, reply field, shape, into (out)]; float16 calls'
// outputs come back as arrays of their inputs' class of halves.
function run(boundary, fn, reply, inputs, outputs, half) {
  for (const [field, data] of inputs) boundary.copyIn(reply[field], data);
  boundary.execute(fn);
  const result = {};
  for (const [name, field, shape, into] of outputs) {
    const n = boundary.count(shape);
    result[name] = { data: half ? boundary.copyOutHalves(reply[field], n, half) : boundary.copyOut(reply[field], n, into), shape };
  }
  return result;
}

export function sdpaFunctions(boundary) {
  const { guarded, prepare } = boundary;

  function scaledDotProductAttention(query, key, value, options) {
    return guarded(() => {
      const { half, tensors: [q, k, v] } = checkTensors(SDPA, [['query', query], ['key', key], ['value', value]]);
      const { mask, out, call } = sdpaCall(SDPA, options, q, k, v, null, half);
      const reply = prepare('sdpa', call, SDPA);
      checkOutLength(SDPA, out, reply.outputShape);
      const inputs = [['query', q.data], ['key', k.data], ['value', v.data]];
      if (mask) inputs.push(['attnMask', mask.data]);
      const outputs = [['output', 'output', reply.outputShape, out]];
      if (call.needWeights) outputs.push(['weights', 'weights', reply.weightsShape]);
      if (call.returnScores) outputs.push(['scores', 'scores', reply.weightsShape]);
      return run(boundary, SDPA, reply, inputs, outputs, half);
    });
  }

  function scaledDotProductAttentionGrad(query, key, value, gradOutput, options) {
    return guarded(() => {
      const { half, tensors: [q, k, v, dO] } = checkTensors(SDPA_GRAD,
        [['query', query], ['key', key], ['value', value], ['gradOutput', gradOutput]]);
      const { mask, out, call } = sdpaCall(SDPA_GRAD, options, q, k, v, dO, half);
      const reply = prepare('sdpaBackward', call, SDPA_GRAD);
      const into = checkOutFields(SDPA_GRAD, out, { output: reply.outputShape, gradQuery: q.shape, gradKey: k.shape, gradValue: v.shape });
      const inputs = [['query', q.data], ['key', k.data], ['value', v.data], ['gradOutput', dO.data]];
      if (mask) inputs.push(['attnMask', mask.data]);
      // The weights, when asked for, come from the same forward the gradients use.
      const outputs = [['output', 'output', reply.outputShape, into?.output], ['gradQuery', 'gradQuery', [...q.shape], into?.gradQuery],
        ['gradKey', 'gradKey', [...k.shape], into?.gradKey], ['gradValue', 'gradValue', [...v.shape], into?.gradValue]];
      if (call.needWeights) outputs.push(['weights', 'weights', reply.weightsShape]);
      return run(boundary, SDPA_GRAD, reply, inputs, outputs, half);
    });
  }

  return { scaledDotProductAttention, scaledDotProductAttentionGrad };
}
