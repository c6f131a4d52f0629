// applyRotaryEmbedding and its gradient over the boundary (js/boundary.js): rows x (…, L, D), as SDPA's query and
// key, turned by their positions (src/xattn/rotary.hpp: ONNX RotaryEmbedding's semantics; rotate_half pairs, or
// GPT-J's interleaved ones). Two crossings.
import { checkBoolean, checkInteger, checkNumber, checkOptions, checkTensors, typeName, typedArrayLength, typedArrayName } from './validate.js';

const ROTARY = 'applyRotaryEmbedding';
const ROTARY_GRAD = 'applyRotaryEmbeddingGrad';
const OPTIONS = ['positions', 'positionOffset', 'base', 'rotaryDim', 'interleaved'];
const POSITION_LIMIT = 0x7fffffff;

// positions: an Int32Array or an Array of integers in [0, 2^31), L of them (every batch element) or B·L.
function checkPositions(fn, given) {
  if (given === undefined) return null;
  const tag = typedArrayName(given);
  if (!Array.isArray(given) && tag !== 'Int32Array') {
    throw new TypeError(`${fn}: positions must be an Int32Array or an Array of integers, got ${typeName(given)}`);
  }
  const out = Int32Array.from(given, (p, i) => {
    if (typeof p !== 'number' || !Number.isInteger(p) || p < 0 || p > POSITION_LIMIT) {
      throw new RangeError(`${fn}: positions[${i}] must be an integer in [0, 2^31), got ${typeof p === 'number' ? p : typeName(p)}`);
    }
    return p;
  });
  return out;
}

function rotary(boundary, fn, tensor, options, backward) {
  const { half, tensors: [x] } = checkTensors(fn, [[backward ? 'gradOutput' : 'x', tensor]]);
  const o = checkOptions(fn, 'options', options, OPTIONS);
  const positions = checkPositions(fn, o.positions);
  if (positions && o.positionOffset !== undefined) {
    throw new TypeError(`${fn}: give positions or positionOffset, not both`);
  }
  const reply = boundary.prepare('rotary', {
    x: x.shape,
    positions: positions ? [typedArrayLength(positions)] : null,
    positionOffset: o.positionOffset === undefined ? 0 : checkInteger(fn, 'positionOffset', o.positionOffset, 0, POSITION_LIMIT),
    base: o.base === undefined ? 10000 : checkNumber(fn, 'base', o.base),
    rotaryDim: o.rotaryDim === undefined ? 0 : checkInteger(fn, 'rotaryDim', o.rotaryDim, 0, POSITION_LIMIT),
    interleaved: checkBoolean(fn, 'interleaved', o.interleaved, false),
    backward,
    float16: half !== null,
  }, fn);
  boundary.copyIn(reply.x, x.data);
  if (positions) boundary.copyIn(reply.positions, positions);
  boundary.execute(fn);
  const n = boundary.count(x.shape);
  const data = half ? boundary.copyOutHalves(reply.output, n, half) : boundary.copyOut(reply.output, n);
  return { data, shape: [...x.shape] };
}

export function rotaryFunctions(boundary) {
  const { guarded } = boundary;
  return {
    applyRotaryEmbedding: (x, options) => guarded(() => rotary(boundary, ROTARY, x, options, false)),
    applyRotaryEmbeddingGrad: (gradOutput, options) => guarded(() => rotary(boundary, ROTARY_GRAD, gradOutput, options, true)),
  };
}
