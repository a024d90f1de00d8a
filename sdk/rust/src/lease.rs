use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::task::Waker;
use std::thread::Scope;
use std::time::{Duration, Instant};

use crate::error::{reason, Error};
use crate::wire::{attempts, Attempts, Ended, Event, Grant};
use crate::Lock;

/// One grant of a key to this holder, handed to the closure of
/// [`Lock::hold`]. Its methods are safe to call from any thread; clones
/// share the one lease.
#[derive(Clone)]
pub struct Lease {
    key: String,
    fence: u64,
    /// the lease id: renews and releases, never leaves the SDK (LOCK-04)
    pub(crate) id: String,
    ttl: Duration,
    margin: Duration,
    /// grant + MaxHold - margin
    max_cap: Option<Instant>,
    state: Arc<Mutex<State>>,
    /// notified when the lease is lost
    changed: Arc<Condvar>,
}

struct State {
    /// send time of the last HOLD or RENEW that succeeded
    sent: Instant,
    /// the holder's deadline
    deadline: Instant,
    /// the deadline is the MaxHold cap (the store's or ours)
    at_max: bool,
    /// the last renewal failure since the last success
    last_err: Option<Error>,
    lost: Option<Error>,
    /// the closure has returned: the clock can no longer lose the lease
    over: bool,
    /// async holds to wake when the lease is lost
    wakers: Vec<Waker>,
}

impl Lease {
    pub(crate) fn new(lock: &Lock, key: &str, g: &Grant) -> Lease {
        // The store granted no earlier than not_before, so its MAXHOLD
        // deadline is no earlier than this (LOCK-07).
        let max_cap = lock.max_hold.map(|m| g.not_before + m - lock.margin);
        let le = Lease {
            key: key.to_owned(),
            fence: g.fence,
            id: g.id.clone(),
            ttl: lock.ttl,
            margin: lock.margin,
            max_cap,
            state: Arc::new(Mutex::new(State {
                sent: g.sent,
                deadline: g.sent,
                at_max: false,
                last_err: None,
                lost: None,
                over: false,
                wakers: Vec::new(),
            })),
            changed: Arc::new(Condvar::new()),
        };
        le.set_deadline(&mut le.lock(), g.sent, g.left, false);
        le
    }

    /// The fencing token: larger than every fence granted before it, on any
    /// lock and key, restarts of the store included (LOCK-02). Send it with
    /// every write the lease protects (`SET … FENCE`, LOCK-12).
    pub fn fence(&self) -> u64 {
        self.fence
    }

    /// The key held.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// Whether the lease is lost: true from the moment a renewal was
    /// answered `-LOST` or the holder's deadline passed. It compares the
    /// deadline with the clock itself, so a holder that wakes from a pause
    /// longer than its ttl learns of the loss at its first call.
    pub fn lost(&self) -> bool {
        self.check(Instant::now())
    }

    /// Why the lease was lost ([`ErrorKind::Lost`](crate::ErrorKind::Lost)
    /// and the reason), or `None` while it is held.
    pub fn loss(&self) -> Option<Error> {
        self.check(Instant::now());
        self.lock().lost.clone()
    }

    /// The holder's deadline: the send time of the last HOLD or RENEW that
    /// succeeded, plus the ttl the store answered, less the margin, capped
    /// at the grant + MaxHold − margin; on the monotonic clock. When it
    /// passes without a renewal the lease is lost.
    pub fn deadline(&self) -> Instant {
        self.lock().deadline
    }

