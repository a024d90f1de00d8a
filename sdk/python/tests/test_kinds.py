"""Semaphores, readers and owners (SPEC §12), against the real server: a
permit and a reader are leases as any, held, renewed, lost and let go by
the rules of §8 (LOCK-01, LOCK-08, LOCK-15, LOCK-16)."""

import asyncio
import os
import re
import socket
from typing import Any, Dict, List

import pytest
import redis

import tenure_locks
from conftest import key_info, lock_stats, until, waiters_are


def text(v: Any) -> Any:
    return v.decode() if isinstance(v, bytes) else v


async def holders(c, lock: str, key: str) -> List[Dict[str, Any]]:
    """LOCK.HOLDERS lock key: every live lease, oldest first, as dicts."""
    out = []
    for e in await c.execute_command("LOCK.HOLDERS", lock, key):
        pairs = e.items() if isinstance(e, dict) else zip(e[::2], e[1::2])  # RESP3 map or RESP2 pairs
        out.append({text(k): text(v) for k, v in pairs})
    return out


async def test_limit_honoured_with_concurrent_holders(server, admin, clients):
    """LOCK-01: 10 holds of a LIMIT 3 key run at most 3 at once, and do
    overlap; each permit its own fence."""
    store = tenure_locks.Store(clients(server.host, server.port))
    llm = store.lock("llm", limit=3, ttl="1s")
    running = most = 0
    fences = set()

    async def call() -> None:
        nonlocal running, most
        async with llm.hold("openai") as permit:
            running += 1
            most = max(most, running)
            assert permit.fence not in fences
            fences.add(permit.fence)
            await asyncio.sleep(0.1)
            running -= 1

    await asyncio.gather(*(call() for _ in range(10)))
    assert most == 3, f"at most {most} holders at once, want 3"
    assert len(fences) == 10
    assert await key_info(admin, "llm", "openai") is None, "every permit released"


async def test_revoked_permit_cancels_its_holder_alone(server, admin, clients):
    """LOCK.REVOKE … FENCE f ends one permit: its block is cancelled and
    leaving it raises LostError (revoked by admin), although the block
    caught the cancellation and finished; the other permit holds on."""
    store = tenure_locks.Store(clients(server.host, server.port))
    llm = store.lock("llm", limit=2, ttl="2s")
    other_held, other_end = asyncio.Event(), asyncio.Event()
    other_fence = 0

    async def other() -> None:
        nonlocal other_fence
        async with llm.hold("k") as lease:
            other_fence = lease.fence
            other_held.set()
            await other_end.wait()
            assert lease.lost is None

    other_task = asyncio.create_task(other())
    await other_held.wait()
    cancelled = False
    with pytest.raises(tenure_locks.LostError) as err:
        async with llm.hold("k") as lease:
            assert await admin.execute_command("LOCK.REVOKE", "llm", "k", "FENCE", lease.fence) == 1
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                cancelled = True  # swallowed: the block finishes "successfully"
    assert cancelled
    assert err.value.reason == tenure_locks.REASON_REVOKED and err.value.from_store
    info = await key_info(admin, "llm", "k")
    assert info is not None and info["holders"] == 1 and info["fence"] == other_fence
    other_end.set()
    await other_task


@pytest.mark.parametrize("kind", ["permit", "reader"])
async def test_permit_and_reader_renewed_and_released_on_exception(server, admin, clients, kind):
    """A permit or a reader is renewed through a block that outlives its
    ttl, and released when the block raises."""
    store = tenure_locks.Store(clients(server.host, server.port))
    lk = store.lock("kinds", ttl="1s", limit=2 if kind == "permit" else None)
    shared = kind == "reader"
    with pytest.raises(ValueError, match="the block's own"):
        async with lk.hold("k", shared=shared):
            raise ValueError("the block's own")
    assert await key_info(admin, "kinds", "k") is None, "released on exception"
    fences = set()
    async with lk.hold("k", shared=shared) as lease:
        for _ in range(5):
            await asyncio.sleep(0.4)
            info = await key_info(admin, "kinds", "k")
            assert info is not None
            fences.add(info["fence"])
        assert lease.lost is None
    assert fences == {lease.fence}, "one lease through 2 s of a 1 s ttl"
    assert await key_info(admin, "kinds", "k") is None, "released on return"


