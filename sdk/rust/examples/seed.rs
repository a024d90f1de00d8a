//! The seed's example, runnable: one worker summarizes a chat under a lease
//! and saves the summary with the lease's fence. `TENURE_URL` (default
//! `redis://127.0.0.1:6379`) says where the store is:
//!
//! ```sh
//! TENURE_URL=redis://127.0.0.1:6379 cargo run --example seed
//! ```

use std::time::Duration;

use tenure_locks::{Error, ErrorKind};

/// A stand-in for the model: its error is the program's own type.
struct Model;

#[derive(Debug)]
struct ModelError(String);

impl std::fmt::Display for ModelError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "model: {}", self.0)
    }
}

impl std::error::Error for ModelError {}

impl Model {
    fn summarize(&self, messages: &[&str]) -> Result<String, ModelError> {
        if messages.is_empty() {
            return Err(ModelError("nothing to summarize".into()));
        }
        Ok(messages.join(" / "))
    }
}

fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let url = std::env::var("TENURE_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
    let (model, messages, chat_id) = (
        Model,
        ["hello", "are we shipping friday?", "yes"],
        "chat-42",
    );

    let store = tenure_locks::Store::connect(&url)?;
    let summaries = store
        .lock("summaries")
        .ttl(Duration::from_secs(30))
        .open()?;

    // SET … FENCE: a worker that lost its lease while the model ran cannot
    // overwrite a newer summary (LOCK-12).
    let save_summary = |chat_id: &str, text: &str, fence: u64| -> Result<(), Error> {
        store.call(&[
            "SET",
            &format!("summary:{chat_id}"),
            text,
            "FENCE",
            &fence.to_string(),
        ])?;
        Ok(())
    };

    summaries.hold(chat_id, |lease| {
        let text = model.summarize(&messages)?;
        if lease.lost() {
            return Err(Error::new(ErrorKind::Lost, "the summary was late")); // revoked at max_hold, or expired
        }
        save_summary(chat_id, &text, lease.fence())
    })?;

    let saved = store.call(&["GET", &format!("summary:{chat_id}")])?;
    match saved {
        tenure_locks::Value::BulkString(b) => {
            println!("summary:{chat_id} = {}", String::from_utf8_lossy(&b))
        }
        other => return Err(format!("summary:{chat_id} = {other:?}").into()),
    }
    Ok(())
}
