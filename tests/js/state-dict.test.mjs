// MultiheadAttention.loadStateDict and parameters(): PyTorch's parameters, saved by torch in float32, float16,
// bfloat16 and float64 (tests/golden/safetensors/), load in one call and compute what torch computes; a
// state dict round-trips through parameters(); every bad source is refused by name and changes nothing.
import assert from 'node:assert/strict';
import { afterEach, describe, test } from 'node:test';

import { createXattn } from '../../js/node.js';
import { mismatch } from './golden.mjs';
import { expected, fixtureConfig, fixtureNames, readFixture, tensorOf, writeSafetensors } from './safetensors-fixture.mjs';

const xa = await createXattn();

// Modules made by a test are disposed after it (Node 20 has no `using`).
const made = [];
const make = (config) => {
  const mha = xa.createMultiheadAttention(config);
  made.push(mha);
  return mha;
};
afterEach(() => made.splice(0).forEach((m) => m.dispose()));

function refused(fn, Kind, ...fragments) {
  assert.throws(fn, (e) => {
    assert.ok(e instanceof Kind, `expected ${Kind.name}, got ${e?.constructor?.name}: ${e?.message}`);
    for (const f of fragments) assert.ok(e.message.includes(f), `message "${e.message}" lacks "${f}"`);
    return true;
  });
}

// A fixture's module, its inputs, its expected results and its parameters as torch converted them to float32.
function fixture(file) {
  const f = readFixture(file);
  const prefix = f.metadata.prefix;
  const get = (name) => f.entries.get(name);
  const expectedParameters = new Map([...f.entries].filter(([name]) => name.startsWith('expect.'))
    .map(([name, e]) => [name.slice('expect.'.length), e]));
  return {
    ...f, prefix, config: fixtureConfig(f.metadata), expectedParameters,
    inputs: ['check.query', 'check.key', 'check.value'].map((name) => tensorOf(get(name))),
    output: expected(get('check.output')),
    weights: expected(get('check.weights')),
  };
}

const fixtures = fixtureNames().map(fixture);
const encoder = fixtures.find((f) => f.prefix === 'self_attn.');

function forwardOf(mha, f) {
  return mha.forward(...f.inputs);
}

