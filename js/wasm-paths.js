// options.wasmPaths of createXattn and createXattnWorker: where the files a build fetches at run time are.
// Without it every entry finds them beside itself (its literal new URL('../dist/…', import.meta.url), which
// bundlers that rewrite such URLs see). With it, either a base under which the files keep their names, or a
// function giving each file's location, as onnxruntime-web's env.wasm.wasmPaths and Emscripten's locateFile.
import { objectTag, typeName } from './validate.js';

const OPTION = 'options.wasmPaths';

// The files an entry may fetch at run time, for each build (scripts/build-wasm.sh writes them): the .wasm,
// and for the threaded builds what their pthread workers load. The glue modules that the entries import
// themselves are bundled with the user's code, and are not among them.
export const wasmFile = (build) => `xattn-${build}.wasm`;
// Browsers: each pthread worker imports the build's glue again, by URL.
export const browserFiles = (build) => [wasmFile(build), ...(build.endsWith('-threads') ? [`xattn-${build}.mjs`] : [])];
// Node: worker_threads runs the pthread worker script, which reads the build's CommonJS glue again.
export const nodeFiles = (build) => [wasmFile(build),
  ...(build.endsWith('-threads') ? [`xattn-${build}-node.worker.cjs`, `xattn-${build}-node.cjs`] : [])];
export const BUILDS = ['simd', 'relaxed-simd', 'scalar', 'simd-threads', 'relaxed-simd-threads'];

const isUrlObject = (x) => objectTag(x) === '[object URL]';

// What was given, for messages: its type, and the value itself when it is short and printable.
export function given(x) {
  if (typeof x === 'string') return x === '' ? 'an empty string' : `'${x}'`;
  if (typeof x === 'number' || typeof x === 'boolean' || typeof x === 'bigint') return `${typeof x} ${String(x)}`;
  return typeName(x);
}

// A string or a URL object (of any realm) as a URL; relative strings are resolved by `resolve`
// (string → URL, throwing for what it cannot resolve).
function toUrl(fn, what, value, resolve) {
  if (isUrlObject(value)) return new URL(String(value));
  if (typeof value !== 'string') return null;
  if (value === '') throw new TypeError(`${fn}: ${what} must not be an empty string`);
  try {
    return resolve(value);
  } catch (e) {
    throw new TypeError(`${fn}: ${what} is not a URL${e?.message ? ` (${e.message})` : ''}: ${given(value)}`);
  }
}

// Checks `wasmPaths` (undefined, a base or a function) and returns locate(fileName) → URL, or undefined when
// it is not given. `resolve(string)` makes a URL of a string: relative ones against the document's base in
// browsers, against the working directory in Node (where a string may also be a path).
export function locator(fn, wasmPaths, resolve) {
  if (wasmPaths === undefined) return undefined;
  if (typeof wasmPaths === 'function') {
    return (fileName) => {
      const what = `${OPTION}('${fileName}')`;
      let location;
      try {
        location = wasmPaths(fileName);
      } catch (e) {
        throw new Error(`${fn}: ${what} threw: ${e?.message ?? e}`, { cause: e });
      }
      const url = toUrl(fn, what, location, resolve);
      if (!url) throw new TypeError(`${fn}: ${what} must return a string or a URL, got ${given(location)}`);
      return url;
    };
  }
  const base = toUrl(fn, OPTION, wasmPaths, resolve);
  if (!base) {
    throw new TypeError(`${fn}: ${OPTION} must be a string, a URL or a function (fileName) => string | URL, got ${given(wasmPaths)}`);
  }
  // A base is a folder: "https://cdn.example/xattn/dist" means the files inside it.
  if (!base.pathname.endsWith('/')) base.pathname += '/';
  try {
    new URL('x', base);
  } catch {
    throw new TypeError(`${fn}: ${OPTION} cannot hold files (a ${base.protocol} URL has no folders): ${given(String(wasmPaths))}`);
  }
  return (fileName) => new URL(fileName, base);
}

// Browsers and Web Workers: relative strings against the document's base URL (a Worker's: its own URL).
export function browserResolve(value) {
  const base = globalThis.document?.baseURI ?? globalThis.location?.href;
  return base === undefined ? new URL(value) : new URL(value, base);
}

// The sentence that ends a message about a file that could not be loaded: what to check or set.
export function hint(located) {
  return located
    ? "check that options.wasmPaths points where this version's dist files are"
    : "if a bundler or a server moved the package's dist files, set options.wasmPaths to where they are";
}
