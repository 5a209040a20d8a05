//! Replays a series through one cache policy — tmproxy's own `Policy::freshness` and
//! `Policy::decide`, never a re-implementation — and measures MemDays and Q as
//! `docs/cache-policy.md` ("MemDays and Q") defines them.

use crate::series::{LiveDay, LiveReader, SeriesError};
use chrono::{DateTime, Duration, TimeZone, Utc};
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};
use std::io::BufRead;
use tmproxy_core::policy::entry::Entry;
use tmproxy_core::policy::{
    Action, Adaptive, Freshness, Match, Policy, PolicyKind, Serve, TtlMode,
};
use tmproxy_core::timemap::answer::{
    ArchiveAnswer, ArchiveStatus, Contribution, Fetch, ListedMemento,
};

/// The archive name an empty observation is attributed to. An empty TimeMap still is an answer
/// (the aggregate said 404), and `decide` treats a fetch with no answering archive as an outage
/// that must not touch the cache; so an empty day is one archive answering "not found".
pub const EMPTY_ANSWER_ARCHIVE: &str = "(aggregate)";

/// The paper's first observation day, 2012-05-01T00:00:00Z: request t happens at day0 + t days.
pub fn day0() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2012, 5, 1, 0, 0, 0)
        .single()
        .unwrap_or(DateTime::<Utc>::MIN_UTC)
}

/// The policy a replay runs: `ttl_days` None = ∞. Redaction settings stay the server's defaults.
pub fn policy(kind: PolicyKind, matching: Match, ttl_days: Option<i64>) -> Policy {
    Policy {
        kind,
        matching,
        ttl: ttl_days.map(Duration::days),
        ..Policy::default()
    }
}

/// The same policy with each entry's own TTL (`[cache] ttl_mode = "adaptive"`): `rule` in place
/// of a fixed TTL.
pub fn adaptive_policy(kind: PolicyKind, matching: Match, rule: Adaptive) -> Policy {
    Policy {
        kind,
        matching,
        ttl: None,
        ttl_mode: TtlMode::Adaptive(rule),
        ..Policy::default()
    }
}

/// The seven measures of one replay (field names are the `--json` output's).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Measures {
    /// Σ max(0, B − m(C)) with B = the best m(L) seen so far (the headline measure).
    pub memdays: u64,
    /// The same with B = m(L) of the day (Eq. 8 read literally).
    pub memdays_live: u64,
    /// The same with B = the union of every loose key seen so far.
    pub memdays_union: u64,
    /// Upstream fetches (fan-outs).
    pub q: u64,
    /// Days where the served TimeMap was smaller than the best seen so far.
    pub missed_days: u64,
    /// Days where nothing was served although something had been seen.
    pub false_zero_days: u64,
    /// Replacements by a smaller TimeMap.
    pub worse_replacements: u64,
}

impl Measures {
    /// The seven measures as CSV fields, in the field order above (every CSV's last columns).
    pub fn csv_fields(&self) -> String {
        format!(
            "{},{},{},{},{},{},{}",
            self.memdays,
            self.memdays_live,
            self.memdays_union,
            self.q,
            self.missed_days,
            self.false_zero_days,
            self.worse_replacements
        )
    }
}

impl std::ops::AddAssign for Measures {
    fn add_assign(&mut self, o: Measures) {
        self.memdays += o.memdays;
        self.memdays_live += o.memdays_live;
        self.memdays_union += o.memdays_union;
        self.q += o.q;
        self.missed_days += o.missed_days;
        self.false_zero_days += o.false_zero_days;
        self.worse_replacements += o.worse_replacements;
    }
}

/// A replay's measures and the size of the series behind them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Report {
    pub measures: Measures,
    /// N.
    pub uri_rs: u64,
    /// Σ over URI-Rs of their days (N·D for a rectangular series).
    pub requests: u64,
}

/// The running state of one URI-R: the only state a replay keeps, so memory does not grow with N.
struct UriState {
    uri_r: String,
    entry: Option<Entry>,
    /// Running max of m(L).
    best: usize,
    /// Every loose key seen so far, by archive (looked up by `&str`, so a key already seen
    /// costs no allocation).
    union: HashMap<String, HashSet<DateTime<Utc>>>,
    /// Its size.
    union_len: usize,
}

/// Replays the series in `input` through `policy`, one request per URI-R per day.
pub fn replay<R: BufRead>(input: R, policy: &Policy) -> Result<Report, SeriesError> {
    let mut r = Replayer::new(policy);
    for day in LiveReader::new(input) {
        r.push(&day?);
    }
    Ok(r.finish())
}

/// The same over days already read (a sweep over many policies parses the series once).
pub fn replay_days<'a>(days: impl IntoIterator<Item = &'a LiveDay>, policy: &Policy) -> Report {
    let mut r = Replayer::new(policy);
    for day in days {
        r.push(day);
    }
    r.finish()
}

