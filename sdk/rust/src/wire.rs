//! The commands of SPEC §3 as the SDK sends them, and the retry helper that
//! renewals and releases share.

use std::fs::File;
use std::io::Read;
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::thread::Scope;
use std::time::{Duration, Instant};

use crate::error::{Error, ErrorKind};
use redis::Value;

use crate::Lock;

/// A HOLD's grant, with the local times around it.
#[derive(Clone, Debug)]
pub(crate) struct Grant {
    pub id: String,
    pub fence: u64,
    /// ttl left when the store answered
    pub left: Duration,
    /// when this HOLD was sent: the holder's deadline counts from it
    pub sent: Instant,
    pub received: Instant,
    /// no later than the grant: the send time of the oldest HOLD of the
    /// request that may have been granted (the grant may have come to an
    /// older chunk, and this one been answered the same lease, LOCK-03).
    /// MaxHold counts from it.
    pub not_before: Instant,
}

/// Why a command did not succeed: the store answered an error reply, or the
/// answer never came (the network failed, the read timed out, the reply was
/// malformed). After `NoAnswer` nothing is known of whether it ran.
#[derive(Clone, Debug)]
pub(crate) enum Failure {
    Reply(String),
    NoAnswer(Error),
}

impl Failure {
    /// The reason of a `-LOST reason` answer.
    pub fn lost_reason(&self) -> Option<&str> {
        match self {
            Failure::Reply(r) => r.strip_prefix("LOST "),
            Failure::NoAnswer(_) => None,
        }
    }

    /// An earlier HOLD of this request, answered because a later one (ours)
    /// took its place in line.
    pub fn superseded(&self) -> bool {
        matches!(self, Failure::Reply(r) if r.starts_with("ERR superseded"))
    }

    /// Whether a later try of the same request may succeed: the answer was
    /// lost, or the store answered an error that passes.
    pub fn transient(&self) -> bool {
        match self {
            Failure::NoAnswer(_) => true,
            Failure::Reply(r) => [
                "ERR superseded",
                "ERR server is shutting down",
                "ERR max number of clients",
                "LOADING ",
                "TRYAGAIN ",
                "BUSY ",
                "CLUSTERDOWN ",
            ]
            .iter()
            .any(|p| r.starts_with(p)),
        }
    }

    pub fn into_error(self) -> Error {
        match self {
            Failure::Reply(r) => Error::from_reply(&r),
            Failure::NoAnswer(e) => e,
        }
    }
}

/// One command's outcome and when it was sent.
#[derive(Debug)]
pub(crate) struct Outcome<T> {
    pub sent: Instant,
    pub received: Instant,
    pub result: Result<T, Failure>,
}

/// A request id: 128 random bits from the operating system as 32 hex
/// characters (SPEC §8).
pub(crate) fn new_reqid() -> Result<String, Error> {
    let mut b = [0u8; 16];
    File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut b))
        .map_err(|e| Error::from(e).context("read /dev/urandom for a request id"))?;
    Ok(b.iter().map(|x| format!("{x:02x}")).collect())
}

fn ms(d: Duration) -> String {
    d.as_millis().to_string()
}

impl Lock {
    /// Sends args on one of the store's connections.
    fn send(&self, args: &[&str]) -> Outcome<Value> {
        let sent = Instant::now();
        let result = match self.store.pool.call(args) {
            Ok(v) => Ok(v),
            Err(e) => match reply_text(&e) {
                Some(reply) => Err(Failure::Reply(reply)),
                None => Err(Failure::NoAnswer(Error::from_redis(e))),
            },
        };
        Outcome {
            sent,
            received: Instant::now(),
            result,
        }
    }

