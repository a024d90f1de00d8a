"""Elections (SPEC §12) are locks: the leader of (lock, key) is its holder,
the value it proclaims is the lease's OWNER, and its term is the lease's
fence, larger for every later leader, across restarts and failovers
(LOCK-02). Campaign is hold with the value as owner and no wait limit
(``Lock.campaign``); leader reads LOCK.INFO; observe runs LOCK.WATCH in a
loop."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, AsyncIterator, Iterable, Optional, Tuple

from redis.exceptions import AuthenticationError, NoPermissionError, ResponseError

from ._wire import HOLD_GRACE, Client, Key, execute, ms

# How long the first answer (LOCK.INFO, answered at once) may take: redis-py
# 6 and later retry a connection's failure themselves for seconds (its
# default Retry, three tries with backoff), a refused password included,
# and a shorter bound would make the refusal a timeout, which observe
# outlasts for ever.
FIRST_ANSWER = 15.0

# The pause after an error observe outlasts grows from MIN_BACKOFF to MAX_BACKOFF.
MIN_BACKOFF, MAX_BACKOFF = 0.05, 1.0

# Error replies that no retry cures, as redis-py words them (it strips the
# ERR code word, and raises NOPERM as NoPermissionError).
_REFUSALS = ("NOPERM", "NOAUTH", "WRONGPASS", "unknown command", "syntax", "wrong number")


@dataclass(frozen=True)
class Leader:
    """Who leads an election: the value it campaigned with (the lease's
    owner) and its term, the fence of its lease, larger for every later
    leader (LOCK-02). "No one leads" is None wherever a Leader may be
    absent (``Lock.leader``, ``Lock.observe``)."""

    owner: str
    fence: int


def leader_of(reply: Any) -> Optional[Leader]:
    """The fence and owner of a LOCK.INFO-shaped reply (LOCK.INFO,
    LOCK.WATCH): a flat list of field and value (RESP2), a dict (RESP3), or
    None (free). A free key and one with only places in line (fence 0) are
    both None."""
    if reply is None:
        return None
    pairs: Iterable[Tuple[Any, Any]]
    if isinstance(reply, dict):
        pairs = reply.items()
    elif isinstance(reply, list):
        pairs = zip(reply[::2], reply[1::2])
    else:
        raise ResponseError(f"a reply of {type(reply).__name__}, want LOCK.INFO's fields")
    fence: Optional[int] = None
    owner: Optional[str] = None
    for k, v in pairs:
        name = k.decode() if isinstance(k, bytes) else k
        if name == "fence":
            fence = int(v)
        elif name == "owner":
            owner = v.decode() if isinstance(v, bytes) else str(v)
    if fence is None or owner is None:
        raise ResponseError("a reply without fence and owner")
    return None if fence == 0 else Leader(owner, fence)


def outlasts(err: BaseException) -> bool:
    """Whether observe may outlast err by trying again: anything on the way
    (the network, a restart, -TRYAGAIN, -CLUSTERDOWN, -LOADING) but the
    store's refusals that no retry changes."""
    if isinstance(err, (AuthenticationError, NoPermissionError)):
        return False
    if not isinstance(err, ResponseError):
        return True
    return not str(err).startswith(_REFUSALS)


def _epoch(fence: int) -> int:
    """The epoch of a fence (SPEC §2): its high 32 bits."""
    return fence >> 32


async def observe(client: Client, lock: str, key: Key, chunk: float) -> AsyncIterator[Optional[Leader]]:
    """Lock.observe's loop: LOCK.WATCH with the last fence seen, each
    waiting at most chunk, on whatever connection the client's pool hands
    out (a cancelled or timed-out one is dropped by redis-py)."""
    fence = 0  # what the next LOCK.WATCH waits to change
    last: Optional[Leader] = None  # the last one yielded
    yielded = False
    top = 0  # the largest fence yielded
    backoff = 0.0
    while True:
        try:
            if yielded:
                reply = await asyncio.wait_for(
                    execute(client, lock, "LOCK.WATCH", lock, key, "FENCE", fence, "TIMEOUT", max(ms(chunk), 1)),
                    chunk + HOLD_GRACE)
            else:
                # The first answer is the key as it is (LOCK.INFO): a
                # LOCK.WATCH with FENCE 0 on a free key would wait for a change.
                reply = await asyncio.wait_for(execute(client, lock, "LOCK.INFO", lock, key),
                                               max(chunk + HOLD_GRACE, FIRST_ANSWER))
            ld = leader_of(reply)
        except Exception as e:  # the network's error, a reply lost (timeout), or the store's
            if not outlasts(e):
                raise
            backoff = min(max(2 * backoff, MIN_BACKOFF), MAX_BACKOFF)
            await asyncio.sleep(backoff)
            continue
        backoff = 0.0
        fence = 0 if ld is None else ld.fence
        if yielded and ld == last:
            continue  # TIMEOUT: nothing changed
        if ld is not None and ld.fence <= top:
            continue  # an older term than one yielded (LOCK-02): never yield it
        if ld is not None and yielded and last is not None and _epoch(ld.fence) > _epoch(last.fence):
            # A new epoch: the last leader's lease ended with the old one,
            # even if no one saw the key free in between.
            last = None
            yield None
        last, yielded = ld, True
        if ld is not None:
            top = max(top, ld.fence)
        yield ld
