//! `jcdl2013`: the calibrated SYNTHETIC stand-in for the paper's data set (4,000 URI-Rs observed
//! daily for 92 days from 2012-05-01), which is not available. Every TimeMap here is made up by a
//! seeded PRNG; the knobs are set so that the facts listed in `docs/cache-policy.md` hold in
//! shape, and [`crate::calibration`] measures what they achieved on the generated series.
//!
//! The model, per URI-R (each with its own PRNG stream, so URI-Rs can be generated alone):
//! - one of the paper's four sources in turn (DMOZ, Delicious, Bitly, search-engine caches): the
//!   source sets how likely the URI-R is archived at all and how large its TimeMap starts;
//! - archives of 2012 (the Internet Archive in most TimeMaps, a few smaller ones), with
//!   heavy-tailed sizes (Pareto, capped near 5,800), and URI-R 0 playing Google Translate's
//!   TimeMap of 5,800 mementos, most from the IA and Archief Web, which the paper's set holds;
//! - growth in a few steps (most often 3 in 92 days), gains scaled to the TimeMap's size, and
//!   daily captures for the largest TimeMaps;
//! - flaky URI-Rs (about one in six): one archive drops out of the answer on single days (case 6,
//!   then case 3 on its return, or case 5 when it was the only archive), sometimes for good;
//! - rare redactions and partial answers (case 7), rare all-archives-timed-out answers (a false
//!   zero), archive.today arriving during the window (case 3);
//! - Archief Web reporting 00:00:00 for every Memento-Datetime while its URI-Ms keep the capture
//!   time (its loose keys collide, its URI-Ms do not: the paper's Strict/Loose gap), Archive-It
//!   listing some captures in two collections (equal datetimes, different URI-Ms);
//! - URI-M migrations: the Library of Congress restructures its paths on day 30 and WebCite
//!   moves to https on day 61 (same loose keys, new URI-Ms);
//! - the paper's three outages, placed by us where the paper gives no day: the observer down
//!   May 16–18 (days 15–17), the undetected power failure for 6 days in June (days 44–49), both
//!   `failed` for every URI-R, and the Internet Archive proxy broken by an API change (days
//!   57–63), `failed` for the URI-Rs the IA holds: the 2012 aggregator waited for every proxy, so
//!   the download failed rather than coming back without the IA. (Counting those days as IA-less
//!   answers would make nearly every URI-R shrink, against the 80.2% that never do.)

use crate::replay::day0;
use crate::rng::Rng;
use crate::series::{ObsStatus, Observation};
use chrono::DateTime;
use tmproxy_core::timemap::datetime::format_14digit;

/// One URI-R's generated days.
pub struct UriSeries {
    pub uri_r: String,
    pub always_empty: bool,
    pub observations: Vec<Observation>,
}

/// An archive of 2012 that a TimeMap may list.
struct ArchiveDef {
    id: &'static str,
    /// Chance that it holds a URI-R that is archived at all.
    holds: f64,
    /// Unix seconds of its earliest memento.
    since: i64,
    /// Reports 00:00:00 for every Memento-Datetime (Archief Web).
    midnight: bool,
    /// Chance that a capture is listed in a second collection at the same datetime.
    dual: f64,
}

const IA: usize = 0;
const LOC: usize = 2;
const ARCHIEF: usize = 3;
const WEBCITE: usize = 5;
const ARCHIVE_TODAY: usize = 6;

const ARCHIVES: [ArchiveDef; 7] = [
    ArchiveDef {
        id: "ia",
        holds: 0.93,
        since: 820_454_400, // 1996
        midnight: false,
        dual: 0.0,
    },
    ArchiveDef {
        id: "ait",
        holds: 0.12,
        since: 1_136_073_600, // 2006
        midnight: false,
        dual: 0.25,
    },
    ArchiveDef {
        id: "loc",
        holds: 0.08,
        since: 1_104_537_600, // 2005
        midnight: false,
        dual: 0.0,
    },
    ArchiveDef {
        id: "archief",
        holds: 0.10,
        since: 1_167_609_600, // 2007
        midnight: true,
        dual: 0.0,
    },
    ArchiveDef {
        id: "ukwa",
        holds: 0.07,
        since: 1_104_537_600,
        midnight: false,
        dual: 0.0,
    },
    ArchiveDef {
        id: "webcite",
        holds: 0.06,
        since: 1_104_537_600,
        midnight: false,
        dual: 0.0,
    },
    // archive.today opened in May 2012: it only arrives during the window.
    ArchiveDef {
        id: "is",
        holds: 0.0,
        since: 1_325_376_000,
        midnight: false,
        dual: 0.0,
    },
];

