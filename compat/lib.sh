# Sourced by the compat scripts: start a tenure of our own and stop it.
#
# start_tenure [flags...] builds nothing: it runs $TENURE_BIN (default
# bin/tenure, which `make compat` builds) on 127.0.0.1:0 with a fresh temp
# dir, waits for "ready to accept connections", and reads the port it got
# from that line, so no port is guessed and none can clash. It sets
# TENURE_PORT, TENURE_DIR and TENURE_LOG, and stops the server on exit.

set -euo pipefail

COMPAT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$COMPAT_DIR/.." && pwd)"
TENURE_BIN="${TENURE_BIN:-$ROOT/bin/tenure}"
# Debian's python3, which python3-redis installs into (not a pyenv shim).
PYTHON="${PYTHON:-/usr/bin/python3}"

fail() {
	echo "FAIL: $*" >&2
	if [[ -n "${TENURE_LOG:-}" && -f "$TENURE_LOG" ]]; then
		echo "--- tenure's log (last 20 lines) ---" >&2
		tail -n 20 "$TENURE_LOG" >&2
	fi
	exit 1
}

ok() { echo "ok   $*"; }

stop_tenure() {
	if [[ -n "${TENURE_PID:-}" ]] && kill -0 "$TENURE_PID" 2>/dev/null; then
		kill -TERM "$TENURE_PID" 2>/dev/null || true
		for _ in $(seq 100); do
			kill -0 "$TENURE_PID" 2>/dev/null || break
			sleep 0.05
		done
		kill -KILL "$TENURE_PID" 2>/dev/null || true
		wait "$TENURE_PID" 2>/dev/null || true
	fi
	TENURE_PID=
	[[ -n "${TENURE_DIR:-}" ]] && rm -rf "$TENURE_DIR"
	TENURE_DIR=
}

start_tenure() {
	[[ -x "$TENURE_BIN" ]] || fail "no server binary at $TENURE_BIN (run make build)"
	TENURE_DIR="$(mktemp -d "${TMPDIR:-/tmp}/tenure-compat.XXXXXX")"
	TENURE_LOG="$TENURE_DIR/tenure.log"
	trap stop_tenure EXIT
	"$TENURE_BIN" --addr 127.0.0.1:0 --dir "$TENURE_DIR/data" "$@" 2>"$TENURE_LOG" &
	TENURE_PID=$!
	for _ in $(seq 200); do
		if TENURE_PORT="$(sed -n 's/.*msg="ready to accept connections".* addr=127\.0\.0\.1:\([0-9]*\).*/\1/p' "$TENURE_LOG" | head -n1)" &&
			[[ -n "$TENURE_PORT" ]]; then
			return 0
		fi
		kill -0 "$TENURE_PID" 2>/dev/null || fail "tenure exited before it listened"
		sleep 0.05
	done
	fail "tenure did not listen within 10s"
}

# expect WHAT WANT GOT: fail unless GOT equals WANT.
expect() {
	[[ "$3" == "$2" ]] || fail "$1: got $(printf %q "$3"), want $(printf %q "$2")"
	ok "$1"
}

# expect_match WHAT REGEX GOT: fail unless GOT matches the extended REGEX.
expect_match() {
	[[ "$3" =~ $2 ]] || fail "$1: got $(printf %q "$3"), want a match of /$2/"
	ok "$1"
}
