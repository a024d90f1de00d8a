"""Waiting in overlapping chunks (SPEC §8): the next chunk a quarter into the
current one (LOCK-08), no next chunk after a pause past the current one's
WAIT and a late chunk's grant released (LOCK-03), max_hold counted from the
oldest HOLD that may have been granted (LOCK-07)."""

import asyncio
import threading
import time

import pytest
import redis

import tenure_locks
from conftest import holding, key_info, lock_stats, until, waiters_are
from proxy import Proxy

# How soon a waiter gets a key after its holder let go (LOCK-06's 10 ms,
# with room for a busy machine).
HANDOFF = 0.25


def later_holds_of_a_reqid(delay: float, on_delay=lambda: None):
    """A Proxy.hold_back that passes the first LOCK.HOLD of each reqid at
    once and holds every later one back for delay seconds. Its `first` maps
    each reqid to when its first HOLD went on to the store."""
    first = {}

    def hold_back(request: bytes) -> float:
        args = Proxy.args(request)
        if args[0].upper() != b"LOCK.HOLD":
            return 0.0
        if args[3] not in first:
            first[args[3]] = time.monotonic()
            return 0.0
        on_delay()
        return delay

    hold_back.first = first  # type: ignore[attr-defined]
    return hold_back


async def test_the_next_chunk_reaches_the_store_before_the_wait_runs_out(server, proxy, clients, admin):
    """LOCK-08 with 1 s chunks (a socket timeout of 2 s) whose later HOLDs
    take 0.65 s longer to reach the store than the first: sent a quarter into
    the first chunk, the next is there at 0.9 s, before the first one's WAIT
    runs out, and A keeps its place ahead of B. (Sent halfway, it would
    arrive at 1.15 s: at 1.075 s A's place lingers, passed over, and the
    release serves B first.)"""
    hold_back = later_holds_of_a_reqid(0.65)
    proxy.hold_back = hold_back
    direct = tenure_locks.Store(admin).lock("slow", ttl="1s")
    via_proxy = tenure_locks.Store(clients("127.0.0.1", proxy.port, socket_timeout=2.0)).lock("slow", ttl="1s")
    assert via_proxy.chunk == pytest.approx(1.0)
    order = []

    async def waiter(name):
        async with via_proxy.hold("k"):
            order.append(name)

    h, end = await holding(direct, "k")
    a = asyncio.create_task(waiter("A"))
    await waiters_are(admin, "slow", "k", 1)
    (a_joined,) = hold_back.first.values()
    await asyncio.sleep(max(0.0, a_joined + 0.2 - time.monotonic()))  # B's own chunks well apart from A's
    b = asyncio.create_task(waiter("B"))
    await waiters_are(admin, "slow", "k", 2)
    await asyncio.sleep(max(0.0, a_joined + 1.075 - time.monotonic()))
    end.set()
    await h
    await asyncio.gather(a, b)
    assert order == ["A", "B"]


async def test_no_next_chunk_after_a_pause_past_the_wait(server, clients, admin):
    """LOCK-03: the process pauses (a blocking call) from just after a
    waiter's first HOLD until past its 2 s WAIT; meanwhile the store grants
    that HOLD and, its lease unrenewed, ends it and forgets the reqid a ttl
    later. On waking, the next chunk is not sent: it would reach a store that
    no longer knows the reqid and get a second lease. The first HOLD's
    answer is read instead, and the lease it granted is gone (NotHeldError)."""
    paused = tenure_locks.Store(clients(server.host, server.port, socket_timeout=4.0)).lock("paused", ttl="1s")
    assert paused.chunk == pytest.approx(2.0)
    direct = tenure_locks.Store(admin).lock("paused", ttl="1s")
    holder_in, holder_out = asyncio.Event(), asyncio.Event()

    async def holder():
        with pytest.raises(tenure_locks.LostError) as err:
            async with direct.hold("k"):
                holder_in.set()
                await asyncio.sleep(30)
        # Its own deadline passed in the pause too; the store forgot the revoke.
        assert err.value.reason == tenure_locks.REASON_EXPIRED
        holder_out.set()

    h = asyncio.create_task(holder())
    await holder_in.wait()
    grants = (await lock_stats(admin))["grants_total"]

    async def waiter():
        async with paused.hold("k"):
            raise AssertionError("the block ran on a lease the store had ended")

    w = asyncio.create_task(waiter())
    await waiters_are(admin, "paused", "k", 1)

    def revoke_soon():
        time.sleep(0.05)
        r = redis.Redis(host=server.host, port=server.port)
        assert r.execute_command("LOCK.REVOKE", "paused", "k") == 1  # the waiter is granted
        r.close()

    t = threading.Thread(target=revoke_soon)
    t.start()
    time.sleep(2.35)  # the pause: past the grant's end + a ttl, and past the WAIT
    t.join()
    with pytest.raises(tenure_locks.NotHeldError, match="unknown lease"):
        await w
    await h
    assert holder_out.is_set()
    assert (await lock_stats(admin))["grants_total"] == grants + 1, "one grant for the waiter's reqid"
    assert await key_info(admin, "paused", "k") is None


