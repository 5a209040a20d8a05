//! `memsim`: generate a synthetic series, replay a series through one cache policy, or sweep
//! every caching policy over every TTL.

// A sweep allocates and frees a cache entry at every fetch of every cell: mimalloc is markedly
// faster at that than the system allocator.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use clap::error::ErrorKind;
use clap::{Parser, Subcommand};
use simulations::adaptive::{self, Setting};
use simulations::calibration::Calibration;
use simulations::generate::{generate_each, live_groups, Model, Preset};
use simulations::import::{self, InputKind};
use simulations::replay::{policy, replay, Replayer};
use simulations::series::{
    LiveDay, LiveReader, LiveResolver, SeriesError, SeriesWriter, UriGroups,
};
use simulations::sweep::{summary, sweep_stream_with, write_csv, SeriesInfo, Source};
use std::fs::File;
use std::io::{BufReader, BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use tmproxy_core::policy::{Match, Policy, PolicyKind};

#[derive(Parser)]
#[command(
    name = "memsim",
    about = "MemDays/Q simulations of tmproxy's TimeMap cache policies"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Write a SYNTHETIC series (made-up TimeMaps, deterministic for a seed).
    Generate {
        /// tiny (20 URI-Rs × 10 days), small (200 × 30), small-noredact (200 × 30, no
        /// mementos removed), or jcdl2013 (4,000 × 92, calibrated).
        #[arg(long, value_parser = parse_preset)]
        preset: Preset,
        /// The PRNG seed: the same preset and seed make the same series.
        #[arg(long, default_value_t = DEFAULT_SEED)]
        seed: u64,
        #[arg(long)]
        out: PathBuf,
    },
    /// Replay a series through one policy and print its measures.
    Replay {
        /// A series file.
        #[arg(long, required_unless_present = "preset")]
        series: Option<PathBuf>,
        /// Or a SYNTHETIC series generated on the fly and streamed: tiny, small, small-noredact
        /// or jcdl2013 (see `memsim generate --help`).
        #[arg(long, value_parser = parse_preset, conflicts_with = "series")]
        preset: Option<Preset>,
        /// With --preset: the PRNG seed [default: 1].
        #[arg(long, requires = "preset")]
        seed: Option<u64>,
        /// With --preset: this many URI-Rs instead of the preset's (e.g. 1000000).
        #[arg(long, requires = "preset")]
        uri_rs: Option<u32>,
        /// none, forever, unconditional, conditional or merge.
        #[arg(long, value_parser = parse_policy)]
        policy: PolicyKind,
        /// Days, or `inf` (required unless --ttl-mode is given).
        #[arg(long, value_parser = parse_ttl, required_unless_present = "ttl_mode")]
        ttl: Option<Ttl>,
        #[command(flatten)]
        adaptive: AdaptiveArgs,
        /// How mementos are recognised as the same: loose (archive, datetime) or strict (URI-M).
        #[arg(long = "match", value_parser = parse_match, default_value = "loose")]
        matching: Match,
        /// Print exactly one JSON object with the seven measures.
        #[arg(long)]
        json: bool,
    },
    /// Convert an observation log or a snapshot directory into the series format.
    Convert {
        /// The proxy's observation log, or a directory of daily link-format snapshots.
        #[arg(long)]
        from: PathBuf,
        #[arg(long)]
        out: PathBuf,
    },
    /// Run the series through the real server (in-process, simulated clock, fake archives) and
    /// check that what it served equals `replay` for the same policy (loose match).
    E2e(E2eArgs),
    /// Archive routing: replay a SYNTHETIC holdings model or a trace through the
    /// server's routing code under each setting; report requests avoided against recall.
    Route(simulations::route::command::RouteArgs),
    /// `memsim route`'s misses sent over HTTP to the real server (in-process, routing at each
    /// setting, fake archives answering from the holdings): its requests and recall compared
    /// with the replay's (feature `e2e`).
    RouteE2e(simulations::route::e2e_command::RouteE2eArgs),
    /// Every policy at TTL 0..D-1 and inf (loose match), `none` among them as the baseline
    /// (it never stores, so its rows are the same at every TTL): writes DIR/sweep.csv and
    /// DIR/summary.md.
    Sweep {
        /// Sweep a SYNTHETIC series generated in memory: tiny, small, small-noredact or
        /// jcdl2013 (see `memsim generate --help`).
        #[arg(long, value_parser = parse_preset, conflicts_with = "series")]
        preset: Option<Preset>,
        /// With --preset: the PRNG seed [default: 1].
        #[arg(long, requires = "preset")]
        seed: Option<u64>,
        /// Sweep a series file.
        #[arg(long, required_unless_present = "preset")]
        series: Option<PathBuf>,
        /// Directory to write into (created if missing).
        #[arg(long)]
        out: PathBuf,
        /// `adaptive`: also replay conditional with each entry's own TTL at every
        /// --budget × --ttl-min × --ttl-max, into DIR/adaptive.csv, summary.md and adaptive.svg.
        #[arg(long = "ttl-mode", value_parser = parse_mode, default_value = "fixed")]
        ttl_mode: Mode,
        /// Adaptive budgets (expected memento-days missed per refetch), comma-separated.
        #[arg(
            long,
            value_delimiter = ',',
            default_value = "0.1,0.2,0.3,0.4,0.5,0.6,0.8,1,2,4"
        )]
        budget: Vec<f64>,
        /// Adaptive TTL floors in days, comma-separated.
        #[arg(long = "ttl-min", value_delimiter = ',', default_value = "0,1")]
        ttl_min: Vec<f64>,
        /// Adaptive TTL ceilings in days, comma-separated.
        #[arg(long = "ttl-max", value_delimiter = ',', default_value = "90")]
        ttl_max: Vec<f64>,
    },
}

