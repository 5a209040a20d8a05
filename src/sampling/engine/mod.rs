//! The sampling engine: a job spec in, a sample out, every stage streamed and counted, resumable.
//! `tmproxy sample` runs it from the command line; the admin jobs will run the same engine.
//!
//! Stages after the offline ones: first capture of each candidate through the CDX API (in
//! parallel, rate-limited), the MIME filter (`text/html`), the year filter (1996 on, within
//! `years`), the popular domains' quota, root-URL upsampling (a domain without a root URL gets
//! `https://host/` if it was first archived 1996–2002, within `years`), the long-tail reduction,
//! log downsampling, and optionally each sampled URL's TimeMap through CDX pagination (revisits
//! hydrated). Every CDX stage asks `concurrency` at a time and decides in a fixed order, so the
//! result depends on the seed, never on arrival order.
//!
//! Files in the output directory: `sample.ndjson` (`url, year, root, first_capture, mime`),
//! `funnel.json` (`[{stage, in, out, set_aside, errors, from?, into?}]`, pipeline order, chained:
//! see [`FunnelRow`]), `set_aside.ndjson` and `errors.ndjson` (every URL a stage did not pass on,
//! with its stage and reason: with the sample, each URL exactly once), `retries.ndjson` (every
//! CDX retry), `shortfalls.json` (targets the candidate pool could not meet), `report.md`,
//! `ccdf.svg`, `progress.json` (the counters, see [`progress`], saved at each stage change and every
//! few seconds), `timemaps/` when collected, and the checkpoints: `first_captures.ndjson` (a header
//! with the spec's result hash, then each CDX answer appended as it arrives) and
//! `timemaps/index.ndjson` (each TimeMap once its file is complete). A run that stops (killed,
//! cancelled) and starts again over the same directory reuses them instead of asking again, and
//! ends with the uninterrupted run's sample; a directory checkpointed for another spec is
//! refused.
//!
//! Memory: the offline stages keep one entry per host (its root passed on), nothing per line;
//! candidates stream to the CDX stage through a bounded channel; the sampler keeps at most
//! `candidate_pool` URLs per (year, domain), the quota 5,000 per popular domain; the
//! checkpoint's answers are held on resume as 32 bytes each (a 128-bit hash of the URL and a
//! packed answer: `resumed.rs`); the TimeMap stage holds a byte offset per sampled URL. The
//! sample itself is held until written (BENCHMARKS.md, "[sampling-2] A month-long run at
//! scale", says what grows with what).

mod checkpoint;
mod first_capture;
mod input;
mod limits;
mod live;
mod ndjson;
mod popular;
pub mod progress;
mod resumed;
mod roots;
mod spec;
mod timemaps;

pub use limits::{Limits, MemoryUse};
pub use live::Progress;
pub use spec::{DownsamplingSpec, Spec, SpecError};

use super::cdx::{CdxClient, CdxSettings};
use super::downsample::{DomainCounts, Finished, Picked, Sampler, YearInput};
use super::filters::bucket_label;
use super::offline::Candidate;
use super::{Counters, FunnelRow, SetAside};
use checkpoint::{read_checkpoint, FirstCaptures};
use ndjson::{write_ndjson, Log};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// One line of `sample.ndjson`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SampledUrl {
    pub url: String,
    /// The year bucket: `1996-2000` or the year.
    pub year: String,
    pub root: bool,
    pub first_capture: String,
    pub mime: String,
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub sample: usize,
    pub funnel: Vec<FunnelRow>,
    pub cancelled: bool,
    /// Where the run did not do what the spec says (targets the candidate pool could not
    /// meet): shown by the CLI and the job's status.
    pub warnings: Vec<String>,
}

/// What the stages after the offline ones share.
#[derive(Clone, Copy)]
struct Stages<'a> {
    spec: &'a Spec,
    progress: &'a Progress,
    /// First captures, the checkpoint's first.
    captures: &'a FirstCaptures,
    /// `set_aside.ndjson`: every URL a stage did not pass on.
    set_aside: &'a Log,
    /// `errors.ndjson`: CDX answers that were not a clean 200.
    errors: &'a Log,
}

impl Stages<'_> {
    /// A URL the sampler let go before the end (its pool had better ones, or a second root).
    fn downsampled(&self, url: &str) {
        self.set_aside.write(&SetAside {
            stage: "downsampling",
            url: url.to_string(),
            reason: "downsampled".to_string(),
        });
    }
}

