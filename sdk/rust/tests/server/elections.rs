//! Elections (SPEC §12): campaign is a hold with the value as owner, leader
//! reads LOCK.INFO, observe follows LOCK.WATCH (LOCK-17) through cut
//! connections and restarts, never yielding an older term (LOCK-02).

use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use tenure_locks::{reason, Cancel, Error, ErrorKind, Leader, Lease, Lock};

use crate::harness::{lock_stats, wait_for, waiters_are, Server};

/// A candidate campaigning on a thread until resigned (or its lease lost).
struct Candidate {
    leading: mpsc::Receiver<Lease>,
    resign: mpsc::Sender<()>,
    done: JoinHandle<Result<(), Error>>,
}

fn campaign(lock: &Lock, key: &'static str, value: &str) -> Candidate {
    let (lead_tx, leading) = mpsc::channel();
    let (resign, resign_rx) = mpsc::channel::<()>();
    let (lock, value) = (lock.clone(), value.to_owned());
    let done = thread::spawn(move || {
        lock.campaign(key, &value, |lease| {
            lead_tx.send(lease.clone()).unwrap();
            // Until resigned, or the leadership is lost (as a leader's work
            // stops on lease.lost()).
            while !lease.lost() {
                match resign_rx.recv_timeout(Duration::from_millis(10)) {
                    Err(RecvTimeoutError::Timeout) => {}
                    _ => break,
                }
            }
            Ok(())
        })
    });
    Candidate {
        leading,
        resign,
        done,
    }
}

impl Candidate {
    fn leads(&self, within: Duration) -> Lease {
        self.leading
            .recv_timeout(within)
            .expect("the candidate leads")
    }

    fn resign(self) -> Result<(), Error> {
        let _ = self.resign.send(());
        self.done.join().unwrap()
    }
}

/// An observer on a thread, handing each leader over a rendezvous channel
/// (it waits for the test to take one before it watches again, as Go's
/// channel does).
struct Observing {
    leaders: mpsc::Receiver<Option<Leader>>,
    cancel: Cancel,
}

fn observing(lock: &Lock, key: &str) -> Observing {
    let cancel = Cancel::new();
    let obs = lock.observe_or_cancel(key, &cancel).unwrap();
    let (tx, leaders) = mpsc::sync_channel(0);
    thread::spawn(move || {
        for ld in obs {
            if tx.send(ld).is_err() {
                return;
            }
        }
    });
    Observing { leaders, cancel }
}

impl Observing {
    fn next(&self, what: &str) -> Option<Leader> {
        self.leaders
            .recv_timeout(Duration::from_secs(15))
            .unwrap_or_else(|e| panic!("waiting for {what}: {e}"))
    }
}

