//! The real server for the tests: `cmd/tenure` of this repository, built
//! once per test binary with `go build`, started as a child process on a
//! free loopback port with a data directory of its own.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Mutex, OnceLock};
use std::thread;
use std::time::{Duration, Instant};

use tenure_locks::{Error, Lock, Options, Store, Value};

/// Replies as the tests read them.
pub trait Reply {
    /// A simple or bulk string that is UTF-8.
    fn as_str(&self) -> Option<&str>;
    /// An integer.
    fn as_int(&self) -> Option<i64>;
}

impl Reply for Value {
    fn as_str(&self) -> Option<&str> {
        match self {
            Value::SimpleString(s) => Some(s),
            Value::Okay => Some("OK"),
            Value::BulkString(b) => std::str::from_utf8(b).ok(),
            Value::VerbatimString { text, .. } => Some(text),
            _ => None,
        }
    }

    fn as_int(&self) -> Option<i64> {
        match self {
            Value::Int(n) => Some(*n),
            _ => None,
        }
    }
}

fn scratch() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
}

/// The server binary, built on first use.
fn tenure_binary() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let bin = scratch().join("tenure");
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let go = std::env::var("GO").unwrap_or_else(|_| "go".into());
        let status = Command::new(go)
            .args(["build", "-o"])
            .arg(&bin)
            .arg("./cmd/tenure")
            .current_dir(&root)
            .status()
            .expect("run go build (is Go on PATH?)");
        assert!(
            status.success(),
            "go build ./cmd/tenure in {}: {status}",
            root.display()
        );
        bin
    })
}

/// A running tenure server. Dropping it kills the process and removes its
/// data directory.
pub struct Server {
    child: Mutex<Child>,
    pub addr: String,
    pub dir: PathBuf,
    users: Option<PathBuf>,
    extra: Vec<String>,
}

impl Server {
    pub fn start() -> Server {
        Server::launch(None, |_| Vec::new())
    }

    /// A server with a users file (`--users`): lines of
    /// `user NAME ROLE sha256:HEX`.
    pub fn start_with_users(users: &str) -> Server {
        Server::launch(Some(users), |_| Vec::new())
    }

    /// A server with more flags, made from its data directory (for files
    /// the flags name).
    pub fn start_with_flags(flags: impl FnOnce(&Path) -> Vec<String>) -> Server {
        Server::launch(None, flags)
    }

    fn launch(users: Option<&str>, flags: impl FnOnce(&Path) -> Vec<String>) -> Server {
        static N: AtomicUsize = AtomicUsize::new(0);
        let dir = scratch().join(format!(
            "server-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let users = users.map(|text| {
            let path = dir.join("users.conf");
            std::fs::write(&path, text).unwrap();
            path
        });
        let extra = flags(&dir);
        let (child, addr) = spawn(&dir, users.as_deref(), "127.0.0.1:0", &extra);
        Server {
            child: Mutex::new(child),
            addr,
            dir,
            users,
            extra,
        }
    }

    /// Kills the server (SIGKILL) and starts it again on the same address
    /// and data directory: a new epoch, no lease (LOCK-10).
    pub fn restart(&self) {
        let mut child = self.child.lock().unwrap();
        child.kill().unwrap();
        child.wait().unwrap();
        let (fresh, addr) = spawn(&self.dir, self.users.as_deref(), &self.addr, &self.extra);
        assert_eq!(addr, self.addr);
        *child = fresh;
    }

    pub fn url(&self) -> String {
        format!("redis://{}", self.addr)
    }

    /// A store on this server with the default options.
    pub fn store(&self) -> Store {
        Store::connect(&self.url()).unwrap()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let child = self.child.get_mut().unwrap_or_else(|e| e.into_inner());
        let _ = child.kill();
        let _ = child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Starts the binary (with `extra` flags) and waits until it logs where it
/// listens. A restart may find the port still held for a moment: it tries
/// again.
fn spawn(dir: &Path, users: Option<&Path>, addr: &str, extra: &[String]) -> (Child, String) {
    let give_up = Instant::now() + Duration::from_secs(10);
    loop {
        let mut cmd = Command::new(tenure_binary());
        cmd.args([
            "--addr",
            addr,
            "--fsync",
            "no",
            "--log-level",
            "info",
            "--dir",
        ])
        .arg(dir.join("data"));
        if let Some(u) = users {
            cmd.arg("--users").arg(u);
        }
        cmd.args(extra);
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut said = false;
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if !said && line.contains("ready to accept connections") {
                    let at = line
                        .split(" addr=")
                        .nth(1)
                        .and_then(|r| r.split(' ').next())
                        .map(str::to_owned);
                    said = tx.send(at).is_ok();
                }
            }
        });
        match rx.recv_timeout(Duration::from_secs(10)) {
            Ok(Some(at)) => return (child, at),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                assert!(Instant::now() < give_up, "tenure did not start on {addr}");
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }
}

/// Options with a short read timeout (and so wait chunks of half of it).
pub fn read_timeout(d: Duration) -> Options {
    Options::default().read_timeout(d)
}

/// The `# Locks` section of INFO.
pub fn lock_stats(store: &Store) -> HashMap<String, i64> {
    let info = store.call(&["INFO", "locks"]).unwrap();
    info.as_str()
        .unwrap()
        .lines()
        .filter_map(|l| {
            let (k, v) = l.trim().split_once(':')?;
            Some((k.to_owned(), v.parse().ok()?))
        })
        .collect()
}

