#!/usr/bin/env bash
# A Redis's keys into tenure with the Redis's own MIGRATE, and back with
# tenure's DUMP into the Redis's RESTORE (Debian's redis-server; see
# migrate.py).
source "$(dirname "$0")/lib.sh"
start_tenure
redis_dir="$(mktemp -d "${TMPDIR:-/tmp}/redis-compat.XXXXXX")"
redis_port="$("$PYTHON" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
redis-server --port "$redis_port" --bind 127.0.0.1 --dir "$redis_dir" --save '' --appendonly no \
	--daemonize no --loglevel warning >"$redis_dir/log" 2>&1 &
redis_pid=$!
trap 'kill "$redis_pid" 2>/dev/null; wait "$redis_pid" 2>/dev/null; rm -rf "$redis_dir"; stop_tenure' EXIT
for _ in $(seq 100); do
	redis-cli -p "$redis_port" PING >/dev/null 2>&1 && break
	sleep 0.05
done
echo "redis-server $(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/') on port $redis_port, tenure on $TENURE_PORT"
"$PYTHON" -u "$COMPAT_DIR/migrate.py" "$redis_port" "$TENURE_PORT" || fail "MIGRATE and RESTORE checks"
