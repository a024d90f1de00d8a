//! A frozen holder or waiter: a hold in a child process (this test binary
//! run again, for one of the ignored tests below) is stopped with SIGSTOP.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::thread;
use std::time::{Duration, Instant};

use tenure_locks::{Error, Options, Store};

use crate::harness::{hold_in_background, key_info, lock_stats, waiters_are, Reply, Server};
use crate::proxy::Proxy;

const TTL: Duration = Duration::from_secs(1);
const ADDR_ENV: &str = "TENURE_FROZEN_HOLDER_ADDR";

/// A child process running the ignored test `name` against the store at
/// addr, and the lines it reports ("child: WHAT VALUE").
struct Frozen {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
}

impl Frozen {
    fn spawn(name: &str, addr: &str) -> Frozen {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--ignored",
                "--exact",
                name,
                "--nocapture",
                "--test-threads=1",
            ])
            .env(ADDR_ENV, addr)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let (tx, lines) = mpsc::channel();
        let stdout = child.stdout.take().unwrap();
        thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                // The test harness may have started the line ("test … ... ").
                if let Some((_, report)) = line.split_once("child: ") {
                    let _ = tx.send(report.to_owned());
                }
            }
        });
        Frozen {
            child,
            stdin,
            lines,
        }
    }

    /// The value of the child's next report, which must be of `what`.
    fn report(&self, what: &str) -> String {
        let line = self
            .lines
            .recv_timeout(Duration::from_secs(10))
            .unwrap_or_else(|_| panic!("the child never reported {what}"));
        let (got, value) = line.split_once(' ').unwrap_or((&line, ""));
        assert_eq!(got, what, "the child reported {line:?}");
        value.to_owned()
    }

    fn signal(&self, sig: &str) {
        signal(self.child.id(), sig);
    }

    fn succeeds(mut self) {
        assert!(self.child.wait().unwrap().success(), "the child failed");
    }
}

fn signal(pid: u32, sig: &str) {
    let status = Command::new("kill")
        .arg(format!("-{sig}"))
        .arg(pid.to_string())
        .status()
        .unwrap();
    assert!(status.success(), "kill -{sig} {pid}");
}

/// The holder's renewals stop with its process, so a second holder gets the
/// key within the ttl. On SIGCONT the first holder's lease is already lost,
/// its late `SET … FENCE` with the old fence is refused (LOCK-12), and its
/// hold fails `expired` though its closure returned Ok.
#[test]
fn a_frozen_holder_loses_its_lease() {
    let s = Server::start();
    let mut child = Frozen::spawn("frozen::frozen_holder_child", &s.addr);

    let first: u64 = child.report("held").parse().unwrap();
    child.signal("STOP");
    let stopped = Instant::now();

    let store = s.store();
    let lk = store.lock("frozen").ttl(TTL).open().unwrap();
    lk.hold("job", |lease| {
        let took = stopped.elapsed();
        // The store grants within 10 ms of the deadline (LOCK-06), which is
        // within a ttl of the freeze; the rest is this hold's own work.
        assert!(took < TTL + Duration::from_millis(500), "the key came {took:?} after the holder froze");
        let left = lease.deadline().saturating_duration_since(Instant::now());
        assert!(left > Duration::from_millis(600), "after waiting in line the closure starts {left:?} from its deadline: want it renewed first");
        assert!(lease.fence() > first, "second fence {:#x}, first {first:#x}", lease.fence());
        store.call(&["SET", "report", "fresh", "FENCE", &lease.fence().to_string()])?;

        // Wake the frozen holder while this one still holds the key.
        child.signal("CONT");
        writeln!(child.stdin, "resumed").unwrap();
        assert_eq!(child.report("lost"), "true", "the woken holder's lease is not lost at once");
        assert_eq!(child.report("reason"), "expired");
        let late = child.report("late-write");
        assert!(late.starts_with("FENCED"), "the woken holder's late write with fence {first:#x}: {late}");
        let hold = child.report("hold");
        assert!(hold.starts_with("Lost expired"), "the woken holder's hold: {hold}");
        Ok::<_, Error>(())
    })
    .unwrap();
    assert_eq!(
        store.call(&["GET", "report"]).unwrap().as_str(),
        Some("fresh")
    );
    child.succeeds();
}

