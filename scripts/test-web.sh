#!/usr/bin/env bash
# The web demo's tests, in two parts:
#   scripts/test-web.sh quick   (npm test) the page's own logic (tests/web, node:test); in headless Debian
#                               Chromium (playwright-core) the demo's core checks (tests/browser/demo.test.js)
#                               and the server's rules against Vite's dev server, which `npm start` runs
#   scripts/test-web.sh long    (npm run test:long) the learner's walks through every panel (tests/browser: the
#                               lab's passes, training, decoding, the multi-head walk, heads and averaging,
#                               Build a GPT, isolation) against the dev server; then the production build (`vite build`,
#                               served by `vite preview`): the page loads and computes, the server's rules, the
#                               Workers that must bundle (training, Build a GPT, the package's own Worker) and cross-origin
#                               isolation
#   scripts/test-web.sh         both
# Servers are stopped on exit; screenshots go to build/artifacts/. Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
part="${1:-all}"
case "$part" in quick|long|all) ;; *) echo "usage: scripts/test-web.sh [quick|long]" >&2; exit 2 ;; esac
quick() { [ "$part" != long ]; }
long() { [ "$part" != quick ]; }

bash scripts/ensure-deps.sh browser node
for f in dist/xattn-simd.mjs dist/xattn-simd.wasm dist/xattn-scalar.mjs dist/xattn-scalar.wasm \
         dist/xattn-simd-threads.mjs dist/xattn-simd-threads.wasm dist/xattn-simd-threads-worker-source.mjs \
         dist/xattn-relaxed-simd.mjs dist/xattn-relaxed-simd.wasm dist/xattn-relaxed-simd-threads.mjs \
         dist/xattn-relaxed-simd-threads.wasm dist/xattn-relaxed-simd-threads-worker-source.mjs; do
  [ -f "$f" ] || { npm run build:wasm; break; }
done

if quick; then
  echo "== web demo: unit tests (tests/web)"
  timeout 300 node --no-liftoff --test --test-timeout=120000 tests/web/  # --no-liftoff: see scripts/test-js.sh
fi

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

# The browser files the quick part runs; the long part runs the others.
quick_files="tests/browser/demo.test.js tests/browser/server.test.js"
long_files=""
for f in tests/browser/*.test.js; do
  case " $quick_files " in *" $f "*) ;; *) long_files="$long_files $f" ;; esac
done
dev_files=""
quick && dev_files="$quick_files"
long && dev_files="$dev_files $long_files"

serve build/artifacts/vite-dev.log
echo "== web demo: browser tests against the dev server at $url ($(echo $dev_files))"
# --experimental-wasm-relaxed-simd: the tests compare the page's results, from the relaxed-SIMD builds Chromium
# picks, with the package's in Node bit for bit, so Node must run the same relaxed build.
# shellcheck disable=SC2086
XATTN_DEMO_URL="$url" timeout 900 node --experimental-wasm-relaxed-simd --test --test-timeout=300000 --test-concurrency=1 $dev_files
stop_server

if long; then
  echo "== web demo: production build (vite build → build/web) served by vite preview"
  timeout 300 node "$vite" build --config web/vite.config.js --logLevel warn
  serve build/artifacts/vite-preview.log preview
  built() {  # built <file> [name pattern]: a browser test file against the built page
    XATTN_DEMO_URL="$url" XATTN_DEMO_LABEL=build timeout 300 node $node_flags --test --test-timeout=120000 \
      ${2:+--test-name-pattern="$2"} "$1"
  }
  node_flags=""
  built tests/browser/demo.test.js "loads with no console errors|causal mask"
  echo "== web demo: server rules (tests/browser/server.test.js) against vite preview at $url"
  built tests/browser/server.test.js
  # The training panel's own Worker must bundle too: the accuracy test against the built page.
  built tests/browser/training.test.js "reaches 95% held-out"
  # The "Build a GPT" chapter's Worker (the model, its training and its KV-cache generation) must bundle too: the
  # chapter's walk against the built page.
  built tests/browser/gpt.test.js
  # And the package's own Worker (createXattnWorker), as the decoding panel and the multi-head walk use it: the
  # triangle against full causal attention, and the walk against torch's fixture, on the built page.
  built tests/browser/decoding.test.js "each step fills one row"
  built tests/browser/multihead.test.js "the walk shows"
  # Cross-origin isolation and threads on the built page: the headers on every response, the thread counts, the
  # speed panel's 1 thread against all, the same bits as 1 thread, and the page without the headers.
  echo "== web demo: cross-origin isolation and threads (tests/browser/isolation.test.js) against vite preview at $url"
  node_flags=--experimental-wasm-relaxed-simd built tests/browser/isolation.test.js
fi
