// The demo server's rules, one test each, against the server scripts/test-web.sh started: Vite's dev server
// (what `npm start` runs) or, with XATTN_DEMO_LABEL=build, `vite preview` of the production build. Both are
// configured by web/vite.config.js.
//
// Requests are raw HTTP (node:http with the exact path string): fetch and browsers resolve '..' and some
// escapes before sending, so through them a traversal would never reach the server.
//
// A refusal is 403 or 404, and its body must not contain any of the file it aimed at (a server that
// answered 404 while streaming the file would still leak it).
import test from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const web = path.join(repo, 'web');
const base = new URL(process.env.XATTN_DEMO_URL ?? 'http://127.0.0.1:1/');
const preview = process.env.XATTN_DEMO_LABEL === 'build';
if (!process.env.XATTN_DEMO_URL) throw new Error('XATTN_DEMO_URL is not set: run the server tests through scripts/test-web.sh');

// Files outside web/, js/ and dist/ that a traversal would be after, each with a line of its own text to
// look for in an answer. /etc/passwd is outside the repository altogether.
const SECRETS = [
  { file: path.join(repo, 'package.json'), from: repo },
  { file: path.join(repo, 'CMakeLists.txt'), from: repo },
  { file: '/etc/passwd', from: '/' },
]
  .filter((s) => existsSync(s.file))
  .map((s) => ({ ...s, rel: path.relative(s.from, s.file), marker: firstLine(s.file) }));

function firstLine(file) {
  const line = readFileSync(file, 'utf8').split('\n').find((l) => l.trim().length >= 8);
  assert.ok(line, `${file} has no line to recognise it by`);
  return line.trim();
}

// GET with the path exactly as written.
function get(rawPath) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: base.hostname, port: base.port, path: rawPath, method: 'GET' }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks).toString('latin1') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

async function assertRefused(rawPath, secret) {
  const res = await get(rawPath);
  assert.ok(res.status === 403 || res.status === 404, `${rawPath} answered ${res.status}`);
  for (const s of secret ? [secret] : SECRETS) {
    assert.ok(!res.body.includes(s.marker), `${rawPath} answered with the text of ${s.file}`);
  }
}

// Ways of writing '../', each with the segment separator it ends in. The traversals below climb from the
// served root and from a folder under it, by enough levels to pass the repository root.
const CLIMBS = {
  literal: ['../'],
  encoded: ['%2e%2e/', '%2e%2e%2f', '..%2f', '%2E%2E%2F', '.%2e/', '%2e./'],
  doubleEncoded: ['%252e%252e%252f', '%252e%252e/', '..%252f', '%25252e%25252e%25252f'],
  backslash: ['..\\', '..%5c', '%2e%2e%5c', '..%255c'],
};

function traversals(climb, secret) {
  const depth = secret.from === repo ? 1 : path.relative('/', web).split(path.sep).length;
  const up = (n) => climb.repeat(n);
  return [`/${up(depth)}${secret.rel}`, `/src/${up(depth + 1)}${secret.rel}`, `/src/${up(depth + 8)}${secret.rel}`];
}

for (const [kind, climbs] of Object.entries(CLIMBS)) {
  test(`path traversal written ${kind} (${climbs.join(' ')}) is refused`, async () => {
    assert.ok(SECRETS.length >= 2, 'nothing to aim a traversal at');
    for (const climb of climbs) {
      for (const secret of SECRETS) {
        for (const raw of traversals(climb, secret)) await assertRefused(raw, secret);
      }
    }
    // A bare climb to the repository root: Vite on its own answered '/..' with the package's entry module.
    for (const climb of climbs) {
      await assertRefused(`/${climb}`);
      await assertRefused(`/${climb.replace(/(%2f|%5c|%252f|%255c|%25252f|\/|\\)$/i, '')}`);
    }
  });
}

