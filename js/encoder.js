// createTransformerEncoderLayer over the boundary (js/boundary.js): torch.nn.TransformerEncoderLayer, its
// parameters in wasm memory under an integer handle, named and laid out by its parameter table (PyTorch's
// state_dict names: self_attn.in_proj_weight, …, linear1.weight, …, norm2.bias), which parameters(),
// setParameters, loadStateDict and the backward's gradParameters all read (js/mha-state.js). dispose() frees
// them, and so does garbage collection of a layer that was never disposed; layers support `using`.
import { DISPOSE, handleOwner } from './life.js';
import { parameterMethods } from './mha-state.js';
import {
  checkBoolean, checkInteger, checkMask, checkNumber, checkOptions, checkOut, checkOutFields, checkOutLength, checkTensor,
  typeName,
} from './validate.js';

const CREATE = 'createTransformerEncoderLayer';
const CONFIG = ['dModel', 'nhead', 'dimFeedforward', 'dropout', 'activation', 'layerNormEps', 'batchFirst', 'normFirst', 'initSeed'];
const CALL_OPTIONS = ['srcMask', 'srcKeyPaddingMask', 'isCausal', 'training', 'seed'];
const FORWARD_OPTIONS = [...CALL_OPTIONS, 'out', 'saveForBackward'];
const BACKWARD_OPTIONS = [...CALL_OPTIONS, 'saved', 'out'];
const DIM_LIMIT = 1 << 24;

// torch.nn.TransformerEncoderLayer's arguments and defaults, in camelCase.
function checkConfig(config) {
  if (config === undefined) throw new TypeError(`${CREATE}: config { dModel, nhead, … } is required`);
  const c = checkOptions(CREATE, 'config', config, CONFIG);
  const activation = c.activation ?? 'relu';
  if (activation !== 'relu' && activation !== 'gelu') {
    throw new TypeError(`${CREATE}: activation must be 'relu' or 'gelu', got ${typeof activation === 'string' ? JSON.stringify(activation) : typeName(activation)}`);
  }
  return {
    dModel: checkInteger(CREATE, 'dModel', c.dModel, 1, DIM_LIMIT),
    nhead: checkInteger(CREATE, 'nhead', c.nhead, 1, DIM_LIMIT),
    dimFeedforward: c.dimFeedforward === undefined ? 2048 : checkInteger(CREATE, 'dimFeedforward', c.dimFeedforward, 1, DIM_LIMIT),
    // On the attention weights and after each block, in calls with training: true (the core checks [0, 1)).
    dropout: c.dropout === undefined ? 0.1 : checkNumber(CREATE, 'dropout', c.dropout),
    activation,
    layerNormEps: c.layerNormEps === undefined ? 1e-5 : checkNumber(CREATE, 'layerNormEps', c.layerNormEps),
    batchFirst: checkBoolean(CREATE, 'batchFirst', c.batchFirst, false),
    normFirst: checkBoolean(CREATE, 'normFirst', c.normFirst, false),
    initSeed: c.initSeed === undefined ? 0 : checkInteger(CREATE, 'initSeed', c.initSeed, 0, Number.MAX_SAFE_INTEGER),
  };
}

function ensureLive(state, method) {
  state.boundary.ensureUsable();
  if (state.disposed) throw new Error(`TransformerEncoderLayer.${method}: this layer was disposed`);
}

// The checked call: the request, and the arrays to copy in.
function layerCall(FN, state, allowed, src, gradOutput, options) {
  const o = checkOptions(FN, 'options', options, allowed);
  const x = checkTensor(FN, 'src', src);
  const dy = gradOutput === undefined ? null : checkTensor(FN, 'gradOutput', gradOutput);
  const mask = checkMask(FN, 'srcMask', o.srcMask);
  const kpm = checkMask(FN, 'srcKeyPaddingMask', o.srcKeyPaddingMask);
  const inputs = [['input', x.data]];
  if (mask) inputs.push(['attnMask', mask.data]);
  if (kpm) inputs.push(['keyPaddingMask', kpm.data]);
  if (dy) inputs.push(['gradOutput', dy.data]);
  return {
    inputs,
    shape: x.shape,
    out: dy ? o.out : checkOut(FN, o.out),  // a backward's out, an object of arrays, is checked by backward()
    call: {
      module: state.handle,
      src: x.shape, srcMask: mask ? mask.shape : null, srcKeyPaddingMask: kpm ? kpm.shape : null,
      gradOutput: dy ? dy.shape : null,
      maskKind: mask ? mask.kind : 0, kpmKind: kpm ? kpm.kind : 0,
      isCausal: checkBoolean(FN, 'isCausal', o.isCausal, false),
      training: checkBoolean(FN, 'training', o.training, false),
      seed: o.seed === undefined ? 0 : checkInteger(FN, 'seed', o.seed, 0, Number.MAX_SAFE_INTEGER),
      save: false,
      ...(dy ? { saved: 0 } : {}),
    },
  };
}

