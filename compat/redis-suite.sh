#!/usr/bin/env bash
# Redis's own test suite in external mode against a tenure built from this
# checkout: the yardstick of SPEC §6 and §13.
#
#   compat/redis-suite.sh REDIS_SRC [UNIT …]
#
# REDIS_SRC is a Redis source tree at tag 7.0.15 (its tests/ and runtest;
# nothing in it is built). UNIT defaults to the units tenure is measured on.
# Each unit runs against a fresh server in a temporary directory, with
# --durable (a failed test does not stop the unit) and the tag filters that
# leave out what needs DEBUG, replication or maxmemory, on one database
# (--singledb: tenure has database 0 only). Prints one line a
# unit ("type/string: 70 passed, 0 failed") and the failing tests' names,
# and keeps each unit's whole output in $OUT (default /tmp/redis-suite).
# The suite's own test server listens from port 21111 down (its clients) and up; two runs at once
# need BASEPORT set apart (BASEPORT=23111 …).
set -euo pipefail
cd "$(dirname "$0")/.."

src=${1:?usage: compat/redis-suite.sh REDIS_SRC [UNIT …]}
shift
units=("$@")
if [ ${#units[@]} -eq 0 ]; then
	units=(type/string type/incr keyspace protocol expire info-command multi bitops
		type/hash type/set type/zset type/list scripting pubsub pubsubshard dump)
fi
out=${OUT:-/tmp/redis-suite}
mkdir -p "$out"
command -v tclsh >/dev/null || { echo "redis-suite: tclsh is needed (apt-get install tcl)" >&2; exit 1; }

go build -o bin/tenure ./cmd/tenure

# The suite's external mode begins every unit with FUNCTION FLUSH, which
# tenure does not have (Redis 7 functions are not in SPEC §13): a copy of
# the suite whose helper tolerates its error, and nothing else changed.
suite="$out/suite"
rm -rf "$suite" && mkdir -p "$suite"
cp -r "$src/runtest" "$src/tests" "$suite/"
[ -d "$src/src" ] && mkdir -p "$suite/src" && cp "$src/src/version.h" "$suite/src/" 2>/dev/null || true
sed -i 's/^    r function flush$/    catch {r function flush}/' "$suite/tests/support/server.tcl"
grep -q 'catch {r function flush}' "$suite/tests/support/server.tcl" ||
	{ echo "redis-suite: the helper's FUNCTION FLUSH was not found; is $src Redis 7.0.15?" >&2; exit 1; }
# unit/scripting runs its tests twice, through FUNCTION LOAD/FCALL and
# through EVAL; tenure has EVAL only, so the copy runs the EVAL pass (the
# FUNCTION pass would hang on FUNCTION LOAD's missing reply).
sed -i 's/^foreach is_eval {0 1} {$/foreach is_eval {1} {/' "$suite/tests/unit/scripting.tcl"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

total_ok=0 total_err=0
for unit in "${units[@]}"; do
	dir=$(mktemp -d)
	port=$(free_port)
	./bin/tenure --addr "127.0.0.1:$port" --dir "$dir" --log-level error &
	pid=$!
	for _ in $(seq 100); do
		(exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
		sleep 0.05
	done
	log="$out/${unit//\//_}.log"
	(cd "$suite" && ./runtest --host 127.0.0.1 --port "$port" --single "unit/$unit" --singledb --durable \
		--baseport "${BASEPORT:-21111}" \
		--tags -needs:repl --tags -needs:debug --tags -needs:config-maxmemory \
		--timeout 300 2>&1 | sed 's/\x1b\[[0-9;]*m//g' >"$log") || true
	kill "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	rm -rf "$dir"
	ok=$(grep -c '\[ok\]' "$log" || true)
	# A [TIMEOUT] stops the unit: it counts as a failure (the tests after
	# it did not run).
	err=$(grep -cE '^\[(err|exception|TIMEOUT)\]' "$log" || true)
	total_ok=$((total_ok + ok)) total_err=$((total_err + err))
	echo "$unit: $ok passed, $err failed"
	grep -E '^\[(err|exception|TIMEOUT)\]' "$log" | sed 's/^/    /' | head -40 || true
done
echo "redis-suite: $total_ok passed, $total_err failed"
