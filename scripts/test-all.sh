#!/usr/bin/env bash
# npm run test:all: npm test, then the long suites (npm run test:long).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/test.sh
bash scripts/test-long.sh