/// `--ttl-mode`: one TTL for every entry, or each entry its own (`[cache] ttl_mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Fixed,
    Adaptive,
}

fn parse_mode(s: &str) -> Result<Mode, String> {
    match s {
        "fixed" => Ok(Mode::Fixed),
        "adaptive" => Ok(Mode::Adaptive),
        _ => Err("expected fixed or adaptive".to_string()),
    }
}

/// The adaptive rule of one run (`replay`, `e2e`): `[cache] ttl_mode`, `ttl_budget`, `ttl_min`
/// and `ttl_max` as the server reads them.
#[derive(clap::Args, Debug, Clone, Copy)]
struct AdaptiveArgs {
    /// fixed (--ttl for every entry) or adaptive (each entry its own TTL from its history).
    #[arg(long = "ttl-mode", value_parser = parse_mode)]
    ttl_mode: Option<Mode>,
    /// Adaptive: expected memento-days missed per refetch.
    #[arg(long, default_value_t = 0.5)]
    budget: f64,
    /// Adaptive: the shortest TTL, in days.
    #[arg(long = "ttl-min", default_value_t = 1.0)]
    ttl_min: f64,
    /// Adaptive: the longest TTL, in days.
    #[arg(long = "ttl-max", default_value_t = 90.0)]
    ttl_max: f64,
}

impl AdaptiveArgs {
    /// The adaptive setting asked for under `kind`, or None for a fixed TTL.
    fn setting(&self, kind: PolicyKind) -> Result<Option<Setting>, String> {
        if self.ttl_mode != Some(Mode::Adaptive) {
            return Ok(None);
        }
        if !(self.budget.is_finite() && self.budget > 0.0) {
            return Err("--budget must be a number greater than 0".to_string());
        }
        if !(0.0 <= self.ttl_min && self.ttl_min <= self.ttl_max && self.ttl_max <= 36_500.0) {
            return Err("--ttl-min and --ttl-max: 0 <= min <= max <= 36500 days".to_string());
        }
        Ok(Some(Setting {
            kind,
            budget: self.budget,
            min_days: self.ttl_min,
            max_days: self.ttl_max,
        }))
    }

    /// The policy of a run: the adaptive setting, else `kind` at the fixed `ttl`.
    fn policy(&self, kind: PolicyKind, ttl: Option<Ttl>) -> Result<(Policy, String), String> {
        match (self.setting(kind)?, ttl) {
            (Some(s), _) => Ok((s.policy(), format!("adaptive TTL, {}", s.label()))),
            (None, Some(Ttl(t))) => Ok((
                policy(kind, Match::Loose, t),
                format!("TTL {}", t.map_or("inf".to_string(), |n| n.to_string())),
            )),
            (None, None) => Err("give --ttl DAYS (or --ttl-mode adaptive)".to_string()),
        }
    }
}

