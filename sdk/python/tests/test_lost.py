"""A lost lease (admin revoke, restart, MAXHOLD, expiry, a frozen holder)
cancels the block at its next await, and leaving the block raises LostError
with the store's reason, also when the block had already finished (SPEC §4,
§8)."""

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest
import redis

import tenure_locks
from conftest import CHILD_PYTHONPATH


async def cancelled_at_next_await(cause):
    """The block of the 'awaiting' variant: it awaits the cause, then
    something long, and returns how long it took to be cancelled."""
    started = time.monotonic()
    await cause()
    try:
        await asyncio.sleep(30)
    except asyncio.CancelledError:
        return time.monotonic() - started
    raise AssertionError("the block was not cancelled")


@pytest.mark.parametrize("block", ["awaiting", "finished", "raised"])
async def test_admin_revoke(server, admin, block):
    lk = tenure_locks.Store(admin).lock("revoked", ttl="1s")
    took = None
    with pytest.raises(tenure_locks.LostError) as err:
        async with lk.hold("k"):
            if block == "awaiting":
                async def revoke():
                    assert await admin.execute_command("LOCK.REVOKE", "revoked", "k") == 1
                took = await cancelled_at_next_await(revoke)
            else:
                # The block never awaits after the revoke: no renewal runs,
                # and the final RELEASE learns it.
                def revoke_from_a_thread():
                    r = redis.Redis(host=server.host, port=server.port)
                    assert r.execute_command("LOCK.REVOKE", "revoked", "k") == 1
                    r.close()
                t = threading.Thread(target=revoke_from_a_thread)
                t.start()
                t.join()
                if block == "raised":
                    raise ValueError("the block's own")
    assert err.value.reason == tenure_locks.REASON_REVOKED and err.value.from_store
    if block == "raised":  # the block's exception travels with the LostError
        assert isinstance(err.value.__context__, ValueError)
    if block == "awaiting":
        assert took < 1.0, f"cancelled {took:.3f}s after the revoke, want by the next renewal (ttl/3)"


@pytest.mark.parametrize("block", ["awaiting", "finished", "stalled"])
async def test_restart(server, admin, clients, block):
    """Restarted: "unknown lease", also when the holder's own deadline had
    passed first ("stalled"): the new epoch tells more than "expired"."""
    c = clients(server.host, server.port)
    lk = tenure_locks.Store(c).lock("restarted", ttl="2s")
    took = None
    with pytest.raises(tenure_locks.LostError) as err:
        async with lk.hold("k") as lease:
            fence = lease.fence
            if block == "awaiting":
                async def restart():
                    await asyncio.to_thread(server.restart)
                took = await cancelled_at_next_await(restart)
            else:
                server.restart()  # blocking: the block finishes with no await after it
                if block == "stalled":
                    time.sleep(2.2)  # past the ttl
                    assert lease.lost is not None and lease.lost.reason == tenure_locks.REASON_EXPIRED
    assert err.value.reason == tenure_locks.REASON_UNKNOWN_LEASE and err.value.from_store
    if block == "awaiting":
        assert took < 2.0
    async with lk.hold("k") as lease:
        assert lease.fence > fence and lease.fence >> 32 == 2  # a new epoch (LOCK-02)


@pytest.mark.parametrize("overrun", [0.0, 0.2, 2.0])
async def test_max_hold(server, admin, overrun):
    """Revoked at MAXHOLD; the reason stands however long the block overruns
    the cap (the store forgets the ended lease a ttl later)."""
    lk = tenure_locks.Store(admin).lock("capped", ttl="1s", max_hold="1s")
    with pytest.raises(tenure_locks.LostError) as err:
        async with lk.hold("k") as lease:
            granted = time.monotonic()
            if overrun == 0.0:
                took = await cancelled_at_next_await(lambda: asyncio.sleep(0))
                assert 0.8 < took < 1.0 + 0.5, f"cancelled at {took:.3f}s of a 1s max_hold"
            else:
                time.sleep(1.0 + overrun)  # blocking: no renewal, no cancellation
            assert lease.lost is not None
    assert err.value.reason == tenure_locks.REASON_MAXHOLD
    assert time.monotonic() - granted >= 0.8


