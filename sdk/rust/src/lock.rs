use std::panic::{self, AssertUnwindSafe};
use std::sync::mpsc::{self, RecvTimeoutError, Sender, TryRecvError};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::{self, Scope};
use std::time::{Duration, Instant};

use crate::error::{reason, Error, ErrorKind};
use crate::lease::{keep, Lease};
use crate::wire::{attempts, new_reqid, Attempts, Ended, Event, Failure, Grant, Outcome};
use crate::Store;

/// Ranges of SPEC §3.
const MIN_TTL: Duration = Duration::from_secs(1);
const MAX_TTL: Duration = Duration::from_secs(3600);
const MIN_MAX_HOLD: Duration = Duration::from_secs(1);
const MAX_MAX_HOLD: Duration = Duration::from_secs(24 * 3600);
const MAX_LOCK_LEN: usize = 256;
pub(crate) const MAX_KEY_LEN: usize = 1024;
/// LIMIT n and OWNER text (SPEC §12).
const MAX_LIMIT: u32 = 65536;
pub(crate) const MAX_OWNER_LEN: usize = 256;

const DEFAULT_TTL: Duration = Duration::from_secs(10);
/// The default margin is min(ttl/10, MAX_MARGIN).
const MAX_MARGIN: Duration = Duration::from_secs(2);
/// While waiting in line, a HOLD whose answer was lost is tried again at
/// least this often (and at least every ttl/10), so that the place, which
/// lingers for a second after its request's connection closes, is resumed.
const MAX_WAIT_RETRY: Duration = Duration::from_millis(250);

/// The options of a [`Lock`], checked by [`open`](LockBuilder::open).
#[must_use = "a LockBuilder does nothing until open() is called"]
pub struct LockBuilder {
    store: Store,
    name: String,
    ttl: Duration,
    max_hold: Option<Duration>,
    wait: Option<Duration>,
    margin: Option<Duration>,
    limit: Option<u32>,
    owner: Option<String>,
}

impl LockBuilder {
    pub(crate) fn new(store: Store, name: &str) -> LockBuilder {
        LockBuilder {
            store,
            name: name.to_owned(),
            ttl: DEFAULT_TTL,
            max_hold: None,
            wait: None,
            margin: None,
            limit: None,
            owner: None,
        }
    }

    /// How long a lease lasts without a renewal: from 1 s to 1 h, default
    /// 10 s. A frozen or crashed holder's key returns to the line within one
    /// ttl; a pause longer than about 2/3 of it loses a lease that is still
    /// working.
    pub fn ttl(mut self, d: Duration) -> LockBuilder {
        self.ttl = d;
        self
    }

    /// Caps every lease at `d` after its grant, renewals notwithstanding
    /// (LOCK-07): the store revokes it then, and the SDK gives it up a
    /// margin earlier, reporting it lost with reason `revoked maxhold`.
    /// From 1 s to 24 h; default: no cap.
    pub fn max_hold(mut self, d: Duration) -> LockBuilder {
        self.max_hold = Some(d);
        self
    }

    /// Bounds the time [`Lock::hold`] waits in line; once it has elapsed,
    /// hold returns [`ErrorKind::NotHeld`]. Default: no bound. `wait(0)`
    /// makes hold behave as [`Lock::try_hold`].
    pub fn wait(mut self, d: Duration) -> LockBuilder {
        self.wait = Some(d);
        self
    }

    /// How long before the store's deadline the holder gives a lease up:
    /// default min(ttl/10, 2 s). Raise it when the holder's clock may run
    /// slow against the store's, or when the closure needs time to stop
    /// once the lease is lost; it must stay under half the ttl and under
    /// MaxHold.
    pub fn margin(mut self, d: Duration) -> LockBuilder {
        self.margin = Some(d);
        self
    }

    /// Makes the lock a semaphore (SPEC §12): each key admits up to `n`
    /// leases at once, `n` permits, each a lease of its own (its own fence,
    /// renewal and loss). From 1 to 65536; 1, the default, is a plain lock.
    /// Every holder of a key must agree on `n` while the key is in use: a
    /// hold with another limit returns [`ErrorKind::Store`] with the
    /// store's "this key is in use with LIMIT n", without running its
    /// closure (LOCK-15). A lock with a limit has no shared holds.
    pub fn limit(mut self, n: u32) -> LockBuilder {
        self.limit = Some(n);
        self
    }