/// Arguments of `memsim e2e`.
#[derive(clap::Args)]
struct E2eArgs {
    /// A SYNTHETIC series generated in memory: tiny, small, small-noredact or jcdl2013 (small
    /// ones suit; see `memsim generate --help`).
    #[arg(long, value_parser = parse_preset, conflicts_with = "series")]
    preset: Option<Preset>,
    /// With --preset: the PRNG seed [default: 1].
    #[arg(long, requires = "preset")]
    seed: Option<u64>,
    /// Or a series file.
    #[arg(long, required_unless_present = "preset")]
    series: Option<PathBuf>,
    /// none, forever, unconditional, conditional or merge.
    #[arg(long, value_parser = parse_policy, default_value = "conditional")]
    policy: PolicyKind,
    /// Days, or `inf`.
    #[arg(long, value_parser = parse_ttl, default_value = "15")]
    ttl: Ttl,
    #[command(flatten)]
    adaptive: AdaptiveArgs,
    /// Print one JSON object: {"e2e": measures, "replay": measures, "equal": bool}.
    #[arg(long)]
    json: bool,
    /// Have the server append its observation log here (replayable afterwards with --series).
    #[arg(long)]
    observe_log: Option<PathBuf>,
}

/// The seed of a preset's series when none is given (`generate` takes one too).
const DEFAULT_SEED: u64 = 1;

/// A TTL in days; None = ∞ (a newtype so clap does not read `Option` as "optional").
#[derive(Debug, Clone, Copy)]
struct Ttl(Option<i64>);

fn parse_preset(s: &str) -> Result<Preset, String> {
    Preset::by_name(s).ok_or_else(|| format!("expected one of {}", Preset::names()))
}

fn parse_policy(s: &str) -> Result<PolicyKind, String> {
    s.parse::<PolicyKind>().map_err(|e| e.to_string())
}

fn parse_match(s: &str) -> Result<Match, String> {
    s.parse::<Match>().map_err(|e| e.to_string())
}

fn parse_ttl(s: &str) -> Result<Ttl, String> {
    if s == "inf" {
        return Ok(Ttl(None));
    }
    match s.parse::<i64>() {
        Ok(n) if n >= 0 => Ok(Ttl(Some(n))),
        _ => Err("expected a number of days (0 or more) or `inf`".to_string()),
    }
}

/// clap's error text up to its usage block, on one line: `error: the following required
/// arguments were not provided:` and the arguments named on the lines after it.
fn one_line(text: &str) -> String {
    let said: Vec<&str> = text
        .lines()
        .map(str::trim)
        .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more information"))
        .filter(|l| !l.is_empty() && !l.starts_with("tip:"))
        .collect();
    match said.join(" ").trim_start_matches("error: ") {
        "" => "invalid arguments".to_string(),
        line => line.to_string(),
    }
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) => {
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            // One line: what clap says before its usage block (a missing argument's name is on
            // the lines after the first), without the usage block, which is noise in scripts.
            eprintln!("memsim: {}", one_line(&e.to_string()));
            return ExitCode::from(2);
        }
    };
    match run(cli.command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("memsim: {e}");
            ExitCode::from(1)
        }
    }
}

