//! Code as users write it, which must compile with no type annotations
//! (SPEC §8): the seed's closure verbatim, closures that only say `Ok(())`,
//! `?` on the user's own error types, and `hold(…)?` into the error types
//! of the user's own functions. It is compiled, not run: the test below
//! only names each function.

#![allow(dead_code, unused_variables)]

use std::time::Duration;

use tenure_locks::{Error, ErrorKind, Lock, Store};

struct Model;

/// The user's own error type.
#[derive(Debug)]
struct ModelError;

impl std::fmt::Display for ModelError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the model failed")
    }
}

impl std::error::Error for ModelError {}

impl Model {
    fn summarize(&self, messages: &[String]) -> Result<String, ModelError> {
        Ok(messages.join(" "))
    }
}

fn save_summary(_chat_id: &str, _text: &str, _fence: u64) -> Result<(), Error> {
    Ok(())
}

fn work() {}

/// The seed's example, its closure verbatim.
fn seed(chat_id: &str, model: Model, messages: Vec<String>) -> Result<(), Error> {
    let store = tenure_locks::Store::connect("redis://127.0.0.1:6379")?;
    let summaries = store
        .lock("summaries")
        .ttl(Duration::from_secs(30))
        .open()?;

    summaries.hold(chat_id, |lease| {
        let text = model.summarize(&messages)?;
        if lease.lost() {
            return Err(Error::new(ErrorKind::Lost, "the summary was late")); // revoked at maxHold
        }
        save_summary(chat_id, &text, lease.fence())
    })?;
    Ok(())
}

/// The E0283 program of issue 30: a closure that ends in `Ok(())`.
fn ok_only(lock: &Lock, key: String) -> Result<(), Error> {
    lock.hold(&key, |lease| {
        work();
        Ok(())
    })?;
    lock.try_hold(&key, |_| Ok(()))?;
    Ok(())
}

/// `?` on the user's own errors and the standard library's, ending in `Ok(…)`.
fn own_errors(lock: &Lock) -> Result<u64, Error> {
    let n = lock.hold("k", |lease| {
        let text = Model.summarize(&[])?;
        let n: u64 = "42".parse()?;
        std::fs::metadata("/")?;
        if text.is_empty() {
            return Err(Error::other("no summary"));
        }
        Ok(n + lease.fence())
    })?;
    Ok(n)
}

/// `hold(…)?` in a function that returns a boxed error.
fn into_box(lock: &Lock) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    lock.hold("k", |_| Ok(()))?;
    let fence = lock.hold("k", |lease| Ok(lease.fence()))?;
    println!("{fence}");
    Ok(())
}

/// …and its kind and reason found again in the box.
fn kind_in_the_box(lock: &Lock) -> Option<ErrorKind> {
    let boxed: Box<dyn std::error::Error + Send + Sync> = lock.hold("k", |_| Ok(())).err()?.into();
    Error::find_in(&*boxed).map(|e| e.kind())
}

/// …in one that returns `Box<dyn Error>`.
fn into_unsendable_box(store: &Store) -> Result<(), Box<dyn std::error::Error>> {
    store.lock("l").open()?.hold("k", |_| Ok(()))?;
    Ok(())
}

/// …and in one that returns `anyhow::Result` (the default feature
/// `anyhow`); an anyhow error inside the closure goes through `Error::other`.
#[cfg(feature = "anyhow")]
fn into_anyhow(store: &Store) -> anyhow::Result<()> {
    let lock = store.lock("l").open()?;
    lock.hold("k", |_| {
        let r: anyhow::Result<()> = Ok(());
        r.map_err(Error::other)?;
        Ok(())
    })?;
    Ok(())
}

/// The error's own questions, and the source chain through Deref.
fn inspect(lock: &Lock) {
    if let Err(e) = lock.hold("k", |_| Ok(())) {
        let _kind: ErrorKind = e.kind();
        let _reason: Option<&str> = e.reason();
        let _source = e.source();
        let _mine: Option<&ModelError> = e.downcast_ref::<ModelError>();
        eprintln!("{e}");
    }
}

#[cfg(feature = "tokio")]
mod on_tokio {
    use super::*;

    async fn summarize(_: &[String]) -> Result<String, ModelError> {
        Ok(String::new())
    }

    /// The seed's example on tokio: the closure returns a future.
    async fn seed(chat_id: &str, messages: Vec<String>) -> Result<(), Error> {
        let store = tenure_locks::tokio::Store::connect("redis://127.0.0.1:6379").await?;
        let summaries = store
            .lock("summaries")
            .ttl(Duration::from_secs(30))
            .open()?;
        summaries
            .hold(chat_id, |lease| async move {
                let text = summarize(&messages).await?;
                if lease.lost() {
                    return Err(Error::new(ErrorKind::Lost, "the summary was late"));
                }
                save_summary(chat_id, &text, lease.fence())
            })
            .await?;
        Ok(())
    }

    async fn ok_only(
        lock: &tenure_locks::tokio::Lock,
        key: String,
    ) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        lock.hold(&key, |_| async {
            work();
            Ok(())
        })
        .await?;
        Ok(())
    }

    /// A hold is a Send future: it may be spawned.
    #[allow(clippy::manual_async_fn)]
    fn spawned(lock: tenure_locks::tokio::Lock) -> impl std::future::Future<Output = ()> + Send {
        async move {
            let _ = lock.hold("k", |_| async { Ok(()) }).await;
        }
    }

    #[test]
    fn compiles_on_tokio() {
        let _ = (seed, ok_only, spawned);
    }
}

#[test]
fn compiles() {
    let _ = (
        seed,
        ok_only,
        own_errors,
        into_box,
        into_unsendable_box,
        kind_in_the_box,
        inspect,
    );
    #[cfg(feature = "anyhow")]
    let _ = into_anyhow;
}
