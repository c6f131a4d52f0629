#!/usr/bin/env bash
# The web demo's tests: unit tests of the page's own logic (node:test), then end-to-end tests in headless
# Debian Chromium (playwright-core) against the demo served by Vite's dev server (what `npm start` runs) on
# a free port of 127.0.0.1 (tests/browser/server.test.js among them: the server's rules), then a smoke test
# of the production build (`vite build`, served by `vite preview`), which proves the package, the training
# Worker and the package's own Worker (the decoding panel, the multi-head walk) bundle, and the server's rules
# and cross-origin isolation (the page runs the threaded build) again against `vite preview`. Servers are
# stopped on exit; screenshots go to build/artifacts/. Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/ensure-deps.sh browser node
for f in dist/xattn-simd.mjs dist/xattn-simd.wasm dist/xattn-scalar.mjs dist/xattn-scalar.wasm \
         dist/xattn-simd-threads.mjs dist/xattn-simd-threads.wasm dist/xattn-simd-threads-worker-source.mjs \
         dist/xattn-relaxed-simd.mjs dist/xattn-relaxed-simd.wasm dist/xattn-relaxed-simd-threads.mjs \
         dist/xattn-relaxed-simd-threads.wasm dist/xattn-relaxed-simd-threads-worker-source.mjs; do
  [ -f "$f" ] || { npm run build:wasm; break; }
done

echo "== web demo: unit tests (tests/web)"
timeout 300 node --no-liftoff --test --test-timeout=120000 tests/web/  # --no-liftoff: see scripts/test-all.sh

mkdir -p build/artifacts
vite="node_modules/vite/bin/vite.js"
server=""
stop_server() {
  if [ -n "$server" ]; then
    kill "$server" 2>/dev/null || true
    wait "$server" 2>/dev/null || true
    server=""
  fi
}
trap stop_server EXIT

free_port() {
  node -e "const s = require('net').createServer().listen(0, '127.0.0.1', () => { console.log(s.address().port); s.close(); })"
}
answers() {
  node -e "fetch(process.argv[1]).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))" "$1"
}

# serve <log> <vite args…>: starts Vite on a free port and sets $url once it answers (within 60 s).
# A port picked as free can be taken before Vite binds it (strictPort makes Vite exit then): try a few.
serve() {
  local log="$1"
  shift
  url=""
  for _attempt in 1 2 3; do
    local port
    port="$(free_port)"
    PORT="$port" node "$vite" "$@" --config web/vite.config.js --clearScreen false >"$log" 2>&1 &
    server=$!
    for _ in $(seq 1 120); do
      kill -0 "$server" 2>/dev/null || break
      if answers "http://127.0.0.1:$port/"; then
        url="http://127.0.0.1:$port/"
        return 0
      fi
      sleep 0.5
    done
    stop_server
  done
  echo "test-web: the demo server did not start; its log:" >&2
  cat "$log" >&2
  return 1
}

serve build/artifacts/vite-dev.log
echo "== web demo: browser tests (tests/browser) against the dev server at $url"
# --experimental-wasm-relaxed-simd: the tests compare the page's results, from the relaxed-SIMD builds Chromium
# picks, with the package's in Node bit for bit, so Node must run the same relaxed build.
XATTN_DEMO_URL="$url" timeout 900 node --experimental-wasm-relaxed-simd --test --test-timeout=300000 --test-concurrency=1 tests/browser/
stop_server

echo "== web demo: production build (vite build → build/web) served by vite preview"
timeout 300 node "$vite" build --config web/vite.config.js --logLevel warn
serve build/artifacts/vite-preview.log preview
XATTN_DEMO_URL="$url" XATTN_DEMO_LABEL=build timeout 300 node --test --test-timeout=120000 \
  --test-name-pattern="loads with no console errors|causal mask" tests/browser/demo.test.js
# The training panel's own Worker must bundle too: the accuracy test against the built page.
XATTN_DEMO_URL="$url" XATTN_DEMO_LABEL=build timeout 300 node --test --test-timeout=120000 \
  --test-name-pattern="reaches 95% held-out" tests/browser/training.test.js
# And the package's own Worker (createXattnWorker), as the decoding panel and the multi-head walk use it: the
# triangle against full causal attention, and the walk against torch's fixture, on the built page.
XATTN_DEMO_URL="$url" XATTN_DEMO_LABEL=build timeout 300 node --test --test-timeout=120000 \
  --test-name-pattern="each step fills one row" tests/browser/decoding.test.js
XATTN_DEMO_URL="$url" XATTN_DEMO_LABEL=build timeout 300 node --test --test-timeout=120000 \
  --test-name-pattern="the walk shows" tests/browser/multihead.test.js
echo "== web demo: server rules (tests/browser/server.test.js) against vite preview at $url"
XATTN_DEMO_URL="$url" XATTN_DEMO_LABEL=build timeout 300 node --test --test-timeout=120000 tests/browser/server.test.js
# Cross-origin isolation and threads on the built page: the headers on every response, the thread counts, the
# speed panel's 1 thread against all, the same bits as 1 thread, and the page without the headers.
echo "== web demo: cross-origin isolation and threads (tests/browser/isolation.test.js) against vite preview at $url"
XATTN_DEMO_URL="$url" XATTN_DEMO_LABEL=build timeout 300 node --experimental-wasm-relaxed-simd --test --test-timeout=120000 tests/browser/isolation.test.js
