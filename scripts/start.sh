#!/usr/bin/env bash
# npm start: builds whatever is missing, then serves the web demo with Vite on http://127.0.0.1:$PORT/
# (PORT defaults to 8080) until stopped. Vite binds to 127.0.0.1 only and serves only web/, the package's
# js/ and dist/ (see web/vite.config.js).
set -euo pipefail
cd "$(dirname "$0")/.."

PORT="${PORT:-8080}"
if ! [[ "$PORT" =~ ^[0-9]+$ ]] || [ "$PORT" -lt 1 ] || [ "$PORT" -gt 65535 ]; then
  echo "xattn: PORT must be a port number (1-65535), got '$PORT'" >&2
  exit 2
fi

bash scripts/ensure-deps.sh wasm node
# The lab opens with the relaxed SIMD builds, one-thread and threaded (their plain SIMD bases where the browser
# lacks relaxed SIMD): when dist/ lacks a build, those are built first and the lab is served as soon as they exist;
# the rest (the scalar build, the testing builds) builds behind it (its log: build/wasm/rest.log).
for f in dist/xattn-simd.mjs dist/xattn-simd.wasm dist/xattn-scalar.mjs dist/xattn-scalar.wasm \
         dist/xattn-simd-threads.mjs dist/xattn-simd-threads.wasm dist/xattn-simd-threads-worker-source.mjs \
         dist/xattn-relaxed-simd.mjs dist/xattn-relaxed-simd.wasm dist/xattn-relaxed-simd-threads.mjs \
         dist/xattn-relaxed-simd-threads.wasm dist/xattn-relaxed-simd-threads-worker-source.mjs; do
  if [ ! -f "$f" ]; then
    echo "xattn: $f is missing; building the build the lab opens with, then the rest behind it"
    bash scripts/build-wasm.sh relaxed-simd relaxed-simd-threads
    mkdir -p build/wasm
    nohup bash scripts/build-wasm.sh >build/wasm/rest.log 2>&1 &
    break
  fi
done

echo "xattn demo: http://127.0.0.1:${PORT}/  (Ctrl+C stops it)"
export PORT
exec node node_modules/vite/bin/vite.js --config web/vite.config.js --clearScreen false
