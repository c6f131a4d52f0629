// The demo server's path rules from web/vite.config.js, as pure functions. tests/browser/server.test.js
// checks the running servers; here, that the rules read escapes as the server does and do not refuse
// ordinary names that merely contain dots.
import test from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ISOLATION_HEADERS, climbsOut, notThePage, referenceFile, requestSegments } from '../../web/vite.config.js';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

test('a .. segment is found however it is written', () => {
  for (const url of ['/..', '/../x', '/src/../../x', '/%2e%2e/x', '/%2E%2e%2Fx', '/..%2fx', '/%252e%252e%252fx', '/%25252e%25252e/x', '/src/..\\x', '/src/..%5cx', '/.%2e/x', '/a/./../x']) {
    assert.equal(climbsOut(url), true, url);
  }
});

test('names with dots, and dots in the query string, are not climbs', () => {
  for (const url of ['/', '/src/main.js', '/a..b/c', '/..foo', '/foo..', '/.../x', '/src/worker.js?worker_file&type=module', '/x.js?p=../..', '/%c0%ae%c0%ae/x']) {
    assert.equal(climbsOut(url), false, url);
  }
});

test('escapes are undone until nothing changes, separators split, empty and . segments dropped', () => {
  assert.deepEqual(requestSegments('//a/./b%252fc\\d?e/f'), ['a', 'b', 'c', 'd']);
  // A malformed escape stays as it is rather than throwing.
  assert.deepEqual(requestSegments('/%zz/%e0%a4'), ['%zz', '%e0%a4']);
});

test('/@id/ by package name and the config are not the page; virtual modules and page files are', () => {
  for (const url of ['/@id/uplot', '/@i%64/uplot', '//@id/vite', '/vite.config.js', '/%76ite.config.js?import']) assert.equal(notThePage(url), true, url);
  for (const url of ['/@id/__x00__virtual', '/', '/src/main.js', '/src/vite.config.js', '/@fs/srv/x.js', '/@vite/client']) assert.equal(notThePage(url), false, url);
});

test('the isolation headers are the two cross-origin isolation needs', () => {
  assert.deepEqual(ISOLATION_HEADERS, { 'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp' });
});

test('/docs/ serves the API reference\'s files, a folder by its index.html, and nothing outside it', () => {
  const base = mkdtempSync(path.join(tmpdir(), 'xattn-reference-'));
  const root = path.join(base, 'docs');
  try {
    mkdirSync(root);
    mkdirSync(path.join(root, 'interfaces'));
    writeFileSync(path.join(root, 'index.html'), 'index');
    writeFileSync(path.join(root, 'interfaces', 'index.Xattn.html'), 'Xattn');
    writeFileSync(path.join(base, 'outside.html'), 'outside');
    assert.equal(referenceFile('/', root), path.join(root, 'index.html'));
    assert.equal(referenceFile('/interfaces/', root), null, 'a folder without index.html');
    assert.equal(referenceFile('/interfaces/index.Xattn.html?x=1#y', root), path.join(root, 'interfaces', 'index.Xattn.html'));
    assert.equal(referenceFile('/%69ndex.html', root), path.join(root, 'index.html'));
    assert.equal(referenceFile('/no-such.html', root), null);
    for (const url of ['/../outside.html', '/%2e%2e/outside.html', '/..%5coutside.html']) assert.equal(referenceFile(url, root), null, url);
  } finally {
    rmSync(base, { recursive: true, force: true });
  }
});
