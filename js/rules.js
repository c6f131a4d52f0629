// The rules beside the mask (src/xattn/sdpa.hpp): the soft-cap, the sliding window, ALiBi's slopes and the key
// lengths, checked here (types, integers, counts) before they cross as the call record's fields; the core checks
// what needs the shapes (one slope per head, one length per batch element, lengths within S) and refuses by name.
import { MAX_LIST } from './boundary-schema.js';
import { checkNumber, checkOptions, typeName, typedArrayLength, typedArrayName } from './validate.js';

const STAGES = { scaled: 1, softcapped: 2, biased: 3 };  // xattn::ScoresStage

// Numbers from a Float32Array, an Int32Array or an Array of numbers (each checked by `each`), copied once.
function numbers(fn, name, given, kinds, each) {
  if (given === undefined) return null;
  const tag = typedArrayName(given);
  if (!Array.isArray(given) && !kinds.includes(tag)) {
    throw new TypeError(`${fn}: ${name} must be ${[...kinds, 'an Array of numbers'].join(' or ')}, got ${typeName(given)}`);
  }
  const length = Array.isArray(given) ? given.length : typedArrayLength(given);
  if (length > MAX_LIST) throw new RangeError(`${fn}: ${name} has ${length} values, more than the ${MAX_LIST} a call takes`);
  const out = Array.from(given);
  out.forEach((x, i) => each(`${name}[${i}]`, x));
  return out;
}

const integerIn = (fn, min, max) => (name, x) => {
  if (typeof x !== 'number' || !Number.isInteger(x) || x < min || x > max) {
    throw new RangeError(`${fn}: ${name} must be an integer in [${min}, ${max}], got ${typeof x === 'number' ? x : typeName(x)}`);
  }
};

// A window { left, right }: integers, -1 for an unbounded side (default), up to 2^31 - 1.
function windowSides(fn, window) {
  if (window === undefined) return { windowLeft: -1, windowRight: -1 };
  const w = checkOptions(fn, 'window', window, ['left', 'right']);
  const side = (name) => {
    if (w[name] === undefined) return -1;
    integerIn(fn, -1, 0x7fffffff)(`window.${name}`, w[name]);
    return w[name];
  };
  return { windowLeft: side('left'), windowRight: side('right') };
}

// The record's fields of the rules a call of `fn` allows: causalAlignment (where rows sit: it places the causal
// rule, the window and ALiBi), softcap, window, alibiSlopes, keyLengths, returnScores.
export function ruleFields(fn, o, allowed) {
  const alignment = o.causalAlignment;
  if (alignment !== undefined && alignment !== 'top-left' && alignment !== 'bottom-right') {
    throw new TypeError(`${fn}: causalAlignment must be 'top-left' or 'bottom-right', got ${JSON.stringify(alignment)}`);
  }
  const fields = {
    bottomRight: alignment === 'bottom-right',
    softcap: o.softcap === undefined ? 0 : checkNumber(fn, 'softcap', o.softcap),
    ...windowSides(fn, o.window),
    alibiSlopes: numbers(fn, 'alibiSlopes', o.alibiSlopes, ['Float32Array'], (name, x) => {
      if (typeof x !== 'number') throw new TypeError(`${fn}: ${name} must be a number, got ${typeName(x)}`);
    }),
  };
  if (allowed.includes('keyLengths')) {
    fields.keyLengths = numbers(fn, 'keyLengths', o.keyLengths, ['Int32Array'], integerIn(fn, 0, 0x7fffffff));
  }
  if (allowed.includes('returnScores')) {
    const stage = o.returnScores;
    if (stage !== undefined && !(stage in STAGES)) {
      throw new TypeError(`${fn}: returnScores must be 'scaled', 'softcapped' or 'biased', got ${JSON.stringify(stage)}`);
    }
    fields.returnScores = stage === undefined ? 0 : STAGES[stage];
  }
  return fields;
}

// A list of integers (counts, lengths) for the record: `name` of an Int32Array or an Array, each in [0, max].
export function integerList(fn, name, given, max) {
  return numbers(fn, name, given, ['Int32Array'], integerIn(fn, 0, max));
}