/// Runs `spec` into `out`. A previous run's checkpoint in `out` is reused if it was written
/// for the same spec (its result hash), refused otherwise. The progress is saved to
/// `out/progress.json` at every stage change, every [`live::SAVE_EVERY`] and at the end.
pub async fn run(spec: &Spec, out: &Path, progress: Arc<Progress>) -> Result<Outcome, String> {
    run_with(spec, out, progress, Limits::default()).await
}

/// [`run`] under `limits` (the `[sampling]` ones).
pub async fn run_with(
    spec: &Spec,
    out: &Path,
    progress: Arc<Progress>,
    limits: Limits,
) -> Result<Outcome, String> {
    let saver = {
        let p = progress.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(live::SAVE_EVERY).await;
                p.save();
            }
        })
    };
    let result = run_stages(spec, out, &progress, limits).await;
    saver.abort();
    progress.save();
    result
}

async fn run_stages(
    spec: &Spec,
    out: &Path,
    progress: &Arc<Progress>,
    limits: Limits,
) -> Result<Outcome, String> {
    spec.validate().map_err(|e| e.to_string())?;
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let params = spec.downsampling_params().map_err(|e| e.to_string())?;
    let pool = spec.pool(&params);

    // The checkpoint: answers already had, for this spec only.
    let checkpoint = out.join("first_captures.ndjson");
    let resumed = read_checkpoint(&checkpoint)?;
    let claim = checkpoint::claim(&checkpoint, spec, !resumed.is_empty())?;
    // The saved progress of a run of the same spec over the same checkpoint: its done work is
    // this run's floor (this run walks the input again, reusing the answers).
    let hash = spec.result_hash();
    let saved = Progress::read_saved(out)
        .filter(|s| s.spec_hash == hash && claim == checkpoint::Claim::Same);
    progress.begin(
        progress::Snapshot {
            spec_hash: hash,
            collect_timemaps: spec.collect_timemaps,
            popular_cap: spec.popular_domains.len() as u64 * popular::POPULAR_POOL as u64,
            roots_window: roots::window(spec.years).is_some(),
            ..progress::Snapshot::default()
        },
        saved.as_ref(),
        out.join("progress.json"),
    );
    if claim == checkpoint::Claim::Adopted {
        let w = checkpoint::ADOPTED;
        tracing::warn!(checkpoint = %checkpoint.display(), "{w}");
        progress.warn(w);
    }
    progress
        .resumed_answers
        .store(resumed.len() as u64, Ordering::Relaxed);
    let resumed_bytes = resumed.bytes();
    progress
        .memory
        .resumed
        .store(resumed_bytes, Ordering::Relaxed);
    progress.memory.check(limits.max_memory)?;
    // Written through: every answer is in the file once written, so it is never flushed.
    let answers = Log::open_checkpoint(&checkpoint)?;
    let set_aside = Arc::new(Log::open(&out.join("set_aside.ndjson"), false)?);
    let errors = Log::open(&out.join("errors.ndjson"), false)?;
    // Appended across runs (a retry happened, whether or not its answer is reused later) and
    // written through, so a kill does not lose the last ones: retries are few beside answers.
    let retries = Log {
        write_through: true,
        ..Log::open(&out.join("retries.ndjson"), true)?
    };

    let dialect = match spec.dialect {
        Some(d) => d,
        None => super::cdx::detect(&spec.cdx_api, "http://example.com/").await?,
    };
    let client = CdxClient::new(CdxSettings {
        concurrency: spec.concurrency,
        rate_limit: spec.rate_limit,
        ..CdxSettings::new(&spec.cdx_api, dialect)
    })?;
    let captures = FirstCaptures {
        client,
        resumed,
        answers,
        retries,
        progress: progress.clone(),
    };
    let stages = Stages {
        spec,
        progress,
        captures: &captures,
        set_aside: &set_aside,
        errors: &errors,
    };

    progress.set_stage("offline");
    let input = input::local_input(&spec.input, out, limits.read.max_input_bytes).await?;
    if let Ok(meta) = std::fs::metadata(&input) {
        progress.input_size.store(meta.len(), Ordering::Relaxed);
    }
    let (tx, rx) = tokio::sync::mpsc::channel::<Candidate>(1024);
    let offline = input::spawn_offline(
        input,
        spec.popular_domains.clone(),
        spec.seed,
        tx,
        set_aside.clone(),
        progress.clone(),
        limits,
    );

    progress.memory.pool.store(pool as u64, Ordering::Relaxed);
    let mut sampler = Sampler::new(spec.seed, params, pool);
    progress.set_stage("first_capture");
    let firsts = first_capture::first_captures(&stages, rx, &mut sampler).await;
    let kept = firsts.years.output;
    progress.memory.set_sampler(sampler.domains(), kept);
    let (mut funnel, popular_pool) = match offline.await {
        Ok(r) => r?,
        Err(e) => return Err(format!("offline stages: {e}")),
    };
    // A stop (cancel, or the server shutting down) ends the run here or at any later stage,
    // before the sample is written: a stage cut short must not pass for a finished one (the
    // popular quota half filled, the roots half asked). The answers had so far are in the
    // checkpoint; the resumed run goes through every stage again without asking them again.
    let stopped = |funnel: Vec<FunnelRow>| {
        set_aside.flush();
        errors.flush();
        captures.retries.flush();
        Outcome {
            sample: 0,
            funnel,
            cancelled: true,
            warnings: progress.warnings(),
        }
    };
    if progress.cancel.load(Ordering::Relaxed) {
        return Ok(stopped(funnel));
    }
    progress.memory.check(limits.max_memory)?;
    funnel.push(FunnelRow::main("first_capture", firsts.first_capture));
    funnel.push(FunnelRow::main("mime_html", firsts.mime));
    funnel.push(FunnelRow::main("years", firsts.years));

    progress.set_stage("popular_quota");
    let (quota_c, quota_picked) = popular::quota(&stages, popular_pool).await;
    if progress.cancel.load(Ordering::Relaxed) {
        return Ok(stopped(funnel));
    }
    funnel.push(FunnelRow {
        from: Some("popular_domains"),
        into: Some("sample"),
        ..FunnelRow::main("popular_quota", quota_c)
    });

    progress.set_stage("root_upsampling");
    let up = roots::upsample_roots(
        &stages,
        &firsts.domains,
        &firsts.domains_with_root,
        &mut sampler,
    )
    .await;
    if progress.cancel.load(Ordering::Relaxed) {
        return Ok(stopped(funnel));
    }
    funnel.push(FunnelRow {
        into: Some("long_tail"),
        ..FunnelRow::main("root_upsampling", up)
    });

    progress.set_stage("downsampling");
    let (finished, years) = downsample(&stages, sampler, &mut funnel);
    let sample = sample_of(&finished.picked, quota_picked);
    let n = sample.len() as u64;
    funnel.push(FunnelRow::main(
        "sample",
        Counters {
            input: n,
            output: n,
            ..Counters::default()
        },
    ));
    progress.sampled.store(n, Ordering::Relaxed);
    write_ndjson(&out.join("sample.ndjson"), &sample)?;
    if !finished.shortfalls.is_empty() {
        progress.warn(&format!(
            "{} (year, domain) targets of Eq. 1 are above the candidate pool of {pool}: \
             their sample is short, see shortfalls.json (raise candidate_pool)",
            finished.shortfalls.len()
        ));
    }
    let warnings = progress.warnings();
    let text = serde_json::to_string_pretty(&finished.shortfalls).map_err(|e| e.to_string())?;
    std::fs::write(out.join("shortfalls.json"), text + "\n").map_err(|e| e.to_string())?;

    if spec.collect_timemaps {
        progress.set_stage("timemaps");
        let tm = timemaps::collect_timemaps(
            &captures,
            &errors,
            &sample,
            out,
            spec.hydrate_revisits,
            spec.concurrency,
            progress,
        )
        .await?;
        if progress.cancel.load(Ordering::Relaxed) {
            return Ok(stopped(funnel));
        }
        funnel.push(FunnelRow::main("timemaps", tm));
    }
    set_aside.flush();
    errors.flush();
    captures.retries.flush();
    write_reports(
        out,
        &funnel,
        &finished.counts,
        &years,
        &finished.picked,
        &sample,
    )?;
    progress.set_stage("done");
    Ok(Outcome {
        sample: sample.len(),
        funnel,
        cancelled: false,
        warnings,
    })
}