function forward(state, src, options) {
  const FN = 'TransformerEncoderLayer.forward';
  const { boundary } = state;
  ensureLive(state, 'forward');
  const { inputs, out, call } = layerCall(FN, state, FORWARD_OPTIONS, src, undefined, options);
  call.save = checkBoolean(FN, 'saveForBackward', options?.saveForBackward, false);
  const reply = boundary.prepare('encoderForward', call, FN);
  // A saving forward's activations live under their own handle from here on: its token frees them.
  const saved = call.save ? state.keep(reply.handle) : null;
  try {
    checkOutLength(FN, out, reply.outputShape);
    for (const [field, data] of inputs) boundary.copyIn(reply[field], data);
    boundary.execute(FN);
  } catch (e) {
    saved?.dispose();
    throw e;
  }
  const output = { data: boundary.copyOut(reply.output, boundary.count(reply.outputShape), out), shape: reply.outputShape };
  return saved ? { output, saved } : { output };
}

function backward(state, src, gradOutput, options) {
  const FN = 'TransformerEncoderLayer.backward';
  const { boundary } = state;
  ensureLive(state, 'backward');
  if (gradOutput === undefined) throw new TypeError(`${FN}: gradOutput is required (shaped like the output, i.e. like src)`);
  const { inputs, shape, out, call } = layerCall(FN, state, BACKWARD_OPTIONS, src, gradOutput, options);
  const kept = options?.saved === undefined ? null : state.kept(FN, options.saved);
  call.saved = kept ? kept.handle : 0;
  const reply = boundary.prepare('encoderBackward', call, FN);
  const into = checkOutFields(FN, out, { output: shape, gradSrc: shape, gradParameters: state.gradientShapes() });
  for (const [field, data] of inputs) boundary.copyIn(reply[field], data);
  boundary.execute(FN);
  kept?.spend();  // the module freed its activations with the backward
  const n = boundary.count(shape);
  return {
    output: { data: boundary.copyOut(reply.output, n, into?.output), shape: [...shape] },
    gradSrc: { data: boundary.copyOut(reply.gradInput, n, into?.gradSrc), shape: [...shape] },
    gradParameters: state.gradients(reply.gradParameters, into?.gradParameters),
  };
}

// What forward(src, { saveForBackward: true }) returns as `saved`: a token for the activations the module keeps
// under `handle` for one backward. That backward frees them, and so do dispose(), the layer's dispose(), and
// garbage collection of a token never used.
const KEPT = new WeakMap();  // token -> its record { handle, live, end }

// A token that stands for kept activations already spent: the Worker entry (js/worker-host.js) passes it for an id
// it no longer holds, so that the module refuses the backward in the same words as on the page.
export const SPENT_FORWARD = Object.freeze({ dispose() {}, [DISPOSE]() {} });
KEPT.set(SPENT_FORWARD, { handle: -1, live: false, end() {} });

function keptForwards(boundary) {
  // Held: the record (which never refers to its token, so that a dropped token can be collected).
  const registry = new FinalizationRegistry((record) => record.end(true));

  // A new token for `handle`, kept by the layer whose state is `layer`.
  function keep(layer, handle) {
    const record = { handle, live: true };
    record.end = (destroy) => {  // destroy: free the module's memory (not when its backward already did)
      if (!record.live) return;
      record.live = false;
      registry.unregister(record);
      layer.keptRecords.delete(record);
      if (destroy) boundary.destroy(handle);
    };
    const release = () => record.end(true);
    const token = Object.freeze({ dispose: release, [DISPOSE]: release });
    KEPT.set(token, record);
    layer.keptRecords.add(record);
    registry.register(token, record, record);
    return token;
  }

  // The record behind options.saved; a token used or released crosses as handle -1, and another layer's with its
  // handle: the module refuses both in its own words.
  function kept(FN, token) {
    const record = KEPT.get(token);
    if (!record) {
      throw new TypeError(`${FN}: options.saved must be the saved of a forward(src, { saveForBackward: true }), got ${typeName(token)}`);
    }
    return { handle: record.live ? record.handle : -1, spend: () => record.end(false) };
  }

  return { keep, kept };
}

export function encoderFunctions(boundary, life) {
  const { guarded } = boundary;
  const own = handleOwner(boundary, life);
  const forwards = keptForwards(boundary);

  function createTransformerEncoderLayer(config) {
    return guarded(() => {
      const c = checkConfig(config);
      const reply = boundary.prepare('encoderCreate', { ...c, gelu: c.activation === 'gelu' }, CREATE);
      // self_attn's parameters live at `data`; the others, from offset restFrom on, at restData.
      const state = { boundary, handle: reply.handle, table: boundary.parameterTable(), config: c, disposed: false, keptRecords: new Set() };
      state.keep = (handle) => forwards.keep(state, handle);
      state.kept = (FN, token) => forwards.kept(FN, token);
      state.address = (offset) => (offset < reply.restFrom ? reply.data + 4 * offset : reply.restData + 4 * (offset - reply.restFrom));
      return makeLayer(state);
    });
  }

  function makeLayer(state) {
    const { methods, gradients, gradientShapes } = parameterMethods(state, { usable: (method) => ensureLive(state, method), className: 'TransformerEncoderLayer' });
    state.gradients = gradients;
    state.gradientShapes = gradientShapes;
    // Its dispose() first frees what its saving forwards kept.
    return own(state, {
      forward: (src, options) => guarded(() => forward(state, src, options)),
      backward: (src, gradOutput, options) => guarded(() => backward(state, src, gradOutput, options)),
      ...methods,
      /** The configuration, with every default filled in. */
      get config() { return { ...state.config }; },
    }, () => { for (const record of [...state.keptRecords]) record.end(true); });
  }

  return { createTransformerEncoderLayer };
}
