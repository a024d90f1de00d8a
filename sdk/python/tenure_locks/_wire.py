"""The commands of SPEC §3 as the SDK sends them, where they go on a
cluster, and the retry helper that renewals and releases share."""

from __future__ import annotations

import asyncio
import math
import secrets
import time
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, List, Mapping, Optional, Protocol, Sequence, Set, Tuple, TypeVar, Union

from redis.asyncio.cluster import RedisCluster
from redis.exceptions import ResponseError

T = TypeVar("T")

# A key or lock name as the SDK takes it.
Key = Union[str, bytes]

# How long past its WAIT a HOLD's reply may take before the SDK counts it
# lost and asks again with the same reqid (LOCK-03). Cancelling a command
# makes redis-py drop its connection, so a late reply can never be read as
# another command's.
HOLD_GRACE = 1.0

# The HOLDs of one reqid, or the RENEW or RELEASE attempts of one lease,
# outstanding at once: a reply swallowed by the network holds its attempt
# until it is counted lost, and the next attempt must not wait for it.
MAX_IN_FLIGHT = 3


def new_reqid() -> str:
    """A request id: 128 random bits as 32 hex characters."""
    return secrets.token_hex(16)


class Client(Protocol):
    """What the SDK asks of the client it is given: a ``redis.asyncio.Redis``
    or a ``redis.asyncio.cluster.RedisCluster`` (SPEC §10) both are one.
    Replies are whatever the client's parser makes of them (bytes, ints,
    lists, None), so they are Any until the SDK has checked them."""

    def execute_command(self, *args: Any, **options: Any) -> Awaitable[Any]: ...

    def get_connection_kwargs(self) -> Mapping[str, Any]: ...


async def execute(client: Client, route_key: str, *args: Union[str, bytes, int]) -> Any:
    """Sends args on client. A RedisCluster routes a command by its key and
    follows -MOVED and -TRYAGAIN itself; LOCK.RENEW, LOCK.RELEASE and INFO
    name no key, so they go to the node that holds route_key's slot (the lock's
    name): on a tenure cluster, the leader as the client last learnt it. A
    -MOVED there updates the client's slots, and the SDK's next try goes to the
    new leader; a refresh the client asked for (after a dead node) runs
    first."""
    if not isinstance(client, RedisCluster) or args[0] == "LOCK.HOLD":
        return await client.execute_command(*args)
    await client.initialize()
    return await client.execute_command(*args, target_nodes=client.get_node_from_key(route_key))


def ms(seconds: float) -> int:
    return int(seconds * 1000)


def _text(v: object) -> str:
    """A reply's simple or bulk string as text (bytes without decode_responses)."""
    if isinstance(v, bytes):
        return v.decode()
    if isinstance(v, str):
        return v
    raise ResponseError(f"want a string reply, got {v!r}")


@dataclass
class Grant:
    id: str
    fence: int
    left: float  # ttl left when the store answered, seconds
    sent: float  # when this HOLD was sent: the deadline counts from it
    received: float
    # No later than the grant: the send time of the oldest HOLD of the reqid
    # that may have been the one granted. max_hold counts from it (LOCK-07).
    not_before: float


@dataclass
class HoldReply:
    """One HOLD's outcome: granted, not granted within its WAIT (both None),
    or an error."""

    sent: float
    grant: Optional[Grant] = None
    error: Optional[BaseException] = None


