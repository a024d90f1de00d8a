//! The request-id window (SPEC §8, LOCK-03): the store remembers a request
//! id until at least a ttl after the earliest time a grant to it can have
//! come (the send of the oldest HOLD not answered null or "superseded"); the
//! SDK sends a HOLD with that id only before that time less the holder's
//! margin, and past it asks again with a fresh id.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use tenure_locks::{Cancel, Error, ErrorKind};

use crate::harness::{key_info, lock_stats, Server};
use crate::proxy::Proxy;
use crate::resp::Value;

const TTL: Duration = Duration::from_secs(1);
const WINDOW: Duration = Duration::from_millis(900); // ttl - margin (ttl/10)

/// What the proxy saw of the HOLDs: the lease ids each request id was
/// answered with, and the first request id, whose every answer is lost.
#[derive(Default)]
struct Grants {
    leases: HashMap<String, HashSet<String>>,
    lost: Option<(String, Instant)>,
}

/// Swallows every answer to the first request id's HOLDs (all of them if
/// `all`), noting every grant of every HOLD.
fn lose_first_reqid(p: &Proxy, all: bool) -> Arc<Mutex<Grants>> {
    let g = Arc::new(Mutex::new(Grants::default()));
    let gg = g.clone();
    p.swallow_replies(move |req, reply| {
        if req.first().is_none_or(|c| c != "LOCK.HOLD") || req.len() < 4 {
            return false;
        }
        let mut g = gg.lock().unwrap();
        if let Value::Array(a) = reply {
            if let Some(Value::Bulk(id)) = a.first() {
                let id = String::from_utf8_lossy(id).into_owned();
                g.leases.entry(req[3].clone()).or_default().insert(id);
            }
        }
        let lost = g
            .lost
            .get_or_insert_with(|| (req[3].clone(), Instant::now()));
        all || lost.0 == req[3]
    });
    g
}

/// Fails if any request id was answered with two leases (LOCK-03).
fn one_lease_each(g: &Grants) {
    for (reqid, leases) in &g.leases {
        assert_eq!(
            leases.len(),
            1,
            "LOCK-03: request id {reqid} was granted {} leases: {leases:?}",
            leases.len()
        );
    }
}

/// Checks that every HOLD of each request id reached the store before its
/// first + WINDOW (none was answered null or superseded in these tests);
/// returns the ids in the order of their first use.
fn held_within(p: &Proxy) -> Vec<String> {
    let mut first: HashMap<String, Instant> = HashMap::new();
    let mut order = Vec::new();
    for (req, at) in p.requests_at("LOCK.HOLD") {
        match first.get(&req[3]) {
            None => {
                first.insert(req[3].clone(), at);
                order.push(req[3].clone());
            }
            Some(f) => assert!(
                at.duration_since(*f) < WINDOW,
                "a HOLD with request id {} reached the store {:?} after its first",
                req[3],
                at.duration_since(*f)
            ),
        }
    }
    order
}

/// Every answer to the first request id's HOLDs is lost (granted at once;
/// the chunks after it are answered the same lease), and their connections
/// are cut just past the window (so that the failures come before the SDK
/// has had no answer for a whole ttl, when it would give up). The SDK asks
/// again with that id within its window only, then with a fresh one,
/// granted once the orphan lease has run out: two grants, one per id.
#[test]
fn answers_lost_past_the_window_are_asked_again_with_a_fresh_reqid() {
    let s = Server::start();
    let admin = s.store();
    let p = Proxy::start(&s.addr);
    let store = p.store(Duration::from_secs(2));
    let lk = store.lock("reports").ttl(TTL).open().unwrap();
    let g = lose_first_reqid(&p, false);
    let before = lock_stats(&admin)["grants_total"];

    let ran = thread::scope(|sc| {
        sc.spawn(|| {
            let lost_at = loop {
                if let Some((_, at)) = g.lock().unwrap().lost {
                    break at;
                }
                thread::sleep(Duration::from_millis(1));
            };
            thread::sleep(
                (lost_at + Duration::from_millis(910)).saturating_duration_since(Instant::now()),
            );
            p.cut_all();
        });
        lk.hold("q3", |lease| {
            let info = key_info(&admin, "reports", "q3").expect("the store holds q3");
            assert_eq!(info["fence"] as u64, lease.fence());
            Ok::<_, Error>(Instant::now())
        })
        .unwrap()
    });
    let reqids = held_within(&p);
    let g = g.lock().unwrap();
    let (lost, lost_at) = g.lost.clone().expect("a lost request id");
    assert_eq!(
        reqids.len(),
        2,
        "request ids {reqids:?}: the lost one, then a fresh one"
    );
    assert_eq!(reqids[0], lost);
    one_lease_each(&g);
    assert_eq!(
        lock_stats(&admin)["grants_total"] - before,
        2,
        "the orphan's grant and the closure's"
    );
    assert!(
        ran.duration_since(lost_at) >= TTL - Duration::from_millis(50),
        "the closure ran {:?} after the lost grant, before the orphan lease ran out",
        ran.duration_since(lost_at)
    );
}

/// A hold cancelled after its request id's window, its grant's answers
/// lost, sends no probe with that id: the store may have forgotten it and
/// would grant the probe a second lease. The orphan runs out unrenewed.
#[test]
fn cancelled_past_the_window_sends_no_probe() {
    let s = Server::start();
    let admin = s.store();
    let p = Proxy::start(&s.addr);
    let store = p.store(Duration::from_secs(2));
    let lk = store.lock("reports").ttl(TTL).open().unwrap();
    let g = lose_first_reqid(&p, true);
    let before = lock_stats(&admin)["grants_total"];

    let cancel = Cancel::new();
    let err = thread::scope(|sc| {
        sc.spawn(|| {
            thread::sleep(Duration::from_millis(1200));
            cancel.cancel();
        });
        lk.hold_or_cancel("q3", &cancel, |_| -> Result<(), Error> {
            panic!("the closure ran on a grant whose every answer was lost")
        })
        .unwrap_err()
    });
    assert_eq!(err.kind(), ErrorKind::NotHeld, "{err}");
    assert_eq!(held_within(&p).len(), 1);
    one_lease_each(&g.lock().unwrap());
    assert_eq!(lock_stats(&admin)["grants_total"] - before, 1);
    let give_up = Instant::now() + Duration::from_secs(3);
    while key_info(&admin, "reports", "q3").is_some_and(|i| i["fence"] != 0) {
        assert!(Instant::now() < give_up, "the orphan lease did not run out");
        thread::sleep(Duration::from_millis(10));
    }
}
