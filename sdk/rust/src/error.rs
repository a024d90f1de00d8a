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
    /// found it held, the wait elapsed, or the grant ended before the
    /// closure could start (its reply was lost and the lease ran out).
    /// Trying again may succeed.
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
    /// The closure's own error, which is not one of this crate's.
    Other,
}

/// An error of the SDK, of the store, or of the closure run under a lease.
///
/// When the lease was lost and the closure failed as well, the error is
/// [`ErrorKind::Lost`] and the closure's error is kept beside it, in
/// [`Error::closure_error`] (and as its [`source`](std::error::Error::source)).
#[derive(Clone)]
pub struct Error {
    kind: ErrorKind,
    message: String,
    reason: Option<String>,
    from_store: bool,
    closure: Option<Arc<dyn std::error::Error + Send + Sync>>,
    cause: Option<Arc<Error>>,
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
        Error {
            kind,
            message: message.into(),
            reason: None,
            from_store: false,
            closure: None,
            cause: None,
        }
    }

    /// What kind of failure this is.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// For a lost lease, why, as the store spells it (see [`reason`]): the
    /// store's word when it answered `-LOST`, else `expired` or `revoked
    /// maxhold` for the holder's own deadline (or its MaxHold cap) passing
    /// first. `None` for every other error.
    pub fn reason(&self) -> Option<&str> {
        self.reason.as_deref()
    }

    /// Whether the store said the lease was lost (`-LOST`), rather than the
    /// holder's own deadline passing first, which it does a margin before
    /// the store's.
    pub fn from_store(&self) -> bool {
        self.from_store
    }

    /// The closure's own error, when the lease was lost and the closure
    /// failed too.
    pub fn closure_error(&self) -> Option<&(dyn std::error::Error + Send + Sync + 'static)> {
        self.closure.as_deref()
    }

    pub(crate) fn lost(reason: &str, from_store: bool, cause: Option<Error>) -> Error {
        let mut e = Error::new(ErrorKind::Lost, "lease lost");
        e.reason = Some(reason.to_owned());
        e.from_store = from_store;
        e.cause = cause.map(Arc::new);
        e
    }

    /// The store's error reply as an Error: `-LOST r` is Lost with reason
    /// r, an authentication or role refusal is Denied, any other is Store.
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

    /// The error a closure returned: this crate's own as it is, any other
    /// as [`ErrorKind::Other`].
    pub(crate) fn from_closure(err: Box<dyn std::error::Error + Send + Sync>) -> Error {
        match err.downcast::<Error>() {
            Ok(e) => *e,
            Err(other) => {
                let mut e = Error::new(ErrorKind::Other, other.to_string());
                e.closure = Some(Arc::from(other));
                e
            }
        }
    }

    /// This lost-lease error with the closure's error kept beside it.
    pub(crate) fn with_closure_error(mut self, closure: Error) -> Error {
        self.closure = Some(match closure.closure {
            Some(inner) if closure.kind == ErrorKind::Other => inner,
            _ => Arc::new(closure),
        });
        self
    }

    /// Prefixes the message with what was being done.
    pub(crate) fn context(mut self, what: impl fmt::Display) -> Error {
        self.message = format!("{what}: {}", self.message);
        self
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "tenure-locks: {}", self.message)?;
        if let Some(r) = &self.reason {
            write!(f, ": {r}")?;
            if !self.from_store {
                write!(f, " (holder's deadline passed")?;
                if let Some(c) = &self.cause {
                    write!(f, "; last renewal: {}", c.message)?;
                }
                write!(f, ")")?;
            }
        }
        if let Some(c) = &self.closure {
            write!(f, "; the closure failed too: {c}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Error")
            .field("kind", &self.kind)
            .field("message", &self.message)
            .field("reason", &self.reason)
            .field("from_store", &self.from_store)
            .field("closure", &self.closure.as_ref().map(|c| c.to_string()))
            .field("cause", &self.cause)
            .finish()
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        if let Some(c) = &self.closure {
            return Some(c.as_ref());
        }
        self.cause
            .as_deref()
            .map(|c| c as &(dyn std::error::Error + 'static))
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Error {
        Error::new(ErrorKind::Io, e.to_string())
    }
}

impl From<crate::resp::ProtocolError> for Error {
    fn from(e: crate::resp::ProtocolError) -> Error {
        Error::new(ErrorKind::Protocol, e.to_string())
    }
}