async def test_readers_overlap_and_a_writer_never(server, admin, clients):
    """LOCK-01: readers share the key; a writer never runs beside anyone."""
    store = tenure_locks.Store(clients(server.host, server.port))
    reports = store.lock("reports", ttl="1s")
    readers = writers = most_readers = 0
    bad: List[str] = []

    async def one(writer: bool) -> None:
        nonlocal readers, writers, most_readers
        async with reports.hold("q3", shared=not writer):
            if writer:
                writers += 1
            else:
                readers += 1
                most_readers = max(most_readers, readers)
            if writers > 1 or (writers == 1 and readers > 0):
                bad.append(f"{writers} writers beside {readers} readers")
            await asyncio.sleep(0.03)
            if writer:
                writers -= 1
            else:
                readers -= 1

    tasks = []
    for i in range(16):
        tasks.append(asyncio.create_task(one(writer=i % 5 == 2)))
        await asyncio.sleep(0.003)
    await asyncio.gather(*tasks)
    assert bad == []
    assert most_readers >= 2, f"readers never overlapped (at most {most_readers})"


async def test_shared_try_hold_does_not_pass_a_waiting_writer(server, admin, clients):
    """LOCK-08: a reader's try_hold beside a reader is granted, but not
    while a writer waits; a writer's try_hold does not pass readers."""
    store = tenure_locks.Store(clients(server.host, server.port))
    reports = store.lock("reports")
    held, end = asyncio.Event(), asyncio.Event()

    async def reader() -> None:
        async with reports.hold("q3", shared=True):
            held.set()
            await end.wait()

    async def writer() -> None:
        async with reports.hold("q3"):
            pass

    r = asyncio.create_task(reader())
    await held.wait()
    async with reports.try_hold("q3", shared=True):
        pass
    with pytest.raises(tenure_locks.NotHeldError):
        async with reports.try_hold("q3"):
            pytest.fail("a writer beside a reader")
    w = asyncio.create_task(writer())
    await waiters_are(admin, "reports", "q3", 1)
    with pytest.raises(tenure_locks.NotHeldError):
        async with reports.try_hold("q3", shared=True):
            pytest.fail("a reader passed a waiting writer")
    end.set()
    await asyncio.gather(r, w)


async def test_owner_shown_by_info_and_holders(server, admin, clients):
    """LOCK-16: the owner is what LOCK.INFO and LOCK.HOLDERS show of a
    holder; hostname:pid by default."""
    store = tenure_locks.Store(clients(server.host, server.port))
    for opts, want in [({"owner": "worker-7"}, "worker-7"),
                       ({}, f"{socket.gethostname()}:{os.getpid()}"),
                       ({"limit": 4, "owner": "permit-holder"}, "permit-holder")]:
        async with store.lock("summaries", **opts).hold("chat-42") as lease:
            info = await key_info(admin, "summaries", "chat-42")
            assert info is not None
            assert text(info["owner"]) == want and info["fence"] == lease.fence
            assert info["limit"] == opts.get("limit", 1)
    a = store.lock("summaries", limit=2, owner="worker-a")
    b = store.lock("summaries", limit=2, owner="worker-b")
    async with a.hold("chat-43") as la, b.hold("chat-43") as lb:
        hs = await holders(admin, "summaries", "chat-43")
        assert [(h["owner"], h["fence"]) for h in hs] == [("worker-a", la.fence), ("worker-b", lb.fence)]
    r1, r2 = store.lock("summaries", owner="reader-1"), store.lock("summaries", owner="reader-2")
    async with r1.hold("chat-44", shared=True), r2.hold("chat-44", shared=True):
        hs = await holders(admin, "summaries", "chat-44")
        assert [(h["owner"], h["shared"]) for h in hs] == [("reader-1", 1), ("reader-2", 1)]


