//! Holding, renewing, letting go and waiting in line (SPEC §8).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use tenure_locks::{Error, ErrorKind, Lock};

use crate::harness::{hold_in_background, key_info, lock_stats, read_timeout, waiters_are, Server};
use crate::proxy::Proxy;
use crate::resp::Value;

/// "At once": well under the 1 s ttl that a key not let go would take to
/// come back.
const HANDOFF: Duration = Duration::from_millis(400);

const TTL: Duration = Duration::from_secs(1);

/// Renewals keep a 1 s ttl lease through a 4 s closure.
#[test]
fn renewals_keep_a_lease_through_a_closure_of_several_ttls() {
    let s = Server::start();
    let store = s.store();
    let lk = store.lock("reports").ttl(TTL).open().unwrap();
    let before = lock_stats(&store)["renewals_total"];
    let (first, last) = lk
        .hold("long", |lease| {
            let first = lease.deadline();
            let lost = lease.wait_lost(Duration::from_secs(4));
            assert!(
                !lost && !lease.lost(),
                "lost after {:?}: {:?}",
                first.elapsed(),
                lease.loss()
            );
            let info = key_info(&store, "reports", "long").expect("the store holds the key");
            assert_eq!(info["fence"] as u64, lease.fence());
            Ok::<_, Error>((first, lease.deadline()))
        })
        .unwrap();
    let renewals = lock_stats(&store)["renewals_total"] - before;
    assert!(
        renewals >= 8,
        "{renewals} renewals in 4 s of a 1 s ttl, want about 12"
    );
    assert!(
        last > first + Duration::from_secs(3),
        "the deadline moved {:?}",
        last - first
    );
    assert!(
        key_info(&store, "reports", "long").is_none(),
        "the key was not let go"
    );
}

/// The closure returns Ok, returns an error, or panics: each time the lease
/// is released and the next waiter gets the key at once.
#[test]
fn lets_go_on_return_error_and_panic() {
    for end in ["ok", "error", "panic"] {
        let s = Server::start();
        let store = s.store();
        let lk = store.lock("handoff").ttl(TTL).open().unwrap();
        let (go, wait) = mpsc::channel::<()>();
        let ended_at = Arc::new(Mutex::new(None));
        let ended = ended_at.clone();
        let first = hold_in_background(&lk, "k", move || {
            wait.recv().unwrap();
            *ended.lock().unwrap() = Some(Instant::now());
            match end {
                "ok" => Ok(1),
                "error" => Err(Error::new(ErrorKind::Other, "boom")),
                // A panic that skips the panic hook, whose printing (a
                // backtrace, with RUST_BACKTRACE set) would count as the
                // SDK's time to hand the key over.
                _ => std::panic::resume_unwind(Box::new("boom")),
            }
        });
        let next = {
            let lk = lk.clone();
            thread::spawn(move || lk.hold("k", |_| Ok::<_, Error>(Instant::now())))
        };
        waiters_are(&store, "handoff", "k", 1);
        go.send(()).unwrap();
        let r = first.join();
        let got = next
            .join()
            .unwrap()
            .unwrap_or_else(|e| panic!("{end}: next waiter: {e}"));
        let handoff = got - ended_at.lock().unwrap().unwrap();
        assert!(
            handoff < HANDOFF,
            "{end}: the next waiter got the key {handoff:?} after the closure ended"
        );
        match end {
            "ok" => assert_eq!(r.unwrap().unwrap(), 1),
            "error" => {
                let e = r.unwrap().unwrap_err();
                assert_eq!(e.kind(), ErrorKind::Other, "{end}: {e}");
                assert!(e.to_string().contains("boom"), "{e}");
            }
            _ => {
                let payload = r.expect_err("the panic went on");
                assert_eq!(payload.downcast_ref::<&str>(), Some(&"boom"));
            }
        }
        assert_eq!(lock_stats(&store)["released_total"], 2, "{end}");
    }
}

