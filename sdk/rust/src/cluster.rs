//! Where a [`Store`](crate::Store)'s commands go: one server, or the nodes
//! of a tenure cluster (SPEC §10), which behaves to clients like a Redis
//! Cluster of one shard. Only its leader answers; a follower answers
//! `-MOVED <slot> <leader>`, a node that knows no leader `-CLUSTERDOWN`, and
//! a new leader `-TRYAGAIN` to `LOCK.*` until its new epoch is applied.
//!
//! The cluster route sends each command to the node that answered last (the
//! leader, once a `-MOVED` has named it), follows `-MOVED`, and tries
//! `-TRYAGAIN`, `-CLUSTERDOWN` and a node that cannot be dialed again,
//! going round the nodes it knows and backing off, until the command's
//! deadline. A command that failed on its way (the connection cut, no reply
//! in time) is not sent again: it may have run. The lock code retries what
//! is safe to retry, with the same request or lease id, and its next try
//! starts from another node.
//!
//! What it is not for: a Redis Cluster of several shards (every slot is
//! the leader's here, so slots are not tracked), reads from followers.

use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use crate::client::{Address, Fate, Options, Pool};
use crate::error::{Error, ErrorKind};
use crate::resp::Value;

/// The first pause before a command is tried again; it doubles up to
/// [`MAX_BACKOFF`].
const MIN_BACKOFF: Duration = Duration::from_millis(10);
const MAX_BACKOFF: Duration = Duration::from_millis(250);

/// How a store is reached.
pub(crate) enum Route {
    One(Pool),
    Cluster(Cluster),
}

impl Route {
    pub(crate) fn options(&self) -> &Options {
        match self {
            Route::One(p) => p.options(),
            Route::Cluster(c) => &c.options,
        }
    }

    /// Sends args and returns the reply, an error reply included as
    /// [`Value::Error`]. On a cluster, redirects and the replies of a
    /// failover are followed until `until` or for one read timeout,
    /// whichever ends first; then the last of them is returned.
    pub(crate) fn call<A: AsRef<[u8]>>(&self, args: &[A], until: Instant) -> Result<Value, Error> {
        match self {
            Route::One(p) => p.call(args),
            Route::Cluster(c) => c.call(args, until.min(Instant::now() + c.options.read_timeout)),
        }
    }
}

/// The nodes of a cluster: those given, then those learnt from `-MOVED` and
/// `CLUSTER SLOTS`, each with a pool of its own.
pub(crate) struct Cluster {
    options: Options,
    /// the user and password for nodes learnt, from the first one given
    credentials: Address,
    state: Mutex<State>,
}

struct State {
    nodes: Vec<Arc<Pool>>,
    /// where the next command goes first
    preferred: usize,
}

