//! The SDK's own small client: a pool of TCP connections to one store, each
//! used by one command at a time, authenticated on dial, with connect, read
//! and write timeouts. A connection that fails in any way is closed, never
//! reused; the next command dials a new one.
//!
//! What it is for: the lock commands and the user's occasional command
//! ([`Store::call`](crate::Store::call)). What it is not for: a general
//! Redis client; it has no pipelining and no RESP3 (a cluster's routing is
//! [`crate::cluster`]'s), and it does not retry a command on its own (the
//! lock code retries what is safe to retry, with the same request or lease
//! id).

use std::io::{ErrorKind as IoKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::Mutex;
use std::time::Duration;

use crate::error::{Error, ErrorKind};
use crate::resp::{self, Value};

/// How a [`Store`](crate::Store) reaches the server: timeouts and how many
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
    /// How long dialing may take.
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

    /// How many idle connections the pool keeps for reuse. A Hold waiting in
    /// line uses one or two at a time; more are dialed when all are busy.
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

/// Where the store is and who connects: `redis://[user:password@]host[:port][/0]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Address {
    pub host: String,
    pub port: u16,
    pub user: Option<String>,
    pub password: Option<String>,
}

impl Address {
    pub(crate) fn parse(url: &str) -> Result<Address, Error> {
        let bad =
            |why: &str| Error::new(ErrorKind::InvalidInput, format!("store URL {url:?}: {why}"));
        let rest = url
            .strip_prefix("redis://")
            .ok_or_else(|| bad("must start with redis://"))?;
        let (authority, db) = match rest.split_once('/') {
            Some((a, db)) => (a, db),
            None => (rest, ""),
        };
        if !(db.is_empty() || db == "0") {
            return Err(bad("tenure has database 0 only"));
        }
        let (userinfo, hostport) = match authority.rsplit_once('@') {
            Some((u, h)) => (Some(u), h),
            None => (None, authority),
        };
        let (mut user, mut password) = (None, None);
        if let Some(u) = userinfo {
            let (name, pw) = u
                .split_once(':')
                .ok_or_else(|| bad("user info must be user:password or :password"))?;
            if !name.is_empty() {
                user = Some(percent_decode(name).ok_or_else(|| bad("bad %-escape in the user"))?);
            }
            password = Some(percent_decode(pw).ok_or_else(|| bad("bad %-escape in the password"))?);
        }
        let (host, port) = if let Some(v6) = hostport.strip_prefix('[') {
            let (h, after) = v6
                .split_once(']')
                .ok_or_else(|| bad("unclosed [ in the host"))?;
            (h, after.strip_prefix(':'))
        } else {
            match hostport.rsplit_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (hostport, None),
            }
        };
        if host.is_empty() {
            return Err(bad("no host"));
        }
        let port = match port {
            None => 6379,
            Some(p) => p.parse().map_err(|_| bad("bad port"))?,
        };
        Ok(Address {
            host: host.to_owned(),
            port,
            user,
            password,
        })
    }
}