/// The frozen holder, run as a child process by the test above: it holds
/// frozen/job and reports on stdout, "child: held FENCE"; then, once stdin
/// says it was resumed, what its lease says and what its late write gets;
/// then what hold returned.
#[test]
#[ignore = "the child process of a_frozen_holder_loses_its_lease"]
fn frozen_holder_child() {
    let addr = std::env::var(ADDR_ENV).expect("run by a_frozen_holder_loses_its_lease");
    let store = Store::connect(&format!("redis://{addr}")).unwrap();
    let lk = store.lock("frozen").ttl(TTL).open().unwrap();
    let err = lk
        .hold("job", |lease| {
            println!("child: held {}", lease.fence());
            let mut line = String::new();
            std::io::stdin().read_line(&mut line).unwrap(); // stopped here, then resumed
            println!("child: lost {}", lease.lost());
            println!(
                "child: reason {}",
                lease
                    .loss()
                    .and_then(|l| l.reason().map(str::to_owned))
                    .unwrap_or_default()
            );
            let late = store.call(&["SET", "report", "late", "FENCE", &lease.fence().to_string()]);
            println!(
                "child: late-write {}",
                late.map_or_else(
                    |e| e.to_string().replace("tenure-locks: ", ""),
                    |v| format!("{v:?}")
                )
            );
            Ok::<_, Error>(()) // the closure thinks it succeeded
        })
        .unwrap_err();
    println!(
        "child: hold {:?} {} ({err})",
        err.kind(),
        err.reason().unwrap_or("")
    );
}

/// LOCK-03 after a pause: a waiter in a child process, waiting in 500 ms
/// chunks (a 1 s read timeout) through the proxy, is frozen; the key is
/// let go to its blocked chunk at once, and the grant's reply waits in the
/// frozen process's socket. The freeze (1 s) outlasts that chunk's WAIT, so
/// on waking its successor is overdue, yet none goes: the chunk's answer
/// comes first, and it is the grant (or, where the read was interrupted,
/// a retry with the same request id is answered that grant). (A HOLD sent then could reach a store
/// that has forgotten the request id, and get a second lease.) The ttl is
/// 2 s, so that the grant outlives the freeze.
#[test]
fn a_paused_waiter_sends_no_chunk_after_its_grant() {
    const TTL: Duration = Duration::from_secs(2);
    let s = Server::start();
    let admin = s.store();
    let p = Proxy::start(&s.addr);
    let (go, wait) = mpsc::channel::<()>();
    let holder = hold_in_background(
        &admin.lock("paused").ttl(TTL).open().unwrap(),
        "k",
        move || {
            wait.recv().unwrap();
            Ok(())
        },
    );
    let first = key_info(&admin, "paused", "k").unwrap()["fence"] as u64;
    let child = Frozen::spawn("frozen::paused_waiter_child", &p.addr);
    waiters_are(&admin, "paused", "k", 1);
    child.signal("STOP");
    go.send(()).unwrap();
    holder.join().unwrap().unwrap();
    let granted = key_info(&admin, "paused", "k").expect("the key was let go to the frozen waiter");
    assert!(
        granted["fence"] as u64 > first && granted["waiters"] == 0,
        "the frozen waiter's chunk was not granted: {granted:?}"
    );
    thread::sleep(Duration::from_secs(1)); // the freeze: longer than a chunk
    let sent_frozen = p.requests("LOCK.HOLD").len();
    let grants = lock_stats(&admin)["grants_total"];
    child.signal("CONT");
    let fence: u64 = child.report("granted").parse().unwrap();
    assert_eq!(
        fence, granted["fence"] as u64,
        "the waiter got another lease"
    );
    // The stop and continue interrupt the chunk's blocked read (EINTR, as
    // Linux does to a socket read with a timeout), and the redis crate drops
    // the connection with the grant in it: the SDK asks again, with the same
    // request id, at once, and the store answers the lease it gave (LOCK-03).
    // One HOLD at most, and no second grant.
    let holds = p.requests("LOCK.HOLD");
    assert!(
        holds.len() <= sent_frozen + 1,
        "HOLDs sent after the pause, with the grant waiting: {:?}",
        &holds[sent_frozen..]
    );
    assert_eq!(
        lock_stats(&admin)["grants_total"],
        grants,
        "a second grant after the pause"
    );
    assert_eq!(child.report("hold"), "ok");
    child.succeeds();
}