async def test_limit_mismatch_is_the_stores_refusal(server, admin, clients):
    """LOCK-15: a hold whose limit disagrees with the key's raises the
    store's ResponseError on entering (as a read-only user's NOPERM does),
    runs nothing, and changes nothing."""
    store = tenure_locks.Store(clients(server.host, server.port))
    sem, plain, other = store.lock("llm", limit=3), store.lock("llm"), store.lock("llm", limit=5)
    async with sem.hold("k") as lease:
        for h in (plain.hold("k"), other.hold("k"), plain.try_hold("k", shared=True)):
            with pytest.raises(redis.ResponseError, match="this key is in use with LIMIT 3"):
                async with h:
                    pytest.fail("the block ran")
        info = await key_info(admin, "llm", "k")
        assert info is not None and info["holders"] == 1 and info["fence"] == lease.fence
    async with plain.hold("k"):
        with pytest.raises(redis.ResponseError, match="in use without LIMIT"):
            async with sem.try_hold("k"):
                pytest.fail("the block ran")


async def test_kind_options_are_checked_before_anything_is_sent(server, admin, clients):
    store = tenure_locks.Store(clients(server.host, server.port))
    for bad in (0, -1, 65537, True, 1.5):
        with pytest.raises(ValueError, match="limit .*: must be an integer from 1 to 65536"):
            store.lock("l", limit=bad)  # type: ignore[arg-type]
    for owner in ("", "o" * 257, "é" * 129):
        with pytest.raises(ValueError, match="must be 1 to 256 bytes"):
            store.lock("l", owner=owner)
    store.lock("l", limit=65536, owner="o" * 256)
    assert store.lock("l", limit=1).limit is None, "LIMIT 1 is the same as none"
    stats = await lock_stats(admin)
    with pytest.raises(ValueError, match="a lock with a limit has no shared holds"):
        async with store.lock("l", limit=2).hold("k", shared=True):
            pytest.fail("the block ran")
    assert (await lock_stats(admin))["grants_total"] == stats["grants_total"]


async def test_swallowed_hold_reply_of_a_permit_or_reader_gives_one_grant(server, proxy, clients, admin):
    """LOCK-03: a permit's or a reader's HOLD whose grant reply is lost is
    asked again with the same reqid, and its LIMIT or SHARED: the same
    lease, one grant."""
    c = clients("127.0.0.1", proxy.port, socket_timeout=1.0)
    store = tenure_locks.Store(c)
    for lk, shared, key in [(store.lock("swallow", limit=2, ttl="5s"), False, "permit"),
                            (store.lock("swallow", ttl="5s"), True, "reader")]:
        proxy.swallowed.clear()
        proxy.swallow = (lambda req, reply: b"LOCK.HOLD" in req.upper()[:40] and reply.startswith(b"*3")
                         and not proxy.swallowed)
        grants = (await lock_stats(admin))["grants_total"]
        async with lk.hold(key, shared=shared) as lease:
            assert len(proxy.swallowed) == 1
            info = await key_info(admin, "swallow", key)
            assert info is not None and info["holders"] == 1 and info["fence"] == lease.fence
        holds = [r for r in proxy.requests if key.encode() in r and b"LOCK.HOLD" in r.upper()[:40]]
        assert len(holds) >= 2
        assert all((b"LIMIT" in r) != shared and (b"SHARED" in r) == shared for r in holds)
        assert len({re.findall(rb"\$32\r\n([0-9a-f]{32})\r\n", r)[0] for r in holds}) == 1
        assert (await lock_stats(admin))["grants_total"] == grants + 1
    await until("nothing held", lambda: _free(admin))


async def _free(admin) -> bool:
    return await key_info(admin, "swallow", "permit") is None and await key_info(admin, "swallow", "reader") is None
