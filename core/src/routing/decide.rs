//! The routing decision: which archives to ask for a URI-R, from their profiles. Pure: the
//! profiles, the settings and the exploration draw are passed in, so `memsim` replays exactly
//! what the server decided.

use super::keys::{Key, UriKeys};
use super::profile::{Profiles, Tally};
use serde::{Deserialize, Serialize};

/// `[routing] mode`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Every archive is asked on every miss (profiles are still learned).
    #[default]
    All,
    /// Archives whose profiles say they hold almost nothing there are skipped.
    Learned,
}

/// The `[routing]` values a decision needs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settings {
    pub mode: Mode,
    /// Observations a key needs for an archive before it can skip that archive.
    pub min_evidence: u32,
    /// Below this share of URI-Rs with mementos at a key, the archive is skipped.
    pub min_share: f64,
    /// The share of misses that ask every archive anyway, so a profile can recover.
    pub explore: f64,
}

impl Settings {
    /// `mode = "learned"` with these thresholds.
    pub fn learned(min_evidence: u32, min_share: f64, explore: f64) -> Settings {
        Settings {
            mode: Mode::Learned,
            min_evidence,
            min_share,
            explore,
        }
    }
}

/// The detail a skipped archive is reported with (`archives[].detail`).
pub const DETAIL: &str = "routing";

/// An archive the caller may ask: its id and whether it is always asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Candidate<'a> {
    pub id: &'a str,
    /// `always = true`, or the Internet Archive ([`ALWAYS_ASKED`]).
    pub always: bool,
}

/// Archive ids asked whatever their profile: the Internet Archive holds most of what is asked.
pub const ALWAYS_ASKED: &[&str] = &["ia"];

impl<'a> Candidate<'a> {
    /// `id`, always asked when `always` is set or it is one of [`ALWAYS_ASKED`].
    pub fn new(id: &'a str, always: bool) -> Candidate<'a> {
        Candidate {
            id,
            always: always || ALWAYS_ASKED.contains(&id),
        }
    }
}

/// Why an archive is skipped: the key its profile was read at and what it says there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skip {
    pub key: Key,
    pub tally: Tally,
}

impl Skip {
    /// For a log line: `domain example.com: mementos for 0 of 35 URI-Rs`.
    pub fn explain(&self) -> String {
        format!(
            "{}: mementos for {} of {} URI-Rs",
            self.key,
            self.tally.held,
            self.tally.observed()
        )
    }
}

/// One archive's route.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    Ask,
    Skip(Skip),
}

impl Route {
    pub fn is_ask(&self) -> bool {
        matches!(self, Route::Ask)
    }
}

/// The routes of one miss, one per candidate in the order given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    pub routes: Vec<Route>,
    /// This miss was drawn to explore: every archive is asked.
    pub explored: bool,
}

/// Whether `draw` (uniform over u64, from the caller's RNG or [`draw_for`]) falls in the
/// `explore` share: `draw < explore * 2^64`.
pub fn explores(explore: f64, draw: u64) -> bool {
    if explore >= 1.0 {
        return true;
    }
    if explore.is_nan() || explore <= 0.0 {
        return false;
    }
    // 2^64 as f64 is exact; the product is below it, so the cast does not saturate.
    (draw as f64) < explore * 18_446_744_073_709_551_616.0
}

/// A draw from a URI-R and a nonce (a miss counter, a seed): a fixed hash (xxh3), the same on
/// every machine, for callers that want exploration replayable from their stream alone.
pub fn draw_for(uri_r: &str, nonce: u64) -> u64 {
    xxhash_rust::xxh3::xxh3_64_with_seed(uri_r.as_bytes(), nonce)
}

/// Routes one miss. Under [`Mode::All`], or when the miss explores, every candidate is asked.
/// Otherwise each candidate is asked unless its profile, at the most specific of the URI-R's keys
/// with at least `min_evidence` observations for it, shows mementos for fewer than `min_share`
/// of them; `always` candidates are always asked. A key with too little evidence is passed over
/// for a broader one; with none anywhere, the archive is asked.
pub fn decide(
    profiles: &Profiles,
    settings: &Settings,
    candidates: &[Candidate<'_>],
    keys: &UriKeys,
    draw: u64,
) -> Decision {
    let ask_all = |explored| Decision {
        routes: vec![Route::Ask; candidates.len()],
        explored,
    };
    if settings.mode == Mode::All {
        return ask_all(false);
    }
    if explores(settings.explore, draw) {
        return ask_all(true);
    }
    let routes = candidates
        .iter()
        .map(|c| route(profiles, settings, c, keys))
        .collect();
    Decision {
        routes,
        explored: false,
    }
}

fn route(profiles: &Profiles, settings: &Settings, c: &Candidate<'_>, keys: &UriKeys) -> Route {
    if c.always {
        return Route::Ask;
    }
    let evidence = keys.keys().iter().find_map(|key| {
        let tally = profiles.tally(c.id, key)?;
        (tally.observed() >= settings.min_evidence.max(1)).then_some((key, tally))
    });
    match evidence {
        Some((key, tally)) if tally.share() < settings.min_share => Route::Skip(Skip {
            key: key.clone(),
            tally,
        }),
        _ => Route::Ask,
    }
}
