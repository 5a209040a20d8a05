//! `tmproxy sample`: the sampling engine from the command line, with a bar per stage on a
//! terminal, a plain progress line every 10 s otherwise (a log, `nohup`, CI), and an exit status
//! that says whether anything could be sampled.

use crate::config::Config;
use std::io::IsTerminal;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tmproxy_sampling::engine::{progress, run_with, Limits, Progress, Spec};
use tmproxy_sampling::FunnelRow;

/// Seconds between plain progress lines when stderr is not a terminal; the environment variable
/// `TMPROXY_PROGRESS_SECS` changes it (tests, impatient operators).
const PLAIN_EVERY_SECS: u64 = 10;

/// `tmproxy sample --spec FILE.toml --out DIR [--config PATH]`: run by the operator (so
/// `[sampling] input_dir` and `allowed_urls` do not apply; the reading and memory limits do,
/// from `--config`'s `[sampling]` or the defaults). A second run over the same DIR resumes from
/// its checkpoint. Fails (exit 1) when nothing could be sampled because no input line could be
/// read or every CDX request failed.
pub async fn sample(spec_path: &Path, out: &Path, config: Option<&Path>) -> Result<(), String> {
    let text =
        std::fs::read_to_string(spec_path).map_err(|e| format!("{}: {e}", spec_path.display()))?;
    let spec: Spec = toml::from_str(&text).map_err(|e| {
        format!(
            "{}: {}",
            spec_path.display(),
            e.to_string().lines().collect::<Vec<_>>().join(" ")
        )
    })?;
    spec.validate()
        .map_err(|e| format!("{}: {e}", spec_path.display()))?;
    let limits = match config {
        Some(path) => {
            let (config, _) = Config::load(Some(path)).map_err(|e| e.to_string())?;
            crate::app::sampling_bounds(&config.sampling).limits
        }
        None => Limits::default(),
    };
    let progress = Arc::new(Progress::default());
    let started = std::time::Instant::now();
    let result = if std::io::stderr().is_terminal() {
        with_bars(&spec, out, progress.clone(), limits).await
    } else {
        with_lines(&spec, out, progress.clone(), limits).await
    };
    let outcome = result?;
    for w in &outcome.warnings {
        eprintln!("warning: {w}");
    }
    if !std::io::stderr().is_terminal() {
        eprintln!("{}", final_line(&progress, started.elapsed()));
    }
    if outcome.sample == 0 {
        if let Some(why) = nothing_worked(&outcome.funnel) {
            return Err(format!(
                "nothing could be sampled: {why} (see {})",
                out.display()
            ));
        }
    }
    println!(
        "{} URLs sampled → {}/sample.ndjson (funnel.json, report.md{})",
        outcome.sample,
        out.display(),
        if spec.collect_timemaps {
            ", timemaps/"
        } else {
            ""
        }
    );
    Ok(())
}

/// Why an empty sample is a failure rather than a result: no input line could be read, or
/// every CDX request failed. None when the input and the CDX API worked and the method simply
/// kept nothing (every URL set aside with its reason).
pub fn nothing_worked(funnel: &[FunnelRow]) -> Option<String> {
    let row = |stage: &str| {
        funnel
            .iter()
            .find(|r| r.stage == stage && r.from.is_none() && r.into.is_none())
            .map(|r| r.counters)
    };
    let read = row("read")?;
    if read.output == 0 {
        return Some(format!(
            "no input line could be read ({} lines, {} set aside in set_aside.ndjson)",
            read.input, read.errors
        ));
    }
    let asked = row("first_capture")?;
    if asked.input > 0 && asked.errors == asked.input {
        return Some(format!(
            "every CDX request failed ({} in errors.ndjson)",
            asked.errors
        ));
    }
    None
}

/// One plain progress line: the stage and its counters, then the current stage's done/total,
/// fetched rate and the ETA (`engine::progress::plain_line`).
fn plain_line(p: &Progress) -> String {
    format!("{}; {}", counters(p), progress::plain_line(&p.view(true)))
}

/// `sample: stage S: N index lines, …`: the stage and the run's counters.
fn counters(p: &Progress) -> String {
    let stage = p.stage.lock().map(|s| s.clone()).unwrap_or_default();
    format!(
        "sample: stage {stage}: {} index lines, {} candidates, {} CDX answers ({} from the \
         checkpoint), {} sampled, {} TimeMaps",
        p.lines.load(Ordering::Relaxed),
        p.candidates.load(Ordering::Relaxed),
        p.cdx_answers.load(Ordering::Relaxed),
        p.resumed_answers.load(Ordering::Relaxed),
        p.sampled.load(Ordering::Relaxed),
        p.timemaps.load(Ordering::Relaxed),
    )
}

