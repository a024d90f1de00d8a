//! The Rust SDK of tenure's lock module: leases with fencing tokens, held
//! while a closure runs. The SDK waits in line for the key, renews the lease
//! on a thread of its own while the closure runs, lets the key go when the
//! closure returns or panics, and tells the truth about what happened:
//!
//! ```
//! # use std::time::Duration;
//! # use tenure_locks::{Error, ErrorKind};
//! # fn main() -> Result<(), Error> {
//! # let server = doc_server::Tenure::start();
//! # let url = server.url();
//! # struct Model;
//! # impl Model {
//! #     fn summarize(&self, messages: &[&str]) -> Result<String, Error> { Ok(messages.join(" / ")) }
//! # }
//! # let (model, messages, chat_id) = (Model, ["hello", "are we shipping friday?", "yes"], "chat-42");
//! let store = tenure_locks::Store::connect(&url)?; // e.g. "redis://127.0.0.1:6379"
//! let summaries = store.lock("summaries").ttl(Duration::from_secs(30)).open()?;
//!
//! // The summary is saved with the lease's fence: a worker that lost its
//! // lease while the model ran cannot overwrite a newer summary (LOCK-12).
//! let save_summary = |chat_id: &str, text: &str, fence: u64| {
//!     store.call(&["SET", &format!("summary:{chat_id}"), text, "FENCE", &fence.to_string()])?;
//!     Ok(())
//! };
//!
//! summaries.hold(chat_id, |lease| {
//!     let text = model.summarize(&messages)?;
//!     if lease.lost() {
//!         return Err(Error::new(ErrorKind::Lost, "the summary was late")); // revoked at max_hold, or expired
//!     }
//!     save_summary(chat_id, &text, lease.fence())
//! })?;
//! # let saved = store.call(&["GET", "summary:chat-42"])?;
//! # assert_eq!(saved, tenure_locks::Value::BulkString(b"hello / are we shipping friday? / yes".to_vec()));
//! # Ok(())
//! # }
//! # mod doc_server {
//! #     // The doc test runs against a real server, built from this repository.
//! #     use std::io::{BufRead, BufReader};
//! #     use std::process::{Child, Command, Stdio};
//! #     pub struct Tenure { child: Child, addr: String, dir: std::path::PathBuf }
//! #     impl Tenure {
//! #         pub fn start() -> Tenure {
//! #             let dir = std::env::temp_dir().join(format!("tenure-locks-doctest-{}", std::process::id()));
//! #             let bin = dir.join("tenure");
//! #             let go = std::env::var("GO").unwrap_or_else(|_| "go".into());
//! #             let built = Command::new(go).args(["build", "-o"]).arg(&bin).arg("./cmd/tenure")
//! #                 .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).status().expect("go build");
//! #             assert!(built.success(), "go build ./cmd/tenure failed");
//! #             let mut child = Command::new(&bin).args(["--addr", "127.0.0.1:0", "--dir"]).arg(dir.join("data"))
//! #                 .stderr(Stdio::piped()).spawn().expect("start tenure");
//! #             let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
//! #             let addr = lines.by_ref().map_while(Result::ok)
//! #                 .find_map(|l| Some(l.split(" addr=").nth(1)?.split(' ').next()?.to_owned()))
//! #                 .expect("tenure said where it listens");
//! #             std::thread::spawn(move || lines.for_each(drop));
//! #             Tenure { child, addr, dir }
//! #         }
//! #         pub fn url(&self) -> String { format!("redis://{}", self.addr) }
//! #     }
//! #     impl Drop for Tenure {
//! #         fn drop(&mut self) {
//! #             let _ = self.child.kill();
//! #             let _ = self.child.wait();
//! #             let _ = std::fs::remove_dir_all(&self.dir);
//! #         }
//! #     }
//! # }
//! ```
//!
//! What it is for: making sure that, most of the time, one worker does a
//! piece of work, and learning when that could not be made sure. What it is
//! not for: a lease cannot stop a closure that does not look at
//! [`Lease::lost`] (or wait on [`Lease::wait_lost`]), nor a write already on
//! the wire. A holder that froze past its ttl may still write after the next
//! holder got the key: whatever it writes to must check the fence. tenure's
//! own keys do with `SET … FENCE` (LOCK-12), other systems by comparing
//! fences. A lease's fence is larger than every fence granted before it
//! (LOCK-02), restarts of the store included.
//!
//! # When a lease is lost
//!
//! [`Lease::lost`] turns true, and [`Lease::wait_lost`] returns:
//!
//! - when a renewal is answered `-LOST`: the store restarted (`unknown
//!   lease`), an admin revoked the lease (`revoked by admin`), it ran out
//!   (`expired`) or reached MAXHOLD (`revoked maxhold`);
//! - when the holder's deadline passes without a successful renewal
//!   (`expired`), or MaxHold less the margin is reached (`revoked maxhold`).
//!
//! A hold that waits in line stops when the wait elapses
//! ([`LockBuilder::wait`]), or when another thread cancels it
//! ([`Lock::hold_or_cancel`] with a [`Cancel`]): a HOLD with the same request
//! id and WAIT 0 supersedes the waiting one, and a grant that raced in is let
//! go.
//!
//! Once the closure returns, [`Lock::hold`] returns [`ErrorKind::Lost`] with
//! that [`reason`](Error::reason) even if the closure returned `Ok`: another
//! holder may have run beside it. `lost()` compares the holder's deadline
//! with the clock on every call, so a process that wakes from a pause past
//! its deadline sees the loss at once. A reason the holder knows stands
//! unless the final RELEASE's answer tells more (below).
//!
//! # Keeping a lease (SPEC §8)
//!
//! Each hold draws one request id, 128 random bits from `/dev/urandom`, and
//! sends it with every HOLD it makes: a network error or a lost reply is
//! retried with the same id, on whatever pooled connection is free, and the
//! store answers the lease it already gave rather than a second one
//! (LOCK-03). Waiting in line is a chain of HOLDs with that id, each waiting
//! a chunk of half the read timeout ([`Options::read_timeout`]), so that no
//! read times out.
//!
//! The id is kept only while the store surely remembers it (the request-id
//! window, SPEC §8): a grant to it came no earlier than T0, the send of the
//! oldest HOLD not yet answered null or `superseded` (the HOLD whose answer
//! was lost), and the store remembers the id for at least a ttl after the
//! lease ends, so a HOLD with it goes only while now < T0 + ttl - margin.
//! Past that the hold starts over with a fresh id, joining the line anew; a
//! lease the lost answer may have carried is never renewed and runs out.
//! Chunks follow each other within the window too, a hold that stops
//! waiting sends no probe past it, and the pool sends a command again on a
//! new connection only when one taken idle fails at once (closed while
//! idle), never after a HOLD waited.
//!
//! The chunks overlap, so that the place in line holds (LOCK-08): once a
//! quarter of a chunk has passed, the next HOLD goes out on another
//! connection and supersedes the blocked one, which the store answers
//! `superseded` (the SDK ignores that for its own earlier chunk). Were each
//! chunk sent only after the previous one's WAIT ran out, the place would
//! linger in between, passed over, and a release at that moment would serve
//! a later waiter first. Whichever answer carries the grant wins; a HOLD
//! with the same id that reaches the store after the grant is answered the
//! same lease, and a grant that reaches a HOLD after hold stopped waiting
//! is released at once. The last chunk of a bounded wait has no successor,
//! nor has a chunk whose WAIT ran out before its successor went (the
//! process paused): its answer comes first, since it may be the grant, and
//! a HOLD sent long after a grant may reach a store that has forgotten the
//! request id and would grant it again. When a hold is cancelled while
//! waiting, a HOLD with the same id and WAIT 0 supersedes the waiting one
//! at once, and a grant that raced in is released.
//!
//! The holder's deadline is the send time of the last HOLD or RENEW that
//! succeeded (for the grant: of the HOLD whose answer granted), plus the
//! ttl the store answered, less a margin (default min(ttl/10, 2 s)), capped
//! at MaxHold − margin after the send time of the oldest HOLD that may have
//! been granted (the grant may have come to an older chunk; a retry of a
//! lost answer keeps it too); all on the monotonic clock
//! ([`std::time::Instant`]). The holder gives up before the store does. A
//! HOLD that waited in line is renewed before the closure starts, since its
//! send time may be far behind its grant.
//!
//! When the closure returns after the holder gave the lease up by its own
//! clock (`expired`, `revoked maxhold`), the RELEASE the SDK still sends may
//! be answered `unknown lease`: the store forgets an ended lease a ttl after
//! its end. That reason stands, as it does for the store's `expired` or
//! `revoked maxhold` and for a RELEASE that released; the store's answer
//! replaces it only when it tells more: `revoked by admin`, or `unknown
//! lease` from a store whose epoch (`INFO locks`) is newer than the
//! lease's (`fence >> 32`): it restarted.
//!
//! A thread per hold renews the lease while the closure runs: at the latest
//! ttl/3 after the last success; after a failure, again at least every
//! ttl/10, each attempt on a thread of its own (one whose reply is lost
//! does not hold up the next), until the holder's deadline. When the closure
//! returns or panics, renewal stops and the lease is released with its id,
//! retried until the deadline; then hold returns, or the panic resumes. hold
//! joins every thread it started.
//!
//! # Connections
//!
//! A [`Store`] dials its connections with the redis client it was given
//! ([`Store::new`]): a `redis::Client` (`redis://`, or `rediss://` for
//! TLS, with the URL's user and password), the redis crate's
//! `cluster::ClusterClient` for a tenure cluster (SPEC §10: it follows
//! `-MOVED` to the leader and retries `-TRYAGAIN` and `-CLUSTERDOWN` by its
//! own rules), or a closure that returns any `redis::ConnectionLike`.
//! [`Store::connect`] is the short way to a `redis::Client`. Each connection
//! carries one command at a time, since a waiting `LOCK.HOLD` blocks its
//! connection; the idle ones are kept, a connection that fails is dropped
//! with every idle one, and a command that meets an idle connection the
//! store had closed (end of file, a reset) goes again, once, on a new one. A hold waiting in
//! line keeps one or two connections busy; renewals take one now and then.
//!
//! A failover is a restart: a lease held on the old leader is lost
//! (LOCK-10), and the next fence is larger (LOCK-14).
//!
//! # Semaphores, readers and owners (SPEC §12)
//!
//! [`LockBuilder::limit`] makes a lock a semaphore: each key admits up to
//! n holders at once, each a lease of its own. [`Lock::hold_shared`] and
//! [`Lock::try_hold_shared`] hold a key as a reader, shared with other
//! readers and never with a [`Lock::hold`] (a writer); the line stays one
//! and first come, first served (LOCK-08). [`LockBuilder::owner`] sets what
//! the store shows of the holder (`hostname:pid` by default, LOCK-16).
//! Everything above holds of a permit and a reader too. Every holder of a
//! key must agree on its limit while it is in use: a hold with another
//! returns [`ErrorKind::Store`] with the store's refusal, without running
//! its closure (LOCK-15).
//!
//! # On tokio
//!
//! With the cargo feature `tokio`, `tenure_locks::tokio` has the same API
//! as `async fn`s; a lost lease drops the closure's future at its next await.