fn run(command: Command) -> Result<(), String> {
    match command {
        Command::Generate { preset, seed, out } => {
            let file = File::create(&out).map_err(|e| format!("{}: {e}", out.display()))?;
            let mut w = SeriesWriter::new(BufWriter::new(file));
            // The calibration is measured on the live days as written, not on the model's knobs.
            let mut resolver = LiveResolver::new();
            let mut groups = UriGroups::new();
            let mut calibration = Calibration::new();
            let s = generate_each(preset, seed, |obs| -> Result<(), String> {
                w.write(&obs)
                    .map_err(|e| format!("{}: {e}", out.display()))?;
                let day = resolver.resolve(0, obs).map_err(|e| e.to_string())?;
                if let Some(done) = groups.push(day) {
                    calibration.push_uri(&done);
                }
                Ok(())
            })?;
            if let Some(done) = groups.finish() {
                calibration.push_uri(&done);
            }
            w.into_inner()
                .flush()
                .map_err(|e| format!("{}: {e}", out.display()))?;
            println!(
                "SYNTHETIC series (made-up TimeMaps, not observations): preset {}, seed {seed}, \
                 {} URI-Rs × {} days, {} observations ({} failed, {} always-empty URI-Rs) → {}",
                preset.name,
                preset.uri_rs,
                preset.days,
                s.observations,
                s.failed,
                s.always_empty,
                out.display()
            );
            println!();
            if preset.model != Model::Jcdl2013 {
                println!(
                    "Only jcdl2013 is calibrated to the paper: the bands show how far this one is."
                );
                println!();
            }
            print!("{}", calibration.table());
            Ok(())
        }
        Command::Replay {
            series,
            preset,
            seed,
            uri_rs,
            policy: kind,
            ttl,
            adaptive,
            matching,
            json,
        } => {
            let (mut p, ttl_text) = adaptive.policy(kind, ttl)?;
            p.matching = matching;
            let (r, name) = match (series, preset) {
                (Some(series), _) => {
                    let input = open_series(&series)?;
                    let r = replay(input, &p).map_err(|e| format!("{}: {e}", series.display()))?;
                    (r, series.display().to_string())
                }
                (None, Some(preset)) => {
                    let seed = seed.unwrap_or(DEFAULT_SEED);
                    let preset = uri_rs.map_or(preset, |n| preset.with_uri_rs(n));
                    // One URI-R at a time, generated and replayed: memory does not grow with N.
                    let mut replayer = Replayer::new(&p);
                    for g in live_groups(preset, seed) {
                        for day in &g.map_err(|e| format!("generated series: {e}"))? {
                            replayer.push(day);
                        }
                    }
                    let name = format!(
                        "SYNTHETIC preset {} seed {seed} ({} URI-Rs)",
                        preset.name, preset.uri_rs
                    );
                    (replayer.finish(), name)
                }
                _ => return Err("give --series FILE, or --preset NAME".to_string()),
            };
            let m = r.measures;
            if json {
                let text = serde_json::to_string(&m).map_err(|e| e.to_string())?;
                println!("{text}");
            } else {
                println!(
                    "{name} (policy {kind}, {ttl_text}, match {matching}): {} URI-Rs, {} requests",
                    r.uri_rs, r.requests
                );
                println!("  MemDays         {}", m.memdays);
                println!("  MemDays (live)  {}", m.memdays_live);
                println!("  MemDays (union) {}", m.memdays_union);
                println!("  Q (fetches)     {}", m.q);
                println!("  missed days     {}", m.missed_days);
                println!("  false-zero days {}", m.false_zero_days);
                println!("  worse replaced  {}", m.worse_replacements);
            }
            Ok(())
        }
        Command::E2e(a) => e2e_command(a),
        Command::Route(a) => simulations::route::command::run(a),
        Command::RouteE2e(a) => simulations::route::e2e_command::run(a),
        Command::Convert { from, out } => {
            let (kind, c) = import::load(&from).map_err(|e| e.to_string())?;
            if kind == InputKind::Series {
                return Err(format!(
                    "{}: already a series (convert reads an observation log or a snapshot \
                     directory)",
                    from.display()
                ));
            }
            let file = File::create(&out).map_err(|e| format!("{}: {e}", out.display()))?;
            import::write_series(&c, BufWriter::new(file))
                .map_err(|e| format!("{}: {e}", out.display()))?;
            report_import(&from, kind, &c);
            println!("→ {}", out.display());
            Ok(())
        }
        Command::Sweep {
            preset,
            seed,
            series,
            out,
            ttl_mode,
            budget,
            ttl_min,
            ttl_max,
        } => {
            let settings = match ttl_mode {
                Mode::Fixed => Vec::new(),
                Mode::Adaptive => adaptive_grid(&budget, &ttl_min, &ttl_max)?,
            };
            // Streamed URI-R by URI-R: a series of any length sweeps in flat memory.
            let (source, acc) = match (preset, series) {
                (Some(p), _) => {
                    let seed = seed.unwrap_or(DEFAULT_SEED);
                    let bar = simulations::progress::bar(u64::from(p.uri_rs), "URI-Rs");
                    let acc =
                        sweep_stream_with(live_groups(p, seed).inspect(|_| bar.inc(1)), &settings)
                            .map_err(|e| format!("generated series: {e}"))?;
                    bar.finish_and_clear();
                    let source = Source::Preset {
                        name: p.name.to_string(),
                        seed,
                    };
                    (source, acc)
                }
                (_, Some(path)) => {
                    let input = open_series(&path)?;
                    let bar = simulations::progress::bar(0, "URI-Rs");
                    let acc = sweep_stream_with(
                        uri_groups(LiveReader::new(input)).inspect(|_| bar.inc(1)),
                        &settings,
                    )
                    .map_err(|e| format!("{}: {e}", path.display()))?;
                    bar.finish_and_clear();
                    (Source::File(path.display().to_string()), acc)
                }
                // clap requires --preset or --series.
                _ => return Err("give --preset NAME, or --series FILE".to_string()),
            };
            let info = SeriesInfo {
                source,
                uri_rs: acc.uri_rs,
                days: acc.days(),
            };
            let adaptive_rows = acc.adaptive_rows();
            let rows = acc.rows(info.days);
            std::fs::create_dir_all(&out).map_err(|e| format!("{}: {e}", out.display()))?;
            let csv = out.join("sweep.csv");
            let file = File::create(&csv).map_err(|e| format!("{}: {e}", csv.display()))?;
            write_csv(&rows, BufWriter::new(file))
                .map_err(|e| format!("{}: {e}", csv.display()))?;
            let md = out.join("summary.md");
            let mut plots = simulations::plot::write_plots(&out, &info, &rows)?;
            let mut text = summary(&info, &rows);
            if !adaptive_rows.is_empty() {
                let csv = out.join("adaptive.csv");
                let file = File::create(&csv).map_err(|e| format!("{}: {e}", csv.display()))?;
                adaptive::write_csv(&adaptive_rows, BufWriter::new(file))
                    .map_err(|e| format!("{}: {e}", csv.display()))?;
                plots.push(simulations::plot::write_adaptive_plot(
                    &out,
                    &info,
                    &rows,
                    &adaptive_rows,
                )?);
                text += &simulations::adaptive_summary::summary_section(&rows, &adaptive_rows);
            }
            text += &simulations::plot::summary_section(&out, &plots, &rows);
            std::fs::write(&md, text).map_err(|e| format!("{}: {e}", md.display()))?;
            for p in &plots {
                println!("plot → {}", p.display());
            }
            println!(
                "swept {} URI-Rs × {} days, {} runs → {}, {}",
                info.uri_rs,
                info.days,
                rows.len(),
                csv.display(),
                md.display()
            );
            Ok(())
        }
    }
}

