//! The SDK against the real server (SPEC §8: what every SDK does), one
//! server process per test, built from this repository.

mod harness;
mod proxy;
mod resp;

mod client;
mod cluster;
mod elections;
mod faults;
mod frozen;
mod hold;
mod kinds;
mod lost;
#[cfg(feature = "tokio")]
mod on_tokio;
mod reqidwindow;
mod tls;