test('/@fs/ paths outside the allowed folders are refused, including climbs out of an allowed one', async () => {
  const outside = [
    '/@fs/etc/passwd',
    '/@fs/etc/passwd?raw',
    '/@fs/etc/passwd?import',
    '/@fs//etc/passwd',
    `/@fs${repo}/package.json`,
    `/@fs${repo}/package.json?raw`,
    `/@fs${repo}/CMakeLists.txt`,
    `/@fs${repo}/node_modules/vite/package.json`,
    `/@fs${repo}/js/../package.json`,
    `/@fs${repo}/js/%2e%2e/package.json`,
    `/@fs${repo}/dist/..%2fpackage.json`,
    `/@fs${repo}/web/..%5cpackage.json`,
    `/@fs${repo}/js/browser.js/../../package.json`,
  ];
  if (existsSync(path.join(repo, '.git', 'config'))) outside.push(`/@fs${repo}/.git/config`);
  for (const raw of outside) await assertRefused(raw);
});

test('nothing outside web/ is served under its own path', async () => {
  // Every file at the top of the repository that web/ has no file of the same name for (README.md is in
  // both, and /README.md is web's), some inside js/, dist/ and node_modules/, and bench/ apart from the one
  // file the server exposes on purpose.
  const inWeb = new Set(readdirSync(web));
  const paths = readdirSync(repo)
    .filter((name) => !inWeb.has(name) && statSync(path.join(repo, name)).isFile())
    .map((name) => `/${name}`);
  paths.push('/js/api.js', '/js/browser.js', '/dist/xattn-simd.wasm', '/node_modules/vite/package.json', '/.git/config');
  const bench = path.join(repo, 'bench');
  if (existsSync(bench)) {
    for (const name of readdirSync(bench)) if (name !== 'results.json') paths.push(`/bench/${name}`);
  }
  assert.ok(paths.includes('/package.json'), `the list lost the obvious case: ${paths}`);
  for (const raw of paths) await assertRefused(raw);
});

test('the server answers only for the page: no package by name through /@id/, no server config', async () => {
  // '/@id/<package>' would serve any installed package and set Vite bundling it; the page imports its
  // packages through /@fs/ URLs instead. The config is in web/ but is not part of the page.
  for (const raw of ['/@id/uplot', '/@id/vite', '/@id/playwright-core', '/@i%64/uplot', '//@id/uplot', '/vite.config.js', '/%76ite.config.js', '/./vite.config.js']) {
    await assertRefused(raw);
  }
});

test("the demo's own files are served, the .wasm as application/wasm", async () => {
  // The refusals above mean something only if the same server answers for what it should.
  const page = await get('/');
  assert.equal(page.status, 200);
  assert.match(page.body, /<title>[^<]*attention/i);
  let wasmPath;
  if (preview) {
    const assets = readdirSync(path.join(repo, 'build', 'web', 'assets'));
    const wasm = assets.find((f) => /^xattn-simd-.*\.wasm$/.test(f));
    assert.ok(wasm, `no SIMD .wasm among the built assets: ${assets}`);
    wasmPath = `/assets/${wasm}`;
  } else {
    wasmPath = `/@fs${path.join(repo, 'dist', 'xattn-simd.wasm')}`;
    const js = await get(`/@fs${path.join(repo, 'js', 'browser.js')}`);
    assert.equal(js.status, 200, 'the package entry under js/ is allowed');
  }
  const wasm = await get(wasmPath);
  assert.equal(wasm.status, 200, wasmPath);
  assert.equal(wasm.headers['content-type'], 'application/wasm');
  assert.equal(wasm.body.slice(0, 4), '\0asm');
  const unknown = await get('/no-such-page.html');
  assert.equal(unknown.status, 404);
});

