// The README's code blocks, as the tests run them. Every block is run by one of them, and each states what it
// prints: what follows `→ ` in its comments, in order.
//   ```js      tests/js/readme.test.mjs runs each in Node (as CommonJS when it calls require(), else as an ES
//              module); the packaging test runs them against the tarball and type-checks them, and runs the ES
//              modules that import nothing from node: in Chromium too (tests/package/readme-browser.mjs)
//   ```html    a page: the packaging test opens it in Chromium beside the installed package
//   ```cmake   the C++ quick start's CMakeLists.txt, and
//   ```cpp     its main.cpp: scripts/test-consumer.sh builds them against the installed library and runs them
import { copyFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const README = new URL('../../README.md', import.meta.url);
const FIXTURES = new URL('../golden/safetensors/', import.meta.url);

// The languages a test runs; a block in any other fails tests/js/readme.test.mjs.
export const RUN = ['js', 'html', 'cmake', 'cpp'];

const printsOf = (code) => [...code.matchAll(/(?:\/\/|#).*?→ (.*)$/gm)].map((m) => m[1]);

// Every fenced block: its language (the info string), its first line's number in README.md, its code.
export function readmeFences(text = readFileSync(README, 'utf8')) {
  const fences = [];
  for (const match of text.matchAll(/^```(\S*)\n([\s\S]*?)^```$/gm)) {
    const line = text.slice(0, match.index).split('\n').length;
    fences.push({ lang: match[1], line, code: match[2], prints: printsOf(match[2]) });
  }
  return fences;
}

export function readmeBlocks() {
  return readmeFences().filter((f) => f.lang === 'js').map(({ line, code, prints }) => {
    const kind = /\brequire\(/.test(code) ? 'cjs' : 'esm';
    return { line, kind, code, prints, file: `readme-line-${line}.${kind === 'cjs' ? 'cjs' : 'mjs'}` };
  });
}

// What runs in a browser: the pages, and the ES module blocks that need nothing of Node's.
export function browserBlocks() {
  const pages = readmeFences().filter((f) => f.lang === 'html').map((f) => ({ ...f, page: `readme-line-${f.line}.html` }));
  const modules = readmeBlocks().filter((b) => b.kind === 'esm' && !/from '(node:|fs|path|os)/.test(b.code))
    .map((b) => ({ ...b, page: `readme-line-${b.line}.html` }));
  return [...pages, ...modules];
}

// The C++ quick start: the one cmake block and the one cpp block.
export function cppProject() {
  const fences = readmeFences();
  const cmake = fences.filter((f) => f.lang === 'cmake');
  const cpp = fences.filter((f) => f.lang === 'cpp');
  if (cmake.length !== 1 || cpp.length !== 1) {
    throw new Error(`README.md: expected one cmake and one cpp block, found ${cmake.length} and ${cpp.length}`);
  }
  return { cmakeLists: cmake[0].code, main: cpp[0].code, prints: cpp[0].prints };
}

// What a block's folder needs beside it: the model file the state-dict example loads, which the README says to
// save from PyTorch (here, the same kind of layer saved by tests/golden/safetensors/make_safetensors.py).
export function provideFiles(dir) {
  copyFileSync(new URL('encoder_layer_f32.safetensors', FIXTURES), join(dir, 'encoder_layer.safetensors'));
}

// Node prints arrays with spaces inside the brackets; the README's comments without: compare without blanks.
export const sameOutput = (got, want) => got.replace(/\s+/g, '') === want.replace(/\s+/g, '');
