//! A TCP proxy between the SDK and a server that makes network faults real:
//! it can cut every connection at once, swallow a reply after forwarding
//! its request (the request was served; its answer never arrives, and the
//! connection stays open and silent), and hold a request back for a while
//! before forwarding it (a slow network, or a sender that paused). It
//! parses RESP both ways, so that it knows which reply answers which
//! request.

use std::collections::VecDeque;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use crate::resp::{self, Value};

type Swallow = Box<dyn Fn(&[String], &Value) -> bool + Send>;
type Delay = Box<dyn Fn(&[String]) -> Option<Duration> + Send>;

pub struct Proxy {
    pub addr: String,
    shared: Arc<Shared>,
    /// the requests whose replies were swallowed
    swallowed: Mutex<Receiver<Vec<String>>>,
}

struct Shared {
    target: String,
    closed: AtomicBool,
    pipes: Mutex<Vec<(TcpStream, TcpStream)>>,
    swallow: Mutex<Option<Swallow>>,
    delay: Mutex<Option<Delay>>,
    seen: Mutex<Vec<Vec<String>>>,
    /// when each of seen reached the proxy
    seen_at: Mutex<Vec<Instant>>,
    swallowed: Mutex<Sender<Vec<String>>>,
}

impl Proxy {
    pub fn start(target: &str) -> Proxy {
        let ln = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = ln.local_addr().unwrap().to_string();
        let (tx, swallowed) = mpsc::channel();
        let shared = Arc::new(Shared {
            target: target.to_owned(),
            closed: AtomicBool::new(false),
            pipes: Mutex::new(Vec::new()),
            swallow: Mutex::new(None),
            delay: Mutex::new(None),
            seen: Mutex::new(Vec::new()),
            seen_at: Mutex::new(Vec::new()),
            swallowed: Mutex::new(tx),
        });
        let sh = shared.clone();
        thread::spawn(move || accept(ln, sh));
        Proxy {
            addr,
            shared,
            swallowed: Mutex::new(swallowed),
        }
    }

    pub fn url(&self) -> String {
        format!("redis://{}", self.addr)
    }

    /// A store that goes through the proxy, with a read timeout (and so wait
    /// chunks of half of it).
    pub fn store(&self, read_timeout: Duration) -> tenure_locks::Store {
        // Dialing (with its CLIENT SETINFO) is bounded by the connect
        // timeout: as short as a read, so that a silent proxy fails a dial
        // as it fails a command.
        let options = tenure_locks::Options::default()
            .read_timeout(read_timeout)
            .connect_timeout(read_timeout);
        tenure_locks::Store::connect_with(&self.url(), options).unwrap()
    }

    /// Closes every connection, both sides, and returns how many.
    pub fn cut_all(&self) -> usize {
        let mut pipes = self.shared.pipes.lock().unwrap();
        for (c, s) in pipes.iter() {
            let _ = c.shutdown(Shutdown::Both);
            let _ = s.shutdown(Shutdown::Both);
        }
        let n = pipes.len();
        pipes.clear();
        n
    }

    /// Drops every reply for which f says so; f sees the request a reply
    /// answers and the reply.
    pub fn swallow_replies(&self, f: impl Fn(&[String], &Value) -> bool + Send + 'static) {
        *self.shared.swallow.lock().unwrap() = Some(Box::new(f));
    }

    /// Holds back each request for which f returns a duration, that long,
    /// before forwarding it (and the requests behind it on its connection).
    pub fn delay_requests(&self, f: impl Fn(&[String]) -> Option<Duration> + Send + 'static) {
        *self.shared.delay.lock().unwrap() = Some(Box::new(f));
    }

    /// The next request whose reply was swallowed, if one is within timeout.
    pub fn swallowed(&self, timeout: Duration) -> Option<Vec<String>> {
        self.swallowed.lock().unwrap().recv_timeout(timeout).ok()
    }

    /// The forwarded requests of the command `name`.
    pub fn requests(&self, name: &str) -> Vec<Vec<String>> {
        let seen = self.shared.seen.lock().unwrap();
        seen.iter()
            .filter(|r| r.first().is_some_and(|c| c.eq_ignore_ascii_case(name)))
            .cloned()
            .collect()
    }
}