describe('loadStateDict', () => {
  test('the fixtures cover each dtype torch saves parameters in', () => {
    const dtypes = new Set(fixtures.flatMap((f) => [...f.entries].filter(([n]) => n.startsWith(f.prefix) && !n.startsWith('check.') && !n.startsWith('expect.')).map(([, e]) => e.dtype)));
    assert.deepEqual([...dtypes].sort(), ['BF16', 'F16', 'F32', 'F64']);
    assert.ok(encoder, 'a fixture holds a whole encoder layer, its attention under a prefix');
  });

  for (const f of fixtures) {
    test(`a ${f.config.embedDim}-dim module from ${f.prefix ? `'${f.prefix}' in ` : ''}a ${[...f.entries.values()][0].dtype} file computes what PyTorch computes`, () => {
      const mha = make(f.config);
      mha.loadStateDict(f.bytes, { prefix: f.prefix });
      const r = forwardOf(mha, f);
      assert.equal(mismatch(r.output, f.output), '');
      assert.equal(mismatch(r.weights, f.weights), '');
    });
  }

  test('an ArrayBuffer, a Uint8Array subarray and a Node Buffer are the same source', () => {
    const f = fixtures[0];
    const outputs = [];
    const padded = new Uint8Array(f.bytes.length + 3);
    padded.set(f.bytes, 3);
    const ab = f.bytes.buffer.slice(f.bytes.byteOffset, f.bytes.byteOffset + f.bytes.length);
    for (const source of [f.bytes, ab, padded.subarray(3)]) {
      const mha = make(f.config);
      mha.loadStateDict(source, { prefix: f.prefix });
      outputs.push(forwardOf(mha, f).output.data);
    }
    assert.deepEqual(outputs[1], outputs[0]);
    assert.deepEqual(outputs[2], outputs[0]);
  });

  test('a plain object of typed arrays or tensors, in float32, float64 or 16-bit bits, loads like the file', () => {
    for (const f of fixtures) {
      const fromFile = make(f.config);
      fromFile.loadStateDict(f.bytes, { prefix: f.prefix });
      const want = forwardOf(fromFile, f).output.data;
      const raw = (name) => f.entries.get(f.prefix + name);
      const sources = {
        float32: (name, e) => Float32Array.from(e.values),
        float64: (name, e) => Float64Array.from(e.values),
        tensor: (name, e) => ({ data: Float32Array.from(e.values), shape: e.shape }),
        // The file's own bits, for the 16-bit formats.
        bits: (name) => {
          const e = raw(name);
          const dtype = { F16: 'float16', BF16: 'bfloat16' }[e.dtype];
          return dtype ? { data: new Uint16Array(e.raw.buffer), shape: e.shape, dtype } : { data: Float32Array.from(f.expectedParameters.get(name).values), shape: e.shape };
        },
      };
      for (const [kind, entryOf] of Object.entries(sources)) {
        const object = Object.fromEntries([...f.expectedParameters].map(([name, e]) => [name, entryOf(name, e)]));
        const mha = make(f.config);
        mha.loadStateDict(object);
        assert.deepEqual(forwardOf(mha, f).output.data, want, `${kind} entries`);
      }
    }
  });

  test('a missing, an unexpected and a mis-shaped entry are each refused by name, and change nothing', () => {
    const f = encoder;
    const mha = make(f.config);
    mha.loadStateDict(f.bytes, { prefix: f.prefix });
    const before = forwardOf(mha, f).output.data;
    const good = Object.fromEntries([...f.expectedParameters].map(([name, e]) => [name, tensorOf(e)]));
    const FN = 'MultiheadAttention.loadStateDict';
    const { in_proj_bias: _, ...noBias } = good;
    refused(() => mha.loadStateDict(noBias), RangeError, FN, "missing 'in_proj_bias'");
    refused(() => mha.loadStateDict({ ...good, bias_k: new Float32Array(8) }), RangeError, "unexpected 'bias_k'",
      'its parameters: in_proj_weight, in_proj_bias, out_proj.weight, out_proj.bias');
    refused(() => mha.loadStateDict({ ...good, in_proj_weight: { data: new Float32Array(192), shape: [8, 24] } }),
      RangeError, "'in_proj_weight' has shape (8, 24), this module needs (24, 8)");
    refused(() => mha.loadStateDict({ ...good, 'out_proj.bias': new Float32Array(7) }), RangeError,
      "'out_proj.bias' has 7 values, this module needs (8,)");
    // Without its prefix, the layer's other entries are unexpected and the attention's are missing.
    refused(() => mha.loadStateDict(f.bytes), RangeError, "unexpected 'self_attn.in_proj_weight'", "'linear1.weight'",
      "missing 'in_proj_weight'");
    // A prefix without its dot: the suggestion, and not a list of every entry as missing.
    assert.throws(() => mha.loadStateDict(f.bytes, { prefix: 'self_attn' }), (e) => e instanceof RangeError
      && e.message === "MultiheadAttention.loadStateDict: the source's entries are under 'self_attn.', not 'self_attn': use { prefix: 'self_attn.' } (a prefix ends with its dot, as in PyTorch's state_dict keys)");
    refused(() => mha.loadStateDict(f.bytes, { prefix: 'encoder.' }), RangeError, "no entry starts with the prefix 'encoder.'",
      "'self_attn.'", "'linear1.'");
    assert.deepEqual(forwardOf(mha, f).output.data, before, 'the refused loads changed nothing');
  });

  test('bad sources, entries and options are refused with what they are', () => {
    const mha = make({ embedDim: 4, numHeads: 2, bias: false });
    const FN = 'MultiheadAttention.loadStateDict';
    refused(() => mha.loadStateDict(), TypeError, FN, 'source is required');
    for (const bad of [42, 'model.safetensors', null, [1, 2], new Float32Array(4)]) {
      refused(() => mha.loadStateDict(bad), TypeError, FN, 'source must be the bytes of a .safetensors file');
    }
    refused(() => mha.loadStateDict({}, { prefx: 'a.' }), TypeError, "unknown option 'prefx'");
    refused(() => mha.loadStateDict({}, { prefix: 1 }), TypeError, 'prefix must be a string, got number');
    refused(() => mha.loadStateDict({ in_proj_weight: [1, 2] }), TypeError, 'in_proj_weight must be a Float32Array, a Float64Array or { data, shape, dtype }, got Array');
    refused(() => mha.loadStateDict({ in_proj_weight: { data: new Uint16Array(48) } }), TypeError,
      "in_proj_weight.data is a Uint16Array: say which format its bits hold with dtype 'float16' or 'bfloat16'");
    refused(() => mha.loadStateDict({ in_proj_weight: { data: new Float32Array(48), dtype: 'float16' } }), TypeError,
      'in_proj_weight.data is a Float32Array, which holds float32, not "float16"');
    refused(() => mha.loadStateDict({ in_proj_weight: { data: new Int32Array(48) } }), TypeError, 'got Int32Array');
    refused(() => mha.loadStateDict({ in_proj_weight: { data: new Float32Array(48), shape: [12, , 4] } }), TypeError,
      'in_proj_weight.shape must be an Array of non-negative integers');
  });

  test('malformed safetensors files are refused with what is wrong', () => {
    const mha = make({ embedDim: 4, numHeads: 2, bias: false });
    const weight = { dtype: 'F32', shape: [12, 4], raw: new Uint8Array(192) };
    const bad = 'the source is not a valid safetensors file';
    refused(() => mha.loadStateDict(new Uint8Array(7)), TypeError, bad, 'it has 7 bytes');
    refused(() => mha.loadStateDict(writeSafetensors({ in_proj_weight: weight }, { headerSize: 1e6 })), TypeError, bad,
      'header size 1000000 does not fit');
    refused(() => mha.loadStateDict(writeSafetensors({}, { headerText: '{"a": ' })), TypeError, bad, 'not UTF-8 JSON');
    refused(() => mha.loadStateDict(writeSafetensors({}, { headerText: '[1]' })), TypeError, bad, 'not a JSON object');
    refused(() => mha.loadStateDict(writeSafetensors({ in_proj_weight: { ...weight, offsets: [0, 400] } })), TypeError,
      bad, "entry 'in_proj_weight' has data_offsets [0,400] outside the 192 data bytes");
    refused(() => mha.loadStateDict(writeSafetensors({ in_proj_weight: { ...weight, shape: [12, 3] } })), TypeError,
      bad, 'needs 144 bytes, its offsets span 192');
    const ints = { dtype: 'I32', shape: [12, 4], raw: new Uint8Array(192) };
    refused(() => mha.loadStateDict(writeSafetensors({ in_proj_weight: ints, 'out_proj.weight': { ...weight, shape: [4, 4], raw: new Uint8Array(64) } })),
      TypeError, 'in_proj_weight is I32, not a floating-point type');
  });

  test('a disposed module refuses loadStateDict and parameters', () => {
    const mha = xa.createMultiheadAttention({ embedDim: 4, numHeads: 2 });
    mha.dispose();
    refused(() => mha.loadStateDict({}), Error, 'MultiheadAttention.loadStateDict: this module was disposed');
    refused(() => mha.parameters(), Error, 'MultiheadAttention.parameters: this module was disposed');
  });
});

