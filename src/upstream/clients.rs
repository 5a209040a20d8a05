//! An archive's HTTP clients, one per connection thread, so that a request and the pooled
//! connection it goes out on are driven by the same runtime.
//!
//! Why: a pooled connection's task lives on the runtime that opened it. With one pool for
//! every connection thread, a request made on one thread was often sent on a connection opened
//! by another: the request crossed to that thread's task and the answer crossed back, each
//! crossing an eventfd write and a wake-up of the other thread (three of each per aggregated
//! miss with three archives; BENCHMARKS.md, "Misses against MemGator"). With a
//! client per thread, a miss's archive requests stay on the thread that serves it.

use super::resolve::GuardedResolver;
use super::transport::{tls_config, ArchiveClient, BuildError};
use http::header::HeaderValue;
use std::sync::OnceLock;
use std::time::Duration;

/// Connection threads with a client of their own; any further ones share one (more threads
/// than this means more cores than any machine we serve on has).
const SLOTS: usize = 64;

/// What one archive's clients are made of: each is built the same way, with its own pool.
struct Recipe {
    connect_timeout: Duration,
    user_agent: String,
    via: HeaderValue,
    resolver: GuardedResolver,
    tls: rustls::ClientConfig,
}

/// One archive's clients: one per connection thread, made on that thread's first request,
/// and one for every other thread (background work, blocking pools).
pub struct Clients {
    recipe: Recipe,
    shared: ArchiveClient,
    slots: Box<[OnceLock<ArchiveClient>]>,
}

impl Clients {
    pub fn new(
        connect_timeout: Duration,
        user_agent: &str,
        via: &HeaderValue,
        resolver: GuardedResolver,
    ) -> Result<Clients, BuildError> {
        let recipe = Recipe {
            connect_timeout,
            user_agent: user_agent.to_owned(),
            via: via.clone(),
            resolver,
            tls: tls_config()?,
        };
        Ok(Clients {
            shared: recipe.build()?,
            recipe,
            slots: (0..SLOTS).map(|_| OnceLock::new()).collect(),
        })
    }

    /// The client for a request made on this thread: its connection thread's
    /// (`crate::stripe::connection_thread`), else the shared one.
    pub fn get(&self) -> &ArchiveClient {
        let slot = crate::stripe::connection_thread().and_then(|i| self.slots.get(i));
        match slot {
            // A client that cannot be built a second time (it was built once, with the same
            // settings) falls back to the shared one: same rules, another pool.
            Some(slot) => {
                slot.get_or_init(|| self.recipe.build().unwrap_or_else(|_| self.shared.clone()))
            }
            None => &self.shared,
        }
    }
}

impl Recipe {
    /// Each archive has its own clients, because their resolver applies that archive's rules
    /// (which names may resolve to a private address), and their pooled connections then serve
    /// that archive only. Every request names us in `via` (`super::via`); redirects are
    /// followed by `fetch::send_within`, each hop checked against the archive's rules.
    fn build(&self) -> Result<ArchiveClient, BuildError> {
        ArchiveClient::new(
            self.connect_timeout,
            &self.user_agent,
            &self.via,
            self.resolver.clone(),
            self.tls.clone(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::upstream::resolve::fixed_lookup;

    fn address(client: &ArchiveClient) -> usize {
        client as *const ArchiveClient as usize
    }

    #[test]
    fn each_connection_thread_has_its_own_client_and_other_threads_share_one() {
        let via = HeaderValue::from_static("1.1 tmproxy");
        let resolver = GuardedResolver::new(fixed_lookup(Default::default()), Vec::new());
        let clients =
            Clients::new(Duration::from_secs(1), "tmproxy-test", &via, resolver).expect("clients");
        let shared = address(clients.get());
        let on = |slot: Option<usize>| {
            std::thread::scope(|s| {
                s.spawn(|| {
                    if let Some(slot) = slot {
                        crate::stripe::bind_connection_thread(slot);
                    }
                    (address(clients.get()), address(clients.get()))
                })
                .join()
                .expect("thread")
            })
        };
        let (first, again) = on(Some(0));
        assert_eq!(first, again, "a thread keeps its client");
        assert_ne!(first, shared);
        let (second, _) = on(Some(1));
        assert_ne!(second, first);
        assert_ne!(second, shared);
        // Slot 0 on another thread is slot 0's client: a restarted connection thread reuses it.
        assert_eq!(on(Some(0)).0, first);
        assert_eq!(
            on(None).0,
            shared,
            "a thread that is no connection thread shares one"
        );
        assert_eq!(
            on(Some(SLOTS)).0,
            shared,
            "slots beyond the last share one too"
        );
    }
}