    /// Blocks until the lease is lost or `timeout` has passed, and says
    /// whether it was lost. A closure cannot be stopped from outside: one
    /// that works on another thread can wait here and stop the work.
    pub fn wait_lost(&self, timeout: Duration) -> bool {
        let end = Instant::now() + timeout;
        let mut st = self.lock();
        loop {
            let now = Instant::now();
            if self.check_locked(&mut st, now) {
                return true;
            }
            if now >= end {
                return false;
            }
            let until = if st.over { end } else { end.min(st.deadline) };
            st = self
                .changed
                .wait_timeout(st, until - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Moves the deadline to sent + left − margin, capped; capped says the
    /// store capped left at MAXHOLD.
    fn set_deadline(&self, st: &mut State, sent: Instant, left: Duration, capped: bool) {
        let mut d = sent + left.saturating_sub(self.margin);
        st.at_max = capped;
        if let Some(cap) = self.max_cap {
            if capped {
                // sent + left and the cap are two lower bounds of the same
                // MAXHOLD deadline (less the margin): the later is the closer.
                d = d.max(cap);
            } else if d >= cap {
                d = cap;
                st.at_max = true;
            }
        }
        st.sent = sent;
        st.deadline = d;
    }

    /// Records a RENEW sent at `sent` that answered `left`. A success that
    /// arrives after the holder's deadline does not revive the lease: it was
    /// lost when the deadline passed.
    pub(crate) fn renewed(&self, sent: Instant, left: Duration) {
        let mut st = self.lock();
        if self.check_locked(&mut st, Instant::now()) || sent <= st.sent {
            return;
        }
        self.set_deadline(&mut st, sent, left, left < self.ttl);
        st.last_err = None;
    }

    /// Records the renewal made before the closure starts, which the
    /// deadline of a grant that waited in line may already have passed: the
    /// lease was not in use yet, and the store kept it.
    pub(crate) fn renewed_before_use(&self, sent: Instant, left: Duration) {
        let mut st = self.lock();
        self.set_deadline(&mut st, sent, left, left < self.ttl);
    }

    pub(crate) fn failed_renewal(&self, e: Error) {
        self.lock().last_err = Some(e);
    }

    /// Loses the lease if its deadline has passed at now; reports whether it
    /// is lost.
    pub(crate) fn check(&self, now: Instant) -> bool {
        self.check_locked(&mut self.lock(), now)
    }

    fn check_locked(&self, st: &mut State, now: Instant) -> bool {
        if st.lost.is_some() {
            return true;
        }
        if st.over || now < st.deadline {
            return false;
        }
        let why = if st.at_max {
            reason::MAX_HOLD
        } else {
            reason::EXPIRED
        };
        st.lost = Some(Error::lost(why, false, st.last_err.clone()));
        Lease::notify(st, &self.changed);
        true
    }

    fn notify(st: &mut State, changed: &Condvar) {
        changed.notify_all();
        for w in st.wakers.drain(..) {
            w.wake();
        }
    }

    /// Wakes w when the lease is lost; says whether it is lost already.
    #[cfg_attr(not(feature = "tokio"), allow(dead_code))]
    pub(crate) fn wake_when_lost(&self, w: &Waker) -> bool {
        let mut st = self.lock();
        if self.check_locked(&mut st, std::time::Instant::now()) {
            return true;
        }
        if !st.wakers.iter().any(|x| x.will_wake(w)) {
            st.wakers.push(w.clone());
        }
        false
    }

    /// Marks the lease lost for `e` unless it already is.
    pub(crate) fn lose(&self, e: Error) {
        let mut st = self.lock();
        if st.lost.is_none() {
            st.lost = Some(e);
            Lease::notify(&mut st, &self.changed);
        }
    }

    /// The closure has returned: from now on only the store's word can lose
    /// the lease. Returns the loss so far and the deadline.
    pub(crate) fn end(&self) -> (Option<Error>, Instant) {
        let mut st = self.lock();
        self.check_locked(&mut st, Instant::now());
        st.over = true;
        (st.lost.clone(), st.deadline)
    }
}

impl std::fmt::Debug for Lease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the lease id (LOCK-04).
        f.debug_struct("Lease")
            .field("key", &self.key)
            .field("fence", &self.fence)
            .field("lost", &self.lost())
            .finish()
    }
}

/// Renews one lease while the closure runs, on a thread of the hold's scope
/// (SPEC §8): at the latest ttl/3 after the last success; after a failure,
/// again at least every ttl/10, until the holder's deadline. It returns when
/// the lease is lost or [`Event::Stop`] comes on `chan`.
pub(crate) fn keep<'scope, 'env>(
    s: &'scope Scope<'scope, 'env>,
    lock: &'env Lock,
    lease: &'env Lease,
    mut chan: Attempts<Duration>,
) {
    let (renew_every, retry_every) = (lock.ttl / 3, lock.ttl / 10);
    loop {
        let (renew_at, deadline) = {
            let st = lease.lock();
            (st.sent + renew_every, st.deadline)
        };
        // Capped at MaxHold, nothing is left to renew for past the deadline.
        let next = renew_at.min(deadline);
        loop {
            match chan
                .rx
                .recv_timeout(next.saturating_duration_since(Instant::now()))
            {
                Ok(Event::Stop) => return,
                Ok(Event::Done(..)) => {} // a late attempt of an earlier renewal
                Err(_) => break,
            }
            if Instant::now() >= next {
                break;
            }
        }
        if lease.check(Instant::now()) {
            return;
        }
        let renew = move || {
            let out = lock.send_renew(&lease.id);
            if let Err(f) = &out.result {
                if f.lost_reason().is_none() {
                    lease.failed_renewal(f.clone().into_error());
                }
            }
            out
        };
        match attempts(s, &mut chan, deadline, retry_every, renew) {
            Ended::Stopped => return,
            Ended::GaveUp(last) => {
                if !lease.check(Instant::now()) {
                    // attempts gave up at the deadline, which check sees as
                    // passed; reaching here means a clock gone backwards.
                    lease.lose(Error::lost(
                        reason::EXPIRED,
                        false,
                        last.map(|f| f.into_error()),
                    ));
                }
                return;
            }
            Ended::Answered(out) => match out.result {
                Ok(left) => lease.renewed(out.sent, left),
                Err(f) => {
                    let why = f.lost_reason().unwrap_or(reason::UNKNOWN_LEASE).to_owned();
                    lease.lose(Error::lost(&why, true, None));
                    return;
                }
            },
        }
        if lease.check(Instant::now()) {
            return;
        }
    }
}