test('every answer carries COOP and COEP (the page is cross-origin isolated)', async () => {
  // The page, a module, the Workers' scripts, each .wasm, the threaded build's glue and worker-script module,
  // the benchmark file, a 404 and a refusal: whichever middleware answers.
  const paths = ['/', '/bench/results.json', '/no-such-page.html', '/../package.json', `/@fs${repo}/package.json`];
  if (preview) {
    const assets = readdirSync(path.join(repo, 'build', 'web', 'assets'));
    // The lab's compute worker, the training worker, and the package's own (createXattnWorker: the decoding panel
    // and the multi-head walk); Vite names each <name>-<8-character hash>.js.
    const workers = assets.filter((f) => /^(worker|train-worker|worker-thread)-[\w-]{8}\.js$/.test(f));
    assert.equal(workers.length, 3, `the three Worker scripts among the built assets: ${assets}`);
    paths.push(...assets.filter((f) => /\.(js|mjs|wasm)$/.test(f)).map((f) => `/assets/${f}`));
  } else {
    paths.push('/src/main.js', '/src/worker.js?worker_file&type=module', '/src/train/train-worker.js?worker_file&type=module',
      `/@fs${repo}/js/worker-thread.js?worker_file&type=module`, `/@fs${repo}/js/browser.js`);
    for (const f of ['xattn-simd.wasm', 'xattn-scalar.wasm', 'xattn-simd-threads.wasm', 'xattn-simd-threads.mjs', 'xattn-simd-threads-worker-source.mjs']) {
      paths.push(`/@fs${path.join(repo, 'dist', f)}`);
    }
  }
  for (const raw of paths) {
    const res = await get(raw);
    assert.equal(res.headers['cross-origin-opener-policy'], 'same-origin', `COOP on ${raw} (${res.status})`);
    assert.equal(res.headers['cross-origin-embedder-policy'], 'require-corp', `COEP on ${raw} (${res.status})`);
  }
});

// Whether a TCP connection to host:port is accepted: 'connected', or the error code.
function connect(host, port) {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port });
    socket.once('connect', () => {
      socket.destroy();
      resolve('connected');
    });
    socket.once('error', (err) => resolve(err.code));
  });
}

// The local addresses of the sockets listening on `port`, read from the kernel's socket tables: no
// packet is sent to any non-loopback address (this workplace allows traffic to loopback only).
function listeningAddresses(port) {
  const found = [];
  for (const [file, v6] of [['/proc/net/tcp', false], ['/proc/net/tcp6', true]]) {
    if (!existsSync(file)) continue;
    for (const line of readFileSync(file, 'utf8').split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      if (fields.length < 4 || fields[3] !== '0A') continue;  // 0A = LISTEN
      const [addrHex, portHex] = fields[1].split(':');
      if (parseInt(portHex, 16) !== port) continue;
      found.push(v6 ? ipv6(addrHex) : ipv4(addrHex));
    }
  }
  return found;
}
// /proc/net/tcp writes an IPv4 address as one little-endian 32-bit hex word.
const ipv4 = (hex) => [3, 2, 1, 0].map((i) => parseInt(hex.slice(2 * i, 2 * i + 2), 16)).join('.');
// and an IPv6 address as four such words.
function ipv6(hex) {
  const bytes = [];
  for (let w = 0; w < 4; w++) for (const i of [3, 2, 1, 0]) bytes.push(parseInt(hex.slice(8 * w + 2 * i, 8 * w + 2 * i + 2), 16));
  const groups = [];
  for (let g = 0; g < 8; g++) groups.push(((bytes[2 * g] << 8) | bytes[2 * g + 1]).toString(16));
  return groups.join(':');
}

test('the server listens on loopback only: every listening socket on its port is bound to 127.0.0.1 or ::1', async (t) => {
  assert.equal(base.hostname, '127.0.0.1');
  // It is listening on loopback: a connection there is accepted.
  assert.equal(await connect('127.0.0.1', Number(base.port)), 'connected');
  if (!existsSync('/proc/net/tcp')) {
    t.skip('no /proc/net/tcp on this system to read the bound addresses from');
    return;
  }
  const bound = listeningAddresses(Number(base.port));
  assert.ok(bound.length > 0, 'the listening socket appears in the socket table');
  for (const address of bound) {
    assert.ok(['127.0.0.1', '0:0:0:0:0:0:0:1', '0:0:0:0:0:ffff:7f00:1'].includes(address),
      `a socket on port ${base.port} is bound to ${address}, not loopback (0.0.0.0 or :: would mean every interface)`);
  }
});
