//! SYNTHETIC series for exercising the harness: every TimeMap here is made up by a seeded PRNG.
//! The small presets (`tiny`, `small`) follow what the paper observed in shape (growth in steps
//! about a month apart, one archive missing for a few days, always-empty URI-Rs, URI-M
//! migrations, rare redactions, observer outages) so that every policy and every Table 1 case gets
//! exercised cheaply; `jcdl2013` is the calibrated stand-in for the paper's data set (see
//! [`crate::jcdl`]). No number measured on any of them says anything about real archives.

use crate::replay::day0;
pub use crate::rng::Rng;
use crate::series::{
    memento_triple, LiveDay, LiveResolver, ObsStatus, Observation, SeriesError, SeriesWriter,
    UriGroups,
};
use chrono::{DateTime, TimeZone, Utc};
use std::collections::BTreeSet;
use std::io::{self, Write};

/// A named size of synthetic series.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Preset {
    pub name: &'static str,
    pub uri_rs: u32,
    pub days: u32,
    pub model: Model,
    /// Whether archives withdraw mementos (off: a series on which `merge` can only gain).
    pub redactions: bool,
}

/// Which generator a preset runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Model {
    /// Small and quick: every feature a few times, one PRNG stream for the whole series.
    Simple,
    /// Calibrated to the paper's observations ([`crate::jcdl`]); one PRNG stream per URI-R, so
    /// any URI-R can be generated alone (and the series streamed, or split across threads).
    Jcdl2013,
}

pub const PRESETS: [Preset; 4] = [
    Preset {
        name: "tiny",
        uri_rs: 20,
        days: 10,
        model: Model::Simple,
        redactions: true,
    },
    Preset {
        name: "small",
        uri_rs: 200,
        days: 30,
        model: Model::Simple,
        redactions: true,
    },
    Preset {
        name: "small-noredact",
        uri_rs: 200,
        days: 30,
        model: Model::Simple,
        redactions: false,
    },
    Preset {
        name: "jcdl2013",
        uri_rs: 4_000,
        days: 92,
        model: Model::Jcdl2013,
        redactions: true,
    },
];

impl Preset {
    pub fn by_name(name: &str) -> Option<Preset> {
        PRESETS.into_iter().find(|p| p.name == name)
    }

    pub fn names() -> String {
        PRESETS.map(|p| p.name).join(", ")
    }

    /// The same model with another number of URI-Rs (the streaming benchmarks' 1,000,000).
    pub fn with_uri_rs(self, uri_rs: u32) -> Preset {
        Preset { uri_rs, ..self }
    }
}

/// The archives a synthetic URI-R may be held by: (id, URI-M host).
const ARCHIVES: [(&str, &str); 6] = [
    ("ia", "web.archive.org"),
    ("loc", "webarchive.loc.gov"),
    ("uk", "www.webarchive.org.uk"),
    ("pt", "arquivo.pt"),
    ("is", "archive.today"),
    ("ait", "wayback.archive-it.org"),
];

// Daily probabilities, chosen so a 30-day series sees each kind of change a few times.
/// An archive captures the page (growth; mean interval ~30 days, as observed).
const P_CAPTURE: f64 = 1.0 / 30.0;
/// One archive goes missing from the answer for 1–3 days (case 6, the most frequent change).
const P_OUTAGE: f64 = 0.04;
/// An archive restructures its URI-Ms (same archive and datetime, new URI-M).
const P_MIGRATION: f64 = 0.003;
/// An archive withdraws one memento for good.
const P_REDACTION: f64 = 0.002;
/// The observer fails for this URI-R that day.
const P_FAILED: f64 = 0.01;
/// A URI-R no archive ever holds.
const P_ALWAYS_EMPTY: f64 = 0.08;
/// An archive that holds nothing yet on day 0 (its first capture later is a case 3).
const P_LATE_ARCHIVE: f64 = 0.2;

/// One archive's holdings for one URI-R.
struct Holding {
    id: &'static str,
    host: &'static str,
    /// Memento-Datetimes as Unix seconds, sorted.
    captures: BTreeSet<i64>,
    /// Bumped by a migration: picks the URI-M scheme.
    layout: u32,
    /// Missing from answers while the day is below this.
    out_until: u32,
}