/// A replay in progress: fed live days in series order.
pub struct Replayer<'p> {
    policy: &'p Policy,
    report: Report,
    state: Option<UriState>,
}

impl<'p> Replayer<'p> {
    pub fn new(policy: &'p Policy) -> Self {
        Replayer {
            policy,
            report: Report::default(),
            state: None,
        }
    }

    /// One request: `day` must follow the previous one in series order (as [`LiveReader`]
    /// checks); a new URI-R drops the previous one's state.
    pub fn push(&mut self, day: &LiveDay) {
        if self.state.as_ref().is_none_or(|s| s.uri_r != day.uri_r) {
            self.report.uri_rs += 1;
            self.state = Some(UriState::new(&day.uri_r));
        }
        if let Some(s) = self.state.as_mut() {
            step(self.policy, s, day, &mut self.report.measures);
            self.report.requests += 1;
        }
    }

    pub fn finish(self) -> Report {
        self.report
    }
}

/// One request for one URI-R on one day. m(·) is the server's own tally (`Fetch::counts`,
/// `Entry::count`): the very numbers `decide` compares, and no TimeMap is merged per request.
fn step(policy: &Policy, s: &mut UriState, day: &LiveDay, m: &mut Measures) {
    let live = s.live_step(day, policy.matching);
    serve_day(policy, &mut s.entry, &live, m);
}

/// One day of one URI-R before any policy acts: L(r, t) as the fan-out result the policy sees,
/// and the three references the measures compare the served TimeMap with. It depends on the
/// match only, so a sweep computes it once per day for every policy and TTL.
pub struct LiveStep {
    pub now: DateTime<Utc>,
    pub fetch: Fetch,
    /// m(L(r, t)).
    pub m_live: usize,
    /// The running max of m(L).
    pub best: usize,
    /// The size of the union of every loose key seen so far.
    pub union_len: usize,
}

impl UriState {
    fn new(uri_r: &str) -> UriState {
        UriState {
            uri_r: uri_r.to_string(),
            entry: None,
            best: 0,
            union: HashMap::new(),
            union_len: 0,
        }
    }

    fn live_step(&mut self, day: &LiveDay, matching: Match) -> LiveStep {
        let now = day0() + Duration::days(i64::from(day.day));
        let fetch = outcome(day, now);
        let m_live = fetch.counts(matching).1;
        self.best = self.best.max(m_live);
        for x in &day.mementos {
            let added = match self.union.get_mut(x.archive.as_str()) {
                Some(set) => set.insert(x.datetime),
                None => {
                    self.union
                        .insert(x.archive.clone(), HashSet::from([x.datetime]));
                    true
                }
            };
            self.union_len += usize::from(added);
        }
        LiveStep {
            now,
            fetch,
            m_live,
            best: self.best,
            union_len: self.union_len,
        }
    }
}

/// One URI-R's live steps, day by day (what [`serve_day`] replays under each policy).
pub fn live_steps(days: &[LiveDay], matching: Match) -> Vec<LiveStep> {
    let mut s = UriState::new(days.first().map_or("", |d| d.uri_r.as_str()));
    days.iter().map(|d| s.live_step(d, matching)).collect()
}

/// One fetch of the day through `decide` (counted in Q), the entry updated; what to serve.
fn refetch(policy: &Policy, entry: &mut Option<Entry>, live: &LiveStep, m: &mut Measures) -> Serve {
    m.q += 1;
    let decision = policy.decide(entry.as_ref(), &live.fetch, live.now);
    if decision.action() == Action::Replaced {
        let before = entry.as_ref().map_or(0, |e| e.count(policy.matching));
        if live.m_live < before {
            m.worse_replacements += 1;
        }
    }
    let serve = decision.serve();
    if let Some(e) = decision.into_entry() {
        *entry = Some(e);
    }
    serve
}

/// The request of one day under `policy`, given the cache `entry` so far: fetch when the entry is
/// not fresh, let `decide` store or keep, and add the day's penalties to `m`.
pub fn serve_day(policy: &Policy, entry: &mut Option<Entry>, live: &LiveStep, m: &mut Measures) {
    let matching = policy.matching;
    let cached_m = |entry: &Option<Entry>| entry.as_ref().map_or(0, |e| e.count(matching));
    let m_served = match policy.freshness(entry.as_ref(), live.now) {
        Freshness::Fresh => cached_m(entry),
        // stale-while-revalidate: the day is served what is stored, and the refetch behind it
        // still asks the archives and goes through `decide`.
        Freshness::Stale => {
            let served = cached_m(entry);
            refetch(policy, entry, live, m);
            served
        }
        Freshness::Miss | Freshness::Expired => match refetch(policy, entry, live, m) {
            Serve::Fresh => live.m_live,
            // The entry just stored, or the cached one when the decision stored nothing.
            Serve::Stored => entry.as_ref().map_or(live.m_live, |e| e.count(matching)),
        },
    };

    m.memdays += live.best.saturating_sub(m_served) as u64;
    m.memdays_live += live.m_live.saturating_sub(m_served) as u64;
    m.memdays_union += live.union_len.saturating_sub(m_served) as u64;
    if live.best > m_served {
        m.missed_days += 1;
        if m_served == 0 {
            m.false_zero_days += 1;
        }
    }
}

