"""redis-py (Debian's python3-redis) against tenure, with raw commands.

A worker holds a lock, renews it while it works, writes with its fence,
and releases it; a second worker waits in line and gets the key with a
larger fence; a late write with the old fence is refused. Run by
redis-py.sh, which starts the server: python3 redis_py.py PORT.
"""

import sys
import threading
import time
import uuid

import redis

port = int(sys.argv[1])
r = redis.Redis(host="127.0.0.1", port=port, decode_responses=True)


def check(what, cond, detail=""):
    if not cond:
        print(f"FAIL: {what} {detail}", file=sys.stderr)
        sys.exit(1)
    print(f"ok   {what}")


def hold(client, lock, key, reqid, *opts):
    return client.execute_command("LOCK.HOLD", lock, key, reqid, *opts)


print(f"redis-py {redis.__version__} against tenure on port {port}")
check("PING", r.ping() is True)

# Hold, as the SDKs do: one reqid per request, kept across retries.
reqid = uuid.uuid4().hex
lease, fence, ttl = hold(r, "reports", "2024-06", reqid, "TTL", 1500)
check("LOCK.HOLD grants a lease", len(lease) == 32 and fence >> 32 == 1 and ttl == 1500, (lease, fence, ttl))
again = hold(r, "reports", "2024-06", reqid, "TTL", 1500)
check("a retry with the same reqid gets the same lease (LOCK-03)", again[:2] == [lease, fence], again)

# A second worker waits in line on its own connection.
waiter = redis.Redis(host="127.0.0.1", port=port, decode_responses=True)
got = {}


def wait_in_line():
    got["reply"] = hold(waiter, "reports", "2024-06", uuid.uuid4().hex, "TTL", 1000, "WAIT", 10000)


t = threading.Thread(target=wait_in_line)
t.start()
deadline = time.monotonic() + 5
while time.monotonic() < deadline:
    info = r.execute_command("LOCK.INFO", "reports", "2024-06")
    if info and dict(zip(info[::2], info[1::2]))["waiters"] == 1:
        break
    time.sleep(0.01)
check("the second worker waits in line", info and dict(zip(info[::2], info[1::2]))["waiters"] == 1, info)

# Work for two ttls, renewing every ttl/3: the lease stays ours.
start = time.monotonic()
renewals = 0
while time.monotonic() - start < 3.0:
    time.sleep(0.5)
    left = r.execute_command("LOCK.RENEW", lease)
    renewals += 1
    check(f"LOCK.RENEW {renewals}", 1000 < left <= 1500, left)
check("nobody else got the key while it was renewed", "reply" not in got)
# redis-py turns SET's +OK into True.
check("SET ... FENCE with our fence", r.execute_command("SET", "report:2024-06", "ours", "FENCE", fence) is True)

check("LOCK.RELEASE", r.execute_command("LOCK.RELEASE", lease) == 1)
t.join(5)
lease2, fence2, _ = got["reply"]
check("the waiter is granted at release, with a larger fence (LOCK-02, LOCK-08)", fence2 > fence, (fence, fence2))

try:
    r.execute_command("LOCK.RENEW", lease)
    check("LOCK.RENEW after release is LOST", False)
except redis.exceptions.ResponseError as e:
    check("LOCK.RENEW after release is LOST released (LOCK-05)", str(e) == "LOST released", str(e))

check("the new holder writes with its fence", waiter.execute_command("SET", "report:2024-06", "theirs", "FENCE", fence2) is True)
try:
    r.execute_command("SET", "report:2024-06", "late", "FENCE", fence)
    check("a late write with the old fence is refused", False)
except redis.exceptions.ResponseError as e:
    check("a late write with the old fence is refused (LOCK-12)", str(e).startswith("FENCED"), str(e))
check("the key keeps the newer write", r.get("report:2024-06") == "theirs")

# The lease expires when nobody renews it.
time.sleep(1.2)
try:
    waiter.execute_command("LOCK.RENEW", lease2)
    check("an unrenewed lease expires", False)
except redis.exceptions.ResponseError as e:
    check("an unrenewed lease expires: LOST expired (LOCK-06)", str(e) == "LOST expired", str(e))

# LOCK.LIST, like SCAN: walk every key.
for i in range(30):
    hold(r, "batch", f"item-{i}", uuid.uuid4().hex)
cursor, keys = "0", set()
while True:
    cursor, entries = r.execute_command("LOCK.LIST", "batch", "CURSOR", cursor, "COUNT", 7)
    keys.update(e[0] for e in entries)
    if cursor == "0":
        break
check("LOCK.LIST walks every held key", keys == {f"item-{i}" for i in range(30)}, sorted(keys))

# INFO parses, every section.
info = r.info("everything")
for field in ["redis_version", "connected_clients", "used_memory", "aof_enabled",
              "total_commands_processed", "instantaneous_ops_per_sec", "role", "grants_total", "epoch"]:
    check(f"INFO has {field}", field in info)
check("INFO locks counts the grants", r.info("locks")["grants_total"] == 32, r.info("locks"))
check("INFO keyspace", r.info("keyspace")["db0"]["keys"] == 1, r.info("keyspace"))
# redis-py's own Redis.lock, unmodified (SPEC §13): SET NX PX to acquire,
# scripts (EVALSHA, falling back to EVAL) to extend, reacquire and release.
plain = redis.Redis(host="127.0.0.1", port=port)
lock = plain.lock("redis-py-lock", timeout=5)
check("Redis.lock acquires", lock.acquire(blocking=False))
check("Redis.lock extends (a script)", lock.extend(5))
check("Redis.lock reacquires (a script)", lock.reacquire())
other = plain.lock("redis-py-lock", timeout=5)
check("a second Redis.lock is refused while held", not other.acquire(blocking=False))
try:
    other.release()
    check("a non-owner's release is refused", False)
except redis.exceptions.LockError:
    check("a non-owner's release is refused (compare-and-delete script)", True)
lock.release()
check("Redis.lock releases", plain.get("redis-py-lock") is None)


async def asyncio_lock():
    import redis.asyncio as aredis

    ar = aredis.Redis(host="127.0.0.1", port=port)
    lk = ar.lock("redis-py-async-lock", timeout=5)
    check("asyncio Redis.lock acquires", await lk.acquire(blocking=False))
    check("asyncio Redis.lock extends", await lk.extend(5))
    check("asyncio Redis.lock reacquires", await lk.reacquire())
    o = ar.lock("redis-py-async-lock", timeout=5)
    check("a second asyncio Redis.lock is refused while held", not await o.acquire(blocking=False))
    try:
        await o.release()
        check("an asyncio non-owner's release is refused", False)
    except redis.exceptions.LockError:
        check("an asyncio non-owner's release is refused", True)
    await lk.release()
    check("asyncio Redis.lock releases", await ar.get("redis-py-async-lock") is None)
    await ar.close()


import asyncio  # noqa: E402

asyncio.run(asyncio_lock())
print("redis-py: all checks passed")