// These read parameters back out of wasm memory: they need the mhaGetParameter binding.
describe('parameters', () => {
  test('returns, in PyTorch names, order and shapes, exactly the float32 values torch converted from the file', () => {
    for (const f of fixtures) {
      const mha = make(f.config);
      mha.loadStateDict(f.bytes, { prefix: f.prefix });
      const p = mha.parameters();
      assert.deepEqual(Object.keys(p), [...f.expectedParameters.keys()]);
      for (const [name, e] of f.expectedParameters) {
        assert.deepEqual(p[name].shape, e.shape, name);
        assert.ok(p[name].data instanceof Float32Array, name);
        assert.deepEqual(p[name].data, Float32Array.from(e.values), `${name} from ${f.prefix}…`);
      }
    }
  });

  test('a state dict round-trips: parameters() of one module loads into another, which computes the same', () => {
    const f = fixtures[1];
    const a = make(f.config);
    a.loadStateDict(f.bytes, { prefix: f.prefix });
    const b = make(f.config);
    b.loadStateDict(a.parameters());
    assert.deepEqual(b.parameters(), a.parameters());
    assert.deepEqual(forwardOf(b, f).output.data, forwardOf(a, f).output.data);
  });

  test('returns copies: changing them changes nothing in the module', () => {
    const mha = make({ embedDim: 4, numHeads: 2 });
    const p = mha.parameters();
    p.in_proj_weight.data.fill(7);
    assert.notDeepEqual(mha.parameters().in_proj_weight.data, p.in_proj_weight.data);
  });

  test('initSeed seeds the default initialisation: the same seed gives the same parameters, another seed others', () => {
    const seeded = (initSeed) => {
      const mha = make({ embedDim: 8, numHeads: 2, ...(initSeed === undefined ? {} : { initSeed }) });
      assert.equal(mha.config.initSeed, initSeed ?? 0);
      return mha.parameters();
    };
    assert.deepEqual(seeded(5), seeded(5));
    assert.notDeepEqual(seeded(5).in_proj_weight.data, seeded(6).in_proj_weight.data);
    assert.deepEqual(seeded(undefined), seeded(0));
    assert.deepEqual(seeded(2 ** 53 - 1), seeded(2 ** 53 - 1));
  });
});

test('initSeed must be an integer in [0, 2^53)', () => {
  for (const bad of [-1, 1.5, 2 ** 53, NaN]) {
    refused(() => xa.createMultiheadAttention({ embedDim: 4, numHeads: 2, initSeed: bad }), RangeError,
      'createMultiheadAttention: initSeed must be an integer in [0, 9007199254740991]');
  }
  refused(() => xa.createMultiheadAttention({ embedDim: 4, numHeads: 2, initSeed: '1' }), TypeError, 'initSeed must be a number, got string');
  const mha = make({ embedDim: 4, numHeads: 2, initSeed: 12 });
  assert.equal(mha.config.initSeed, 12);
});
