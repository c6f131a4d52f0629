// createMultiheadAttention over the boundary (js/boundary.js). A module's parameters live in wasm memory under
// an integer handle, named and laid out by its parameter table (PyTorch's names), which parameters(),
// setParameters, loadStateDict and the backward's gradParameters all read; dispose() frees them, and so does
// garbage collection of a module that was never disposed (FinalizationRegistry). Modules support `using`
// (Symbol.dispose).
import { handleOwner } from './life.js';
import { parameterMethods } from './mha-state.js';
import { ruleFields } from './rules.js';
import {
  checkBoolean, checkInteger, checkMask, checkNumber, checkOptions, checkOut, checkOutFields, checkOutLength, checkTensor,
} from './validate.js';

const CREATE_MHA = 'createMultiheadAttention';
const CONFIG = ['embedDim', 'numHeads', 'kdim', 'vdim', 'bias', 'batchFirst', 'addBiasKv', 'addZeroAttn', 'dropout', 'initSeed'];
// The rules of scaledDotProductAttention, in every head.
const RULES = ['causalAlignment', 'softcap', 'window', 'alibiSlopes', 'keyLengths'];
const FORWARD_OPTIONS = ['keyPaddingMask', 'attnMask', 'needWeights', 'averageAttnWeights', 'isCausal', 'training', 'seed', 'out',
  ...RULES];
const BACKWARD_OPTIONS = ['keyPaddingMask', 'attnMask', 'isCausal', 'training', 'seed', 'out', ...RULES];
// Largest embedDim, kdim, vdim and numHeads: well past anything 2 GiB of parameters can hold.
const DIM_LIMIT = 1 << 24;

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

// One module's state: the boundary, its handle, its parameter table (Map<PyTorch name, { offset, shape }>, the
// module's own: offsets into its parameters at `data`, and into the gradients its backward writes).
function moduleState(boundary, reply, config) {
  const state = { boundary, handle: reply.handle, data: reply.data, table: boundary.parameterTable(), config, disposed: false };
  state.address = (offset) => state.data + 4 * offset;
  return state;
}

function ensureLive(state, method) {
  state.boundary.ensureUsable();
  if (state.disposed) throw new Error(`MultiheadAttention.${method}: this module was disposed`);
}

// The checked inputs and options of a forward or backward call: the request, and the arrays to copy in.
function mhaCall(FN, state, allowed, query, key, value, gradOutput, options) {
  const o = checkOptions(FN, 'options', options, allowed);
  const q = checkTensor(FN, 'query', query);
  const k = checkTensor(FN, 'key', key);
  const v = checkTensor(FN, 'value', value);
  const dO = gradOutput === undefined ? null : checkTensor(FN, 'gradOutput', gradOutput);
  const kpm = checkMask(FN, 'keyPaddingMask', o.keyPaddingMask);
  const am = checkMask(FN, 'attnMask', o.attnMask);
  const rules = ruleFields(FN, o, allowed);
  const inputs = [['query', q.data], ['key', k.data], ['value', v.data]];
  if (kpm) inputs.push(['keyPaddingMask', kpm.data]);
  if (am) inputs.push(['attnMask', am.data]);
  if (dO) inputs.push(['gradOutput', dO.data]);
  return {
    inputs,
    out: dO ? o.out : checkOut(FN, o.out),  // a backward's out, an object of arrays, is checked by backward()
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
      bottomRight: rules.bottomRight,
      softcap: rules.softcap,
      windowLeft: rules.windowLeft,
      windowRight: rules.windowRight,
      alibiSlopes: rules.alibiSlopes,
      keyLengths: rules.keyLengths,
    },
  };
}

function forward(state, query, key, value, options) {
  const FN = 'MultiheadAttention.forward';
  const { boundary } = state;
  ensureLive(state, 'forward');
  const { inputs, out, call } = mhaCall(FN, state, FORWARD_OPTIONS, query, key, value, undefined, options);
  const reply = boundary.prepare('mhaForward', call, FN);
  checkOutLength(FN, out, reply.outputShape);
  for (const [field, data] of inputs) boundary.copyIn(reply[field], data);
  boundary.execute(FN);
  const result = { output: { data: boundary.copyOut(reply.output, boundary.count(reply.outputShape), out), shape: reply.outputShape } };
  if (call.needWeights) result.weights = { data: boundary.copyOut(reply.weights, boundary.count(reply.weightsShape)), shape: reply.weightsShape };
  return result;
}

function backward(state, query, key, value, gradOutput, options) {
  const FN = 'MultiheadAttention.backward';
  const { boundary } = state;
  ensureLive(state, 'backward');
  if (gradOutput === undefined) throw new TypeError(`${FN}: gradOutput is required (shaped like the output, i.e. like query)`);
  const { inputs, shapes, out, call } = mhaCall(FN, state, BACKWARD_OPTIONS, query, key, value, gradOutput, options);
  const reply = boundary.prepare('mhaBackward', call, FN);
  const into = checkOutFields(FN, out, {
    output: shapes.query, gradQuery: shapes.query, gradKey: shapes.key, gradValue: shapes.value, gradParameters: state.gradientShapes(),
  });
  for (const [field, data] of inputs) boundary.copyIn(reply[field], data);
  boundary.execute(FN);
  const tensor = (field, shape) => ({ data: boundary.copyOut(reply[field], boundary.count(shape), into?.[field]), shape: [...shape] });
  return {
    output: tensor('output', shapes.query),
    gradQuery: tensor('gradQuery', shapes.query),
    gradKey: tensor('gradKey', shapes.key),
    gradValue: tensor('gradValue', shapes.value),
    // Each parameter's gradient under its PyTorch name, laid out as setParameters takes it.
    gradParameters: state.gradients(reply.gradParameters, into?.gradParameters),
  };
}

export function mhaFunctions(boundary, life) {
  const { guarded } = boundary;
  const own = handleOwner(boundary, life);

  function createMultiheadAttention(config) {
    return guarded(() => {
      const c = checkConfig(config);
      const reply = boundary.prepare('mhaCreate', {
        ...c, kdim: c.kdim === c.embedDim ? 0 : c.kdim, vdim: c.vdim === c.embedDim ? 0 : c.vdim,
      }, CREATE_MHA);
      return makeModule(moduleState(boundary, reply, c));
    });
  }

  function makeModule(state) {
    const { methods, gradients, gradientShapes } = parameterMethods(state, { usable: (method) => ensureLive(state, method), className: 'MultiheadAttention' });
    state.gradients = gradients;
    state.gradientShapes = gradientShapes;
    return own(state, {
      forward: (query, key, value, options) => guarded(() => forward(state, query, key, value, options)),
      backward: (query, key, value, gradOutput, options) =>
        guarded(() => backward(state, query, key, value, gradOutput, options)),
      ...methods,
      /** The configuration, with every default filled in. */
      get config() { return { ...state.config }; },
    });
  }

  return { createMultiheadAttention };
}
