"""Store, Lock and the hold itself: waiting in line, the block's
cancellation when the lease is lost, and letting go."""

from __future__ import annotations

import asyncio
import copy
import os
import re
import socket
import time
from datetime import timedelta
from types import TracebackType
from typing import AsyncIterator, Dict, List, Optional, Tuple, Type, Union

from redis.asyncio import Redis
from redis.asyncio.cluster import RedisCluster
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ResponseError

from ._election import Leader, leader_of, observe
from ._errors import (REASON_RELEASED, REASON_REVOKED, REASON_UNKNOWN_LEASE,
                      LostError, NotHeldError, store_lost, superseded, transient)
from ._lease import Lease, _is_lost_reply, keep
from ._wire import (MAX_IN_FLIGHT, Client, Grant, HoldReply, Key, attempts, execute, finish, new_reqid,
                    send_hold, send_release, send_renew, store_epoch)

Duration = Union[str, int, float, timedelta]

# The message of the cancellation that a lost lease sends the block.
_LOST_MSG = "tenure_locks: lease lost"

# Ranges of SPEC §3, in seconds.
MIN_TTL, MAX_TTL = 1.0, 3600.0
MIN_MAX_HOLD, MAX_MAX_HOLD = 1.0, 86400.0
MAX_LOCK_LEN, MAX_KEY_LEN = 256, 1024
DEFAULT_TTL = 10.0
# LIMIT n and OWNER text (SPEC §12).
MAX_LIMIT, MAX_OWNER_LEN = 65536, 256
MAX_MARGIN = 2.0  # the default margin is min(ttl/10, MAX_MARGIN)

# The wait chunk for a client without a socket timeout. Any length would do;
# this one keeps a long wait visible as a sequence of commands.
UNBOUNDED_CHUNK = 10.0

_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ms|s|m|h)")


def parse_duration(what: str, d: Duration) -> float:
    """A duration in seconds from "30s", "500ms", "1m30s", "1h", a number of
    seconds or a timedelta. ValueError otherwise."""
    if isinstance(d, timedelta):
        return d.total_seconds()
    if isinstance(d, (int, float)) and not isinstance(d, bool):
        return float(d)
    if isinstance(d, str):
        s = d.strip()
        pos, total = 0, 0.0
        while pos < len(s):
            m = _PART.match(s, pos)
            if m is None:
                break
            total += float(m.group(1)) * _UNITS[m.group(2)]
            pos = m.end()
        if s and pos == len(s):
            return total
    raise ValueError(f"{what} {d!r}: want a duration such as '30s', '500ms', seconds, or a timedelta")


def _key_bytes(k: Key) -> int:
    return len(k.encode() if isinstance(k, str) else k)


def _fmt(seconds: float) -> str:
    return f"{seconds:g}s"


def default_owner() -> str:
    """``hostname:pid``, the hostname cut to fit MAX_OWNER_LEN bytes."""
    host = socket.gethostname() or "unknown"
    pid = f":{os.getpid()}"
    while len(host.encode()) + len(pid) > MAX_OWNER_LEN:
        host = host[:-1]
    return host + pid


