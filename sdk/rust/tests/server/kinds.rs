//! Semaphores, readers and owners (SPEC §12): a permit and a reader are
//! leases as any, held, renewed, lost and let go by the rules of §8
//! (LOCK-01, LOCK-08, LOCK-15, LOCK-16).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread;
use std::time::Duration;

use tenure_locks::{reason, Error, ErrorKind, Store, Value};

use crate::harness::{key_info, lock_stats, waiters_are, Reply, Server};
use crate::proxy::Proxy;
use crate::resp;

const TTL: Duration = Duration::from_secs(1);

/// A flat array of field/value pairs (RESP2) as a map of its values.
fn pairs(v: &Value) -> HashMap<String, Value> {
    let Value::Array(a) = v else {
        panic!("want field/value pairs, got {v:?}")
    };
    a.chunks(2)
        .map(|kv| (kv[0].as_str().unwrap().to_owned(), kv[1].clone()))
        .collect()
}

/// LOCK.INFO's owner.
fn info_owner(store: &Store, lock: &str, key: &str) -> String {
    let info = pairs(&store.call(&["LOCK.INFO", lock, key]).unwrap());
    info["owner"].as_str().unwrap().to_owned()
}

/// LOCK.HOLDERS lock key: every live lease, oldest first.
fn holders(store: &Store, lock: &str, key: &str) -> Vec<HashMap<String, Value>> {
    match store.call(&["LOCK.HOLDERS", lock, key]).unwrap() {
        Value::Array(a) => a.iter().map(pairs).collect(),
        other => panic!("LOCK.HOLDERS = {other:?}"),
    }
}

/// LOCK-01: 10 holds of a LIMIT 3 key run at most 3 at once, and do
/// overlap; each permit has a fence of its own.
#[test]
fn limit_honoured_with_concurrent_holders() {
    let s = Server::start();
    let store = s.store();
    let llm = store.lock("llm").limit(3).ttl(TTL).open().unwrap();
    let (running, most) = (AtomicUsize::new(0), AtomicUsize::new(0));
    let fences = Mutex::new(Vec::new());
    thread::scope(|sc| {
        for _ in 0..10 {
            sc.spawn(|| {
                llm.hold("openai", |permit| {
                    let n = running.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(n, Ordering::SeqCst);
                    fences.lock().unwrap().push(permit.fence());
                    thread::sleep(Duration::from_millis(100));
                    running.fetch_sub(1, Ordering::SeqCst);
                    Ok(())
                })
                .unwrap();
            });
        }
    });
    assert_eq!(
        most.load(Ordering::SeqCst),
        3,
        "holders at once, want the limit"
    );
    let mut fences = fences.into_inner().unwrap();
    fences.sort();
    fences.dedup();
    assert_eq!(fences.len(), 10, "a fence granted twice");
    assert!(
        key_info(&store, "llm", "openai").is_none(),
        "a permit not let go"
    );
}

/// LOCK.REVOKE … FENCE f ends one permit: its holder learns it (lost(),
/// wait_lost) and hold fails Lost with "revoked by admin" although the
/// closure returned Ok; the other permit holds on.
#[test]
fn a_revoked_permit_cancels_its_holder_alone() {
    let s = Server::start();
    let store = s.store();
    let llm = store
        .lock("llm")
        .limit(2)
        .ttl(Duration::from_secs(2))
        .open()
        .unwrap();
    let (fence_tx, fence_rx) = mpsc::channel();
    let (end_tx, end_rx) = mpsc::channel::<()>();
    let other = {
        let llm = llm.clone();
        thread::spawn(move || {
            llm.hold("k", |lease| {
                fence_tx.send(lease.fence()).unwrap();
                end_rx.recv().unwrap();
                assert!(!lease.lost(), "the other permit was touched");
                Ok(())
            })
        })
    };
    let other_fence = fence_rx.recv_timeout(Duration::from_secs(5)).unwrap();
    let err = llm
        .hold("k", |lease| {
            let fence = lease.fence().to_string();
            let n = store.call(&["LOCK.REVOKE", "llm", "k", "FENCE", &fence])?;
            assert_eq!(n, Value::Int(1));
            assert!(
                lease.wait_lost(Duration::from_secs(2)),
                "not told of the revoke"
            );
            Ok(())
        })
        .expect_err("hold succeeded after its permit was revoked");
    assert_eq!(err.kind(), ErrorKind::Lost, "{err}");
    assert_eq!(err.reason(), Some(reason::REVOKED));
    let info = key_info(&store, "llm", "k").expect("the other permit is held");
    assert_eq!((info["holders"], info["fence"] as u64), (1, other_fence));
    end_tx.send(()).unwrap();
    other.join().unwrap().unwrap();
}