fn percent_decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = std::str::from_utf8(b.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// What became of one command on a [`Pool`].
pub(crate) enum Fate {
    /// The store answered, an error reply included.
    Reply(Value),
    /// No connection could be made (dial or AUTH failed): it was not sent.
    NotSent(Error),
    /// The connection failed once the command was on its way: it may or
    /// may not have run.
    Failed(Error),
}

/// A pool of connections to one store.
pub(crate) struct Pool {
    address: Address,
    options: Options,
    idle: Mutex<Vec<Conn>>,
}

impl Pool {
    pub(crate) fn new(address: Address, options: Options) -> Pool {
        Pool {
            address,
            options,
            idle: Mutex::new(Vec::new()),
        }
    }

    pub(crate) fn options(&self) -> &Options {
        &self.options
    }

    pub(crate) fn address(&self) -> &Address {
        &self.address
    }

    /// Sends one command on an idle connection (or a new one) and returns
    /// its reply, an error reply included as [`Value::Error`]. A network or
    /// protocol failure closes the connection and is returned as an Err: the
    /// command may or may not have run.
    pub(crate) fn call<A: AsRef<[u8]>>(&self, args: &[A]) -> Result<Value, Error> {
        match self.send(args) {
            Fate::Reply(v) => Ok(v),
            Fate::NotSent(e) | Fate::Failed(e) => Err(e),
        }
    }

    /// [`call`](Pool::call), telling a command that never left (no
    /// connection could be made) from one that failed on the way.
    pub(crate) fn send<A: AsRef<[u8]>>(&self, args: &[A]) -> Fate {
        let mut conn = match self.take_idle() {
            Some(c) => c,
            None => match self.dial() {
                Ok(c) => c,
                Err(e) => return Fate::NotSent(e),
            },
        };
        match conn.round_trip(&resp::encode(args)) {
            Ok(v) => {
                let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
                if idle.len() < self.options.max_idle {
                    idle.push(conn);
                }
                Fate::Reply(v)
            }
            Err(e) => Fate::Failed(e),
        }
    }

    /// An idle connection the server has not closed. A connection whose peer
    /// closed it (a cut, a restart) reads as end of file without blocking;
    /// one with bytes waiting holds a reply nobody asked for. Both are dropped.
    fn take_idle(&self) -> Option<Conn> {
        loop {
            let conn = self.idle.lock().unwrap_or_else(|e| e.into_inner()).pop()?;
            if conn.looks_alive() {
                return Some(conn);
            }
        }
    }

    fn dial(&self) -> Result<Conn, Error> {
        let a = &self.address;
        let o = &self.options;
        let addrs: Vec<SocketAddr> = (a.host.as_str(), a.port)
            .to_socket_addrs()
            .map_err(|e| Error::from(e).context(format!("resolve {}", a.host)))?
            .collect();
        let mut last = Error::new(ErrorKind::Io, format!("{} resolves to no address", a.host));
        for addr in addrs {
            match TcpStream::connect_timeout(&addr, o.connect_timeout) {
                Ok(stream) => {
                    stream.set_nodelay(true)?;
                    stream.set_read_timeout(Some(o.read_timeout))?;
                    stream.set_write_timeout(Some(o.write_timeout))?;
                    let mut conn = Conn {
                        stream,
                        buf: Vec::new(),
                    };
                    conn.authenticate(a)?;
                    return Ok(conn);
                }
                Err(e) => last = Error::from(e).context(format!("connect {addr}")),
            }
        }
        Err(last)
    }
}

/// One connection: the stream and the bytes read past the last reply.
struct Conn {
    stream: TcpStream,
    buf: Vec<u8>,
}

impl Conn {
    fn authenticate(&mut self, a: &Address) -> Result<(), Error> {
        let Some(password) = &a.password else {
            return Ok(());
        };
        let args: Vec<&str> = match &a.user {
            Some(user) => vec!["AUTH", user, password],
            None => vec!["AUTH", password],
        };
        match self.round_trip(&resp::encode(&args))? {
            Value::Simple(ok) if ok == "OK" => Ok(()),
            Value::Error(e) => Err(Error::from_reply(&e).context("AUTH")),
            other => Err(Error::new(
                ErrorKind::Protocol,
                format!("AUTH replied {other:?}"),
            )),
        }
    }

    fn round_trip(&mut self, request: &[u8]) -> Result<Value, Error> {
        let result = self
            .stream
            .write_all(request)
            .map_err(Error::from)
            .and_then(|()| self.read_reply());
        if result.is_err() {
            let _ = self.stream.shutdown(Shutdown::Both);
        }
        result
    }

    fn read_reply(&mut self) -> Result<Value, Error> {
        let mut chunk = [0u8; 16 << 10];
        loop {
            if let Some((v, n)) = resp::parse(&self.buf)? {
                self.buf.drain(..n);
                return Ok(v);
            }
            match self.stream.read(&mut chunk) {
                Ok(0) => return Err(Error::new(ErrorKind::Io, "connection closed by the store")),
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == IoKind::Interrupted => {}
                Err(e) if matches!(e.kind(), IoKind::WouldBlock | IoKind::TimedOut) => {
                    return Err(Error::new(
                        ErrorKind::Io,
                        "no reply within the read timeout",
                    ));
                }
                Err(e) => return Err(e.into()),
            }
        }
    }

    fn looks_alive(&self) -> bool {
        if !self.buf.is_empty() || self.stream.set_nonblocking(true).is_err() {
            return false;
        }
        let mut b = [0u8; 1];
        let alive = matches!(self.stream.peek(&mut b), Err(e) if e.kind() == IoKind::WouldBlock);
        alive && self.stream.set_nonblocking(false).is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_store_urls() {
        let ok = |url: &str, host: &str, port: u16, user: Option<&str>, pw: Option<&str>| {
            let a = Address::parse(url).unwrap_or_else(|e| panic!("{url}: {e}"));
            assert_eq!(
                a,
                Address {
                    host: host.into(),
                    port,
                    user: user.map(Into::into),
                    password: pw.map(Into::into)
                },
                "{url}"
            );
        };
        ok("redis://127.0.0.1:6379", "127.0.0.1", 6379, None, None);
        ok("redis://localhost", "localhost", 6379, None, None);
        ok(
            "redis://worker:s3cret@127.0.0.1:7000/0",
            "127.0.0.1",
            7000,
            Some("worker"),
            Some("s3cret"),
        );
        ok("redis://:pw@h:1", "h", 1, None, Some("pw"));
        ok(
            "redis://a%40b:p%3Aw%25@h:1",
            "h",
            1,
            Some("a@b"),
            Some("p:w%"),
        );
        ok(
            "redis://u:p@ss@[::1]:6380",
            "::1",
            6380,
            Some("u"),
            Some("p@ss"),
        );
        for bad in [
            "127.0.0.1:6379",
            "rediss://h:1",
            "redis://",
            "redis://h:port",
            "redis://h:70000",
            "redis://h:1/2",
            "redis://user@h:1",
            "redis://u:%zz@h:1",
            "redis://[::1:1",
        ] {
            assert!(Address::parse(bad).is_err(), "{bad} parsed");
        }
    }
}