/// LOCK.INFO lock key as a map; None when the key is free and nobody waits.
pub fn key_info(store: &Store, lock: &str, key: &str) -> Option<HashMap<String, i64>> {
    match store.call(&["LOCK.INFO", lock, key]).unwrap() {
        Value::Nil => None,
        Value::Array(a) => Some(
            a.chunks(2)
                // Every value but the owner, a bulk string (LOCK-16).
                .filter_map(|kv| Some((kv[0].as_str()?.to_owned(), kv[1].as_int()?)))
                .collect(),
        ),
        other => panic!("LOCK.INFO {lock} {key} = {other:?}"),
    }
}

/// Polls cond until it holds, or panics after timeout.
pub fn wait_for(timeout: Duration, what: &str, mut cond: impl FnMut() -> bool) {
    let end = Instant::now() + timeout;
    while !cond() {
        assert!(
            Instant::now() < end,
            "timed out after {timeout:?} waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Waits until (lock, key) has n places in line.
pub fn waiters_are(store: &Store, lock: &str, key: &str, n: i64) {
    wait_for(
        Duration::from_secs(5),
        &format!("{n} waiters on {lock}/{key}"),
        || key_info(store, lock, key).is_some_and(|i| i["waiters"] == n),
    );
}

/// The SHA-256 of a password as a users file wants it, from `sha256sum`.
pub fn sha256_hex(password: &str) -> String {
    let mut child = Command::new("sha256sum")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(password.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    String::from_utf8(out.stdout)
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .to_owned()
}

/// Holds `key` on a thread, running f as the closure; returns when the
/// closure has started.
pub fn hold_in_background<T: Send + 'static>(
    lk: &Lock,
    key: &'static str,
    f: impl FnOnce() -> Result<T, Error> + Send + 'static,
) -> thread::JoinHandle<Result<T, Error>> {
    let lk = lk.clone();
    let (started, ready) = mpsc::channel();
    let h = thread::spawn(move || {
        lk.hold(key, |_| {
            started.send(()).unwrap();
            f()
        })
    });
    ready
        .recv_timeout(Duration::from_secs(5))
        .expect("the first holder got the key");
    h
}

/// A tenure cluster of three nodes on loopback (SPEC §10), each a process
/// with a directory of its own and a short election timeout (250ms), so
/// that a failover is quick. Dropping it kills every node.
pub struct ThreeNodes {
    nodes: Vec<Mutex<Option<Child>>>,
    pub urls: Vec<String>,
    dir: PathBuf,
}

impl ThreeNodes {
    pub fn start() -> ThreeNodes {
        static N: AtomicUsize = AtomicUsize::new(0);
        let dir = scratch().join(format!(
            "cluster-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        // Free ports, held until every one is picked.
        let listeners: Vec<_> = (0..3)
            .map(|_| std::net::TcpListener::bind("127.0.0.1:0").unwrap())
            .collect();
        let addrs: Vec<String> = listeners
            .iter()
            .map(|l| l.local_addr().unwrap().to_string())
            .collect();
        drop(listeners);
        let peers = addrs
            .iter()
            .enumerate()
            .map(|(i, a)| format!("n{}={a}", i + 1))
            .collect::<Vec<_>>()
            .join(",");
        let nodes = addrs
            .iter()
            .enumerate()
            .map(|(i, addr)| {
                let node_dir = dir.join(format!("n{}", i + 1));
                std::fs::create_dir_all(&node_dir).unwrap();
                let extra = [
                    "--node-id".to_owned(),
                    format!("n{}", i + 1),
                    "--peers".to_owned(),
                    peers.clone(),
                    "--raft-election-timeout".to_owned(),
                    "250ms".to_owned(),
                ];
                let (child, at) = spawn(&node_dir, None, addr, &extra);
                assert_eq!(&at, addr);
                Mutex::new(Some(child))
            })
            .collect();
        ThreeNodes {
            nodes,
            urls: addrs.iter().map(|a| format!("redis://{a}")).collect(),
            dir,
        }
    }

    /// The index of the node whose ROLE is master, once one is (within 20 s).
    pub fn leader(&self) -> usize {
        let end = Instant::now() + Duration::from_secs(20);
        loop {
            for (i, url) in self.urls.iter().enumerate() {
                if self.nodes[i].lock().unwrap().is_none() {
                    continue;
                }
                let role = Store::connect(url).and_then(|s| s.call(&["ROLE"]));
                if let Ok(Value::Array(a)) = role {
                    if a.first().and_then(Reply::as_str) == Some("master") {
                        return i;
                    }
                }
            }
            assert!(Instant::now() < end, "no leader within 20 s");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// SIGKILLs node i.
    pub fn kill(&self, i: usize) {
        if let Some(mut child) = self.nodes[i].lock().unwrap().take() {
            child.kill().unwrap();
            child.wait().unwrap();
        }
    }
}

impl Drop for ThreeNodes {
    fn drop(&mut self) {
        for i in 0..self.nodes.len() {
            let node = self.nodes[i].get_mut().unwrap_or_else(|e| e.into_inner());
            if let Some(mut child) = node.take() {
                let _ = child.kill();
                let _ = child.wait();
            }
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
