// scaledDotProductAttention and its gradient over the boundary (js/boundary.js): two crossings each.
import {
  checkBoolean, checkInteger, checkMask, checkNumber, checkOptions, checkOut, checkOutLength, checkTensor,
} from './validate.js';

const SDPA = 'scaledDotProductAttention';
const SDPA_GRAD = 'scaledDotProductAttentionGrad';
const GRAD_OPTIONS = ['attnMask', 'isCausal', 'causalAlignment', 'scale', 'dropoutP', 'seed', 'enableGqa', 'needWeights'];
const OPTIONS = [...GRAD_OPTIONS, 'out'];  // the forward's: its output may go into the caller's array

// The tensors' shapes and the options, checked, as the bindings' SdpaCall fields: one object literal (spreading
// a partial one into another measured 11 µs a call in V8, a third of a small call).
function sdpaCall(fn, options, query, key, value, gradOutput) {
  const o = checkOptions(fn, 'options', options, gradOutput ? GRAD_OPTIONS : OPTIONS);
  const mask = checkMask(fn, 'attnMask', o.attnMask);
  const isCausal = checkBoolean(fn, 'isCausal', o.isCausal, false);
  const alignment = o.causalAlignment;
  if (alignment !== undefined && alignment !== 'top-left' && alignment !== 'bottom-right') {
    throw new TypeError(`${fn}: causalAlignment must be 'top-left' or 'bottom-right', got ${JSON.stringify(alignment)}`);
  }
  if (alignment !== undefined && !isCausal) {
    throw new TypeError(`${fn}: causalAlignment only applies with isCausal: true (it says which keys the causal rule hides); set isCausal or drop causalAlignment`);
  }
  const hasScale = o.scale !== undefined;
  return {
    mask,
    out: checkOut(fn, o.out),
    call: {
      query: query.shape, key: key.shape, value: value.shape, gradOutput: gradOutput ? gradOutput.shape : null,
      attnMask: mask ? mask.shape : null,
      maskKind: mask ? mask.kind : 0,
      isCausal,
      bottomRight: alignment === 'bottom-right',
      hasScale,
      scale: hasScale ? checkNumber(fn, 'scale', o.scale) : 0,
      dropoutP: o.dropoutP === undefined ? 0 : checkNumber(fn, 'dropoutP', o.dropoutP),
      seed: o.seed === undefined ? 0 : checkInteger(fn, 'seed', o.seed, 0, Number.MAX_SAFE_INTEGER),
      enableGqa: checkBoolean(fn, 'enableGqa', o.enableGqa, false),
      needWeights: checkBoolean(fn, 'needWeights', o.needWeights, false),
    },
  };
}

// Copies the inputs in, runs, and copies out the output (into `out` when given) and the other outputs `extra`
// asks for: { name: reply field of its address } with the shape each takes.
function run(boundary, fn, reply, inputs, outputs) {
  for (const [field, data] of inputs) boundary.copyIn(reply[field], data);
  boundary.execute(fn);
  const result = {};
  for (const [name, field, shape, into] of outputs) {
    result[name] = { data: boundary.copyOut(reply[field], boundary.count(shape), into), shape };
  }
  return result;
}

export function sdpaFunctions(boundary) {
  const { guarded, prepare } = boundary;

  function scaledDotProductAttention(query, key, value, options) {
    return guarded(() => {
      const q = checkTensor(SDPA, 'query', query);
      const k = checkTensor(SDPA, 'key', key);
      const v = checkTensor(SDPA, 'value', value);
      const { mask, out, call } = sdpaCall(SDPA, options, q, k, v, null);
      const reply = prepare('sdpa', call, SDPA);
      checkOutLength(SDPA, out, reply.outputShape);
      const inputs = [['query', q.data], ['key', k.data], ['value', v.data]];
      if (mask) inputs.push(['attnMask', mask.data]);
      const outputs = [['output', 'output', reply.outputShape, out]];
      if (call.needWeights) outputs.push(['weights', 'weights', reply.weightsShape]);
      return run(boundary, SDPA, reply, inputs, outputs);
    });
  }

  function scaledDotProductAttentionGrad(query, key, value, gradOutput, options) {
    return guarded(() => {
      const q = checkTensor(SDPA_GRAD, 'query', query);
      const k = checkTensor(SDPA_GRAD, 'key', key);
      const v = checkTensor(SDPA_GRAD, 'value', value);
      const dO = checkTensor(SDPA_GRAD, 'gradOutput', gradOutput);
      const { mask, call } = sdpaCall(SDPA_GRAD, options, q, k, v, dO);
      const reply = prepare('sdpaBackward', call, SDPA_GRAD);
      const inputs = [['query', q.data], ['key', k.data], ['value', v.data], ['gradOutput', dO.data]];
      if (mask) inputs.push(['attnMask', mask.data]);
      // The weights, when asked for, come from the same forward the gradients use.
      const outputs = [['output', 'output', reply.outputShape], ['gradQuery', 'gradQuery', [...q.shape]],
        ['gradKey', 'gradKey', [...k.shape]], ['gradValue', 'gradValue', [...v.shape]]];
      if (call.needWeights) outputs.push(['weights', 'weights', reply.weightsShape]);
      return run(boundary, SDPA_GRAD, reply, inputs, outputs);
    });
  }

  return { scaledDotProductAttention, scaledDotProductAttentionGrad };
}
