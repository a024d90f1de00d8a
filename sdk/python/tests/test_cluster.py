"""The SDK over redis-py's RedisCluster, on three tenure nodes (SPEC §10): a
plain RedisCluster works unmodified through a follower's address; a hold,
a fenced write and renewals go to the leader; a leader killed mid-hold
loses the lease (LOCK-10, LOCK-14) and the next hold, on the new leader, gets
a larger fence from a newer epoch."""

import asyncio
import time

import pytest
import redis
from redis.asyncio.cluster import ClusterNode, RedisCluster

import tenure_locks
from conftest import close_client, key_info, until


def open_cluster(cluster, first: int = 0) -> RedisCluster:
    """A RedisCluster that knows every node, the one at first listed first."""
    order = cluster.ports[first:] + cluster.ports[:first]
    return RedisCluster(startup_nodes=[ClusterNode("127.0.0.1", p) for p in order],
                        require_full_coverage=True, socket_timeout=4)


async def test_redis_cluster_works_unmodified_through_a_follower(cluster, clients):
    leader = await cluster.leader()
    follower = (leader + 1) % 3
    direct = clients("127.0.0.1", cluster.ports[follower])
    # redis-py 4.3 keeps the MOVED code word in the message; later ones
    # raise a MovedError (a ResponseError) without it.
    with pytest.raises(redis.ResponseError, match=f"^(MOVED )?[0-9]+ 127.0.0.1:{cluster.ports[leader]}$"):
        await direct.set("greeting", "hello")

    rc = RedisCluster(host="127.0.0.1", port=cluster.ports[follower])  # as a user would make it
    try:
        assert await rc.set("greeting", "hello")
        assert await rc.get("greeting") == b"hello"
        assert rc.get_node_from_key("greeting").port == cluster.ports[leader]
    finally:
        await close_client(rc)


async def test_a_store_wants_full_coverage(cluster):
    # False is redis-py 4.3's default; later ones default to True.
    rc = RedisCluster(host="127.0.0.1", port=cluster.ports[0], require_full_coverage=False)
    try:
        with pytest.raises(ValueError, match="require_full_coverage=True"):
            tenure_locks.Store(rc)
    finally:
        await close_client(rc)


async def test_hold_release_and_renewals_over_a_cluster(cluster):
    leader = await cluster.leader()
    rc = open_cluster(cluster, first=(leader + 1) % 3)  # a follower first: MOVED is followed
    try:
        jobs = tenure_locks.Store(rc).lock("jobs", ttl="1s")
        assert jobs.chunk == pytest.approx(2.0)  # half the cluster's socket timeout
        async with jobs.hold("k") as lease:
            assert await rc.execute_command("SET", "out", "a", "FENCE", lease.fence) is True
            first_deadline = lease.deadline

            async def renewed() -> bool:
                return lease.deadline > first_deadline + 0.2

            await until("a renewal through the cluster", renewed, timeout=10)
            assert lease.lost is None
        assert await rc.get("out") == b"a"
        assert await key_info(rc, "jobs", "k") is None  # released on the leader
        async with jobs.try_hold("k") as again:  # the next holder at once
            assert again.fence > lease.fence
    finally:
        await close_client(rc)


async def test_a_failover_loses_the_lease_and_the_next_fence_is_larger(cluster):
    """SIGKILL of the leader mid-hold: the block is cancelled (its next
    renewal cannot reach a leader that holds the lease) and leaving it raises
    LostError; a new hold on the new leader gets a fence of a newer epoch."""
    leader = await cluster.leader()
    rc = open_cluster(cluster)
    try:
        jobs = tenure_locks.Store(rc).lock("jobs", ttl="1s")
        first = None
        cancelled = False
        with pytest.raises(tenure_locks.LostError) as err:
            async with jobs.hold("k") as lease:
                first = lease.fence
                cluster.kill(leader)
                try:
                    await asyncio.sleep(60)
                except asyncio.CancelledError:
                    cancelled = True
                    raise
        assert cancelled, "the block was not cancelled"
        # By the holder's own deadline, or -LOST from the new leader.
        assert err.value.reason in (tenure_locks.REASON_EXPIRED, tenure_locks.REASON_UNKNOWN_LEASE), err.value

        await cluster.leader()
        second = None
        give_up = time.monotonic() + 30
        while second is None:  # until the client's routing finds the new leader
            try:
                async with jobs.hold("k") as lease:
                    second = lease.fence
            except (redis.RedisError, OSError):
                if time.monotonic() > give_up:
                    raise
                await asyncio.sleep(0.1)
        assert second > first, f"fence {second} after the failover, {first} before (LOCK-14)"
        assert second >> 32 > first >> 32, "a new epoch"
    finally:
        await close_client(rc)