    /// LOCK.HOLD with WAIT wait, once. `Ok(None)`: not granted within the wait.
    /// Every HOLD of one request carries the same LIMIT or SHARED and OWNER
    /// (SPEC §12): a retry with another limit would be refused (LOCK-15).
    pub(crate) fn send_hold(
        &self,
        key: &str,
        reqid: &str,
        wait: Duration,
        shared: bool,
    ) -> Outcome<Option<Grant>> {
        // WAIT rounds up: a wait is waited in full.
        let wait_ms = wait.as_nanos().div_ceil(1_000_000).to_string();
        let (ttl, max_hold) = (ms(self.ttl), self.max_hold.map(ms));
        let limit = self.limit.map(|n| n.to_string());
        let mut args = vec![
            "LOCK.HOLD",
            &self.name,
            key,
            reqid,
            "TTL",
            &ttl,
            "WAIT",
            &wait_ms,
        ];
        if let Some(m) = &max_hold {
            args.extend(["MAXHOLD", m]);
        }
        match &limit {
            Some(n) => args.extend(["LIMIT", n]),
            None if shared => args.push("SHARED"),
            None => {}
        }
        args.extend(["OWNER", &self.owner]);
        let out = self.send(&args);
        let result = out.result.and_then(|v| match v {
            Value::Nil => Ok(None),
            Value::Array(a) => match a.as_slice() {
                [Value::BulkString(id), Value::Int(fence), Value::Int(left)]
                    if id.len() == 32 && *fence > 0 && *left >= 0 =>
                {
                    Ok(Some(Grant {
                        id: String::from_utf8_lossy(id).into_owned(),
                        fence: *fence as u64,
                        left: Duration::from_millis(*left as u64),
                        sent: out.sent,
                        received: out.received,
                        not_before: out.sent,
                    }))
                }
                _ => Err(malformed("LOCK.HOLD", &Value::Array(a))),
            },
            other => Err(malformed("LOCK.HOLD", &other)),
        });
        Outcome {
            sent: out.sent,
            received: out.received,
            result,
        }
    }

    /// LOCK.RENEW: the time to the new deadline.
    pub(crate) fn send_renew(&self, id: &str) -> Outcome<Duration> {
        let out = self.send(&["LOCK.RENEW", id]);
        let result = out.result.and_then(|v| match v {
            Value::Int(n) if n >= 0 => Ok(Duration::from_millis(n as u64)),
            other => Err(malformed("LOCK.RENEW", &other)),
        });
        Outcome {
            sent: out.sent,
            received: out.received,
            result,
        }
    }

    pub(crate) fn send_release(&self, id: &str) -> Outcome<()> {
        let out = self.send(&["LOCK.RELEASE", id]);
        let result = out.result.and_then(|v| match v {
            Value::Int(_) => Ok(()),
            other => Err(malformed("LOCK.RELEASE", &other)),
        });
        Outcome {
            sent: out.sent,
            received: out.received,
            result,
        }
    }
}

/// The store's error reply as it was sent (`CODE text`), if `e` is one.
pub(crate) fn reply_text(e: &redis::RedisError) -> Option<String> {
    use redis::ErrorKind as K;
    if !matches!(e.kind(), K::Server(_) | K::Extension) {
        return None;
    }
    let code = e.code()?;
    Some(match e.detail() {
        Some(d) => format!("{code} {d}"),
        None => code.to_owned(),
    })
}

fn malformed(cmd: &str, v: &Value) -> Failure {
    Failure::NoAnswer(Error::new(
        ErrorKind::Protocol,
        format!("{cmd} replied {v:?}"),
    ))
}

/// How many RENEW or RELEASE attempts of one lease may be outstanding at
/// once: a reply swallowed by the network holds its attempt for up to the
/// read timeout, and the next attempt must not wait for it.
const MAX_IN_FLIGHT: usize = 3;

/// What the threads of [`attempts`] and its stopper send its caller.
pub(crate) enum Event<T> {
    /// Give up now: the closure has returned.
    Stop,
    /// An attempt of round `u64` ended.
    Done(u64, Outcome<T>),
}