impl Holding {
    fn uri_m(&self, ts: &str, uri_r: &str) -> String {
        // Alternating layouts: what a scheme change or a path restructuring does to URI-Ms.
        if self.layout.is_multiple_of(2) {
            format!("http://{}/web/{ts}/{uri_r}", self.host)
        } else {
            format!("https://{}/wayback/{ts}/{uri_r}", self.host)
        }
    }
}

/// What [`generate`] wrote.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Summary {
    pub observations: u64,
    pub failed: u64,
    pub always_empty: u64,
}

/// Writes the preset's SYNTHETIC series for `seed`, sorted by URI-R then day as the replay needs.
pub fn generate<W: Write>(preset: Preset, seed: u64, out: W) -> io::Result<Summary> {
    let mut w = SeriesWriter::new(out);
    let summary = generate_each(preset, seed, |obs| w.write(&obs))?;
    w.into_inner().flush()?;
    Ok(summary)
}

/// The preset's SYNTHETIC series for `seed`, one observation at a time in series order (sorted
/// by URI-R then day), handed to `sink`; an error from `sink` stops the generation.
pub fn generate_each<E>(
    preset: Preset,
    seed: u64,
    mut sink: impl FnMut(Observation) -> Result<(), E>,
) -> Result<Summary, E> {
    match preset.model {
        Model::Simple => generate_simple(preset, seed, sink),
        Model::Jcdl2013 => {
            let mut summary = Summary::default();
            for i in 0..preset.uri_rs {
                let u = crate::jcdl::uri_r(seed, i, preset.days);
                summary.always_empty += u64::from(u.always_empty);
                for obs in u.observations {
                    summary.observations += 1;
                    summary.failed += u64::from(obs.status == ObsStatus::Failed);
                    sink(obs)?;
                }
            }
            Ok(summary)
        }
    }
}

/// The preset's SYNTHETIC series as live days, one URI-R at a time: generated lazily, URI-R by
/// URI-R, for `jcdl2013` (so a sweep streams it in flat memory); the small presets are built
/// whole first (their one PRNG stream runs across URI-Rs, and they are small).
pub fn live_groups(
    preset: Preset,
    seed: u64,
) -> Box<dyn Iterator<Item = Result<Vec<LiveDay>, SeriesError>> + Send> {
    match preset.model {
        Model::Jcdl2013 => Box::new((0..preset.uri_rs).map(move |i| {
            let mut resolver = LiveResolver::new();
            crate::jcdl::uri_r(seed, i, preset.days)
                .observations
                .into_iter()
                .map(|obs| resolver.resolve(0, obs))
                .collect()
        })),
        Model::Simple => {
            let mut resolver = LiveResolver::new();
            let mut groups = UriGroups::new();
            let mut out = Vec::new();
            let done = generate_simple(preset, seed, |obs| -> Result<(), SeriesError> {
                if let Some(g) = groups.push(resolver.resolve(0, obs)?) {
                    out.push(Ok(g));
                }
                Ok(())
            });
            if let Err(e) = done {
                out.push(Err(e));
            }
            out.extend(groups.finish().map(Ok));
            Box::new(out.into_iter())
        }
    }
}

fn generate_simple<E>(
    preset: Preset,
    seed: u64,
    mut sink: impl FnMut(Observation) -> Result<(), E>,
) -> Result<Summary, E> {
    let mut rng = Rng::new(seed);
    let mut summary = Summary::default();
    // The observer's own outage, the same days for every URI-R (the paper lost 3 days in May).
    let window_len = (preset.days / 10).min(3);
    let window = preset.days / 3..preset.days / 3 + window_len;
    let epoch = Utc
        .with_ymd_and_hms(1996, 1, 1, 0, 0, 0)
        .single()
        .map_or(0, |d| d.timestamp());
    let start = day0().timestamp();
    for i in 0..preset.uri_rs {
        // Fixed width, so generation order is the sorted order.
        let uri_r = format!("http://site{i:05}.example/");
        let empty = rng.chance(P_ALWAYS_EMPTY);
        summary.always_empty += u64::from(empty);
        let mut holdings = if empty {
            Vec::new()
        } else {
            pick_archives(&mut rng)
        };
        for h in &mut holdings {
            if !rng.chance(P_LATE_ARCHIVE) {
                // Small TimeMaps keep debug-build sweeps quick; sizes matter less than changes here.
                let n = 1 + rng.below(12);
                while (h.captures.len() as u64) < n {
                    h.captures
                        .insert(epoch + rng.below((start - epoch - 86_400) as u64) as i64);
                }
            }
        }
        for t in 0..preset.days {
            let now = start + i64::from(t) * 86_400;
            if t > 0 {
                evolve(&mut rng, &mut holdings, t, now, preset.redactions);
            }
            let failed = window.contains(&t) || rng.chance(P_FAILED);
            let mementos = if failed {
                Vec::new()
            } else {
                observe(&holdings, t, &uri_r)
            };
            summary.failed += u64::from(failed);
            summary.observations += 1;
            sink(Observation {
                uri_r: uri_r.clone(),
                day: t,
                status: if failed {
                    ObsStatus::Failed
                } else {
                    ObsStatus::Ok
                },
                mementos,
            })?;
        }
    }
    Ok(summary)
}

