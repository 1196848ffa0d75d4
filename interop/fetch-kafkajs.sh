#!/usr/bin/env bash
# Install kafkajs (interop/kafkajs/package-lock.json, from the npm registry) into the cache
# that tests/integration/test_kafkajs.py reads: $KT_KAFKAJS_HOME, by default
# ~/.cache/kt/kafkajs. Nothing lands in the repository. Needs Node.js and npm.
set -euo pipefail
here="$(cd "$(dirname "$0")/kafkajs" && pwd)"
dest="${KT_KAFKAJS_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/kt/kafkajs}"
mkdir -p "$dest"
cp "$here/package.json" "$here/package-lock.json" "$dest/"
(cd "$dest" && npm ci --no-audit --no-fund --silent)
echo "kafkajs $(node -p "require('$dest/node_modules/kafkajs/package.json').version"): $dest"
