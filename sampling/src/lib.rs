//! The Not Your Parents' Web sampling method (`docs/sampling.md`) as streaming stages
//! with counters: reading index lines, SURT handling, the URL filters and heuristics, log
//! downsampling with the long-tail reduction, revisit hydration (pure), the CDX client, the
//! engine that runs the stages, and the jobs a server runs ([`jobs`]). Built on `tmproxy-core`
//! and `tmproxy-disk` only: the server (`tmproxy sample`, `/admin/sampling/jobs`) hands in its
//! `[sampling]` values, its clock and the feed's fetcher, and gives the jobs' refusals
//! ([`jobs::JobError`]) their HTTP statuses itself.

pub mod cdx;
pub mod downsample;
pub mod engine;
pub(crate) mod external_sort;
pub(crate) mod filters;
pub mod index;
pub mod job_files;
pub mod jobs;
pub mod offline;
pub mod pack;
pub mod reading;
pub(crate) mod report;
pub(crate) mod revisit;
pub mod surt;

use serde::Serialize;

/// One stage's counts: lines or URLs in, passed on, set aside (with a reason, kept), errors.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Counters {
    #[serde(rename = "in")]
    pub input: u64,
    #[serde(rename = "out")]
    pub output: u64,
    pub set_aside: u64,
    pub errors: u64,
}

/// A row of the funnel (`funnel.json`): the stage's name and its counters, in pipeline order.
///
/// The funnel chains: a row's `in` is the `out` of the main-chain row before it plus the `out`
/// of every side row whose `into` names it. A side row (re-entered roots, the popular quota,
/// root upsampling) says where its `out` goes (`into`) and, when its URLs come from another
/// stage rather than being new, which stage handed them over (`from`: its `in` is that stage's
/// `set_aside`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FunnelRow {
    pub stage: &'static str,
    #[serde(flatten)]
    pub counters: Counters,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub into: Option<&'static str>,
}

impl FunnelRow {
    /// A main-chain row.
    pub fn main(stage: &'static str, counters: Counters) -> FunnelRow {
        FunnelRow {
            stage,
            counters,
            from: None,
            into: None,
        }
    }
}

/// A URL a stage did not pass on, and why: nothing leaves the pipeline without a record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SetAside {
    pub stage: &'static str,
    pub url: String,
    pub reason: String,
}
