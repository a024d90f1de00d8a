"""Faults on the way: a swallowed HOLD reply, connections cut while a lease
is held, and a read-only user."""

import asyncio
import re
import time

import pytest
import redis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

import tenure_locks
from conftest import Server, holding, key_info, lock_stats, until, users_file, waiters_are


def is_hold(request: bytes) -> bool:
    return b"LOCK.HOLD" in request.upper()[:40]


async def test_swallowed_hold_reply_is_retried_to_the_same_lease(server, proxy, clients, admin):
    """LOCK-03: the grant's reply never arrives; the SDK asks again with
    the same reqid (the client's socket timeout ends the first try) and
    gets the same lease: one grant in the store's count."""
    c = clients("127.0.0.1", proxy.port, socket_timeout=1.0)
    lk = tenure_locks.Store(c).lock("swallow", ttl="5s")
    proxy.swallow = lambda req, reply: is_hold(req) and reply.startswith(b"*3") and not proxy.swallowed
    grants = (await lock_stats(admin))["grants_total"]
    started = time.monotonic()
    async with lk.hold("k") as lease:
        took = time.monotonic() - started
        assert len(proxy.swallowed) == 1
        fence = int(re.search(rb":(\d+)\r\n", proxy.swallowed[0]).group(1))
        assert lease.fence == fence
        holds = [r for r in proxy.requests if is_hold(r)]
        reqids = {re.findall(rb"\$32\r\n([0-9a-f]{32})\r\n", r)[0] for r in holds}
        assert len(holds) >= 2 and len(reqids) == 1, "the retry carries the same reqid"
        assert (await key_info(admin, "swallow", "k"))["fence"] == fence
    assert (await lock_stats(admin))["grants_total"] == grants + 1
    assert took < 1.0 + 0.5 + 0.5, f"granted after {took:.3f}s: the socket timeout and one retry"


async def test_connections_cut_every_300ms_do_not_lose_the_lease(server, proxy, clients, admin):
    """LOCK-11: renewals go on from the next connection."""
    c = clients("127.0.0.1", proxy.port, socket_timeout=1.0)
    lk = tenure_locks.Store(c).lock("cuts", ttl="1s")
    renewals = (await lock_stats(admin))["renewals_total"]
    cuts = 0
    async with lk.hold("k") as lease:
        fence = lease.fence
        for _ in range(10):
            await asyncio.sleep(0.3)
            cuts += proxy.cut()
            assert lease.lost is None
            assert (await key_info(admin, "cuts", "k"))["fence"] == fence
    assert cuts >= 5
    assert (await lock_stats(admin))["renewals_total"] - renewals >= 6
    assert await key_info(admin, "cuts", "k") is None


async def test_read_only_user_gets_a_clear_error(tenure_bin, tmp_path, clients):
    users = users_file(tmp_path / "users", {"reader": ("read", "r-pass"), "writer": ("write", "w-pass")})
    s = Server(tenure_bin, tmp_path, users=users)
    s.start()
    try:
        reader = clients(s.host, s.port, username="reader", password="r-pass")
        lk = tenure_locks.Store(reader).lock("ro")
        with pytest.raises(redis.exceptions.NoPermissionError) as err:
            async with lk.hold("k"):
                raise AssertionError("a reader held a key")
        assert "hold ro 'k'" in str(err.value) and "lock.hold" in str(err.value).lower()
        writer = clients(s.host, s.port, username="writer", password="w-pass")
        async with tenure_locks.Store(writer).lock("ro").try_hold("k") as lease:
            assert lease.fence > 0
    finally:
        s.stop()


async def test_cancel_releases_a_racing_grant(server, proxy, clients, admin):
    """The store grants the key to a waiting hold whose reply is swallowed,
    and the caller cancels it then: the hold finds the grant (a HOLD WAIT 0
    with the same reqid answers it, LOCK-03) and releases it, so the next
    waiter gets the key at once rather than after the ttl."""
    direct = tenure_locks.Store(admin).lock("race", ttl="5s")
    via_proxy = tenure_locks.Store(clients("127.0.0.1", proxy.port, socket_timeout=2.0)).lock("race", ttl="5s")
    ran = []

    async def cancelled_waiter():
        async with via_proxy.hold("k"):
            ran.append(True)

    async def next_waiter():
        async with direct.hold("k") as lease:
            return time.monotonic(), lease.fence

    a, end = await holding(direct, "k")
    proxy.swallow = lambda req, reply: is_hold(req) and reply.startswith(b"*3") and not proxy.swallowed
    b = asyncio.create_task(cancelled_waiter())
    await waiters_are(admin, "race", "k", 1)
    c = asyncio.create_task(next_waiter())
    await waiters_are(admin, "race", "k", 2)

    end.set()  # the store grants the key to b; its reply is swallowed
    await a
    await until("the swallowed grant", lambda: asyncio.sleep(0, bool(proxy.swallowed)))
    b_fence = (await key_info(admin, "race", "k"))["fence"]
    cancelled = time.monotonic()
    b.cancel()
    with pytest.raises(asyncio.CancelledError):
        await b
    got, fence = await c
    assert not ran
    assert fence > b_fence
    assert got - cancelled < 1.0, f"the next waiter got the key {got - cancelled:.3f}s after the cancel"


