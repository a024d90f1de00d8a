//! The same API as `async fn`s, for programs on tokio (cargo feature
//! `tokio`):
//!
//! ```no_run
//! # async fn run() -> Result<(), tenure_locks::Error> {
//! # async fn summarize() -> Result<String, tenure_locks::Error> { Ok(String::new()) }
//! use std::time::Duration;
//!
//! let store = tenure_locks::tokio::Store::connect("redis://127.0.0.1:6379").await?;
//! let summaries = store.lock("summaries").ttl(Duration::from_secs(30)).open()?;
//! summaries
//!     .hold("chat-42", |lease| async move {
//!         let text = summarize().await?; // dropped here if the lease is lost meanwhile
//!         store.call(&["SET", "summary:chat-42", &text, "FENCE", &lease.fence().to_string()]).await?;
//!         Ok(())
//!     })
//!     .await?;
//! # Ok(())
//! # }
//! ```
//!
//! The closure gets the [`Lease`] by value and returns a future, which runs
//! on the caller's task. A lost lease drops that future at its next await,
//! and the hold returns [`ErrorKind::Lost`] with the reason; dropping the
//! hold's own future (a `select!`, a timeout, an aborted task) cancels it:
//! while waiting in line, no place is left behind; while the closure runs,
//! the lease is released.
//!
//! Waiting in line, renewal and release are the synchronous API's, on
//! threads of the SDK's own and the connections of the redis client the
//! store was given (a renewal on the SDK's own thread keeps a lease alive
//! however busy the runtime is). So are `connect` and `call`: each runs on a
//! thread of its own and is awaited, never blocking the runtime.

use std::future::Future;
use std::panic::{self, AssertUnwindSafe};
use std::sync::mpsc;
use std::task::Poll;
use std::time::Duration;

use ::tokio::sync::oneshot;

use crate::{Cancel, Dial, Error, ErrorKind, Lease, Options, Value};

/// A tenure store, as [`crate::Store`], with async methods. Clones share
/// its connections.
#[derive(Clone, Debug)]
pub struct Store(crate::Store);

impl Store {
    /// [`crate::Store::connect`], dialing on a thread of its own.
    pub async fn connect(url: &str) -> Result<Store, Error> {
        let url = url.to_owned();
        off_runtime(move || crate::Store::connect(&url))
            .await
            .map(Store)
    }

    /// [`crate::Store::connect_with`], dialing on a thread of its own.
    pub async fn connect_with(url: &str, options: Options) -> Result<Store, Error> {
        let url = url.to_owned();
        off_runtime(move || crate::Store::connect_with(&url, options))
            .await
            .map(Store)
    }

    /// [`crate::Store::new`]: a store reached through `client` (a
    /// `redis::Client`, a `redis::cluster::ClusterClient`, …).
    pub async fn new(client: impl Dial) -> Result<Store, Error> {
        Store::new_with(client, Options::default()).await
    }

    /// [`crate::Store::new_with`].
    pub async fn new_with(client: impl Dial, options: Options) -> Result<Store, Error> {
        off_runtime(move || crate::Store::new_with(client, options))
            .await
            .map(Store)
    }

    /// The lock called `name`, as [`crate::Store::lock`].
    pub fn lock(&self, name: &str) -> LockBuilder {
        LockBuilder(self.0.lock(name))
    }

    /// [`crate::Store::call`]: any command, on one of the store's
    /// connections, its reply or error.
    pub async fn call<A: redis::ToRedisArgs>(&self, args: &[A]) -> Result<Value, Error> {
        let mut cmd = redis::Cmd::new();
        for a in args {
            cmd.arg(a);
        }
        let store = self.0.clone();
        off_runtime(move || store.pool.call_cmd(&cmd).map_err(Error::from_redis)).await
    }

    /// The synchronous store, sharing these connections.
    pub fn sync(&self) -> &crate::Store {
        &self.0
    }
}

impl From<crate::Store> for Store {
    fn from(s: crate::Store) -> Store {
        Store(s)
    }
}

