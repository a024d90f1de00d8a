//! Elections (SPEC §12) are locks: the leader of (lock, key) is its holder,
//! the value it proclaims is the lease's OWNER, and its term is the lease's
//! fence, larger for every later leader, across restarts and failovers
//! (LOCK-02). Campaign is hold with the value as owner and no wait limit;
//! leader reads LOCK.INFO; observe runs LOCK.WATCH in a loop.

use std::fmt;
use std::time::Duration;

use redis::Value;

use crate::error::{Error, ErrorKind};
use crate::lock::{Cancel, Lock, MAX_KEY_LEN, MAX_OWNER_LEN};
use crate::Lease;

/// Who leads an election: the value it campaigned with (the lease's owner)
/// and its term, the fence of its lease, larger for every later leader
/// (LOCK-02). "No one leads" is `None` wherever a `Leader` may be absent
/// ([`Lock::leader`], [`Observer`]).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Leader {
    /// The value the leader campaigned with.
    pub owner: String,
    /// Its term: the fence of its lease.
    pub fence: u64,
}

impl fmt::Display for Leader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?} (term {})", self.owner, self.fence)
    }
}

/// The pause after an error the observer outlasts grows from MIN_BACKOFF to MAX_BACKOFF.
const MIN_BACKOFF: Duration = Duration::from_millis(50);
const MAX_BACKOFF: Duration = Duration::from_secs(1);

/// The fence and owner of a LOCK.INFO-shaped reply (LOCK.INFO, LOCK.WATCH):
/// a flat array of field and value (RESP2), a map (RESP3), or nil (free). A
/// free key and one with only places in line (fence 0) are both `None`.
pub(crate) fn leader_of(v: &Value) -> Result<Option<Leader>, Error> {
    let bad = |why: String| Error::new(ErrorKind::Protocol, why);
    let pairs: Vec<(&Value, &Value)> = match v {
        Value::Nil => return Ok(None),
        Value::Array(a) => a.chunks_exact(2).map(|p| (&p[0], &p[1])).collect(),
        Value::Map(m) => m.iter().map(|(k, v)| (k, v)).collect(),
        other => {
            return Err(bad(format!(
                "a reply of {other:?}, want LOCK.INFO's fields"
            )))
        }
    };
    let (mut fence, mut owner) = (None, None);
    for (k, v) in pairs {
        match (text(k).as_deref(), v) {
            (Some("fence"), Value::Int(n)) => fence = Some(*n as u64),
            (Some("fence"), v) => return Err(bad(format!("fence is {v:?}"))),
            (Some("owner"), v) => {
                owner = Some(text(v).ok_or_else(|| bad(format!("owner is {v:?}")))?)
            }
            _ => {}
        }
    }
    match (fence, owner) {
        (Some(0), Some(_)) => Ok(None),
        (Some(fence), Some(owner)) => Ok(Some(Leader { owner, fence })),
        _ => Err(bad("a reply without fence and owner".to_owned())),
    }
}

fn text(v: &Value) -> Option<String> {
    match v {
        Value::BulkString(b) => Some(String::from_utf8_lossy(b).into_owned()),
        Value::SimpleString(s) => Some(s.clone()),
        Value::VerbatimString { text, .. } => Some(text.clone()),
        _ => None,
    }
}

/// Whether the observer may outlast a failure by trying again: anything on
/// the way (the network, a restart, -TRYAGAIN, -CLUSTERDOWN, -LOADING) but
/// the store's refusals that no retry changes.
fn outlasts(e: &redis::RedisError) -> bool {
    if e.kind() == redis::ErrorKind::AuthenticationFailed {
        return false;
    }
    match crate::wire::reply_text(e) {
        None => true,
        Some(r) => ![
            "NOPERM",
            "NOAUTH",
            "WRONGPASS",
            "ERR unknown command",
            "ERR syntax",
            "ERR wrong number",
        ]
        .iter()
        .any(|p| r.starts_with(p)),
    }
}

/// The epoch of a fence (SPEC §2): its high 32 bits.
fn epoch(fence: u64) -> u64 {
    fence >> 32
}

