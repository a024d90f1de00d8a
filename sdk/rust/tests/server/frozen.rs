//! A frozen holder: a holder in a child process (this test binary run
//! again, for the ignored test below) is stopped with SIGSTOP.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use tenure_locks::{Error, Store};

use crate::harness::Server;

const TTL: Duration = Duration::from_secs(1);
const ADDR_ENV: &str = "TENURE_FROZEN_HOLDER_ADDR";

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
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            "frozen::frozen_holder_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(ADDR_ENV, &s.addr)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut stdin = child.stdin.take().unwrap();
    let (tx, lines) = mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            // The test harness may have started the line ("test … ... ").
            if let Some((_, report)) = line.split_once("child: ") {
                let _ = tx.send(report.to_owned());
            }
        }
    });
    let report = |what: &str| -> String {
        let line = lines
            .recv_timeout(Duration::from_secs(10))
            .unwrap_or_else(|_| panic!("the child never reported {what}"));
        let (got, value) = line.split_once(' ').unwrap_or((&line, ""));
        assert_eq!(got, what, "the child reported {line:?}");
        value.to_owned()
    };

    let first: u64 = report("held").parse().unwrap();
    signal(pid, "STOP");
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
        signal(pid, "CONT");
        writeln!(stdin, "resumed").unwrap();
        assert_eq!(report("lost"), "true", "the woken holder's lease is not lost at once");
        assert_eq!(report("reason"), "expired");
        let late = report("late-write");
        assert!(late.starts_with("FENCED"), "the woken holder's late write with fence {first:#x}: {late}");
        let hold = report("hold");
        assert!(hold.starts_with("Lost expired"), "the woken holder's hold: {hold}");
        Ok::<_, Error>(())
    })
    .unwrap();
    assert_eq!(
        store.call(&["GET", "report"]).unwrap().as_str(),
        Some("fresh")
    );
    assert!(child.wait().unwrap().success(), "the child failed");
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
