//! `memsim`: generate a synthetic series, replay a series through one cache policy, or sweep
//! every caching policy over every TTL.

use clap::error::ErrorKind;
use clap::{Parser, Subcommand};
use simulations::generate::{generate, Preset};
use simulations::replay::{policy, replay};
use simulations::series::{LiveDay, LiveReader};
use simulations::sweep::{summary, sweep, write_csv, SeriesInfo, Source};
use std::fs::File;
use std::io::{BufReader, BufWriter};
use std::path::PathBuf;
use std::process::ExitCode;
use tmproxy::cache::policy::{Match, PolicyKind};

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
        /// tiny (20 URI-Rs × 10 days) or small (200 × 30).
        #[arg(long, value_parser = parse_preset)]
        preset: Preset,
        #[arg(long)]
        seed: u64,
        #[arg(long)]
        out: PathBuf,
    },
    /// Replay a series through one policy and print its measures.
    Replay {
        #[arg(long)]
        series: PathBuf,
        /// none, forever, unconditional, conditional or merge.
        #[arg(long, value_parser = parse_policy)]
        policy: PolicyKind,
        /// Days, or `inf`.
        #[arg(long, value_parser = parse_ttl)]
        ttl: Ttl,
        /// How mementos are recognised as the same: loose (archive, datetime) or strict (URI-M).
        #[arg(long = "match", value_parser = parse_match, default_value = "loose")]
        matching: Match,
        /// Print exactly one JSON object with the seven measures.
        #[arg(long)]
        json: bool,
    },
    /// Every policy but `none` at TTL 0..D-1 and inf (loose match): writes DIR/sweep.csv and
    /// DIR/summary.md.
    Sweep {
        /// Sweep a SYNTHETIC series generated in memory (needs --seed).
        #[arg(long, value_parser = parse_preset, requires = "seed", conflicts_with = "series")]
        preset: Option<Preset>,
        #[arg(long, requires = "preset")]
        seed: Option<u64>,
        /// Sweep a series file.
        #[arg(long, required_unless_present = "preset")]
        series: Option<PathBuf>,
        /// Directory to write into (created if missing).
        #[arg(long)]
        out: PathBuf,
    },
}

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

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) => {
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            // One line: clap's first line names the problem; its usage block is noise in scripts.
            let text = e.to_string();
            let line = text.lines().next().unwrap_or("invalid arguments");
            eprintln!("memsim: {}", line.trim_start_matches("error: "));
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
            let s = generate(preset, seed, BufWriter::new(file))
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
            Ok(())
        }
        Command::Replay {
            series,
            policy: kind,
            ttl,
            matching,
            json,
        } => {
            let file = File::open(&series).map_err(|e| format!("{}: {e}", series.display()))?;
            let p = policy(kind, matching, ttl.0);
            let r = replay(BufReader::new(file), &p)
                .map_err(|e| format!("{}: {e}", series.display()))?;
            let m = r.measures;
            if json {
                let text = serde_json::to_string(&m).map_err(|e| e.to_string())?;
                println!("{text}");
            } else {
                let ttl = ttl.0.map_or("inf".to_string(), |n| n.to_string());
                println!(
                    "{} (policy {kind}, TTL {ttl}, match {matching}): {} URI-Rs, {} requests",
                    series.display(),
                    r.uri_rs,
                    r.requests
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
        Command::Sweep {
            preset,
            seed,
            series,
            out,
        } => {
            let (source, days) = match (preset, seed, series) {
                (Some(p), Some(seed), _) => {
                    let mut bytes = Vec::new();
                    generate(p, seed, &mut bytes).map_err(|e| format!("generate: {e}"))?;
                    let days =
                        read_days(&bytes[..]).map_err(|e| format!("generated series: {e}"))?;
                    let source = Source::Preset {
                        name: p.name.to_string(),
                        seed,
                    };
                    (source, days)
                }
                (_, _, Some(path)) => {
                    let file = File::open(&path).map_err(|e| format!("{}: {e}", path.display()))?;
                    let days = read_days(BufReader::new(file))
                        .map_err(|e| format!("{}: {e}", path.display()))?;
                    (Source::File(path.display().to_string()), days)
                }
                // clap requires --preset with --seed, or --series.
                _ => return Err("give --preset NAME --seed N, or --series FILE".to_string()),
            };
            let info = SeriesInfo::of(source, &days);
            let rows = sweep(&days, info.days);
            std::fs::create_dir_all(&out).map_err(|e| format!("{}: {e}", out.display()))?;
            let csv = out.join("sweep.csv");
            let file = File::create(&csv).map_err(|e| format!("{}: {e}", csv.display()))?;
            write_csv(&rows, BufWriter::new(file))
                .map_err(|e| format!("{}: {e}", csv.display()))?;
            let md = out.join("summary.md");
            std::fs::write(&md, summary(&info, &rows))
                .map_err(|e| format!("{}: {e}", md.display()))?;
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

/// The whole series in memory: the sweep replays it once per cell, and parsing is the slow part.
fn read_days<R: std::io::BufRead>(
    input: R,
) -> Result<Vec<LiveDay>, simulations::series::SeriesError> {
    LiveReader::new(input).collect()
}
