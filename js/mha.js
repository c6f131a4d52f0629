// createMultiheadAttention over the boundary (js/boundary.js). A module's parameters live in wasm
// memory under an integer handle; dispose() frees them, and so does garbage collection of a module
// that was never disposed (FinalizationRegistry). Modules support `using` (Symbol.dispose).
import { NO_SHAPE, cppName, jsMessage, shapeOfWire, wireShape } from './boundary.js';
import { stateDictMethods } from './mha-state.js';
import {
  checkBoolean, checkInteger, checkMask, checkOptions, checkTensor, shapeString, typeName, typedArrayLength,
  typedArrayName,
} from './validate.js';

const CREATE_MHA = 'createMultiheadAttention';
const CONFIG = ['embedDim', 'numHeads', 'kdim', 'vdim', 'bias', 'batchFirst', 'addBiasKv', 'addZeroAttn', 'initSeed'];
const FORWARD_OPTIONS = ['keyPaddingMask', 'attnMask', 'needWeights', 'averageAttnWeights', 'isCausal'];
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
    // Seeds the default initialisation (PyTorch's distributions): the bindings take it as a double.
    initSeed: c.initSeed === undefined ? 0 : checkInteger(CREATE_MHA, 'initSeed', c.initSeed, 0, Number.MAX_SAFE_INTEGER),
  };
}

export function mhaFunctions(boundary) {
  const { mod, guarded, invoke, tensorOf, count, withBuffers } = boundary;
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
      return makeModule(created.handle, c);
    });
  }

  function makeModule(handle, config) {
    let disposed = false;
    // PyTorch's names and shapes of this configuration's parameters, in camelCase.
    const shapes = new Map(mod.mhaParameterShapes(handle).split(',').map((entry) => {
      const [name, dims] = entry.split(':');
      return [jsMessage(name), dims.split('x').map(Number)];
    }));
    const usable = (fn) => {
      boundary.ensureUsable();
      if (disposed) throw new Error(`MultiheadAttention.${fn}: this module was disposed`);
    };

    function setParameters(parameters) {
      return guarded(() => {
        const FN = 'MultiheadAttention.setParameters';
        usable('setParameters');
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
          if (typedArrayLength(data) !== count(shape)) {
            throw new RangeError(`${FN}: ${name} needs ${count(shape)} values for shape ${shapeString(shape)}, got ${typedArrayLength(data)}`);
          }
          entries.push([name, data]);
        }
        withBuffers(FN, entries.map(([, data]) => data), (pointers) => {
          entries.forEach(([name, data], i) => {
            const error = mod.mhaSetParameter(handle, cppName(name), pointers[i], count(shapes.get(name)));
            if (error) throw new RangeError(jsMessage(error, FN));
          });
        });
      });
    }

    function forward(query, key, value, options) {
      return guarded(() => {
        const FN = 'MultiheadAttention.forward';
        usable('forward');
        const o = checkOptions(FN, 'options', options, FORWARD_OPTIONS);
        const q = checkTensor(FN, 'query', query);
        const k = checkTensor(FN, 'key', key);
        const v = checkTensor(FN, 'value', value);
        const kpm = checkMask(FN, 'keyPaddingMask', o.keyPaddingMask);
        const am = checkMask(FN, 'attnMask', o.attnMask);
        const needWeights = checkBoolean(FN, 'needWeights', o.needWeights, true);
        const layout = mod.mhaPlan({
          module: handle,
          query: wireShape(q.shape), key: wireShape(k.shape), value: wireShape(v.shape),
          keyPaddingMask: kpm ? wireShape(kpm.shape) : NO_SHAPE, attnMask: am ? wireShape(am.shape) : NO_SHAPE,
          kpmKind: kpm ? kpm.kind : 0, attnKind: am ? am.kind : 0, needWeights,
          averageAttnWeights: checkBoolean(FN, 'averageAttnWeights', o.averageAttnWeights, true),
          isCausal: checkBoolean(FN, 'isCausal', o.isCausal, false),
        });
        const inputs = { query: q.data, key: k.data, value: v.data };
        if (kpm) inputs.keyPaddingMask = kpm.data;
        if (am) inputs.attnMask = am.data;
        const outputs = { output: count(shapeOfWire(layout.outputShape)) };
        if (needWeights) outputs.weights = count(shapeOfWire(layout.weightsShape));
        const r = invoke(FN, layout, inputs, outputs);
        const result = { output: tensorOf(r.output, layout.outputShape) };
        if (needWeights) result.weights = tensorOf(r.weights, layout.weightsShape);
        return result;
      });
    }

    // Idempotent; after a module failure the memory is gone with the instance, so nothing is freed.
    function dispose() {
      if (disposed) return;
      disposed = true;
      registry.unregister(module);
      if (!boundary.broken) mod.mhaDestroy(handle);
    }

    const module = {
      setParameters,
      ...stateDictMethods({ boundary, handle, shapes, usable, setParameters }),
      forward,
      dispose,
      [DISPOSE]: dispose,
      /** The configuration, with every default filled in. */
      get config() { return { ...config }; },
    };
    registry.register(module, handle, module);
    return module;
  }

  return { createMultiheadAttention };
}
