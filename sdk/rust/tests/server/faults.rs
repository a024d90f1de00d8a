//! Network faults under a held or wanted lease, made real by the proxy.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use tenure_locks::{reason, Error, ErrorKind, Store};

use crate::harness::{hold_in_background, key_info, lock_stats, sha256_hex, waiters_are, Server};
use crate::proxy::Proxy;
use crate::resp::Value;

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
            && matches!(reply, Value::Array(_))
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

/// LOCK-03 at its edge: a successor chunk sent in time, but held back on
/// the way (a slow network, a pause between its send and its write), still
/// in flight when the grant came to the chunk before it. It reaches the
/// store 2.5 s later, after the lease was let go and its request id
/// forgotten (a ttl after the end), and the store grants the id a second
/// lease. The hold lets that grant go at once: by the time it returns the
/// key is free, not held for a ttl by a lease nobody uses.
#[test]
fn a_late_successors_grant_is_let_go_at_once() {
    let s = Server::start();
    let admin = s.store();
    let p = Proxy::start(&s.addr);
    // 2 s chunks, the successor 500 ms into the first; a reply within 4 s.
    let lk = p
        .store(Duration::from_secs(4))
        .lock("late")
        .ttl(TTL)
        .open()
        .unwrap();
    let (delayed_tx, delayed) = mpsc::channel::<()>();
    let (holds, delayed_tx) = (AtomicUsize::new(0), Mutex::new(delayed_tx));
    p.delay_requests(move |req| {
        let second = req.first().is_some_and(|c| c == "LOCK.HOLD")
            && holds.fetch_add(1, Ordering::SeqCst) == 1;
        second.then(|| {
            let _ = delayed_tx.lock().unwrap().send(());
            Duration::from_millis(2500)
        })
    });
    let (late_tx, late_reply) = mpsc::channel::<Value>();
    let (replies, late_tx) = (AtomicUsize::new(0), Mutex::new(late_tx));
    p.swallow_replies(move |req, reply| {
        if req.first().is_some_and(|c| c == "LOCK.HOLD")
            && replies.fetch_add(1, Ordering::SeqCst) == 1
        {
            let _ = late_tx.lock().unwrap().send(reply.clone());
        }
        false
    });

    let (go, wait) = mpsc::channel::<()>();
    let holder = hold_in_background(
        &admin.lock("late").ttl(TTL).open().unwrap(),
        "k",
        move || {
            wait.recv().unwrap();
            Ok(())
        },
    );
    let waiter = thread::spawn(move || lk.hold("k", |lease| Ok::<_, Error>(lease.fence())));
    delayed
        .recv_timeout(Duration::from_secs(5))
        .expect("the waiter's second chunk went out");
    go.send(()).unwrap(); // the grant goes to the first chunk
    holder.join().unwrap().unwrap();
    let fence = waiter.join().unwrap().unwrap();

    let late = late_reply
        .recv_timeout(Duration::from_secs(1))
        .expect("the late chunk was answered before the hold returned");
    let Value::Array(a) = &late else {
        panic!("the late chunk was answered {late:?}, not a second grant: nothing tested");
    };
    let late_fence = a[1].as_int().unwrap() as u64;
    assert!(
        late_fence > fence,
        "the late grant's fence {late_fence:#x}, the hold's {fence:#x}"
    );
    assert!(
        key_info(&admin, "late", "k").is_none(),
        "the second lease of the request (fence {late_fence:#x}) still holds the key"
    );
}

/// LOCK-07 with a grant that came to an older chunk: the first chunk's
/// grant is swallowed, and its successor, sent 500 ms later, is answered
/// the same lease (LOCK-03). The store's MAXHOLD counts from the grant,
/// which came before the successor was sent; so does the holder's cap (from
/// the oldest HOLD that may have been granted), and it gives the lease up
/// a margin before the store's cap, not a successor's delay after it.
#[test]
fn max_hold_counts_from_the_oldest_chunk_that_may_have_been_granted() {
    let s = Server::start();
    let admin = s.store();
    let p = Proxy::start(&s.addr);
    let max_hold = Duration::from_millis(1500);
    let lk = p
        .store(Duration::from_secs(4))
        .lock("capped")
        .ttl(TTL)
        .max_hold(max_hold)
        .open()
        .unwrap();
    let (granted_tx, granted_by) = mpsc::channel::<Instant>();
    let (once, granted_tx) = (AtomicBool::new(false), Mutex::new(granted_tx));
    p.swallow_replies(move |req, reply| {
        let first_grant = req.first().is_some_and(|c| c == "LOCK.HOLD")
            && matches!(reply, Value::Array(_))
            && !once.swap(true, Ordering::SeqCst);
        if first_grant {
            // The store granted before its reply got here.
            let _ = granted_tx.lock().unwrap().send(Instant::now());
        }
        first_grant
    });

    let (go, wait) = mpsc::channel::<()>();
    let holder = hold_in_background(
        &admin.lock("capped").ttl(TTL).open().unwrap(),
        "k",
        move || {
            wait.recv().unwrap();
            Ok(())
        },
    );
    let (cap_tx, cap) = mpsc::channel::<Instant>();
    let waiter = thread::spawn(move || {
        lk.hold("k", |lease| {
            assert!(lease.wait_lost(Duration::from_secs(5)), "outlived MaxHold");
            cap_tx.send(lease.deadline()).unwrap();
            Ok::<_, Error>(())
        })
    });
    waiters_are(&admin, "capped", "k", 1);
    go.send(()).unwrap();
    holder.join().unwrap().unwrap();
    let swallowed = p
        .swallowed(Duration::from_secs(5))
        .expect("the first chunk's grant was swallowed");
    let err = waiter.join().unwrap().unwrap_err();
    assert_eq!(
        (err.kind(), err.reason()),
        (ErrorKind::Lost, Some(reason::MAX_HOLD)),
        "{err}"
    );
    let holds = p.requests("LOCK.HOLD");
    let chunks: Vec<_> = holds.iter().filter(|h| h[3] == swallowed[3]).collect();
    assert!(
        chunks.len() >= 2 && *chunks[0] == swallowed,
        "the first chunk's grant was swallowed, then {chunks:?}"
    );
    // The store's cap is MAXHOLD after the grant, which came before
    // granted_by; the holder's is a margin before the store's (or, from a
    // chunk sent after the grant, after it). 2 ms for the store's
    // milliseconds.
    let granted_by = granted_by.recv().unwrap();
    let margin = TTL / 10;
    let cap = cap.recv().unwrap();
    assert!(
        cap <= granted_by + max_hold - margin + Duration::from_millis(2),
        "the holder's cap is {:?} after the grant's reply, the store's at most {:?}",
        cap - granted_by,
        max_hold
    );
}
