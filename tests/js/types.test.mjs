// One source of truth for the declarations: js/index.d.cts is generated from js/index.d.ts, and the
// generated file the package ships is what the generator writes now.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';

import { cjsDeclarations } from '../../scripts/build-types.mjs';

test('js/index.d.cts is generated from js/index.d.ts and up to date', () => {
  const esm = readFileSync(new URL('../../js/index.d.ts', import.meta.url), 'utf8');
  const cjs = readFileSync(new URL('../../js/index.d.cts', import.meta.url), 'utf8');
  assert.equal(cjs, cjsDeclarations(esm));
  // Every declaration of the ESM file is in the CJS namespace, under the same name.
  for (const [, kind, name] of esm.matchAll(/^export (interface|type) (\w+)/gm)) {
    assert.match(cjs, new RegExp(`^  ${kind} ${name}\\b`, 'm'), `${kind} ${name}`);
  }
  execFileSync(process.execPath, [new URL('../../scripts/build-types.mjs', import.meta.url).pathname, '--check']);
});