/// The adaptive grid of `sweep --ttl-mode adaptive`, each value checked.
fn adaptive_grid(budgets: &[f64], mins: &[f64], maxes: &[f64]) -> Result<Vec<Setting>, String> {
    if budgets.iter().any(|b| !(b.is_finite() && *b > 0.0)) {
        return Err("--budget: every budget must be a number greater than 0".to_string());
    }
    if mins
        .iter()
        .chain(maxes)
        .any(|d| !(d.is_finite() && (0.0..=36_500.0).contains(d)))
    {
        return Err("--ttl-min, --ttl-max: days from 0 to 36500".to_string());
    }
    let grid = adaptive::grid(budgets, mins, maxes);
    if grid.is_empty() {
        return Err("--ttl-min, --ttl-max: no pair with min <= max".to_string());
    }
    Ok(grid)
}

/// Live days grouped by URI-R (a series is sorted by URI-R).
fn uri_groups<I>(days: I) -> impl Iterator<Item = Result<Vec<LiveDay>, SeriesError>>
where
    I: Iterator<Item = Result<LiveDay, SeriesError>>,
{
    let mut groups = Some(UriGroups::new());
    let mut days = days.fuse();
    std::iter::from_fn(move || loop {
        match days.next() {
            Some(Ok(day)) => {
                if let Some(done) = groups.as_mut()?.push(day) {
                    return Some(Ok(done));
                }
            }
            Some(Err(e)) => {
                groups = None;
                return Some(Err(e));
            }
            None => return groups.take()?.finish().map(Ok),
        }
    })
}

/// Without the `e2e` feature memsim is the pure harness alone: it cannot run the server.
#[cfg(not(feature = "e2e"))]
fn e2e_command(_: E2eArgs) -> Result<(), String> {
    Err(
        "memsim e2e runs the server in-process, which this memsim was built without: \
         build it with the `e2e` feature (cargo run -p simulations --features e2e -- e2e …)"
            .to_string(),
    )
}

