#!/usr/bin/env bash
# go-redis v9 with Protocol: 3 against tenure: see goredis/main.go.
source "$(dirname "$0")/lib.sh"
start_tenure
(cd "$ROOT" && go run ./compat/goredis "$TENURE_PORT") || fail "go-redis checks"
