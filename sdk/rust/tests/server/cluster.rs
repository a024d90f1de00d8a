//! The SDK on a tenure cluster of three nodes (SPEC §10), through the redis
//! crate's `ClusterClient`: it follows the leader; a hold, a fenced write
//! and renewals go through it; a leader killed mid-hold loses the lease
//! (LOCK-10, LOCK-14) and the next hold, on the new leader, gets a larger
//! fence from a newer epoch.

use std::time::{Duration, Instant};

use tenure_locks::redis::cluster::{ClusterClient, ClusterClientBuilder};
use tenure_locks::{reason, Error, ErrorKind, Store, Value};

use crate::harness::{key_info, wait_for, Reply, ThreeNodes};

const TTL: Duration = Duration::from_secs(1);

/// The cluster client as docs/cluster.md sets it for a failover: retries
/// that span an election (250 ms here), backing off up to 200 ms.
pub fn cluster_client(urls: &[String]) -> ClusterClient {
    ClusterClientBuilder::new(urls.to_vec())
        .retries(20)
        .min_retry_wait(10)
        .max_retry_wait(200)
        .connection_timeout(Duration::from_secs(1))
        .build()
        .unwrap()
}

#[test]
fn hold_release_and_renewals_on_a_cluster() {
    let c = ThreeNodes::start();
    let leader = c.leader();
    // Only a follower given: the client learns the rest from it.
    let follower = &c.urls[(leader + 1) % 3];
    let plain = Store::connect(follower).unwrap();
    // The follower may not have heard from the new leader yet
    // (CLUSTERDOWN); then it redirects.
    let mut said = String::new();
    wait_for(Duration::from_secs(10), "a MOVED from the follower", || {
        said = plain.call(&["SET", "out", "x"]).unwrap_err().to_string();
        !said.contains("CLUSTERDOWN")
    });
    assert!(
        said.contains("MOVED "),
        "a plain Store on a follower: {said}"
    );

    let store = Store::new(cluster_client(std::slice::from_ref(follower))).unwrap();
    let lk = store.lock("jobs").ttl(TTL).open().unwrap();
    let fence = lk
        .hold("k", |lease| {
            let fence = lease.fence().to_string();
            assert_eq!(
                store.call(&["SET", "out", "a", "FENCE", &fence])?,
                Value::Okay
            );
            let first = lease.deadline();
            wait_for(Duration::from_secs(10), "a renewal on the leader", || {
                lease.deadline() > first + Duration::from_millis(200)
            });
            assert!(!lease.lost());
            Ok(lease.fence())
        })
        .unwrap();
    assert_eq!(store.call(&["GET", "out"]).unwrap().as_str(), Some("a"));
    assert!(key_info(&store, "jobs", "k").is_none(), "released");
    let next = lk.try_hold("k", |lease| Ok(lease.fence())).unwrap();
    assert!(next > fence);
}

#[test]
fn a_single_server_is_not_a_cluster() {
    let s = crate::harness::Server::start();
    // It asks for the cluster's slots, which a single server has not.
    let err = Store::new(cluster_client(&[s.url()])).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Io, "{err}");
}

#[test]
fn a_failover_loses_the_lease_and_the_next_fence_is_larger() {
    let c = ThreeNodes::start();
    let leader = c.leader();
    let store = Store::new(cluster_client(&c.urls)).unwrap();
    let lk = store.lock("jobs").ttl(TTL).open().unwrap();
    let mut first = 0;
    let err = lk
        .hold("k", |lease| {
            first = lease.fence();
            c.kill(leader);
            assert!(
                lease.wait_lost(Duration::from_secs(30)),
                "the lease outlived its leader by 30 s"
            );
            Ok(()) // the closure succeeded; the lease did not
        })
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Lost, "{err}");
    // By the holder's own deadline, or -LOST from the new leader.
    assert!(
        matches!(err.reason(), Some(reason::EXPIRED | reason::UNKNOWN_LEASE)),
        "{err}"
    );

    c.leader();
    let give_up = Instant::now() + Duration::from_secs(30);
    let second = loop {
        match lk.hold("k", |lease| Ok::<_, Error>(lease.fence())) {
            Ok(f) => break f,
            // Until the client finds the new leader and its epoch is applied.
            Err(e) if matches!(e.kind(), ErrorKind::Io | ErrorKind::Store) => {
                assert!(Instant::now() < give_up, "no hold after the failover: {e}");
                std::thread::sleep(Duration::from_millis(100));
            }
            Err(e) => panic!("{e}"),
        }
    };
    assert!(
        second > first,
        "fence {second} after the failover, {first} before (LOCK-14)"
    );
    assert!(second >> 32 > first >> 32, "a new epoch");
}