    /// The text the store shows of this lock's leases to anyone who asks
    /// who holds a key (LOCK.INFO, LOCK.LIST, LOCK.HOLDERS): 1 to 256
    /// bytes. Default: this host's name and this process's id,
    /// `hostname:pid`. It is information, never a credential (LOCK-16).
    pub fn owner(mut self, text: impl Into<String>) -> LockBuilder {
        self.owner = Some(text.into());
        self
    }

    /// The lock, if every option is in range. It sends nothing.
    pub fn open(self) -> Result<Lock, Error> {
        let bad = |why: String| {
            Error::new(
                ErrorKind::InvalidInput,
                format!("open {:?}: {why}", self.name),
            )
        };
        if self.name.is_empty() || self.name.len() > MAX_LOCK_LEN {
            return Err(bad(format!("lock name must be 1 to {MAX_LOCK_LEN} bytes")));
        }
        if !(MIN_TTL..=MAX_TTL).contains(&self.ttl) {
            return Err(bad(format!(
                "ttl {:?}: must be from {MIN_TTL:?} to {MAX_TTL:?}",
                self.ttl
            )));
        }
        if let Some(m) = self.max_hold {
            if !(MIN_MAX_HOLD..=MAX_MAX_HOLD).contains(&m) {
                return Err(bad(format!(
                    "max_hold {m:?}: must be from {MIN_MAX_HOLD:?} to {MAX_MAX_HOLD:?}"
                )));
            }
        }
        let margin = self.margin.unwrap_or((self.ttl / 10).min(MAX_MARGIN));
        if margin >= self.ttl / 2 {
            return Err(bad(format!(
                "margin {margin:?}: must be under half the ttl ({:?})",
                self.ttl
            )));
        }
        if matches!(self.max_hold, Some(m) if margin >= m) {
            return Err(bad(format!(
                "margin {margin:?}: must be under max_hold ({:?})",
                self.max_hold.unwrap()
            )));
        }
        if matches!(self.limit, Some(n) if !(1..=MAX_LIMIT).contains(&n)) {
            return Err(bad(format!(
                "limit {}: must be from 1 to {MAX_LIMIT}",
                self.limit.unwrap()
            )));
        }
        let owner = self.owner.clone().unwrap_or_else(default_owner);
        if owner.is_empty() || owner.len() > MAX_OWNER_LEN {
            return Err(bad(format!(
                "owner {owner:?}: must be 1 to {MAX_OWNER_LEN} bytes"
            )));
        }
        let chunk = (self.store.pool.options.read_timeout / 2).max(Duration::from_millis(1));
        Ok(Lock {
            store: self.store,
            name: self.name,
            ttl: self.ttl,
            max_hold: self.max_hold,
            wait: self.wait,
            margin,
            chunk,
            // LIMIT 1 is the same as none.
            limit: self.limit.filter(|&n| n > 1),
            owner,
        })
    }
}

/// `hostname:pid`, the hostname cut to fit MAX_OWNER_LEN bytes.
fn default_owner() -> String {
    let mut host = hostname().unwrap_or_default();
    if host.is_empty() {
        host = "unknown".to_owned();
    }
    let pid = format!(":{}", std::process::id());
    while host.len() + pid.len() > MAX_OWNER_LEN {
        host.pop();
    }
    host + &pid
}

/// This host's name, as gethostname(2) tells it.
fn hostname() -> Option<String> {
    let mut buf = [0u8; 256];
    // SAFETY: buf is writable for its whole length, which is what is passed.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return None;
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8(buf[..end].to_vec()).ok()
}

/// One named lock of a store, with the options its leases are held with.
/// It holds no connection of its own; share it between threads by
/// reference (it is `Sync`) or clone it.
#[derive(Clone)]
pub struct Lock {
    pub(crate) store: Store,
    pub(crate) name: String,
    pub(crate) ttl: Duration,
    pub(crate) max_hold: Option<Duration>,
    pub(crate) wait: Option<Duration>,
    pub(crate) margin: Duration,
    /// WAIT of each HOLD sent while waiting in line: half the read timeout
    pub(crate) chunk: Duration,
    /// the LIMIT sent with every HOLD; None for none (a limit of 1)
    pub(crate) limit: Option<u32>,
    /// the OWNER sent with every HOLD
    pub(crate) owner: String,
}

impl std::fmt::Debug for Lock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lock")
            .field("name", &self.name)
            .field("ttl", &self.ttl)
            .field("max_hold", &self.max_hold)
            .field("wait", &self.wait)
            .field("margin", &self.margin)
            .field("limit", &self.limit)
            .field("owner", &self.owner)
            .finish()
    }
}