impl Drop for Observing {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

fn leader(owner: &str, fence: u64) -> Option<Leader> {
    Some(Leader {
        owner: owner.to_owned(),
        fence,
    })
}

/// LOCK-17: observe yields none, then A, then B with a larger term when A
/// resigns and B waited in line; leader agrees at each step.
#[test]
fn observe_yields_none_then_a_then_b() {
    let s = Server::start();
    let admin = s.store();
    let lock = s
        .store()
        .lock("sched")
        .ttl(Duration::from_secs(5))
        .open()
        .unwrap();
    assert_eq!(
        lock.leader("main").unwrap(),
        None,
        "a free key has no leader"
    );
    let obs = observing(&lock, "main");
    assert_eq!(
        obs.leaders.recv_timeout(Duration::from_secs(2)).unwrap(),
        None,
        "the leader now comes first, at once"
    );

    let a = campaign(&lock, "main", "node-a:8080");
    let la = a.leads(Duration::from_secs(5));
    assert_eq!(obs.next("A"), leader("node-a:8080", la.fence()));
    let b = campaign(&lock, "main", "node-b:8080");
    waiters_are(&admin, "sched", "main", 1);
    assert_eq!(
        lock.leader("main").unwrap(),
        leader("node-a:8080", la.fence()),
        "A leads while B waits"
    );

    a.resign().unwrap();
    let lb = b.leads(Duration::from_secs(5));
    let ld = obs.next("B");
    assert_eq!(ld, leader("node-b:8080", lb.fence()));
    assert!(
        lb.fence() > la.fence(),
        "B's term {} after A's {}",
        lb.fence(),
        la.fence()
    );
    assert_eq!(lock.leader("main").unwrap(), ld);

    b.resign().unwrap();
    assert_eq!(obs.next("none after B"), None);
}

/// A leader whose lease is revoked (LOCK.REVOKE) learns it as every holder
/// does, and its campaign fails lost; observers see it go.
#[test]
fn revoked_leader_is_stopped_and_lost() {
    let s = Server::start();
    let admin = s.store();
    let lock = s
        .store()
        .lock("sched")
        .ttl(Duration::from_secs(5))
        .open()
        .unwrap();
    let obs = observing(&lock, "main");
    assert_eq!(obs.next("none"), None);
    let a = campaign(&lock, "main", "A");
    let la = a.leads(Duration::from_secs(5));
    assert_eq!(obs.next("A"), leader("A", la.fence()));
    admin.call(&["LOCK.REVOKE", "sched", "main"]).unwrap();
    assert!(
        la.wait_lost(Duration::from_secs(5)),
        "the revoked leader was not told"
    );
    let err = a.done.join().unwrap().unwrap_err();
    assert_eq!(
        (err.kind(), err.reason()),
        (ErrorKind::Lost, Some(reason::REVOKED))
    );
    assert_eq!(obs.next("none after the revoke"), None);
}

/// LOCK-17: an observer whose connection is cut (CLIENT KILL) watches
/// again with its last fence and misses no change.
#[test]
fn observer_outlives_cut_connections() {
    let s = Server::start();
    let admin = s.store();
    let lock = s.store().lock("sched").open().unwrap();
    let obs = observing(&lock, "main");
    assert_eq!(obs.next("none"), None);
    let mut top = 0;
    for round in 0..3 {
        wait_for(Duration::from_secs(5), "the observer watching", || {
            lock_stats(&admin)["watchers"] == 1
        });
        let killed = admin
            .call(&["CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"])
            .unwrap();
        assert!(
            matches!(killed, tenure_locks::Value::Int(n) if n > 0),
            "CLIENT KILL: {killed:?}"
        );
        let value = format!("A{round}");
        let a = campaign(&lock, "main", &value);
        let la = a.leads(Duration::from_secs(5));
        assert_eq!(
            obs.next("A after the cut"),
            leader(&value, la.fence()),
            "round {round}"
        );
        assert!(la.fence() > top);
        top = la.fence();
        a.resign().unwrap();
        assert_eq!(obs.next("none"), None, "round {round}");
    }
}

/// LOCK-17: an observer outlives a restart of the store (SIGKILL, started
/// again on its port and directory): none, then the new leader, in a later
/// epoch.
#[test]
fn observer_outlives_restart() {
    let s = Server::start();
    let lock = s
        .store()
        .lock("sched")
        .ttl(Duration::from_secs(2))
        .open()
        .unwrap();
    let obs = observing(&lock, "main");
    assert_eq!(obs.next("none"), None);
    let a = campaign(&lock, "main", "A");
    let la = a.leads(Duration::from_secs(5));
    assert_eq!(obs.next("A"), leader("A", la.fence()));

    s.restart();
    let err = a.done.join().unwrap().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Lost, "A after the restart: {err}");
    assert_eq!(obs.next("none after the restart"), None);
    let b = campaign(&lock, "main", "B");
    let lb = b.leads(Duration::from_secs(10));
    assert_eq!(obs.next("B"), leader("B", lb.fence()));
    assert!(
        lb.fence() >> 32 > la.fence() >> 32,
        "B's term {} in a later epoch than A's {}",
        lb.fence(),
        la.fence()
    );
    b.resign().unwrap();
}

/// A campaign's value is 1 to 256 bytes; a campaign waits its turn though
/// its lock has wait 0; observe checks its key; a cancelled observer ends.
#[test]
fn campaign_checks_its_value_and_waits_its_turn() {
    let s = Server::start();
    let lock = s.store().lock("sched").wait(Duration::ZERO).open().unwrap();
    for bad in [String::new(), "x".repeat(257)] {
        let err = lock.campaign("main", &bad, |_| Ok(())).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput);
    }
    assert_eq!(
        lock.observe("").unwrap_err().kind(),
        ErrorKind::InvalidInput
    );
    let a = campaign(&lock, "main", "A");
    a.leads(Duration::from_secs(5));
    let b = campaign(&lock, "main", "B");
    assert!(
        b.leading.recv_timeout(Duration::from_millis(300)).is_err(),
        "B led beside A"
    );
    a.resign().unwrap();
    let lb = b.leads(Duration::from_secs(5));
    assert_eq!(lock.leader("main").unwrap(), leader("B", lb.fence()));
    b.resign().unwrap();

    let cancel = Cancel::new();
    let mut obs = lock.observe_or_cancel("main", &cancel).unwrap();
    assert_eq!(obs.next(), Some(None));
    cancel.cancel();
    assert_eq!(obs.next(), None, "a cancelled observer ends");
    assert!(obs.error().is_none());
}

