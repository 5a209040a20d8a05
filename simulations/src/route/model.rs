//! The SYNTHETIC holdings model of `memsim route --preset`: made-up hosts, URI-Rs and archive
//! holdings shaped like an aggregator's list, not measured from any archive. What it is meant
//! to have, and why:
//!
//! - hosts with a Zipf popularity (host 0 the most popular), a quarter of them subdomains of an
//!   earlier host (so a registrable domain groups several hosts), TLDs drawn from a mix like
//!   the web's (com the most, then national TLDs);
//! - URI-Rs placed on hosts by that popularity (big sites have many pages), and asked with a
//!   Zipf popularity of their own (URI-R 0 the most asked), so popular URI-Rs repeat;
//! - archives that crawl sites, not random pages: each decides per host whether it crawls it
//!   (popular hosts more often), then holds a share of that host's URI-Rs (its coverage). The
//!   Internet Archive crawls most hosts; national archives crawl their own TLD and little else;
//!   the others crawl a few hosts each (under 5% of URI-Rs); on-demand archives also hold single
//!   pages scattered over every host (what a host profile cannot predict); one slow archive
//!   holds nothing;
//! - memento counts per (archive, URI-R) Pareto-distributed (heavy-tailed), the most asked
//!   URI-Rs captured more often;
//! - per-archive median response times (the slow one 5 s), for the latency measure;
//! - clients: each request comes from one of [`Preset::clients`] SYNTHETIC addresses (in
//!   198.18.0.0/15, the range set aside for benchmarks), drawn with a Zipf popularity
//!   ([`ZIPF_CLIENTS`]; client 0 the busiest, as a crawler or a heavy user is) independently of
//!   the URI-R, so the server's per-client bound on what one address teaches
//!   (`[routing] max_per_client`) is replayed. The draws come from their own generator: the
//!   URI-Rs, holdings and requests of a seed are those of a model without clients.

use super::{Archive, Request, Stream, Uri};
use crate::rng::Rng;
use std::net::{IpAddr, Ipv4Addr};
use tmproxy_core::routing::UriKeys;

/// A preset: the model's sizes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Preset {
    pub name: &'static str,
    pub hosts: u32,
    pub uri_rs: u32,
    /// Client requests in the stream (hits and misses).
    pub requests: u32,
    /// The cache's TTL in requests (see [`Stream::misses`]).
    pub ttl: u64,
    /// Client addresses the requests come from (0: none, nothing bounded per client).
    pub clients: u32,
}

impl Preset {
    /// Fast, for tests: 300 hosts, 5,000 URI-Rs, 20,000 requests.
    pub const SMALL: Preset = Preset {
        name: "small",
        hosts: 300,
        uri_rs: 5_000,
        requests: 20_000,
        ttl: 4_000,
        clients: 500,
    };
    /// The default: 20,000 hosts, 300,000 URI-Rs, 1,000,000 requests from 10,000 clients. The
    /// TTL is a fifth of the stream: read as 75 days of requests, the cache's 15-day default TTL.
    pub const WEB: Preset = Preset {
        name: "web",
        hosts: 20_000,
        uri_rs: 300_000,
        requests: 1_000_000,
        ttl: 200_000,
        clients: 10_000,
    };

    pub const ALL: [Preset; 2] = [Preset::SMALL, Preset::WEB];

    pub fn by_name(name: &str) -> Option<Preset> {
        Preset::ALL.into_iter().find(|p| p.name == name)
    }

    pub fn names() -> String {
        Preset::ALL.map(|p| p.name).join(", ")
    }
}

/// Zipf exponents: over hosts (pages per site) and over URI-Rs (how often each is asked).
pub const ZIPF_HOSTS: f64 = 1.0;
pub const ZIPF_URIS: f64 = 0.9;
/// Over clients (requests per address): with 10,000 clients the busiest makes about 10% of the
/// requests and the ten busiest about 30%.
pub const ZIPF_CLIENTS: f64 = 1.0;
/// The most client addresses a stream may have: 198.18.0.0/15 holds 131,072.
pub const MAX_CLIENTS: u32 = 1 << 17;
/// Mixed into the seed for the clients' own generator.
const CLIENT_SEED: u64 = 0xC11E_47AD_D12E_5500;

/// Client `k`'s SYNTHETIC address: 198.18.0.0 + k (RFC 2544's benchmarking range).
pub fn client_address(k: u32) -> IpAddr {
    IpAddr::V4(Ipv4Addr::from(
        u32::from(Ipv4Addr::new(198, 18, 0, 0)) + k.min(MAX_CLIENTS - 1),
    ))
}
/// The share of hosts that are subdomains of an earlier host's registrable domain.
pub const SUBDOMAINS: f64 = 0.25;
/// Memento counts: Pareto with this shape (a heavy tail), scaled per archive, capped.
pub const PARETO_ALPHA: f64 = 1.3;
pub const MAX_MEMENTOS: f64 = 50_000.0;

