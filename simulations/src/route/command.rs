//! The `memsim route` command: its arguments and what it prints and writes.

use super::{model, report, sim, trace, Stream};
use std::fs::File;
use std::io::{BufReader, BufWriter};
use std::path::PathBuf;
use tmproxy_core::routing::Settings;

/// Where the requests come from, for `memsim route` and `memsim route-e2e`: a SYNTHETIC preset
/// or a trace, and the cache's TTL that makes misses of them.
#[derive(clap::Args, Debug)]
pub struct Source {
    /// A SYNTHETIC holdings model: small (tests; over HTTP) or web (the realistic default).
    /// Needs --seed.
    #[arg(long, value_parser = parse_preset, requires = "seed", required_unless_present = "trace")]
    pub preset: Option<model::Preset>,
    #[arg(long, requires = "preset")]
    pub seed: Option<u64>,
    /// With --preset: the SYNTHETIC client addresses its requests come from, instead of the
    /// preset's own count (0: no clients, so nothing is bounded per client; at most 131072).
    #[arg(long, requires = "preset")]
    pub clients: Option<u32>,
    /// Or a trace: one {"uri_r": "...", "holdings": {"ARCHIVE_ID": COUNT, ...}} per line.
    #[arg(long, conflicts_with = "preset")]
    pub trace: Option<PathBuf>,
    /// With --trace: the archives never skipped (the Internet Archive, `ia`, is always asked).
    #[arg(long, value_delimiter = ',', default_value = "ia", requires = "trace")]
    pub always: Vec<String>,
    /// The cache's TTL in requests (request i at tick i; 0: every request is a miss). Default:
    /// the preset's, or 0 for a trace (its lines taken as fan-outs, like the observation log's).
    #[arg(long)]
    pub ttl: Option<u64>,
}

impl Source {
    /// The stream and the TTL its misses are made with.
    pub fn stream(&self) -> Result<(Stream, u64), String> {
        match (&self.preset, self.seed, &self.trace) {
            (Some(p), Some(seed), _) => {
                let clients = self.clients.unwrap_or(p.clients);
                if clients > model::MAX_CLIENTS {
                    return Err(format!("--clients takes 0 to {}", model::MAX_CLIENTS));
                }
                let stream = model::generate_with_clients(p, seed, clients);
                Ok((stream, self.ttl.unwrap_or(p.ttl)))
            }
            (_, _, Some(path)) => Ok((trace_stream(path, &self.always)?, self.ttl.unwrap_or(0))),
            _ => Err("give --preset NAME --seed N, or --trace FILE".to_string()),
        }
    }
}

/// Arguments of `memsim route`.
#[derive(clap::Args, Debug)]
pub struct RouteArgs {
    #[command(flatten)]
    pub source: Source,
    /// The min_share values swept.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "0.005,0.01,0.02,0.05,0.1"
    )]
    pub min_share: Vec<f64>,
    /// The explore values swept.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "0,0.01,0.02,0.05,0.07,0.1"
    )]
    pub explore: Vec<f64>,
    /// The min_evidence values swept.
    #[arg(long, value_delimiter = ',', default_value = "5,20")]
    pub min_evidence: Vec<u32>,
    /// `[routing] max_keys` of the profiles.
    #[arg(long, default_value_t = sim::MAX_KEYS)]
    pub max_keys: usize,
    /// `[routing] max_per_client`: observations one client address may add at one key.
    #[arg(long, default_value_t = sim::MAX_PER_CLIENT)]
    pub max_per_client: u32,
    /// Print one JSON object per setting tried, one a line (nothing else on stdout).
    #[arg(long)]
    pub json: bool,
    /// Write route.csv, summary.md, route.svg and route-zoom.svg into this directory.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// With --preset: write its misses (after the cache) as a trace and stop; `--trace` of that
    /// file replays exactly the preset's run.
    #[arg(long, requires = "preset")]
    pub write_trace: Option<PathBuf>,
}

fn parse_preset(s: &str) -> Result<model::Preset, String> {
    model::Preset::by_name(s).ok_or_else(|| format!("expected one of {}", model::Preset::names()))
}

fn check_settings(a: &RouteArgs) -> Result<(), String> {
    let share = |v: &f64| (0.0..=1.0).contains(v);
    if !a.min_share.iter().all(share) || !a.explore.iter().all(share) {
        return Err("--min-share and --explore take shares between 0 and 1".to_string());
    }
    if a.min_evidence.iter().any(|&e| e == 0 || e > 4096) {
        return Err("--min-evidence takes 1 to 4096 (a tally's cap)".to_string());
    }
    if a.max_keys == 0 {
        return Err("--max-keys must be at least 1".to_string());
    }
    check_max_per_client(a.max_per_client)
}

/// `[routing] max_per_client`'s range in the server.
pub fn check_max_per_client(n: u32) -> Result<(), String> {
    if n == 0 || n > 4096 {
        return Err("--max-per-client takes 1 to 4096".to_string());
    }
    Ok(())
}