impl Lock {
    /// Campaigns in the election `key` (SPEC §12): waits in line, with no
    /// limit (the lock's [`wait`](crate::LockBuilder::wait) does not apply: a
    /// candidate waits its turn), until it leads, then runs `f` as the
    /// leader. `value` (1 to 256 bytes: its address, say) is what
    /// [`leader`](Lock::leader) and [`observe`](Lock::observe) show of it,
    /// and [`Lease::fence`] is its term.
    ///
    /// It is [`hold`](Lock::hold) with `value` as the lease's owner, by the
    /// same rules: a leadership lost (revoked, expired, the store restarted)
    /// fires the lease's loss ([`Lease::is_lost`] and the rest), and
    /// campaign then returns [`ErrorKind::Lost`], even if `f` returned `Ok`;
    /// when `f` returns the key is let go, which is resigning, and the next
    /// candidate in line leads at once. A `value` out of range is
    /// [`ErrorKind::InvalidInput`].
    ///
    /// Whatever a leader writes to a resource that others may write after
    /// it should carry its term (`SET … FENCE`, or the resource's own check
    /// of the fence), so that a leader that lost its lease without noticing
    /// (a paused process) cannot overwrite its successor's work.
    pub fn campaign<T, F>(&self, key: &str, value: &str, f: F) -> Result<T, Error>
    where
        F: FnOnce(&Lease) -> Result<T, Error>,
    {
        self.candidate(key, value)?.run(key, f, false, false, None)
    }

    /// [`campaign`](Lock::campaign) that stops waiting in line when `cancel`
    /// is cancelled, as [`hold_or_cancel`](Lock::hold_or_cancel).
    pub fn campaign_or_cancel<T, F>(
        &self,
        key: &str,
        value: &str,
        cancel: &Cancel,
        f: F,
    ) -> Result<T, Error>
    where
        F: FnOnce(&Lease) -> Result<T, Error>,
    {
        self.candidate(key, value)?
            .run(key, f, false, false, Some(cancel))
    }

    /// This lock with `value` as its owner and no wait limit.
    pub(crate) fn candidate(&self, key: &str, value: &str) -> Result<Lock, Error> {
        if value.is_empty() || value.len() > MAX_OWNER_LEN {
            return Err(Error::new(
                ErrorKind::InvalidInput,
                format!(
                    "campaign {} {key:?}: the value must be 1 to {MAX_OWNER_LEN} bytes",
                    self.name
                ),
            ));
        }
        let mut c = self.clone();
        c.owner = value.to_owned();
        c.wait = None;
        Ok(c)
    }

    /// The election `key`'s leader now (LOCK.INFO), or `None` when no one
    /// leads. On a key held shared or with a limit it is the newest of its
    /// holders.
    pub fn leader(&self, key: &str) -> Result<Option<Leader>, Error> {
        let what = || format!("leader of {} {key:?}", self.name);
        let v = self
            .store
            .pool
            .call(&["LOCK.INFO", &self.name, key])
            .map_err(|e| Error::from_redis(e).context(what()))?;
        leader_of(&v).map_err(|e| e.context(what()))
    }

    /// Follows the election `key`: an iterator that yields the leader now
    /// (or `None`: no one leads) first, then every change the store reports
    /// (LOCK.WATCH), each `next` blocking until there is one. A consumer
    /// that is slow sees the latest leader, not every one that came and
    /// went meanwhile.
    ///
    /// The fences of the leaders it yields only increase: it never yields a
    /// term older than one it yielded. It outlives cut connections, store
    /// restarts and cluster failovers by watching again with the last
    /// fence it saw: a new epoch shows as `None`, then the new leader.
    /// Errors it may outlast (the network, -TRYAGAIN, -CLUSTERDOWN) it
    /// retries every 50 ms to 1 s.
    ///
    /// observe reads the leader now before it returns: the store's refusal
    /// (a wrong password, a user that may not read, a store without
    /// LOCK.WATCH) is its `Err`. Should the store refuse later, the
    /// iterator ends and [`Observer::error`] says why. Each LOCK.WATCH waits
    /// at most half the store's read timeout, on one of its connections.
    pub fn observe(&self, key: &str) -> Result<Observer, Error> {
        self.observer(key, None)
    }

    /// [`observe`](Lock::observe) whose iterator ends once `cancel` is
    /// cancelled: at its next change, or within half the store's read
    /// timeout.
    pub fn observe_or_cancel(&self, key: &str, cancel: &Cancel) -> Result<Observer, Error> {
        self.observer(key, Some(cancel.clone()))
    }