/// TLDs over hosts (weights) and the public suffix a site registers under.
const TLDS: &[(&str, &str, f64)] = &[
    ("com", "com", 40.0),
    ("org", "org", 7.0),
    ("net", "net", 5.0),
    ("de", "de", 7.0),
    ("uk", "co.uk", 5.0),
    ("jp", "jp", 4.0),
    ("ru", "ru", 4.0),
    ("fr", "fr", 3.0),
    ("br", "com.br", 3.0),
    ("it", "it", 3.0),
    ("nl", "nl", 2.5),
    ("edu", "edu", 2.0),
    ("io", "io", 2.0),
    ("au", "com.au", 2.0),
    ("es", "es", 2.0),
    ("pl", "pl", 2.0),
    ("pt", "pt", 1.5),
    ("cz", "cz", 1.5),
    ("ca", "ca", 1.5),
    ("gov", "gov", 1.0),
    ("us", "us", 1.0),
    ("info", "info", 1.0),
    ("ch", "ch", 1.0),
    ("is", "is", 0.5),
];

/// One archive of the model: how it crawls and answers.
#[derive(Debug, Clone, Copy)]
pub struct ArchiveModel {
    pub id: &'static str,
    /// Median response time (ms).
    pub latency_ms: u32,
    /// The TLDs it collects by (a national archive's); empty: none in particular.
    pub home: &'static [&'static str],
    /// The chance it crawls a host of a home TLD, and of any other.
    pub p_home: f64,
    pub p_else: f64,
    /// The share of a crawled host's URI-Rs it holds (each host draws between half and all).
    pub coverage: f64,
    /// The scale of its memento counts (a long-running crawler captures a page more often).
    pub scale: f64,
    /// The chance it holds a URI-R of a host it does not crawl: single pages saved on demand
    /// (archive.today's and Perma's way), scattered over every host, what no host profile sees.
    pub scatter: f64,
}

/// One row of [`TABLE`].
type Row = (
    &'static str,
    u32,
    &'static [&'static str],
    f64,
    f64,
    f64,
    f64,
    f64,
);

/// The archives, shaped like an aggregator's list (not real endpoints): id, median latency (ms),
/// home TLDs, p_home, p_else, coverage, scale, scatter. An archive the shipped `config.toml`
/// configures has its id there (`is`, `archive.today`, …), so a profile learned by the model and
/// one learned by a server name it alike; the others are named in the same style.
#[rustfmt::skip]
const TABLE: &[Row] = &[
    ("ia",            900,  &[],                    0.0,  0.92,  0.85, 6.0, 0.05),
    ("ukwa",          600,  &["uk"],                0.9,  0.002, 0.7,  3.0, 0.0005),
    ("arquivo",       400,  &["pt"],                0.9,  0.01,  0.7,  3.0, 0.001),
    ("is",            500,  &["is"],                0.95, 0.001, 0.8,  3.0, 0.0002),
    ("webarchiv-cz",  500,  &["cz"],                0.85, 0.001, 0.6,  2.0, 0.0002),
    ("dnb",           700,  &["de"],                0.5,  0.001, 0.5,  2.0, 0.0002),
    ("bnf",           800,  &["fr"],                0.8,  0.002, 0.6,  3.0, 0.0005),
    ("archive.today", 700,  &[],                    0.0,  0.03,  0.3,  1.0, 0.01),
    ("archive-it",    600,  &["org", "edu", "gov"], 0.03, 0.005, 0.8,  2.0, 0.001),
    ("perma",         400,  &[],                    0.0,  0.02,  0.1,  1.0, 0.005),
    ("loc",           1200, &["gov", "us"],         0.3,  0.003, 0.5,  2.0, 0.0005),
    ("stanford",      500,  &["edu"],               0.1,  0.001, 0.5,  2.0, 0.0005),
    // Holds nothing, answers slowly: what every miss waits for under `all`.
    ("slow",          5000, &[],                    0.0,  0.0,   0.0,  1.0, 0.0),
];

/// The model's archives, from `TABLE`.
pub fn archives() -> Vec<ArchiveModel> {
    TABLE
        .iter()
        .map(
            |&(id, latency_ms, home, p_home, p_else, coverage, scale, scatter)| ArchiveModel {
                id,
                latency_ms,
                home,
                p_home,
                p_else,
                coverage,
                scale,
                scatter,
            },
        )
        .collect()
}

/// Popular hosts (the top 1%) are crawled this many times more often (capped at certainty).
const POPULAR_BOOST: f64 = 3.0;
/// The most asked URI-Rs (the top 1%) have this many times more mementos.
const POPULAR_MEMENTOS: f64 = 5.0;

/// Cumulative Zipf weights over `n` ranks; sampling is a binary search.
struct Zipf(Vec<f64>);

impl Zipf {
    fn new(n: u32, s: f64) -> Zipf {
        let mut acc = 0.0;
        Zipf(
            (0..n)
                .map(|k| {
                    acc += 1.0 / f64::from(k + 1).powf(s);
                    acc
                })
                .collect(),
        )
    }

    fn sample(&self, rng: &mut Rng) -> u32 {
        let total = self.0.last().copied().unwrap_or(0.0);
        let x = unit(rng) * total;
        let i = self.0.partition_point(|&c| c <= x);
        i.min(self.0.len().saturating_sub(1)) as u32
    }
}