/// The paused waiter, run as a child process by the test above: it waits
/// for paused/k at ADDR (the proxy) and reports "child: granted FENCE",
/// then "child: hold ok" or the error.
#[test]
#[ignore = "the child process of a_paused_waiter_sends_no_chunk_after_its_grant"]
fn paused_waiter_child() {
    let addr =
        std::env::var(ADDR_ENV).expect("run by a_paused_waiter_sends_no_chunk_after_its_grant");
    let options = Options::default().read_timeout(Duration::from_secs(1));
    let store = Store::connect_with(&format!("redis://{addr}"), options).unwrap();
    let lk = store
        .lock("paused")
        .ttl(Duration::from_secs(2))
        .open()
        .unwrap();
    let out = lk.hold("k", |lease| {
        println!("child: granted {}", lease.fence());
        Ok::<_, Error>(())
    });
    println!(
        "child: hold {}",
        out.map_or_else(|e| e.to_string(), |()| "ok".into())
    );
}

/// A frozen async holder: its future, asleep at an await, is dropped once
/// the process wakes past its deadline, and its hold fails `expired`; the
/// key went to the next holder within the ttl meanwhile.
#[cfg(feature = "tokio")]
#[test]
fn a_frozen_async_holder_loses_its_lease() {
    let s = Server::start();
    let child = Frozen::spawn("frozen::frozen_async_holder_child", &s.addr);
    let first: u64 = child.report("held").parse().unwrap();
    child.signal("STOP");
    let stopped = Instant::now();

    let store = s.store();
    let lk = store.lock("frozen").ttl(TTL).open().unwrap();
    lk.hold("job", |lease| {
        let took = stopped.elapsed();
        assert!(
            took < TTL + Duration::from_millis(500),
            "the key came {took:?} after the holder froze"
        );
        assert!(lease.fence() > first);
        child.signal("CONT");
        assert_eq!(child.report("dropped"), "yes");
        let hold = child.report("hold");
        assert!(
            hold.starts_with("Lost expired"),
            "the woken holder's hold: {hold}"
        );
        Ok(())
    })
    .unwrap();
    child.succeeds();
}

/// The frozen async holder, run as a child process by the test above: it
/// reports "child: held FENCE", sleeps at an await, and reports "child:
/// dropped yes" when its future is dropped, then what hold returned.
#[cfg(feature = "tokio")]
#[test]
#[ignore = "the child process of a_frozen_async_holder_loses_its_lease"]
fn frozen_async_holder_child() {
    struct Report;
    impl Drop for Report {
        fn drop(&mut self) {
            println!("child: dropped yes");
        }
    }
    let addr = std::env::var(ADDR_ENV).expect("run by a_frozen_async_holder_loses_its_lease");
    crate::on_tokio::block_on(async {
        let store = tenure_locks::tokio::Store::connect(&format!("redis://{addr}"))
            .await
            .unwrap();
        let lk = store.lock("frozen").ttl(TTL).open().unwrap();
        let err = lk
            .hold("job", |lease| async move {
                println!("child: held {}", lease.fence());
                let _report = Report;
                tokio::time::sleep(Duration::from_secs(30)).await; // stopped here
                println!("child: ran to its end");
                Ok(())
            })
            .await
            .unwrap_err();
        println!(
            "child: hold {:?} {}",
            err.kind(),
            err.reason().unwrap_or("")
        );
    });
}
