use std::error::Error as StdError;
use std::fmt;
use std::sync::Arc;

/// What kind of failure an [`Error`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The lease was lost before the closure returned, so another holder may
    /// have held the key beside it: a renewal was answered `-LOST`, the
    /// holder's deadline passed without one, or the final RELEASE found the
    /// lease already ended. [`Error::reason`] says why (SPEC §4).
    Lost,
    /// The closure did not run because the key was not held: `try_hold`
    /// found it held, the wait elapsed, the hold was cancelled, or the grant
    /// ended before the closure could start (its reply was lost and the
    /// lease ran out). Trying again may succeed.
    NotHeld,
    /// The store refused this connection's user: a wrong password
    /// (`WRONGPASS`), no password (`NOAUTH`), or a command above the user's
    /// role (`NOPERM`: a read-only user cannot hold, LOCK-09).
    Denied,
    /// The store answered another error reply; the message is the store's.
    Store,
    /// The store could not be reached, or did not answer in time.
    Io,
    /// The store's reply could not be parsed, or was not what the command
    /// answers.
    Protocol,
    /// An argument was out of range: a ttl, a key, a URL.
    InvalidInput,
    /// An error of the closure's own, converted with `?` (or
    /// [`Error::other`]); [`Error::downcast_ref`] gets it back.
    Other,
}

/// An error of the SDK, of the store, or of the closure run under a lease.
///
/// It is the one error type of a closure given to [`Lock::hold`](crate::Lock::hold),
/// as `anyhow::Error` is of an anyhow program: `?` converts any
/// `std::error::Error + Send + Sync + 'static` into it (as
/// [`ErrorKind::Other`], the original kept for [`downcast_ref`](Error::downcast_ref)),
/// so a closure that ends in `Ok(…)` needs no annotation. The price is
/// anyhow's: `Error` itself does not implement `std::error::Error` (that
/// would make the blanket conversion overlap `From<T> for T`). It derefs to
/// one (`&dyn std::error::Error`, with its `source()` chain), and converts
/// with `?` into `Box<dyn std::error::Error + Send + Sync>` and, with the
/// default feature `anyhow`, into `anyhow::Error`.
///
/// When the lease was lost and the closure failed as well, the error is
/// [`ErrorKind::Lost`] and the closure's error is kept beside it, in
/// [`Error::closure_error`] (and as its [`source`](std::error::Error::source)).
#[derive(Clone)]
pub struct Error(Arc<Repr>);

#[derive(Clone)]
struct Repr {
    kind: ErrorKind,
    message: String,
    reason: Option<String>,
    from_store: bool,
    /// the closure's own error (kind Other), or the one it failed with
    /// beside a lost lease
    closure: Option<Arc<dyn StdError + Send + Sync>>,
    /// what caused this one: the last renewal's failure, the redis crate's error
    cause: Option<Arc<dyn StdError + Send + Sync>>,
}

/// Reasons a lease is lost, as the store spells them after `-LOST ` (SPEC §4).
pub mod reason {
    /// The deadline passed without a renewal.
    pub const EXPIRED: &str = "expired";
    /// MAXHOLD was reached (LOCK-07).
    pub const MAX_HOLD: &str = "revoked maxhold";
    /// An admin's LOCK.REVOKE.
    pub const REVOKED: &str = "revoked by admin";
    /// It was released.
    pub const RELEASED: &str = "released";
    /// Never granted, forgotten, or granted before the store restarted.
    pub const UNKNOWN_LEASE: &str = "unknown lease";
}