impl Proxy {
    /// The forwarded requests of the command `name`, each with when it
    /// reached the proxy.
    pub fn requests_at(&self, name: &str) -> Vec<(Vec<String>, Instant)> {
        let seen = self.shared.seen.lock().unwrap();
        let at = self.shared.seen_at.lock().unwrap();
        seen.iter()
            .zip(at.iter())
            .filter(|(r, _)| r.first().is_some_and(|c| c.eq_ignore_ascii_case(name)))
            .map(|(r, t)| (r.clone(), *t))
            .collect()
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.shared.closed.store(true, Ordering::SeqCst);
        // Wake the accept loop so that it sees closed.
        let _ = TcpStream::connect(&self.addr);
        self.cut_all();
    }
}

fn accept(ln: TcpListener, sh: Arc<Shared>) {
    for client in ln.incoming() {
        if sh.closed.load(Ordering::SeqCst) {
            return;
        }
        let Ok(client) = client else { continue };
        let Ok(server) = TcpStream::connect(&sh.target) else {
            continue; // the server is down: so is the proxy's answer
        };
        sh.pipes
            .lock()
            .unwrap()
            .push((client.try_clone().unwrap(), server.try_clone().unwrap()));
        let pending = Arc::new(Mutex::new(VecDeque::new()));
        let (c2, s2, p2, sh2) = (
            client.try_clone().unwrap(),
            server.try_clone().unwrap(),
            pending.clone(),
            sh.clone(),
        );
        let sh1 = sh.clone();
        thread::spawn(move || up(client, server, pending, sh1));
        thread::spawn(move || down(s2, c2, p2, sh2));
    }
}

/// Reads RESP values from r one at a time, with their raw bytes.
struct Values<R> {
    r: R,
    buf: Vec<u8>,
}

impl<R: Read> Values<R> {
    fn next(&mut self) -> Option<(Vec<u8>, Value)> {
        let mut chunk = [0u8; 16 << 10];
        loop {
            if let Some((v, n)) = resp::parse(&self.buf).ok()? {
                let raw: Vec<u8> = self.buf.drain(..n).collect();
                return Some((raw, v));
            }
            match self.r.read(&mut chunk) {
                Ok(0) | Err(_) => return None,
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
            }
        }
    }
}

fn args(v: &Value) -> Vec<String> {
    match v {
        Value::Array(a) => a
            .iter()
            .map(|x| x.as_str().unwrap_or("").to_owned())
            .collect(),
        _ => vec![],
    }
}

/// Forwards requests from the client to the server, noting each one.
fn up(
    client: TcpStream,
    mut server: TcpStream,
    pending: Arc<Mutex<VecDeque<Vec<String>>>>,
    sh: Arc<Shared>,
) {
    let mut values = Values {
        r: client.try_clone().unwrap(),
        buf: Vec::new(),
    };
    while let Some((raw, v)) = values.next() {
        let req = args(&v);
        let delay = sh.delay.lock().unwrap().as_ref().and_then(|f| f(&req));
        if let Some(d) = delay {
            thread::sleep(d);
        }
        {
            let mut seen = sh.seen.lock().unwrap();
            seen.push(req.clone());
            sh.seen_at.lock().unwrap().push(Instant::now());
        }
        pending.lock().unwrap().push_back(req);
        if server.write_all(&raw).is_err() {
            break;
        }
    }
    let _ = client.shutdown(Shutdown::Both);
    let _ = server.shutdown(Shutdown::Both);
}

/// Forwards replies from the server to the client, unless swallow says to
/// drop one.
fn down(
    server: TcpStream,
    mut client: TcpStream,
    pending: Arc<Mutex<VecDeque<Vec<String>>>>,
    sh: Arc<Shared>,
) {
    let mut values = Values {
        r: server.try_clone().unwrap(),
        buf: Vec::new(),
    };
    while let Some((raw, v)) = values.next() {
        let req = pending.lock().unwrap().pop_front().unwrap_or_default();
        let swallow = sh
            .swallow
            .lock()
            .unwrap()
            .as_ref()
            .is_some_and(|f| f(&req, &v));
        if swallow {
            let _ = sh.swallowed.lock().unwrap().send(req);
            continue;
        }
        if client.write_all(&raw).is_err() {
            break;
        }
    }
    let _ = client.shutdown(Shutdown::Both);
    let _ = server.shutdown(Shutdown::Both);
}
