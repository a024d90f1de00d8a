//! TLS: the store served with `--tls-cert` and `--tls-key`, a certificate
//! made here for 127.0.0.1, reached through `rediss://` with the redis
//! crate's TLS (the system's OpenSSL, through native-tls).

use std::path::Path;
use std::time::Duration;

use openssl::asn1::Asn1Time;
use openssl::bn::{BigNum, MsbOption};
use openssl::hash::MessageDigest;
use openssl::pkey::PKey;
use openssl::rsa::Rsa;
use openssl::x509::extension::SubjectAlternativeName;
use openssl::x509::{X509NameBuilder, X509};
use tenure_locks::redis::{Client, IntoConnectionInfo, TlsCertificates};
use tenure_locks::{ErrorKind, Store};

use crate::harness::{sha256_hex, Reply, Server};

/// A self-signed certificate for 127.0.0.1 and its key, as PEM.
pub fn self_signed() -> (Vec<u8>, Vec<u8>) {
    let key = PKey::from_rsa(Rsa::generate(2048).unwrap()).unwrap();
    let mut name = X509NameBuilder::new().unwrap();
    name.append_entry_by_text("CN", "tenure test").unwrap();
    let name = name.build();
    let mut serial = BigNum::new().unwrap();
    serial.rand(64, MsbOption::MAYBE_ZERO, false).unwrap();
    let mut cert = X509::builder().unwrap();
    cert.set_version(2).unwrap();
    cert.set_serial_number(&serial.to_asn1_integer().unwrap())
        .unwrap();
    cert.set_subject_name(&name).unwrap();
    cert.set_issuer_name(&name).unwrap();
    cert.set_pubkey(&key).unwrap();
    cert.set_not_before(&Asn1Time::days_from_now(0).unwrap())
        .unwrap();
    cert.set_not_after(&Asn1Time::days_from_now(1).unwrap())
        .unwrap();
    let san = SubjectAlternativeName::new()
        .ip("127.0.0.1")
        .dns("localhost")
        .build(&cert.x509v3_context(None, None))
        .unwrap();
    cert.append_extension(san).unwrap();
    cert.sign(&key, MessageDigest::sha256()).unwrap();
    let cert = cert.build();
    (
        cert.to_pem().unwrap(),
        key.private_key_to_pem_pkcs8().unwrap(),
    )
}

/// A server with TLS on its one port, and users (TLS and AUTH together, as
/// in production); returns it and its certificate.
pub fn tls_server() -> (Server, Vec<u8>) {
    let (cert, key) = self_signed();
    let users = format!("user worker write sha256:{}\n", sha256_hex("s3cret"));
    let server = Server::start_with_flags(|dir: &Path| {
        let (c, k, u) = (
            dir.join("cert.pem"),
            dir.join("key.pem"),
            dir.join("users.conf"),
        );
        std::fs::write(&c, &cert).unwrap();
        std::fs::write(&k, &key).unwrap();
        std::fs::write(&u, &users).unwrap();
        vec![
            "--tls-cert".into(),
            c.display().to_string(),
            "--tls-key".into(),
            k.display().to_string(),
            "--users".into(),
            u.display().to_string(),
        ]
    });
    (server, cert)
}

/// `rediss://` with the test's certificate as the root: a hold, a fenced
/// write, renewals; a plain `redis://` to the same port fails.
#[test]
fn holds_over_tls() {
    let (s, cert) = tls_server();
    let url = format!("rediss://worker:s3cret@{}", s.addr);
    let client = Client::build_with_tls(
        url.as_str().into_connection_info().unwrap(),
        TlsCertificates {
            client_tls: None,
            root_cert: Some(cert),
        },
    )
    .unwrap();
    let store = Store::new(client).unwrap();
    let lk = store
        .lock("tls")
        .ttl(Duration::from_secs(1))
        .open()
        .unwrap();
    let fence = lk
        .hold("k", |lease| {
            let first = lease.deadline();
            assert!(
                !lease.wait_lost(Duration::from_millis(1500)),
                "lost over TLS"
            );
            assert!(lease.deadline() > first, "no renewal over TLS");
            store.call(&["SET", "k", "v", "FENCE", &lease.fence().to_string()])?;
            Ok(lease.fence())
        })
        .unwrap();
    assert!(fence > 0);
    assert_eq!(store.call(&["GET", "k"]).unwrap().as_str(), Some("v"));

    let plain = Store::connect_with(
        &format!("redis://worker:s3cret@{}", s.addr),
        tenure_locks::Options::default().connect_timeout(Duration::from_secs(2)),
    );
    assert!(plain.is_err(), "a plain connection to the TLS port worked");
}

/// The short way, `Store::connect("rediss://…")`, checks the certificate
/// against the system's roots, which do not have the test's: refused. With
/// the redis crate's `#insecure` (no check at all) it connects.
#[test]
fn connect_checks_the_certificate() {
    let (s, _) = tls_server();
    let err = Store::connect(&format!("rediss://worker:s3cret@{}", s.addr)).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Io, "{err}");
    let store = Store::connect(&format!("rediss://worker:s3cret@{}/#insecure", s.addr)).unwrap();
    let lk = store.lock("tls").open().unwrap();
    let fence = lk.try_hold("k", |lease| Ok(lease.fence())).unwrap();
    assert!(fence > 0);
}
