//! The behaviours of SPEC §8 on the async face (`tenure_locks::tokio`),
//! against the real server: the closure is a future on a tokio runtime, a
//! lost lease drops it at its next await.

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tenure_locks::tokio::{Lock, Store};
use tenure_locks::{reason, Error, ErrorKind, Value};

use crate::harness::{key_info, lock_stats, sha256_hex, waiters_are, Reply, Server};
use crate::proxy::Proxy;
use crate::resp;

const TTL: Duration = Duration::from_secs(1);
const HANDOFF: Duration = Duration::from_millis(400);

pub fn block_on<T>(f: impl Future<Output = T>) -> T {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .unwrap()
        .block_on(f)
}

async fn store(s: &Server) -> Store {
    Store::connect(&s.url()).await.unwrap()
}

/// Sets its flag when dropped: tells a future dropped from one that ran out.
struct Dropped(Arc<AtomicBool>);

impl Drop for Dropped {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// The seed's example: hold, a fenced write, the value the closure returns.
#[test]
fn the_seed_example() {
    let s = Server::start();
    block_on(async {
        let store = store(&s).await;
        let summaries = store
            .lock("summaries")
            .ttl(Duration::from_secs(30))
            .open()
            .unwrap();
        let chat_id = "chat-42";
        let fence = summaries
            .hold(chat_id, |lease| {
                let store = store.clone();
                async move {
                    let text = "hello / yes".to_owned();
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    if lease.lost() {
                        return Err(Error::new(ErrorKind::Lost, "the summary was late"));
                    }
                    let fence = lease.fence().to_string();
                    store
                        .call(&["SET", &format!("summary:{chat_id}"), &text, "FENCE", &fence])
                        .await?;
                    Ok(lease.fence())
                }
            })
            .await
            .unwrap();
        assert!(fence > 0);
        let saved = store.call(&["GET", "summary:chat-42"]).await.unwrap();
        assert_eq!(saved.as_str(), Some("hello / yes"));
        assert!(
            key_info(store.sync(), "summaries", chat_id).is_none(),
            "not let go"
        );
    });
}

/// Renewals keep a 1 s ttl lease through a future that sleeps 3 s.
#[test]
fn renewals_keep_a_lease_through_a_future_of_several_ttls() {
    let s = Server::start();
    block_on(async {
        let store = store(&s).await;
        let lk = store.lock("reports").ttl(TTL).open().unwrap();
        let before = lock_stats(store.sync())["renewals_total"];
        lk.hold("long", |lease| async move {
            tokio::time::sleep(Duration::from_secs(3)).await;
            assert!(!lease.lost(), "{:?}", lease.loss());
            Ok(())
        })
        .await
        .unwrap();
        let renewals = lock_stats(store.sync())["renewals_total"] - before;
        assert!(renewals >= 6, "{renewals} renewals in 3 s of a 1 s ttl");
    });
}

/// A lost lease (admin revoke, restart, MaxHold) drops the future at its
/// next await, soon after the loss, and the hold returns Lost with the
/// store's reason, though the future never failed.
#[test]
fn a_lost_lease_drops_the_future_with_the_reason() {
    for (how, want) in [
        ("revoke", reason::REVOKED),
        ("restart", reason::UNKNOWN_LEASE),
        ("maxhold", reason::MAX_HOLD),
    ] {
        let s = Server::start();
        block_on(async {
            let admin = store(&s).await;
            let lk = admin
                .lock("reports")
                .ttl(TTL)
                .max_hold(Duration::from_millis(1500))
                .open()
                .unwrap();
            let (dropped, reached_end) = (
                Arc::new(AtomicBool::new(false)),
                Arc::new(AtomicBool::new(false)),
            );
            let (d, end) = (dropped.clone(), reached_end.clone());
            let start = Instant::now();
            let server = &s;
            let admin2 = admin.clone();
            let err = lk
                .hold("k", |_lease| async move {
                    let _guard = Dropped(d);
                    match how {
                        "revoke" => {
                            let n = admin2.call(&["LOCK.REVOKE", "reports", "k"]).await?;
                            assert_eq!(n, Value::Int(1));
                        }
                        "restart" => server.restart(),
                        _ => {}
                    }
                    for _ in 0..100 {
                        tokio::time::sleep(Duration::from_millis(50)).await; // dropped at one of these
                    }
                    end.store(true, Ordering::SeqCst);
                    Ok(())
                })
                .await
                .unwrap_err();
            let took = start.elapsed();
            assert_eq!(
                (err.kind(), err.reason()),
                (ErrorKind::Lost, Some(want)),
                "{how}: {err}"
            );
            assert!(
                dropped.load(Ordering::SeqCst),
                "{how}: the future was not dropped"
            );
            assert!(
                !reached_end.load(Ordering::SeqCst),
                "{how}: the future ran to its end"
            );
            assert!(
                took < Duration::from_secs(3),
                "{how}: hold returned after {took:?}"
            );
        });
    }
}

/// The future returns Ok, returns an error, or panics: each time the lease
/// is released and the next waiter gets the key at once.
#[test]
fn lets_go_on_return_error_and_panic() {
    for end in ["ok", "error", "panic"] {
        let s = Server::start();
        block_on(async {
            let store = store(&s).await;
            let lk = store.lock("handoff").ttl(TTL).open().unwrap();
            let (started_tx, started) = tokio::sync::oneshot::channel::<()>();
            let (go_tx, go) = tokio::sync::oneshot::channel::<()>();
            let ended_at = Arc::new(Mutex::new(None));
            let ended = ended_at.clone();
            let first = tokio::spawn({
                let lk = lk.clone();
                async move {
                    lk.hold("k", |_| async move {
                        started_tx.send(()).unwrap();
                        go.await.unwrap();
                        *ended.lock().unwrap() = Some(Instant::now());
                        match end {
                            "ok" => Ok(1),
                            "error" => Err(Error::other("boom")),
                            _ => std::panic::resume_unwind(Box::new("boom")),
                        }
                    })
                    .await
                }
            });
            started.await.unwrap();
            let next = tokio::spawn({
                let lk = lk.clone();
                async move { lk.hold("k", |_| async { Ok(Instant::now()) }).await }
            });
            waiters_are(store.sync(), "handoff", "k", 1);
            go_tx.send(()).unwrap();
            let r = first.await;
            let got = next.await.unwrap().unwrap();
            let handoff = got - ended_at.lock().unwrap().unwrap();
            assert!(
                handoff < HANDOFF,
                "{end}: the next waiter got the key {handoff:?} after the end"
            );
            match end {
                "ok" => assert_eq!(r.unwrap().unwrap(), 1),
                "error" => {
                    let e = r.unwrap().unwrap_err();
                    assert_eq!(e.kind(), ErrorKind::Other, "{e}");
                    assert!(e.to_string().contains("boom"), "{e}");
                }
                _ => {
                    let payload = r.unwrap_err().into_panic();
                    assert_eq!(payload.downcast_ref::<&str>(), Some(&"boom"));
                }
            }
            assert_eq!(lock_stats(store.sync())["released_total"], 2, "{end}");
        });
    }
}

/// LOCK-08: 6 async holds join the line one after the other and are
/// granted in that order.
#[test]
fn waiters_are_served_in_the_order_they_joined() {
    let s = Server::start();
    block_on(async {
        let store = Store::connect_with(
            &s.url(),
            tenure_locks::Options::default().read_timeout(Duration::from_millis(200)),
        )
        .await
        .unwrap();
        let lk = store.lock("fifo").ttl(TTL).open().unwrap();
        let (go_tx, go) = tokio::sync::oneshot::channel::<()>();
        let (started_tx, started) = tokio::sync::oneshot::channel::<()>();
        let holder = tokio::spawn({
            let lk = lk.clone();
            async move {
                lk.hold("k", |_| async move {
                    started_tx.send(()).unwrap();
                    go.await.unwrap();
                    Ok(())
                })
                .await
            }
        });
        started.await.unwrap();
        let order = Arc::new(Mutex::new(Vec::new()));
        let mut waiters = Vec::new();
        for i in 0..6 {
            let (lk, order) = (lk.clone(), order.clone());
            waiters.push(tokio::spawn(async move {
                lk.hold("k", |_| async move {
                    order.lock().unwrap().push(i);
                    tokio::time::sleep(Duration::from_millis(30)).await;
                    Ok(())
                })
                .await
            }));
            waiters_are(store.sync(), "fifo", "k", i + 1);
        }
        tokio::time::sleep(Duration::from_millis(300)).await; // chunks go by in line
        go_tx.send(()).unwrap();
        holder.await.unwrap().unwrap();
        for w in waiters {
            w.await.unwrap().unwrap();
        }
        assert_eq!(*order.lock().unwrap(), (0..6).collect::<Vec<_>>());
    });
}

/// try_hold on a held key is NotHeld at once, a bounded wait once it has
/// elapsed; the closure runs in neither. Dropping a hold that waits in line
/// (a timeout around it) leaves no place behind: the waiter after it gets
/// the key as soon as the holder lets go.
#[test]
fn not_held_bounded_wait_and_cancellation() {
    let s = Server::start();
    block_on(async {
        let store = store(&s).await;
        let lk = store.lock("busy").ttl(TTL).open().unwrap();
        let (go_tx, go) = tokio::sync::oneshot::channel::<()>();
        let (started_tx, started) = tokio::sync::oneshot::channel::<()>();
        let ended_at = Arc::new(Mutex::new(None));
        let ended = ended_at.clone();
        let holder = tokio::spawn({
            let lk = lk.clone();
            async move {
                lk.hold("k", |_| async move {
                    started_tx.send(()).unwrap();
                    go.await.unwrap();
                    *ended.lock().unwrap() = Some(Instant::now());
                    Ok(())
                })
                .await
            }
        });
        started.await.unwrap();
        let ran = Arc::new(AtomicUsize::new(0));
        let never = |ran: Arc<AtomicUsize>| {
            move |_| async move {
                ran.fetch_add(1, Ordering::SeqCst);
                Ok(())
            }
        };

        let start = Instant::now();
        let err = lk.try_hold("k", never(ran.clone())).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::NotHeld, "{err}");
        assert!(start.elapsed() < Duration::from_millis(200));

        let bounded = store
            .lock("busy")
            .ttl(TTL)
            .wait(Duration::from_millis(300))
            .open()
            .unwrap();
        let start = Instant::now();
        let err = bounded.hold("k", never(ran.clone())).await.unwrap_err();
        let took = start.elapsed();
        assert_eq!(err.kind(), ErrorKind::NotHeld, "{err}");
        assert!(
            took >= Duration::from_millis(300) && took < Duration::from_millis(1300),
            "{took:?}"
        );

        // Cancelled by a timeout while in line.
        let cancelled =
            tokio::time::timeout(Duration::from_millis(300), lk.hold("k", never(ran.clone())))
                .await;
        assert!(cancelled.is_err(), "the hold did not wait");
        let next = tokio::spawn({
            let lk = lk.clone();
            async move { lk.hold("k", |_| async { Ok(Instant::now()) }).await }
        });
        waiters_are(store.sync(), "busy", "k", 1);
        go_tx.send(()).unwrap();
        holder.await.unwrap().unwrap();
        let got = next.await.unwrap().unwrap();
        let handoff = got - ended_at.lock().unwrap().unwrap();
        assert!(
            handoff < HANDOFF,
            "the waiter behind the cancelled one waited {handoff:?}"
        );
        assert_eq!(ran.load(Ordering::SeqCst), 0, "a closure ran on a held key");
    });
}

