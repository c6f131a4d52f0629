#!/usr/bin/env bash
# Packs the npm package and checks the tarball from a fresh project: Node ESM and CJS, TypeScript,
# Chromium (plain page and module Worker) and a Vite build.
set -euo pipefail
cd "$(dirname "$0")/.."
node --test --test-reporter=spec tests/package/
