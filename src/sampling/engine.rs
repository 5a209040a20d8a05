//! The sampling engine: a job spec in, a sample out, every stage streamed and counted, resumable.
//! `tmproxy sample` runs it from the command line; the admin jobs will run the same engine.
//!
//! Stages after the offline ones: first capture of each candidate through the CDX API (in
//! parallel, rate-limited), the MIME filter (`text/html`), the year filter (1996 on, within
//! `years`), root-URL upsampling (a domain without a root URL gets `https://host/` if it was
//! first archived 1996–2002), the long-tail reduction, log downsampling, and optionally each
//! sampled URL's TimeMap through CDX pagination (revisits hydrated).
//!
//! Files in the output directory: `sample.ndjson` (`url, year, root, first_capture, mime`),
//! `funnel.json` (`[{stage, in, out, set_aside, errors}]`, pipeline order), `set_aside.ndjson`
//! (every URL a stage did not pass on, with its reason), `errors.ndjson` (CDX answers that were
//! not a clean 200), `report.md`, `timemaps/` when collected, and `first_captures.ndjson`: the
//! checkpoint. Each CDX answer is appended there as it arrives, so a run that stops (killed,
//! cancelled) and starts again over the same directory reuses those answers instead of asking
//! again; since the downsampling choice depends on the seed and not on arrival order, the
//! resumed run's sample is the uninterrupted run's.
//!
//! Memory: the offline stages keep nothing per line; candidates stream to the CDX stage through
//! a bounded channel; the sampler keeps at most a few hundred URLs per (year, domain); the
//! checkpoint's answers are held in a map on resume (one entry per candidate already asked).