/// What a preset's stream is: the summary's first lines.
fn preset_intro(p: &model::Preset, stream: &Stream, ttl: u64, max_per_client: u32) -> Vec<String> {
    let shares = model::held_shares(stream);
    let held: Vec<String> = stream
        .archives
        .iter()
        .zip(&shares)
        .map(|(a, s)| format!("{} {:.1}%", a.id, 100.0 * s))
        .collect();
    vec![
        format!(
            "SYNTHETIC holdings model (made-up hosts, URI-Rs and holdings; its numbers say \
             nothing about real archives): {} hosts, {} URI-Rs, {} requests, cache TTL {ttl} \
             requests.",
            p.hosts, p.uri_rs, p.requests
        ),
        format!("URI-Rs held per archive: {}.", held.join(", ")),
        clients_line(stream, max_per_client),
    ]
}

/// Who the requests come from, and what that bounds.
fn clients_line(stream: &Stream, max_per_client: u32) -> String {
    let mut per: std::collections::HashMap<std::net::IpAddr, u64> = Default::default();
    for r in &stream.requests {
        if let Some(c) = r.client {
            *per.entry(tmproxy_core::routing::client_key(c)).or_default() += 1;
        }
    }
    let with: u64 = per.values().sum();
    if with == 0 {
        return "Requests from no client address: nothing is bounded per client.".to_string();
    }
    let busiest = per.values().copied().max().unwrap_or(0);
    format!(
        "Requests from {} client addresses (SYNTHETIC for a preset; the busiest makes {:.1}% of \
         them), one address teaching any key at most {max_per_client} observations \
         (`max_per_client`).",
        per.len(),
        100.0 * busiest as f64 / with as f64
    )
}

/// A trace file's stream, refused whole at its first bad line.
fn trace_stream(path: &std::path::Path, always: &[String]) -> Result<Stream, String> {
    let file = File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let (stream, unknown) = trace::read(BufReader::new(file), always)
        .map_err(|e| format!("{}: {e} (trace refused)", path.display()))?;
    if !unknown.is_empty() {
        eprintln!(
            "memsim: --always names archives the trace does not: {}",
            unknown.join(", ")
        );
    }
    if stream.requests.is_empty() {
        return Err(format!("{}: no requests in the trace", path.display()));
    }
    Ok(Stream {
        source: format!("trace {}", path.display()),
        ..stream
    })
}

pub fn run(a: RouteArgs) -> Result<(), String> {
    check_settings(&a)?;
    let (stream, ttl) = a.source.stream()?;
    let intro = match &a.source.preset {
        Some(p) => preset_intro(p, &stream, ttl, a.max_per_client),
        None => vec![clients_line(&stream, a.max_per_client)],
    };
    let misses = stream.misses(ttl);
    if let Some(path) = &a.write_trace {
        let file = File::create(path).map_err(|e| format!("{}: {e}", path.display()))?;
        trace::write(&stream, &misses, BufWriter::new(file))
            .map_err(|e| format!("{}: {e}", path.display()))?;
        eprintln!(
            "{}: {} misses of {} requests written as a trace → {} (replay with --trace, TTL 0)",
            stream.source,
            misses.len(),
            stream.requests.len(),
            path.display()
        );
        return Ok(());
    }
    let settings: Vec<Settings> = sim::grid(&a.min_share, &a.explore, &a.min_evidence);
    let bar = crate::progress::bar(settings.len() as u64, "settings");
    let limits = sim::Limits {
        max_keys: a.max_keys,
        max_per_client: a.max_per_client,
    };
    let started = std::time::Instant::now();
    let rows = sim::sweep(&stream, &misses, &settings, limits, 2, &|| bar.inc(1));
    eprintln!(
        "{}: {} settings over {} misses in {:.1} s",
        stream.source,
        settings.len(),
        misses.len(),
        started.elapsed().as_secs_f64()
    );
    bar.finish_and_clear();
    if a.json {
        for r in &rows {
            println!("{}", serde_json::to_string(r).map_err(|e| e.to_string())?);
        }
    }
    let ids: Vec<String> = stream.archives.iter().map(|a| a.id.clone()).collect();
    let text = report::summary(&stream.source, &ids, &intro, &rows);
    if let Some(dir) = &a.out {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let csv = dir.join("route.csv");
        let file = File::create(&csv).map_err(|e| format!("{}: {e}", csv.display()))?;
        report::write_csv(&rows, BufWriter::new(file))
            .map_err(|e| format!("{}: {e}", csv.display()))?;
        let svg = dir.join("route.svg");
        report::plot(&svg, &stream.source, &rows, false)?;
        let zoom = dir.join("route-zoom.svg");
        report::plot(&zoom, &stream.source, &rows, true)?;
        let md = dir.join("summary.md");
        let text = format!(
            "{text}\n![requests avoided against recall](route.svg)\n\n\
             ![the same, the recall axis zoomed on the settings](route-zoom.svg)\n"
        );
        std::fs::write(&md, text).map_err(|e| format!("{}: {e}", md.display()))?;
        eprintln!(
            "→ {}, {}, {}, {}",
            csv.display(),
            md.display(),
            svg.display(),
            zoom.display()
        );
    }
    if !a.json {
        print!("{text}");
    }
    Ok(())
}
