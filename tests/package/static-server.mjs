// A minimal static file server for the packaging and browser tests: loopback only, one root folder,
// correct MIME types (application/wasm for .wasm), nothing outside the root. With `isolated`, every response
// carries the two headers that make a page cross-origin isolated (and so able to run the threaded build). With
// `cors`, they carry `Access-Control-Allow-Origin: *`, as a second origin (a CDN) sends so that other origins'
// pages may fetch its files; that alone serves isolated pages too, since fetch() and module imports are CORS
// requests, which need no Cross-Origin-Resource-Policy. `requests` lists the paths asked for.
import { createServer } from 'node:http';
import { readFile } from 'node:fs/promises';
import { extname, join, normalize, sep } from 'node:path';

const TYPES = {
  '.html': 'text/html', '.js': 'text/javascript', '.mjs': 'text/javascript', '.cjs': 'text/javascript',
  '.json': 'application/json', '.wasm': 'application/wasm', '.css': 'text/css',
};

export async function serve(root, { isolated = false, cors = false } = {}) {
  const headers = {
    ...(isolated && { 'cross-origin-opener-policy': 'same-origin', 'cross-origin-embedder-policy': 'require-corp' }),
    ...(cors && { 'access-control-allow-origin': '*' }),
  };
  const requests = [];
  const server = createServer(async (req, res) => {
    const path = normalize(decodeURIComponent(new URL(req.url, 'http://x').pathname));
    requests.push(path);
    const file = join(root, path === sep ? 'index.html' : path);
    if (!file.startsWith(root + sep)) {
      res.writeHead(403).end();
      return;
    }
    try {
      const body = await readFile(file);
      res.writeHead(200, { 'content-type': TYPES[extname(file)] ?? 'application/octet-stream', ...headers }).end(body);
    } catch {
      res.writeHead(404, headers).end();
    }
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  // close() would wait for every open connection, a browser's speculative one (no request yet) too, which Node
  // ends only by its header timeout, a minute or more later: end them all.
  const close = () => new Promise((resolve) => {
    server.close(resolve);
    server.closeAllConnections();
  });
  return { url: `http://127.0.0.1:${server.address().port}/`, requests, close };
}
