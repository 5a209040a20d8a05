//! How much one client may teach the profiles: at most `max_per_client` observations per client
//! address per routing key, so no single address builds the evidence that turns a skip on (or
//! off). The counts are bounded too, since a client has as many URI-Rs as it likes: past
//! [`PerClient::SLOTS`] (client, key) pairs the least recently counted is forgotten, and that
//! client may teach that key again.

use super::keys::{Key, UriKeys};
use lru::LruCache;
use std::net::{IpAddr, Ipv6Addr};
use std::num::NonZeroUsize;

/// The key a client is counted under, by the rate limit and by [`PerClient`]: its IPv4 address,
/// or its IPv6 /64 (one host usually holds a whole /64, and would otherwise get a fresh count
/// per address it picks).
pub fn client_key(ip: IpAddr) -> IpAddr {
    match ip.to_canonical() {
        IpAddr::V4(v4) => IpAddr::V4(v4),
        IpAddr::V6(v6) => {
            let bits = u128::from(v6) & !((1u128 << 64) - 1);
            IpAddr::V6(Ipv6Addr::from(bits))
        }
    }
}

/// Observations counted per (client address, key).
#[derive(Debug)]
pub struct PerClient {
    max: u32,
    /// std's SipHash with a random key (lru without hashbrown): pairs come from clients.
    counts: LruCache<(IpAddr, Key), u32>,
}

impl PerClient {
    /// (client, key) pairs remembered: ~100 bytes each, so ~6 MB. A client that wants its own
    /// counts forgotten must first make about this many keys' worth of misses.
    pub const SLOTS: usize = 65_536;

    pub fn new(max_per_client: u32) -> PerClient {
        PerClient::with_slots(max_per_client, PerClient::SLOTS)
    }

    /// At most `slots` pairs remembered (at least 1).
    pub fn with_slots(max_per_client: u32, slots: usize) -> PerClient {
        PerClient {
            max: max_per_client,
            counts: LruCache::new(NonZeroUsize::new(slots).unwrap_or(NonZeroUsize::MIN)),
        }
    }

    /// The keys of `keys` that `client` may still teach, each counted once more for it.
    pub fn admit(&mut self, client: IpAddr, keys: &mut UriKeys) {
        keys.retain(|key| {
            let pair = (client, key.clone());
            match self.counts.get_mut(&pair) {
                Some(n) if *n >= self.max => false,
                Some(n) => {
                    *n += 1;
                    true
                }
                None => {
                    self.counts.push(pair, 1);
                    self.max > 0
                }
            }
        });
    }

    /// Pairs remembered now.
    pub fn len(&self) -> usize {
        self.counts.len()
    }

    pub fn is_empty(&self) -> bool {
        self.counts.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(last: u8) -> IpAddr {
        IpAddr::from([127, 0, 0, last])
    }

    fn admitted(bound: &mut PerClient, client: IpAddr, uri: &str) -> usize {
        let mut keys = UriKeys::of_uri(uri);
        bound.admit(client, &mut keys);
        keys.keys().len()
    }

    #[test]
    fn one_client_teaches_a_key_at_most_max_times() {
        let mut bound = PerClient::new(5);
        let taught: Vec<usize> = (0..8)
            .map(|i| admitted(&mut bound, ip(1), &format!("http://victim.org/nf-{i}")))
            .collect();
        // host, domain and TLD, five times each, then nothing.
        assert_eq!(taught, [3, 3, 3, 3, 3, 0, 0, 0]);
        // Another host of the same TLD: only its own host and domain are new to this client.
        assert_eq!(admitted(&mut bound, ip(1), "http://other.org/"), 2);
        // Another client has its own five.
        assert_eq!(admitted(&mut bound, ip(2), "http://victim.org/x"), 3);
    }

    #[test]
    fn the_counts_are_bounded() {
        let mut bound = PerClient::with_slots(1, 10);
        for i in 0..100 {
            admitted(&mut bound, ip(1), &format!("http://h{i}.example/"));
        }
        assert_eq!(bound.len(), 10);
    }
}
