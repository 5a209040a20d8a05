//! The popular domains: the offline stages hand their URLs to this stage (they are counted in
//! `popular_domains`' set_aside, but recorded here, where their fate is known), and they
//! re-enter the sample by a per-year quota (the paper: 20 a year for twitter.com) instead of by
//! their sheer number.
//!
//! The first captures are asked `concurrency`·2 at a time in a window that runs ahead of the
//! decisions, and decided in the pool's order: the picks are the same whatever order the
//! answers arrive in (a window may ask a few URLs past the point where the quota fills; their
//! answers stay in the checkpoint, and they are set aside as not drawn).

use super::first_capture::{classify, Kept};
use super::progress::POPULAR_QUOTA;
use super::sample_file::SampledUrl;
use super::stages::Stages;
use crate::filters::bucket_label;
use crate::{Counters, SetAside};
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::Ordering;

const STAGE: &str = "popular_quota";

/// The URLs of the popular domains, a bounded seeded random subset per domain (bottom-k by
/// seeded hash, so the order is random and independent of the input's).
pub(super) struct PopularPool {
    seed: u64,
    domains: Vec<String>,
    urls: HashMap<String, std::collections::BinaryHeap<(u64, String)>>,
    /// URLs handed over (the stage's `in`) and those the pool had no room for.
    handed: u64,
    overflow: u64,
}

/// Candidates kept per popular domain: enough for 20 a year over 26 years many times over.
pub(super) const POPULAR_POOL: usize = 5_000;

impl PopularPool {
    pub(super) fn new(seed: u64, domains: &[String]) -> PopularPool {
        PopularPool {
            seed,
            domains: domains.iter().map(|d| d.to_ascii_lowercase()).collect(),
            urls: HashMap::new(),
            handed: 0,
            overflow: 0,
        }
    }

    /// Takes a URL of a popular domain; returns the record of the URL that will not be drawn,
    /// if one leaves (this one or the one it displaced), for `set_aside.ndjson`.
    pub(super) fn push(&mut self, url: &str) -> Option<SetAside> {
        self.handed += 1;
        let not_drawn = |url: String, reason: &str| {
            Some(SetAside {
                stage: STAGE,
                url,
                reason: reason.to_string(),
            })
        };
        let host = crate::surt::url_host(url).unwrap_or_default();
        let host = crate::surt::strip_www(&host).to_string();
        let Some(domain) = self
            .domains
            .iter()
            .find(|d| host == **d || host.ends_with(&format!(".{d}")))
        else {
            self.overflow += 1;
            return not_drawn(url.to_string(), "not a popular domain's URL");
        };
        let p = crate::downsample::seeded_hash(self.seed, url);
        let heap = self.urls.entry(domain.clone()).or_default();
        let full = format!("not drawn: beyond the pool of {POPULAR_POOL} URLs of {domain}");
        if heap.len() < POPULAR_POOL {
            heap.push((p, url.to_string()));
            None
        } else if heap.peek().is_some_and(|(top, _)| p < *top) {
            let out = heap.pop().map(|(_, u)| u);
            heap.push((p, url.to_string()));
            self.overflow += 1;
            out.and_then(|u| not_drawn(u, &full))
        } else {
            self.overflow += 1;
            not_drawn(url.to_string(), &full)
        }
    }

    /// URLs in the pool (the quota's work, at most).
    pub(super) fn size(&self) -> u64 {
        self.handed - self.overflow
    }

    /// URLs held (for the engine's memory estimate).
    pub(super) fn len(&self) -> usize {
        self.urls.values().map(|h| h.len()).sum()
    }

    /// Per domain (sorted), its URLs in priority order.
    fn into_ordered(self) -> Vec<(String, Vec<String>)> {
        let mut out: Vec<(String, Vec<String>)> = self
            .urls
            .into_iter()
            .map(|(d, heap)| {
                let mut v = heap.into_vec();
                v.sort();
                (d, v.into_iter().map(|(_, u)| u).collect())
            })
            .collect();
        out.sort();
        out
    }
}

/// Their URLs in seeded random order, first captures asked until every year in range has its
/// quota (or the URLs run out); the rest set aside as not drawn. Returns the stage's counters
/// and the URLs it picked; stops early (counters partial) when the run is cancelled.
pub(super) async fn quota(stages: &Stages<'_>, pool: PopularPool) -> (Counters, Vec<SampledUrl>) {
    use futures::StreamExt;
    let Stages {
        spec,
        progress,
        captures,
        set_aside,
        errors,
        ..
    } = *stages;
    let mut c = Counters {
        input: pool.handed,
        set_aside: pool.overflow,
        ..Counters::default()
    };
    progress.set_total(POPULAR_QUOTA, pool.size());
    let mut picked: Vec<SampledUrl> = Vec::new();
    let aside = |url: String, reason: String, c: &mut Counters| {
        c.set_aside += 1;
        set_aside.write(&SetAside {
            stage: STAGE,
            url,
            reason,
        });
    };
    for (domain, urls) in pool.into_ordered() {
        let mut per_year: BTreeMap<u16, u32> = BTreeMap::new();
        let full = |per_year: &BTreeMap<u16, u32>| {
            (spec.years[0]..=spec.years[1])
                .all(|y| per_year.get(&y).copied().unwrap_or(0) >= spec.popular_quota)
        };
        // Indices, not references, through the stream: a closure over borrowed items is not
        // general enough for the job's spawned future.
        let urls_ref = &urls;
        let mut asked = futures::stream::iter(0..urls.len())
            .map(|i| async move { captures.get(&urls_ref[i], STAGE).await })
            .buffered(spec.concurrency.max(1) * 2);
        let mut decided = 0;
        while !full(&per_year) {
            if progress.cancel.load(Ordering::Relaxed) {
                return (c, picked);
            }
            let Some(answer) = asked.next().await else {
                break;
            };
            let url = urls[decided].clone();
            decided += 1;
            progress.add_done(POPULAR_QUOTA, 1);
            match classify(answer, spec.years) {
                Kept::Sample {
                    bucket,
                    timestamp,
                    mime,
                } => {
                    let year: u16 = timestamp.get(..4).and_then(|y| y.parse().ok()).unwrap_or(0);
                    let n = per_year.entry(year).or_default();
                    if *n < spec.popular_quota {
                        *n += 1;
                        c.output += 1;
                        picked.push(SampledUrl {
                            root: crate::filters::is_root(&url),
                            url,
                            year: bucket_label(bucket),
                            first_capture: timestamp,
                            mime,
                        });
                    } else {
                        let why = format!("popular domain {domain}: the quota for {year} is full");
                        aside(url, why, &mut c);
                    }
                }
                Kept::Aside { reason, .. } => aside(url, reason, &mut c),
                Kept::Error(reason) => {
                    c.errors += 1;
                    errors.write(&SetAside {
                        stage: STAGE,
                        url,
                        reason,
                    });
                }
            }
        }
        drop(asked);
        progress.add_done(POPULAR_QUOTA, (urls.len() - decided) as u64);
        for url in &urls[decided..] {
            let why = format!("popular domain {domain}: not drawn (every year's quota is met)");
            aside(url.clone(), why, &mut c);
        }
    }
    (c, picked)
}
