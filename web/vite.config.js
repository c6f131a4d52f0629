// Vite serves (and can build) the demo from web/. The page imports the package by its name, 'xattn', as a
// user would; the alias points that name at the package's browser entry in this repository.
import { defineConfig } from 'vite';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

const web = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(web, '..');
const port = Number(process.env.PORT) || 8080;

// Cross-origin isolation: with these two headers on the page, crossOriginIsolated is true, SharedArrayBuffer
// exists, and the package runs its threaded build (createXattn's default there: all threads, at most 4).
// require-corp blocks cross-origin subresources that do not opt in; the page loads none (every script,
// worker, .wasm and fetch is its own origin's).
export const ISOLATION_HEADERS = {
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Embedder-Policy': 'require-corp',
};

// A plugin that puts one middleware (at `route`, or on every request) on both the dev server and `vite preview`.
// The hooks have block bodies and call use() themselves: a function returned from them would be run by Vite as a
// post-middleware hook, after its own middlewares, too late for a check or a header that must come first.
function onBothServers(name, middleware, route = null) {
  const install = (server) => (route ? server.middlewares.use(route, middleware) : server.middlewares.use(middleware));
  return {
    name,
    configureServer(server) {
      install(server);
    },
    configurePreviewServer(server) {
      install(server);
    },
  };
}

// Vite applies server.headers / preview.headers (below) only to the responses its own file middlewares send.
// This sets them first thing on every response, so the rest (the benchmark file, refusals, 404s) carry them
// too, whichever middleware answers: a Worker whose script came without COEP would be refused by an
// isolated page.
function crossOriginIsolation() {
  const isolate = (req, res, next) => {
    for (const [name, value] of Object.entries(ISOLATION_HEADERS)) res.setHeader(name, value);
    next();
  };
  return onBothServers('xattn-cross-origin-isolation', isolate);
}

// The speed panel shows the repository's benchmark results when bench/results.json exists. That one file
// is exposed at /bench/results.json; the rest of bench/ stays unreachable.
function benchResults() {
  const file = path.join(repo, 'bench', 'results.json');
  const serve = (req, res) => {
    if (!existsSync(file)) {
      // 204 rather than 404: a missing file is an expected state, not an error in the browser console.
      res.statusCode = 204;
      res.end();
      return;
    }
    res.setHeader('Content-Type', 'application/json');
    res.setHeader('Cache-Control', 'no-store');
    res.end(readFileSync(file));
  };
  return onBothServers('xattn-bench-results', serve, '/bench/results.json');
}

// The API reference (npm run docs writes it to build/docs/) at /docs/: the file a request under /docs names, or
// null when it names none (the request path is what follows /docs; '..' never reaches here, refuseOutside
// stops it first).
const REFERENCE = path.join(repo, 'build', 'docs');
const REFERENCE_TYPES = {
  '.html': 'text/html; charset=utf-8', '.js': 'text/javascript', '.css': 'text/css', '.svg': 'image/svg+xml',
  '.json': 'application/json', '.png': 'image/png', '.woff2': 'font/woff2',
};
export function referenceFile(url, root = REFERENCE) {
  const segments = requestSegments(url);
  if (segments.includes('..')) return null;
  const file = path.join(root, ...segments);
  const target = existsSync(file) && statSync(file).isDirectory() ? path.join(file, 'index.html') : file;
  return existsSync(target) && statSync(target).isFile() ? target : null;
}

function apiReference() {
  const serve = (req, res) => {
    // '/docs' alone: the pages link relative to the folder, so send the browser to '/docs/'.
    if (req.originalUrl?.split(/[?#]/, 1)[0] === '/docs') {
      res.statusCode = 301;
      res.setHeader('Location', '/docs/');
      res.end();
      return;
    }
    const file = referenceFile(req.url ?? '/');
    if (!file) {
      res.statusCode = 404;
      res.setHeader('Content-Type', 'text/plain; charset=utf-8');
      res.end(existsSync(REFERENCE) ? '404 Not Found\n' : '404: the API reference is not built; npm run docs builds it\n');
      return;
    }
    res.setHeader('Content-Type', REFERENCE_TYPES[path.extname(file)] ?? 'application/octet-stream');
    res.end(readFileSync(file));
  };
  return onBothServers('xattn-api-reference', serve, '/docs');
}

// A request's path as the server will read it: the query string dropped (Vite serves by the path alone),
// percent-escapes undone however many times they were applied (%2e%2e, %252e%252e…), a backslash read as
// a separator as Windows does, and empty and '.' segments dropped. Only ASCII escapes are decoded: a
// non-ASCII byte can never spell '.', '/' or a backslash, and a malformed escape cannot throw.
export function requestSegments(url) {
  let p = url.split(/[?#]/, 1)[0];
  for (let k = 0; k < 8; k++) {
    const next = p.replace(/%([0-7][0-9a-f])/gi, (_, hex) => String.fromCharCode(parseInt(hex, 16)));
    if (next === p) break;
    p = next;
  }
  return p.split(/[/\\]/).filter((seg) => seg !== '' && seg !== '.');
}

// Whether a request climbs out of a folder. Vite refuses most of these on its own, but not all (the bare
// path '/..' resolved to the repository's package entry), so every such request stops before Vite sees it.
export function climbsOut(url) {
  return requestSegments(url).includes('..');
}

// Paths that stay inside web/ yet are not the page's, and whose transform has side effects: '/@id/<name>'
// resolves any installed package (the page never asks for one this way; its imports are rewritten to
// /@fs/ URLs) and sets Vite's dependency optimizer bundling it, and the config imports 'vite' itself.
// Virtual modules ('/@id/__x00__…') are not files and stay allowed.
export function notThePage(url) {
  const [first, second] = requestSegments(url);
  return (first === '@id' && !second?.startsWith('__x00__')) || (first === 'vite.config.js' && second === undefined);
}

function refuseOutside() {
  const refuse = (req, res, next) => {
    const url = req.url ?? '';
    const why = climbsOut(url) ? "'..' in a path" : notThePage(url) ? 'not a file of the demo' : null;
    if (!why) return next();
    res.statusCode = 403;
    res.setHeader('Content-Type', 'text/plain; charset=utf-8');
    res.end(`403 Forbidden: ${why}\n`);
  };
  // Installed by the hooks themselves, so the check runs before every one of Vite's own middlewares.
  return onBothServers('xattn-refuse-outside', refuse);
}

export default defineConfig({
  root: web,
  // Unknown paths are 404s, not the index page: the server only answers for the demo's own files.
  appType: 'mpa',
  // Vite's dependency cache lives in build/ with the other generated files.
  cacheDir: path.join(repo, 'build', 'vite-cache'),
  resolve: {
    alias: { xattn: path.join(repo, 'js', 'browser.js') },
  },
  plugins: [crossOriginIsolation(), refuseOutside(), benchResults(), apiReference()],
  worker: { format: 'es' },
  server: {
    host: '127.0.0.1',
    port,
    strictPort: true, // the printed URL must be the one served: fail rather than move to another port
    headers: ISOLATION_HEADERS,
    fs: {
      strict: true,
      // The demo, the package's JS and its built .wasm. Nothing else: Vite serves its own client and the
      // pre-bundled uPlot from its cache without needing them listed.
      allow: [web, path.join(repo, 'js'), path.join(repo, 'dist')],
    },
  },
  preview: { host: '127.0.0.1', port, strictPort: true, headers: ISOLATION_HEADERS },
  build: {
    outDir: path.join(repo, 'build', 'web'),
    emptyOutDir: true,
    target: 'es2022',
  },
});
