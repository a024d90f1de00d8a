#!/usr/bin/env bash
# Node's clients against tenure, each at its default options: node-redis 6
# (node/lock.mjs, RESP3) and ioredis 5 (node/ioredis.mjs, RESP2). `make
# compat` installs them into compat/node/node_modules (npm ci).
source "$(dirname "$0")/lib.sh"
[[ -d "$COMPAT_DIR/node/node_modules/redis" ]] || fail "node's redis package is not installed (cd compat/node && npm ci)"
[[ -d "$COMPAT_DIR/node/node_modules/ioredis" ]] || fail "ioredis is not installed (cd compat/node && npm ci)"
start_tenure
node "$COMPAT_DIR/node/lock.mjs" "$TENURE_PORT" || fail "node-redis checks"
node "$COMPAT_DIR/node/ioredis.mjs" "$TENURE_PORT" || fail "ioredis checks"