impl Lock {
    /// The lock's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Waits in line for `key`, then runs `f` while holding it, renewing the
    /// lease on a thread of the SDK's own, and lets the key go when `f`
    /// returns or panics.
    ///
    /// Returns:
    /// - `f`'s value, or its error, if the lease was held until `f`
    ///   returned (`f` returns this crate's [`Error`], into which `?`
    ///   converts any error as [`ErrorKind::Other`]);
    /// - [`ErrorKind::Lost`] with the [`reason`](Error::reason) if the lease
    ///   was lost before `f` returned, **even if `f` returned `Ok`**: another
    ///   holder may have run beside it. `f`'s own error, if any, is kept
    ///   beside it ([`Error::closure_error`]);
    /// - [`ErrorKind::NotHeld`], without running `f`, if the wait elapsed;
    /// - another error, without running `f`, if the store refused the
    ///   request ([`ErrorKind::Denied`] for a read-only user) or could not
    ///   be reached for a whole ttl.
    ///
    /// A panic in `f` resumes once the key is let go. hold returns once
    /// every command it sent has answered or failed: with a network that
    /// swallows replies, that is bounded by the read timeout.
    ///
    /// On a lock with a [`limit`](LockBuilder::limit), hold holds one of
    /// the key's permits: it waits while all are held. Otherwise it holds
    /// the key alone (a writer): it waits while anyone holds it, readers
    /// ([`hold_shared`](Lock::hold_shared)) included.
    pub fn hold<T, F>(&self, key: &str, f: F) -> Result<T, Error>
    where
        F: FnOnce(&Lease) -> Result<T, Error>,
    {
        self.run(key, f, false, false, None)
    }

    /// [`hold`](Lock::hold) that does not wait in line: if `key` is held it
    /// returns [`ErrorKind::NotHeld`] at once, without running `f`.
    pub fn try_hold<T, F>(&self, key: &str, f: F) -> Result<T, Error>
    where
        F: FnOnce(&Lease) -> Result<T, Error>,
    {
        self.run(key, f, true, false, None)
    }

    /// [`hold`](Lock::hold) as a reader (SPEC §12, `SHARED`): the key is
    /// shared with other readers and never with a [`hold`](Lock::hold) (a
    /// writer). The line stays one: a reader that comes while a writer
    /// waits waits behind it (LOCK-08). Everything `hold` says of a lease
    /// holds of a reader's: its own fence, renewal, loss, release. A lock
    /// with a [`limit`](LockBuilder::limit) has no readers: hold_shared on
    /// one returns [`ErrorKind::InvalidInput`] without sending anything.
    pub fn hold_shared<T, F>(&self, key: &str, f: F) -> Result<T, Error>
    where
        F: FnOnce(&Lease) -> Result<T, Error>,
    {
        self.run(key, f, false, true, None)
    }

    /// [`hold_shared`](Lock::hold_shared) that does not wait in line: if
    /// `key` is held by a writer, or a writer waits for it, it returns
    /// [`ErrorKind::NotHeld`] at once, without running `f`.
    pub fn try_hold_shared<T, F>(&self, key: &str, f: F) -> Result<T, Error>
    where
        F: FnOnce(&Lease) -> Result<T, Error>,
    {
        self.run(key, f, true, true, None)
    }

    /// [`hold`](Lock::hold) that stops waiting in line when `cancel` is
    /// cancelled: it returns [`ErrorKind::NotHeld`] without running `f`,
    /// leaves no place behind, and lets go of a grant that raced in. A
    /// cancel that comes once `f` runs does not stop `f`.
    pub fn hold_or_cancel<T, F>(&self, key: &str, cancel: &Cancel, f: F) -> Result<T, Error>
    where
        F: FnOnce(&Lease) -> Result<T, Error>,
    {
        self.run(key, f, false, false, Some(cancel))
    }