/// LOCK-08 across the SDK's wait chunks: 12 holds join the line for one
/// key, one after the other, on a store whose 200 ms read timeout makes
/// them wait in 100 ms chunks, the next one sent 25 ms into each. Each
/// holds the key for a pseudo-random while (up to 300 ms, the seed is
/// printed) when its turn comes, so that the releases fall at any moment of
/// the others' chunks. They are granted in the order they joined. (A chunk
/// that reaches the store after the previous one's WAIT ran out leaves the
/// place lingering, and a release then serves a later waiter first.)
#[test]
fn waiters_are_served_in_the_order_they_joined() {
    const N: usize = 12;
    let s = Server::start();
    let admin = s.store();
    let store =
        tenure_locks::Store::connect_with(&s.url(), read_timeout(Duration::from_millis(200)))
            .unwrap();
    let lk = store.lock("fifo").ttl(TTL).open().unwrap();
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    println!("seed {seed}");
    let mut rng = seed | 1;
    let mut next_ms = move |below: u64| {
        // xorshift64: enough to scatter the releases
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng % below
    };
    let (go, wait) = mpsc::channel::<()>();
    let holder = hold_in_background(&lk, "k", move || {
        wait.recv().unwrap();
        Ok(())
    });

    let order = Arc::new(Mutex::new(Vec::new()));
    let mut waiters = Vec::new();
    for i in 0..N {
        let (lk, order) = (lk.clone(), order.clone());
        let hold_for = Duration::from_millis(next_ms(300));
        waiters.push(thread::spawn(move || {
            lk.hold("k", |_| {
                order.lock().unwrap().push(i);
                thread::sleep(hold_for); // the work; the release falls wherever it ends
                Ok::<_, Error>(())
            })
        }));
        waiters_are(&admin, "fifo", "k", i as i64 + 1);
    }
    thread::sleep(Duration::from_millis(next_ms(500))); // chunks go by in line
    go.send(()).unwrap();
    holder.join().unwrap().unwrap();
    for w in waiters {
        w.join().unwrap().unwrap();
    }
    assert_eq!(
        *order.lock().unwrap(),
        (0..N).collect::<Vec<_>>(),
        "grants out of join order (seed {seed})"
    );
}

/// Waiting in line is a chain of HOLDs with one reqid, WAIT 300 for a
/// 600 ms read timeout, each sent once a quarter of the previous one's WAIT
/// has passed (225 ms before it runs out: room for a busy machine):
/// the store answers the older ones "superseded", never "not granted".
/// A wait longer than the ttl ends in a grant renewed before the closure
/// starts, so that the closure gets a whole lease.
#[test]
fn waiting_chunks_overlap_and_keep_one_reqid() {
    let s = Server::start();
    let admin = s.store();
    let p = Proxy::start(&s.addr);
    let store = p.store(Duration::from_millis(600));
    let lk = store.lock("chunks").ttl(TTL).open().unwrap();
    let (superseded, nulls) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let (sup, nul) = (superseded.clone(), nulls.clone());
    p.swallow_replies(move |req, reply| {
        if req.first().is_some_and(|c| c == "LOCK.HOLD") {
            match reply {
                Value::Error(e) if e.starts_with("ERR superseded") => {
                    sup.fetch_add(1, Ordering::SeqCst)
                }
                Value::Nil => nul.fetch_add(1, Ordering::SeqCst),
                _ => 0,
            };
        }
        false
    });
    let (go, wait) = mpsc::channel::<()>();
    let holder = hold_in_background(
        &admin.lock("chunks").ttl(TTL).open().unwrap(),
        "k",
        move || {
            wait.recv().unwrap();
            Ok(())
        },
    );
    let waiter = thread::spawn(move || {
        lk.hold("k", |lease| {
            Ok::<_, Error>(lease.deadline().saturating_duration_since(Instant::now()))
        })
    });
    waiters_are(&admin, "chunks", "k", 1);
    thread::sleep(Duration::from_millis(2000)); // longer than the ttl, many chunks
    go.send(()).unwrap();
    holder.join().unwrap().unwrap();
    let left = waiter.join().unwrap().unwrap();
    assert!(
        left > Duration::from_millis(600),
        "the closure started {left:?} from its deadline"
    );

    let holds = p.requests("LOCK.HOLD");
    // About 27; one each half chunk would be 14 at most.
    assert!(
        holds.len() >= 18,
        "{} HOLDs in 2 s of 300 ms chunks, sent every 75 ms",
        holds.len()
    );
    for h in &holds {
        assert_eq!(
            (&h[3], h[7].parse::<u64>().unwrap() <= 300),
            (&holds[0][3], true),
            "HOLD {h:?}"
        );
    }
    let (superseded, nulls) = (
        superseded.load(Ordering::SeqCst),
        nulls.load(Ordering::SeqCst),
    );
    assert_eq!(
        nulls, 0,
        "{nulls} chunks ran out before the next came: the place lapsed"
    );
    assert!(
        superseded + 2 >= holds.len(),
        "{superseded} superseded of {} HOLDs",
        holds.len()
    );
}