/// The sampler's years on either side of the long-tail reduction (the report's Table 7).
struct Years {
    before_long_tail: BTreeMap<u16, YearInput>,
    eq1: BTreeMap<u16, YearInput>,
}

/// The long-tail reduction, then log downsampling, each with its funnel row; every URL either
/// drops is in `set_aside.ndjson` (stage `long_tail`, or `downsampling` with `downsampled`).
/// The per-domain counts' `before` is taken ahead of the long tail, so the domains it drops
/// still count (the report's CCDF).
fn downsample(
    stages: &Stages<'_>,
    mut sampler: Sampler,
    funnel: &mut Vec<FunnelRow>,
) -> (Finished, Years) {
    let spec = stages.spec;
    let before = sampler.urls();
    stages.progress.set_total(progress::DOWNSAMPLING, before);
    let before_long_tail = sampler.per_year();
    let urls_per_domain = sampler.urls_per_domain();
    let reason = format!(
        "long_tail: a single-URL domain in a year with more than {} domains",
        spec.long_tail_threshold
    );
    let lt = sampler.reduce_long_tail(
        spec.long_tail_threshold,
        spec.long_tail_fraction,
        &mut |_, _, url| {
            stages.set_aside.write(&SetAside {
                stage: "long_tail",
                url: url.to_string(),
                reason: reason.clone(),
            })
        },
    );
    let eq1 = sampler.per_year();
    funnel.push(FunnelRow::main(
        "long_tail",
        Counters {
            input: before,
            output: before - lt.dropped_domains,
            set_aside: lt.dropped_domains,
            errors: 0,
        },
    ));
    let finished = sampler.finish(&mut |_, _, url| stages.downsampled(url));
    let kept = before - lt.dropped_domains;
    funnel.push(FunnelRow::main(
        "downsampling",
        Counters {
            input: kept,
            output: finished.picked.len() as u64,
            set_aside: kept.saturating_sub(finished.picked.len() as u64),
            errors: 0,
        },
    ));
    stages.progress.set_done(progress::DOWNSAMPLING, before);
    let mut finished = finished;
    for (domain, n) in urls_per_domain {
        finished.counts.entry(domain).or_default().before = n;
    }
    let years = Years {
        before_long_tail,
        eq1,
    };
    (finished, years)
}