    pub(crate) fn run<T, F>(
        &self,
        key: &str,
        f: F,
        try_once: bool,
        shared: bool,
        cancel: Option<&Cancel>,
    ) -> Result<T, Error>
    where
        F: FnOnce(&Lease) -> Result<T, Error>,
    {
        let what = format!("hold {} {key:?}", self.name);
        if key.is_empty() || key.len() > MAX_KEY_LEN {
            return Err(Error::new(
                ErrorKind::InvalidInput,
                format!("{what}: key must be 1 to {MAX_KEY_LEN} bytes"),
            ));
        }
        if shared && self.limit.is_some() {
            return Err(Error::new(
                ErrorKind::InvalidInput,
                format!("{what}: a lock with a limit has no shared holds"),
            ));
        }
        // The lease lives outside the scope, so that the scope's threads
        // (the keeper, the attempts) may borrow it.
        let slot: OnceLock<Lease> = OnceLock::new();
        let outcome = thread::scope(|s| {
            let g = self
                .acquire(s, key, try_once, shared, cancel)
                .map_err(|e| e.context(&what))?;
            let lease = slot.get_or_init(|| Lease::new(self, key, &g));

            // A HOLD that waited in line was granted after it was sent,
            // which is what its deadline counts from. Renew before f starts
            // rather than start f on a deadline that may soon pass.
            if g.sent.elapsed() >= self.ttl / 3 {
                self.renew_before_use(s, lease, &g)
                    .map_err(|e| e.context(&what))?;
            }
            if cancel.is_some_and(Cancel::is_cancelled) {
                self.release(s, &lease.id, lease.deadline());
                let e = Error::new(ErrorKind::NotHeld, "cancelled as the key was granted");
                return Err(e.context(&what));
            }

            let chan = Attempts::new();
            let stop = chan.tx.clone();
            let keeper = s.spawn(move || keep(s, self, lease, chan));
            let result = panic::catch_unwind(AssertUnwindSafe(|| f(lease)));
            let _ = stop.send(Event::Stop);
            let _ = keeper.join();
            let lost = self.let_go(s, lease);
            Ok::<_, Error>((result, lost))
        });
        let (result, lost) = outcome?;
        match (result, lost) {
            (Err(payload), _) => panic::resume_unwind(payload),
            (Ok(Ok(v)), None) => Ok(v),
            (Ok(Ok(_)), Some(lost)) => Err(lost.context(&what)),
            (Ok(Err(e)), None) => Err(e),
            (Ok(Err(e)), Some(lost)) => Err(lost.context(&what).with_closure_error(e)),
        }
    }

