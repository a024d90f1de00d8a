#!/usr/bin/env bash
# redis-py (Debian's python3-redis) against tenure: see redis_py.py.
source "$(dirname "$0")/lib.sh"
start_tenure
"$PYTHON" -u "$COMPAT_DIR/redis_py.py" "$TENURE_PORT" || fail "redis-py checks"
