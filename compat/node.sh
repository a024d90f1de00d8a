#!/usr/bin/env bash
# Node's redis package against tenure: see node/lock.mjs. `make compat`
# installs the package into compat/node/node_modules (npm ci).
source "$(dirname "$0")/lib.sh"
[[ -d "$COMPAT_DIR/node/node_modules/redis" ]] || fail "node's redis package is not installed (cd compat/node && npm ci)"
start_tenure
node "$COMPAT_DIR/node/lock.mjs" "$TENURE_PORT" || fail "node-redis checks"