class Store:
    """A tenure store behind a ``redis.asyncio.Redis`` client, or a tenure
    cluster behind a ``redis.asyncio.cluster.RedisCluster`` (SPEC §10). It
    only sends commands through the client's ``execute_command``; it never
    changes the client and needs no closing.

    A RedisCluster must have ``require_full_coverage=True`` (redis-py 4.3's
    default is False): a tenure cluster's one shard covers every slot
    whenever it has a leader, and without that check a routing refresh that
    runs while no node knows a leader (an election) empties the client's
    list of nodes for good, so it could not find the new leader.
    """

    def __init__(self, client: Union[Redis, RedisCluster]):
        if not (hasattr(client, "execute_command") and hasattr(client, "get_connection_kwargs")):
            raise TypeError(f"Store wants a redis.asyncio.Redis client, got {type(client).__name__}")
        if isinstance(client, RedisCluster) and not client.nodes_manager.require_full_coverage:
            raise ValueError("Store wants a RedisCluster made with require_full_coverage=True: without it, "
                             "a routing refresh during an election loses every node for good")
        self.client: Client = client

    def lock(self, name: str, *, ttl: Duration = DEFAULT_TTL, max_hold: Optional[Duration] = None,
             wait: Optional[Duration] = None, margin: Optional[Duration] = None,
             limit: Optional[int] = None, owner: Optional[str] = None) -> "Lock":
        """The lock called name (1 to 256 bytes), with the options its leases
        are held with. It sends nothing. An option out of range is a
        ValueError:

        - ttl: how long a lease lasts without a renewal, 1 s to 1 h, default
          10 s. A frozen or crashed holder's key returns within one ttl; a
          pause longer than about 2/3 of it loses a lease still working.
        - max_hold: every lease is revoked at its grant + max_hold, renewals
          notwithstanding (LOCK-07); 1 s to 24 h; default no cap.
        - wait: how long a hold waits in line before NotHeldError; default
          no bound; 0 makes hold behave like try_hold.
        - margin: how long before the store's deadline the holder gives up,
          default min(ttl/10, 2 s); under half the ttl and under max_hold.
        - limit: makes the lock a semaphore (SPEC §12): each key admits up
          to limit leases at once, each a lease of its own (its own fence,
          renewal and loss); 1 to 65536; 1, the default, is a plain lock.
          Every holder of a key must agree on it while the key is in use: a
          hold with another limit raises the store's ResponseError ("this
          key is in use with LIMIT n", LOCK-15) on entering, and its block
          never runs. A lock with a limit has no shared holds.
        - owner: the text the store shows of this lock's leases to anyone
          who asks who holds a key (LOCK.INFO, LOCK.LIST, LOCK.HOLDERS), 1 to
          256 bytes; default "hostname:pid". Information, never a credential
          (LOCK-16).
        """
        return Lock(self, name, ttl=ttl, max_hold=max_hold, wait=wait, margin=margin, limit=limit, owner=owner)