/// A hold cancelled while it waits in line returns NotHeld at once without
/// running its closure, and leaves no place behind: the waiter after it gets
/// the key as soon as the holder lets go.
#[test]
fn cancel_while_waiting_leaves_no_place_behind() {
    let s = Server::start();
    let admin = s.store();
    let lk = s.store().lock("handoff").ttl(TTL).open().unwrap();
    let (go, wait) = mpsc::channel::<()>();
    let ended_at = Arc::new(Mutex::new(None));
    let ended = ended_at.clone();
    let holder = hold_in_background(&lk, "k", move || {
        wait.recv().unwrap();
        *ended.lock().unwrap() = Some(Instant::now());
        Ok(())
    });
    let cancel = tenure_locks::Cancel::new();
    let ran = Arc::new(AtomicBool::new(false));
    let cancelled = {
        let (lk, cancel, ran) = (lk.clone(), cancel.clone(), ran.clone());
        thread::spawn(move || {
            lk.hold_or_cancel("k", &cancel, |_| {
                ran.store(true, Ordering::SeqCst);
                Ok::<_, Error>(())
            })
        })
    };
    waiters_are(&admin, "handoff", "k", 1);
    let next = {
        let lk = lk.clone();
        thread::spawn(move || lk.hold("k", |_| Ok::<_, Error>(Instant::now())))
    };
    waiters_are(&admin, "handoff", "k", 2);

    let at = Instant::now();
    cancel.cancel();
    let err = cancelled.join().unwrap().unwrap_err();
    let took = at.elapsed();
    assert_eq!(err.kind(), ErrorKind::NotHeld, "{err}");
    assert!(
        took < HANDOFF,
        "the cancelled hold returned {took:?} after the cancel"
    );
    assert!(
        !ran.load(Ordering::SeqCst),
        "the cancelled hold ran its closure"
    );

    go.send(()).unwrap();
    holder.join().unwrap().unwrap();
    let got = next.join().unwrap().unwrap();
    let handoff = got - ended_at.lock().unwrap().unwrap();
    assert!(
        handoff < HANDOFF,
        "the waiter behind the cancelled one got the key {handoff:?} after the holder let go"
    );
    let err = lk
        .hold_or_cancel("k", &cancel, |_| Ok::<_, Error>(()))
        .unwrap_err();
    assert_eq!(
        err.kind(),
        ErrorKind::NotHeld,
        "a hold with a cancelled Cancel: {err}"
    );
}

/// The store grants the key to a waiting hold whose answer is swallowed,
/// and the hold is cancelled: its WAIT 0 with the same reqid finds the grant
/// (LOCK-03) and lets it go, so the next waiter gets the key at once rather
/// than after the ttl.
#[test]
fn cancel_lets_a_racing_grant_go() {
    let s = Server::start();
    let admin = s.store();
    let direct = s.store().lock("handoff").ttl(TTL).open().unwrap();
    let p = Proxy::start(&s.addr);
    // 2 s chunks, the next sent after 1 s: none goes out in the moment
    // between the swallowed grant and the cancel.
    let via_proxy = p.store(Duration::from_secs(4));
    let via_proxy = via_proxy.lock("handoff").ttl(TTL).open().unwrap();
    let (go, wait) = mpsc::channel::<()>();
    let holder = hold_in_background(&direct, "k", move || {
        wait.recv().unwrap();
        Ok(())
    });
    let once = AtomicBool::new(false);
    p.swallow_replies(move |req, reply| {
        req.first().is_some_and(|c| c == "LOCK.HOLD")
            && matches!(reply, Value::Array(_))
            && !once.swap(true, Ordering::SeqCst)
    });
    let cancel = tenure_locks::Cancel::new();
    let ran = Arc::new(AtomicBool::new(false));
    let cancelled = {
        let (cancel, ran) = (cancel.clone(), ran.clone());
        thread::spawn(move || {
            via_proxy.hold_or_cancel("k", &cancel, |_| {
                ran.store(true, Ordering::SeqCst);
                Ok::<_, Error>(())
            })
        })
    };
    waiters_are(&admin, "handoff", "k", 1);
    let next = {
        let direct = direct.clone();
        thread::spawn(move || {
            direct.hold("k", |lease| Ok::<_, Error>((Instant::now(), lease.fence())))
        })
    };
    waiters_are(&admin, "handoff", "k", 2);
    let before = lock_stats(&admin)["grants_total"];

    go.send(()).unwrap(); // the store grants the key to the waiter via the proxy; its answer is swallowed
    holder.join().unwrap().unwrap();
    p.swallowed(Duration::from_secs(5))
        .expect("the grant was swallowed");
    let granted = Instant::now();
    let raced_fence = key_info(&admin, "handoff", "k").unwrap()["fence"] as u64;
    cancel.cancel();

    let (got, fence) = next.join().unwrap().unwrap();
    let err = cancelled.join().unwrap().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotHeld, "{err}");
    assert!(
        !ran.load(Ordering::SeqCst),
        "the cancelled hold ran its closure"
    );
    let handoff = got - granted;
    assert!(
        handoff < HANDOFF,
        "the next waiter got the key {handoff:?} after the raced grant"
    );
    assert_eq!(
        fence,
        raced_fence + 1,
        "the next grant after the raced one's fence {raced_fence:#x}"
    );
    let grants = lock_stats(&admin)["grants_total"] - before;
    assert_eq!(
        grants, 2,
        "the raced grant, found again by its reqid, and the next waiter's"
    );
}

