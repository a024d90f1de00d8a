//! A lost lease turns `lost()` true and fails the hold with the store's
//! reason, even when the closure succeeded (SPEC §4, §8).

use std::thread;
use std::time::{Duration, Instant};

use tenure_locks::{reason, Error, ErrorKind, Value};

use crate::harness::{key_info, wait_for, Server};
use crate::proxy::Proxy;

const TTL: Duration = Duration::from_secs(1);

/// An admin's LOCK.REVOKE reaches the holder at its next renewal (ttl/3).
/// The closure fails too: hold reports the loss, the closure's error beside.
#[test]
fn revoked_by_admin() {
    let s = Server::start();
    let admin = s.store();
    let lk = s.store().lock("reports").ttl(TTL).open().unwrap();
    let mut noticed = None;
    let err = lk
        .hold("k", |lease| {
            let revoked = Instant::now();
            assert_eq!(
                admin.call(&["LOCK.REVOKE", "reports", "k"]).unwrap(),
                Value::Int(1)
            );
            assert!(
                lease.wait_lost(Duration::from_secs(5)),
                "the revoke never reached the holder"
            );
            noticed = Some(revoked.elapsed());
            let loss = lease.loss().unwrap();
            assert_eq!(
                (loss.reason(), loss.from_store()),
                (Some(reason::REVOKED), true),
                "{loss}"
            );
            Err::<(), _>(Error::other("the closure failed"))
        })
        .unwrap_err();
    assert_eq!(
        (err.kind(), err.reason()),
        (ErrorKind::Lost, Some(reason::REVOKED)),
        "{err}"
    );
    let closure = err.closure_error().expect("the closure's error is kept");
    assert_eq!(closure.to_string(), "the closure failed");
    let noticed = noticed.unwrap();
    // By the next renewal, at ttl/3; "expired" would have come later.
    assert!(noticed < TTL, "the revoke was noticed after {noticed:?}");
}

/// The store restarts mid-hold: the next renewal learns `unknown lease`
/// (LOCK-10); the next holder's fence comes from a later epoch (LOCK-02).
#[test]
fn restart_loses_the_lease() {
    let s = Server::start();
    let store = s.store();
    let lk = store.lock("reports").ttl(TTL).open().unwrap();
    let mut first = 0;
    let err = lk
        .hold("k", |lease| {
            first = lease.fence();
            s.restart();
            assert!(
                lease.wait_lost(Duration::from_secs(5)),
                "the lease outlived the restart by 5 s"
            );
            Ok::<_, Error>(()) // the closure succeeded; the lease did not
        })
        .unwrap_err();
    assert_eq!(
        (err.kind(), err.reason()),
        (ErrorKind::Lost, Some(reason::UNKNOWN_LEASE)),
        "{err}"
    );
    assert!(err.from_store(), "{err}");

    wait_for(Duration::from_secs(5), "the restarted server", || {
        store.call(&["PING"]).is_ok()
    });
    let second = lk.hold("k", |lease| Ok::<_, Error>(lease.fence())).unwrap();
    assert!(
        second > first && second >> 32 > first >> 32,
        "fence {second:#x} after the restart, {first:#x} before"
    );
}

/// MaxHold: lost at MaxHold − margin after the grant, renewals
/// notwithstanding (LOCK-07), reported `revoked maxhold`. The reason stands
/// however long the closure overruns the cap: by the time it returns the
/// store may have forgotten the lease, and its `unknown lease` is not news.
#[test]
fn max_hold_ends_the_lease() {
    let s = Server::start();
    let lk = s
        .store()
        .lock("reports")
        .ttl(TTL)
        .max_hold(Duration::from_millis(1500))
        .open()
        .unwrap();
    let margin = Duration::from_millis(100); // min(ttl/10, 2 s)
    let cap = Duration::from_millis(1500) - margin;
    thread::scope(|sc| {
        for (key, overrun) in [
            ("a", Duration::from_millis(200)),
            ("b", Duration::from_millis(2500)),
        ] {
            let lk = &lk;
            sc.spawn(move || {
                let err = lk
                    .hold(key, |lease| {
                        let start = Instant::now();
                        assert!(
                            lease.wait_lost(Duration::from_secs(5)),
                            "{key}: outlived MaxHold"
                        );
                        let at = start.elapsed();
                        assert!(
                            at >= cap - Duration::from_millis(50),
                            "{key}: lost after {at:?}, before the cap {cap:?}"
                        );
                        assert!(
                            at < cap + Duration::from_millis(400),
                            "{key}: lost {at:?} after the grant, cap {cap:?}"
                        );
                        assert_eq!(lease.loss().unwrap().reason(), Some(reason::MAX_HOLD));
                        thread::sleep(overrun); // a closure that does not stop at once
                        Ok::<_, Error>(())
                    })
                    .unwrap_err();
                assert_eq!(
                    (err.kind(), err.reason()),
                    (ErrorKind::Lost, Some(reason::MAX_HOLD)),
                    "{key}: {err}"
                );
            });
        }
    });
}

/// A holder whose store goes silent gives the lease up at its own deadline,
/// while the store still holds it; the closure overruns the deadline by
/// 2.5 s, after which the store has forgotten the ended lease (it
/// remembers one for a ttl), and the final RELEASE's `unknown lease` does
/// not replace the reason the holder knows: `expired`.
#[test]
fn holder_gives_up_before_the_store_and_its_reason_stands() {
    let s = Server::start();
    let admin = s.store();
    let p = Proxy::start(&s.addr);
    let store = p.store(Duration::from_millis(200));
    let lk = store.lock("reports").ttl(TTL).open().unwrap();
    let mut store_ttl = 0;
    let err = lk
        .hold("k", |lease| {
            p.swallow_replies(|_, _| true); // the store goes silent
            assert!(lease.wait_lost(Duration::from_secs(5)));
            store_ttl = key_info(&admin, "reports", "k").map_or(-1, |i| i["ttl"]);
            let loss = lease.loss().unwrap();
            assert_eq!(
                (loss.reason(), loss.from_store()),
                (Some(reason::EXPIRED), false),
                "{loss}"
            );
            assert!(
                loss.to_string().contains("last renewal"),
                "the renewals' failure is not said: {loss}"
            );
            thread::sleep(Duration::from_millis(2500));
            p.swallow_replies(|_, _| false);
            Ok::<_, Error>(())
        })
        .unwrap_err();
    assert!(
        store_ttl > 0,
        "when the holder gave up, the store had {store_ttl} ms left: want a live lease"
    );
    assert_eq!(
        (err.kind(), err.reason(), err.from_store()),
        (ErrorKind::Lost, Some(reason::EXPIRED), false),
        "{err}"
    );

    // The final RELEASE did reach the store, which had forgotten the lease.
    let releases = p.requests("LOCK.RELEASE");
    let last = releases.last().expect("a RELEASE was sent");
    let said = admin.call(&["LOCK.RELEASE", &last[1]]).unwrap_err();
    assert_eq!(
        said.reason(),
        Some(reason::UNKNOWN_LEASE),
        "the store remembers the lease still: {said}"
    );
}
