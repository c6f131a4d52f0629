// createMultiheadAttention over the boundary (js/boundary.js). A module's parameters live in wasm
// memory under an integer handle; dispose() frees them, and so does garbage collection of a module
// that was never disposed (FinalizationRegistry). Modules support `using` (Symbol.dispose).
import { cppName, jsMessage } from './boundary.js';
import { stateDictMethods } from './mha-state.js';
import {
  checkBoolean, checkInteger, checkMask, checkNumber, checkOptions, checkOut, checkTensor, shapeString, typeName,
  typedArrayLength, typedArrayName,
} from './validate.js';

const CREATE_MHA = 'createMultiheadAttention';
const CONFIG = ['embedDim', 'numHeads', 'kdim', 'vdim', 'bias', 'batchFirst', 'addBiasKv', 'addZeroAttn', 'dropout', 'initSeed'];
const FORWARD_OPTIONS = ['keyPaddingMask', 'attnMask', 'needWeights', 'averageAttnWeights', 'isCausal', 'training', 'seed', 'out'];
const BACKWARD_OPTIONS = ['keyPaddingMask', 'attnMask', 'isCausal', 'training', 'seed'];
const PARAMETERS = ['inProjWeight', 'inProjBias', 'qProjWeight', 'kProjWeight', 'vProjWeight', 'outProjWeight',
  'outProjBias', 'biasK', 'biasV'];
// Largest embedDim, kdim, vdim and numHeads: well past anything 2 GiB of parameters can hold.
const DIM_LIMIT = 1 << 24;
// Symbol.dispose where the engine has it (Node 20 does); the well-known fallback name elsewhere.
const DISPOSE = Symbol.dispose ?? Symbol.for('Symbol.dispose');

function checkConfig(config) {
  if (config === undefined) throw new TypeError(`${CREATE_MHA}: config { embedDim, numHeads, … } is required`);
  const c = checkOptions(CREATE_MHA, 'config', config, CONFIG);
  const embedDim = checkInteger(CREATE_MHA, 'embedDim', c.embedDim, 1, DIM_LIMIT);
  const dim = (name) => (c[name] === undefined ? embedDim : checkInteger(CREATE_MHA, name, c[name], 1, DIM_LIMIT));
  return {
    embedDim,
    numHeads: checkInteger(CREATE_MHA, 'numHeads', c.numHeads, 1, DIM_LIMIT),
    kdim: dim('kdim'),
    vdim: dim('vdim'),
    bias: checkBoolean(CREATE_MHA, 'bias', c.bias, true),
    batchFirst: checkBoolean(CREATE_MHA, 'batchFirst', c.batchFirst, false),
    addBiasKv: checkBoolean(CREATE_MHA, 'addBiasKv', c.addBiasKv, false),
    addZeroAttn: checkBoolean(CREATE_MHA, 'addZeroAttn', c.addZeroAttn, false),
    // PyTorch's `dropout` on the attention weights, applied by calls with training: true (the core checks [0, 1)).
    dropout: c.dropout === undefined ? 0 : checkNumber(CREATE_MHA, 'dropout', c.dropout),
    // Seeds the default initialisation (PyTorch's distributions, not its values). Default 0.
    initSeed: c.initSeed === undefined ? 0 : checkInteger(CREATE_MHA, 'initSeed', c.initSeed, 0, Number.MAX_SAFE_INTEGER),
  };
}

// One module's state: the boundary, its handle in the wasm table, its parameters' shapes.
function moduleState(boundary, handle, config) {
  return {
    boundary,
    handle,
    config,
    disposed: false,
    // PyTorch's names and shapes of this configuration's parameters, in camelCase.
    shapes: new Map(boundary.mod.mhaParameterShapes(handle).split(',').map((entry) => {
      const [name, dims] = entry.split(':');
      return [jsMessage(name), dims.split('x').map(Number)];
    })),
    // Where each parameter's gradient starts among those the backward returns.
    offsets: new Map(boundary.mod.mhaParameterOffsets(handle).split(',').map((entry) => {
      const [name, at] = entry.split(':');
      return [jsMessage(name), Number(at)];
    })),
  };
}

function ensureLive(state, method) {
  state.boundary.ensureUsable();
  if (state.disposed) throw new Error(`MultiheadAttention.${method}: this module was disposed`);
}

function setParameters(state, parameters) {
  const FN = 'MultiheadAttention.setParameters';
  const { boundary, handle, shapes } = state;
  ensureLive(state, 'setParameters');
  if (parameters === undefined) throw new TypeError(`${FN}: parameters object is required`);
  const given = checkOptions(FN, 'parameters', parameters, PARAMETERS);
  // Every given parameter is read once and checked before any is set, so a refusal changes nothing.
  const entries = [];
  for (const name of PARAMETERS) {
    const data = given[name];
    if (data === undefined) continue;
    if (typedArrayName(data) !== 'Float32Array') throw new TypeError(`${FN}: ${name} must be a Float32Array, got ${typeName(data)}`);
    const shape = shapes.get(name);
    if (!shape) throw new TypeError(`${FN}: this configuration has no ${name} (it has ${[...shapes.keys()].join(', ')})`);
    if (typedArrayLength(data) !== boundary.count(shape)) {
      throw new RangeError(`${FN}: ${name} needs ${boundary.count(shape)} values for shape ${shapeString(shape)}, got ${typedArrayLength(data)}`);
    }
    entries.push([name, data]);
  }
  boundary.withBuffers(FN, entries.map(([, data]) => data), (pointers) => {
    entries.forEach(([name], i) => {
      const error = boundary.mod.mhaSetParameter(handle, cppName(name), pointers[i], boundary.count(shapes.get(name)));
      if (error) throw new RangeError(jsMessage(error, FN));
    });
  });
}