class Lock:
    """One named lock of a store, with its options. Made by ``Store.lock``.
    It holds no connection; many holds may run on it at once."""

    def __init__(self, store: Store, name: str, *, ttl: Duration, max_hold: Optional[Duration],
                 wait: Optional[Duration], margin: Optional[Duration],
                 limit: Optional[int] = None, owner: Optional[str] = None):
        self.client = store.client
        self.name = name
        if not 1 <= _key_bytes(name) <= MAX_LOCK_LEN:
            raise ValueError(f"lock name must be 1 to {MAX_LOCK_LEN} bytes")
        self.ttl = parse_duration("ttl", ttl)
        if not MIN_TTL <= self.ttl <= MAX_TTL:
            raise ValueError(f"ttl {_fmt(self.ttl)}: must be from 1s to 1h")
        self.max_hold = None if max_hold is None else parse_duration("max_hold", max_hold)
        if self.max_hold is not None and not MIN_MAX_HOLD <= self.max_hold <= MAX_MAX_HOLD:
            raise ValueError(f"max_hold {_fmt(self.max_hold)}: must be from 1s to 24h")
        self.wait = None if wait is None else parse_duration("wait", wait)
        if self.wait is not None and self.wait < 0:
            raise ValueError(f"wait {_fmt(self.wait)}: must not be negative")
        self.margin = min(self.ttl / 10, MAX_MARGIN) if margin is None else parse_duration("margin", margin)
        if not 0 <= self.margin < self.ttl / 2:
            raise ValueError(f"margin {_fmt(self.margin)}: must be from 0 to under half the ttl")
        if self.max_hold is not None and self.margin >= self.max_hold:
            raise ValueError(f"margin {_fmt(self.margin)}: must be under max_hold")
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int)
                                  or not 1 <= limit <= MAX_LIMIT):
            raise ValueError(f"limit {limit!r}: must be an integer from 1 to {MAX_LIMIT}")
        # None for a limit of 1, which is the same as none.
        self.limit: Optional[int] = None if limit is None or limit == 1 else limit
        self.owner = default_owner() if owner is None else owner
        if not isinstance(self.owner, str) or not 1 <= len(self.owner.encode()) <= MAX_OWNER_LEN:
            raise ValueError(f"owner {self.owner!r}: must be 1 to {MAX_OWNER_LEN} bytes")
        # Each HOLD while waiting waits half the client's socket timeout, so
        # that its reply comes well before the client stops reading.
        timeout = self.client.get_connection_kwargs().get("socket_timeout")
        self.chunk = timeout / 2 if timeout else UNBOUNDED_CHUNK

    def reqid_window(self) -> float:
        """How long after not_before (no grant to a reqid came earlier) a
        HOLD may still carry that reqid (SPEC §8). The store remembers a
        reqid for at least the lease's ttl after the lease ends, and the lease
        starts at the grant, so until at least not_before + ttl by its clock;
        the holder's margin is for the time the HOLD takes to get there."""
        return self.ttl - self.margin

    def __repr__(self) -> str:
        limit = "" if self.limit is None else f", limit={self.limit}"
        return f"Lock({self.name!r}, ttl={self.ttl:g}{limit})"

    def _kind(self, shared: bool) -> List[Union[str, int]]:
        """The LIMIT or SHARED and the OWNER of every HOLD of a request."""
        kind: List[Union[str, int]] = []
        if self.limit is not None:
            kind += ["LIMIT", self.limit]
        elif shared:
            kind.append("SHARED")
        return kind + ["OWNER", self.owner]

    def hold(self, key: Key, *, shared: bool = False) -> "Holding":
        """``async with lock.hold(key) as lease:`` waits in line for key, then
        runs the block while holding it, renewing the lease in the
        background, and releases it when the block ends, however it ends.

        A lost lease cancels the task running the block at its next await,
        and leaving the block raises LostError (its ``reason`` as SPEC §4
        spells it), also when the block completed after the loss. A
        cancellation from outside (task.cancel(), asyncio.timeout) stays a
        CancelledError. Entering raises NotHeldError when the wait elapsed.

        On a lock with a limit, it holds one of the key's permits, waiting
        while all are held. With ``shared=True`` it holds the key as a reader
        (SPEC §12, SHARED): shared with other readers, never with a plain
        hold (a writer), which has the key alone. The line stays one
        (LOCK-08): a reader that comes while a writer waits waits behind it.
        Everything above holds of a permit and a reader too. A lock with a
        limit has no readers: entering with ``shared=True`` raises ValueError
        before anything is sent.
        """
        return Holding(self, key, try_once=False, shared=shared)

    def try_hold(self, key: Key, *, shared: bool = False) -> "Holding":
        """``hold`` that does not wait in line: entering raises NotHeldError
        at once if key is held (for a reader: held by a writer, or a writer
        waits for it)."""
        return Holding(self, key, try_once=True, shared=shared)

    # -- elections (SPEC §12) --------------------------------------------

    def campaign(self, key: Key, value: str) -> "Holding":
        """``async with lock.campaign(key, value) as lease:`` campaigns in the
        election key: waits in line, with no limit (the lock's wait does not
        apply: a candidate waits its turn; cancel the task to stop), until it
        leads, then runs the block as the leader. value (1 to 256 bytes: its
        address, say) is what ``leader`` and ``observe`` show of it, and
        ``lease.fence`` is its term.

        It is ``hold`` with value as the lease's owner, by the same rules: a
        leadership lost (revoked, expired, the store restarted) cancels the
        block at its next await, and leaving it raises LostError, even if
        the block completed; leaving the block lets the key go, which is
        resigning, and the next candidate in line leads at once.

        Whatever a leader writes to a resource that others may write after
        it should carry its term (``SET … FENCE``, or the resource's own
        check of the fence), so that a leader that lost its lease without
        noticing (a paused process) cannot overwrite its successor's work.
        A value out of range is a ValueError."""
        if not isinstance(value, str) or not 1 <= len(value.encode()) <= MAX_OWNER_LEN:
            raise ValueError(f"campaign {self.name} {key!r}: the value must be 1 to {MAX_OWNER_LEN} bytes")
        candidate = copy.copy(self)
        candidate.owner, candidate.wait = value, None
        return Holding(candidate, key, try_once=False)

    async def leader(self, key: Key) -> Optional[Leader]:
        """The election key's leader now (LOCK.INFO), or None when no one
        leads. On a key held shared or with a limit it is the newest of its
        holders. The store's refusal is its ResponseError."""
        return leader_of(await execute(self.client, self.name, "LOCK.INFO", self.name, key))

    def observe(self, key: Key) -> AsyncIterator[Optional[Leader]]:
        """``async for ld in lock.observe(key):`` follows the election key: it
        yields the current leader (or None: no one leads) first, then every
        change the store reports (LOCK.WATCH), until the loop is left. A
        consumer that is slow sees the latest leader, not every one that
        came and went meanwhile.

        The fences of the leaders it yields only increase: it never yields a
        term older than one it yielded. It outlives cut connections, store
        restarts and cluster failovers by watching again with the last fence
        it saw: a new epoch shows as None, then the new leader. Errors it may
        outlast (the network, -TRYAGAIN, -CLUSTERDOWN) it retries every 50 ms
        to 1 s; a refusal no retry cures (a user that may not read, a store
        without LOCK.WATCH) raises the store's ResponseError (or redis-py's
        AuthenticationError) from the loop. It is an async generator: to
        close it at once when leaving the loop early, wrap it in
        ``contextlib.aclosing``."""
        return observe(self.client, self.name, key, self.chunk)

    # -- waiting in line -------------------------------------------------

    async def _acquire(self, key: Key, try_once: bool, shared: bool) -> Tuple[Grant, "_HoldCalls"]:
        """Gets key for one reqid (SPEC §8): HOLDs with that reqid, each
        waiting one chunk; a network error or lost reply is retried with the
        same reqid on any connection, and answered with the same lease
        (LOCK-03). Returns the grant and the HOLDs still in flight, whose
        late grants of another lease are released (await their ``done``).

        The chunks overlap, so that the place in line is never left open:
        once a quarter of a chunk has passed, the next HOLD goes out on
        another connection and supersedes the blocked one at the store (which
        answers that one "superseded", ignored here). Were the next HOLD sent
        only after the previous one's WAIT ran out, the place would linger in
        between, passed over, and a release then would grant a later waiter
        first (LOCK-08). Whichever reply carries the grant wins; a HOLD that
        reaches the store after the grant is answered the same lease. The
        last chunk of a bounded wait has no successor, nor has a chunk whose
        WAIT ran out before its successor went (this process paused, or is
        overloaded): its answer comes first, as it may be a grant, and a HOLD
        sent long after a grant may reach a store that has forgotten the
        reqid. A pause between the send of a successor and its write to the
        network can still do that; the grant it gets is released.

        A reqid is kept only while the store surely remembers it (the reqid
        window, SPEC §8): a grant to it came no earlier than ``not_before``,
        the send time of the oldest HOLD not yet answered null or
        "superseded", and the store remembers the reqid for at least the
        lease's ttl after the lease ends, so until at least not_before + ttl.
        A HOLD with the reqid is sent only while now < not_before + ttl -
        margin (the holder's margin, for the time the HOLD takes to reach the
        store). Past that a lost reply is asked again with a fresh reqid: the
        hold joins the line anew, and a lease granted to the old reqid, if
        any, is never renewed and runs out; a reply that brings it after all
        is kept if it comes first, released if not.

        On cancellation it leaves the line and lets go of any grant that
        raced in, then re-raises."""
        wait_until = None
        if self.wait is not None and not try_once:
            wait_until = time.monotonic() + self.wait
            try_once = self.wait < 0.001
        calls = _HoldCalls(self, key, new_reqid(), self._kind(shared))
        retry_every = self.ttl / 10
        window = self.reqid_window()
        failing_since: Optional[float] = None  # the first of the failures since the last answer
        not_before = 0.0  # no grant of the current reqid came before this
        old_not_before: List[float] = []  # not_before of each earlier reqid (by gen), for its grant's max_hold
        cur: Optional[_HoldCall] = None  # the newest HOLD sent
        cur_open = False  # cur has not answered: the next HOLD overlaps it
        next_at: Optional[float] = None  # when to send the next HOLD; None: when one answers
        stalled = False  # the next HOLD waits for one in flight to answer

        def send() -> bool:
            # Sends the next HOLD, waiting one chunk (or less, at the end of
            # a bounded wait); False if the wait is over.
            nonlocal try_once, cur, cur_open, next_at, stalled, not_before
            wait = self.chunk
            if try_once:
                wait = 0.0
            elif wait_until is not None:
                rem = wait_until - time.monotonic()
                if rem <= 0:
                    if failing_since is None:
                        return False
                    # The last HOLD failed: it may have been granted. A last
                    # try with the same reqid says (past the window: a
                    # try with a fresh one).
                    rem, try_once = 0.0, True
                wait = min(wait, rem)
            if not_before and time.monotonic() >= not_before + window:
                # The store may have forgotten the reqid (SPEC §8): a HOLD
                # with it could get a second lease (LOCK-03). Start over.
                old_not_before.append(not_before)
                calls.restart()
                not_before = 0.0
            cur, cur_open, stalled = calls.send(wait), True, False
            if not not_before:
                not_before = cur.sent
            last = try_once or (wait_until is not None and cur.sent + wait >= wait_until)
            # Within the window too, with room for an answer to move
            # not_before on before the next successor.
            next_at = None if last else cur.sent + min(wait, window) / OVERLAP_AT
            return True

        def waited() -> NotHeldError:
            return NotHeldError(f"{self.name} {key!r}: waited {_fmt(self.wait or 0)}")

        final: Optional[BaseException] = None
        try:
            send()
            while final is None:
                timeout = None if next_at is None else max(0.0, next_at - time.monotonic())
                if calls.in_flight:
                    done, _ = await asyncio.wait(calls.in_flight, timeout=timeout,
                                                 return_when=asyncio.FIRST_COMPLETED)
                else:  # pausing before a retry
                    assert timeout is not None
                    await asyncio.sleep(timeout)
                    done = set()
                if not done:  # the next HOLD is due, and no answer came meanwhile
                    assert cur is not None
                    if cur_open and time.monotonic() >= cur.sent + cur.wait:
                        # cur's WAIT has run out: too late to overlap it, and
                        # its answer is due. A HOLD sent now could go out long
                        # after a grant that came meanwhile, and after the
                        # store forgot the reqid: a second lease (LOCK-03).
                        next_at = None
                    elif cur_open and time.monotonic() >= not_before + window:
                        # Answers are late (replies lost, or this process
                        # paused): cur may have been granted, and a successor
                        # may reach a store that has forgotten the reqid.
                        # cur's answer is due, within its WAIT plus the
                        # socket timeout.
                        next_at = None
                    elif len(calls.in_flight) >= MAX_IN_FLIGHT:
                        # Older HOLDs hang (their replies lost): the next one
                        # goes when one of them answers.
                        next_at, stalled = None, True
                    elif not send():
                        next_at = None  # the wait is over: cur's answer ends it
                    continue
                # An answer that came meanwhile (after a pause, say) is read
                # before any other HOLD goes: it may be the grant. A grant
                # first: whichever reply carries it wins.
                for t in sorted(done, key=lambda t: (calls.in_flight[t].reply().grant is None,
                                                    calls.in_flight[t].seq)):
                    call = calls.answered(t)
                    r = call.reply()
                    if call.gen != calls.gen:
                        # A HOLD of an earlier reqid: its grant is a lease as
                        # good as any; anything else it says is of no concern
                        # any more.
                        if r.grant is not None:
                            r.grant.not_before = old_not_before[call.gen]
                            calls.settle(r.grant.id)
                            return r.grant, calls
                        if stalled:
                            next_at, stalled = time.monotonic(), False
                        continue
                    newest = call is cur
                    if newest:
                        cur_open = False
                    if r.grant is not None:
                        r.grant.not_before = not_before
                        calls.settle(r.grant.id)
                        return r.grant, calls
                    if r.error is None or (superseded(r.error) and not newest):
                        # Not granted when the store answered, which was after
                        # this HOLD was sent: neither was any earlier one.
                        not_before = max(not_before, r.sent)
                    if not newest and (r.error is None or transient(r.error)):
                        # An older chunk: its WAIT ran out, it was superseded
                        # by the newer one, or it failed; the newer one
                        # carries on.
                        if stalled:
                            next_at, stalled = time.monotonic(), False
                        continue
                    if r.error is None:  # not granted within the WAIT; the place lingers
                        failing_since = None
                        if try_once:
                            final = NotHeldError(f"{self.name} {key!r} is held")
                        elif not send():
                            final = waited()
                    elif (lost := store_lost(r.error)) is not None:
                        # Granted, but the reply was lost and the lease ended
                        # before this retry: the block never ran.
                        final = NotHeldError(f"{self.name} {key!r}: the grant's reply was lost and then "
                                             f"the lease: {lost.reason}")
                    elif not transient(r.error):
                        # The store refused (a read-only user: NOPERM): the
                        # same kind of error, saying which hold.
                        final = type(r.error)(f"tenure_locks: hold {self.name} {key!r}: {r.error}")
                        final.__cause__ = r.error
                    else:
                        if failing_since is None:
                            failing_since = r.sent
                        now = time.monotonic()
                        if now - failing_since > self.ttl:
                            # Any lease granted on the way has run out by now.
                            final = RedisConnectionError(f"tenure_locks: hold {self.name} {key!r}: "
                                                         f"no answer for {_fmt(self.ttl)}: {r.error!r}")
                        else:
                            next_at = r.sent + retry_every  # retry the newest, after a pause
                            if wait_until is not None and now >= wait_until:
                                next_at = now  # send makes it the last try
                    if final is not None:
                        break
        except asyncio.CancelledError:
            await finish(self._abandon(key, calls, not_before + window))
            raise
        calls.settle(None)
        _, interrupted = await finish(calls.done())
        if interrupted:
            raise asyncio.CancelledError()
        raise final

    async def _abandon(self, key: Key, calls: "_HoldCalls", send_by: float) -> None:
        """Stops waiting for the calls' reqid, and lets go of any grant that
        raced in. A HOLD with the same reqid and WAIT 0 answers the blocked
        HOLD at once (superseded) and leaves the place to linger, passed
        over; it says whether a grant came first (then it is that grant,
        LOCK-03). It waits for the HOLDs still in flight too. A probe goes
        only before send_by, the end of the reqid's window (SPEC §8): later,
        the store may have forgotten the reqid and would grant the probe a
        second lease. A lease granted before, its reply lost, runs out
        unrenewed."""
        reqid = calls.reqid
        released = set()

        async def let_go(g: Optional[Grant]) -> None:
            if g is not None and g.id not in released:
                released.add(g.id)
                await self._release(g.id, g.received + g.left)

        def decided(r: HoldReply) -> bool:
            # A HOLD the store answered, whatever the answer, says where
            # reqid stands; one lost on the way does not.
            return r.error is None or isinstance(r.error, ResponseError)

        known, probe = False, HoldReply(sent=time.monotonic())
        if time.monotonic() < send_by:
            probe = await send_hold(self.client, self.name, key, reqid, self.ttl, 0, self.max_hold, calls.kind)
            await let_go(probe.grant)
            known = decided(probe)
        left = list(calls.in_flight)
        if left:
            await asyncio.wait(left)
        for t in left:
            r = calls.answered(t).reply()
            await let_go(r.grant)
            if not decided(r) and probe.grant is None:
                # One lost on the way may have been retried after the probe,
                # and granted: only a probe sent after it knows. Unless the
                # probe found the grant already: a reqid has one (LOCK-03),
                # and it is released.
                known = False
        give_up = time.monotonic() + self.ttl
        while not known and time.monotonic() < give_up:
            await asyncio.sleep(self.ttl / 10)
            if time.monotonic() >= send_by:
                break
            probe = await send_hold(self.client, self.name, key, reqid, self.ttl, 0, self.max_hold, calls.kind)
            await let_go(probe.grant)
            known = decided(probe)

    # -- letting go ------------------------------------------------------

    async def _release(self, lease_id: str, until: float) -> Optional[LostError]:
        """RELEASE, retried with the same lease id until one is answered or
        until passes. Returns the store's -LOST answer, if any."""

        async def op() -> None:
            await send_release(self.client, self.name, lease_id)

        out, ok = await attempts(until, self.ttl / 10, op, _is_lost_reply)
        if not ok:
            return None
        lost = store_lost(out.error)
        if lost is not None and lost.reason != REASON_RELEASED:
            return lost
        return None

    async def _tells_more(self, store_says: LostError, fence: int) -> bool:
        """Whether the store's -LOST answer to a RELEASE sent after the holder
        gave the lease up by its own clock replaces the holder's reason. That
        reason stands unless the store tells more than it:

        - The holder's "expired" or "revoked maxhold" is how the store itself
          ends the lease, a margin later: the store's "expired" or "revoked
          maxhold" says nothing new.
        - "revoked by admin" does: the store records one end per lease, so
          the revoke came before the store's own expiry or cap, unseen by the
          holder (its renewals failed, or had stopped at the max_hold cap).
        - "unknown lease" on its own says nothing: the store forgets an ended
          lease a ttl after its end, so a block that overran its lease by more
          than about a ttl gets it whatever happened. What does tell is the
          epoch: each open of the store is a new one and forgets every lease
          (LOCK-10), and a fence carries the epoch it was granted in (fence
          >> 32, SPEC §2). A store whose epoch is newer than the lease's
          restarted after the lease's last renewal, and "unknown lease" is
          that restart, the reason SPEC §4 gives it. If the epoch cannot be
          read, the holder's reason stands.
        """
        if store_says.reason == REASON_REVOKED:
            return True
        if store_says.reason != REASON_UNKNOWN_LEASE:
            return False
        try:
            epoch = await asyncio.wait_for(store_epoch(self.client, self.name), self.ttl)
        except Exception:
            return False
        return epoch > fence >> 32

    async def _renew_before_use(self, lease: Lease, g: Grant) -> None:
        """Renews a lease granted after waiting in line, before the block
        starts: its deadline counts from a send time far behind the grant.
        The store's deadline is at most the reply's arrival plus the ttl it
        answered: renewals are tried until then."""
        async def op() -> float:
            return await send_renew(self.client, self.name, g.id)

        out, ok = await attempts(g.received + g.left, self.ttl / 10, op, _is_lost_reply)
        if not ok:
            await self._release(g.id, time.monotonic() + self.ttl / 10)
            raise RedisConnectionError(f"tenure_locks: hold {self.name} {lease.key!r}: renew after the grant: "
                                  f"{out.error!r}")
        if out.error is not None:
            lost = store_lost(out.error)
            assert lost is not None  # attempts stops early only on -LOST
            raise NotHeldError(f"{self.name} {lease.key!r}: the lease ended before the block started: "
                               f"{lost.reason}")
        lease._set_deadline(out.sent, out.value, out.value < self.ttl)