/// The paper's four sources, 1,000 URI-Rs each: (name, chance of never being archived,
/// the IA's Pareto minimum size).
const SOURCES: [(&str, f64, f64); 4] = [
    ("dmoz", 0.02, 4.0),
    ("delicious", 0.05, 3.0),
    ("bitly", 0.22, 1.5),
    ("search", 0.07, 2.5),
];

/// Number of growth steps in the window, for URI-Rs that are not captured daily: most often 3
/// ("most TimeMaps underwent 3 changes"), the mean of 92/k near 37.6 days.
const STEPS: [(u32, f64); 7] = [
    (0, 0.05),
    (1, 0.20),
    (2, 0.24),
    (3, 0.30),
    (4, 0.12),
    (5, 0.06),
    (6, 0.03),
];

/// A URI-R whose TimeMap has a flaky archive. Nearly every flaky TimeMap shrinks at some point,
/// so this sets the share that never shrink (80.2% in the paper; 0.145 gave 81.4% on average
/// over seeds 1–20, and left case 2 level with case 6 in some seeds).
const P_FLAKY: f64 = 0.158;
/// The flaky archive's chance of missing from a day's answer.
const P_FLAKY_OUT: f64 = 0.45;
/// A flaky archive that leaves for good at some day (restructuring, a lost proxy).
const P_FLAKY_LEAVES: f64 = 0.2;
/// One memento withdrawn for good during the window.
const P_REDACTION: f64 = 0.01;
/// One day on which one archive lists only part of its mementos (a timed-out page).
const P_PARTIAL: f64 = 0.015;
/// A day on which every archive timed out and the answer was empty (a false zero).
const P_ALL_TIMED_OUT: f64 = 0.0004;
/// archive.today captures the URI-R during the window.
const P_ARCHIVE_TODAY: f64 = 0.04;
/// A random observer failure on one URI-R's day, beyond the outages.
const P_FAILED: f64 = 0.002;
/// A TimeMap at least this large is captured (almost) daily.
const DAILY_CAPTURE_SIZE: usize = 400;
/// The largest TimeMap (Google Translate's, in the paper).
const MAX_SIZE: f64 = 5_800.0;
/// The URI-R that plays Google Translate: the paper's data set holds that 5,800-memento TimeMap
/// (most of it from the IA and Archief Web), which a heavy-tailed draw over 4,000 URI-Rs makes
/// only in some seeds, so it is placed rather than left to chance.
const GIANT: u32 = 0;
/// Its initial mementos at the IA and at Archief Web (each ± 2%); the window's growth and the
/// other archives' draws bring it near 5,800.
const GIANT_SIZES: [(usize, u64); 2] = [(IA, 3_700), (ARCHIEF, 1_700)];

/// The paper's outages as day ranges (2012-05-01 = day 0); see the module comment.
pub const OBSERVER_DOWN: std::ops::RangeInclusive<u32> = 15..=17;
pub const POWER_FAILURE: std::ops::RangeInclusive<u32> = 44..=49;
pub const IA_PROXY_BROKEN: std::ops::RangeInclusive<u32> = 57..=63;
/// URI-M restructurings (archive, day).
pub const MIGRATIONS: [(usize, u32); 2] = [(LOC, 30), (WEBCITE, 61)];

/// One archive's holding for the URI-R.
struct Holding {
    archive: usize,
    /// (Unix seconds, collection) of each memento, in capture order.
    captures: Vec<(i64, u8)>,
    /// Absent from answers from this day on (a flaky archive that left).
    gone_from: u32,
    /// Present in answers from this day on (archive.today arriving).
    present_from: u32,
}