/// The options of a [`Lock`], as [`crate::LockBuilder`].
#[must_use = "a LockBuilder does nothing until open() is called"]
pub struct LockBuilder(crate::LockBuilder);

impl LockBuilder {
    /// [`crate::LockBuilder::ttl`].
    pub fn ttl(self, d: Duration) -> LockBuilder {
        LockBuilder(self.0.ttl(d))
    }

    /// [`crate::LockBuilder::max_hold`].
    pub fn max_hold(self, d: Duration) -> LockBuilder {
        LockBuilder(self.0.max_hold(d))
    }

    /// [`crate::LockBuilder::wait`].
    pub fn wait(self, d: Duration) -> LockBuilder {
        LockBuilder(self.0.wait(d))
    }

    /// [`crate::LockBuilder::margin`].
    pub fn margin(self, d: Duration) -> LockBuilder {
        LockBuilder(self.0.margin(d))
    }

    /// [`crate::LockBuilder::limit`]: a semaphore of `n` permits per key.
    pub fn limit(self, n: u32) -> LockBuilder {
        LockBuilder(self.0.limit(n))
    }

    /// [`crate::LockBuilder::owner`]: what the store shows of the holder.
    pub fn owner(self, text: impl Into<String>) -> LockBuilder {
        LockBuilder(self.0.owner(text))
    }

    /// The lock, if every option is in range. It sends nothing.
    pub fn open(self) -> Result<Lock, Error> {
        self.0.open().map(Lock)
    }
}

/// One named lock of a store, as [`crate::Lock`], with async holds.
#[derive(Clone, Debug)]
pub struct Lock(crate::Lock);

impl Lock {
    /// The lock's name.
    pub fn name(&self) -> &str {
        self.0.name()
    }

    /// Waits in line for `key`, then runs the future `f` returns while
    /// holding it, and lets the key go when the future completes, panics or
    /// is dropped. The same results as [`crate::Lock::hold`]; and when the
    /// lease is lost while the future runs, the future is dropped at its
    /// next await and hold returns [`ErrorKind::Lost`] with the reason.
    ///
    /// Dropping hold's own future cancels it: while it waits in line, no
    /// place is left behind (a grant that raced in is let go); while the
    /// closure's future runs, the lease is released.
    pub async fn hold<T, F, Fut>(&self, key: &str, f: F) -> Result<T, Error>
    where
        F: FnOnce(Lease) -> Fut,
        Fut: Future<Output = Result<T, Error>>,
    {
        self.run(key, f, false, false).await
    }

    /// [`hold`](Lock::hold) that does not wait in line: if `key` is held it
    /// returns [`ErrorKind::NotHeld`] at once, without calling `f`.
    pub async fn try_hold<T, F, Fut>(&self, key: &str, f: F) -> Result<T, Error>
    where
        F: FnOnce(Lease) -> Fut,
        Fut: Future<Output = Result<T, Error>>,
    {
        self.run(key, f, true, false).await
    }

    /// [`hold`](Lock::hold) as a reader, as [`crate::Lock::hold_shared`]:
    /// shared with other readers, never with a writer.
    pub async fn hold_shared<T, F, Fut>(&self, key: &str, f: F) -> Result<T, Error>
    where
        F: FnOnce(Lease) -> Fut,
        Fut: Future<Output = Result<T, Error>>,
    {
        self.run(key, f, false, true).await
    }

    /// [`hold_shared`](Lock::hold_shared) that does not wait in line, as
    /// [`crate::Lock::try_hold_shared`].
    pub async fn try_hold_shared<T, F, Fut>(&self, key: &str, f: F) -> Result<T, Error>
    where
        F: FnOnce(Lease) -> Fut,
        Fut: Future<Output = Result<T, Error>>,
    {
        self.run(key, f, true, true).await
    }