    /// Gets `key` for one request id (SPEC §8). Waiting in line is a chain
    /// of HOLDs with that id, each waiting one chunk (half the read
    /// timeout, so that its answer comes before the read gives up). A
    /// network error or lost answer is retried with the same id, on
    /// whatever connection the pool hands out, and answered the same lease
    /// (LOCK-03).
    ///
    /// The chunks overlap, so that the place in line is never left open:
    /// once a quarter of a chunk has passed, the next HOLD goes out on
    /// another connection and supersedes the blocked one at the store
    /// (which answers that one "superseded", ignored here). Were the next
    /// HOLD sent only after the previous one's WAIT ran out, the place
    /// would linger in between, passed over, and a release then would
    /// grant a later waiter first (LOCK-08). Whichever answer carries the
    /// grant wins; a HOLD that reaches the store after the grant is
    /// answered the same lease (LOCK-03). The last chunk of a bounded wait
    /// has no successor, nor has a chunk whose WAIT ran out before its
    /// successor went (this process paused): its answer comes first, as it
    /// may be a grant, and a HOLD sent long after a grant may reach a store
    /// that has forgotten the request id. A pause between the send of a
    /// successor and its write to the network can still do that; the grant
    /// it gets is released.
    ///
    /// A request id is kept only while the store surely remembers it (the
    /// request-id window, SPEC §8): a grant to it came no earlier than
    /// `not_before`, the send time of the oldest HOLD not yet answered null
    /// or "superseded", and the store remembers the id for at least the
    /// lease's ttl after the lease ends, so until at least not_before + ttl.
    /// A HOLD with the id is sent only while now < not_before + ttl -
    /// margin (the holder's margin, for the time the HOLD takes to reach the
    /// store). Past that a lost answer is asked again with a fresh id: the
    /// hold joins the line anew, and a lease granted to the old id, if any,
    /// is never renewed and runs out; an answer that brings it after all is
    /// kept if it comes first, let go if not.
    fn acquire<'scope, 'env>(
        &'env self,
        s: &'scope Scope<'scope, 'env>,
        key: &'env str,
        try_once: bool,
        shared: bool,
        cancel: Option<&Cancel>,
    ) -> Result<Grant, Error> {
        let mut reqid = new_reqid()?;
        // how many times a fresh request id was drawn, and the not_before
        // of each earlier one (for its grant's MaxHold)
        let mut gen: u64 = 0;
        let mut old_not_before: Vec<Instant> = Vec::new();
        let window = self.reqid_window();
        let start = Instant::now();
        let wait_until = match self.wait {
            _ if try_once => Some(start),
            Some(w) => Some(start + w),
            None => None,
        };
        let retry_every = (self.ttl / 10).min(MAX_WAIT_RETRY);
        let (tx, rx) = mpsc::channel::<Arrival>();
        let watched = match cancel {
            Some(c) => match c.watch(tx.clone()) {
                None => return Err(Error::new(ErrorKind::NotHeld, "cancelled before it waited")),
                Some(n) => Some((c, n)),
            },
            None => None,
        };
        let mut in_flight = 0;
        // when the next HOLD is due; None: when an answer comes
        let mut next_send = Some(start);
        let mut failing_since: Option<Instant> = None;
        // no grant of the current request id came before this
        let mut not_before: Option<Instant> = None;
        // the newest HOLD sent, and whether it has yet to answer (then the
        // next one overlaps it)
        let mut cur = HoldCall {
            seq: 0,
            sent: start,
            wait: Duration::ZERO,
        };
        let mut cur_open = false;
        let result = loop {
            let arrival = match next_send {
                Some(t) if Instant::now() >= t => match rx.try_recv() {
                    // An answer came meanwhile (after a pause, say): it
                    // may be the grant, and then no other HOLD may go.
                    Ok(a) => a,
                    Err(TryRecvError::Empty) => {
                        let now = Instant::now();
                        if cur_open && now >= cur.sent + cur.wait {
                            // cur's WAIT has run out: too late to overlap
                            // it (this process paused, or is overloaded),
                            // and its answer is due. A HOLD sent now could
                            // go out long after a grant that came
                            // meanwhile, and after the store forgot the
                            // request id: a second lease (LOCK-03).
                            next_send = None;
                            continue;
                        }
                        let past_window = not_before.is_some_and(|t| now >= t + window);
                        if past_window && cur_open {
                            // Answers are late (lost, or this process
                            // paused): cur may have been granted, and a
                            // successor may reach a store that has
                            // forgotten the request id. cur's answer is
                            // due.
                            next_send = None;
                            continue;
                        }
                        if past_window {
                            // The store may have forgotten the request id
                            // (SPEC §8): a HOLD with it could get a second
                            // lease (LOCK-03). Start over.
                            reqid = match new_reqid() {
                                Ok(r) => r,
                                Err(e) => break Err(e),
                            };
                            gen += 1;
                            old_not_before.extend(not_before.take());
                        }
                        let wait = match wait_until {
                            Some(until) => self.chunk.min(until.saturating_duration_since(now)),
                            None => self.chunk,
                        };
                        cur = HoldCall {
                            seq: cur.seq + 1,
                            sent: now,
                            wait,
                        };
                        cur_open = true;
                        not_before.get_or_insert(now);
                        // The last chunk of a bounded wait needs no
                        // successor.
                        next_send = match wait_until {
                            _ if wait.is_zero() => None,
                            Some(until) if now + wait >= until => None,
                            // Within the window too, with room for an
                            // answer to move not_before on first.
                            _ => Some(now + wait.min(window) / OVERLAP_AT),
                        };
                        in_flight += 1;
                        let (tx, reqid, call) = (tx.clone(), reqid.clone(), cur);
                        s.spawn(move || {
                            let out = call.stamp(self.send_hold(key, &reqid, call.wait, shared));
                            let _ = tx.send(Arrival::Answer(call.seq, gen, out));
                        });
                        continue;
                    }
                    Err(TryRecvError::Disconnected) => unreachable!("acquire holds a sender"),
                },
                Some(t) => match rx.recv_timeout(t.saturating_duration_since(Instant::now())) {
                    Ok(a) => a,
                    Err(RecvTimeoutError::Timeout) => continue,
                    Err(RecvTimeoutError::Disconnected) => unreachable!("acquire holds a sender"),
                },
                None => rx.recv().expect("acquire holds a sender"),
            };
            let (seq, from, out) = match arrival {
                Arrival::Answer(seq, from, out) => (seq, from, out),
                Arrival::Cancelled => {
                    let send_by = not_before.map(|t| t + window);
                    break Err(self.abandon(s, key, &reqid, shared, retry_every, send_by));
                }
            };
            in_flight -= 1;
            if from != gen {
                // A HOLD of an earlier request id: its grant is a lease as
                // good as any; anything else it says is of no concern any
                // more.
                if let Ok(Some(mut g)) = out.result {
                    g.not_before = old_not_before[from as usize];
                    break Ok(g);
                }
                if in_flight == 0 && next_send.is_none() {
                    next_send = Some(Instant::now());
                }
                continue;
            }
            let newest = seq == cur.seq;
            if newest {
                cur_open = false;
            }
            let now = Instant::now();
            let elapsed = wait_until.is_some_and(|u| now >= u);
            match out.result {
                Ok(Some(mut g)) => {
                    g.not_before = not_before.unwrap_or(g.sent);
                    break Ok(g);
                }
                Ok(None) => {
                    // Not granted within its WAIT; the place lingers. Nor
                    // was any earlier HOLD granted (LOCK-03).
                    not_before = not_before.max(Some(out.sent));
                    failing_since = None;
                    if elapsed && in_flight == 0 {
                        break Err(match self.wait {
                            Some(w) if !try_once => {
                                Error::new(ErrorKind::NotHeld, format!("waited {w:?}"))
                            }
                            _ => Error::new(ErrorKind::NotHeld, "held by another"),
                        });
                    }
                    if newest && !elapsed {
                        next_send = Some(now);
                    }
                }
                Err(f) if f.superseded() => {
                    // Our own next chunk took the place: this one was not
                    // granted when the store answered.
                    if !newest {
                        not_before = not_before.max(Some(out.sent));
                    }
                    failing_since = None;
                }
                Err(f) => {
                    if let Some(r) = f.lost_reason() {
                        // Granted, but the answer was lost and the lease
                        // ended before this retry: f never ran.
                        break Err(Error::new(
                            ErrorKind::NotHeld,
                            format!("the grant's answer was lost, and then the lease: {r}"),
                        ));
                    }
                    if !f.transient() {
                        break Err(f.into_error());
                    }
                    let since = *failing_since.get_or_insert(out.sent);
                    if now.duration_since(since) > self.ttl {
                        // Any lease granted on the way has run out by now.
                        break Err(f
                            .into_error()
                            .context(format!("no answer for {:?}", self.ttl)));
                    }
                    if newest || in_flight == 0 {
                        // It may have been granted: ask again with the same
                        // id (not_before stays, as the grant may be this
                        // HOLD's), a last time with WAIT 0 if the wait is
                        // over.
                        let retry = out.sent + retry_every;
                        next_send = Some(next_send.map_or(retry, |t| t.min(retry)));
                    }
                }
            }
            if in_flight == 0 && next_send.is_none() {
                next_send = Some(now);
            }
        };
        if let Some((c, n)) = watched {
            c.unwatch(n);
        }
        // A chunk still out may yet be granted: a grant other than the one
        // kept (a HOLD that reached the store after it forgot the request
        // id) is let go at once. On success that runs beside the closure.
        let kept = result.as_ref().ok().map(|g| g.id.clone());
        let settle = move || {
            let mut outstanding = in_flight;
            while outstanding > 0 {
                if let Arrival::Answer(_, _, out) =
                    rx.recv().expect("each HOLD outstanding holds a sender")
                {
                    outstanding -= 1;
                    match out.result {
                        Ok(Some(g)) if Some(&g.id) != kept.as_ref() => {
                            self.release(s, &g.id, g.received + g.left);
                        }
                        _ => {}
                    }
                }
            }
        };
        if result.is_ok() {
            s.spawn(settle);
        } else {
            settle();
        }
        result
    }