mod conn;
mod election;
mod error;
mod lease;
mod lock;
#[cfg(feature = "tokio")]
pub mod tokio;
mod wire;

use std::sync::Arc;

pub use conn::{Connection, Dial, Options};
pub use election::{Leader, Observer};
pub use error::{reason, Error, ErrorKind};
pub use lease::Lease;
pub use lock::{Cancel, Lock, LockBuilder};
/// The redis crate this one is built on, for its `Client`, `cluster::ClusterClient` and `Value`.
pub use redis;
pub use redis::Value;

/// A tenure store, reached through the user's redis client. Clones share
/// its connections; they are closed when the last clone is dropped.
#[derive(Clone)]
pub struct Store {
    pool: Arc<conn::Pool>,
}

impl Store {
    /// Connects to the store at `url` with the default [`Options`]:
    /// `redis://[user:password@]host[:port]`, or `rediss://…` for TLS (the
    /// server's certificate checked against the system's roots). It dials
    /// one connection and pings, so that a wrong address or password is an
    /// error here. The short way to `Store::new(redis::Client::open(url)?)`.
    pub fn connect(url: &str) -> Result<Store, Error> {
        Store::connect_with(url, Options::default())
    }

    /// [`connect`](Store::connect) with the given options.
    pub fn connect_with(url: &str, options: Options) -> Result<Store, Error> {
        let client = redis::Client::open(url)
            .map_err(|e| Error::from_redis(e).context(format!("store URL {}", redact(url))))?;
        Store::new_with(client, options).map_err(|e| e.context(format!("connect {}", redact(url))))
    }

