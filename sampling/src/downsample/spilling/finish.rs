//! [`SpillSampler::finish`]: the two merges, one (year, domain) at a time.

use super::{DomainRow, Left, SpillSampler, Summary};
use crate::downsample::results::{DomainCounts, Picked, Shortfall, YearInput};
use crate::downsample::rules::seeded_hash;
use std::collections::BTreeMap;

/// One (year, domain) as the merge passes it: its first root and the `pool` non-roots with the
/// smallest priorities, in order (what [`Sampler`](super::super::Sampler)'s pool ends with).
#[derive(Default)]
struct Group {
    bucket: u16,
    domain: String,
    n: u64,
    root: Option<(String, String)>,
    keep: Vec<(String, String)>,
}

impl SpillSampler {
    /// The long-tail reduction (`fraction` of the single-URL domains, by seeded hash, in every
    /// bucket with more than `threshold` domains), then Eq. 1's picks, in (bucket, domain, root
    /// first, priority) order: every URL pushed comes out once through `out`, picked or not.
    /// The runs are deleted at the end; an error (a write, or a run read back torn or
    /// garbled) stops it.
    pub fn finish(
        mut self,
        threshold: u64,
        fraction: f64,
        out: &mut impl FnMut(Left<'_>) -> Result<(), String>,
    ) -> Result<Summary, String> {
        let mut s = Summary {
            urls: self.pushed,
            before_long_tail: self.count_years()?,
            ..Summary::default()
        };
        s.long_tail.buckets = s
            .before_long_tail
            .iter()
            .filter(|(_, y)| y.domains > threshold)
            .map(|(&b, _)| b)
            .collect();
        let mut g = Group::default();
        for c in self.candidates.merge()? {
            let c = c?;
            if g.n > 0 && (g.bucket, g.domain.as_str()) != (c.bucket, c.domain.as_str()) {
                self.close(std::mem::take(&mut g), fraction, &mut s, out)?;
            }
            if g.n == 0 {
                (g.bucket, g.domain) = (c.bucket, c.domain);
            }
            g.n += 1;
            if !c.not_root && g.root.is_none() {
                g.root = Some((c.url, c.meta));
            } else if c.not_root && g.keep.len() < self.pool {
                g.keep.push((c.url, c.meta));
            } else {
                out(Left::Downsampled(&c.url))?;
            }
        }
        if g.n > 0 {
            self.close(g, fraction, &mut s, out)?;
        }
        let mut last: Option<(String, DomainCounts)> = None;
        for r in self.domains.merge()? {
            let r = r?;
            match &mut last {
                Some((d, c)) if *d == r.domain => {
                    c.before += r.before;
                    c.after += r.after;
                }
                _ => {
                    if let Some((d, c)) = last.take() {
                        s.domains.add(&d, c);
                    }
                    let c = DomainCounts {
                        before: r.before,
                        after: r.after,
                    };
                    last = Some((r.domain, c));
                }
            }
        }
        if let Some((d, c)) = last {
            s.domains.add(&d, c);
        }
        self.candidates.remove();
        self.domains.remove();
        Ok(s)
    }

    /// The first merge: each bucket's domains and URLs, with its K and C.
    fn count_years(&mut self) -> Result<BTreeMap<u16, YearInput>, String> {
        let mut years: BTreeMap<u16, YearInput> = BTreeMap::new();
        let mut last: Option<(u16, String)> = None;
        for c in self.candidates.merge()? {
            let c = c?;
            let y = years.entry(c.bucket).or_insert_with(|| YearInput {
                k: self.params.k_for(c.bucket),
                c: self.params.c,
                ..YearInput::default()
            });
            y.urls += 1;
            if !matches!(&last, Some((b, d)) if *b == c.bucket && *d == c.domain) {
                y.domains += 1;
                last = Some((c.bucket, c.domain));
            }
        }
        Ok(years)
    }

    /// One (year, domain) done: dropped by the long tail, or picked from.
    fn close(
        &mut self,
        g: Group,
        fraction: f64,
        s: &mut Summary,
        out: &mut impl FnMut(Left<'_>) -> Result<(), String>,
    ) -> Result<(), String> {
        let cut = (fraction.clamp(0.0, 1.0) * u64::MAX as f64) as u64;
        let seed = self.seed ^ 0x5A5A_5A5A_5A5A_5A5A;
        let over = s.long_tail.buckets.contains(&g.bucket);
        if over && g.n == 1 && seeded_hash(seed, &g.domain) < cut {
            // A single-URL domain holds its one URL as its root or in its pool.
            if let Some(url) = g.root.as_ref().or(g.keep.first()).map(|r| &r.0) {
                out(Left::LongTail(url))?;
            }
            s.long_tail.dropped_domains += 1;
            return self.domains.push(DomainRow {
                domain: g.domain,
                before: 1,
                after: 0,
            });
        }
        let y = s.eq1.entry(g.bucket).or_insert_with(|| YearInput {
            k: self.params.k_for(g.bucket),
            c: self.params.c,
            ..YearInput::default()
        });
        y.domains += 1;
        y.urls += g.n;
        let k = self.params.target(g.n, g.bucket) as usize;
        let mut picked = 0;
        // Root first, then by priority, while the target is not met: the root is picked if
        // k > 0, then k less it of the pool (Sampler::finish's rule).
        let root = g.root.map(|r| (r, true));
        for ((url, meta), root) in root
            .into_iter()
            .chain(g.keep.into_iter().map(|r| (r, false)))
        {
            if picked < k {
                let p = Picked {
                    bucket: g.bucket,
                    domain: g.domain.clone(),
                    url,
                    root,
                    meta,
                };
                out(Left::Picked(&p))?;
                picked += 1;
            } else {
                out(Left::Downsampled(&url))?;
            }
        }
        if picked < k {
            s.shortfalls.push(Shortfall {
                year: g.bucket,
                domain: g.domain.clone(),
                urls: g.n,
                target: k as u64,
                sampled: picked as u64,
                pool: self.pool,
            });
        }
        s.picked += picked as u64;
        *s.picked_per_year.entry(g.bucket).or_default() += picked as u64;
        self.domains.push(DomainRow {
            domain: g.domain,
            before: g.n,
            after: picked as u64,
        })
    }
}
