// A MultiheadAttention's parameters as a PyTorch state dict: parameters() reads copies of them out of wasm
// memory; loadStateDict(source, { prefix }) sets them all, in one call, from a .safetensors file or an object of
// tensors (js/state-dict.js), refusing the whole load when any entry is missing, unexpected or mis-shaped. Both
// follow the module's parameter table (js/mha.js), in the order of PyTorch's state_dict.
import { matchParameters, stateDictEntries } from './state-dict.js';
import { checkOptions, typeName } from './validate.js';

// `state`: the module's (js/mha.js); `usable(method)` throws when the module was disposed; `setParameters` is
// the module's own.
export function stateDictMethods(state, { usable, setParameters }) {
  const { boundary, table } = state;
  const shapes = new Map([...table].map(([name, { shape }]) => [name, shape]));

  function parameters() {
    return boundary.guarded(() => {
      usable('parameters');
      const out = {};
      for (const [name, { offset, shape }] of table) {
        out[name] = { data: boundary.copyOut(state.data + 4 * offset, boundary.count(shape)), shape: [...shape] };
      }
      return out;
    });
  }

  function loadStateDict(source, options) {
    return boundary.guarded(() => {
      const FN = 'MultiheadAttention.loadStateDict';
      usable('loadStateDict');
      if (source === undefined) {
        throw new TypeError(`${FN}: source is required: the bytes of a .safetensors file, or an object of tensors keyed by PyTorch's names`);
      }
      const o = checkOptions(FN, 'options', options, ['prefix']);
      if (o.prefix !== undefined && typeof o.prefix !== 'string') {
        throw new TypeError(`${FN}: prefix must be a string, got ${typeName(o.prefix)}`);
      }
      const values = matchParameters(FN, stateDictEntries(FN, source), shapes, o.prefix ?? '');
      setParameters(Object.fromEntries(values));
    });
  }

  return { parameters, loadStateDict };
}