    /// A store reached through `client`, with the default [`Options`]: a
    /// `redis::Client` (with its TLS, user and password), a
    /// `redis::cluster::ClusterClient`, or a closure that dials any
    /// `redis::ConnectionLike` (see [`Dial`]). It dials one connection and
    /// pings.
    pub fn new(client: impl Dial) -> Result<Store, Error> {
        Store::new_with(client, Options::default())
    }

    /// [`new`](Store::new) with the given options.
    pub fn new_with(client: impl Dial, options: Options) -> Result<Store, Error> {
        options.check()?;
        let store = Store {
            pool: Arc::new(conn::Pool::new(Box::new(client), options)),
        };
        store.call(&["PING"])?;
        Ok(store)
    }

    /// The lock called `name` (1 to 256 bytes), with the options set on the
    /// builder: `store.lock("summaries").ttl(Duration::from_secs(30)).open()?`.
    pub fn lock(&self, name: &str) -> LockBuilder {
        LockBuilder::new(self.clone(), name)
    }

    /// Sends any command on one of the store's connections and returns its
    /// reply; an error reply is an `Err` ([`ErrorKind::Lost`] for `-LOST`,
    /// [`ErrorKind::Denied`] for `NOPERM`, `NOAUTH` and `WRONGPASS`,
    /// [`ErrorKind::Store`] for any other). A network failure is
    /// [`ErrorKind::Io`], and the command may or may not have run: call
    /// does not send it again (a `ClusterClient` follows its own retry
    /// rules).
    pub fn call<A: redis::ToRedisArgs>(&self, args: &[A]) -> Result<Value, Error> {
        self.pool.call(args).map_err(Error::from_redis)
    }
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").finish_non_exhaustive()
    }
}