/// Generates URI-R number `i` of the series for `seed`, over `days` days.
pub fn uri_r(seed: u64, i: u32, days: u32) -> UriSeries {
    // A stream per URI-R: mixing the index through one SplitMix step decorrelates neighbours.
    let mut rng =
        Rng::new(Rng::new(seed ^ u64::from(i).wrapping_mul(0xD1B5_4A32_D192_ED03)).next_u64());
    let (source, p_empty, ia_min) = SOURCES[i as usize % SOURCES.len()];
    // Fixed width: generation order is the series' sorted order.
    let uri_r = format!("http://r{i:07}.example/{source}");
    let start = day0().timestamp();
    let giant = i == GIANT;
    let always_empty = rng.chance(p_empty) && !giant;
    let mut holdings = if always_empty {
        Vec::new()
    } else {
        initial_holdings(&mut rng, ia_min, start)
    };
    if giant {
        grow_giant(&mut rng, &mut holdings, start);
    }

    // What happens during the window, drawn up front.
    let hot = holdings
        .iter()
        .any(|h| h.archive == IA && h.captures.len() >= DAILY_CAPTURE_SIZE);
    let mut steps = vec![false; days as usize];
    if !holdings.is_empty() {
        let k = pick_weighted(&mut rng, &STEPS);
        let mut placed = 0;
        while placed < k.min(days.saturating_sub(1)) {
            let d = 1 + rng.below(u64::from(days - 1)) as usize;
            if !steps[d] {
                steps[d] = true;
                placed += 1;
            }
        }
    }
    // The flaky one is the smallest holding: small archives' proxies were the unreliable ones.
    let flaky = (!holdings.is_empty() && rng.chance(P_FLAKY)).then(|| {
        (0..holdings.len())
            .min_by_key(|&k| holdings[k].captures.len())
            .unwrap_or(0)
    });
    if let Some(f) = flaky {
        if rng.chance(P_FLAKY_LEAVES) {
            holdings[f].gone_from = 1 + rng.below(u64::from(days.max(2) - 1)) as u32;
        }
    }
    let redaction_day = (!holdings.is_empty() && rng.chance(P_REDACTION))
        .then(|| 1 + rng.below(u64::from(days.max(2) - 1)) as u32);
    let partial = (!holdings.is_empty() && rng.chance(P_PARTIAL)).then(|| {
        (
            1 + rng.below(u64::from(days.max(2) - 1)) as u32,
            rng.below(holdings.len() as u64) as usize,
        )
    });
    if !always_empty && rng.chance(P_ARCHIVE_TODAY) {
        holdings.push(Holding {
            archive: ARCHIVE_TODAY,
            captures: Vec::new(),
            gone_from: u32::MAX,
            present_from: 1 + rng.below(u64::from(days.max(2) - 1)) as u32,
        });
    }
    let holds_ia = holdings.iter().any(|h| h.archive == IA);

    let mut observations = Vec::with_capacity(days as usize);
    for t in 0..days {
        let now = start + i64::from(t) * 86_400;
        if t > 0 && !holdings.is_empty() {
            grow(&mut rng, &mut holdings, t, now, steps[t as usize], hot);
            if redaction_day == Some(t) {
                redact(&mut rng, &mut holdings);
            }
        }
        let failed = OBSERVER_DOWN.contains(&t)
            || POWER_FAILURE.contains(&t)
            || (holds_ia && IA_PROXY_BROKEN.contains(&t))
            || rng.chance(P_FAILED);
        let timed_out = !holdings.is_empty() && rng.chance(P_ALL_TIMED_OUT);
        let mementos = if failed || timed_out {
            Vec::new()
        } else {
            let out = flaky.filter(|_| rng.chance(P_FLAKY_OUT));
            let partial = partial.filter(|(d, _)| *d == t).map(|(_, k)| k);
            observe(&holdings, t, &uri_r, out, partial)
        };
        observations.push(Observation {
            uri_r: uri_r.clone(),
            day: t,
            status: if failed {
                ObsStatus::Failed
            } else {
                ObsStatus::Ok
            },
            mementos,
        });
    }
    UriSeries {
        uri_r,
        always_empty,
        observations,
    }
}

fn pick_weighted(rng: &mut Rng, table: &[(u32, f64)]) -> u32 {
    let mut x = unit(rng);
    for &(v, w) in table {
        if x < w {
            return v;
        }
        x -= w;
    }
    table.last().map_or(0, |&(v, _)| v)
}

/// Uniform in (0, 1].
fn unit(rng: &mut Rng) -> f64 {
    ((rng.next_u64() >> 11) as f64 + 1.0) / (1u64 << 53) as f64
}

/// A Pareto draw (heavy tail), at least `min`, capped.
fn pareto(rng: &mut Rng, min: f64, alpha: f64, cap: f64) -> usize {
    (min / unit(rng).powf(1.0 / alpha)).min(cap) as usize
}