/// The sample: the downsampled URLs, then the popular domains' quota picks as they are (the
/// quota is their share).
fn sample_of(picked: &[Picked], quota_picked: Vec<SampledUrl>) -> Vec<SampledUrl> {
    let mut sample = Vec::with_capacity(picked.len());
    for p in picked {
        let (ts, mime) = p.meta.split_once('\t').unwrap_or((&p.meta, ""));
        let (ts, mime) = (ts.to_string(), mime.to_string());
        sample.push(SampledUrl {
            url: p.url.clone(),
            year: bucket_label(p.bucket),
            root: p.root,
            first_capture: ts,
            mime,
        });
    }
    sample.extend(quota_picked);
    sample
}

/// `funnel.json`, `report.md` and `ccdf.svg`, each written whole and renamed into place, so
/// the admin API never serves half of one.
fn write_reports(
    out: &Path,
    funnel: &[FunnelRow],
    counts: &BTreeMap<String, DomainCounts>,
    years: &Years,
    picked: &[Picked],
    sample: &[SampledUrl],
) -> Result<(), String> {
    use super::report::{ccdf_svg, report, year_rows, Tables, YearSample};
    let write = |name: &str, text: String| {
        let (tmp, path) = (out.join(format!("{name}.tmp")), out.join(name));
        std::fs::write(&tmp, text).map_err(|e| format!("{}: {e}", tmp.display()))?;
        std::fs::rename(&tmp, &path).map_err(|e| format!("{}: {e}", path.display()))
    };
    let text = serde_json::to_string_pretty(funnel).map_err(|e| e.to_string())?;
    // Ends with a newline: the file is also an admin answer, and every JSON answer has one.
    write("funnel.json", text + "\n")?;
    let mut per_year: BTreeMap<String, YearSample> = BTreeMap::new();
    for s in sample {
        let y = per_year.entry(s.year.clone()).or_default();
        y.urls += 1;
        y.roots += u64::from(s.root);
    }
    let rows = year_rows(&years.before_long_tail, &years.eq1, picked, &per_year);
    let tables = Tables {
        funnel,
        counts,
        years: &rows,
        sample_size: sample.len() as u64,
    };
    write("report.md", report(&tables))?;
    write("ccdf.svg", ccdf_svg(counts))
}