use super::cdx::{CdxClient, CdxSettings, Dialect, FirstCapture};
use super::downsample::{Downsampling, Sampler};
use super::filters::{bucket_label, is_html_mime, year_bucket};
use super::offline::{Candidate, Offline};
use super::revisit::{Hydrator, Row, LRU_SIZE};
use super::{Counters, FunnelRow, SetAside};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::{BufRead, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

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
        self.downsampling_params()?;
        Ok(())
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

/// Live progress, shared with whoever watches (the CLI's bars, the jobs API).
#[derive(Debug, Default)]
pub struct Progress {
    pub stage: Mutex<String>,
    pub lines: AtomicU64,
    pub candidates: AtomicU64,
    pub cdx_answers: AtomicU64,
    pub resumed_answers: AtomicU64,
    pub sampled: AtomicU64,
    pub timemaps: AtomicU64,
    /// Set to stop at the next checkpoint.
    pub cancel: AtomicBool,
    /// Bytes of the input file read so far, and its size: the candidates stream to the CDX
    /// stage through a bounded channel, so the share of the input read tracks the first-capture
    /// stage too, and gives the ETA.
    pub input_read: Arc<AtomicU64>,
    pub input_size: AtomicU64,
}

impl Progress {
    /// Seconds left, by the share of the input read in `elapsed`; None before anything is read
    /// or once the input is through (the later stages are short beside the first captures).
    pub fn eta_seconds(&self, elapsed: f64) -> Option<f64> {
        let read = self.input_read.load(Ordering::Relaxed) as f64;
        let size = self.input_size.load(Ordering::Relaxed) as f64;
        (read > 0.0 && size > read).then(|| elapsed * (size - read) / read)
    }
}

impl Progress {
    fn set_stage(&self, s: &str) {
        if let Ok(mut g) = self.stage.lock() {
            *g = s.to_string();
        }
    }
}

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

/// The URLs of the popular domains, a bounded seeded random subset per domain (bottom-k by
/// seeded hash, so the order is random and independent of the input's).
struct PopularPool {
    seed: u64,
    domains: Vec<String>,
    urls: HashMap<String, std::collections::BinaryHeap<(u64, String)>>,
}

/// Candidates kept per popular domain: enough for 20 a year over 26 years many times over.
const POPULAR_POOL: usize = 5_000;

impl PopularPool {
    fn new(seed: u64, domains: &[String]) -> PopularPool {
        PopularPool {
            seed,
            domains: domains.iter().map(|d| d.to_ascii_lowercase()).collect(),
            urls: HashMap::new(),
        }
    }

    fn push(&mut self, url: &str) {
        let Some(host) = super::surt::url_host(url) else {
            return;
        };
        let host = super::surt::strip_www(&host).to_string();
        let Some(domain) = self
            .domains
            .iter()
            .find(|d| host == **d || host.ends_with(&format!(".{d}")))
        else {
            return;
        };
        let p = super::downsample::seeded_hash(self.seed, url);
        let heap = self.urls.entry(domain.clone()).or_default();
        if heap.len() < POPULAR_POOL {
            heap.push((p, url.to_string()));
        } else if heap.peek().is_some_and(|(top, _)| p < *top) {
            heap.pop();
            heap.push((p, url.to_string()));
        }
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

/// How a run ended.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub sample: usize,
    pub funnel: Vec<FunnelRow>,
    pub cancelled: bool,
}

/// A checkpoint line: a CDX answer for a URL.
#[derive(Serialize, Deserialize)]
struct Answered {
    url: String,
    answer: FirstCapture,
}

/// Append-only NDJSON writer shared by tasks.
struct Log {
    out: Mutex<BufWriter<std::fs::File>>,
    /// Each line reaches the file (one `write`) before `write` returns: the checkpoint must
    /// survive a `kill -9`, which never runs the buffer's flush. Not fsynced: a killed process
    /// loses nothing the kernel has; a power cut may cost the last answers, asked again.
    write_through: bool,
}

impl Log {
    fn open(path: &Path, append: bool) -> Result<Log, String> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(append)
            .write(true)
            .truncate(!append)
            .open(path)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(Log {
            out: Mutex::new(BufWriter::new(file)),
            write_through: false,
        })
    }

    /// The checkpoint: appended to, written through. A last line cut short by a crash is ended
    /// first, so the next answer starts a line of its own instead of being glued to the torn
    /// one (which `read_checkpoint` skips) and lost on the next resume.
    fn open_checkpoint(path: &Path) -> Result<Log, String> {
        let torn = last_byte(path).is_some_and(|b| b != b'\n');
        let log = Log {
            write_through: true,
            ..Log::open(path, true)?
        };
        if torn {
            if let Ok(mut w) = log.out.lock() {
                w.write_all(b"\n")
                    .and_then(|_| w.flush())
                    .map_err(|e| format!("{}: {e}", path.display()))?;
            }
        }
        Ok(log)
    }

    fn write<T: Serialize>(&self, item: &T) {
        if let (Ok(mut w), Ok(line)) = (self.out.lock(), serde_json::to_string(item)) {
            let _ = writeln!(w, "{line}");
            if self.write_through {
                let _ = w.flush();
            }
        }
    }

    fn flush(&self) {
        if let Ok(mut w) = self.out.lock() {
            let _ = w.flush();
        }
    }
}

/// Runs `spec` into `out`. A previous run's checkpoint in `out` is reused.
pub async fn run(spec: &Spec, out: &Path, progress: Arc<Progress>) -> Result<Outcome, String> {
    spec.validate().map_err(|e| e.to_string())?;
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let params = spec.downsampling_params().map_err(|e| e.to_string())?;

    // The checkpoint: answers already had.
    let checkpoint = out.join("first_captures.ndjson");
    let resumed = read_checkpoint(&checkpoint);
    progress
        .resumed_answers
        .store(resumed.len() as u64, Ordering::Relaxed);
    // Written through: every answer is in the file once written, so it is never flushed.
    let answers = Arc::new(Log::open_checkpoint(&checkpoint)?);
    let set_aside = Arc::new(Log::open(&out.join("set_aside.ndjson"), false)?);
    let errors = Arc::new(Log::open(&out.join("errors.ndjson"), false)?);

    let dialect = match spec.dialect {
        Some(d) => d,
        None => super::cdx::detect(&spec.cdx_api, "http://example.com/").await?,
    };
    let client = CdxClient::new(CdxSettings {
        concurrency: spec.concurrency,
        rate_limit: spec.rate_limit,
        ..CdxSettings::new(&spec.cdx_api, dialect)
    })?;

    // Offline stages on a blocking thread, candidates through a bounded channel.
    progress.set_stage("offline");
    let input = local_input(&spec.input, out).await?;
    if let Ok(meta) = std::fs::metadata(&input) {
        progress.input_size.store(meta.len(), Ordering::Relaxed);
    }
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Candidate>(1024);
    let popular = spec.popular_domains.clone();
    let aside_log = set_aside.clone();
    let prog = progress.clone();
    let seed = spec.seed;
    let offline =
        tokio::task::spawn_blocking(move || -> Result<(Vec<FunnelRow>, PopularPool), String> {
            let mut reader = super::index::open_counted(&input, prog.input_read.clone())
                .map_err(|e| format!("{}: {e}", input.display()))?;
            let mut o = Offline::new(&popular);
            let mut pool = PopularPool::new(seed, &popular);
            let mut line = String::new();
            loop {
                line.clear();
                match reader.read_line(&mut line) {
                    Ok(0) => break,
                    Ok(_) => {}
                    Err(e) => return Err(format!("{}: {e}", input.display())),
                }
                prog.lines.fetch_add(1, Ordering::Relaxed);
                let mut batch = Vec::new();
                o.push_line(&line, &mut |c| batch.push(c), &mut |a| {
                    if a.stage == "popular_domains" {
                        pool.push(&a.url);
                    }
                    aside_log.write(&a)
                });
                for c in batch {
                    if tx.blocking_send(c).is_err() {
                        // The CDX side stopped (cancelled): stop reading.
                        return Ok((o.funnel(), pool));
                    }
                }
                if prog.cancel.load(Ordering::Relaxed) {
                    break;
                }
            }
            Ok((o.funnel(), pool))
        });

    // First captures, MIME and year filters, into the sampler.
    let mut fc = Counters::default();
    let mut mime_c = Counters::default();
    let mut year_c = Counters::default();
    let mut sampler = Sampler::new(spec.seed, params);
    let mut domains_with_root: HashSet<String> = HashSet::new();
    let mut domains: BTreeMap<String, String> = BTreeMap::new();
    {
        use futures::StreamExt;
        let stream = futures::stream::poll_fn(|cx| rx.poll_recv(cx));
        let resumed = &resumed;
        let client = &client;
        let answers = &answers;
        let prog = &progress;
        let mut asked = stream
            .map(|c: Candidate| async move {
                let answer = match resumed.get(&c.url) {
                    Some(a) => a.clone(),
                    None => {
                        let a = client.first_capture(&c.url).await;
                        answers.write(&Answered {
                            url: c.url.clone(),
                            answer: a.clone(),
                        });
                        a
                    }
                };
                prog.cdx_answers.fetch_add(1, Ordering::Relaxed);
                (c, answer)
            })
            .buffer_unordered(spec.concurrency.max(1) * 2);
        progress.set_stage("first_capture");
        while let Some((c, answer)) = asked.next().await {
            progress.candidates.fetch_add(1, Ordering::Relaxed);
            fc.input += 1;
            if progress.cancel.load(Ordering::Relaxed) {
                break;
            }
            let year_range = spec.years;
            match classify(answer, year_range) {
                Kept::Sample {
                    bucket,
                    timestamp,
                    mime,
                } => {
                    fc.output += 1;
                    mime_c.input += 1;
                    mime_c.output += 1;
                    year_c.input += 1;
                    year_c.output += 1;
                    if c.root {
                        domains_with_root.insert(c.domain.clone());
                    }
                    if let Some(host) = super::surt::url_host(&c.url) {
                        domains.entry(c.domain.clone()).or_insert(host);
                    }
                    sampler.push_with(
                        bucket,
                        &c.domain,
                        &c.url,
                        c.root,
                        &meta_of(&timestamp, &mime),
                    );
                }
                Kept::Aside { stage, reason } => {
                    match stage {
                        "first_capture" => fc.set_aside += 1,
                        "mime" => {
                            fc.output += 1;
                            mime_c.input += 1;
                            mime_c.set_aside += 1
                        }
                        _ => {
                            fc.output += 1;
                            mime_c.input += 1;
                            mime_c.output += 1;
                            year_c.input += 1;
                            year_c.set_aside += 1
                        }
                    }
                    set_aside.write(&SetAside {
                        stage,
                        url: c.url.clone(),
                        reason,
                    });
                }
                Kept::Error(reason) => {
                    fc.errors += 1;
                    errors.write(&SetAside {
                        stage: "first_capture",
                        url: c.url.clone(),
                        reason,
                    });
                }
            }
        }
    }
    drop(rx);
    let (mut funnel, pool) = match offline.await {
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
        Outcome {
            sample: 0,
            funnel,
            cancelled: true,
        }
    };
    if progress.cancel.load(Ordering::Relaxed) {
        return Ok(stopped(funnel));
    }
    funnel.push(row("first_capture", fc));
    funnel.push(row("mime_html", mime_c));
    funnel.push(row("years", year_c));

    // Popular domains re-enter by the per-year quota: their URLs in seeded random order, first
    // captures asked until every year in range has its quota (or the URLs run out).
    progress.set_stage("popular_quota");
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
            let answer = match resumed.get(&url) {
                Some(a) => a.clone(),
                None => {
                    let a = client.first_capture(&url).await;
                    answers.write(&Answered {
                        url: url.clone(),
                        answer: a.clone(),
                    });
                    a
                }
            };
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
                            root: super::filters::is_root(&url),
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
    if progress.cancel.load(Ordering::Relaxed) {
        return Ok(stopped(funnel));
    }
    funnel.push(row("popular_quota", quota_c));

    // Root upsampling: domains without a root URL get one if first archived 1996–2002.
    progress.set_stage("root_upsampling");
    let mut up = Counters::default();
    for (domain, host) in &domains {
        if progress.cancel.load(Ordering::Relaxed) {
            break;
        }
        if domains_with_root.contains(domain) {
            continue;
        }
        up.input += 1;
        let root = format!("https://{host}/");
        let answer = match resumed.get(&root) {
            Some(a) => a.clone(),
            None => {
                let a = client.first_capture(&root).await;
                answers.write(&Answered {
                    url: root.clone(),
                    answer: a.clone(),
                });
                a
            }
        };
        match classify(answer, [1996, 2002]) {
            Kept::Sample {
                bucket,
                timestamp,
                mime,
            } => {
                up.output += 1;
                sampler.push_with(bucket, domain, &root, true, &meta_of(&timestamp, &mime));
            }
            Kept::Aside { reason, .. } => {
                up.set_aside += 1;
                set_aside.write(&SetAside {
                    stage: "root_upsampling",
                    url: root,
                    reason,
                });
            }
            Kept::Error(reason) => {
                up.errors += 1;
                errors.write(&SetAside {
                    stage: "root_upsampling",
                    url: root,
                    reason,
                });
            }
        }
    }
    if progress.cancel.load(Ordering::Relaxed) {
        return Ok(stopped(funnel));
    }
    funnel.push(row("root_upsampling", up));

    // Long tail, then downsampling.
    progress.set_stage("downsampling");
    let before = sampler.urls();
    let lt = sampler.reduce_long_tail(spec.long_tail_threshold, spec.long_tail_fraction);
    funnel.push(row(
        "long_tail",
        Counters {
            input: before,
            output: before - lt.dropped_domains,
            set_aside: lt.dropped_domains,
            errors: 0,
        },
    ));
    let (picked, counts) = sampler.finish();
    funnel.push(row(
        "downsampling",
        Counters {
            input: before - lt.dropped_domains,
            output: picked.len() as u64,
            set_aside: (before - lt.dropped_domains).saturating_sub(picked.len() as u64),
            errors: 0,
        },
    ));

    // The sample.
    let mut sample = Vec::with_capacity(picked.len());
    for p in &picked {
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
    // The popular domains' quota picks join the sample as they are (the quota is their share).
    sample.extend(quota_picked);
    progress
        .sampled
        .store(sample.len() as u64, Ordering::Relaxed);
    write_ndjson(&out.join("sample.ndjson"), &sample)?;

    if spec.collect_timemaps {
        progress.set_stage("timemaps");
        let tm = collect_timemaps(&client, &sample, out, spec.hydrate_revisits, &progress).await?;
        if progress.cancel.load(Ordering::Relaxed) {
            return Ok(stopped(funnel));
        }
        funnel.push(row("timemaps", tm));
    }
    set_aside.flush();
    errors.flush();
    let text = serde_json::to_string_pretty(&funnel).map_err(|e| e.to_string())?;
    std::fs::write(out.join("funnel.json"), text).map_err(|e| e.to_string())?;
    std::fs::write(
        out.join("report.md"),
        super::report::report(&funnel, &counts),
    )
    .map_err(|e| e.to_string())?;
    std::fs::write(out.join("ccdf.svg"), super::report::ccdf_svg(&counts))
        .map_err(|e| e.to_string())?;
    progress.set_stage("done");
    Ok(Outcome {
        sample: sample.len(),
        funnel,
        cancelled: false,
    })
}

/// The sampler's payload for a URL: its first capture and MIME (a tab cannot be in either).
fn meta_of(timestamp: &str, mime: &str) -> String {
    format!("{timestamp}\t{mime}")
}

fn row(stage: &'static str, counters: Counters) -> FunnelRow {
    FunnelRow { stage, counters }
}

enum Kept {
    Sample {
        bucket: u16,
        timestamp: String,
        mime: String,
    },
    Aside {
        stage: &'static str,
        reason: String,
    },
    Error(String),
}

/// The first-capture, MIME and year rules on one answer.
fn classify(answer: FirstCapture, years: [u16; 2]) -> Kept {
    match answer {
        FirstCapture::Found {
            timestamp,
            mime,
            status: _,
        } => {
            if !is_html_mime(&mime) {
                return Kept::Aside {
                    stage: "mime",
                    reason: format!("first capture is {mime}, not text/html"),
                };
            }
            let year: Option<u16> = timestamp.get(..4).and_then(|y| y.parse().ok());
            match (year_bucket(&timestamp), year) {
                (Some(bucket), Some(y)) if y >= years[0] && y <= years[1] => Kept::Sample {
                    bucket,
                    timestamp,
                    mime,
                },
                _ => Kept::Aside {
                    stage: "years",
                    reason: format!(
                        "first captured {} (kept: {}–{})",
                        timestamp.get(..4).unwrap_or(&timestamp),
                        years[0],
                        years[1]
                    ),
                },
            }
        }
        FirstCapture::NotArchived => Kept::Aside {
            stage: "first_capture",
            reason: "not archived (empty CDX answer)".into(),
        },
        FirstCapture::Blocked => Kept::Aside {
            stage: "first_capture",
            reason: "blocked (403 Blocked Site Error)".into(),
        },
        FirstCapture::Failed { reason } => Kept::Error(reason),
    }
}

fn read_checkpoint(path: &Path) -> HashMap<String, FirstCapture> {
    let mut map = HashMap::new();
    let Ok(file) = std::fs::File::open(path) else {
        return map;
    };
    // Split on bytes, not `lines()`: a line torn inside a multi-byte character is not UTF-8,
    // and `lines()` would end the reading there, losing every answer after it.
    for line in std::io::BufReader::new(file)
        .split(b'\n')
        .map_while(Result::ok)
    {
        // A line cut by a kill is skipped: its URL is simply asked again.
        if let Ok(a) = serde_json::from_slice::<Answered>(&line) {
            // A failure is asked again on resume: the archive may answer now.
            if !matches!(a.answer, FirstCapture::Failed { .. }) {
                map.insert(a.url, a.answer);
            }
        }
    }
    map
}

/// The last byte of a file, if it has one (read without reading the rest).
fn last_byte(path: &Path) -> Option<u8> {
    use std::io::{Read, Seek, SeekFrom};
    let mut file = std::fs::File::open(path).ok()?;
    file.seek(SeekFrom::End(-1)).ok()?;
    let mut byte = [0u8; 1];
    file.read_exact(&mut byte).ok()?;
    Some(byte[0])
}

/// The input as a local file: a path as it is, an http(s) URL downloaded into `out` first.
async fn local_input(input: &str, out: &Path) -> Result<PathBuf, String> {
    if !(input.starts_with("http://") || input.starts_with("https://")) {
        return Ok(PathBuf::from(input));
    }
    let path = out.join("input.index");
    let http = reqwest::Client::builder()
        .redirect(super::cdx::no_redirects())
        .build()
        .map_err(|e| format!("input {input}: {e}"))?;
    let mut r = http
        .get(input)
        .send()
        .await
        .map_err(|e| format!("input {input}: {e}"))?;
    if !r.status().is_success() {
        return Err(format!("input {input}: HTTP {}", r.status()));
    }
    let mut file = std::fs::File::create(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    while let Some(chunk) = r.chunk().await.map_err(|e| format!("input {input}: {e}"))? {
        file.write_all(&chunk)
            .map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(path)
}

fn write_ndjson<T: Serialize>(path: &Path, items: &[T]) -> Result<(), String> {
    let file = std::fs::File::create(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut w = BufWriter::new(file);
    for i in items {
        let line = serde_json::to_string(i).map_err(|e| e.to_string())?;
        writeln!(w, "{line}").map_err(|e| format!("{}: {e}", path.display()))?;
    }
    w.flush().map_err(|e| format!("{}: {e}", path.display()))
}

/// Each sampled URL's TimeMap via CDX pagination into `out/timemaps/NNNNNN.ndjson`, revisits
/// hydrated when asked; `timemaps/index.ndjson` maps files to URLs.
async fn collect_timemaps(
    client: &Arc<CdxClient>,
    sample: &[SampledUrl],
    out: &Path,
    hydrate: bool,
    progress: &Progress,
) -> Result<Counters, String> {
    let dir = out.join("timemaps");
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut c = Counters::default();
    let mut index = Vec::new();
    let mut hydration = super::revisit::HydrationReport::default();
    for (i, s) in sample.iter().enumerate() {
        if progress.cancel.load(Ordering::Relaxed) {
            break;
        }
        c.input += 1;
        match client.timemap(&s.url).await {
            Ok(mut rows) => {
                if hydrate {
                    let mut h = Hydrator::new(LRU_SIZE);
                    for r in &mut rows {
                        let mut row = Row {
                            mime: std::mem::take(&mut r.mime),
                            status: std::mem::take(&mut r.status),
                            digest: r.digest.clone(),
                        };
                        h.hydrate(&mut row);
                        r.mime = row.mime;
                        r.status = row.status;
                    }
                    hydration.revisits += h.report.revisits;
                    hydration.hydrated += h.report.hydrated;
                    hydration.misses += h.report.misses;
                    for (d, n) in h.report.distances {
                        *hydration.distances.entry(d).or_default() += n;
                    }
                }
                let name = format!("{i:06}.ndjson");
                write_ndjson(&dir.join(&name), &rows)?;
                index.push(serde_json::json!({"file": name, "url": s.url, "mementos": rows.len()}));
                c.output += 1;
            }
            Err(e) => {
                c.errors += 1;
                index.push(serde_json::json!({"url": s.url, "error": e}));
            }
        }
        progress.timemaps.fetch_add(1, Ordering::Relaxed);
    }
    write_ndjson(&dir.join("index.ndjson"), &index)?;
    if hydrate {
        let text = serde_json::json!({
            "revisits": hydration.revisits,
            "hydrated": hydration.hydrated,
            "misses": hydration.misses,
            "distances": hydration.distances,
        });
        std::fs::write(dir.join("hydration.json"), text.to_string()).map_err(|e| e.to_string())?;
    }
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_eta_follows_the_share_of_the_input_read() {
        let p = Progress::default();
        assert_eq!(p.eta_seconds(10.0), None, "nothing read yet");
        p.input_size.store(1000, Ordering::Relaxed);
        p.input_read.store(250, Ordering::Relaxed);
        assert_eq!(p.eta_seconds(10.0), Some(30.0));
        p.input_read.store(1000, Ordering::Relaxed);
        assert_eq!(p.eta_seconds(40.0), None, "through the input");
    }

    #[test]
    fn a_checkpoint_torn_by_a_kill_keeps_every_whole_answer() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("first_captures.ndjson");
        let answered = |url: &str| Answered {
            url: url.to_string(),
            answer: FirstCapture::NotArchived,
        };
        let first = Log::open_checkpoint(&path).expect("open");
        first.write(&answered("http://a.example/"));
        // Written through: on disk without a flush or a drop (a kill -9 runs neither).
        assert_eq!(read_checkpoint(&path).len(), 1);
        std::mem::forget(first);
        // A line cut inside a multi-byte character, as a kill mid-write may leave it.
        let mut bytes = std::fs::read(&path).expect("read");
        bytes.extend_from_slice("{\"url\":\"http://\u{e9}".as_bytes());
        bytes.pop();
        std::fs::write(&path, bytes).expect("write");
        let resumed = Log::open_checkpoint(&path).expect("reopen");
        resumed.write(&answered("http://b.example/"));
        let read = read_checkpoint(&path);
        assert!(read.contains_key("http://a.example/") && read.contains_key("http://b.example/"));
        assert_eq!(read.len(), 2);
    }

    #[test]
    fn a_bad_spec_names_its_field() {
        let ok = Spec {
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
            long_tail_threshold: 900_000,
            long_tail_fraction: 0.9,
            collect_timemaps: false,
            hydrate_revisits: false,
        };
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
        let mut d = ok;
        d.downsampling.k.insert("1998".into(), 4.0);
        assert_eq!(d.downsampling_params().map(|p| p.k_for(2000)), Ok(4.0));
    }
}
