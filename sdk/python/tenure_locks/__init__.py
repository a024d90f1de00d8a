"""tenure_locks: the Python SDK of tenure's lock module, leases with fencing
tokens over redis-py's ``redis.asyncio``::

    store = tenure_locks.Store(redis_client)      # a redis.asyncio.Redis, or a RedisCluster
    summaries = store.lock("summaries", ttl="30s")

    async with summaries.hold(chat_id) as lease:  # a lost lease cancels the block at its next await
        text = await model.summarize(messages)
        await save_summary(chat_id, text, lease.fence)

What it is for: making sure that, most of the time, one worker does a piece
of work, and learning when that could not be made sure. What it is not for:
a lease cannot stop code that does not await, nor a write already on the
wire. Whatever the block writes to must check the fence (tenure's own keys
with ``SET … FENCE``, LOCK-12). See README.md beside this package.
"""

from ._errors import (REASON_EXPIRED, REASON_MAXHOLD, REASON_RELEASED, REASON_REVOKED,
                      REASON_UNKNOWN_LEASE, LostError, NotHeldError)
from ._election import Leader
from ._lease import Lease
from ._lock import Holding, Lock, Store

__all__ = [
    "Store", "Lock", "Lease", "Holding", "Leader", "LostError", "NotHeldError",
    "REASON_EXPIRED", "REASON_MAXHOLD", "REASON_REVOKED", "REASON_RELEASED", "REASON_UNKNOWN_LEASE",
]