/// try_hold on a held key is NotHeld at once; a wait of 300 ms is NotHeld
/// once it has elapsed. The closure runs in neither.
#[test]
fn not_held_for_try_hold_and_an_elapsed_wait() {
    let s = Server::start();
    let store = s.store();
    let lk = store.lock("busy").ttl(TTL).open().unwrap();
    let (go, wait) = mpsc::channel::<()>();
    let holder = hold_in_background(&lk, "k", move || {
        wait.recv().unwrap();
        Ok(())
    });
    let ran = AtomicBool::new(false);
    let never = |_: &tenure_locks::Lease| {
        ran.store(true, Ordering::SeqCst);
        Ok::<_, Error>(())
    };

    let start = Instant::now();
    let err = lk.try_hold("k", never).unwrap_err();
    let took = start.elapsed();
    assert_eq!(err.kind(), ErrorKind::NotHeld, "{err}");
    assert!(took < Duration::from_millis(200), "try_hold took {took:?}");

    let wait = Duration::from_millis(300);
    let bounded = store.lock("busy").ttl(TTL).wait(wait).open().unwrap();
    let start = Instant::now();
    let err = bounded.hold("k", never).unwrap_err();
    let took = start.elapsed();
    assert_eq!(err.kind(), ErrorKind::NotHeld, "{err}");
    assert!(
        took >= wait && took < wait + Duration::from_secs(1),
        "wait(300ms) ended after {took:?}"
    );
    assert!(
        !ran.load(Ordering::SeqCst),
        "the closure ran on a key held by another"
    );

    go.send(()).unwrap();
    holder.join().unwrap().unwrap();
    let fence = lk
        .try_hold("k", |lease| Ok::<_, Error>(lease.fence()))
        .unwrap();
    assert!(fence > 0, "try_hold on a free key: fence {fence}");
}

