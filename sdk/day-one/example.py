"""The Python SDK's example of SPEC §8 as a user writes it on day one: make
sdks installs the wheel into a fresh venv and runs it there against a real
server; make test-python checks it with mypy --strict against the installed
wheel's type hints.
It holds a chat's key while a stand-in model summarizes, saves the summary
with the lease's fence, then shows the two errors a user handles: try_hold
on a held key (NotHeldError) and a lease revoked while its block runs
(LostError, with the store's reason).

    python example.py 127.0.0.1:6379
"""

import asyncio
import sys

import redis.asyncio as redis

import tenure_locks


class Model:
    """Stands in for the user's slow call."""

    async def summarize(self, messages: list[str]) -> str:
        await asyncio.sleep(0.05)
        return " / ".join(messages)


async def main(host: str, port: int) -> None:
    redis_client = redis.Redis(host=host, port=port)
    model, chat_id, messages = Model(), "chat-42", ["hi", "hello"]

    async def save_summary(chat_id: str, text: str, fence: int) -> None:
        await redis_client.execute_command("SET", f"summary:{chat_id}", text, "FENCE", fence)

    # The seed's example, as SPEC §8 has it.
    store = tenure_locks.Store(redis_client)      # a redis.asyncio.Redis
    summaries = store.lock("summaries", ttl="30s")

    async with summaries.hold(chat_id) as lease:  # a lost lease cancels the block at its next await
        text = await model.summarize(messages)
        await save_summary(chat_id, text, lease.fence)

    saved = await redis_client.get(f"summary:{chat_id}")
    assert saved == b"hi / hello", saved
    print("python: held, saved with the fence:", saved.decode())

    # try_hold on a key this task holds: NotHeldError, the block not run.
    async with summaries.hold(chat_id):
        try:
            async with summaries.try_hold(chat_id):
                raise AssertionError("ran on a held key")
        except tenure_locks.NotHeldError as e:
            print("python: try_hold on a held key:", e)

    # An admin's revoke cancels the block at its next await; leaving it
    # raises LostError with the store's reason.
    try:
        async with summaries.hold(chat_id):
            await redis_client.execute_command("LOCK.REVOKE", "summaries", chat_id)
            await asyncio.sleep(20)
        raise AssertionError("the block was not cancelled by the revoke")
    except tenure_locks.LostError as e:
        assert e.reason == tenure_locks.REASON_REVOKED, e.reason
        print("python: revoked while held:", e)

    close = getattr(redis_client, "aclose", None) or redis_client.close  # aclose since redis-py 5.0.1
    await close()


if __name__ == "__main__":
    host, _, port = sys.argv[1].rpartition(":")
    asyncio.run(main(host, int(port)))
