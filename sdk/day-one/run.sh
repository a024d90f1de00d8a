#!/usr/bin/env bash
# make sdks: what a user does on day one, for the Python, TypeScript and Go
# SDKs. Each SDK's installable artifact is built from a clean copy of the
# checkout (the files git tracks or would track, none it ignores: no .venv,
# dist or node_modules left from earlier runs), installed into a throwaway
# project of its ecosystem, and the seed's example (SPEC §8, the files beside
# this script) runs there against a real server on a free loopback port:
#
#   python  python -m build gives the wheel; a fresh venv pip-installs it,
#           and with it the newest redis-py; example.py runs there. (make
#           test-python checks it with mypy --strict against the wheel.)
#   ts      npm pack gives the tarball; a fresh npm project installs it with
#           the newest node-redis and TypeScript; tsc --strict compiles
#           example.ts; node runs it.
#   go      a fresh Go module requires github.com/tenure-db/tenure, replaced
#           by this repository; go vet, go build, and main.go runs.
#
# Usage: sdk/day-one/run.sh [python] [ts] [go]   (all three by default)
# It needs bin/tenure (make build), and the network to the registries.
set -euo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
here=$repo/sdk/day-one
GO=${GO:-go}
PYTHON=${PYTHON:-/usr/bin/python3}
langs=("$@")
[ ${#langs[@]} -gt 0 ] || langs=(python ts go)

work=$(mktemp -d "${TMPDIR:-/tmp}/tenure-sdks.XXXXXX")
server_pid=
cleanup() {
	if [ -n "$server_pid" ]; then
		kill "$server_pid" 2>/dev/null || true
		wait "$server_pid" 2>/dev/null || true
	fi
	rm -rf "$work"
}
trap cleanup EXIT

mkdir -p "$work/src" "$work/dist"
(cd "$repo" && git ls-files -z -co --exclude-standard -- sdk/python sdk/ts |
	tar --null -T - --ignore-failed-read -cf -) | tar -xf - -C "$work/src"

# The server, with its data in a temp dir, on a port the kernel picks.
"$repo/bin/tenure" --addr 127.0.0.1:0 --dir "$work/data" >"$work/server.log" 2>&1 &
server_pid=$!
addr=
for _ in $(seq 1000); do
	addr=$(sed -n 's/.*ready to accept connections" addr=\([^ ]*\).*/\1/p' "$work/server.log")
	[ -n "$addr" ] && break
	kill -0 "$server_pid" 2>/dev/null || break
	sleep 0.01
done
if [ -z "$addr" ]; then
	echo "sdks: the server did not start:" >&2
	cat "$work/server.log" >&2
	exit 1
fi
echo "sdks: tenure on $addr"

python_day_one() {
	"$PYTHON" -m venv "$work/py-build"
	"$work/py-build/bin/python" -m pip install -q build
	"$work/py-build/bin/python" -m build -q --wheel --outdir "$work/dist" "$work/src/sdk/python"
	local p=$work/py-project
	mkdir "$p" && cp "$here/example.py" "$p/"
	"$PYTHON" -m venv "$p/.venv"
	"$p/.venv/bin/pip" install -q "$work"/dist/tenure_locks-*.whl
	"$p/.venv/bin/python" -c 'import redis; print("sdks: python: redis-py", redis.__version__)'
	(cd "$p" && .venv/bin/python example.py "$addr")
}

ts_day_one() {
	(cd "$work/src/sdk/ts" && npm ci --no-audit --no-fund --loglevel=error &&
		npm pack --silent --pack-destination "$work/dist" >/dev/null)
	local p=$work/ts-project
	mkdir "$p" && cp "$here/example.ts" "$p/"
	cd "$p"
	npm init -y >/dev/null
	npm pkg set type=module
	npm install --no-audit --no-fund --loglevel=error "$work"/dist/tenure-db-locks-*.tgz redis
	# @types/node of the Node.js that runs it.
	npm install --no-audit --no-fund --loglevel=error -D typescript "@types/node@$(node -p 'process.versions.node.split(".")[0]')"
	cat >tsconfig.json <<'JSON'
{
  "compilerOptions": {
    "target": "ES2022",
    "module": "NodeNext",
    "moduleResolution": "NodeNext",
    "types": ["node"],
    "strict": true
  },
  "files": ["example.ts"]
}
JSON
	echo "sdks: ts: redis $(node -p 'require("redis/package.json").version'), typescript $(npx tsc --version)"
	npx tsc --strict -p .
	node example.js "redis://$addr"
	cd - >/dev/null
}

go_day_one() {
	local p=$work/go-project
	mkdir "$p" && cp "$here/main.go" "$p/"
	cd "$p"
	"$GO" mod init example.com/day-one >/dev/null 2>&1
	"$GO" mod edit -require github.com/tenure-db/tenure@v0.0.0 -replace "github.com/tenure-db/tenure=$repo"
	"$GO" mod tidy >/dev/null 2>&1 || "$GO" mod tidy
	"$GO" vet .
	"$GO" build -o day-one .
	./day-one "$addr"
	cd - >/dev/null
}

for lang in "${langs[@]}"; do
	SECONDS=0
	case $lang in
	python) python_day_one ;;
	ts) ts_day_one ;;
	go) go_day_one ;;
	*) echo "sdks: no SDK called $lang (python, ts, go)" >&2; exit 2 ;;
	esac
	echo "sdks: $lang: the seed's example ran from the installed package (${SECONDS}s)"
done
