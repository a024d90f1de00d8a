//! The store's connections: the user's redis client dials them, the SDK
//! keeps the idle ones. Each connection carries one command at a time, as a
//! waiting `LOCK.HOLD` blocks its connection until the store answers.
//!
//! What it is for: the lock commands and the user's occasional command
//! ([`Store::call`](crate::Store::call)). What it is not for: pipelining,
//! pub/sub, or anything the redis crate's own connections do better.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use redis::{ConnectionLike, RedisError, RedisResult};

use crate::error::{Error, ErrorKind};

/// A connection the SDK may use from any of its threads.
pub type Connection = Box<dyn ConnectionLike + Send>;

/// What dials the store's connections: the user's `redis::Client` (plain,
/// `rediss://` with TLS, with the user and password of its URL), the redis
/// crate's `cluster::ClusterClient` (for a tenure cluster, SPEC §10), or a
/// closure that returns any `redis::ConnectionLike`.
///
/// A `redis::Client` or `ClusterClient` is given the [`Options`]' timeouts;
/// a closure sets its own (and the read timeout it sets should be the
/// options' one, which the SDK's waiting in line is cut to).
pub trait Dial: Send + Sync + 'static {
    /// One new connection, ready for commands.
    fn dial(&self, options: &Options) -> RedisResult<Connection>;
}

impl Dial for redis::Client {
    fn dial(&self, o: &Options) -> RedisResult<Connection> {
        let c = self.get_connection_with_timeout(o.connect_timeout)?;
        c.set_read_timeout(Some(o.read_timeout))?;
        c.set_write_timeout(Some(o.write_timeout))?;
        Ok(Box::new(c))
    }
}

impl Dial for redis::cluster::ClusterClient {
    fn dial(&self, o: &Options) -> RedisResult<Connection> {
        let c = self.get_connection()?;
        c.set_read_timeout(Some(o.read_timeout))?;
        c.set_write_timeout(Some(o.write_timeout))?;
        Ok(Box::new(c))
    }
}

impl<F, C> Dial for F
where
    F: Fn() -> RedisResult<C> + Send + Sync + 'static,
    C: ConnectionLike + Send + 'static,
{
    fn dial(&self, _: &Options) -> RedisResult<Connection> {
        Ok(Box::new(self()?))
    }
}

/// How a [`Store`](crate::Store) uses its connections: timeouts and how many
/// idle connections it keeps.
#[derive(Clone, Debug)]
pub struct Options {
    pub(crate) connect_timeout: Duration,
    pub(crate) read_timeout: Duration,
    pub(crate) write_timeout: Duration,
    pub(crate) max_idle: usize,
}

impl Default for Options {
    /// Connect in 5 s, read and write in 5 s each, keep up to 16 idle
    /// connections.
    fn default() -> Options {
        Options {
            connect_timeout: Duration::from_secs(5),
            read_timeout: Duration::from_secs(5),
            write_timeout: Duration::from_secs(5),
            max_idle: 16,
        }
    }
}

impl Options {
    /// How long dialing may take (a `redis::Client`'s; a `ClusterClient`
    /// has its own `connection_timeout`).
    pub fn connect_timeout(mut self, d: Duration) -> Options {
        self.connect_timeout = d;
        self
    }

    /// How long a reply may take to arrive. It also sets how long each
    /// `LOCK.HOLD` waits in line: half of it, so that a reply always comes
    /// before the read gives up (SPEC §8). A reply that does not come in
    /// time is a lost reply: the lock code retries with the same request id.
    pub fn read_timeout(mut self, d: Duration) -> Options {
        self.read_timeout = d;
        self
    }

    /// How long writing a command may take.
    pub fn write_timeout(mut self, d: Duration) -> Options {
        self.write_timeout = d;
        self
    }

    /// How many idle connections the store keeps for reuse. A hold waiting
    /// in line uses one or two at a time; more are dialed when all are busy.
    pub fn max_idle(mut self, n: usize) -> Options {
        self.max_idle = n;
        self
    }

