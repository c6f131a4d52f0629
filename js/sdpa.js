// scaledDotProductAttention and its gradient over the boundary (js/boundary.js).
import { checkBoolean, checkInteger, checkMask, checkNumber, checkOptions, checkOut, checkTensor } from './validate.js';

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

export function sdpaFunctions(boundary) {
  const { guarded, plan, invoke, invokeForward, count } = boundary;

  function scaledDotProductAttention(query, key, value, options) {
    return guarded(() => {
      const q = checkTensor(SDPA, 'query', query);
      const k = checkTensor(SDPA, 'key', key);
      const v = checkTensor(SDPA, 'value', value);
      const { mask, out, call } = sdpaCall(SDPA, options, q, k, v, null);
      const layout = plan('sdpaPlan', call);
      const inputs = { query: q.data, key: k.data, value: v.data };
      if (mask) inputs.attnMask = mask.data;
      return invokeForward(SDPA, layout, inputs, call.needWeights, out);
    });
  }

  function scaledDotProductAttentionGrad(query, key, value, gradOutput, options) {
    return guarded(() => {
      const q = checkTensor(SDPA_GRAD, 'query', query);
      const k = checkTensor(SDPA_GRAD, 'key', key);
      const v = checkTensor(SDPA_GRAD, 'value', value);
      const dO = checkTensor(SDPA_GRAD, 'gradOutput', gradOutput);
      const { mask, call } = sdpaCall(SDPA_GRAD, options, q, k, v, dO);
      const needWeights = call.needWeights;
      call.needWeights = false;  // the backward's own plan has no weights; they come from a forward below
      const layout = plan('sdpaBackwardPlan', call);
      const inputs = { query: q.data, key: k.data, value: v.data, gradOutput: dO.data };
      if (mask) inputs.attnMask = mask.data;
      const r = invoke(SDPA_GRAD, layout, inputs, {
        output: count(dO.shape), gradQuery: count(q.shape), gradKey: count(k.shape), gradValue: count(v.shape),
      });
      const result = {
        output: { data: r.output, shape: [...dO.shape] },
        gradQuery: { data: r.gradQuery, shape: [...q.shape] },
        gradKey: { data: r.gradKey, shape: [...k.shape] },
        gradValue: { data: r.gradValue, shape: [...v.shape] },
      };
      // The weights come from the forward: the same plan rules, computed once more.
      if (needWeights) result.weights = scaledDotProductAttention(query, key, value, options).weights;
      return result;
    });
  }

  return { scaledDotProductAttention, scaledDotProductAttentionGrad };
}
