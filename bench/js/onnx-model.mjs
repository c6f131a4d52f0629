// The onnxruntime peers' model: scores = MatMul(Q, Transpose(K)), Mul by the scale, Softmax over the keys,
// MatMul with V. Encoded with protobufjs from the field numbers of onnx.proto (only the fields this graph
// uses), so the benchmark needs no .onnx file and no Python.
import protobuf from 'protobufjs';

const { Root, Type, Field } = protobuf;

// [message, [[field, number, type, rule?], ...]]. Numbers and types as in onnx/onnx.proto.
const MESSAGES = [
  ['OperatorSetIdProto', [['domain', 1, 'string'], ['version', 2, 'int64']]],
  ['AttributeProto', [['name', 1, 'string'], ['f', 2, 'float'], ['i', 3, 'int64'], ['ints', 8, 'int64', 'repeated'],
    ['type', 20, 'int32']]],
  ['NodeProto', [['input', 1, 'string', 'repeated'], ['output', 2, 'string', 'repeated'], ['name', 3, 'string'],
    ['opType', 4, 'string'], ['attribute', 5, 'AttributeProto', 'repeated'], ['domain', 7, 'string']]],
  ['TensorProto', [['dims', 1, 'int64', 'repeated'], ['dataType', 2, 'int32'], ['floatData', 4, 'float', 'repeated'],
    ['name', 8, 'string']]],
  ['Dimension', [['dimValue', 1, 'int64']]],
  ['TensorShapeProto', [['dim', 1, 'Dimension', 'repeated']]],
  ['TensorTypeProto', [['elemType', 1, 'int32'], ['shape', 2, 'TensorShapeProto']]],
  ['TypeProto', [['tensorType', 1, 'TensorTypeProto']]],
  ['ValueInfoProto', [['name', 1, 'string'], ['type', 2, 'TypeProto']]],
  ['GraphProto', [['node', 1, 'NodeProto', 'repeated'], ['name', 2, 'string'], ['initializer', 5, 'TensorProto', 'repeated'],
    ['input', 11, 'ValueInfoProto', 'repeated'], ['output', 12, 'ValueInfoProto', 'repeated']]],
  ['ModelProto', [['irVersion', 1, 'int64'], ['producerName', 2, 'string'], ['graph', 7, 'GraphProto'],
    ['opsetImport', 8, 'OperatorSetIdProto', 'repeated']]],
];

const FLOAT = 1;            // TensorProto.DataType.FLOAT
const ATTR_INT = 2;         // AttributeProto.AttributeType
const ATTR_INTS = 7;
const IR_VERSION = 8;       // ONNX 1.10+, matches opset 17
const OPSET = 17;

let ModelProto = null;

function schema() {
  if (ModelProto) return ModelProto;
  const root = new Root();
  const ns = root.define('onnx');
  for (const [name, fields] of MESSAGES) {
    const type = new Type(name);
    for (const [field, id, kind, rule] of fields) type.add(new Field(field, id, kind, rule));
    ns.add(type);
  }
  ModelProto = root.lookupType('onnx.ModelProto');
  return ModelProto;
}

const valueInfo = (name, dims) => ({
  name,
  type: { tensorType: { elemType: FLOAT, shape: { dim: dims.map((d) => ({ dimValue: d })) } } },
});

const node = (opType, input, output, attribute = []) => ({ opType, input, output, name: output[0], attribute });

// Model bytes for attention over (BH, L, E) queries, (BH, S, E) keys and (BH, S, Ev) values, with fixed dims
// so the runtime can plan for exactly this shape.
export function attentionModel({ BH, L, S, E, Ev }, scale) {
  const model = {
    irVersion: IR_VERSION,
    producerName: 'xattn-bench',
    opsetImport: [{ domain: '', version: OPSET }],
    graph: {
      name: 'attention',
      input: [valueInfo('query', [BH, L, E]), valueInfo('key', [BH, S, E]), valueInfo('value', [BH, S, Ev])],
      output: [valueInfo('output', [BH, L, Ev])],
      initializer: [{ name: 'scale', dataType: FLOAT, dims: [], floatData: [scale] }],
      node: [
        node('Transpose', ['key'], ['keyT'], [{ name: 'perm', type: ATTR_INTS, ints: [0, 2, 1] }]),
        node('MatMul', ['query', 'keyT'], ['scores']),
        node('Mul', ['scores', 'scale'], ['scaled']),
        node('Softmax', ['scaled'], ['weights'], [{ name: 'axis', type: ATTR_INT, i: -1 }]),
        node('MatMul', ['weights', 'value'], ['output']),
      ],
    },
  };
  const type = schema();
  const problem = type.verify(model);
  if (problem) throw new Error(`attention model: ${problem}`);
  return type.encode(type.fromObject(model)).finish();
}

// One decoding step with past key/value inputs: K = Concat(pastKey, key), V likewise, then attention of the
// G query rows of each of the Hkv key/value heads ((1, Hkv, G, E): GQA without repeating K and V, the batched
// MatMul broadcasting over the heads). No present outputs: the cheapest form of the step for the runtime.
export function decodeModel({ Hkv, G, past, E }, scale) {
  const model = {
    irVersion: IR_VERSION,
    producerName: 'xattn-bench',
    opsetImport: [{ domain: '', version: OPSET }],
    graph: {
      name: 'decode',
      input: [valueInfo('query', [1, Hkv, G, E]), valueInfo('pastKey', [1, Hkv, past, E]),
        valueInfo('pastValue', [1, Hkv, past, E]), valueInfo('key', [1, Hkv, 1, E]), valueInfo('value', [1, Hkv, 1, E])],
      output: [valueInfo('output', [1, Hkv, G, E])],
      initializer: [{ name: 'scale', dataType: FLOAT, dims: [], floatData: [scale] }],
      node: [
        node('Concat', ['pastKey', 'key'], ['keys'], [{ name: 'axis', type: ATTR_INT, i: 2 }]),
        node('Concat', ['pastValue', 'value'], ['values'], [{ name: 'axis', type: ATTR_INT, i: 2 }]),
        node('Transpose', ['keys'], ['keysT'], [{ name: 'perm', type: ATTR_INTS, ints: [0, 1, 3, 2] }]),
        node('MatMul', ['query', 'keysT'], ['scores']),
        node('Mul', ['scores', 'scale'], ['scaled']),
        node('Softmax', ['scaled'], ['weights'], [{ name: 'axis', type: ATTR_INT, i: -1 }]),
        node('MatMul', ['weights', 'values'], ['output']),
      ],
    },
  };
  const type = schema();
  const problem = type.verify(model);
  if (problem) throw new Error(`decode model: ${problem}`);
  return type.encode(type.fromObject(model)).finish();
}