// The checked inputs and options of a forward or backward call, as the bindings' MhaCall and the
// arrays to copy in.
function mhaCall(FN, state, allowed, query, key, value, gradOutput, options) {
  const o = checkOptions(FN, 'options', options, allowed);
  const q = checkTensor(FN, 'query', query);
  const k = checkTensor(FN, 'key', key);
  const v = checkTensor(FN, 'value', value);
  const dO = gradOutput === undefined ? null : checkTensor(FN, 'gradOutput', gradOutput);
  const kpm = checkMask(FN, 'keyPaddingMask', o.keyPaddingMask);
  const am = checkMask(FN, 'attnMask', o.attnMask);
  const inputs = { query: q.data, key: k.data, value: v.data };
  if (kpm) inputs.keyPaddingMask = kpm.data;
  if (am) inputs.attnMask = am.data;
  if (dO) inputs.gradOutput = dO.data;
  return {
    inputs,
    out: checkOut(FN, o.out),  // the forward's only: the backward's options do not allow it
    shapes: { query: q.shape, key: k.shape, value: v.shape },
    call: {
      module: state.handle,
      query: q.shape, key: k.shape, value: v.shape,
      keyPaddingMask: kpm ? kpm.shape : null, attnMask: am ? am.shape : null, gradOutput: dO ? dO.shape : null,
      kpmKind: kpm ? kpm.kind : 0, attnKind: am ? am.kind : 0,
      needWeights: checkBoolean(FN, 'needWeights', o.needWeights, true),
      averageAttnWeights: checkBoolean(FN, 'averageAttnWeights', o.averageAttnWeights, true),
      isCausal: checkBoolean(FN, 'isCausal', o.isCausal, false),
      training: checkBoolean(FN, 'training', o.training, false),
      seed: o.seed === undefined ? 0 : checkInteger(FN, 'seed', o.seed, 0, Number.MAX_SAFE_INTEGER),
    },
  };
}

function forward(state, query, key, value, options) {
  const FN = 'MultiheadAttention.forward';
  const { boundary } = state;
  ensureLive(state, 'forward');
  const { inputs, out, call } = mhaCall(FN, state, FORWARD_OPTIONS, query, key, value, undefined, options);
  return boundary.invokeForward(FN, boundary.plan('mhaPlan', call), inputs, call.needWeights, out);
}

function backward(state, query, key, value, gradOutput, options) {
  const FN = 'MultiheadAttention.backward';
  const { boundary } = state;
  ensureLive(state, 'backward');
  if (gradOutput === undefined) throw new TypeError(`${FN}: gradOutput is required (shaped like the output, i.e. like query)`);
  const { inputs, shapes, call } = mhaCall(FN, state, BACKWARD_OPTIONS, query, key, value, gradOutput, options);
  const layout = boundary.plan('mhaBackwardPlan', call);
  const parameterFloats = [...state.shapes.values()].reduce((n, shape) => n + boundary.count(shape), 0);
  const r = boundary.invoke(FN, layout, inputs, {
    output: boundary.count(shapes.query), gradQuery: boundary.count(shapes.query), gradKey: boundary.count(shapes.key),
    gradValue: boundary.count(shapes.value), gradParameters: parameterFloats,
  });
  // Each parameter's gradient, named and laid out as setParameters takes it.
  const gradParameters = {};
  for (const [name, shape] of state.shapes) {
    const at = state.offsets.get(name);
    gradParameters[name] = r.gradParameters.slice(at, at + boundary.count(shape));
  }
  return {
    output: { data: r.output, shape: [...shapes.query] },
    gradQuery: { data: r.gradQuery, shape: [...shapes.query] },
    gradKey: { data: r.gradKey, shape: [...shapes.key] },
    gradValue: { data: r.gradValue, shape: [...shapes.value] },
    gradParameters,
  };
}

export function mhaFunctions(boundary) {
  const { mod, guarded } = boundary;
  // Frees the parameters of modules dropped without dispose(); never after the module failed.
  const registry = new FinalizationRegistry((handle) => {
    if (!boundary.broken) mod.mhaDestroy(handle);
  });

  function createMultiheadAttention(config) {
    return guarded(() => {
      const c = checkConfig(config);
      const created = mod.mhaCreate({
        ...c, kdim: c.kdim === c.embedDim ? 0 : c.kdim, vdim: c.vdim === c.embedDim ? 0 : c.vdim,
      });
      if (created.error) throw new RangeError(jsMessage(created.error, CREATE_MHA));
      return makeModule(moduleState(boundary, created.handle, c));
    });
  }

  function makeModule(state) {
    // Idempotent; after a module failure the memory is gone with the instance, so nothing is freed.
    function dispose() {
      if (state.disposed) return;
      state.disposed = true;
      registry.unregister(module);
      if (!boundary.broken) mod.mhaDestroy(state.handle);
    }
    const module = {
      setParameters: (parameters) => guarded(() => setParameters(state, parameters)),
      forward: (query, key, value, options) => guarded(() => forward(state, query, key, value, options)),
      backward: (query, key, value, gradOutput, options) =>
        guarded(() => backward(state, query, key, value, gradOutput, options)),
      ...stateDictMethods({
        boundary, handle: state.handle, shapes: state.shapes, usable: (method) => ensureLive(state, method),
        setParameters: (parameters) => setParameters(state, parameters),
      }),
      dispose,
      [DISPOSE]: dispose,
      /** The configuration, with every default filled in. */
      get config() { return { ...state.config }; },
    };
    registry.register(module, state.handle, module);
    return module;
  }

  return { createMultiheadAttention };
}