    /// How long after `not_before` (no grant to a request id came earlier)
    /// a HOLD may still carry that id (SPEC §8). The store remembers an id
    /// for at least the lease's ttl after the lease ends, and the lease
    /// starts at the grant, so until at least not_before + ttl by its clock;
    /// the holder's margin is for the time the HOLD takes to get there.
    fn reqid_window(&self) -> Duration {
        self.ttl - self.margin
    }

    /// Stops waiting for reqid when the hold is cancelled. A HOLD with the
    /// same reqid and WAIT 0 answers the blocked one at once (superseded),
    /// leaves the place to linger, passed over, and says whether a grant
    /// came first (then it is that grant, LOCK-03, and it is let go). An
    /// answer lost on the way says nothing: it is asked again, until the
    /// store answers or a ttl has passed (any grant has run out by then).
    /// A probe goes only before `send_by`, the end of the request id's
    /// window (SPEC §8): later, the store may have forgotten the id and
    /// would grant the probe a second lease. A lease granted before, its
    /// answer lost, runs out unrenewed.
    fn abandon<'scope, 'env>(
        &'env self,
        s: &'scope Scope<'scope, 'env>,
        key: &str,
        reqid: &str,
        shared: bool,
        retry_every: Duration,
        send_by: Option<Instant>,
    ) -> Error {
        let give_up = Instant::now() + self.ttl;
        while send_by.is_none_or(|t| Instant::now() < t) {
            let probe = self.send_hold(key, reqid, Duration::ZERO, shared);
            match probe.result {
                Ok(Some(g)) => {
                    self.release(s, &g.id, g.received + g.left);
                    break;
                }
                Err(Failure::NoAnswer(_)) if Instant::now() < give_up => thread::sleep(retry_every),
                _ => break,
            }
        }
        Error::new(ErrorKind::NotHeld, "cancelled while waiting in line")
    }