    async fn run<T, F, Fut>(
        &self,
        key: &str,
        f: F,
        try_once: bool,
        shared: bool,
    ) -> Result<T, Error>
    where
        F: FnOnce(Lease) -> Fut,
        Fut: Future<Output = Result<T, Error>>,
    {
        // The synchronous hold runs on a thread of its own; its closure
        // hands the lease over and waits for the future's outcome.
        let (granted_tx, granted_rx) = oneshot::channel::<Lease>();
        let (done_tx, done_rx) = mpsc::channel::<Result<(), Error>>();
        let (result_tx, result_rx) = oneshot::channel::<Result<(), Error>>();
        let cancel = Cancel::new();
        {
            let (lock, key, cancel) = (self.0.clone(), key.to_owned(), cancel.clone());
            std::thread::spawn(move || {
                let r = lock.run(
                    &key,
                    |lease| {
                        if granted_tx.send(lease.clone()).is_err() {
                            return Err(dropped());
                        }
                        done_rx.recv().unwrap_or_else(|_| Err(dropped()))
                    },
                    try_once,
                    shared,
                    Some(&cancel),
                );
                let _ = result_tx.send(r);
            });
        }
        let mut guard = LetGo {
            cancel,
            done: Some(done_tx),
        };
        let Ok(lease) = granted_rx.await else {
            // The closure was never called: not granted, or refused.
            return match result_rx.await {
                Ok(Err(e)) => Err(e),
                _ => Err(Error::new(ErrorKind::Other, "the hold's thread ended")),
            };
        };

        let mut fut = Box::pin(f(lease.clone()));
        let outcome = std::future::poll_fn(|cx| {
            // Woken when the lease is lost: the future is not polled again.
            if lease.wake_when_lost(cx.waker()) {
                return Poll::Ready(None);
            }
            match panic::catch_unwind(AssertUnwindSafe(|| fut.as_mut().poll(cx))) {
                Ok(Poll::Pending) => Poll::Pending,
                Ok(Poll::Ready(r)) => Poll::Ready(Some(Ok(r))),
                Err(payload) => Poll::Ready(Some(Err(payload))),
            }
        })
        .await;
        drop(fut);

        let value = match outcome {
            None => None,
            Some(Ok(Ok(v))) => Some(v),
            Some(Ok(Err(e))) => {
                guard.finish(Err(e));
                None
            }
            Some(Err(payload)) => {
                // Let the key go, then go on panicking.
                guard.finish(Err(Error::new(ErrorKind::Other, "the closure panicked")));
                let _ = result_rx.await;
                panic::resume_unwind(payload);
            }
        };
        guard.finish(Ok(()));
        match result_rx.await {
            Ok(Ok(())) => match value {
                Some(v) => Ok(v),
                None => Err(lease
                    .loss()
                    .unwrap_or_else(|| Error::lost(crate::reason::EXPIRED, false, None))),
            },
            Ok(Err(e)) => Err(e),
            Err(_) => Err(Error::new(ErrorKind::Other, "the hold's thread ended")),
        }
    }
}

impl From<crate::Lock> for Lock {
    fn from(l: crate::Lock) -> Lock {
        Lock(l)
    }
}

fn dropped() -> Error {
    Error::new(ErrorKind::NotHeld, "the hold's future was dropped")
}

/// Tells the hold's thread how the closure's future ended; dropped unsent
/// (the hold's future dropped), it cancels the wait or lets the lease go.
struct LetGo {
    cancel: Cancel,
    done: Option<mpsc::Sender<Result<(), Error>>>,
}

impl LetGo {
    fn finish(&mut self, r: Result<(), Error>) {
        if let Some(done) = self.done.take() {
            let _ = done.send(r);
        }
    }
}

impl Drop for LetGo {
    fn drop(&mut self) {
        if self.done.is_some() {
            self.cancel.cancel();
            self.finish(Err(dropped()));
        }
    }
}

/// Runs f on a thread of its own and awaits its result.
async fn off_runtime<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = oneshot::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.await {
        Ok(v) => v,
        Err(_) => panic!("tenure-locks: a thread of the SDK panicked"),
    }
}
