"""Elections (SPEC §12), against the real server: campaign is a hold with
the value as owner, leader reads LOCK.INFO, observe follows LOCK.WATCH
(LOCK-17) through cut connections and restarts, never yielding an older
term (LOCK-02)."""

import asyncio
import contextlib
from typing import AsyncIterator, Optional

import pytest

import tenure_locks
from tenure_locks import Leader
from conftest import lock_stats, until, waiters_are


class Candidate:
    """A task campaigning for key with value until resign is set; leading
    gets its lease; cancelled says whether a lost leadership cancelled it."""

    def __init__(self, lock: tenure_locks.Lock, key: str, value: str):
        self.leading: asyncio.Future[tenure_locks.Lease] = asyncio.get_running_loop().create_future()
        self.resign = asyncio.Event()
        self.cancelled = False
        self.task = asyncio.create_task(self._run(lock, key, value))

    async def _run(self, lock: tenure_locks.Lock, key: str, value: str) -> None:
        async with lock.campaign(key, value) as lease:
            self.leading.set_result(lease)
            try:
                await self.resign.wait()
            except asyncio.CancelledError:
                self.cancelled = True
                raise

    async def leads(self, timeout: float = 5.0) -> tenure_locks.Lease:
        return await asyncio.wait_for(asyncio.shield(self.leading), timeout)

    async def done(self, timeout: float = 5.0) -> None:
        await asyncio.wait_for(asyncio.shield(self.task), timeout)


async def next_leader(obs: AsyncIterator[Optional[Leader]], timeout: float = 15.0) -> Optional[Leader]:
    return await asyncio.wait_for(obs.__anext__(), timeout)


async def test_observe_none_then_a_then_b(server, admin, clients):
    """LOCK-17: observe yields none, then A, then B with a larger term when
    A resigns and B waited in line; leader agrees at each step."""
    lock = tenure_locks.Store(clients(server.host, server.port)).lock("sched", ttl="5s")
    assert await lock.leader("main") is None
    async with contextlib.aclosing(lock.observe("main")) as obs:
        assert await next_leader(obs, timeout=2) is None, "the leader now comes first, at once"
        a = Candidate(lock, "main", "node-a:8080")
        la = await a.leads()
        assert await next_leader(obs) == Leader("node-a:8080", la.fence)
        b = Candidate(lock, "main", "node-b:8080")
        await waiters_are(admin, "sched", "main", 1)
        assert await lock.leader("main") == Leader("node-a:8080", la.fence), "A leads while B waits"

        a.resign.set()
        await a.done()
        lb = await b.leads()
        ld = await next_leader(obs)
        assert ld == Leader("node-b:8080", lb.fence)
        assert ld.fence > la.fence, f"B's term {ld.fence} after A's {la.fence}"
        assert await lock.leader("main") == ld

        b.resign.set()
        await b.done()
        assert await next_leader(obs) is None


async def test_revoked_leader_is_cancelled_and_lost(server, admin, clients):
    """A leader whose lease is revoked (LOCK.REVOKE) is cancelled as every
    holder is, and its campaign raises LostError; observers see it go."""
    lock = tenure_locks.Store(clients(server.host, server.port)).lock("sched", ttl="5s")
    async with contextlib.aclosing(lock.observe("main")) as obs:
        assert await next_leader(obs) is None
        a = Candidate(lock, "main", "A")
        la = await a.leads()
        assert (await next_leader(obs)) == Leader("A", la.fence)
        assert await admin.execute_command("LOCK.REVOKE", "sched", "main") == 1
        with pytest.raises(tenure_locks.LostError) as lost:
            await a.done()
        assert lost.value.reason == tenure_locks.REASON_REVOKED
        assert a.cancelled, "the revoked leader's block was not cancelled"
        assert await next_leader(obs) is None


async def test_observer_outlives_cut_connections(server, admin, clients):
    """LOCK-17: an observer whose connection is cut (CLIENT KILL) watches
    again with its last fence and misses no change."""
    lock = tenure_locks.Store(clients(server.host, server.port)).lock("sched")
    async with contextlib.aclosing(lock.observe("main")) as obs:
        assert await next_leader(obs) is None
        top = 0
        for round in range(3):
            # The observer watches again once asked for the next leader.
            coming = asyncio.ensure_future(next_leader(obs))

            async def watching() -> bool:
                return (await lock_stats(admin))["watchers"] == 1

            await until("the observer watching", watching)
            killed = await admin.execute_command("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes")
            assert killed > 0
            a = Candidate(lock, "main", f"A{round}")
            la = await a.leads()
            ld = await coming
            assert ld == Leader(f"A{round}", la.fence), f"round {round}"
            assert ld.fence > top
            top = ld.fence
            a.resign.set()
            await a.done()
            assert await next_leader(obs) is None


async def test_observer_outlives_restart(server, clients):
    """LOCK-17: an observer outlives a restart of the store (the binary
    killed and started again on its port and directory): none, then the new
    leader, in a later epoch."""
    lock = tenure_locks.Store(clients(server.host, server.port)).lock("sched", ttl="2s")
    async with contextlib.aclosing(lock.observe("main")) as obs:
        assert await next_leader(obs) is None
        a = Candidate(lock, "main", "A")
        la = await a.leads()
        assert (await next_leader(obs)) == Leader("A", la.fence)

        server.proc.kill()
        server.proc.wait()
        server.start()
        with pytest.raises(tenure_locks.LostError):
            await a.done(15)
        assert await next_leader(obs) is None
        b = Candidate(lock, "main", "B")
        lb = await b.leads(10)
        ld = await next_leader(obs)
        assert ld == Leader("B", lb.fence)
        assert ld.fence >> 32 > la.fence >> 32, f"B's term {ld.fence} in a later epoch than A's {la.fence}"
        b.resign.set()
        await b.done()


async def test_campaign_checks_value_and_waits_its_turn(server, clients):
    """A campaign's value is 1 to 256 bytes; a campaign waits in line
    though its lock says wait=0."""
    lock = tenure_locks.Store(clients(server.host, server.port)).lock("sched", wait=0)
    for bad in ("", "x" * 257):
        with pytest.raises(ValueError):
            lock.campaign("main", bad)
    a = Candidate(lock, "main", "A")
    await a.leads()
    b = Candidate(lock, "main", "B")
    await asyncio.sleep(0.3)
    assert not b.leading.done()
    a.resign.set()
    await b.leads()
    assert (await lock.leader("main")) == Leader("B", (await b.leads()).fence)
    b.resign.set()
    await a.done()
    await b.done()


async def test_observe_refused_raises(tenure_bin, tmp_path, clients):
    """A refusal no retry cures ends observe with the store's error rather
    than retrying for ever: here a password the store refuses (-WRONGPASS)."""
    from conftest import Server, users_file
    from redis.exceptions import AuthenticationError, ResponseError

    users = users_file(tmp_path / "users", {"ro": ("read", "pw")})
    s = Server(tenure_bin, tmp_path, users=users)
    s.start()
    try:
        ok = tenure_locks.Store(clients(s.host, s.port, username="ro", password="pw")).lock("sched")
        async with contextlib.aclosing(ok.observe("main")) as obs:
            assert await next_leader(obs) is None, "a read user may watch"
        bad = tenure_locks.Store(clients(s.host, s.port, username="ro", password="wrong")).lock("sched")
        async with contextlib.aclosing(bad.observe("main")) as obs:
            with pytest.raises((AuthenticationError, ResponseError)):
                await next_leader(obs, timeout=25)
    finally:
        s.stop()