#[cfg(feature = "e2e")]
fn e2e_command(a: E2eArgs) -> Result<(), String> {
    let groups: Vec<Vec<LiveDay>> = match (a.preset, &a.series) {
        (Some(p), _) => live_groups(p, a.seed.unwrap_or(DEFAULT_SEED))
            .collect::<Result<_, _>>()
            .map_err(|e| format!("generated series: {e}"))?,
        (_, Some(path)) => {
            let input = open_series(path)?;
            uri_groups(LiveReader::new(input))
                .collect::<Result<_, _>>()
                .map_err(|e| format!("{}: {e}", path.display()))?
        }
        _ => return Err("give --preset NAME, or --series FILE".to_string()),
    };
    let setting = a.adaptive.setting(a.policy)?;
    let (p, ttl) = a.adaptive.policy(a.policy, Some(a.ttl))?;
    let mut replayer = Replayer::new(&p);
    for day in groups.iter().flatten() {
        replayer.push(day);
    }
    let replayed = replayer.finish();
    let served = simulations::e2e::run_with(
        groups,
        a.policy,
        a.ttl.0,
        setting.map(|s| s.rule()),
        a.observe_log.as_deref(),
    )?;
    let equal = served.measures == replayed.measures;
    if a.json {
        let v = serde_json::json!({
            "policy": a.policy.as_str(),
            "ttl": match setting {
                Some(_) => "adaptive".to_string(),
                None => a.ttl.0.map_or("inf".to_string(), |n| n.to_string()),
            },
            "adaptive": setting.map(|s| serde_json::json!({
                "budget": s.budget, "ttl_min_days": s.min_days, "ttl_max_days": s.max_days,
            })),
            "e2e": served.measures,
            "replay": replayed.measures,
            "equal": equal,
        });
        println!("{v}");
    } else {
        println!(
            "e2e (policy {}, {ttl}, loose): {} URI-Rs, {} requests to the server, {} to the \
             archives",
            a.policy, served.uri_rs, served.requests, served.archive_requests
        );
        println!("  measure             e2e       replay");
        let rows = [
            (
                "MemDays",
                served.measures.memdays,
                replayed.measures.memdays,
            ),
            (
                "MemDays (live)",
                served.measures.memdays_live,
                replayed.measures.memdays_live,
            ),
            (
                "MemDays (union)",
                served.measures.memdays_union,
                replayed.measures.memdays_union,
            ),
            ("Q (fetches)", served.measures.q, replayed.measures.q),
            (
                "missed days",
                served.measures.missed_days,
                replayed.measures.missed_days,
            ),
            (
                "false-zero days",
                served.measures.false_zero_days,
                replayed.measures.false_zero_days,
            ),
            (
                "worse replaced",
                served.measures.worse_replacements,
                replayed.measures.worse_replacements,
            ),
        ];
        for (name, e, r) in rows {
            let mark = if e == r { "" } else { "   <- differs" };
            println!("  {name:<16}{e:>10}{r:>12}{mark}");
        }
        println!(
            "{}",
            if equal {
                "equal: the server applies the policy replay measures"
            } else {
                "NOT EQUAL"
            }
        );
    }
    if equal {
        Ok(())
    } else {
        Err("e2e and replay differ (see above)".to_string())
    }
}

/// A series to read from any input `memsim` accepts: a series file as it is, an observation log
/// or a snapshot directory converted first (what was detected goes to stderr, so `--json`
/// output stays one object).
fn open_series(path: &std::path::Path) -> Result<Box<dyn std::io::BufRead>, String> {
    let (kind, c) = import::load(path).map_err(|e| e.to_string())?;
    if kind == InputKind::Series {
        let file = File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
        return Ok(Box::new(BufReader::new(file)));
    }
    let mut bytes = Vec::new();
    import::write_series(&c, &mut bytes).map_err(|e| e.to_string())?;
    report_import(path, kind, &c);
    Ok(Box::new(std::io::Cursor::new(bytes)))
}

fn report_import(path: &std::path::Path, kind: InputKind, c: &import::Converted) {
    eprintln!(
        "{}: {kind}, {} URI-Rs over {} days, {} failed days",
        path.display(),
        c.uri_rs,
        c.days,
        c.failed
    );
    for w in &c.warnings {
        eprintln!("  warning: {w}");
    }
}
