#!/usr/bin/env bash
# redis-cli -c against a three-node tenure cluster (SPEC §10): it follows
# a follower's -MOVED to the leader for writes, reads and LOCK.HOLD, as it
# does in a Redis Cluster; without -c the follower's redirect is shown.
source "$(dirname "$0")/lib.sh"

work="$(mktemp -d "${TMPDIR:-/tmp}/tenure-compat-cluster.XXXXXX")"
pids=()
stop_cluster() {
	for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
	for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
	rm -rf "$work"
}
trap stop_cluster EXIT

# Three free loopback ports, as --peers must name them before the nodes start.
read -r -a ports <<<"$("$PYTHON" -c '
import socket
socks = [socket.socket() for _ in range(3)]
for s in socks: s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in socks))')"
peers="n1=127.0.0.1:${ports[0]},n2=127.0.0.1:${ports[1]},n3=127.0.0.1:${ports[2]}"
for i in 0 1 2; do
	"$TENURE_BIN" --node-id "n$((i + 1))" --peers "$peers" --dir "$work/n$((i + 1))" \
		--raft-election-timeout 300ms 2>"$work/n$((i + 1)).log" &
	pids+=($!)
done

# The leader is the node whose ROLE says master.
leader=
for _ in $(seq 200); do
	for p in "${ports[@]}"; do
		if [[ "$(redis-cli -p "$p" ROLE 2>/dev/null | head -n1)" == master ]]; then
			leader=$p
			break 2
		fi
	done
	sleep 0.05
done
[[ -n "$leader" ]] || fail "no leader within 10s: $(tail -n 5 "$work"/n*.log)"
ok "a leader is elected (port $leader)"
follower=
for p in "${ports[@]}"; do [[ "$p" != "$leader" ]] && follower=$p && break; done
echo "redis-cli $(redis-cli --version | cut -d' ' -f2) against a tenure cluster, leader $leader, follower $follower"

expect_match "without -c a follower redirects to the leader" "^MOVED [0-9]+ 127\.0\.0\.1:$leader\$" \
	"$(redis-cli -p "$follower" SET greeting hello 2>&1)"
expect "redis-cli -c SET through a follower" "OK" "$(redis-cli -c -p "$follower" SET greeting hello)"
expect "redis-cli -c GET through a follower" "hello" "$(redis-cli -c -p "$follower" GET greeting)"
out="$(redis-cli -c -p "$follower" LOCK.HOLD jobs invoice-7 req-1 TTL 30000)"
expect_match "redis-cli -c LOCK.HOLD through a follower" '^[0-9a-f]{32}$' "$(sed -n 1p <<<"$out")"
expect "redis-cli -c SET … FENCE with that fence" "OK" \
	"$(redis-cli -c -p "$follower" SET invoice:7 paid FENCE "$(sed -n 2p <<<"$out")")"
expect_match "CLUSTER SLOTS names the leader for every slot" "^0 16383 127\.0\.0\.1 $leader " \
	"$(redis-cli -p "$follower" CLUSTER SLOTS | tr '\n' ' ')"
echo "cluster: all checks passed"