/// A permit and a reader are renewed through a closure that outlives their
/// ttl, and let go when the closure returns an error or panics.
#[test]
fn permits_and_readers_are_renewed_and_let_go_on_error_and_panic() {
    let s = Server::start();
    let store = s.store();
    let sem = store.lock("kinds").limit(2).ttl(TTL).open().unwrap();
    let rw = store.lock("kinds").ttl(TTL).open().unwrap();
    let hold =
        |shared: bool, key: &str, f: &mut dyn FnMut(&tenure_locks::Lease) -> Result<(), Error>| {
            if shared {
                rw.hold_shared(key, f)
            } else {
                sem.hold(key, f)
            }
        };
    for (shared, key) in [(false, "permit"), (true, "reader")] {
        let err = hold(shared, key, &mut |_| {
            Err(Error::new(ErrorKind::Other, "boom"))
        })
        .expect_err("the closure's error");
        assert_eq!(
            (err.kind(), err.to_string().ends_with("boom")),
            (ErrorKind::Other, true),
            "{err}"
        );
        assert!(
            key_info(&store, "kinds", key).is_none(),
            "{key}: kept after an error"
        );

        let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            hold(shared, key, &mut |_| {
                std::panic::resume_unwind(Box::new("boom"))
            })
        }));
        assert!(panicked.is_err());
        assert!(
            key_info(&store, "kinds", key).is_none(),
            "{key}: kept after a panic"
        );

        let renewals = lock_stats(&store)["renewals_total"];
        hold(shared, key, &mut |lease| {
            assert!(!lease.wait_lost(Duration::from_millis(2500)), "{key}: lost");
            let info = key_info(&store, "kinds", key).unwrap();
            assert_eq!(info["fence"] as u64, lease.fence());
            Ok(())
        })
        .unwrap();
        assert!(
            lock_stats(&store)["renewals_total"] - renewals >= 4,
            "{key}: too few renewals in 2.5 s of a 1 s ttl"
        );
        assert!(
            key_info(&store, "kinds", key).is_none(),
            "{key}: kept after Ok"
        );
    }
}

/// LOCK-01: readers share the key; a writer never runs beside anyone.
#[test]
fn readers_overlap_and_a_writer_never() {
    let s = Server::start();
    let store = s.store();
    let reports = store.lock("reports").ttl(TTL).open().unwrap();
    // (readers, writers) inside, the most readers at once, what went wrong
    let inside = Mutex::new((0, 0, 0, Vec::<String>::new()));
    let body = |writer: bool| {
        {
            let mut g = inside.lock().unwrap();
            if writer {
                g.1 += 1;
            } else {
                g.0 += 1;
                g.2 = g.2.max(g.0);
            }
            if g.1 > 1 || (g.1 == 1 && g.0 > 0) {
                let bad = format!("{} writers beside {} readers", g.1, g.0);
                g.3.push(bad);
            }
        }
        thread::sleep(Duration::from_millis(30));
        let mut g = inside.lock().unwrap();
        if writer {
            g.1 -= 1;
        } else {
            g.0 -= 1;
        }
        Ok(())
    };
    thread::scope(|sc| {
        for i in 0..16 {
            let (reports, body) = (&reports, &body);
            sc.spawn(move || {
                let writer = i % 5 == 2;
                if writer {
                    reports.hold("q3", |_| body(true)).unwrap();
                } else {
                    reports.hold_shared("q3", |_| body(false)).unwrap();
                }
            });
            thread::sleep(Duration::from_millis(3));
        }
    });
    let (_, _, most_readers, bad) = inside.into_inner().unwrap();
    assert!(bad.is_empty(), "LOCK-01: {bad:?}");
    assert!(
        most_readers >= 2,
        "readers never overlapped ({most_readers} at most)"
    );
}

