#!/usr/bin/env bash
# npm test: installs what is missing, builds, and runs every suite; fails when any fails.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/ensure-deps.sh native wasm browser node
bash scripts/test-native.sh
bash scripts/build-wasm.sh
node --test --test-reporter=spec tests/js/
bash scripts/test-package.sh
bash scripts/test-web.sh
