//! A run of the engine: every stage in order over one output directory, the funnel, the sample,
//! the reports, and how the run ended ([`RunSummary`]).

use super::checkpoint::{self, read_checkpoint, FirstCaptures};
use super::limits::Limits;
use super::live::{self, Progress};
use super::ndjson::Log;
use super::sample_file::{SampleWriter, SampledUrl};
use super::spec::Spec;
use super::stages::Stages;
use super::{first_capture, input, popular, progress, root_hosts, roots, timemaps};
use crate::cdx::{CdxClient, CdxSettings};
use crate::downsample::{DomainStats, Left, Picked, SpillSampler, Summary};
use crate::filters::bucket_label;
use crate::offline::Candidate;
use crate::{Counters, FunnelRow, SetAside};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// The sampler's and root upsampling's runs, under the output directory.
const SPILL_DIR: &str = ".spill";

/// How a run ended.
#[derive(Debug, Clone, PartialEq)]
pub struct RunSummary {
    pub sample: usize,
    pub funnel: Vec<FunnelRow>,
    pub cancelled: bool,
    /// Where the run did not do what the spec says (targets the candidate pool could not
    /// meet): shown by the CLI and the job's status.
    pub warnings: Vec<String>,
}

/// Runs `spec` into `out`. A previous run's checkpoint in `out` is reused if it was written
/// for the same spec (its result hash), refused otherwise. The progress is saved to
/// `out/progress.json` at every stage change, every `live::SAVE_EVERY` and at the end.
pub async fn run(spec: &Spec, out: &Path, progress: Arc<Progress>) -> Result<RunSummary, String> {
    run_with(spec, out, progress, Limits::default()).await
}

/// [`run`] under `limits` (the `[sampling]` ones).
pub async fn run_with(
    spec: &Spec,
    out: &Path,
    progress: Arc<Progress>,
    limits: Limits,
) -> Result<RunSummary, String> {
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
    // The sampler's runs are of no use once the run ends, however it ends (a stopped or
    // failed run starts again from the input and the checkpoint): GBs at scale, not kept.
    let _ = std::fs::remove_dir_all(out.join(SPILL_DIR));
    saver.abort();
    progress.save();
    result
}

