// Every JavaScript example in the README runs as written, as an ES module or as CommonJS, and prints what its
// `// →` comments say; every other block is one that another suite runs (tests/js/readme-blocks.mjs says which).
// The blocks import 'xattn' by name: run from build/readme-test/ inside this package, the name resolves to the
// package itself (its package.json "exports").
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { RUN, browserBlocks, cppProject, provideFiles, readmeBlocks, readmeFences, sameOutput } from './readme-blocks.mjs';

const dir = fileURLToPath(new URL('../../build/readme-test/', import.meta.url));
const blocks = readmeBlocks();

describe('the README', () => {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  provideFiles(dir);

  test('has examples of both module kinds, each printing what it claims', () => {
    assert.ok(blocks.length >= 3, `only ${blocks.length} js blocks`);
    assert.ok(blocks.some((b) => b.kind === 'esm') && blocks.some((b) => b.kind === 'cjs'));
    for (const b of blocks) assert.ok(b.prints.length > 0, `the block at line ${b.line} states nothing it prints`);
  });

  test('has no code block that no test runs, and each states what it prints', () => {
    for (const f of readmeFences()) {
      assert.ok(RUN.includes(f.lang), `the \`\`\`${f.lang} block at line ${f.line}: no test runs it (blocks: ${RUN.join(', ')})`);
      if (f.lang !== 'cmake') assert.ok(f.prints.length > 0, `the block at line ${f.line} states nothing it prints`);
    }
    const { cmakeLists, main } = cppProject();
    assert.match(cmakeLists, /find_package\(xattn/);
    assert.match(main, /int main\(/);
    // A page, and the Worker example, run in Chromium (the packaging test).
    assert.ok(browserBlocks().some((b) => b.lang === 'html'), 'no page example');
    assert.ok(browserBlocks().some((b) => /xattn\/worker/.test(b.code)), 'the Worker example does not run in a browser');
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