async def send_hold(client: Client, name: str, key: Key, reqid: str, ttl: float,
                    wait: float, max_hold: Optional[float], kind: Sequence[Union[str, int]]) -> HoldReply:
    """LOCK.HOLD with WAIT wait, once, its reply awaited at most wait +
    HOLD_GRACE. kind is the request's LIMIT or SHARED and its OWNER (SPEC
    §12), the same on every HOLD of a reqid: a retry with another limit
    would be refused (LOCK-15). Never raises but CancelledError."""
    args: List[Union[str, bytes, int]] = ["LOCK.HOLD", name, key, reqid, "TTL", ms(ttl),
                  "WAIT", math.ceil(wait * 1000)]  # a wait is waited in full
    if max_hold is not None:
        args += ["MAXHOLD", ms(max_hold)]
    args += kind
    sent = time.monotonic()
    try:
        vals = await asyncio.wait_for(execute(client, name, *args), wait + HOLD_GRACE)
    except Exception as e:  # a reply lost (timeout) or refused, or the network's error
        return HoldReply(sent, error=e)
    if vals is None:
        return HoldReply(sent)
    if (not isinstance(vals, list) or len(vals) != 3 or not isinstance(vals[0], (bytes, str))
            or len(vals[0]) != 32 or not isinstance(vals[1], int) or not isinstance(vals[2], int)
            or vals[1] <= 0):
        return HoldReply(sent, error=ResponseError(f"LOCK.HOLD replied {vals!r}, want [leaseid fence ttl]"))
    return HoldReply(sent, Grant(_text(vals[0]), vals[1], vals[2] / 1000, sent, time.monotonic(), sent))


async def send_renew(client: Client, name: str, lease_id: str) -> float:
    """LOCK.RENEW of a lease of lock name: the seconds to the new deadline."""
    return int(await execute(client, name, "LOCK.RENEW", lease_id)) / 1000


async def send_release(client: Client, name: str, lease_id: str) -> None:
    await execute(client, name, "LOCK.RELEASE", lease_id)


async def store_epoch(client: Client, name: str) -> int:
    """The store's epoch, from INFO locks (SPEC §2, §6); on a cluster, the
    epoch the node that leads for lock name has applied."""
    info = await execute(client, name, "INFO", "locks")
    if isinstance(info, dict):
        return int(info["epoch"])
    for line in _text(info).splitlines():
        if line.startswith("epoch:"):
            return int(line[len("epoch:"):])
    raise ResponseError("INFO locks has no epoch")


@dataclass
class Outcome:
    """One attempt's result and when it was sent."""

    sent: float
    value: Any = None
    error: Optional[BaseException] = None


async def attempts(until: float, every: float, op: Callable[[], Awaitable[Any]],
                   decisive: Callable[[BaseException], bool]) -> Tuple[Outcome, bool]:
    """Runs op until an attempt succeeds or fails decisively, and returns it
    with True. A new attempt starts every `every` while none has, on
    whatever connection the client's pool hands out: one whose reply is lost
    does not delay the next, up to MAX_IN_FLIGHT outstanding. At `until`
    (time.monotonic()) it gives up and returns the last failure with False.
    Attempts still outstanding when it returns, or when it is cancelled, are
    cancelled and awaited: it leaves no task behind."""

    async def one() -> Outcome:
        sent = time.monotonic()
        try:
            return Outcome(sent, value=await op())
        except Exception as e:
            return Outcome(sent, error=e)

    tasks: Set[asyncio.Task[Outcome]] = set()
    last = Outcome(time.monotonic(), error=asyncio.TimeoutError("no attempt answered in time"))
    next_at = time.monotonic()
    try:
        while True:
            now = time.monotonic()
            if now >= until:
                return last, False
            if now >= next_at:
                next_at = now + every
                if len(tasks) < MAX_IN_FLIGHT:
                    tasks.add(asyncio.create_task(one()))
            timeout = min(next_at, until) - now
            if not tasks:
                await asyncio.sleep(timeout)
                continue
            done, _ = await asyncio.wait(tasks, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
            for t in done:
                tasks.discard(t)
                out = t.result()
                if out.error is None or decisive(out.error):
                    return out, True
                last = out
    finally:
        for t in tasks:
            t.cancel()
        if tasks:
            await asyncio.wait(tasks)


async def finish(aw: Awaitable[T]) -> Tuple[T, bool]:
    """Runs aw to its end even if the caller is cancelled meanwhile, and
    returns its result and whether a cancellation arrived. The caller decides
    what the cancellation means (it stays counted in Task.cancelling())."""
    t = asyncio.ensure_future(aw)
    interrupted = False
    while True:
        try:
            await asyncio.wait({t})
            break
        except asyncio.CancelledError:
            interrupted = True
    return t.result(), interrupted