async fn run_stages(
    spec: &Spec,
    out: &Path,
    progress: &Arc<Progress>,
    limits: Limits,
) -> Result<RunSummary, String> {
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
        None => crate::cdx::detect(&spec.cdx_api, "http://example.com/").await?,
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

    progress.memory.pool.store(pool as u64, Ordering::Relaxed);
    // The sampler's runs: never trusted across runs of the engine (a resumed run walks the
    // input again and writes them anew), so whatever a stopped run left is removed first;
    // before the input is opened, so the stages start as they did without it.
    let spill_dir = out.join(SPILL_DIR);
    match std::fs::remove_dir_all(&spill_dir) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            return Err(format!("{}: {e}", spill_dir.display()))
        }
        _ => {}
    }
    let mut sampler = SpillSampler::new(spec.seed, params, pool, &spill_dir, limits.spill_chunk())?;
    // Root upsampling's facts per domain, beside the sampler's runs (so removed with them
    // however the run ends); a quarter of its chunk, as its records are a few dozen bytes.
    let mut root_hosts = root_hosts::RootHosts::new(&spill_dir, limits.spill_chunk() / 4)?;
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

    progress.set_stage("first_capture");
    let firsts = first_capture::first_captures(&stages, rx, &mut sampler, &mut root_hosts).await?;
    progress
        .memory
        .set_spilled(sampler.held() + root_hosts.held());
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
        RunSummary {
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
    let up = roots::upsample_roots(&stages, &mut root_hosts, &mut sampler).await?;
    // Its runs are read: gone now, so `.spill/` is empty once the sampler's are too.
    root_hosts.remove();
    if progress.cancel.load(Ordering::Relaxed) {
        return Ok(stopped(funnel));
    }
    funnel.push(FunnelRow {
        into: Some("long_tail"),
        ..FunnelRow::main("root_upsampling", up)
    });

    progress.set_stage("downsampling");
    let path = out.join("sample.ndjson");
    let mut sample = SampleWriter::create(&path)?;
    let summary = downsample(&stages, sampler, &mut funnel, &mut sample)?;
    for s in &quota_picked {
        sample.write(s)?;
    }
    drop(quota_picked);
    let (n, per_year) = sample.finish()?;
    funnel.push(FunnelRow::main(
        "sample",
        Counters {
            input: n,
            output: n,
            ..Counters::default()
        },
    ));
    progress.sampled.store(n, Ordering::Relaxed);
    if !summary.shortfalls.is_empty() {
        progress.warn(&format!(
            "{} (year, domain) targets of Eq. 1 are above the candidate pool of {pool}: \
             their sample is short, see shortfalls.json (raise candidate_pool)",
            summary.shortfalls.len()
        ));
    }
    let warnings = progress.warnings();
    let text = serde_json::to_string_pretty(&summary.shortfalls).map_err(|e| e.to_string())?;
    std::fs::write(out.join("shortfalls.json"), text + "\n").map_err(|e| e.to_string())?;

    if spec.collect_timemaps {
        progress.set_stage("timemaps");
        let tm = timemaps::collect_timemaps(
            &captures,
            &errors,
            &path,
            out,
            timemaps::SpillAt {
                dir: &out.join(SPILL_DIR),
                // As root upsampling's: the stage runs after the sampler's merge.
                max_held: limits.spill_chunk() / 4,
            },
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
    write_reports(out, &funnel, &summary, &per_year, n)?;
    progress.set_stage("done");
    Ok(RunSummary {
        sample: n as usize,
        funnel,
        cancelled: false,
        warnings,
    })
}

/// The long-tail reduction, then log downsampling, each with its funnel row, in one merge of
/// the sampler's runs: every picked URL into `sample` as it comes, every URL either drops into
/// `set_aside.ndjson` (stage `long_tail`, or `downsampling` with `downsampled`).
fn downsample(
    stages: &Stages<'_>,
    sampler: SpillSampler,
    funnel: &mut Vec<FunnelRow>,
    sample: &mut SampleWriter,
) -> Result<Summary, String> {
    let spec = stages.spec;
    let before = sampler.urls();
    stages.progress.set_total(progress::DOWNSAMPLING, before);
    let reason = format!(
        "long_tail: a single-URL domain in a year with more than {} domains",
        spec.long_tail_threshold
    );
    let s = sampler.finish(
        spec.long_tail_threshold,
        spec.long_tail_fraction,
        &mut |left| match left {
            Left::Picked(p) => sample.write(&sampled_url(p)),
            Left::LongTail(url) => {
                stages.set_aside.write(&SetAside {
                    stage: "long_tail",
                    url: url.to_string(),
                    reason: reason.clone(),
                });
                Ok(())
            }
            Left::Downsampled(url) => {
                stages.downsampled(url);
                Ok(())
            }
        },
    )?;
    let dropped = s.long_tail.dropped_domains;
    funnel.push(FunnelRow::main(
        "long_tail",
        Counters {
            input: before,
            output: before - dropped,
            set_aside: dropped,
            errors: 0,
        },
    ));
    let kept = before - dropped;
    funnel.push(FunnelRow::main(
        "downsampling",
        Counters {
            input: kept,
            output: s.picked,
            set_aside: kept.saturating_sub(s.picked),
            errors: 0,
        },
    ));
    stages.progress.set_done(progress::DOWNSAMPLING, before);
    Ok(s)
}

/// A downsampled URL as a line of the sample.
fn sampled_url(p: &Picked) -> SampledUrl {
    let (ts, mime) = p.meta.split_once('\t').unwrap_or((&p.meta, ""));
    SampledUrl {
        url: p.url.clone(),
        year: bucket_label(p.bucket),
        root: p.root,
        first_capture: ts.to_string(),
        mime: mime.to_string(),
    }
}

/// `funnel.json`, `report.md` and `ccdf.svg`, each written whole and renamed into place, so
/// the admin API never serves half of one.
fn write_reports(
    out: &Path,
    funnel: &[FunnelRow],
    summary: &Summary,
    per_year: &BTreeMap<String, crate::report::YearSample>,
    sample_size: u64,
) -> Result<(), String> {
    use crate::report::{ccdf_svg, report, year_rows, Tables};
    let write = |name: &str, text: String| {
        let path = out.join(name);
        tmproxy_disk::write_atomically(&path, text.as_bytes(), tmproxy_disk::Durability::Unsynced)
            .map_err(|e| e.to_string())
    };
    let text = serde_json::to_string_pretty(funnel).map_err(|e| e.to_string())?;
    // Ends with a newline: the file is also an admin answer, and every JSON answer has one.
    write("funnel.json", text + "\n")?;
    let rows = year_rows(
        &summary.before_long_tail,
        &summary.eq1,
        &summary.picked_per_year,
        per_year,
    );
    let counts: &DomainStats = &summary.domains;
    let tables = Tables {
        funnel,
        counts,
        years: &rows,
        sample_size,
    };
    write("report.md", report(&tables))?;
    write("ccdf.svg", ccdf_svg(counts))
}
