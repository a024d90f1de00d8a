//! Network faults under a held or wanted lease, made real by the proxy.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread;
use std::time::Duration;

use tenure_locks::{Error, ErrorKind, Store};

use crate::harness::{key_info, lock_stats, sha256_hex, Server};
use crate::proxy::Proxy;

const TTL: Duration = Duration::from_secs(1);

/// LOCK-03: a HOLD whose grant is swallowed is asked again with the same
/// request id, on another connection, and answered with the lease already
/// given: the store's grants_total grows by one.
#[test]
fn a_swallowed_hold_reply_is_retried_with_the_same_reqid() {
    let s = Server::start();
    let admin = s.store();
    let p = Proxy::start(&s.addr);
    let store = p.store(Duration::from_millis(300));
    let lk = store.lock("reports").ttl(TTL).open().unwrap();
    let once = AtomicBool::new(false);
    p.swallow_replies(move |req, reply| {
        req.first().is_some_and(|c| c == "LOCK.HOLD")
            && matches!(reply, tenure_locks::Value::Array(_))
            && !once.swap(true, Ordering::SeqCst)
    });
    let before = lock_stats(&admin)["grants_total"];

    let fence = lk
        .hold("q3", |lease| {
            let info = key_info(&admin, "reports", "q3").expect("the store holds q3");
            assert_eq!(
                info["fence"] as u64,
                lease.fence(),
                "the store's fence and the lease's differ"
            );
            Ok::<_, Error>(lease.fence())
        })
        .unwrap();
    let swallowed = p
        .swallowed(Duration::from_secs(1))
        .expect("a HOLD reply was swallowed");
    let holds = p.requests("LOCK.HOLD");
    assert!(
        holds.len() >= 2,
        "{} HOLDs reached the store, want the lost one and its retry",
        holds.len()
    );
    let reqid = &holds[0][3];
    assert_eq!(&swallowed[3], reqid);
    assert_eq!(reqid.len(), 32, "reqid {reqid:?}: want 32 hex characters");
    assert!(
        holds.iter().all(|h| &h[3] == reqid),
        "the retries carry other reqids: {holds:?}"
    );
    let grants = lock_stats(&admin)["grants_total"] - before;
    assert_eq!(
        grants,
        1,
        "{grants} grants for {} HOLDs of one reqid (fence {fence:#x})",
        holds.len()
    );
}

/// LOCK-11: a 1 s ttl lease outlives every connection under it, cut every
/// 300 ms for 3 s, and is renewed from the next one.
#[test]
fn connections_cut_every_300ms_do_not_lose_the_lease() {
    let s = Server::start();
    let admin = s.store();
    let p = Proxy::start(&s.addr);
    let store = p.store(Duration::from_millis(300));
    let lk = store.lock("reports").ttl(TTL).open().unwrap();
    let before = lock_stats(&admin)["renewals_total"];
    let (stop, cuts) = (AtomicBool::new(false), AtomicUsize::new(0));
    let r = thread::scope(|sc| {
        sc.spawn(|| {
            while !stop.load(Ordering::SeqCst) {
                thread::sleep(Duration::from_millis(300));
                if p.cut_all() > 0 {
                    cuts.fetch_add(1, Ordering::SeqCst);
                }
            }
        });
        let r = lk.hold("long", |lease| {
            let first = lease.deadline();
            let lost = lease.wait_lost(Duration::from_secs(3));
            Ok::<_, Error>((lost, lease.deadline() - first))
        });
        stop.store(true, Ordering::SeqCst);
        r
    });
    let (lost, moved) = r.unwrap();
    assert!(!lost, "the lease was lost");
    assert!(
        moved > Duration::from_secs(2),
        "the deadline moved {moved:?} in 3 s"
    );
    let (cuts, renewals) = (
        cuts.load(Ordering::SeqCst),
        lock_stats(&admin)["renewals_total"] - before,
    );
    assert!(cuts >= 6, "only {cuts} cuts");
    assert!(
        renewals >= 6,
        "{renewals} renewals in 3 s of a 1 s ttl, want about 9"
    );
}

/// LOCK-09: a user that may only read cannot hold: hold says so at once,
/// with the store's NOPERM, without retrying it for a ttl; the closure does
/// not run. A user that may write holds.
#[test]
fn a_read_only_user_gets_a_clear_error() {
    let users = format!(
        "# reader may read, worker may write\nuser reader read sha256:{}\nuser worker write sha256:{}\n",
        sha256_hex("r"),
        sha256_hex("w")
    );
    let s = Server::start_with_users(&users);
    let reader = Store::connect(&format!("redis://reader:r@{}", s.addr)).unwrap();
    let worker = Store::connect(&format!("redis://worker:w@{}", s.addr)).unwrap();

    let start = std::time::Instant::now();
    let err = reader
        .lock("jobs")
        .ttl(TTL)
        .open()
        .unwrap()
        .hold("k", |_| -> Result<(), Error> {
            panic!("a read-only user ran the closure")
        })
        .unwrap_err();
    let took = start.elapsed();
    assert_eq!(err.kind(), ErrorKind::Denied, "{err}");
    assert!(
        err.to_string().contains("NOPERM") && err.to_string().contains("lock.hold"),
        "{err}"
    );
    assert!(
        took < Duration::from_millis(500),
        "NOPERM took {took:?}: retried?"
    );

    let fence = worker
        .lock("jobs")
        .ttl(TTL)
        .open()
        .unwrap()
        .hold("k", |lease| Ok::<_, Error>(lease.fence()))
        .unwrap();
    assert!(fence > 0);
}
