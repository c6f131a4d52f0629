// A MultiheadAttention's parameters as a PyTorch state dict: parameters() reads copies out of wasm memory;
// loadStateDict(source, { prefix }) sets them all, in one call, from a .safetensors file or an object of
// tensors (js/state-dict.js), refusing the whole load when any entry is missing, unexpected or mis-shaped.
import { jsMessage } from './boundary.js';
import { matchParameters, stateDictEntries } from './state-dict.js';
import { checkOptions, typeName } from './validate.js';

// The order of torch.nn.MultiheadAttention's state_dict: its own parameters, then out_proj's.
const TORCH_ORDER = ['in_proj_weight', 'q_proj_weight', 'k_proj_weight', 'v_proj_weight', 'in_proj_bias', 'bias_k',
  'bias_v', 'out_proj.weight', 'out_proj.bias'];

// The methods of one module. `shapes` maps the module's camelCase parameter names to their shapes;
// `usable(method)` throws when the module was disposed; `setParameters` is the module's own.
export function stateDictMethods({ boundary, handle, shapes, usable, setParameters }) {
  const torchShapes = new Map(TORCH_ORDER.filter((name) => shapes.has(jsMessage(name)))
    .map((name) => [name, shapes.get(jsMessage(name))]));
  if (torchShapes.size !== shapes.size) {
    throw new Error(`xattn: a parameter of this module has no known PyTorch name (it has ${[...shapes.keys()].join(', ')})`);
  }

  function parameters() {
    return boundary.guarded(() => {
      const FN = 'MultiheadAttention.parameters';
      usable('parameters');
      if (typeof boundary.mod.mhaGetParameter !== 'function') {
        throw new Error(`${FN}: this build of the WebAssembly module cannot read parameters (no mhaGetParameter binding); rebuild it with npm run build:wasm`);
      }
      const names = [...torchShapes.keys()];
      const counts = names.map((name) => boundary.count(torchShapes.get(name)));
      return boundary.withBuffers(FN, counts, (pointers) => {
        const out = {};
        names.forEach((name, i) => {
          const error = boundary.mod.mhaGetParameter(handle, name, pointers[i], counts[i]);
          if (error) throw new RangeError(jsMessage(error, FN));
          out[name] = { data: boundary.copyOut(pointers[i], counts[i]), shape: [...torchShapes.get(name)] };
        });
        return out;
      });
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
      const values = matchParameters(FN, stateDictEntries(FN, source), torchShapes, o.prefix ?? '');
      setParameters(Object.fromEntries([...values].map(([name, data]) => [jsMessage(name), data])));
    });
  }

  return { parameters, loadStateDict };
}