# The reqid window (SPEC §8, LOCK-03): the store remembers a reqid until at
# least a ttl after the earliest time a grant to it can have come (the send
# of the oldest HOLD not answered null or "superseded"); the SDK sends a HOLD
# with that reqid only before that time less the holder's margin, and past it
# asks again with a fresh reqid.

REQID = re.compile(rb"\$32\r\n([0-9a-f]{32})\r\n")
# redis-py's own retries (the default from redis-py 6) would send a timed-out
# HOLD again, with its reqid, at a time the SDK does not choose: off, as the
# README tells users.
NO_RETRY = Retry(NoBackoff(), 0)


class GrantsByReqID:
    """The lease ids each reqid was answered with, from every HOLD reply the
    proxy forwards or swallows; swallow(req, reply) also says whether to
    swallow it (lose(reqid))."""

    def __init__(self) -> None:
        self.leases: dict = {}
        self.lost_reqid = None
        self.lost_at = 0.0

    def swallow(self, req: bytes, reply: bytes) -> bool:
        if not is_hold(req):
            return False
        reqid = REQID.findall(req)[0]
        if reply.startswith(b"*3"):
            self.leases.setdefault(reqid, set()).add(REQID.findall(reply)[0])
        if self.lost_reqid is None:
            self.lost_reqid, self.lost_at = reqid, time.monotonic()
        return reqid == self.lost_reqid

    def one_each(self) -> None:
        for reqid, leases in self.leases.items():
            assert len(leases) == 1, f"LOCK-03: reqid {reqid!r} was granted {len(leases)} leases"


def held_within(proxy, window: float) -> list:
    """Checks that every HOLD of each reqid reached the store before its
    first + window (none was answered null or superseded here, so the
    first HOLD starts the window); returns the reqids in order of first use."""
    first: dict = {}
    for req, at in zip(proxy.requests, proxy.request_times):
        if not is_hold(req):
            continue
        reqid = REQID.findall(req)[0]
        if reqid not in first:
            first[reqid] = at
        else:
            assert at - first[reqid] < window, \
                f"a HOLD with reqid {reqid!r} reached the store {at - first[reqid]:.3f}s after its first"
    return list(first)


async def test_lost_replies_past_the_reqid_window_use_a_fresh_reqid(server, proxy, clients, admin):
    """Every reply to the first reqid's HOLDs is lost (granted at once; the
    later chunks are answered the same lease). The SDK asks again with that
    reqid within its window only, then with a fresh one, granted once the
    orphan lease has run out: two grants, one per reqid."""
    c = clients("127.0.0.1", proxy.port, socket_timeout=0.95, retry=NO_RETRY)  # chunks of 475 ms
    lk = tenure_locks.Store(c).lock("window", ttl="1s")
    g = GrantsByReqID()
    proxy.swallow = g.swallow
    grants = (await lock_stats(admin))["grants_total"]
    async with lk.hold("k") as lease:
        ran = time.monotonic()
        assert (await key_info(admin, "window", "k"))["fence"] == lease.fence
    reqids = held_within(proxy, 1.0 - 0.1)
    assert len(reqids) == 2 and reqids[0] == g.lost_reqid, f"reqids {reqids}: want the lost one, then a fresh one"
    g.one_each()
    assert (await lock_stats(admin))["grants_total"] == grants + 2
    assert ran - g.lost_at >= 1.0 - 0.05, "fn ran before the orphan lease ran out"


async def test_cancel_past_the_reqid_window_sends_no_probe(server, proxy, clients, admin):
    """A hold cancelled after its reqid's window, its grant's replies lost,
    sends no probe with that reqid: the store may have forgotten it and
    would grant the probe a second lease. The orphan runs out unrenewed."""
    c = clients("127.0.0.1", proxy.port, socket_timeout=2.0, retry=NO_RETRY)
    lk = tenure_locks.Store(c).lock("window", ttl="1s")
    g = GrantsByReqID()
    proxy.swallow = lambda req, reply: g.swallow(req, reply) or is_hold(req)
    grants = (await lock_stats(admin))["grants_total"]

    async def hold() -> None:
        async with lk.hold("k"):
            pytest.fail("the block ran on a grant whose every reply was lost")

    with pytest.raises(asyncio.TimeoutError):
        await asyncio.wait_for(hold(), 1.2)
    assert len(held_within(proxy, 1.0 - 0.1)) == 1
    g.one_each()
    assert (await lock_stats(admin))["grants_total"] == grants + 1

    async def free() -> bool:
        info = await key_info(admin, "window", "k")
        return info is None or info["fence"] == 0

    await until("the orphan lease to run out", free, timeout=3.0)