async def test_a_late_chunks_grant_is_released(server, proxy, clients, admin):
    """LOCK-03: the waiter's next chunk is held back 1.5 s on its way; the
    store grants the first chunk meanwhile, and the block runs at once and
    lets go. The late chunk reaches the store after it forgot the reqid (a
    ttl after the lease ended) and is granted a second lease, which the hold
    releases as soon as its answer comes: the key is free when the hold has
    returned."""
    on_way = asyncio.Event()
    proxy.hold_back = later_holds_of_a_reqid(1.5, on_way.set)
    via_proxy = tenure_locks.Store(clients("127.0.0.1", proxy.port, socket_timeout=2.0)).lock("late", ttl="1s")
    direct = tenure_locks.Store(admin).lock("late", ttl="1s")
    h, end = await holding(direct, "k")
    grants = (await lock_stats(admin))["grants_total"]
    entered = []

    async def waiter():
        async with via_proxy.hold("k"):
            entered.append(time.monotonic())

    w = asyncio.create_task(waiter())
    await on_way.wait()
    end.set()
    released = await h
    await w
    assert entered[0] - released < HANDOFF, "the block waited for the late chunk"
    assert (await lock_stats(admin))["grants_total"] == grants + 2, "the late chunk got a second lease"
    assert await key_info(admin, "late", "k") is None


async def test_max_hold_counts_from_the_hold_that_was_granted(server, proxy, clients, admin):
    """LOCK-07: a waiter's first HOLD is granted after 0.3 s in line, its
    reply is lost, and 0.5 s later the connection is cut; the retry with the
    same reqid gets the same lease. The holder's max_hold cap counts from the
    first HOLD's send, not the retry's: the holder's deadline is a margin
    before the store revokes the lease at the grant + max_hold."""
    via_proxy = tenure_locks.Store(clients("127.0.0.1", proxy.port)).lock("capped", ttl="1s", max_hold="1s")
    direct = tenure_locks.Store(admin).lock("capped", ttl="1s")
    h, end = await holding(direct, "k")
    caps = []

    async def waiter():
        async with via_proxy.hold("k") as lease:
            try:
                await asyncio.sleep(30)
            finally:
                caps.append(lease.deadline)

    w = asyncio.create_task(waiter())
    await waiters_are(admin, "capped", "k", 1)
    await asyncio.sleep(0.3)
    granted_by = []  # the store granted before its reply got to the proxy

    def swallow(req, reply):
        if b"LOCK.HOLD" in req.upper()[:40] and not proxy.swallowed:
            granted_by.append(time.monotonic())
            return True
        return False

    proxy.swallow = swallow
    end.set()
    await h
    await until("the grant's reply swallowed", lambda: asyncio.sleep(0, bool(proxy.swallowed)))
    await asyncio.sleep(0.5)
    assert proxy.cut() >= 1
    with pytest.raises(tenure_locks.LostError) as err:
        await w
    assert err.value.reason == tenure_locks.REASON_MAXHOLD and not err.value.from_store
    # The store's cap is max_hold after the grant, which came before
    # granted_by; the holder's must be a margin before it (2 ms for the
    # store's milliseconds). Counted from the retry, it would be 0.5 s later.
    assert caps[0] <= granted_by[0] + 1.0 - via_proxy.margin + 0.002, \
        f"the holder's cap is {caps[0] - granted_by[0]:.3f}s after the grant, the store's at most 1s"
