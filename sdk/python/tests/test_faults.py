"""Faults on the way: a swallowed HOLD reply, connections cut while a lease
is held, and a read-only user."""

import asyncio
import re
import time

import pytest
import redis

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