@pytest.mark.parametrize("overrun", [0.2, 2.0])
async def test_expired_reason_stands(server, admin, overrun):
    """A block that does not await for longer than the ttl: its lease
    expired, and that is the reason, also after the store forgot it."""
    lk = tenure_locks.Store(admin).lock("stalled", ttl="1s")
    with pytest.raises(tenure_locks.LostError) as err:
        async with lk.hold("k"):
            time.sleep(1.0 + overrun)
    assert err.value.reason == tenure_locks.REASON_EXPIRED and not err.value.from_store


FROZEN_CHILD = r"""
import asyncio, json, sys, time
import redis.asyncio as aredis
import tenure_locks

async def main(port, block):
    c = aredis.Redis(host="127.0.0.1", port=port)
    lk = tenure_locks.Store(c).lock("frozen", ttl="1s")
    out = {}
    try:
        async with lk.hold("k") as lease:
            out["fence"] = lease.fence
            print(json.dumps({"held": lease.fence}), flush=True)
            if block == "awaiting":
                try:
                    await asyncio.sleep(30)
                except asyncio.CancelledError:
                    out["cancelled"] = True
                    raise
            else:
                sys.stdin.readline()  # blocking; the parent stops and resumes us meanwhile
                out["finished"] = True
    except tenure_locks.LostError as e:
        out["lost"] = e.reason
    await (c.aclose() if hasattr(c, "aclose") else c.close())
    print(json.dumps(out), flush=True)

asyncio.run(main(int(sys.argv[1]), sys.argv[2]))
"""


@pytest.mark.parametrize("block", ["awaiting", "finished"])
async def test_frozen_holder(server, admin, block):
    """A holder frozen with SIGSTOP stops renewing: its key goes to the next
    in line within the ttl, with a larger fence; once resumed, the holder's
    block is cancelled and its hold raises LostError("expired")."""
    child = subprocess.Popen([sys.executable, "-c", FROZEN_CHILD, str(server.port), block],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                             env={**os.environ, "PYTHONPATH": CHILD_PYTHONPATH})
    try:
        held = json.loads(await asyncio.to_thread(child.stdout.readline))
        child.send_signal(signal.SIGSTOP)
        frozen = time.monotonic()
        lk = tenure_locks.Store(admin).lock("frozen", ttl="1s")
        async with lk.hold("k") as lease:
            took = time.monotonic() - frozen
            assert lease.fence > held["held"]
        assert took < 1.0 + 0.5, f"the frozen holder's key came back after {took:.3f}s, ttl 1s"
        child.send_signal(signal.SIGCONT)
        if block == "finished":
            child.stdin.write("go on\n")
            child.stdin.flush()
        out = json.loads(await asyncio.to_thread(child.stdout.readline))
        assert out.get("lost") == tenure_locks.REASON_EXPIRED
        assert out.get("cancelled" if block == "awaiting" else "finished")
        assert await asyncio.to_thread(child.wait, 10) == 0
    finally:
        if child.poll() is None:
            child.send_signal(signal.SIGCONT)
            child.kill()
            child.wait()
        child.stdin.close()
        child.stdout.close()


async def test_expired_reason_stands_against_the_stores_max_hold(server, proxy, clients, admin):
    """The renewals' replies are lost from the block's start: the store
    takes them, so its lease lives on to its max_hold (1.5 s), while the
    holder gives the lease up at its own deadline, "expired". The block
    catches that and goes on until the store has revoked the lease; the
    final RELEASE is answered "revoked maxhold", which is how the store
    itself ends a lease: the holder's reason stands."""
    c = clients("127.0.0.1", proxy.port, socket_timeout=0.2)
    lk = tenure_locks.Store(c).lock("renewals-lost", ttl="1s", max_hold="1.5s")
    released = []

    def swallow(request: bytes, reply: bytes) -> bool:
        if b"LOCK.RELEASE" in request.upper()[:40]:
            released.append(reply)
        return b"LOCK.RENEW" in request.upper()[:40]

    with pytest.raises(tenure_locks.LostError) as err:
        async with lk.hold("k") as lease:
            granted = time.monotonic()
            proxy.swallow = swallow
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                assert lease.lost is not None and lease.lost.reason == tenure_locks.REASON_EXPIRED
            await asyncio.sleep(max(0.0, granted + 1.8 - time.monotonic()))  # past the store's max_hold
    assert released == [b"-LOST revoked maxhold\r\n"]
    assert err.value.reason == tenure_locks.REASON_EXPIRED and not err.value.from_store