/// LOCK-03: a swallowed HOLD reply is asked again with the same request id
/// and answered the same lease; LOCK-11: connections cut every 300 ms under
/// a held lease do not lose it.
#[test]
fn swallowed_replies_and_cut_connections() {
    let s = Server::start();
    let p = Proxy::start(&s.addr);
    let lk = block_on(async {
        let admin = store(&s).await;
        let via = Store::from(p.store(Duration::from_millis(300)));
        let lk = via.lock("reports").ttl(TTL).open().unwrap();
        let once = AtomicBool::new(false);
        p.swallow_replies(move |req, reply| {
            req.first().is_some_and(|c| c == "LOCK.HOLD")
                && matches!(reply, resp::Value::Array(_))
                && !once.swap(true, Ordering::SeqCst)
        });
        let before = lock_stats(admin.sync())["grants_total"];
        lk.hold("q3", |_| async { Ok(()) }).await.unwrap();
        assert!(
            p.swallowed(Duration::from_secs(1)).is_some(),
            "nothing swallowed"
        );
        assert_eq!(
            lock_stats(admin.sync())["grants_total"] - before,
            1,
            "one grant for one request"
        );
        let holds = p.requests("LOCK.HOLD");
        assert!(
            holds.len() >= 2 && holds.iter().all(|h| h[3] == holds[0][3]),
            "{holds:?}"
        );

        lk
    });

    let (stop, cuts) = (AtomicBool::new(false), AtomicUsize::new(0));
    let lost = std::thread::scope(|sc| {
        sc.spawn(|| {
            while !stop.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(300));
                if p.cut_all() > 0 {
                    cuts.fetch_add(1, Ordering::SeqCst);
                }
            }
        });
        let lost = block_on(lk.hold("long", |lease| async move {
            tokio::time::sleep(Duration::from_secs(3)).await;
            Ok(lease.lost())
        }));
        stop.store(true, Ordering::SeqCst);
        lost
    });
    assert!(!lost.unwrap(), "lost under the cuts");
    let cuts = cuts.load(Ordering::SeqCst);
    assert!(cuts >= 6, "only {cuts} cuts");
}

