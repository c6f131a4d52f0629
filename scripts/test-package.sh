#!/usr/bin/env bash
# Packs the npm package and checks the tarball from a fresh project: Node ESM and CJS, TypeScript (node10 too)
# and attw, Chromium (plain page and module Worker), a Vite build, an esbuild bundle and files on a second origin
# (wasmPaths).
set -euo pipefail
cd "$(dirname "$0")/.."
node --test --test-reporter=spec tests/package/
