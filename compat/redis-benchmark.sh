#!/usr/bin/env bash
# redis-benchmark (Debian's redis-tools) against the lock commands: it must
# run to the end (it stops at the first error reply) and the server must
# count what it did.
#
# How the arguments vary. redis-benchmark replaces each __rand_int__ with
# its own random number, and cannot feed one reply into the next command,
# so:
#   - LOCK.HOLD takes a random key and a reqid of two random numbers: a
#     reqid must never come back with another key (that is an error, and
#     ends the run), and two numbers below 10^9 make that ~10^-9 likely.
#     WAIT 0 never blocks; a key drawn twice answers null, not an error.
#     TTL 1000: these leases then expire on their own.
#   - LOCK.RENEW and LOCK.RELEASE take one lease held beforehand: renewals
#     of a live lease, then releases of it (the first ends it; the retries
#     answer 1, as SPEC §3 has a retried RELEASE answer).
#   - LOCK.HOLD retried with one reqid answers the lease it already gave.
source "$(dirname "$0")/lib.sh"

N="${BENCH_N:-20000}"
start_tenure
cli() { redis-cli -p "$TENURE_PORT" "$@"; }
echo "redis-benchmark $(redis-benchmark --version | cut -d' ' -f2) against tenure on port $TENURE_PORT, $N requests a run, 50 clients, pipelines of 16"

# bench LABEL COMMAND ARGS...: one run; LABEL is what is printed.
bench() {
	local label="$1" out
	shift
	out="$(redis-benchmark -p "$TENURE_PORT" -n "$N" -c 50 -P 16 -r 1000000000 --csv "$@" 2>&1)" ||
		fail "redis-benchmark $*: $out"
	local row
	row="$(grep -v '^"test"' <<<"$out" | tail -n1)"
	local rps
	rps="$(cut -d, -f2 <<<"$row" | tr -d '"')"
	[[ "$rps" =~ ^[0-9]+(\.[0-9]+)?$ ]] && awk "BEGIN{exit !($rps > 0)}" ||
		fail "redis-benchmark $*: no rate in $out"
	printf 'ok   %-58s %10.0f requests/s, p50 %s ms, p99 %s ms\n' "$label" "$rps" \
		"$(cut -d, -f5 <<<"$row" | tr -d '"')" "$(cut -d, -f7 <<<"$row" | tr -d '"')"
}

stat() { cli INFO locks | tr -d '\r' | sed -n "s/^$1://p"; }

bench "LOCK.HOLD of random keys (grants)" LOCK.HOLD bench key:__rand_int__ req:__rand_int__:__rand_int__ TTL 1000 WAIT 0
grants="$(stat grants_total)"
((grants >= N - 10)) || fail "$grants grants after $N holds of random keys"
ok "grants_total $grants after $N holds of random keys"

lease="$(cli LOCK.HOLD bench hot req-hot TTL 60000 | head -n1)"
[[ "$lease" =~ ^[0-9a-f]{32}$ ]] || fail "LOCK.HOLD bench hot: $lease"
bench "LOCK.HOLD retried with one reqid" LOCK.HOLD bench hot req-hot
bench "LOCK.RENEW of one live lease" LOCK.RENEW "$lease"
expect "renewals_total" "$N" "$(stat renewals_total)"
bench "LOCK.INFO of random keys" LOCK.INFO bench key:__rand_int__
bench "LOCK.LIST COUNT 10 (first step of $N keys)" LOCK.LIST bench COUNT 10
bench "LOCK.RELEASE of one lease (then its retries)" LOCK.RELEASE "$lease"
expect "released_total" "1" "$(stat released_total)"
expect "grants_total" "$((grants + 1))" "$(stat grants_total)"

# The random holds run out within a second of their grant.
sleep 1.2
expect "leases after their ttl" "0" "$(stat leases)"
expect "expired_total" "$grants" "$(stat expired_total)"
echo "redis-benchmark: all checks passed"