/// LOCK-09: a read-only user gets Denied at once, the closure not run.
#[test]
fn a_read_only_user_gets_a_clear_error() {
    let users = format!("user reader read sha256:{}\n", sha256_hex("r"));
    let s = Server::start_with_users(&users);
    block_on(async {
        let reader = Store::connect(&format!("redis://reader:r@{}", s.addr))
            .await
            .unwrap();
        let start = Instant::now();
        let err = reader
            .lock("jobs")
            .open()
            .unwrap()
            .hold("k", |_| async {
                panic!("a read-only user ran the closure") as Result<(), Error>
            })
            .await
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Denied, "{err}");
        assert!(err.to_string().contains("NOPERM"), "{err}");
        assert!(start.elapsed() < Duration::from_millis(500));
    });
}

/// A Lock is what an async hold is called on.
fn _types(_: Lock) {}

/// A failover under an async hold, through the redis crate's
/// ClusterClient: the leader is killed, the future is dropped, the hold
/// returns Lost; the next hold, on the new leader, has a larger fence from a
/// newer epoch (LOCK-14).
#[test]
fn a_failover_drops_the_future_and_the_next_fence_is_larger() {
    let c = crate::harness::ThreeNodes::start();
    let leader = c.leader();
    block_on(async {
        let store = Store::new(crate::cluster::cluster_client(&c.urls))
            .await
            .unwrap();
        let lk = store.lock("jobs").ttl(TTL).open().unwrap();
        let dropped = Arc::new(AtomicBool::new(false));
        let d = dropped.clone();
        let cluster = &c;
        let mut first = 0;
        let err = lk
            .hold("k", |lease| {
                first = lease.fence();
                async move {
                    let _guard = Dropped(d);
                    cluster.kill(leader);
                    tokio::time::sleep(Duration::from_secs(30)).await;
                    Ok(())
                }
            })
            .await
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Lost, "{err}");
        assert!(
            matches!(err.reason(), Some(reason::EXPIRED | reason::UNKNOWN_LEASE)),
            "{err}"
        );
        assert!(dropped.load(Ordering::SeqCst), "the future was not dropped");

        c.leader();
        let give_up = Instant::now() + Duration::from_secs(30);
        let second = loop {
            match lk.hold("k", |lease| async move { Ok(lease.fence()) }).await {
                Ok(f) => break f,
                Err(e) if matches!(e.kind(), ErrorKind::Io | ErrorKind::Store) => {
                    assert!(Instant::now() < give_up, "no hold after the failover: {e}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Err(e) => panic!("{e}"),
            }
        };
        assert!(
            second > first && second >> 32 > first >> 32,
            "fence {second:#x} after {first:#x}"
        );
    });
}

/// TLS on the async face: `rediss://` with the test's certificate as root.
#[test]
fn holds_over_tls() {
    use tenure_locks::redis::{Client, IntoConnectionInfo, TlsCertificates};
    let (s, cert) = crate::tls::tls_server();
    let url = format!("rediss://worker:s3cret@{}", s.addr);
    let client = Client::build_with_tls(
        url.as_str().into_connection_info().unwrap(),
        TlsCertificates {
            client_tls: None,
            root_cert: Some(cert),
        },
    )
    .unwrap();
    block_on(async {
        let store = Store::new(client).await.unwrap();
        let lk = store.lock("tls").ttl(TTL).open().unwrap();
        let fence = lk
            .hold("k", |lease| async move {
                tokio::time::sleep(Duration::from_millis(1500)).await;
                assert!(!lease.lost(), "lost over TLS");
                Ok(lease.fence())
            })
            .await
            .unwrap();
        assert!(fence > 0);
    });
}

/// 40 async holds on 5 keys, spawned on one runtime: one holder per key at
/// a time (LOCK-01), fences growing per key (LOCK-02); two holders may only
/// overlap if one of them was told Lost.
#[test]
fn many_holders_exclude_each_other() {
    use std::collections::{HashMap, HashSet};
    let s = Server::start();
    block_on(async {
        let store = store(&s).await;
        let lk = store
            .lock("many")
            .ttl(Duration::from_secs(5))
            .open()
            .unwrap();
        let holding: Arc<Mutex<HashMap<String, Vec<u64>>>> = Arc::default();
        let last: Arc<Mutex<HashMap<String, u64>>> = Arc::default();
        let overlaps: Arc<Mutex<Vec<(u64, u64)>>> = Arc::default();
        let mut tasks = Vec::new();
        for i in 0..40 {
            let key = format!("k{}", i % 5);
            let (lk, holding, last, overlaps) =
                (lk.clone(), holding.clone(), last.clone(), overlaps.clone());
            tasks.push(tokio::spawn(async move {
                let fence = Arc::new(AtomicUsize::new(0));
                let f2 = fence.clone();
                let r = lk
                    .hold(&key.clone(), |lease| async move {
                        let fence = lease.fence();
                        f2.store(fence as usize, Ordering::SeqCst);
                        {
                            let mut h = holding.lock().unwrap();
                            let on_key = h.entry(key.clone()).or_default();
                            overlaps
                                .lock()
                                .unwrap()
                                .extend(on_key.iter().map(|&o| (o, fence)));
                            on_key.push(fence);
                            let before =
                                last.lock().unwrap().insert(key.clone(), fence).unwrap_or(0);
                            assert!(fence > before, "{key}: fence {fence:#x} after {before:#x}");
                        }
                        tokio::time::sleep(Duration::from_millis(5)).await;
                        holding
                            .lock()
                            .unwrap()
                            .get_mut(&key)
                            .unwrap()
                            .retain(|&f| f != fence);
                        Ok(())
                    })
                    .await;
                match r {
                    Err(e) if e.kind() == ErrorKind::Lost => {
                        Some(fence.load(Ordering::SeqCst) as u64)
                    }
                    other => {
                        other.unwrap();
                        None
                    }
                }
            }));
        }
        let mut lost = HashSet::new();
        for t in tasks {
            lost.extend(t.await.unwrap());
        }
        for (a, b) in overlaps.lock().unwrap().iter() {
            assert!(
                lost.contains(a) || lost.contains(b),
                "fences {a:#x} and {b:#x} held one key at once, and neither hold said Lost"
            );
        }
    });
}