/// LOCK-08: a reader's try beside a reader is granted, but not while a
/// writer waits; a writer's try does not pass a reader.
#[test]
fn try_hold_shared_does_not_pass_a_waiting_writer() {
    let s = Server::start();
    let store = s.store();
    let reports = store.lock("reports").open().unwrap();
    let (held_tx, held_rx) = mpsc::channel();
    let (end_tx, end_rx) = mpsc::channel::<()>();
    let reports = &reports;
    thread::scope(|sc| {
        let reader = sc.spawn(move || {
            reports.hold_shared("q3", |_| {
                held_tx.send(()).unwrap();
                // Bounded, so that a failed assertion below ends the test.
                let _ = end_rx.recv_timeout(Duration::from_secs(10));
                Ok(())
            })
        });
        held_rx.recv_timeout(Duration::from_secs(5)).unwrap();
        reports
            .try_hold_shared("q3", |_| Ok(()))
            .expect("a second reader");
        let e = reports
            .try_hold("q3", |_| Ok(()))
            .expect_err("a writer beside a reader");
        assert_eq!(e.kind(), ErrorKind::NotHeld);
        let writer = sc.spawn(|| reports.hold("q3", |_| Ok(())));
        waiters_are(&store, "reports", "q3", 1);
        let e = reports
            .try_hold_shared("q3", |_| Ok(()))
            .expect_err("a reader passed a waiting writer");
        assert_eq!(e.kind(), ErrorKind::NotHeld);
        end_tx.send(()).unwrap();
        reader.join().unwrap().unwrap();
        writer.join().unwrap().unwrap();
    });
}

/// LOCK-16: the owner is what LOCK.INFO and LOCK.HOLDERS show of a holder;
/// hostname:pid by default.
#[test]
fn owner_shown_by_info_and_holders() {
    let s = Server::start();
    let store = s.store();
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    let default = format!("{}:{}", host.trim(), std::process::id());
    let locks = [
        (
            store.lock("summaries").owner("worker-7").open().unwrap(),
            "worker-7",
        ),
        (store.lock("summaries").open().unwrap(), default.as_str()),
        (
            store
                .lock("summaries")
                .limit(4)
                .owner("permit-holder")
                .open()
                .unwrap(),
            "permit-holder",
        ),
    ];
    for (lk, want) in &locks {
        lk.hold("chat-42", |_| {
            assert_eq!(info_owner(&store, "summaries", "chat-42"), *want);
            Ok(())
        })
        .unwrap();
    }
    let a = store
        .lock("summaries")
        .limit(2)
        .owner("worker-a")
        .open()
        .unwrap();
    let b = store
        .lock("summaries")
        .limit(2)
        .owner("worker-b")
        .open()
        .unwrap();
    a.hold("chat-43", |la| {
        b.hold("chat-43", |lb| {
            let hs = holders(&store, "summaries", "chat-43");
            let got: Vec<_> = hs
                .iter()
                .map(|h| {
                    (
                        h["owner"].as_str().unwrap().to_owned(),
                        h["fence"].as_int().unwrap() as u64,
                    )
                })
                .collect();
            assert_eq!(
                got,
                [
                    ("worker-a".to_owned(), la.fence()),
                    ("worker-b".to_owned(), lb.fence())
                ]
            );
            Ok(())
        })
    })
    .unwrap();
    let r1 = store.lock("summaries").owner("reader-1").open().unwrap();
    let r2 = store.lock("summaries").owner("reader-2").open().unwrap();
    r1.hold_shared("chat-44", |_| {
        r2.hold_shared("chat-44", |_| {
            let hs = holders(&store, "summaries", "chat-44");
            let got: Vec<_> = hs
                .iter()
                .map(|h| {
                    (
                        h["owner"].as_str().unwrap().to_owned(),
                        h["shared"].as_int().unwrap(),
                    )
                })
                .collect();
            assert_eq!(
                got,
                [("reader-1".to_owned(), 1), ("reader-2".to_owned(), 1)]
            );
            Ok(())
        })
    })
    .unwrap();
}