impl Error {
    /// An error of the given kind with a message, e.g. for a closure that
    /// gives up: `Error::new(ErrorKind::Lost, "the summary was late")`.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Error {
        Error(Arc::new(Repr {
            kind,
            message: message.into(),
            reason: None,
            from_store: false,
            closure: None,
            cause: None,
        }))
    }

    /// Any error, message or boxed error as an [`ErrorKind::Other`]: for
    /// what `?` does not convert, e.g. `Err(Error::other("no summary"))` or
    /// an `anyhow::Error` (`.map_err(Error::other)`).
    pub fn other(err: impl Into<Box<dyn StdError + Send + Sync>>) -> Error {
        let err: Box<dyn StdError + Send + Sync> = err.into();
        let mut e = Error::new(ErrorKind::Other, err.to_string());
        e.repr().closure = Some(Arc::from(err));
        e
    }

    /// What kind of failure this is.
    pub fn kind(&self) -> ErrorKind {
        self.0.kind
    }

    /// For a lost lease, why, as the store spells it (see [`reason`]): the
    /// store's word when it answered `-LOST`, else `expired` or `revoked
    /// maxhold` for the holder's own deadline (or its MaxHold cap) passing
    /// first. `None` for every other error.
    pub fn reason(&self) -> Option<&str> {
        self.0.reason.as_deref()
    }

    /// Whether the store said the lease was lost (`-LOST`), rather than the
    /// holder's own deadline passing first, which it does a margin before
    /// the store's.
    pub fn from_store(&self) -> bool {
        self.0.from_store
    }

    /// The closure's own error, when the lease was lost and the closure
    /// failed too.
    pub fn closure_error(&self) -> Option<&(dyn StdError + Send + Sync + 'static)> {
        if self.0.kind == ErrorKind::Lost {
            self.0.closure.as_deref()
        } else {
            None
        }
    }

    /// The closure's own error of type `E`, converted into this one by `?`
    /// (kept beside a lost lease too).
    pub fn downcast_ref<E: StdError + 'static>(&self) -> Option<&E> {
        self.0
            .closure
            .as_deref()
            .and_then(|e| e.downcast_ref::<E>())
    }

    /// This crate's error inside a `dyn std::error::Error` that `hold(…)?`
    /// boxed (a `Box<dyn Error + Send + Sync>`, an `anyhow::Error`), or
    /// anywhere in its `source()` chain: `Error::find_in(&*boxed)`, then
    /// ask it its [`kind`](Error::kind) and [`reason`](Error::reason).
    pub fn find_in(err: &(dyn StdError + 'static)) -> Option<Error> {
        let mut next = Some(err);
        while let Some(e) = next {
            if let Some(r) = e.downcast_ref::<Repr>() {
                return Some(Error(Arc::new(r.clone())));
            }
            next = e.source();
        }
        None
    }

    fn repr(&mut self) -> &mut Repr {
        Arc::make_mut(&mut self.0)
    }

    pub(crate) fn lost(reason: &str, from_store: bool, cause: Option<Error>) -> Error {
        let mut e = Error::new(ErrorKind::Lost, "lease lost");
        let r = e.repr();
        r.reason = Some(reason.to_owned());
        r.from_store = from_store;
        r.cause = cause.map(|c| Arc::new(c.into_std()) as Arc<dyn StdError + Send + Sync>);
        e
    }

    /// The store's error reply (`CODE text`) as an Error: `-LOST r` is Lost
    /// with reason r, an authentication or role refusal is Denied, any
    /// other is Store.
    pub(crate) fn from_reply(reply: &str) -> Error {
        if let Some(r) = reply.strip_prefix("LOST ") {
            return Error::lost(r, true, None);
        }
        let code = reply.split(' ').next().unwrap_or("");
        let kind = match code {
            "NOPERM" | "NOAUTH" | "WRONGPASS" => ErrorKind::Denied,
            _ => ErrorKind::Store,
        };
        Error::new(kind, reply)
    }

    /// The redis crate's error: an error reply as [`from_reply`](Error::from_reply)
    /// makes it, a failed authentication as Denied, a network failure or
    /// timeout as Io; the redis error is kept as the source.
    pub(crate) fn from_redis(e: redis::RedisError) -> Error {
        use redis::ErrorKind as K;
        let mut out = if let Some(reply) = crate::wire::reply_text(&e) {
            Error::from_reply(&reply)
        } else {
            let kind = match e.kind() {
                K::AuthenticationFailed => ErrorKind::Denied,
                K::Parse | K::UnexpectedReturnType | K::RESP3NotSupported => ErrorKind::Protocol,
                K::InvalidClientConfig => ErrorKind::InvalidInput,
                _ => ErrorKind::Io,
            };
            Error::new(kind, e.to_string())
        };
        out.repr().cause = Some(Arc::new(e));
        out
    }

    /// This lost-lease error with the closure's error kept beside it.
    pub(crate) fn with_closure_error(mut self, closure: Error) -> Error {
        let kept: Arc<dyn StdError + Send + Sync> = match &closure.0.closure {
            Some(inner) if closure.0.kind == ErrorKind::Other => inner.clone(),
            _ => Arc::new(closure.into_std()),
        };
        self.repr().closure = Some(kept);
        self
    }

    /// Prefixes the message with what was being done.
    pub(crate) fn context(mut self, what: impl fmt::Display) -> Error {
        let r = self.repr();
        r.message = format!("{what}: {}", r.message);
        self
    }

    fn into_std(self) -> Repr {
        Arc::unwrap_or_clone(self.0)
    }
}

