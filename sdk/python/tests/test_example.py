"""The seed's example, and renewals through a block that outlives its ttl."""

import asyncio
import time

import tenure_locks
from conftest import key_info, lock_stats


async def test_seed_example(server, admin):
    store = tenure_locks.Store(admin)
    summaries = store.lock("summaries", ttl="30s")
    chat_id, messages = "chat-42", ["hi", "hello"]

    async def summarize(msgs):
        await asyncio.sleep(0.05)
        return " / ".join(msgs)

    async def save_summary(chat, text, fence):
        assert await admin.execute_command("SET", f"summary:{chat}", text, "FENCE", fence)

    async with summaries.hold(chat_id) as lease:  # a lost lease cancels the block at its next await
        text = await summarize(messages)
        await save_summary(chat_id, text, lease.fence)
        assert lease.lost is None
        assert lease.fence >> 32 == 1  # epoch 1 of a new data dir (SPEC §2)
        assert 27 < lease.deadline - time.monotonic() < 30  # ttl less the 2 s margin
    assert await admin.get("summary:chat-42") == b"hi / hello"
    assert await key_info(admin, "summaries", chat_id) is None  # released on the way out
    # A late write with an older fence is refused (LOCK-12).
    try:
        await admin.execute_command("SET", "summary:chat-42", "late", "FENCE", lease.fence - 1)
        raise AssertionError("an older fence wrote")
    except Exception as e:
        assert str(e).startswith("FENCED")


async def test_renewals_through_a_block_four_ttls_long(server, admin):
    lk = tenure_locks.Store(admin).lock("long", ttl="1s")
    before = (await lock_stats(admin))["renewals_total"]
    async with lk.hold("k") as lease:
        fence = lease.fence
        for _ in range(40):
            await asyncio.sleep(0.1)
            assert lease.lost is None
            info = await key_info(admin, "long", "k")
            assert info is not None and info["fence"] == fence
    renewals = (await lock_stats(admin))["renewals_total"] - before
    assert renewals >= 8, f"{renewals} renewals in 4 s of a 1 s ttl, want one each ttl/3"
    assert await key_info(admin, "long", "k") is None
