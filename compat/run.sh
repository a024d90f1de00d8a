#!/usr/bin/env bash
# make compat: the clients people already use, for real, against tenure.
# Installs what is missing (Debian packages with apt-get, node-redis and
# ioredis with npm ci into compat/node; go-redis comes with the go command
# that builds tenure), then runs each check; each starts
# its own server on a free loopback port with a temp dir, and stops it.
# Any failed check fails the whole run, loudly.
set -euo pipefail
cd "$(dirname "$0")"
COMPAT_DIR="$(pwd)"
PYTHON="${PYTHON:-/usr/bin/python3}"

need_apt=()
command -v redis-cli >/dev/null || need_apt+=(redis-tools)
command -v redis-benchmark >/dev/null || need_apt+=(redis-tools)
command -v redis-server >/dev/null || need_apt+=(redis-server)
"$PYTHON" -c 'import redis' 2>/dev/null || need_apt+=(python3-redis)
command -v script >/dev/null || need_apt+=(bsdutils)
command -v node >/dev/null || need_apt+=(nodejs)
command -v npm >/dev/null || need_apt+=(npm)
if ((${#need_apt[@]} > 0)); then
	echo "compat: installing ${need_apt[*]}"
	if [[ $(id -u) -ne 0 ]]; then
		echo "FAIL: compat needs ${need_apt[*]}; run as root or install them" >&2
		exit 1
	fi
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi
if [[ ! -d node/node_modules/redis || ! -d node/node_modules/ioredis ]]; then
	echo "compat: npm ci in compat/node"
	(cd node && npm ci --no-audit --no-fund --loglevel=error)
fi

start=$SECONDS
passed=0
failed=0
for check in redis-cli.sh cluster.sh redis-py.sh node.sh go-redis.sh redis-benchmark.sh migrate.sh; do
	echo
	echo "=== compat/$check"
	if bash "$COMPAT_DIR/$check"; then
		passed=$((passed + 1))
	else
		echo "=== compat/$check FAILED" >&2
		failed=$((failed + 1))
	fi
done
echo
echo "compat: ran in $((SECONDS - start))s"
echo "compat: $passed passed, $failed failed"
((failed == 0))
