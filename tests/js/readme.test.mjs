// Every JavaScript example in the README runs as written, as an ES module or as CommonJS, and prints what its
// `// →` comments say. The blocks import 'xattn' by name: run from build/readme-test/ inside this package, the
// name resolves to the package itself (its package.json "exports").
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { provideFiles, readmeBlocks, sameOutput } from './readme-blocks.mjs';

const dir = fileURLToPath(new URL('../../build/readme-test/', import.meta.url));
const blocks = readmeBlocks();

describe('the README', () => {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  provideFiles(dir);

  test('has examples of both module kinds, each printing what it claims', () => {
    assert.ok(blocks.length >= 5, `only ${blocks.length} js blocks`);
    assert.ok(blocks.some((b) => b.kind === 'esm') && blocks.some((b) => b.kind === 'cjs'));
    for (const b of blocks) assert.ok(b.prints.length > 0, `the block at line ${b.line} states nothing it prints`);
  });

  for (const b of blocks) {
    test(`the ${b.kind === 'cjs' ? 'CommonJS' : 'ESM'} example at README line ${b.line} runs and prints what it says`, () => {
      writeFileSync(`${dir}${b.file}`, b.code);
      const out = execFileSync(process.execPath, [b.file], { cwd: dir, encoding: 'utf8', timeout: 60000 });
      const lines = out.trimEnd().split('\n');
      assert.equal(lines.length, b.prints.length, `printed:\n${out}`);
      b.prints.forEach((want, i) => assert.ok(sameOutput(lines[i], want), `line ${i + 1}: printed ${lines[i]}, README says ${want}`));
    });
  }
});