impl Cluster {
    pub(crate) fn new(seeds: Vec<Address>, options: Options) -> Cluster {
        let credentials = seeds[0].clone();
        let nodes = seeds
            .into_iter()
            .map(|a| Arc::new(Pool::new(a, options.clone())))
            .collect();
        Cluster {
            options,
            credentials,
            state: Mutex::new(State {
                nodes,
                preferred: 0,
            }),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The node at i, and how many nodes are known.
    fn node(&self, i: usize) -> (Arc<Pool>, usize) {
        let st = self.state();
        (st.nodes[i % st.nodes.len()].clone(), st.nodes.len())
    }

    fn prefer(&self, i: usize) {
        self.state().preferred = i;
    }

    /// The node after i, which becomes the preferred one if i was.
    fn pass(&self, i: usize) -> usize {
        let mut st = self.state();
        let next = (i + 1) % st.nodes.len();
        if st.preferred == i {
            st.preferred = next;
        }
        next
    }

    /// The index of the node at host:port, added if new.
    fn learn(&self, host: &str, port: u16) -> usize {
        let mut st = self.state();
        if let Some(i) = st
            .nodes
            .iter()
            .position(|p| p.address().host == host && p.address().port == port)
        {
            return i;
        }
        let address = Address {
            host: host.to_owned(),
            port,
            ..self.credentials.clone()
        };
        st.nodes
            .push(Arc::new(Pool::new(address, self.options.clone())));
        st.nodes.len() - 1
    }

    /// Learns every node, and the leader, from `CLUSTER SLOTS` (one shard:
    /// the leader first, then the followers). No slots: no leader yet.
    pub(crate) fn discover(&self, until: Instant) -> Result<(), Error> {
        let reply = self.call(&["CLUSTER", "SLOTS"], until)?;
        let shards = match reply {
            Value::Array(a) => a,
            Value::Error(e) => return Err(Error::from_reply(&e).context("CLUSTER SLOTS")),
            other => return Err(malformed(&other)),
        };
        for shard in shards {
            let Value::Array(parts) = shard else {
                return Err(malformed(&shard));
            };
            for (n, node) in parts.iter().skip(2).enumerate() {
                let host_port = match node {
                    Value::Array(hp) => match hp.as_slice() {
                        [Value::Bulk(h), Value::Int(p), ..] => u16::try_from(*p)
                            .ok()
                            .map(|p| (String::from_utf8_lossy(h), p)),
                        _ => None,
                    },
                    _ => None,
                };
                let (host, port) = host_port.ok_or_else(|| malformed(node))?;
                let i = self.learn(&host, port);
                if n == 0 {
                    self.prefer(i);
                }
            }
        }
        Ok(())
    }

    fn call<A: AsRef<[u8]>>(&self, args: &[A], until: Instant) -> Result<Value, Error> {
        let mut at = self.state().preferred;
        let mut backoff = MIN_BACKOFF;
        let mut tried = 0; // nodes tried since the last pause
        loop {
            let (pool, known) = self.node(at);
            let last = match pool.send(args) {
                Fate::Reply(Value::Error(e)) if e.starts_with("MOVED ") => {
                    let Some((host, port)) = moved_to(&e) else {
                        return Ok(Value::Error(e));
                    };
                    let to = self.learn(host, port);
                    self.prefer(to);
                    at = to;
                    // No leader answered in time: the cluster is unavailable.
                    Err(Error::new(
                        ErrorKind::Io,
                        format!("no leader answered: {e}"),
                    ))
                }
                Fate::Reply(Value::Error(e)) if e.starts_with("TRYAGAIN ") => {
                    tried = known; // the leader, not ready yet: pause, then ask it again
                    Ok(Value::Error(e))
                }
                Fate::Reply(Value::Error(e)) if e.starts_with("CLUSTERDOWN ") => {
                    at = self.pass(at);
                    Ok(Value::Error(e))
                }
                Fate::Reply(v) => {
                    self.prefer(at);
                    return Ok(v);
                }
                Fate::NotSent(e) if e.kind() == ErrorKind::Io => {
                    at = self.pass(at); // a dead node: the next one
                    Err(e)
                }
                Fate::NotSent(e) => return Err(e), // refused by AUTH: so would the others be
                Fate::Failed(e) => {
                    self.pass(at);
                    return Err(e);
                }
            };
            tried += 1;
            if tried < known {
                continue;
            }
            let now = Instant::now();
            if now + backoff >= until {
                return last;
            }
            thread::sleep(backoff);
            backoff = (backoff * 2).min(MAX_BACKOFF);
            tried = 0;
        }
    }
}

/// The leader's host and port in `MOVED <slot> <host:port>`.
fn moved_to(reply: &str) -> Option<(&str, u16)> {
    let addr = reply.split(' ').nth(2)?;
    let (host, port) = addr.rsplit_once(':')?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    Some((host, port.parse().ok()?))
}

fn malformed(v: &Value) -> Error {
    Error::new(ErrorKind::Protocol, format!("CLUSTER SLOTS replied {v:?}"))
}

#[cfg(test)]
mod tests {
    #[test]
    fn reads_where_moved_points() {
        assert_eq!(
            super::moved_to("MOVED 0 127.0.0.1:7001"),
            Some(("127.0.0.1", 7001))
        );
        assert_eq!(
            super::moved_to("MOVED 3999 [::1]:7002"),
            Some(("::1", 7002))
        );
        assert_eq!(super::moved_to("MOVED 0"), None);
        assert_eq!(super::moved_to("MOVED 0 host:port"), None);
    }
}