/// 2–4 distinct archives, in the pool's order.
fn pick_archives(rng: &mut Rng) -> Vec<Holding> {
    let k = 2 + rng.below(3) as usize;
    let mut chosen: BTreeSet<usize> = BTreeSet::new();
    while chosen.len() < k {
        chosen.insert(rng.below(ARCHIVES.len() as u64) as usize);
    }
    chosen
        .into_iter()
        .map(|a| Holding {
            id: ARCHIVES[a].0,
            host: ARCHIVES[a].1,
            captures: BTreeSet::new(),
            layout: 0,
            out_until: 0,
        })
        .collect()
}

/// One day passes for a URI-R's archives.
fn evolve(rng: &mut Rng, holdings: &mut [Holding], t: u32, now: i64, redactions: bool) {
    for h in holdings.iter_mut() {
        if rng.chance(P_CAPTURE) {
            for _ in 0..1 + rng.below(3) {
                // Captured during the day before the request.
                h.captures.insert(now - 1 - rng.below(86_399) as i64);
            }
        }
        if rng.chance(P_MIGRATION) {
            h.layout += 1;
        }
        if redactions && h.captures.len() > 1 && rng.chance(P_REDACTION) {
            let k = rng.below(h.captures.len() as u64) as usize;
            if let Some(&gone) = h.captures.iter().nth(k) {
                h.captures.remove(&gone);
            }
        }
    }
    if !holdings.is_empty() && rng.chance(P_OUTAGE) {
        let k = rng.below(holdings.len() as u64) as usize;
        holdings[k].out_until = t + 1 + rng.below(3) as u32;
    }
}

/// What the observer sees on day t: every archive not in an outage, its mementos by datetime.
fn observe(holdings: &[Holding], t: u32, uri_r: &str) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    for h in holdings.iter().filter(|h| t >= h.out_until) {
        for &secs in &h.captures {
            let Some(dt) = DateTime::<Utc>::from_timestamp(secs, 0) else {
                continue;
            };
            let (archive, ts, _) = memento_triple(h.id, dt, "");
            let uri_m = h.uri_m(&ts, uri_r);
            out.push((archive, ts, uri_m));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(preset: &str, seed: u64) -> Vec<u8> {
        let p = Preset::by_name(preset).expect("preset");
        let mut out = Vec::new();
        generate(p, seed, &mut out).expect("write to a Vec");
        out
    }

    #[test]
    fn same_seed_same_bytes_other_seed_other_bytes() {
        let a = bytes("tiny", 7);
        assert_eq!(a, bytes("tiny", 7));
        assert_ne!(a, bytes("tiny", 8));
    }

    #[test]
    fn presets_have_their_sizes_and_read_back_sorted() {
        let a = bytes("tiny", 1);
        let days: Vec<_> = crate::series::LiveReader::new(&a[..])
            .collect::<Result<_, _>>()
            .expect("a generated series is valid");
        assert_eq!(days.len(), 20 * 10);
        let j = Preset::by_name("jcdl2013").expect("the calibrated preset");
        assert_eq!((j.uri_rs, j.days), (4_000, 92));
    }

    #[test]
    fn small_exercises_every_feature() {
        let a = bytes("small", 1);
        let text = String::from_utf8(a).expect("utf-8");
        assert!(text.contains(r#""status":"failed""#));
        assert!(text.contains("https://"), "a migration happened");
        assert!(
            text.contains(r#""status":"ok","mementos":[]"#),
            "some empty TimeMaps"
        );
    }
}