fn initial_holdings(rng: &mut Rng, ia_min: f64, start: i64) -> Vec<Holding> {
    let mut holdings = Vec::new();
    for (a, def) in ARCHIVES.iter().enumerate() {
        if !rng.chance(def.holds) {
            continue;
        }
        let n = if a == IA {
            pareto(rng, ia_min, 1.05, MAX_SIZE - 300.0)
        } else {
            pareto(rng, 1.0, 1.6, 300.0)
        }
        .max(1);
        let mut captures = Vec::with_capacity(n);
        for _ in 0..n {
            let secs = def.since + rng.below((start - 86_400 - def.since).max(1) as u64) as i64;
            push_capture(rng, &mut captures, def, secs);
        }
        holdings.push(Holding {
            archive: a,
            captures,
            gone_from: u32::MAX,
            present_from: 0,
        });
    }
    if holdings.is_empty() {
        // Archived somewhere: the Internet Archive, with a small TimeMap.
        let mut captures = Vec::new();
        let secs = ARCHIVES[IA].since + rng.below((start - ARCHIVES[IA].since) as u64) as i64;
        push_capture(rng, &mut captures, &ARCHIVES[IA], secs);
        holdings.push(Holding {
            archive: IA,
            captures,
            gone_from: u32::MAX,
            present_from: 0,
        });
    }
    holdings
}

/// Google Translate's TimeMap: its IA and Archief Web holdings at their sizes.
fn grow_giant(rng: &mut Rng, holdings: &mut Vec<Holding>, start: i64) {
    for (a, size) in GIANT_SIZES {
        let def = &ARCHIVES[a];
        let n = size - size / 50 + rng.below(size / 25 + 1);
        let k = match holdings.iter().position(|h| h.archive == a) {
            Some(k) => k,
            None => {
                holdings.push(Holding {
                    archive: a,
                    captures: Vec::new(),
                    gone_from: u32::MAX,
                    present_from: 0,
                });
                holdings.len() - 1
            }
        };
        let h = &mut holdings[k];
        h.captures.clear();
        while (h.captures.len() as u64) < n {
            let secs = def.since + rng.below((start - 86_400 - def.since).max(1) as u64) as i64;
            push_capture(rng, &mut h.captures, def, secs);
        }
    }
    holdings.sort_by_key(|h| h.archive);
}

fn push_capture(rng: &mut Rng, captures: &mut Vec<(i64, u8)>, def: &ArchiveDef, secs: i64) {
    captures.push((secs, 0));
    if def.dual > 0.0 && rng.chance(def.dual) {
        captures.push((secs, 1));
    }
}

/// One day's captures: a growth step adds a batch scaled to the TimeMap's size (popular pages
/// are captured more); the largest TimeMaps gain a memento most days.
fn grow(rng: &mut Rng, holdings: &mut [Holding], t: u32, now: i64, step: bool, hot: bool) {
    let gain_in = |rng: &mut Rng, h: &mut Holding, n: u64| {
        let def = &ARCHIVES[h.archive];
        for _ in 0..n {
            // Captured during the day before the request.
            let secs = now - 1 - rng.below(86_399) as i64;
            push_capture(rng, &mut h.captures, def, secs);
        }
    };
    if step {
        let pick = match holdings.iter().position(|h| h.archive == IA) {
            Some(ia) if rng.chance(0.7) => ia,
            _ => rng.below(holdings.len() as u64) as usize,
        };
        let h = &mut holdings[pick];
        if t >= h.present_from {
            let size = h.captures.len() as u64;
            let n = 1 + rng.below(2 + size).min(100);
            gain_in(rng, h, n);
        }
    }
    if hot && rng.chance(0.25) {
        if let Some(ia) = holdings.iter_mut().find(|h| h.archive == IA) {
            let n = 1 + rng.below(3);
            gain_in(rng, ia, n);
        }
    }
    // archive.today's first capture on its arrival day.
    for h in holdings.iter_mut() {
        if h.present_from == t && h.captures.is_empty() {
            let n = 1 + rng.below(2);
            gain_in(rng, h, n);
        }
    }
}

/// An archive withdraws one memento for good.
fn redact(rng: &mut Rng, holdings: &mut [Holding]) {
    let k = rng.below(holdings.len() as u64) as usize;
    let h = &mut holdings[k];
    if h.captures.len() > 1 {
        let m = rng.below(h.captures.len() as u64) as usize;
        h.captures.remove(m);
    }
}