impl fmt::Display for Repr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "tenure-locks: {}", self.message)?;
        if let Some(r) = &self.reason {
            write!(f, ": {r}")?;
            if !self.from_store {
                write!(f, " (holder's deadline passed")?;
                if let Some(c) = &self.cause {
                    let c = c.to_string();
                    write!(
                        f,
                        "; last renewal: {}",
                        c.trim_start_matches("tenure-locks: ")
                    )?;
                }
                write!(f, ")")?;
            }
        }
        if self.kind == ErrorKind::Lost {
            if let Some(c) = &self.closure {
                write!(f, "; the closure failed too: {c}")?;
            }
        }
        Ok(())
    }
}

impl fmt::Debug for Repr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Error")
            .field("kind", &self.kind)
            .field("message", &self.message)
            .field("reason", &self.reason)
            .field("from_store", &self.from_store)
            .field("closure", &self.closure.as_ref().map(|c| c.to_string()))
            .field("cause", &self.cause.as_ref().map(|c| c.to_string()))
            .finish()
    }
}

impl StdError for Repr {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        if let Some(c) = &self.closure {
            if self.kind == ErrorKind::Lost {
                return Some(c.as_ref());
            }
        }
        match (&self.cause, &self.closure) {
            (Some(c), _) | (None, Some(c)) => Some(c.as_ref()),
            (None, None) => None,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&*self.0, f)
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

/// As anyhow's: the error as a `dyn std::error::Error`, for `source()` and
/// whatever takes one by reference.
impl std::ops::Deref for Error {
    type Target = dyn StdError + Send + Sync + 'static;

    fn deref(&self) -> &Self::Target {
        &*self.0
    }
}

impl AsRef<dyn StdError + Send + Sync + 'static> for Error {
    fn as_ref(&self) -> &(dyn StdError + Send + Sync + 'static) {
        &*self.0
    }
}

/// `?` in a closure given to hold: any error becomes an [`ErrorKind::Other`]
/// (a redis error keeps its meaning: an error reply, a network failure).
impl<E> From<E> for Error
where
    E: StdError + Send + Sync + 'static,
{
    fn from(e: E) -> Error {
        let boxed: Box<dyn StdError + Send + Sync> = Box::new(e);
        let boxed = match boxed.downcast::<redis::RedisError>() {
            Ok(r) => return Error::from_redis(*r),
            Err(b) => b,
        };
        Error::other(boxed)
    }
}

/// `hold(…)?` in a function that returns `Box<dyn Error + Send + Sync>`.
impl From<Error> for Box<dyn StdError + Send + Sync + 'static> {
    fn from(e: Error) -> Self {
        Box::new(e.into_std())
    }
}

/// `hold(…)?` in a function that returns `Box<dyn Error>`.
impl From<Error> for Box<dyn StdError + 'static> {
    fn from(e: Error) -> Self {
        Box::new(e.into_std())
    }
}

/// `hold(…)?` in a function that returns `anyhow::Result`.
#[cfg(feature = "anyhow")]
impl From<Error> for anyhow::Error {
    fn from(e: Error) -> Self {
        anyhow::Error::new(e.into_std())
    }
}
