"""The errors a hold raises, and how the store's error replies are read."""

from __future__ import annotations

from typing import Optional

from redis.exceptions import (AskError, AuthenticationError, ClusterDownError, MovedError, ResponseError,
                              TryAgainError)

# Reasons a lease is lost, as the store spells them after "-LOST " (SPEC §4).
REASON_EXPIRED = "expired"
REASON_MAXHOLD = "revoked maxhold"
REASON_REVOKED = "revoked by admin"
REASON_RELEASED = "released"
REASON_UNKNOWN_LEASE = "unknown lease"


class LostError(Exception):
    """The lease was lost before the block ended, so another holder may have
    held the key beside it: a renewal was answered -LOST, the holder's
    deadline passed without one, or the final RELEASE found the lease already
    ended. Leaving the block raises it even when the block completed.

    ``reason`` is one of the ``REASON_*`` constants: the store's word when it
    answered -LOST, else ``"expired"`` or ``"revoked maxhold"`` for the
    holder's own deadline (or its max_hold cap) passing first; ``from_store``
    says which. ``error`` is the last renewal's failure when the deadline
    passed after failed renewals.
    """

    def __init__(self, reason: str, from_store: bool, error: Optional[BaseException] = None):
        self.reason = reason
        self.from_store = from_store
        self.error = error
        text = f"tenure_locks: lease lost: {reason}"
        if not from_store:
            text += " (holder's deadline passed"
            if error is not None:
                text += f"; last renewal: {error!r}"
            text += ")"
        super().__init__(text)


class NotHeldError(Exception):
    """The block did not run because the key was not held: ``try_hold`` found
    it held, the ``wait`` elapsed, or the grant ended before the block could
    start (its reply was lost and then the lease ran out). Trying again may
    succeed."""


def store_lost(err: Optional[BaseException]) -> Optional[LostError]:
    """The store's -LOST reply as a LostError, or None."""
    if not isinstance(err, ResponseError):
        return None
    msg = str(err)
    if not msg.startswith("LOST "):
        return None
    return LostError(msg[len("LOST "):], from_store=True)


# Error replies that a later try with the same request can cure. redis-py
# strips the ERR code word from the message, and keeps the others.
_TRANSIENT_PREFIXES = (
    "superseded",  # one of our own requests took the place over
    "server is shutting down",
    "max number of clients",
    "LOADING ",
    "TRYAGAIN ",
    "BUSY ",
    "CLUSTERDOWN ",  # a cluster node that knows no leader yet (SPEC §10)
)

# The same replies as a RedisCluster's parser raises them, their code word
# stripped: a new leader's -TRYAGAIN before its epoch is applied, a node
# with no leader, and a redirect the client did not follow in time.
_CLUSTER_TRANSIENT = (TryAgainError, ClusterDownError, MovedError, AskError)


def transient(err: BaseException) -> bool:
    """Whether an error is worth a retry with the same request: the network
    failed (or the reply was lost), or the store answered an error that a
    later try can cure. Any other error reply is final, and so is a refused
    password: redis-py 4.3 raises the store's -WRONGPASS as a ResponseError,
    later versions as an AuthenticationError, which is a ConnectionError."""
    if isinstance(err, AuthenticationError):
        return False
    if not isinstance(err, ResponseError) or isinstance(err, _CLUSTER_TRANSIENT):
        return True
    return str(err).startswith(_TRANSIENT_PREFIXES)


def superseded(err: Optional[BaseException]) -> bool:
    return isinstance(err, ResponseError) and str(err).startswith("superseded")
