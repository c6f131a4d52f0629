// A module's parameters under PyTorch's names, for every kind of module (MultiheadAttention, js/mha.js;
// TransformerEncoderLayer, js/encoder.js): setParameters writes some of them in place, parameters() reads copies
// of all of them out of wasm memory, loadStateDict(source, { prefix }) sets them all in one call from a
// .safetensors file or an object of tensors (js/state-dict.js). Each refuses the whole call when any entry is
// unknown, missing, unexpected or mis-shaped, changing nothing. All follow the module's parameter table
// (Map<PyTorch name, { offset, shape }>), in the order of PyTorch's state_dict.
import { matchParameters, stateDictEntries } from './state-dict.js';
import { checkOptions, shapeString, typeName, typedArrayLength, typedArrayName } from './validate.js';

// The message for a key this module has no parameter of: its names are PyTorch's.
function unknownParameter(table) {
  return (key) => {
    const snake = key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`).replace('out_proj_', 'out_proj.');
    const hint = table.has(snake) ? ` (parameters are named as PyTorch names them: did you mean '${snake}'?)` : '';
    return `no parameter '${key}' in this configuration${hint} (it has ${[...table.keys()].join(', ')})`;
  };
}

// `state`: { boundary, table, address(offset) → where the parameter at `offset` lives in wasm memory };
// `usable(method)` throws when the module was disposed; `className` names the module in messages.
export function parameterMethods(state, { usable, className }) {
  const { boundary, table } = state;
  const shapes = new Map([...table].map(([name, { shape }]) => [name, shape]));

  // The parameters of an object keyed by PyTorch's names, each a Float32Array of its size, checked before any is
  // set (a refusal changes nothing), then written into the module's parameters in place.
  function setParameters(parameters) {
    const FN = `${className}.setParameters`;
    usable('setParameters');
    if (parameters === undefined) throw new TypeError(`${FN}: parameters object is required`);
    const given = checkOptions(FN, 'parameters', parameters, [...table.keys()], unknownParameter(table));
    const entries = [];
    for (const [name, { offset, shape }] of table) {
      const data = given[name];
      if (data === undefined) continue;
      if (typedArrayName(data) !== 'Float32Array') throw new TypeError(`${FN}: ${name} must be a Float32Array, got ${typeName(data)}`);
      if (typedArrayLength(data) !== boundary.count(shape)) {
        throw new RangeError(`${FN}: ${name} needs ${boundary.count(shape)} values for shape ${shapeString(shape)}, got ${typedArrayLength(data)}`);
      }
      entries.push([offset, data]);
    }
    for (const [offset, data] of entries) boundary.copyIn(state.address(offset), data);
  }

  function parameters() {
    usable('parameters');
    const out = {};
    for (const [name, { offset, shape }] of table) {
      out[name] = { data: boundary.copyOut(state.address(offset), boundary.count(shape)), shape: [...shape] };
    }
    return out;
  }

  function loadStateDict(source, options) {
    const FN = `${className}.loadStateDict`;
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
  }

  // Each parameter's gradient under its PyTorch name, from a backward's gradients at `gradients` (laid out as the
  // table's offsets say), each laid out as setParameters takes it: into `out`'s array of that name when given
  // (checked by checkOutFields against gradientShapes()), else a fresh one.
  function gradients(at, out) {
    const grads = {};
    for (const [name, { offset, shape }] of table) grads[name] = boundary.copyOut(at + 4 * offset, boundary.count(shape), out?.[name]);
    return grads;
  }

  // Each parameter's gradient's shape by name, as a backward's options.out.gradParameters may give arrays for them.
  function gradientShapes() {
    return Object.fromEntries([...table].map(([name, { shape }]) => [name, shape]));
  }

  const guarded = (fn) => (...args) => boundary.guarded(() => fn(...args));
  return {
    methods: { setParameters: guarded(setParameters), parameters: guarded(parameters), loadStateDict: guarded(loadStateDict) },
    gradients,
    gradientShapes,
  };
}
