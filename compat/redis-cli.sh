#!/usr/bin/env bash
# redis-cli (Debian's redis-tools) against tenure: every LOCK.* command,
# the fenced SET of SPEC §3, the read role, and the hints redis-cli builds
# from COMMAND DOCS.
source "$(dirname "$0")/lib.sh"

start_tenure
cli() { redis-cli -p "$TENURE_PORT" "$@"; }
echo "redis-cli $(redis-cli --version | cut -d' ' -f2) against tenure on port $TENURE_PORT"

expect "PING" "PONG" "$(cli PING)"

# Hold, inspect, write with the fence, renew, release.
out="$(cli LOCK.HOLD summaries chat-42 req-1 TTL 30000)"
lease="$(sed -n 1p <<<"$out")"
fence="$(sed -n 2p <<<"$out")"
expect_match "LOCK.HOLD gives a lease id" '^[0-9a-f]{32}$' "$lease"
expect_match "LOCK.HOLD gives a fence of epoch 1" '^42949672[0-9]{2}$' "$fence"
expect "LOCK.HOLD gives the ttl" "30000" "$(sed -n 3p <<<"$out")"
expect "LOCK.HOLD retried with the same reqid answers the same lease (LOCK-03)" \
	"$lease $fence" "$(cli LOCK.HOLD summaries chat-42 req-1 | sed -n 1,2p | tr '\n' ' ' | sed 's/ $//')"
expect "LOCK.HOLD WAIT 0 on a held key is null" "" "$(cli LOCK.HOLD summaries chat-42 req-2 WAIT 0)"

info="$(cli LOCK.INFO summaries chat-42 | tr '\n' ' ')"
expect_match "LOCK.INFO shows the fence and no lease id" "^fence $fence ttl [0-9]+ held [0-9]+ maxhold -1 waiters 0 holders 1 limit 1 shared 0 owner  $" "$info"
[[ "$info" != *"$lease"* ]] || fail "LOCK.INFO shows the lease id"

list="$(cli LOCK.LIST summaries | tr '\n' ' ')"
expect_match "LOCK.LIST walks the lock" "^0 chat-42 $fence [0-9]+ 0 1  $" "$list"
expect "LOCK.LIST COUNT 0 is a syntax error" "ERR syntax error" "$(cli LOCK.LIST summaries COUNT 0)"
expect "LOCK.LIST CURSOR x is an invalid cursor" "ERR invalid cursor" "$(cli LOCK.LIST summaries CURSOR x)"

expect "SET … FENCE with the lease's fence" "OK" "$(cli SET summary:chat-42 first FENCE "$fence")"
expect "SET … FENCE with an older fence is refused (LOCK-12)" \
	"FENCED a newer fence has written this key" "$(cli SET summary:chat-42 late FENCE $((fence - 1)))"
expect "the refused write wrote nothing" "first" "$(cli GET summary:chat-42)"

expect_match "LOCK.RENEW" '^(29|30)[0-9]{3}$' "$(cli LOCK.RENEW "$lease")"
expect "LOCK.RENEW TTL" "5000" "$(cli LOCK.RENEW "$lease" TTL 5000)"
expect "LOCK.RELEASE" "1" "$(cli LOCK.RELEASE "$lease")"
expect "LOCK.RELEASE again (a retried release)" "1" "$(cli LOCK.RELEASE "$lease")"
expect "LOCK.RENEW after release is LOST (LOCK-05)" "LOST released" "$(cli LOCK.RENEW "$lease")"
expect "LOCK.HOLD after release with the same reqid is LOST" "LOST released" "$(cli LOCK.HOLD summaries chat-42 req-1)"

# A new holder gets a larger fence; the admin revokes it.
out="$(cli LOCK.HOLD summaries chat-42 req-3)"
fence2="$(sed -n 2p <<<"$out")"
((fence2 > fence)) || fail "fence $fence2 after $fence (LOCK-02)"
ok "a new lease has a larger fence (LOCK-02)"
expect "SET … FENCE with the newer fence" "OK" "$(cli SET summary:chat-42 second FENCE "$fence2")"
expect "LOCK.REVOKE" "1" "$(cli LOCK.REVOKE summaries chat-42)"
expect "LOCK.RENEW after revoke is LOST" "LOST revoked by admin" "$(cli LOCK.RENEW "$(sed -n 1p <<<"$out")")"
expect "LOCK.INFO of a free key is null" "" "$(cli LOCK.INFO summaries chat-42)"
expect "bad options are errors" "ERR ttl must be an integer from 1000 to 3600000" "$(cli LOCK.HOLD l k r TTL 5)"

# INFO's sections, as redis-cli --stat and scripts read them.
for section in Server Clients Memory Persistence Stats Replication Keyspace Locks; do
	cli INFO | grep -q "^# $section" || fail "INFO has no # $section section"
done
ok "INFO has every section"
expect "INFO locks counts the grants" "grants_total:2" "$(cli INFO locks | tr -d '\r' | grep grants_total)"
timeout 1 stdbuf -oL redis-cli -p "$TENURE_PORT" --stat -i 0.2 >"$TENURE_DIR/stat" 2>&1 || true
grep -Eq '^1 +[0-9.]+[BKMG] +[0-9]+ +0 +[0-9]+ ' "$TENURE_DIR/stat" ||
	fail "redis-cli --stat shows no row of 1 key: $(cat "$TENURE_DIR/stat")"
ok "redis-cli --stat"

# COMMAND DOCS in the shape redis-cli builds hints from: run the same code
# path redis-cli's interactive mode runs at start, through a pseudo-terminal
# when `script` is there, and check that it shows LOCK.HOLD's hint.
if command -v script >/dev/null; then
	hint="$(printf 'HELP LOCK.HOLD\nQUIT\n' | TERM=dumb script -qec "redis-cli -p $TENURE_PORT" /dev/null 2>&1 |
		tr -d '\r' | sed 's/\x1b\[[0-9;]*m//g')"
	[[ "$hint" == *"LOCK.HOLD lock key reqid [TTL ms] [WAIT ms] [MAXHOLD ms]"* ]] ||
		fail "redis-cli HELP LOCK.HOLD shows no hint: $hint"
	ok "redis-cli HELP LOCK.HOLD: LOCK.HOLD lock key reqid [TTL ms] [WAIT ms] [MAXHOLD ms]"
fi

# The read role: LOCK.INFO and LOCK.LIST yes, LOCK.HOLD no (LOCK-09).
stop_tenure
users="$(mktemp)"
printf 'user reader read sha256:%s\nuser worker write sha256:%s\n' \
	"$(printf %s r-pass | sha256sum | cut -d' ' -f1)" "$(printf %s w-pass | sha256sum | cut -d' ' -f1)" >"$users"
start_tenure --users "$users"
rm -f "$users"
expect "unauthenticated" "NOAUTH Authentication required." "$(cli LOCK.LIST l)"
expect "a reader may LOCK.LIST" "0" "$(redis-cli -p "$TENURE_PORT" --no-auth-warning --user reader --pass r-pass LOCK.LIST l)"
expect "a reader may not LOCK.HOLD (LOCK-09)" "NOPERM this user has no permissions to run the 'lock.hold' command" \
	"$(redis-cli -p "$TENURE_PORT" --no-auth-warning --user reader --pass r-pass LOCK.HOLD l k r)"
expect_match "a writer may" '^[0-9a-f]{32}$' \
	"$(redis-cli -p "$TENURE_PORT" --no-auth-warning --user worker --pass w-pass LOCK.HOLD l k r | head -n1)"
echo "redis-cli: all checks passed"