/// L(r, t) as the fan-out result the policy sees: one `ok` answer per archive listed, in the
/// order they first appear; archives not listed are not asked (an observation lists what was
/// observed, so `merge` keeps an unlisted archive's contribution as it would a timed-out one).
pub fn outcome(day: &LiveDay, now: DateTime<Utc>) -> Fetch {
    let answered = |archive: &str, status, http_status| Contribution {
        archive: archive.to_string(),
        answer: ArchiveAnswer::failed(status, Some(http_status), None),
        fetched_at: now,
        mementos: Vec::new(),
        last_error: None,
        listing: Default::default(),
    };
    let mut archives: Vec<Contribution> = Vec::new();
    for x in &day.mementos {
        let i = match archives.iter().position(|a| a.archive == x.archive) {
            Some(i) => i,
            None => {
                archives.push(answered(&x.archive, ArchiveStatus::Ok, 200));
                archives.len() - 1
            }
        };
        archives[i].mementos.push(ListedMemento {
            uri_m: x.uri_m.clone().into(),
            datetime: x.datetime,
            absent: None,
        });
    }
    if archives.is_empty() {
        archives.push(answered(EMPTY_ANSWER_ARCHIVE, ArchiveStatus::NotFound, 404));
    }
    Fetch {
        uri_r: day.uri_r.clone(),
        at: now,
        archives,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::series::{memento_triple, ObsStatus, Observation, SeriesWriter};

    /// A one-URI-R series with `sizes[t]` mementos in archive `ia` on day t (None = failed day).
    fn series(sizes: &[Option<usize>]) -> Vec<u8> {
        let mut w = SeriesWriter::new(Vec::new());
        for (t, n) in sizes.iter().enumerate() {
            let base = day0() - Duration::days(4000);
            let obs = Observation {
                uri_r: "http://example.com/".to_string(),
                day: t as u32,
                status: if n.is_some() {
                    ObsStatus::Ok
                } else {
                    ObsStatus::Failed
                },
                mementos: (0..n.unwrap_or(0))
                    .map(|k| {
                        let dt = base + Duration::days(k as i64);
                        memento_triple("ia", dt, &format!("http://ia/{k}"))
                    })
                    .collect(),
            };
            w.write(&obs).expect("write to a Vec");
        }
        w.into_inner()
    }

    fn run(bytes: &[u8], kind: PolicyKind, ttl: Option<i64>) -> Measures {
        replay(bytes, &policy(kind, Match::Loose, ttl))
            .expect("valid series")
            .measures
    }

    #[test]
    fn worked_example_conditional_ttl_4_is_8_memdays_and_2_fetches() {
        let s = series(&[Some(6), Some(6), Some(8), Some(8), Some(10), Some(10)]);
        let m = run(&s, PolicyKind::Conditional, Some(4));
        assert_eq!((m.memdays, m.q), (8, 2));
        assert_eq!(m.memdays_live, 8);
        assert_eq!(m.memdays_union, 8);
        assert_eq!(m.missed_days, 3);
        assert_eq!((m.false_zero_days, m.worse_replacements), (0, 0));
    }

    #[test]
    fn a_dip_is_cached_by_unconditional_and_refused_by_conditional() {
        // Day 1 lost 3 mementos (case 7); TTL 0 refetches daily.
        let s = series(&[Some(5), Some(2), Some(5)]);
        let c = run(&s, PolicyKind::Conditional, Some(0));
        assert_eq!((c.memdays, c.memdays_live, c.worse_replacements), (0, 0, 0));
        let u = run(&s, PolicyKind::Unconditional, Some(0));
        assert_eq!((u.memdays, u.memdays_live, u.worse_replacements), (3, 0, 1));
    }

    #[test]
    fn empty_days_are_answers_not_outages() {
        // Stored on day 0 though empty, so TTL ∞ fetches once; the zero is then served forever.
        let s = series(&[Some(0), Some(3), Some(3)]);
        let m = run(&s, PolicyKind::Conditional, None);
        assert_eq!(m.q, 1);
        assert_eq!((m.memdays, m.false_zero_days), (6, 2));
        // With TTL 0, case 5 recovers on day 1.
        let m = run(&s, PolicyKind::Conditional, Some(0));
        assert_eq!((m.memdays, m.q, m.false_zero_days), (0, 3, 0));
    }

    #[test]
    fn a_failed_observation_day_replays_the_day_before() {
        let s = series(&[Some(4), None, Some(6)]);
        let m = run(&s, PolicyKind::None, None);
        assert_eq!((m.memdays, m.q), (0, 3));
    }
}
