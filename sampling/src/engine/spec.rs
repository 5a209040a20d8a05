//! A job's spec, its defaults, and the checks that name the field a bad spec gets wrong.

use crate::cdx::Dialect;
use crate::downsample::Downsampling;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A job's spec: the same keys in the JSON of `POST /admin/sampling/jobs` and the TOML of
/// `tmproxy sample --spec`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Spec {
    /// An index file (ZipNum or CDX lines, plain or gzip) or an http(s) URL of one.
    pub input: String,
    /// The CDX API endpoint.
    pub cdx_api: String,
    /// `ia` or `pywb`; detected from an answer when absent.
    #[serde(default)]
    pub dialect: Option<Dialect>,
    #[serde(default)]
    pub seed: u64,
    /// First and last year of first capture kept (inclusive).
    #[serde(default = "default_years")]
    pub years: [u16; 2],
    #[serde(default = "default_concurrency")]
    pub concurrency: usize,
    /// CDX requests per second (0 = unlimited).
    #[serde(default)]
    pub rate_limit: f64,
    #[serde(default)]
    pub popular_domains: Vec<String>,
    /// First captures per year a popular domain re-enters with (the paper: 20 for twitter.com).
    #[serde(default = "default_popular_quota")]
    pub popular_quota: u32,
    #[serde(default)]
    pub downsampling: DownsamplingSpec,
    /// Candidates kept per (year, domain) for downsampling to choose from. Absent: Eq. 1's
    /// largest target over `years` (what no N can exceed), so no target is cut short; smaller
    /// saves memory, and a target it cannot meet is listed in `shortfalls.json`.
    #[serde(default)]
    pub candidate_pool: Option<usize>,
    #[serde(default = "default_long_tail_threshold")]
    pub long_tail_threshold: u64,
    #[serde(default = "default_long_tail_fraction")]
    pub long_tail_fraction: f64,
    #[serde(default)]
    pub collect_timemaps: bool,
    #[serde(default)]
    pub hydrate_revisits: bool,
}

/// Eq. 1's parameters in a spec: K per year (Table 7 for years not given), C, the log's base.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DownsamplingSpec {
    /// `{"2004": 5, …}`; a year ≤ 2000 is the 1996–2000 bucket.
    #[serde(default)]
    pub k: BTreeMap<String, f64>,
    #[serde(default = "default_c")]
    pub c: f64,
    /// `e` (default), `10`, `2` or any number > 1.
    #[serde(default = "default_log_base")]
    pub log_base: String,
}

impl Default for DownsamplingSpec {
    fn default() -> Self {
        DownsamplingSpec {
            k: BTreeMap::new(),
            c: default_c(),
            log_base: default_log_base(),
        }
    }
}

fn default_years() -> [u16; 2] {
    [1996, 2021]
}
fn default_popular_quota() -> u32 {
    20
}
fn default_concurrency() -> usize {
    4
}
fn default_long_tail_threshold() -> u64 {
    900_000
}
fn default_long_tail_fraction() -> f64 {
    0.9
}
fn default_c() -> f64 {
    1.0
}
fn default_log_base() -> String {
    "e".to_string()
}

/// A spec that cannot run: the field and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpecError {
    pub field: String,
    pub reason: String,
}

impl std::fmt::Display for SpecError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.reason)
    }
}

fn bad(field: &str, reason: impl Into<String>) -> SpecError {
    SpecError {
        field: field.to_string(),
        reason: reason.into(),
    }
}

impl Spec {
    /// Checks every field; the first problem names its field.
    pub fn validate(&self) -> Result<(), SpecError> {
        if self.input.trim().is_empty() {
            return Err(bad("input", "must not be empty"));
        }
        if !(self.cdx_api.starts_with("http://") || self.cdx_api.starts_with("https://")) {
            return Err(bad("cdx_api", "must be an http(s) URL"));
        }
        let [from, to] = self.years;
        if from < 1996 || to < from || to > 2100 {
            return Err(bad(
                "years",
                "must be [first, last] with 1996 ≤ first ≤ last",
            ));
        }
        if self.concurrency == 0 || self.concurrency > 256 {
            return Err(bad("concurrency", "must be 1–256"));
        }
        if !(self.rate_limit.is_finite() && self.rate_limit >= 0.0) {
            return Err(bad("rate_limit", "must be a number ≥ 0 (0 = unlimited)"));
        }
        if !(0.0..=1.0).contains(&self.long_tail_fraction) {
            return Err(bad("long_tail_fraction", "must be between 0 and 1"));
        }
        let max = crate::downsample::MAX_POOL;
        if self.candidate_pool.is_some_and(|p| p == 0 || p > max) {
            return Err(bad("candidate_pool", format!("must be 1–{max}")));
        }
        self.downsampling_params()?;
        Ok(())
    }

    /// The candidate pool per (year, domain): the spec's, else Eq. 1's largest target over
    /// `years` (bounded by [`MAX_POOL`](crate::downsample::MAX_POOL)).
    pub fn pool(&self, params: &Downsampling) -> usize {
        self.candidate_pool.unwrap_or_else(|| {
            let largest = params.largest_target(self.years);
            usize::try_from(largest)
                .unwrap_or(usize::MAX)
                .clamp(1, crate::downsample::MAX_POOL)
        })
    }