/// LOCK.WATCH is a read (SPEC §3): a user of the read role observes.
#[test]
fn a_reader_observes() {
    let pw = crate::harness::sha256_hex("pw");
    let s = Server::start_with_users(&format!(
        "user ro read sha256:{pw}\nuser w write sha256:{pw}\n"
    ));
    let w = tenure_locks::Store::connect(&format!("redis://w:pw@{}", s.addr)).unwrap();
    let lock = w.lock("sched").open().unwrap();
    let ro = tenure_locks::Store::connect(&format!("redis://ro:pw@{}", s.addr)).unwrap();
    let mut obs = ro.lock("sched").open().unwrap().observe("main").unwrap();
    assert_eq!(obs.next(), Some(None), "a read user may observe");
    let a = campaign(&lock, "main", "A");
    let la = a.leads(Duration::from_secs(5));
    assert_eq!(obs.next(), Some(leader("A", la.fence())));
    a.resign().unwrap();
}

/// LOCK-17 on tokio: observe's next().await yields none, A, then B with a
/// larger term; a revoked leader's future is dropped and its campaign fails
/// lost; dropping the Observer ends its loop.
#[cfg(feature = "tokio")]
async fn next(o: &mut tenure_locks::tokio::Observer) -> Option<Option<Leader>> {
    tokio::time::timeout(Duration::from_secs(15), o.next())
        .await
        .expect("a leader in time")
}

#[cfg(feature = "tokio")]
#[test]
fn on_tokio_observe_campaign_revoke() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    let s = Server::start();
    crate::on_tokio::block_on(async {
        let store = tenure_locks::tokio::Store::connect(&s.url()).await.unwrap();
        let lock = store
            .lock("sched")
            .ttl(Duration::from_secs(5))
            .open()
            .unwrap();
        assert_eq!(lock.leader("main").await.unwrap(), None);
        let mut obs = lock.observe("main").await.unwrap();
        assert_eq!(next(&mut obs).await, Some(None));

        let (a_lock, (a_fence, a_leads)) = (lock.clone(), tokio::sync::oneshot::channel());
        let dropped = Arc::new(AtomicBool::new(false));
        let a_dropped = dropped.clone();
        let a = tokio::spawn(async move {
            a_lock
                .campaign("main", "A", |lease| async move {
                    a_fence.send(lease.fence()).unwrap();
                    struct OnDrop(Arc<AtomicBool>);
                    impl Drop for OnDrop {
                        fn drop(&mut self) {
                            self.0.store(true, Ordering::SeqCst);
                        }
                    }
                    let _d = OnDrop(a_dropped);
                    std::future::pending::<()>().await;
                    Ok(())
                })
                .await
        });
        let a_term = a_leads.await.unwrap();
        let ld = next(&mut obs).await.unwrap().expect("A leads");
        assert_eq!((ld.owner.as_str(), ld.fence), ("A", a_term));
        assert_eq!(lock.leader("main").await.unwrap(), Some(ld.clone()));

        store.call(&["LOCK.REVOKE", "sched", "main"]).await.unwrap();
        let err = a.await.unwrap().unwrap_err();
        assert_eq!(
            (err.kind(), err.reason()),
            (ErrorKind::Lost, Some(reason::REVOKED))
        );
        assert!(
            dropped.load(Ordering::SeqCst),
            "the revoked leader's future was not dropped"
        );
        assert_eq!(next(&mut obs).await, Some(None));

        let fence = lock
            .campaign("main", "B", |lease| async move { Ok(lease.fence()) })
            .await
            .unwrap();
        let b = next(&mut obs).await.unwrap().expect("B led");
        assert_eq!((b.owner.as_str(), b.fence), ("B", fence));
        assert!(b.fence > ld.fence);
        assert_eq!(next(&mut obs).await, Some(None), "B resigned");
        drop(obs);
        let admin = store.sync().clone();
        tokio::task::spawn_blocking(move || {
            wait_for(
                Duration::from_secs(10),
                "the dropped observer's loop to end",
                || lock_stats(&admin)["watchers"] == 0,
            )
        })
        .await
        .unwrap();
    });
}