/// The answer on day t: each archive present that day, with its mementos; `out` is missing,
/// `partial` lists only its first half.
fn observe(
    holdings: &[Holding],
    t: u32,
    uri_r: &str,
    out: Option<usize>,
    partial: Option<usize>,
) -> Vec<(String, String, String)> {
    let mut list = Vec::new();
    for (k, h) in holdings.iter().enumerate() {
        if Some(k) == out || t >= h.gone_from || t < h.present_from {
            continue;
        }
        let def = &ARCHIVES[h.archive];
        let layout = MIGRATIONS
            .iter()
            .filter(|(a, day)| *a == h.archive && t >= *day)
            .count();
        let shown = if Some(k) == partial {
            h.captures.len().div_ceil(2)
        } else {
            h.captures.len()
        };
        for &(secs, coll) in &h.captures[..shown] {
            let Some(captured) = DateTime::from_timestamp(secs, 0) else {
                continue;
            };
            // Archief Web's URI-Ms kept the capture's time; only its Memento-Datetimes said
            // 00:00:00 (the paper's Strict and Loose counts differ by it).
            let dt = if def.midnight {
                DateTime::from_timestamp(secs - secs.rem_euclid(86_400), 0).unwrap_or(captured)
            } else {
                captured
            };
            let uri_m = uri_m(h.archive, layout, coll, &format_14digit(captured), uri_r);
            list.push((def.id.to_string(), format_14digit(dt), uri_m));
        }
    }
    list
}

fn uri_m(archive: usize, layout: usize, coll: u8, ts: &str, uri_r: &str) -> String {
    match (ARCHIVES[archive].id, layout) {
        ("ia", _) => format!("http://web.archive.org/web/{ts}/{uri_r}"),
        ("ait", _) => format!(
            "http://wayback.archive-it.org/{}/{ts}/{uri_r}",
            1000 + u32::from(coll)
        ),
        ("loc", 0) => format!("http://webarchive.loc.gov/lcwa0001/{ts}/{uri_r}"),
        ("loc", _) => format!("http://webarchive.loc.gov/all/{ts}/{uri_r}"),
        ("archief", _) => format!("http://archiefweb.eu/{ts}/{uri_r}"),
        ("ukwa", _) => format!("http://www.webarchive.org.uk/wayback/archive/{ts}/{uri_r}"),
        ("webcite", 0) => format!("http://www.webcitation.org/query?url={uri_r}&date={ts}"),
        ("webcite", _) => format!("https://www.webcitation.org/query?url={uri_r}&date={ts}"),
        (id, _) => format!("http://{id}.example/{ts}/{uri_r}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_uri_r_is_the_same_alone_and_differs_by_seed() {
        let a = uri_r(1, 17, 92);
        assert_eq!(a.observations, uri_r(1, 17, 92).observations);
        assert_ne!(a.observations, uri_r(2, 17, 92).observations);
        assert_eq!(a.observations.len(), 92);
    }

    #[test]
    fn the_outages_fail_every_uri_r_and_the_ia_stretch_only_those_the_ia_holds() {
        for i in 0..40 {
            let u = uri_r(3, i, 92);
            for d in OBSERVER_DOWN.chain(POWER_FAILURE) {
                assert_eq!(u.observations[d as usize].status, ObsStatus::Failed);
            }
            let ia = u
                .observations
                .iter()
                .any(|o| o.mementos.iter().any(|m| m.0 == "ia"));
            let stretch_failed = IA_PROXY_BROKEN
                .clone()
                .all(|d| u.observations[d as usize].status == ObsStatus::Failed);
            if ia {
                assert!(stretch_failed, "{}", u.uri_r);
            }
        }
    }

    #[test]
    fn archief_reports_midnight_and_loc_migrates_on_day_30() {
        let mut midnight = false;
        let mut timed_uri_m = false;
        let mut migrated = false;
        for i in 0..400 {
            let u = uri_r(5, i, 92);
            for o in &u.observations {
                for (a, ts, uri_m) in &o.mementos {
                    if a == "archief" {
                        assert!(ts.ends_with("000000"), "{ts}");
                        assert!(uri_m.contains(&ts[..8]), "{uri_m} is of the same day");
                        midnight = true;
                        timed_uri_m |= !uri_m.contains(ts.as_str());
                    }
                    if a == "loc" && o.day >= 30 {
                        assert!(uri_m.contains("/all/"), "{uri_m}");
                        migrated = true;
                    }
                }
            }
        }
        assert!(midnight && migrated);
        assert!(timed_uri_m, "Archief's URI-Ms keep the capture time");
    }

    #[test]
    fn uri_r_0_plays_google_translate() {
        for seed in 1..4 {
            let u = uri_r(seed, GIANT, 92);
            let largest = u
                .observations
                .iter()
                .map(|o| o.mementos.len())
                .max()
                .unwrap_or(0);
            assert!((5_220..=6_380).contains(&largest), "seed {seed}: {largest}");
            let ia_archief = u.observations[0]
                .mementos
                .iter()
                .filter(|m| m.0 == "ia" || m.0 == "archief")
                .count();
            assert!(10 * ia_archief >= 9 * u.observations[0].mementos.len());
        }
    }
}
