// The README's JavaScript examples, as tests/js/readme.test.mjs runs them and the packaging test type-checks
// them: every ```js block, as CommonJS when it calls require() and as an ES module otherwise, with the lines it
// must print: what follows `→ ` in its comments, in order.
import { copyFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const README = new URL('../../README.md', import.meta.url);
const FIXTURES = new URL('../golden/safetensors/', import.meta.url);

export function readmeBlocks() {
  const blocks = [];
  const text = readFileSync(README, 'utf8');
  for (const match of text.matchAll(/^```js\n([\s\S]*?)^```$/gm)) {
    const code = match[1];
    const line = text.slice(0, match.index).split('\n').length;
    const kind = /\brequire\(/.test(code) ? 'cjs' : 'esm';
    const prints = [...code.matchAll(/\/\/.*?→ (.*)$/gm)].map((m) => m[1]);
    blocks.push({ line, kind, code, prints, file: `readme-line-${line}.${kind === 'cjs' ? 'cjs' : 'mjs'}` });
  }
  return blocks;
}

// What a block's folder needs beside it: the model file the state-dict example loads, which the README's
// Python snippet makes (here, the same kind of layer saved by tests/golden/safetensors/make_safetensors.py).
export function provideFiles(dir) {
  copyFileSync(new URL('encoder_layer_f32.safetensors', FIXTURES), join(dir, 'encoder_layer.safetensors'));
}

// Node prints arrays with spaces inside the brackets; the README's comments without: compare without blanks.
export const sameOutput = (got, want) => got.replace(/\s+/g, '') === want.replace(/\s+/g, '');