/// LOCK-15: a hold whose limit disagrees with the key's returns
/// ErrorKind::Store with the store's refusal, runs nothing, and changes
/// nothing.
#[test]
fn a_mismatching_limit_is_the_stores_refusal() {
    let s = Server::start();
    let store = s.store();
    let sem = store.lock("llm").limit(3).open().unwrap();
    let plain = store.lock("llm").open().unwrap();
    let other = store.lock("llm").limit(5).open().unwrap();
    let ran = AtomicBool::new(false);
    let run = |_: &tenure_locks::Lease| {
        ran.store(true, Ordering::SeqCst);
        Ok(())
    };
    sem.hold("k", |lease| {
        for r in [
            plain.hold("k", run),
            other.try_hold("k", run),
            plain.hold_shared("k", run),
        ] {
            let e = r.expect_err("a hold with another limit");
            assert_eq!(e.kind(), ErrorKind::Store, "{e}");
            assert!(
                e.to_string().contains("this key is in use with LIMIT 3"),
                "{e}"
            );
        }
        let info = key_info(&store, "llm", "k").unwrap();
        assert_eq!((info["holders"], info["fence"] as u64), (1, lease.fence()));
        Ok(())
    })
    .unwrap();
    plain
        .hold("k", |_| {
            let e = sem
                .try_hold("k", run)
                .expect_err("a permit beside a plain lease");
            assert_eq!(e.kind(), ErrorKind::Store);
            assert!(e.to_string().contains("in use without LIMIT"), "{e}");
            Ok(())
        })
        .unwrap();
    assert!(
        !ran.load(Ordering::SeqCst),
        "a refused hold ran its closure"
    );
}

#[test]
fn kind_options_are_checked_before_anything_is_sent() {
    let s = Server::start();
    let store = s.store();
    for n in [0, 65537] {
        let e = store.lock("l").limit(n).open().expect_err("a bad limit");
        assert_eq!(e.kind(), ErrorKind::InvalidInput);
        assert!(e.to_string().contains("must be from 1 to 65536"), "{e}");
    }
    for o in [String::new(), "o".repeat(257), "é".repeat(129)] {
        let e = store.lock("l").owner(o).open().expect_err("a bad owner");
        assert_eq!(e.kind(), ErrorKind::InvalidInput);
        assert!(e.to_string().contains("must be 1 to 256 bytes"), "{e}");
    }
    store
        .lock("l")
        .limit(65536)
        .owner("o".repeat(256))
        .open()
        .unwrap();
    let grants = lock_stats(&store)["grants_total"];
    let sem = store.lock("l").limit(2).open().unwrap();
    for r in [
        sem.hold_shared("k", |_| Ok(())),
        sem.try_hold_shared("k", |_| Ok(())),
    ] {
        let e = r.expect_err("a reader of a lock with a limit");
        assert_eq!(e.kind(), ErrorKind::InvalidInput);
        assert!(
            e.to_string()
                .contains("a lock with a limit has no shared holds"),
            "{e}"
        );
    }
    assert_eq!(lock_stats(&store)["grants_total"], grants);
}

/// LOCK-03: a permit's or a reader's HOLD whose grant is swallowed is asked
/// again with the same request id and the same LIMIT or SHARED: one grant.
#[test]
fn a_swallowed_hold_reply_of_a_permit_or_reader_is_one_grant() {
    let s = Server::start();
    let admin = s.store();
    let p = Proxy::start(&s.addr);
    let store = p.store(Duration::from_millis(300));
    let sem = store.lock("swallow").limit(2).ttl(TTL).open().unwrap();
    let rw = store.lock("swallow").ttl(TTL).open().unwrap();
    for (lk, shared, key) in [(&sem, false, "permit"), (&rw, true, "reader")] {
        let swallowed = Arc::new(AtomicBool::new(false));
        let once = swallowed.clone();
        p.swallow_replies(move |req, reply| {
            req.first().is_some_and(|c| c == "LOCK.HOLD")
                && matches!(reply, resp::Value::Array(_))
                && !once.swap(true, Ordering::SeqCst)
        });
        let before = lock_stats(&admin)["grants_total"];
        let body = |lease: &tenure_locks::Lease| {
            let info = key_info(&admin, "swallow", key).unwrap();
            assert_eq!((info["holders"], info["fence"] as u64), (1, lease.fence()));
            Ok(())
        };
        if shared {
            rw.hold_shared(key, body).unwrap();
        } else {
            lk.hold(key, body).unwrap();
        }
        assert!(swallowed.load(Ordering::SeqCst), "{key}: nothing swallowed");
        let holds: Vec<_> = p
            .requests("LOCK.HOLD")
            .into_iter()
            .filter(|h| h[2] == key)
            .collect();
        assert!(holds.len() >= 2, "{key}: {} HOLDs", holds.len());
        assert!(
            holds.iter().all(|h| h[3] == holds[0][3]),
            "{key}: reqids differ"
        );
        assert!(
            holds
                .iter()
                .all(|h| h.iter().any(|a| a == "LIMIT") != shared
                    && h.iter().any(|a| a == "SHARED") == shared),
            "{key}: a HOLD without its kind: {holds:?}"
        );
        assert_eq!(
            lock_stats(&admin)["grants_total"] - before,
            1,
            "{key}: grants"
        );
    }
}