/// The channel one caller of [`attempts`] listens on, and the round its
/// latest call is in, so that a late outcome of an earlier call is ignored.
pub(crate) struct Attempts<T> {
    pub tx: Sender<Event<T>>,
    pub rx: Receiver<Event<T>>,
    pub round: u64,
}

impl<T> Attempts<T> {
    pub fn new() -> Attempts<T> {
        let (tx, rx) = std::sync::mpsc::channel();
        Attempts { tx, rx, round: 0 }
    }
}

/// How [`attempts`] ended.
pub(crate) enum Ended<T> {
    /// An attempt succeeded or was answered decisively (`-LOST`).
    Answered(Outcome<T>),
    /// None did by `until`; the last failure, if any attempt ended.
    GaveUp(Option<Failure>),
    /// [`Event::Stop`] came.
    Stopped,
}

/// Runs op until an attempt succeeds or is answered `-LOST`. A new attempt
/// starts every `every` while none has, each on its own thread and so on
/// whatever connection the pool hands out: one that hangs (its reply lost)
/// does not delay the next, up to [`MAX_IN_FLIGHT`] outstanding. It gives up
/// when `until` passes. Attempts still outstanding then run to their end
/// (bounded by the read timeout) on threads of scope `s`, which the hold
/// that owns the scope waits for.
pub(crate) fn attempts<'scope, 'env, T, F>(
    s: &'scope Scope<'scope, 'env>,
    chan: &mut Attempts<T>,
    until: Instant,
    every: Duration,
    op: F,
) -> Ended<T>
where
    T: Send + 'scope,
    F: Fn() -> Outcome<T> + Clone + Send + 'scope,
{
    chan.round += 1;
    let round = chan.round;
    let mut in_flight = 0;
    let mut next = Instant::now();
    let mut last = None;
    loop {
        let now = Instant::now();
        if now >= until {
            return Ended::GaveUp(last);
        }
        if now >= next {
            next = now + every;
            if in_flight < MAX_IN_FLIGHT {
                in_flight += 1;
                let (tx, op) = (chan.tx.clone(), op.clone());
                s.spawn(move || {
                    let _ = tx.send(Event::Done(round, op()));
                });
            }
        }
        match chan
            .rx
            .recv_timeout(next.min(until).saturating_duration_since(Instant::now()))
        {
            Ok(Event::Stop) => return Ended::Stopped,
            Ok(Event::Done(r, out)) if r == round => {
                in_flight -= 1;
                match &out.result {
                    Ok(_) => return Ended::Answered(out),
                    Err(f) if f.lost_reason().is_some() => return Ended::Answered(out),
                    Err(f) => last = Some(f.clone()),
                }
            }
            Ok(Event::Done(..)) | Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => unreachable!("chan holds a sender"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_ids_are_128_random_bits_in_hex() {
        let a = new_reqid().unwrap();
        let b = new_reqid().unwrap();
        assert_eq!(a.len(), 32);
        assert!(
            a.bytes()
                .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()),
            "{a}"
        );
        assert_ne!(a, b);
    }

    #[test]
    fn failures_say_what_may_be_retried() {
        let reply = |s: &str| Failure::Reply(s.into());
        assert!(Failure::NoAnswer(Error::new(ErrorKind::Io, "cut")).transient());
        assert!(reply("TRYAGAIN no leader yet").transient());
        assert!(reply("CLUSTERDOWN no leader").transient());
        assert!(!reply("MOVED 0 127.0.0.1:7001").transient()); // a single server's Store does not follow it
        assert!(reply("ERR superseded by a retry of the same request").superseded());
        assert!(
            !reply("NOPERM this user has no permissions to run the 'lock.hold' command")
                .transient()
        );
        assert!(!reply("ERR request id is already used for another lock or key").transient());
        assert_eq!(
            reply("LOST revoked by admin").lost_reason(),
            Some("revoked by admin")
        );
        assert_eq!(reply("ERR LOST").lost_reason(), None);
    }
}
