//! The SDK's own client against the server: AUTH, errors, timeouts and
//! reconnecting after a cut.

use std::time::{Duration, Instant};

use tenure_locks::{ErrorKind, Options, Store, Value};

use crate::harness::{sha256_hex, Reply, Server};
use crate::proxy::Proxy;

#[test]
fn call_sends_any_command() {
    let s = Server::start();
    let store = s.store();
    assert_eq!(store.call(&["SET", "k", "v"]).unwrap(), Value::Okay);
    assert_eq!(store.call(&["GET", "k"]).unwrap().as_str(), Some("v"));
    assert_eq!(store.call(&["GET", "nothing"]).unwrap(), Value::Nil);
    assert_eq!(store.call(&["INCR", "n"]).unwrap(), Value::Int(1));
    let binary: &[&[u8]] = &[b"SET", b"bin", b"a\r\n\x00b"];
    store.call(binary).unwrap();
    assert_eq!(
        store.call(&["GET", "bin"]).unwrap(),
        Value::BulkString(b"a\r\n\x00b".to_vec())
    );
    let err = store.call(&["NOSUCH"]).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Store, "{err}");
    assert!(err.to_string().contains("unknown command"), "{err}");
    // The error reply left the connection usable.
    assert_eq!(
        store.call(&["PING"]).unwrap(),
        Value::SimpleString("PONG".into())
    );
}

#[test]
fn authenticates_with_user_and_password() {
    let users = format!("user worker write sha256:{}\n", sha256_hex("s3cret"));
    let s = Server::start_with_users(&users);
    let store = Store::connect(&format!("redis://worker:s3cret@{}", s.addr)).unwrap();
    store.call(&["SET", "k", "v"]).unwrap();

    let err = Store::connect(&format!("redis://worker:wrong@{}", s.addr)).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Denied, "{err}");
    // The redis crate says "authentication failed" for the store's WRONGPASS.
    assert!(
        err.to_string()
            .to_lowercase()
            .contains("authentication failed"),
        "{err}"
    );
    assert!(
        !err.to_string().contains("wrong@"),
        "the password is in the error: {err}"
    );

    // PING needs no password (SPEC §5), so connect works; GET does not.
    let err = Store::connect(&s.url())
        .unwrap()
        .call(&["GET", "k"])
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Denied, "{err}");
    assert!(err.to_string().contains("NOAUTH"), "{err}");
}

#[test]
fn connect_fails_when_nothing_listens() {
    let free = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let err = Store::connect(&format!("redis://{free}")).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Io, "{err}");
    let err = Store::connect_with(
        "redis://127.0.0.1:1",
        Options::default().read_timeout(Duration::ZERO),
    )
    .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
}

/// A connection cut under the pool is noticed before reuse, and the next
/// command dials a new one; a reply that never comes is a read timeout,
/// after which the pool works again.
#[test]
fn reconnects_after_cuts_and_timeouts() {
    let s = Server::start();
    let p = Proxy::start(&s.addr);
    let store = p.store(Duration::from_millis(300));
    for i in 0..5 {
        assert!(p.cut_all() > 0, "round {i}: no connection to cut");
        assert_eq!(
            store.call(&["PING"]).unwrap(),
            Value::SimpleString("PONG".into()),
            "round {i}"
        );
    }

    p.swallow_replies(|req, _| req.first().is_some_and(|c| c == "GET"));
    let start = Instant::now();
    let err = store.call(&["GET", "k"]).unwrap_err();
    let took = start.elapsed();
    assert_eq!(err.kind(), ErrorKind::Io, "{err}");
    assert!(
        took >= Duration::from_millis(300) && took < Duration::from_secs(2),
        "read timed out after {took:?}"
    );
    assert_eq!(
        store.call(&["PING"]).unwrap(),
        Value::SimpleString("PONG".into())
    );
}

/// Any `redis::ConnectionLike` the user dials: a closure over a
/// `redis::Client` whose connections it sets up itself.
#[test]
fn a_closure_dials_the_connections() {
    let s = Server::start();
    let client = tenure_locks::redis::Client::open(s.url()).unwrap();
    let store = Store::new(move || {
        let c = client.get_connection()?;
        c.set_read_timeout(Some(Duration::from_secs(5)))?;
        Ok(c)
    })
    .unwrap();
    let lk = store.lock("dialed").open().unwrap();
    let fence = lk.hold("k", |lease| Ok(lease.fence())).unwrap();
    assert!(fence > 0);
    assert_eq!(
        store.call(&["PING"]).unwrap(),
        Value::SimpleString("PONG".into())
    );
}