/// The same on tokio: permits and readers with async closures.
#[cfg(feature = "tokio")]
#[test]
fn on_tokio_permits_readers_and_a_revoked_permit() {
    use crate::on_tokio::block_on;
    let s = Server::start();
    let admin = s.store();
    block_on(async {
        let store = tenure_locks::tokio::Store::connect(&s.url()).await.unwrap();
        let llm = store.lock("llm").limit(3).ttl(TTL).open().unwrap();
        let (running, most) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let mut tasks = Vec::new();
        for _ in 0..10 {
            let (llm, running, most) = (llm.clone(), running.clone(), most.clone());
            tasks.push(tokio::spawn(async move {
                llm.hold("openai", |_| async move {
                    let n = running.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(n, Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    running.fetch_sub(1, Ordering::SeqCst);
                    Ok(())
                })
                .await
            }));
        }
        for t in tasks {
            t.await.unwrap().unwrap();
        }
        assert_eq!(most.load(Ordering::SeqCst), 3, "LOCK-01: permits at once");

        // A revoked permit drops its future at the next await: hold fails Lost.
        let dropped = Arc::new(AtomicBool::new(false));
        let d = dropped.clone();
        let admin2 = admin.clone();
        let err = llm
            .hold("k", |lease| async move {
                struct Flag(Arc<AtomicBool>);
                impl Drop for Flag {
                    fn drop(&mut self) {
                        self.0.store(true, Ordering::SeqCst);
                    }
                }
                let _flag = Flag(d);
                let fence = lease.fence().to_string();
                admin2
                    .call(&["LOCK.REVOKE", "llm", "k", "FENCE", &fence])
                    .unwrap();
                tokio::time::sleep(Duration::from_secs(30)).await;
                Ok(())
            })
            .await
            .expect_err("hold after its permit was revoked");
        assert_eq!(
            (err.kind(), err.reason()),
            (ErrorKind::Lost, Some(reason::REVOKED))
        );
        assert!(dropped.load(Ordering::SeqCst));

        // Readers overlap on tokio too; a lock with a limit has none.
        let reports = store
            .lock("reports")
            .owner("reader")
            .ttl(TTL)
            .open()
            .unwrap();
        let inside = Arc::new(AtomicUsize::new(0));
        let most_readers = Arc::new(AtomicUsize::new(0));
        let mut tasks = Vec::new();
        for _ in 0..4 {
            let (reports, inside, most_readers) =
                (reports.clone(), inside.clone(), most_readers.clone());
            tasks.push(tokio::spawn(async move {
                reports
                    .hold_shared("q3", |_| async move {
                        let n = inside.fetch_add(1, Ordering::SeqCst) + 1;
                        most_readers.fetch_max(n, Ordering::SeqCst);
                        tokio::time::sleep(Duration::from_millis(200)).await;
                        inside.fetch_sub(1, Ordering::SeqCst);
                        Ok(())
                    })
                    .await
            }));
        }
        for t in tasks {
            t.await.unwrap().unwrap();
        }
        assert!(
            most_readers.load(Ordering::SeqCst) >= 2,
            "readers never overlapped"
        );
        let e = llm
            .try_hold_shared("k", |_| async { Ok(()) })
            .await
            .expect_err("a reader of a lock with a limit");
        assert_eq!(e.kind(), ErrorKind::InvalidInput);
    });
}