    /// The fields that change a run's result, in the checkpoint's header: a directory whose
    /// checkpoint has another hash is refused. Not in it: `concurrency` and `rate_limit` (how
    /// fast, not what) and `collect_timemaps` (a run may add TimeMaps to a finished sample).
    pub const RESULT_FIELDS: &'static str = "input cdx_api dialect seed years popular_domains \
         popular_quota downsampling candidate_pool long_tail_threshold long_tail_fraction \
         hydrate_revisits";

    /// The hash of [`Spec::RESULT_FIELDS`]: 128 bits of two seeded 64-bit hashes of their JSON
    /// (stable: the struct's field order, `k` a sorted map), as hex.
    pub fn result_hash(&self) -> String {
        let fields = serde_json::json!([
            self.input,
            self.cdx_api,
            self.dialect,
            self.seed,
            self.years,
            self.popular_domains,
            self.popular_quota,
            self.downsampling,
            self.candidate_pool,
            self.long_tail_threshold,
            self.long_tail_fraction,
            self.hydrate_revisits,
        ])
        .to_string();
        let h = crate::downsample::seeded_hash;
        format!("{:016x}{:016x}", h(1, &fields), h(2, &fields))
    }

    /// Eq. 1's parameters from the spec.
    pub fn downsampling_params(&self) -> Result<Downsampling, SpecError> {
        let mut p = Downsampling::default();
        for (year, k) in &self.downsampling.k {
            let y: u16 = year
                .parse()
                .map_err(|_| bad("downsampling.k", format!("`{year}` is not a year")))?;
            if !(k.is_finite() && *k >= 0.0) {
                return Err(bad("downsampling.k", format!("K for {year} must be ≥ 0")));
            }
            p.k.insert(if y <= 2000 { 2000 } else { y }, *k);
        }
        if !(self.downsampling.c.is_finite() && self.downsampling.c >= 0.0) {
            return Err(bad("downsampling.c", "must be ≥ 0"));
        }
        p.c = self.downsampling.c;
        p.log_base = match self.downsampling.log_base.as_str() {
            "e" => std::f64::consts::E,
            other => match other.parse::<f64>() {
                Ok(b) if b > 1.0 && b.is_finite() => b,
                _ => return Err(bad("downsampling.log_base", "must be `e` or a number > 1")),
            },
        };
        Ok(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A valid spec with every field written out, the paper's defaults where it has them.
    fn plain() -> Spec {
        Spec {
            input: "x".into(),
            cdx_api: "http://127.0.0.1:1/cdx".into(),
            dialect: None,
            seed: 0,
            years: [1996, 2021],
            concurrency: 4,
            rate_limit: 0.0,
            popular_domains: vec![],
            popular_quota: 20,
            downsampling: DownsamplingSpec::default(),
            candidate_pool: None,
            long_tail_threshold: 900_000,
            long_tail_fraction: 0.9,
            collect_timemaps: false,
            hydrate_revisits: false,
        }
    }

    #[test]
    fn a_bad_spec_names_its_field() {
        let ok = plain();
        assert_eq!(ok.validate(), Ok(()));
        let field = |s: Spec| s.validate().map_err(|e| e.field);
        assert_eq!(
            field(Spec {
                years: [2000, 1999],
                ..ok.clone()
            }),
            Err("years".into())
        );
        assert_eq!(
            field(Spec {
                cdx_api: "ftp://x".into(),
                ..ok.clone()
            }),
            Err("cdx_api".into())
        );
        assert_eq!(
            field(Spec {
                rate_limit: -1.0,
                ..ok.clone()
            }),
            Err("rate_limit".into())
        );
        let mut d = ok.clone();
        d.downsampling.log_base = "1".into();
        assert_eq!(field(d), Err("downsampling.log_base".into()));
        let mut d = ok.clone();
        d.downsampling.k.insert("twenty".into(), 1.0);
        assert_eq!(field(d), Err("downsampling.k".into()));
        assert_eq!(
            field(Spec {
                candidate_pool: Some(0),
                ..ok.clone()
            }),
            Err("candidate_pool".into())
        );
        let mut d = ok.clone();
        d.downsampling.k.insert("1998".into(), 4.0);
        assert_eq!(d.downsampling_params().map(|p| p.k_for(2000)), Ok(4.0));
        // The default pool is Eq. 1's largest target (K = 5 in 2004: 5·ln(2^64) + 1 = 223).
        assert_eq!(ok.pool(&Downsampling::default()), 223);
    }

    #[test]
    fn the_result_hash_follows_what_changes_the_result_only() {
        let a = plain();
        let faster = Spec {
            concurrency: 64,
            rate_limit: 10.0,
            collect_timemaps: true,
            ..a.clone()
        };
        assert_eq!(a.result_hash(), faster.result_hash());
        assert_eq!(a.result_hash().len(), 32);
        for other in [
            Spec {
                seed: 1,
                ..a.clone()
            },
            Spec {
                years: [2010, 2021],
                ..a.clone()
            },
            Spec {
                popular_quota: 5,
                ..a.clone()
            },
            Spec {
                candidate_pool: Some(10),
                ..a.clone()
            },
            Spec {
                hydrate_revisits: true,
                ..a.clone()
            },
        ] {
            assert_ne!(a.result_hash(), other.result_hash(), "{other:?}");
        }
    }
}