/// The last progress line, once the run is over: the stage it ended in (`done` when whole), its
/// counters and how long it took; no rate and no ETA, nothing left running.
fn final_line(p: &Progress, took: std::time::Duration) -> String {
    format!("{}; finished in {:.0} s", counters(p), took.as_secs_f64())
}

/// Not on a terminal: a plain line every [`PLAIN_EVERY_SECS`] instead of bars (which draw
/// nothing there).
async fn with_lines(
    spec: &Spec,
    out: &Path,
    progress: Arc<Progress>,
    limits: Limits,
) -> Result<tmproxy_sampling::engine::RunSummary, String> {
    let every = std::env::var(crate::config::PROGRESS_SECS_ENV)
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .filter(|s| *s > 0)
        .unwrap_or(PLAIN_EVERY_SECS);
    let ticker = {
        let p = progress.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(std::time::Duration::from_secs(every));
            tick.tick().await;
            loop {
                tick.tick().await;
                eprintln!("{}", plain_line(&p));
            }
        })
    };
    let result = run_with(spec, out, progress, limits).await;
    ticker.abort();
    result
}

/// On a terminal: a spinner per stage.
async fn with_bars(
    spec: &Spec,
    out: &Path,
    progress: Arc<Progress>,
    limits: Limits,
) -> Result<tmproxy_sampling::engine::RunSummary, String> {
    let bars = indicatif::MultiProgress::new();
    let style = indicatif::ProgressStyle::with_template("{prefix:>16} {spinner} {msg}")
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner());
    let mk = |name: &str| {
        let b = bars.add(indicatif::ProgressBar::new_spinner());
        b.set_style(style.clone());
        b.set_prefix(name.to_string());
        b
    };
    let (offline, cdx, done) = (mk("offline stages"), mk("first captures"), mk("sample"));
    let ticker = {
        let p = progress.clone();
        let (offline, cdx, done) = (offline.clone(), cdx.clone(), done.clone());
        tokio::spawn(async move {
            loop {
                let view = p.view(true);
                offline.set_message(progress::stage_line(&view.stages[progress::OFFLINE]));
                cdx.set_message(progress::stage_line(&view.stages[progress::FIRST_CAPTURE]));
                done.set_message(progress::plain_line(&view));
                for b in [&offline, &cdx, &done] {
                    b.tick();
                }
                tokio::time::sleep(std::time::Duration::from_millis(200)).await;
            }
        })
    };
    let started = std::time::Instant::now();
    let result = run_with(spec, out, progress.clone(), limits).await;
    ticker.abort();
    // The last frame is the run's end, not the ticker's last look: every stage as it ended.
    let view = progress.view(false);
    offline.finish_with_message(progress::stage_line(&view.stages[progress::OFFLINE]));
    cdx.finish_with_message(progress::stage_line(&view.stages[progress::FIRST_CAPTURE]));
    done.finish_with_message(final_line(&progress, started.elapsed()));
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use tmproxy_sampling::Counters;

    fn funnel(read: (u64, u64), asked: (u64, u64)) -> Vec<FunnelRow> {
        let c = |input, output, errors| Counters {
            input,
            output,
            set_aside: 0,
            errors,
        };
        vec![
            FunnelRow::main("read", c(read.0, read.1, read.0 - read.1)),
            FunnelRow::main("first_capture", c(asked.0, asked.0 - asked.1, asked.1)),
        ]
    }

    #[test]
    fn an_empty_sample_fails_only_when_nothing_could_work() {
        let why = nothing_worked(&funnel((5, 0), (0, 0))).expect("no line read");
        assert!(why.contains("no input line could be read"), "{why}");
        let why = nothing_worked(&funnel((5, 5), (3, 3))).expect("every request failed");
        assert!(why.contains("every CDX request failed"), "{why}");
        assert_eq!(
            nothing_worked(&funnel((5, 5), (3, 2))),
            None,
            "one answer came"
        );
        assert_eq!(
            nothing_worked(&funnel((5, 5), (0, 0))),
            None,
            "all set aside offline"
        );
    }
}