/// The ranges of SPEC §3, checked by open() without a word to the store.
#[test]
fn open_checks_the_ranges() {
    let s = Server::start();
    let store = s.store();
    let secs = Duration::from_secs;
    let ms = Duration::from_millis;
    type Open<'a> = Box<dyn Fn() -> Result<Lock, Error> + 'a>;
    let cases: Vec<(&str, Open, bool)> = vec![
        ("defaults", Box::new(|| store.lock("l").open()), true),
        (
            "ttl 1s",
            Box::new(|| store.lock("l").ttl(secs(1)).open()),
            true,
        ),
        (
            "ttl 1h",
            Box::new(|| store.lock("l").ttl(secs(3600)).open()),
            true,
        ),
        (
            "ttl under 1s",
            Box::new(|| store.lock("l").ttl(ms(999)).open()),
            false,
        ),
        (
            "ttl over 1h",
            Box::new(|| store.lock("l").ttl(secs(3600) + ms(1)).open()),
            false,
        ),
        (
            "max_hold 1s",
            Box::new(|| store.lock("l").ttl(secs(1)).max_hold(secs(1)).open()),
            true,
        ),
        (
            "max_hold 24h",
            Box::new(|| store.lock("l").max_hold(secs(86400)).open()),
            true,
        ),
        (
            "max_hold under 1s",
            Box::new(|| store.lock("l").max_hold(ms(999)).open()),
            false,
        ),
        (
            "max_hold over 24h",
            Box::new(|| store.lock("l").max_hold(secs(86400) + ms(1)).open()),
            false,
        ),
        (
            "max_hold under the margin",
            Box::new(|| store.lock("l").ttl(secs(3600)).max_hold(secs(1)).open()),
            false,
        ),
        (
            "wait 0",
            Box::new(|| store.lock("l").wait(Duration::ZERO).open()),
            true,
        ),
        (
            "margin half the ttl",
            Box::new(|| store.lock("l").ttl(secs(1)).margin(ms(500)).open()),
            false,
        ),
        ("empty name", Box::new(|| store.lock("").open()), false),
        (
            "name of 257 bytes",
            Box::new(|| store.lock(&"n".repeat(257)).open()),
            false,
        ),
    ];
    for (name, open, ok) in cases {
        match open() {
            Ok(_) => assert!(ok, "{name}: opened"),
            Err(e) => {
                assert!(!ok, "{name}: {e}");
                assert_eq!(e.kind(), ErrorKind::InvalidInput, "{name}: {e}");
            }
        }
    }
    let lk = store.lock("l").open().unwrap();
    let err = lk
        .hold(&"k".repeat(1025), |_| Ok::<_, Error>(()))
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
}

/// 40 concurrent holds on 5 keys, sharing one store's pool: one holder per
/// key at a time (LOCK-01), fences growing per key (LOCK-02), fenced writes
/// accepted (LOCK-12). Should a lease be lost all the same on a busy
/// machine, the overlap it allows must be reported: two holders may only
/// overlap if one of their holds failed Lost.
#[test]
fn many_holders_exclude_each_other() {
    let s = Server::start();
    let store = s.store();
    let lk = store
        .lock("many")
        .ttl(Duration::from_secs(5))
        .open()
        .unwrap();
    let holding: Mutex<std::collections::HashMap<String, Vec<u64>>> = Mutex::default();
    let last_fence: Mutex<std::collections::HashMap<String, u64>> = Mutex::default();
    let overlaps = Mutex::new(Vec::new());
    let lost = Mutex::new(std::collections::HashSet::new());
    thread::scope(|sc| {
        for i in 0..40 {
            let key = format!("k{}", i % 5);
            let (lk, store, holding, last_fence, overlaps, lost) =
                (&lk, &store, &holding, &last_fence, &overlaps, &lost);
            sc.spawn(move || {
                let mut fence = 0;
                let r = lk.hold(&key, |lease| {
                    fence = lease.fence();
                    {
                        let mut h = holding.lock().unwrap();
                        let on_key = h.entry(key.clone()).or_default();
                        overlaps
                            .lock()
                            .unwrap()
                            .extend(on_key.iter().map(|&o| (o, fence)));
                        on_key.push(fence);
                        let mut last = last_fence.lock().unwrap();
                        let before = last.insert(key.clone(), fence).unwrap_or(0);
                        assert!(fence > before, "{key}: fence {fence:#x} after {before:#x}");
                    }
                    let written = store.call(&[
                        "SET",
                        &format!("data:{key}"),
                        &i.to_string(),
                        "FENCE",
                        &fence.to_string(),
                    ]);
                    holding
                        .lock()
                        .unwrap()
                        .get_mut(&key)
                        .unwrap()
                        .retain(|&f| f != fence);
                    written.map(drop)
                });
                match r {
                    Err(e) if e.kind() == ErrorKind::Lost => {
                        lost.lock().unwrap().insert(fence);
                    }
                    other => other.unwrap_or_else(|e| panic!("hold {key}: {e}")),
                }
            });
        }
    });
    let lost = lost.into_inner().unwrap();
    for (a, b) in overlaps.into_inner().unwrap() {
        assert!(
            lost.contains(&a) || lost.contains(&b),
            "fences {a:#x} and {b:#x} held one key at once, and neither hold said Lost"
        );
    }
}