    /// Renews a lease that was granted after waiting in line, before the
    /// closure starts. The store's deadline is at most the answer's arrival
    /// plus the ttl it answered: renewals are tried until then.
    fn renew_before_use<'scope, 'env>(
        &'env self,
        s: &'scope Scope<'scope, 'env>,
        lease: &'env Lease,
        g: &Grant,
    ) -> Result<(), Error> {
        let (id, until) = (&lease.id, g.received + g.left);
        match attempts(s, &mut Attempts::new(), until, self.ttl / 10, move || {
            self.send_renew(id)
        }) {
            Ended::Answered(out) => match out.result {
                Ok(left) => {
                    lease.renewed_before_use(out.sent, left);
                    Ok(())
                }
                Err(f) => Err(Error::new(
                    ErrorKind::NotHeld,
                    format!(
                        "the lease ended before the closure started: {}",
                        f.lost_reason().unwrap_or_default()
                    ),
                )),
            },
            Ended::GaveUp(last) => {
                self.release(s, &lease.id, Instant::now() + self.ttl / 10);
                let why = last.map_or_else(
                    || Error::new(ErrorKind::Io, "no answer in time"),
                    |f| f.into_error(),
                );
                Err(why.context("renew after the grant"))
            }
            Ended::Stopped => unreachable!("nothing stops a renewal before the closure starts"),
        }
    }

    /// Lets the lease go once the closure has returned or panicked (SPEC
    /// §8): releases it with its id, retrying until the holder's deadline.
    /// Returns why the lease was lost, if it was before the closure
    /// returned; a RELEASE answered `-LOST` says so too.
    ///
    /// A reason the holder already knows stands: the store's answer to the
    /// RELEASE replaces it only when it tells more. After the holder's own
    /// deadline passed, a store that forgot the ended lease (it remembers
    /// one for a ttl) answers `unknown lease`, which is not news; an admin's
    /// revoke that came first is, and so is a restart (a new epoch).
    fn let_go<'scope, 'env>(
        &'env self,
        s: &'scope Scope<'scope, 'env>,
        lease: &'env Lease,
    ) -> Option<Error> {
        let (lost, deadline) = lease.end();
        match lost {
            None => {
                let store_says = self.release(s, &lease.id, deadline)?;
                lease.lose(store_says.clone());
                Some(store_says)
            }
            Some(ours) if !ours.from_store() => {
                // Given up by the holder's clock: the store may still hold
                // it for a margin. One try hands it to the next in line
                // early, and may say what the store knows.
                let Some(store_says) = self.release(s, &lease.id, Instant::now() + self.ttl / 10)
                else {
                    return Some(ours);
                };
                let tells_more = match store_says.reason() {
                    Some(reason::REVOKED) => true,
                    Some(reason::UNKNOWN_LEASE) => self.restarted_since(lease),
                    _ => false,
                };
                Some(if tells_more { store_says } else { ours })
            }
            Some(ours) => Some(ours),
        }
    }

    /// Whether the store is in a newer epoch than the one that granted the
    /// lease (`fence >> 32`, SPEC §2): each open of the store is a new one
    /// and forgets every lease (LOCK-10), so it restarted since. Unknown
    /// (the store unreachable, its answer unreadable) counts as no.
    fn restarted_since(&self, lease: &Lease) -> bool {
        let Ok(info) = self.store.call(&["INFO", "locks"]) else {
            return false;
        };
        let text = match &info {
            redis::Value::BulkString(b) => std::str::from_utf8(b).ok(),
            redis::Value::VerbatimString { text, .. } => Some(text.as_str()),
            redis::Value::SimpleString(s) => Some(s.as_str()),
            _ => None,
        };
        let epoch = text.and_then(|text| {
            text.lines()
                .find_map(|l| l.strip_prefix("epoch:"))
                .and_then(|n| n.trim().parse::<u64>().ok())
        });
        epoch.is_some_and(|e| e > lease.fence() >> 32)
    }

