"""A Redis's keys into tenure with the Redis's own MIGRATE, and back.

Keys of every type are written to the Redis in each encoding it keeps
(integers, LZF-compressed strings, quicklists, listpacks, intsets, hash
tables, skiplists), some with a TTL; the Redis MIGRATEs them to tenure,
which RESTOREs each payload; tenure must then hold what the Redis holds.
Then each key goes back: tenure's DUMP RESTOREd into the Redis under
another name, and tenure's own MIGRATE over the originals. Run by
migrate.sh: python3 migrate.py REDIS_PORT TENURE_PORT.
"""

import sys

import redis

redis_port, tenure_port = int(sys.argv[1]), int(sys.argv[2])
theirs = redis.Redis(host="127.0.0.1", port=redis_port)
ours = redis.Redis(host="127.0.0.1", port=tenure_port)


def check(what, cond, detail=""):
    if not cond:
        print(f"FAIL: {what} {detail}", file=sys.stderr)
        sys.exit(1)
    print(f"ok   {what}")


def value(c, key):
    t = c.type(key).decode()
    read = {
        "string": lambda: c.get(key),
        "list": lambda: c.lrange(key, 0, -1),
        "set": lambda: sorted(c.smembers(key)),
        "hash": lambda: sorted(c.hgetall(key).items()),
        "zset": lambda: c.zrange(key, 0, -1, withscores=True),
    }[t]
    return t, read()


def same_ttl(a, b):
    return (a < 0) == (b < 0) and abs(a - b) < 2000


keys = {
    "s:int": ("set", "12345"),
    "s:neg": ("set", "-7"),
    "s:text": ("set", "hello, tenure"),
    "s:lzf": ("set", "abcdefgh" * 200),
    "s:bin": ("set", b"\x00\xff\r\n" * 10),
    "l:small": ("rpush", "a", "1", "-300", "70000", "x" * 100),
    "l:big": ("rpush", *[str(i) * (i % 7 + 1) for i in range(3000)]),
    "set:ints": ("sadd", "1", "-2", "300", "4000000000"),
    "set:strs": ("sadd", *[f"m{i}" for i in range(600)]),
    "h:small": ("hset", "f", "v", "n", "1"),
    "h:big": ("hset", *[x for i in range(300) for x in (f"f{i}", "v" * (i % 90))]),
    "z:small": ("zadd", "1", "a", "-2.5", "b", "inf", "c"),
    "z:big": ("zadd", *[x for i in range(400) for x in (str(i / 7), f"m{i}")]),
}
for k, (cmd, *args) in keys.items():
    theirs.execute_command(cmd, k, *args)
theirs.pexpire("s:text", 600000)
theirs.pexpire("z:big", 900000)
encodings = {k: theirs.object("encoding", k).decode() for k in keys}
print("Redis's encodings:", " ".join(f"{k}={e}" for k, e in encodings.items()))
check("the Redis keeps every encoding", {"int", "embstr", "raw", "quicklist", "listpack", "intset", "hashtable", "skiplist"} <= set(encodings.values()), encodings)

reply = theirs.execute_command("MIGRATE", "127.0.0.1", tenure_port, "", 0, 5000, "COPY", "KEYS", *keys)
check("MIGRATE … COPY KEYS into tenure answers OK", reply == b"OK", reply)
for k in keys:
    check(f"{k} ({encodings[k]}) moved whole", value(ours, k) == value(theirs, k), f"{value(ours, k)!r:.200} vs {value(theirs, k)!r:.200}")
    check(f"{k} kept its TTL", same_ttl(ours.pttl(k), theirs.pttl(k)), (ours.pttl(k), theirs.pttl(k)))

try:
    theirs.execute_command("MIGRATE", "127.0.0.1", tenure_port, "s:int", 0, 5000, "COPY")
    check("MIGRATE onto an existing key fails", False)
except redis.ResponseError as e:
    check("MIGRATE onto an existing key tells of tenure's BUSYKEY", "BUSYKEY Target key name already exists." in str(e), str(e))
theirs.set("s:int", "changed")
reply = theirs.execute_command("MIGRATE", "127.0.0.1", tenure_port, "s:int", 0, 5000, "REPLACE")
check("MIGRATE … REPLACE moves the key", reply == b"OK" and ours.get("s:int") == b"changed" and theirs.exists("s:int") == 0)

for k in keys:
    if k == "s:int":
        continue
    ttl = max(ours.pttl(k), 0)
    theirs.restore("back:" + k, ttl, ours.dump(k))
    check(f"{k}: tenure's DUMP RESTOREs into the Redis", value(theirs, "back:" + k) == value(ours, k))
    check(f"{k}: with its TTL", same_ttl(theirs.pttl("back:" + k), ours.pttl(k)))

# tenure's own MIGRATE, back into the Redis over what it has.
before = {k: value(ours, k) for k in keys}
reply = ours.execute_command("MIGRATE", "127.0.0.1", redis_port, "", 0, 5000, "REPLACE", "KEYS", *keys)
check("tenure's MIGRATE … REPLACE KEYS into the Redis answers OK", reply == b"OK", reply)
for k in keys:
    check(f"{k}: tenure's MIGRATE moved it whole", value(theirs, k) == before[k] and ours.exists(k) == 0)
