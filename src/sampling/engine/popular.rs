//! The popular domains: the offline stages set their URLs aside, and they re-enter the sample
//! by a per-year quota (the paper: 20 a year for twitter.com) instead of by their sheer number.

use super::first_capture::{classify, Kept};
use super::{SampledUrl, Stages};
use crate::sampling::filters::bucket_label;
use crate::sampling::{Counters, SetAside};
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::Ordering;

/// The URLs of the popular domains, a bounded seeded random subset per domain (bottom-k by
/// seeded hash, so the order is random and independent of the input's).
pub(super) struct PopularPool {
    seed: u64,
    domains: Vec<String>,
    urls: HashMap<String, std::collections::BinaryHeap<(u64, String)>>,
}

/// Candidates kept per popular domain: enough for 20 a year over 26 years many times over.
const POPULAR_POOL: usize = 5_000;

impl PopularPool {
    pub(super) fn new(seed: u64, domains: &[String]) -> PopularPool {
        PopularPool {
            seed,
            domains: domains.iter().map(|d| d.to_ascii_lowercase()).collect(),
            urls: HashMap::new(),
        }
    }

    pub(super) fn push(&mut self, url: &str) {
        let Some(host) = crate::sampling::surt::url_host(url) else {
            return;
        };
        let host = crate::sampling::surt::strip_www(&host).to_string();
        let Some(domain) = self
            .domains
            .iter()
            .find(|d| host == **d || host.ends_with(&format!(".{d}")))
        else {
            return;
        };
        let p = crate::sampling::downsample::seeded_hash(self.seed, url);
        let heap = self.urls.entry(domain.clone()).or_default();
        if heap.len() < POPULAR_POOL {
            heap.push((p, url.to_string()));
        } else if heap.peek().is_some_and(|(top, _)| p < *top) {
            heap.pop();
            heap.push((p, url.to_string()));
        }
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
/// quota (or the URLs run out). Returns the stage's counters and the URLs it picked.
pub(super) async fn quota(stages: &Stages<'_>, pool: PopularPool) -> (Counters, Vec<SampledUrl>) {
    let Stages {
        spec,
        progress,
        captures,
        set_aside,
        errors,
    } = *stages;
    let mut quota_c = Counters::default();
    let mut quota_picked: Vec<SampledUrl> = Vec::new();
    for (domain, urls) in pool.into_ordered() {
        let mut per_year: BTreeMap<u16, u32> = BTreeMap::new();
        let full = |per_year: &BTreeMap<u16, u32>| {
            (spec.years[0]..=spec.years[1])
                .all(|y| per_year.get(&y).copied().unwrap_or(0) >= spec.popular_quota)
        };
        for url in urls {
            if full(&per_year) || progress.cancel.load(Ordering::Relaxed) {
                break;
            }
            quota_c.input += 1;
            let answer = captures.get(&url).await;
            let reason = match classify(answer, spec.years) {
                Kept::Sample {
                    bucket,
                    timestamp,
                    mime,
                } => {
                    let year: u16 = timestamp.get(..4).and_then(|y| y.parse().ok()).unwrap_or(0);
                    let n = per_year.entry(year).or_default();
                    if *n < spec.popular_quota {
                        *n += 1;
                        quota_c.output += 1;
                        quota_picked.push(SampledUrl {
                            url: url.clone(),
                            year: bucket_label(bucket),
                            root: crate::sampling::filters::is_root(&url),
                            first_capture: timestamp,
                            mime,
                        });
                        continue;
                    }
                    format!("popular domain {domain}: the quota for {year} is full")
                }
                Kept::Aside { reason, .. } => reason,
                Kept::Error(reason) => {
                    quota_c.errors += 1;
                    errors.write(&SetAside {
                        stage: "popular_quota",
                        url: url.clone(),
                        reason,
                    });
                    continue;
                }
            };
            quota_c.set_aside += 1;
            set_aside.write(&SetAside {
                stage: "popular_quota",
                url,
                reason,
            });
        }
    }
    (quota_c, quota_picked)
}