# When, in a chunk, the next one is sent: at wait/OVERLAP_AT. Early, so that
# the next HOLD has three quarters of the chunk to reach the store (a busy
# machine, a slow network, a pause of the collector) before the place would
# linger; a HOLD each quarter chunk per waiter is cheap.
OVERLAP_AT = 4


class _HoldCall:
    """One HOLD that _acquire sent, in a task of its own."""

    def __init__(self, seq: int, gen: int, wait: float, task: asyncio.Task[HoldReply]):
        self.seq = seq
        self.gen = gen  # which reqid of the hold: 0 for the first
        self.sent = time.monotonic()  # when it was handed to its task: no later than its send
        self.wait = wait
        self.task = task

    def reply(self) -> HoldReply:
        return self.task.result()


class _HoldCalls:
    """The HOLDs of one reqid, each in a task of its own so that chunks can
    overlap. Once _acquire has settled, a reply that carries a grant other
    than the one it kept (a HOLD that reached the store after the reqid was
    forgotten) is released at once; ``done`` waits for that."""

    def __init__(self, lock: "Lock", key: Key, reqid: str, kind: List[Union[str, int]]):
        self.lock, self.key, self.reqid, self.kind = lock, key, reqid, kind
        self.in_flight: Dict[asyncio.Task[HoldReply], _HoldCall] = {}  # sent and not yet read by _acquire
        self._seq = 0
        self.gen = 0  # how many times _acquire drew a fresh reqid
        self._settling: Optional[asyncio.Task[None]] = None

    def send(self, wait: float) -> _HoldCall:
        lk = self.lock
        self._seq += 1
        task = asyncio.create_task(send_hold(lk.client, lk.name, self.key, self.reqid, lk.ttl, wait, lk.max_hold,
                                             self.kind))
        call = _HoldCall(self._seq, self.gen, wait, task)
        self.in_flight[task] = call
        return call

    def restart(self) -> None:
        """Draws a fresh reqid for the HOLDs sent from now on."""
        self.reqid = new_reqid()
        self.gen += 1

    def answered(self, t: asyncio.Task[HoldReply]) -> _HoldCall:
        return self.in_flight.pop(t)

    def settle(self, kept: Optional[str]) -> None:
        """Ends _acquire's part: the HOLDs still in flight are awaited in the
        background, and a grant among them that is not kept (the lease id
        _acquire returned, or None) is released as soon as it arrives."""
        left, self.in_flight = list(self.in_flight), {}

        async def let_go_of_others() -> None:
            for next_done in asyncio.as_completed(left):
                g = (await next_done).grant
                if g is not None and g.id != kept:
                    await self.lock._release(g.id, g.received + g.left)

        if left:
            self._settling = asyncio.create_task(let_go_of_others())

    async def done(self) -> None:
        """Waits until every HOLD sent has answered and every late grant not
        kept has been released."""
        if self._settling is not None:
            await asyncio.wait({self._settling})


