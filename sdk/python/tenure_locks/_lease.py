"""A lease while its block runs: the holder's deadline, and the renewals
that move it."""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Callable, Optional

from ._errors import REASON_EXPIRED, REASON_MAXHOLD, LostError, store_lost
from ._wire import Grant, Key, attempts, send_renew

if TYPE_CHECKING:
    from ._lock import Lock


def _is_lost_reply(err: BaseException) -> bool:
    return store_lost(err) is not None


class Lease:
    """One grant of a key to this holder, yielded by ``hold`` and
    ``try_hold``.

    ``key`` is the key held and ``fence`` the fencing token, larger than
    every fence granted before it (LOCK-02). ``deadline`` is the holder's
    deadline on ``time.monotonic()``'s clock; ``lost`` is None while the
    lease is held and the ``LostError`` once it is lost.
    """

    def __init__(self, lock: "Lock", key: Key, grant: Grant):
        self.key = key
        self.fence: int = grant.fence
        self._id = grant.id  # renews and releases; never leaves the SDK (LOCK-04)
        self._ttl = lock.ttl
        self._margin = lock.margin
        self._max_cap: Optional[float] = None  # grant + max_hold - margin
        if lock.max_hold is not None:
            # The store granted no earlier than not_before, so its MAXHOLD
            # deadline is no earlier than this (LOCK-07).
            self._max_cap = grant.not_before + lock.max_hold - lock.margin
        self._sent = 0.0  # send time of the last HOLD or RENEW that succeeded
        self._deadline = 0.0
        self._at_max = False  # the deadline is the max_hold cap
        self._last_error: Optional[BaseException] = None
        self._lost: Optional[LostError] = None
        self._over = False  # the block has ended: the clock can no longer lose it
        self._on_lost: Callable[[], None] = lambda: None
        self._set_deadline(grant.sent, grant.left, capped=False)

    def __repr__(self) -> str:
        return f"Lease(key={self.key!r}, fence={self.fence}, lost={self._lost!r})"

    @property
    def deadline(self) -> float:
        """The send time of the last HOLD or RENEW that succeeded, plus the
        ttl the store answered, less the margin, capped at the grant +
        max_hold - margin; on time.monotonic()'s clock. When it passes
        without a renewal the lease is lost."""
        return self._deadline

    @property
    def lost(self) -> Optional[LostError]:
        """None while held, the LostError once lost. It compares the
        deadline with the clock itself, so a holder that wakes from a pause
        longer than its ttl learns of the loss at once, before any timer."""
        self._check()
        return self._lost

    def _set_deadline(self, sent: float, left: float, capped: bool) -> None:
        """Moves the deadline to sent + left - margin, capped; capped says
        the store capped left at MAXHOLD."""
        d = sent + left - self._margin
        self._at_max = capped
        if self._max_cap is not None:
            if capped:
                # sent + left and the cap are two lower bounds of the same
                # MAXHOLD deadline (less the margin): the later is the closer.
                d = max(d, self._max_cap)
            elif d >= self._max_cap:
                d, self._at_max = self._max_cap, True
        self._sent, self._deadline = sent, d

    def _renewed(self, sent: float, left: float) -> None:
        """Records a RENEW sent at sent that answered left. A success that
        arrives after the deadline does not revive the lease."""
        if self._check() or sent <= self._sent:
            return
        self._set_deadline(sent, left, left < self._ttl)
        self._last_error = None

    def _check(self) -> bool:
        """Loses the lease if its deadline has passed; reports whether it is lost."""
        if self._lost is not None:
            return True
        if self._over or time.monotonic() < self._deadline:
            return False
        self._lose(LostError(REASON_MAXHOLD if self._at_max else REASON_EXPIRED,
                             from_store=False, error=self._last_error))
        return True

    def _lose(self, err: LostError) -> None:
        if self._lost is None:
            self._lost = err
            self._on_lost()


async def keep(lock: "Lock", lease: Lease) -> None:
    """Renews lease while its block runs, in a task of its own (SPEC §8): at
    the latest ttl/3 after the last success; after a failure, again at least
    every ttl/10 on any connection, until the holder's deadline. Ends when
    the lease is lost, or when it is cancelled as the block ends."""
    renew_every, retry_every = lock.ttl / 3, lock.ttl / 10
    while True:
        deadline = lease._deadline
        nxt = min(lease._sent + renew_every, deadline)  # capped: nothing left to renew for
        await asyncio.sleep(max(0.0, nxt - time.monotonic()))
        if lease._check():
            return

        async def renew() -> float:
            try:
                return await send_renew(lock.client, lock.name, lease._id)
            except Exception as e:
                if not _is_lost_reply(e):
                    lease._last_error = e
                raise

        out, ok = await attempts(deadline, retry_every, renew, _is_lost_reply)
        if not ok:
            if not lease._check():
                # attempts gave up at the deadline, which _check sees as
                # passed; reaching here would mean a clock gone backwards.
                lease._lose(LostError(REASON_EXPIRED, from_store=False, error=out.error))
            return
        if out.error is not None:
            lost = store_lost(out.error)
            assert lost is not None
            lease._lose(lost)
            return
        lease._renewed(out.sent, out.value)
        if lease._check():
            return