/// Uniform in [0, 1).
fn unit(rng: &mut Rng) -> f64 {
    (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
}

struct Host {
    name: String,
    /// Its registrable domain (what a subdomain is made under).
    domain: String,
    tld: &'static str,
}

fn hosts(preset: &Preset, rng: &mut Rng) -> Vec<Host> {
    let total: f64 = TLDS.iter().map(|t| t.2).sum();
    let mut out: Vec<Host> = Vec::with_capacity(preset.hosts as usize);
    for i in 0..preset.hosts {
        if i >= 10 && rng.chance(SUBDOMAINS) {
            let parent = &out[rng.below(u64::from(i)) as usize];
            let (domain, tld) = (parent.domain.clone(), parent.tld);
            out.push(Host {
                name: format!("sub{i}.{domain}"),
                domain,
                tld,
            });
            continue;
        }
        let mut x = unit(rng) * total;
        let &(tld, suffix, _) = TLDS
            .iter()
            .find(|t| {
                x -= t.2;
                x < 0.0
            })
            .unwrap_or(&TLDS[0]);
        let domain = format!("site{i}.{suffix}");
        out.push(Host {
            name: domain.clone(),
            domain,
            tld,
        });
    }
    out
}

/// The preset's stream for a seed: the same seed gives the same stream on every machine.
pub fn generate(preset: &Preset, seed: u64) -> Stream {
    generate_with_clients(preset, seed, preset.clients)
}

/// The preset's stream for a seed with `clients` client addresses instead of its own count (0:
/// requests from no client; at most [`MAX_CLIENTS`]): the URI-Rs, holdings and requests are the
/// same whatever the count.
pub fn generate_with_clients(preset: &Preset, seed: u64, clients: u32) -> Stream {
    let mut rng = Rng::new(seed);
    let hosts = hosts(preset, &mut rng);
    // Per (host, archive): the share of the host's URI-Rs the archive holds (0: not crawled).
    let popular_hosts = preset.hosts / 100;
    let archives = archives();
    let coverage: Vec<Vec<f64>> = hosts
        .iter()
        .enumerate()
        .map(|(h, host)| {
            archives
                .iter()
                .map(|a| {
                    let mut p = if a.home.contains(&host.tld) {
                        a.p_home
                    } else {
                        a.p_else
                    };
                    if (h as u32) < popular_hosts {
                        p = (p * POPULAR_BOOST).min(1.0);
                    }
                    if rng.chance(p) {
                        a.coverage * (0.5 + 0.5 * unit(&mut rng))
                    } else {
                        0.0
                    }
                })
                .collect()
        })
        .collect();
    let by_host = Zipf::new(preset.hosts, ZIPF_HOSTS);
    let popular_uris = preset.uri_rs / 100;
    let mut uris = Vec::with_capacity(preset.uri_rs as usize);
    let mut holdings = Vec::with_capacity(preset.uri_rs as usize);
    for u in 0..preset.uri_rs {
        let h = by_host.sample(&mut rng) as usize;
        let uri_r = format!("http://{}/p{u}", hosts[h].name);
        let boost = if u < popular_uris {
            POPULAR_MEMENTOS
        } else {
            1.0
        };
        let mut held = Vec::new();
        for (a, model) in archives.iter().enumerate() {
            if rng.chance(coverage[h][a]) || rng.chance(model.scatter) {
                // Pareto: scale / U^(1/alpha), U in (0, 1].
                let u = 1.0 - unit(&mut rng);
                let n = (model.scale * boost / u.powf(1.0 / PARETO_ALPHA)).min(MAX_MEMENTOS);
                held.push((a as u16, n.ceil().max(1.0) as u32));
            }
        }
        uris.push(Uri {
            keys: UriKeys::of_uri(&uri_r),
            uri_r,
        });
        holdings.push(held);
    }
    let by_uri = Zipf::new(preset.uri_rs, ZIPF_URIS);
    let by_client = Zipf::new(clients.min(MAX_CLIENTS), ZIPF_CLIENTS);
    let mut client_rng = Rng::new(seed ^ CLIENT_SEED);
    let requests = (0..preset.requests)
        .map(|_| {
            let u = by_uri.sample(&mut rng);
            Request {
                uri: u,
                holdings: u,
                client: (clients > 0).then(|| client_address(by_client.sample(&mut client_rng))),
            }
        })
        .collect();
    Stream {
        source: format!("SYNTHETIC preset {}, seed {seed}", preset.name),
        archives: archives
            .iter()
            .map(|a| Archive {
                id: a.id.to_string(),
                always: false,
                latency_ms: Some(a.latency_ms),
            })
            .collect(),
        uris,
        holdings,
        requests,
        seed,
    }
}

/// The share of the stream's URI-Rs each archive holds at least one memento for.
pub fn held_shares(stream: &Stream) -> Vec<f64> {
    let mut n = vec![0u64; stream.archives.len()];
    for h in &stream.holdings {
        for &(a, _) in h {
            n[usize::from(a)] += 1;
        }
    }
    let total = stream.holdings.len().max(1) as f64;
    n.into_iter().map(|c| c as f64 / total).collect()
}