/// The URL without its password, for error messages.
fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            format!("{}***{}", &url[..scheme + 3], &url[at..])
        }
        _ => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    /// What users share between threads may be shared: a Store or Lock by
    /// every worker thread, a Lease with the closure's own threads.
    #[test]
    fn shared_types_are_send_and_sync() {
        fn shared<T: Send + Sync>() {}
        shared::<super::Store>();
        shared::<super::Lock>();
        shared::<super::Lease>();
        shared::<super::Cancel>();
        shared::<super::Error>();
    }

    /// hold(…)? boxes the error; its kind and reason are found again.
    #[test]
    fn errors_survive_a_box_and_anyhow() {
        use super::{Error, ErrorKind};
        let lost = Error::lost("revoked by admin", true, None);
        let boxed: Box<dyn std::error::Error + Send + Sync> = lost.clone().into();
        let found = Error::find_in(&*boxed).expect("found in the box");
        assert_eq!(
            (found.kind(), found.reason()),
            (ErrorKind::Lost, Some("revoked by admin"))
        );
        assert_eq!(boxed.to_string(), lost.to_string());
        #[cfg(feature = "anyhow")]
        {
            let any: anyhow::Error = lost.into();
            let found = Error::find_in(any.as_ref()).expect("found in the anyhow error");
            assert_eq!(found.kind(), ErrorKind::Lost);
        }
        let mine: Error = std::io::Error::other("disk full").into();
        assert_eq!(mine.kind(), ErrorKind::Other);
        assert_eq!(
            mine.downcast_ref::<std::io::Error>().unwrap().to_string(),
            "disk full"
        );
    }

    #[test]
    fn urls_in_errors_hide_the_password() {
        assert_eq!(super::redact("redis://u:secret@h:1"), "redis://***@h:1");
        assert_eq!(super::redact("redis://h:1"), "redis://h:1");
    }
}
