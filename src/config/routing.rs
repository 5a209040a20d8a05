//! `[routing]`: which archives a miss asks, and the bounds of what is learned.

use serde::{Deserialize, Serialize};
pub use tmproxy_core::routing::Mode as RoutingMode;

/// `[routing]`. Profiles are learned and saved whatever the mode, so `learned` can be switched
/// on with evidence already gathered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RoutingConfig {
    /// `all` (every archive on every miss) or `learned` (skip by profile).
    pub mode: RoutingMode,
    /// Keys (hosts, registrable domains, TLDs) held in memory over every archive; the least
    /// recently used are forgotten past it.
    pub max_keys: usize,
    /// Observations an archive needs at a key before that key can skip it.
    pub min_evidence: u32,
    /// An archive is skipped where it held mementos for fewer than this share of URI-Rs.
    pub min_share: f64,
    /// The share of misses that ask every archive anyway, so profiles recover.
    pub explore: f64,
    /// Observations one client address (an IPv6 /64) may add at one key: no single client
    /// teaches routing to skip (or ask) an archive.
    pub max_per_client: u32,
}

/// The most `[routing] max_keys` takes: a key costs up to ~200 bytes (a tally for each of 13
/// archives), so 10 million is a couple of GiB, past which a typo is likelier than an intent.
pub const MAX_ROUTING_KEYS: usize = 10_000_000;

impl Default for RoutingConfig {
    fn default() -> Self {
        RoutingConfig {
            // Learned by default: at the defaults below `memsim route --preset web` keeps memento
            // recall ≥ 0.99 at seeds 1-10 with 72-76% fewer archive requests, with the
            // per-client bound in place (docs/simulations.md, "Learned routing by default").
            mode: RoutingMode::Learned,
            // A few hundred thousand URI-Rs over a heavy-tailed set of hosts make tens of
            // thousands of host keys (each URI-R adds at most three keys, mostly shared); 100,000
            // keep the hosts that get asked again, and cost ~20 MB with 13 archives answering
            // under every key (the worst case, measured).
            max_keys: 100_000,
            min_evidence: 20,
            min_share: 0.01,
            explore: 0.07,
            max_per_client: 5,
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::config::{Config, RoutingMode};

    fn parse(text: &str) -> Result<Config, crate::config::ConfigError> {
        let c = Config::from_toml_str(text, "test")?;
        c.validate()?;
        Ok(c)
    }

    #[test]
    fn defaults_are_the_documented_ones() {
        let r = Config::default().routing;
        assert_eq!(r.mode, RoutingMode::Learned);
        assert_eq!(r.max_keys, 100_000);
        assert_eq!(r.min_evidence, 20);
        assert_eq!(r.min_share, 0.01);
        assert_eq!(r.explore, 0.07);
        assert_eq!(r.max_per_client, 5);
        assert!(Config::default().archives.iter().all(|a| !a.always));
    }

    #[test]
    fn routing_and_always_are_read() {
        let c = parse(
            "[routing]\nmode = \"learned\"\nmax_keys = 10\nmin_evidence = 3\nmin_share = 0.5\nexplore = 1.0\nmax_per_client = 7\n\
             [[archives]]\nid = \"x\"\ntimemap = \"https://x.example/tm/\"\ntimegate = \"https://x.example/\"\nalways = true\n",
        )
        .unwrap();
        assert_eq!(c.routing.mode, RoutingMode::Learned);
        assert_eq!((c.routing.max_keys, c.routing.min_evidence), (10, 3));
        assert_eq!(c.routing.max_per_client, 7);
        assert!(c.archives[0].always);
    }

    #[test]
    fn the_id_all_is_reserved_for_prefer_archives_all() {
        let e = parse(
            "[[archives]]\nid = \"all\"\ntimemap = \"https://x.example/tm/\"\ntimegate = \"https://x.example/\"\n",
        )
        .expect_err("all is no archive id");
        assert_eq!(e.key, "archives[0].id", "{e}");
        assert!(e.to_string().contains("Prefer: archives=all"), "{e}");
    }

    #[test]
    fn out_of_range_values_are_refused_by_key() {
        for (text, key) in [
            ("mode = \"some\"", "routing.mode"),
            ("max_keys = 0", "routing.max_keys"),
            ("max_keys = 10000001", "routing.max_keys"),
            ("min_evidence = 0", "routing.min_evidence"),
            ("min_evidence = 4097", "routing.min_evidence"),
            ("min_share = -0.1", "routing.min_share"),
            ("min_share = nan", "routing.min_share"),
            ("explore = 1.5", "routing.explore"),
            ("max_per_client = 0", "routing.max_per_client"),
            ("max_per_client = 4097", "routing.max_per_client"),
            ("maxkeys = 5", "routing.maxkeys"),
        ] {
            let e = parse(&format!("[routing]\n{text}\n")).expect_err(text);
            assert_eq!(e.key, key, "{text}: {e}");
        }
    }
}
