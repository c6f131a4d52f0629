// Vite serves (and can build) the demo from web/. The page imports the package by its name, 'xattn', as a
// user would; the alias points that name at the package's browser entry in this repository.
import { defineConfig } from 'vite';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

const web = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(web, '..');
const port = Number(process.env.PORT) || 8080;

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
  return {
    name: 'xattn-bench-results',
    // Block bodies: a function returned from these hooks would be run by Vite as a post-middleware hook.
    configureServer(server) {
      server.middlewares.use('/bench/results.json', serve);
    },
    configurePreviewServer(server) {
      server.middlewares.use('/bench/results.json', serve);
    },
  };
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
  plugins: [benchResults()],
  worker: { format: 'es' },
  server: {
    host: '127.0.0.1',
    port,
    strictPort: true, // the printed URL must be the one served: fail rather than move to another port
    fs: {
      strict: true,
      // The demo, the package's JS and its built .wasm. Nothing else: Vite serves its own client and the
      // pre-bundled uPlot from its cache without needing them listed.
      allow: [web, path.join(repo, 'js'), path.join(repo, 'dist')],
    },
  },
  preview: { host: '127.0.0.1', port, strictPort: true },
  build: {
    outDir: path.join(repo, 'build', 'web'),
    emptyOutDir: true,
    target: 'es2022',
  },
});