class Holding:
    """The async context manager of one hold (``Lock.hold``, ``Lock.try_hold``);
    it can be entered once."""

    def __init__(self, lock: Lock, key: Key, try_once: bool, shared: bool = False):
        self._lock = lock
        self._key = key
        self._try = try_once
        self._shared = shared
        self._task: Optional[asyncio.Task[object]] = None
        self._lease: Optional[Lease] = None
        self._keeper: Optional[asyncio.Task[None]] = None
        self._calls: Optional[_HoldCalls] = None  # the HOLDs that got the lease
        self._our_cancel = 0  # Task.cancelling() just after we cancelled the block
        self._over = False

    async def __aenter__(self) -> Lease:
        if self._task is not None:
            raise RuntimeError("a hold is entered once; call hold() again")
        if not 1 <= _key_bytes(self._key) <= MAX_KEY_LEN:
            raise ValueError(f"key must be 1 to {MAX_KEY_LEN} bytes")
        if self._shared and self._lock.limit is not None:
            raise ValueError(f"hold {self._lock.name} {self._key!r}: a lock with a limit has no shared holds")
        task = asyncio.current_task()
        if task is None:
            raise RuntimeError("hold must run in an asyncio task")
        self._task = task
        lk = self._lock
        g, self._calls = await lk._acquire(self._key, self._try, self._shared)
        lease = Lease(lk, self._key, g)
        try:
            # A HOLD that waited in line was granted long after it was sent,
            # which is what its deadline counts from.
            if time.monotonic() - g.sent >= lk.ttl / 3:
                await lk._renew_before_use(lease, g)
        except asyncio.CancelledError:
            await finish(lk._release(g.id, g.received + g.left))
            await finish(self._calls.done())
            raise
        except BaseException:
            await finish(self._calls.done())
            raise
        self._lease = lease
        lease._on_lost = self._lost_now
        self._keeper = asyncio.create_task(keep(lk, lease))
        return lease

    def _lost_now(self) -> None:
        # The block is cancelled at its next await, from a callback of the
        # loop, so the cancellation never lands in the holder's own step.
        asyncio.get_running_loop().call_soon(self._cancel_block)

    def _cancel_block(self) -> None:
        if not self._over and self._task is not None and not self._task.done():
            self._task.cancel(msg=_LOST_MSG)
            self._our_cancel = self._task.cancelling()

    async def __aexit__(self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException],
                        tb: Optional[TracebackType]) -> Optional[bool]:
        lease, keeper, task = self._lease, self._keeper, self._task
        assert lease is not None and keeper is not None and task is not None
        lease._check()  # lost at the deadline, whether or not a timer saw it
        self._over = True
        lease._over = True
        lost, interrupted = await finish(self._let_go(lease, keeper))
        assert self._calls is not None
        _, interrupted_again = await finish(self._calls.done())
        interrupted = interrupted or interrupted_again
        cancelled = exc_type is not None and issubclass(exc_type, asyncio.CancelledError)
        if self._our_cancel:
            # Ours, if no cancel request came after it and the block was
            # cancelled with our message (or caught it). Task.cancelling()
            # is compared with its value at our request, not at the start of
            # the block: redis-py 4.3 with async-timeout 4.0.2 leaves it
            # raised after every command on Python 3.11.
            later = task.uncancel() >= self._our_cancel
            ours = not later and (not cancelled or (exc is not None and exc.args == (_LOST_MSG,)))
        else:
            ours = False
        if interrupted or (cancelled and not ours):
            # A cancellation from outside: it stays a CancelledError.
            if cancelled:
                return False
            raise asyncio.CancelledError()
        if lost is not None:
            if cancelled:
                raise lost from None  # our own cancellation, turned into what it meant
            raise lost  # the block's own exception, if any, is its __context__
        return False

    async def _let_go(self, lease: Lease, keeper: asyncio.Task[None]) -> Optional[LostError]:
        """Stops the renewals and releases the lease (SPEC §8), retrying with
        its id until the holder's deadline. Returns why the lease was lost, if
        it was before the block ended; a RELEASE answered -LOST (an admin
        revoke or a restart since the last renewal) says so too. A reason the
        holder already knows stands, unless the store's answer tells more."""
        lk = self._lock
        keeper.cancel()
        await asyncio.wait({keeper})
        lost = lease._lost
        if lost is None:
            store_says = await lk._release(lease._id, lease._deadline)
            if store_says is not None:
                lease._lost = lost = store_says
        elif not lost.from_store:
            # Given up by the holder's clock: the store may still hold it for
            # a margin. One try hands it to the next in line early.
            store_says = await lk._release(lease._id, time.monotonic() + lk.ttl / 10)
            if store_says is not None and await lk._tells_more(store_says, lease.fence):
                lease._lost = lost = store_says
        if not keeper.cancelled():
            bug = keeper.exception()
            if bug is not None:
                raise bug  # a bug of the SDK's: say so
        return lost