    /// Releases the lease: RELEASE, retried with the same id until one is
    /// answered or `until` passes. Returns the store's `-LOST` answer, if
    /// any but "released" (a retry of a RELEASE that did release).
    fn release<'scope, 'env>(
        &'env self,
        s: &'scope Scope<'scope, 'env>,
        id: &str,
        until: Instant,
    ) -> Option<Error> {
        let id = id.to_owned();
        match attempts(s, &mut Attempts::new(), until, self.ttl / 10, move || {
            self.send_release(&id)
        }) {
            Ended::Answered(Outcome { result: Err(f), .. }) => match f.lost_reason() {
                Some(reason::RELEASED) | None => None,
                Some(r) => Some(Error::lost(r, true, None)),
            },
            _ => None,
        }
    }
}

/// What a waiting hold hears: a HOLD's answer (with its number), or its
/// cancellation.
pub(crate) enum Arrival {
    /// a HOLD's answer: its seq, which request id of the hold it carried
    /// (0 for the first), and what it got
    Answer(u64, u64, Outcome<Option<Grant>>),
    Cancelled,
}

/// When, in a chunk, the next one is sent: at wait/OVERLAP_AT. Early, so
/// that the next HOLD has three quarters of the chunk to reach the store (a
/// busy machine, a slow network, a descheduled thread) before the place
/// would linger; a HOLD each quarter chunk per waiter is cheap.
const OVERLAP_AT: u32 = 4;

/// One HOLD that acquire sent.
#[derive(Clone, Copy)]
struct HoldCall {
    seq: u64,
    /// when acquire handed it to its thread: no later than its send
    sent: Instant,
    wait: Duration,
}

impl HoldCall {
    /// out, with its times of sending set to this call's.
    fn stamp(self, mut out: Outcome<Option<Grant>>) -> Outcome<Option<Grant>> {
        out.sent = self.sent;
        if let Ok(Some(g)) = &mut out.result {
            g.sent = self.sent;
            g.not_before = self.sent;
        }
        out
    }
}

/// Stops holds that wait in line, from another thread:
/// [`Lock::hold_or_cancel`] returns [`ErrorKind::NotHeld`] soon after
/// [`cancel`](Cancel::cancel), leaving no place in line behind (it lingers
/// for a second, passed over) and letting go any grant that raced in. A
/// closure already running is not stopped: it may look at
/// [`is_cancelled`](Cancel::is_cancelled) itself. Once cancelled, a Cancel
/// stays cancelled; clones share it.
#[derive(Clone, Default)]
pub struct Cancel {
    inner: Arc<Mutex<CancelState>>,
}

#[derive(Default)]
struct CancelState {
    cancelled: bool,
    /// the holds waiting with this Cancel, numbered
    waiting: Vec<(u64, Sender<Arrival>)>,
    next: u64,
}

impl Cancel {
    /// A Cancel not yet cancelled.
    pub fn new() -> Cancel {
        Cancel::default()
    }

    /// Cancels every hold that waits with this Cancel, and every later one.
    pub fn cancel(&self) {
        let mut st = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        st.cancelled = true;
        for (_, w) in st.waiting.drain(..) {
            let _ = w.send(Arrival::Cancelled);
        }
    }

    /// Whether [`cancel`](Cancel::cancel) was called.
    pub fn is_cancelled(&self) -> bool {
        self.inner
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .cancelled
    }

    /// Tells tx of the cancellation, under the returned number; None if it
    /// has come already.
    fn watch(&self, tx: Sender<Arrival>) -> Option<u64> {
        let mut st = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        if st.cancelled {
            return None;
        }
        st.next += 1;
        let n = st.next;
        st.waiting.push((n, tx));
        Some(n)
    }

    fn unwatch(&self, n: u64) {
        self.inner
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .waiting
            .retain(|(m, _)| *m != n);
    }
}

impl std::fmt::Debug for Cancel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cancel")
            .field("cancelled", &self.is_cancelled())
            .finish()
    }
}