    pub(crate) fn check(&self) -> Result<(), Error> {
        for (name, d) in [
            ("connect timeout", self.connect_timeout),
            ("read timeout", self.read_timeout),
            ("write timeout", self.write_timeout),
        ] {
            if d < Duration::from_millis(10) {
                return Err(Error::new(
                    ErrorKind::InvalidInput,
                    format!("{name} {d:?}: must be at least 10ms"),
                ));
            }
        }
        Ok(())
    }
}

/// The connections of one store.
/// How soon a command on an idle connection must fail for the pool to take
/// it as one the store had closed while it sat idle, and send it again: a
/// closed peer answers at once, with end of file or a reset. Well under the
/// smallest holder's margin (a tenth of the 1 s minimum ttl), so that a HOLD
/// sent again still reaches the store within its request id's window.
const IDLE_CLOSED_WITHIN: Duration = Duration::from_millis(50);

pub(crate) struct Pool {
    dial: Box<dyn Dial>,
    pub(crate) options: Options,
    idle: Mutex<Vec<Connection>>,
}

impl Pool {
    pub(crate) fn new(dial: Box<dyn Dial>, options: Options) -> Pool {
        Pool {
            dial,
            options,
            idle: Mutex::new(Vec::new()),
        }
    }

    /// Sends one command on an idle connection (or a new one) and returns
    /// its reply; an error reply is an `Err` with the server's code. A
    /// network or protocol failure drops the connection, and every idle
    /// one with it (a cut or a restart has closed them too): the command
    /// may or may not have run, and is not sent again here, but for an
    /// idle connection the store had closed (below). A cluster client
    /// follows its own retry rules.
    pub(crate) fn call<A: redis::ToRedisArgs>(&self, args: &[A]) -> RedisResult<redis::Value> {
        let mut cmd = redis::Cmd::new();
        for a in args {
            cmd.arg(a);
        }
        self.call_cmd(&cmd)
    }

    /// [`call`](Pool::call) of a command already built.
    pub(crate) fn call_cmd(&self, cmd: &redis::Cmd) -> RedisResult<redis::Value> {
        if let Some(conn) = self.take_idle() {
            let sent = Instant::now();
            match self.send(conn, cmd) {
                // A connection the store closed while it sat idle (a cut, a
                // restart) fails at once, with end of file or a reset: the
                // command met a closed peer. It goes again, once, on a new
                // connection. (Checking each idle connection with a PING
                // first would cost a round trip on every command, and a
                // waiting HOLD's successor must reach the store in time.)
                // Only at once: a connection cut while the command waited
                // (a HOLD in line, its grant's reply lost) may have served
                // it, and a HOLD sent again long after its first may reach a
                // store that has forgotten its request id (SPEC §8, LOCK-03);
                // the SDK retries that itself, within the id's window.
                Err(e) if e.is_connection_dropped() && sent.elapsed() < IDLE_CLOSED_WITHIN => {}
                r => return r,
            }
        }
        let conn = self.dial.dial(&self.options)?;
        self.send(conn, cmd)
    }

    fn send(&self, mut conn: Connection, cmd: &redis::Cmd) -> RedisResult<redis::Value> {
        // An error reply is a value to the redis crate's connection; to
        // callers it is an Err with the server's code.
        let result = conn.req_command(cmd).and_then(|v| match v {
            redis::Value::ServerError(e) => Err(e.into()),
            v => Ok(v),
        });
        match &result {
            Err(e) if !keeps_connection(e) || !conn.is_open() => {
                self.idle.lock().unwrap_or_else(|e| e.into_inner()).clear();
            }
            _ => {
                let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
                if idle.len() < self.options.max_idle {
                    idle.push(conn);
                }
            }
        }
        result
    }

    /// An idle connection that has seen no failure.
    fn take_idle(&self) -> Option<Connection> {
        loop {
            let conn = self.idle.lock().unwrap_or_else(|e| e.into_inner()).pop()?;
            if conn.is_open() {
                return Some(conn);
            }
        }
    }
}

/// Whether a connection is still good after this error: an error reply
/// leaves it as it was.
fn keeps_connection(e: &RedisError) -> bool {
    crate::wire::reply_text(e).is_some()
}