    pub(crate) fn observer(&self, key: &str, cancel: Option<Cancel>) -> Result<Observer, Error> {
        if key.is_empty() || key.len() > MAX_KEY_LEN {
            return Err(Error::new(
                ErrorKind::InvalidInput,
                format!(
                    "observe {} {key:?}: the key must be 1 to {MAX_KEY_LEN} bytes",
                    self.name
                ),
            ));
        }
        let mut o = Observer {
            lock: self.clone(),
            key: key.to_owned(),
            cancel,
            fence: 0,
            last: None,
            yielded: false,
            top: 0,
            first: None,
            error: None,
        };
        // The first answer is the key as it is (LOCK.INFO): a LOCK.WATCH with
        // FENCE 0 on a free key would wait for a change.
        match self.store.pool.call(&["LOCK.INFO", &self.name, key]) {
            Ok(v) => o.first = leader_of(&v).ok(),
            Err(e) if !outlasts(&e) => {
                return Err(Error::from_redis(e).context(format!("observe {} {key:?}", self.name)))
            }
            Err(_) => {} // next asks again
        }
        Ok(o)
    }
}

/// The iterator of [`Lock::observe`]: each item is the leader (`Some`) or
/// "no one leads" (`None`), the first one the leader when observe was
/// called. It ends only when cancelled ([`Lock::observe_or_cancel`]) or
/// when the store refuses for good ([`Observer::error`]).
pub struct Observer {
    lock: Lock,
    key: String,
    cancel: Option<Cancel>,
    /// what the next LOCK.WATCH waits to change
    fence: u64,
    /// the last one yielded
    last: Option<Leader>,
    yielded: bool,
    /// the largest fence yielded
    top: u64,
    /// the leader observe read, not yet yielded
    first: Option<Option<Leader>>,
    error: Option<Error>,
}

impl fmt::Debug for Observer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Observer")
            .field("lock", &self.lock.name)
            .field("key", &self.key)
            .field("last", &self.last)
            .finish_non_exhaustive()
    }
}

impl Observer {
    /// Why the iterator ended, if the store refused (`NOPERM`, `WRONGPASS`,
    /// a store without LOCK.WATCH); `None` while it runs or once cancelled.
    pub fn error(&self) -> Option<&Error> {
        self.error.as_ref()
    }

    fn cancelled(&self) -> bool {
        self.cancel.as_ref().is_some_and(Cancel::is_cancelled)
    }

    /// One LOCK.INFO (before the first answer) or LOCK.WATCH with the last
    /// fence, waiting at most one chunk.
    fn ask(&self) -> redis::RedisResult<Value> {
        let l = &self.lock;
        if !self.yielded {
            return l.store.pool.call(&["LOCK.INFO", &l.name, &self.key]);
        }
        let (fence, timeout) = (
            self.fence.to_string(),
            l.chunk.as_millis().max(1).to_string(),
        );
        l.store.pool.call(&[
            "LOCK.WATCH",
            &l.name,
            &self.key,
            "FENCE",
            &fence,
            "TIMEOUT",
            &timeout,
        ])
    }

    fn yielding(&mut self, ld: Option<Leader>) -> Option<Option<Leader>> {
        if let Some(l) = &ld {
            self.top = self.top.max(l.fence);
        }
        self.last.clone_from(&ld);
        self.yielded = true;
        Some(ld)
    }
}

impl Iterator for Observer {
    type Item = Option<Leader>;

    fn next(&mut self) -> Option<Option<Leader>> {
        if let Some(ld) = self.first.take() {
            self.fence = ld.as_ref().map_or(0, |l| l.fence);
            return self.yielding(ld);
        }
        let mut backoff = Duration::ZERO;
        loop {
            if self.error.is_some() || self.cancelled() {
                return None;
            }
            let ld = match self.ask().map_err(|e| (outlasts(&e), Error::from_redis(e))) {
                Ok(v) => leader_of(&v).map_err(|e| (true, e)),
                Err(e) => Err(e),
            };
            let ld = match ld {
                Ok(ld) => ld,
                Err((false, e)) => {
                    self.error =
                        Some(e.context(format!("observe {} {:?}", self.lock.name, self.key)));
                    return None;
                }
                Err((true, _)) => {
                    backoff = (2 * backoff).clamp(MIN_BACKOFF, MAX_BACKOFF);
                    std::thread::sleep(backoff);
                    continue;
                }
            };
            backoff = Duration::ZERO;
            self.fence = ld.as_ref().map_or(0, |l| l.fence);
            if self.yielded && ld == self.last {
                continue; // TIMEOUT: nothing changed
            }
            if matches!(&ld, Some(l) if l.fence <= self.top) {
                continue; // an older term than one yielded (LOCK-02): never yield it
            }
            if let (Some(l), Some(last)) = (&ld, &self.last) {
                if epoch(l.fence) > epoch(last.fence) {
                    // A new epoch: the last leader's lease ended with the old
                    // one, even if no one saw the key free in between. This
                    // none now; the new leader at the next call.
                    self.last = None;
                    self.first = Some(ld);
                    return Some(None);
                }
            }
            return self.yielding(ld);
        }
    }
}
