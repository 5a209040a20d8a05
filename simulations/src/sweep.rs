//! `memsim sweep`: every caching policy at every TTL (0..D-1 and ∞, loose match) over one series
//! held in memory, written as `sweep.csv`, and `summary.md` setting our numbers beside the
//! paper's table (`docs/cache-policy.md`, "What the paper reports").
//!
//! Every policy is in the grid, `none` included (the sweep covers "every policy (none excluded)"): it
//! caches nothing, so its rows are the same at every TTL (Q = N·D), and they are the no-cache
//! baseline: it serves every dip of the live TimeMap, which the running-max reference counts.

use crate::adaptive::{AdaptiveRow, Setting};
use crate::replay::{live_steps, policy, serve_day, LiveStep, Measures};
use crate::series::LiveDay;
use std::collections::HashSet;
use std::fmt::Write as _;
use std::io::{self, Write};
use tmproxy_core::policy::{Match, Policy, PolicyKind};

/// The swept policies, in the order of the CSV.
pub const POLICIES: [PolicyKind; 5] = [
    PolicyKind::None,
    PolicyKind::Forever,
    PolicyKind::Unconditional,
    PolicyKind::Conditional,
    PolicyKind::Merge,
];

/// The CSV header, exactly.
pub const CSV_HEADER: &str =
    "policy,ttl,memdays,memdays_live,memdays_union,q,missed_days,false_zero_days,worse_replacements";

/// What the series is, for the summary's first lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeriesInfo {
    /// A preset's name and seed, or the file it was read from.
    pub source: Source,
    /// N: distinct URI-Rs.
    pub uri_rs: u64,
    /// D: the longest URI-R's number of days (the sweep's TTLs are 0..D-1, then ∞).
    pub days: u32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// Generated in memory from a preset: SYNTHETIC.
    Preset {
        name: String,
        seed: u64,
    },
    File(String),
}

impl SeriesInfo {
    /// N and D of days already read.
    pub fn of(source: Source, days: &[LiveDay]) -> SeriesInfo {
        let uri_rs = days.iter().map(|d| &d.uri_r).collect::<HashSet<_>>().len() as u64;
        let d = days
            .iter()
            .map(|d| d.day.saturating_add(1))
            .max()
            .unwrap_or(0);
        SeriesInfo {
            source,
            uri_rs,
            days: d,
        }
    }
}

/// One cell of the grid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Row {
    pub kind: PolicyKind,
    /// Days; None = ∞.
    pub ttl: Option<i64>,
    pub measures: Measures,
}

/// The grid's cells in CSV order: policy by policy, TTL 0..D-1 then ∞.
pub fn grid(days: u32) -> Vec<(PolicyKind, Option<i64>)> {
    POLICIES
        .into_iter()
        .flat_map(|k| {
            (0..i64::from(days))
                .map(Some)
                .chain([None])
                .map(move |t| (k, t))
        })
        .collect()
}

/// The grid's measures so far, URI-R by URI-R. Each URI-R is replayed under every cell while its
/// days are in hand: the policy-independent part of a day (the fan-out result, the references)
/// is computed once for all 5 × (D + 1) cells, and only one URI-R is held at a time, so a sweep
/// streams a series of any length.
///
/// `none` and `forever` do not depend on the TTL (one never stores, the other never refetches;
/// `tests/harness.rs` checks both against full replays), so each is replayed once per URI-R and
/// its measures stand for every TTL; the three TTL-driven policies are replayed at each TTL.
///
/// The finite TTLs grow with the longest URI-R seen: for a URI-R of d days every TTL ≥ d − 1
/// fetches once, exactly as ∞ does, so a TTL added later starts from the ∞ cell's sums.
#[derive(Debug, Clone, Default)]
pub struct SweepAcc {
    /// Per policy (in [`POLICIES`] order): measures at TTL 0, 1, … and at ∞.
    cells: Vec<(Vec<Measures>, Measures)>,
    /// `--ttl-mode adaptive`: each adaptive setting's measures (none in a fixed-only sweep).
    adaptive: Vec<AdaptiveRow>,
    pub uri_rs: u64,
}

impl SweepAcc {
    pub fn new() -> Self {
        SweepAcc {
            cells: POLICIES
                .iter()
                .map(|_| (Vec::new(), Measures::default()))
                .collect(),
            adaptive: Vec::new(),
            uri_rs: 0,
        }
    }

    /// An accumulator that also replays each of `settings` (the adaptive TTL rule).
    pub fn with_adaptive(settings: &[Setting]) -> Self {
        SweepAcc {
            adaptive: settings
                .iter()
                .map(|&setting| AdaptiveRow {
                    setting,
                    measures: Measures::default(),
                })
                .collect(),
            ..SweepAcc::new()
        }
    }

    /// The adaptive settings' rows, in the order they were given.
    pub fn adaptive_rows(&self) -> Vec<AdaptiveRow> {
        self.adaptive.clone()
    }

    /// D: the longest URI-R's number of days so far.
    pub fn days(&self) -> u32 {
        self.finite_len() as u32
    }

    /// The finite TTLs kept: 0..len.
    fn finite_len(&self) -> usize {
        self.cells.first().map_or(0, |(f, _)| f.len())
    }

    fn extend_to(&mut self, len: usize) {
        for (finite, inf) in &mut self.cells {
            while finite.len() < len {
                finite.push(*inf);
            }
        }
    }

    /// Replays one URI-R's days (in day order) under every cell.
    pub fn push_uri(&mut self, days: &[LiveDay]) {
        self.uri_rs += 1;
        self.extend_to(days.len());
        let steps = live_steps(days, Match::Loose);
        let len = self.finite_len();
        for (k, kind) in POLICIES.into_iter().enumerate() {
            let (finite, inf) = &mut self.cells[k];
            let ttl_free = matches!(kind, PolicyKind::None | PolicyKind::Forever);
            if ttl_free {
                let m = replay_steps(&steps, &policy(kind, Match::Loose, None));
                for cell in finite.iter_mut() {
                    *cell += m;
                }
                *inf += m;
                continue;
            }
            for (ttl, cell) in finite.iter_mut().enumerate().take(len) {
                // Beyond d − 1 days every TTL is ∞ for this URI-R: replay once, below.
                if ttl + 1 >= steps.len() && ttl > 0 {
                    continue;
                }
                *cell += replay_steps(&steps, &policy(kind, Match::Loose, Some(ttl as i64)));
            }
            let m = replay_steps(&steps, &policy(kind, Match::Loose, None));
            for cell in finite.iter_mut().skip(steps.len().saturating_sub(1).max(1)) {
                *cell += m;
            }
            *inf += m;
        }
        for row in &mut self.adaptive {
            row.measures += replay_steps(&steps, &row.setting.policy());
        }
    }

    /// Adds another accumulator's sums (a thread's share of the URI-Rs).
    pub fn absorb(&mut self, mut other: SweepAcc) {
        let len = self.finite_len().max(other.finite_len());
        self.extend_to(len);
        other.extend_to(len);
        for ((f, i), (of, oi)) in self.cells.iter_mut().zip(other.cells) {
            for (a, b) in f.iter_mut().zip(of) {
                *a += b;
            }
            *i += oi;
        }
        if self.adaptive.is_empty() {
            self.adaptive = other.adaptive;
        } else {
            for (a, b) in self.adaptive.iter_mut().zip(other.adaptive) {
                a.measures += b.measures;
            }
        }
        self.uri_rs += other.uri_rs;
    }

    /// The rows of the grid for `days` days (at least the longest URI-R's), in CSV order.
    pub fn rows(mut self, days: u32) -> Vec<Row> {
        let len = self.finite_len().max(days as usize);
        self.extend_to(len);
        let mut rows = Vec::new();
        for (kind, (finite, inf)) in POLICIES.into_iter().zip(self.cells) {
            for (ttl, measures) in finite.into_iter().enumerate() {
                rows.push(Row {
                    kind,
                    ttl: Some(ttl as i64),
                    measures,
                });
            }
            rows.push(Row {
                kind,
                ttl: None,
                measures: inf,
            });
        }
        rows
    }
}

/// One policy over one URI-R's live steps.
fn replay_steps(steps: &[LiveStep], p: &Policy) -> Measures {
    let mut entry = None;
    let mut m = Measures::default();
    for s in steps {
        serve_day(p, &mut entry, s, &mut m);
    }
    m
}

/// Replays `series` (read once, by the caller) at every cell of the grid for `days` days. Two
/// threads take alternate URI-Rs; the sums are those of a single-threaded run.
pub fn sweep(series: &[LiveDay], days: u32) -> Vec<Row> {
    let mut groups: Vec<&[LiveDay]> = Vec::new();
    let mut start = 0;
    for i in 1..=series.len() {
        if i == series.len() || series[i].uri_r != series[start].uri_r {
            groups.push(&series[start..i]);
            start = i;
        }
    }
    let run = |parity: usize| -> SweepAcc {
        let mut acc = SweepAcc::new();
        for g in groups.iter().skip(parity).step_by(2) {
            acc.push_uri(g);
        }
        acc
    };
    let acc = std::thread::scope(|s| {
        let odd = s.spawn(|| run(1));
        let mut acc = run(0);
        match odd.join() {
            Ok(more) => acc.absorb(more),
            // A panic in a replay is a bug; re-raise it here rather than lose half the grid.
            Err(e) => std::panic::resume_unwind(e),
        }
        acc
    });
    acc.rows(days)
}

/// Sweeps a stream of URI-Rs (each one's days, in series order) on two worker threads while the
/// caller's thread produces them (parses a file or generates a preset): memory holds a few
/// URI-Rs, whatever the length of the series. Returns the accumulated grid, or the first error
/// of the stream.
pub fn sweep_stream<E>(
    groups: impl Iterator<Item = Result<Vec<LiveDay>, E>>,
) -> Result<SweepAcc, E> {
    sweep_stream_with(groups, &[])
}

/// [`sweep_stream`] replaying the adaptive `settings` too.
pub fn sweep_stream_with<E>(
    groups: impl Iterator<Item = Result<Vec<LiveDay>, E>>,
    settings: &[Setting],
) -> Result<SweepAcc, E> {
    const WORKERS: usize = 2;
    std::thread::scope(|s| {
        let mut senders = Vec::new();
        let mut handles = Vec::new();
        for _ in 0..WORKERS {
            let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<LiveDay>>(64);
            senders.push(tx);
            handles.push(s.spawn(move || {
                let mut acc = SweepAcc::with_adaptive(settings);
                for g in rx {
                    acc.push_uri(&g);
                }
                acc
            }));
        }
        let mut failed = None;
        for (i, g) in groups.enumerate() {
            match g {
                Ok(g) => {
                    // A worker only stops by panicking, which join re-raises below.
                    let _ = senders[i % WORKERS].send(g);
                }
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
        drop(senders);
        let mut acc = SweepAcc::new();
        for h in handles {
            match h.join() {
                Ok(a) => acc.absorb(a),
                Err(e) => std::panic::resume_unwind(e),
            }
        }
        match failed {
            Some(e) => Err(e),
            None => Ok(acc),
        }
    })
}

fn ttl_text(ttl: Option<i64>) -> String {
    ttl.map_or_else(|| "inf".to_string(), |n| n.to_string())
}

/// Writes `sweep.csv`: [`CSV_HEADER`], then one row per cell.
pub fn write_csv<W: Write>(rows: &[Row], mut out: W) -> io::Result<()> {
    writeln!(out, "{CSV_HEADER}")?;
    for r in rows {
        let (kind, ttl) = (r.kind, ttl_text(r.ttl));
        writeln!(out, "{kind},{ttl},{}", r.measures.csv_fields())?;
    }
    out.flush()
}

/// a / amax ≥ b / bmax, exactly (integers, no float rounding at a tie); a curve whose maximum is
/// 0 normalises to 0 everywhere.
fn normalised_ge(a: u64, amax: u64, b: u64, bmax: u64) -> bool {
    let (a, amax) = if amax == 0 { (0, 1) } else { (a, amax) };
    let (b, bmax) = if bmax == 0 { (0, 1) } else { (b, bmax) };
    u128::from(a) * u128::from(bmax) >= u128::from(b) * u128::from(amax)
}

/// The optimum TTL of one policy: where its normalised MemDays curve (MemDays / the max over its
/// finite TTLs and ∞) and its normalised Q curve (Q / max Q) cross — the first finite TTL where
/// normalised MemDays ≥ normalised Q. MemDays grows and Q falls with the TTL, so before the
/// crossing freshness is cheap and after it staleness is. `finite[n]` = (MemDays, Q) at TTL n;
/// None when the curves never cross at a finite TTL.
pub fn optimum(finite: &[(u64, u64)], inf: (u64, u64)) -> Option<i64> {
    let all = finite.iter().chain([&inf]);
    let max_md = all.clone().map(|p| p.0).max().unwrap_or(0);
    let max_q = all.map(|p| p.1).max().unwrap_or(0);
    finite
        .iter()
        .position(|&(md, q)| normalised_ge(md, max_md, q, max_q))
        .map(|n| n as i64)
}

/// The rows of one policy: its finite TTLs in order, and its ∞ row.
fn curve(rows: &[Row], kind: PolicyKind) -> (Vec<&Row>, Option<&Row>) {
    let mut finite: Vec<&Row> = rows
        .iter()
        .filter(|r| r.kind == kind && r.ttl.is_some())
        .collect();
    finite.sort_by_key(|r| r.ttl);
    let inf = rows.iter().find(|r| r.kind == kind && r.ttl.is_none());
    (finite, inf)
}

/// The optimum TTL of `kind` among `rows` (see [`optimum`]).
pub fn optimum_of(rows: &[Row], kind: PolicyKind) -> Option<i64> {
    let (finite, inf) = curve(rows, kind);
    let points: Vec<(u64, u64)> = finite
        .iter()
        .map(|r| (r.measures.memdays, r.measures.q))
        .collect();
    let inf = inf.map_or((0, 0), |r| (r.measures.memdays, r.measures.q));
    // The curve is indexed by TTL; a gap would shift it, and the grid never has one.
    optimum(&points, inf).and_then(|i| finite.get(i as usize).and_then(|r| r.ttl))
}

pub fn find(rows: &[Row], kind: PolicyKind, ttl: Option<i64>) -> Option<&Measures> {
    rows.iter()
        .find(|r| r.kind == kind && r.ttl == ttl)
        .map(|r| &r.measures)
}

/// 1234567 → "1,234,567", as the paper prints its figures.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `summary.md`: the series, our table beside the paper's, the optimum rule, and the per-TTL
/// comparisons the paper's findings predict.
pub fn summary(info: &SeriesInfo, rows: &[Row]) -> String {
    let mut s = String::new();
    let n = info.uri_rs;
    let d = info.days;
    let _ = writeln!(s, "# memsim sweep\n");
    match &info.source {
        Source::Preset { name, seed } => {
            let _ = writeln!(
                s,
                "Series: **SYNTHETIC** (preset `{name}`, seed {seed}): made-up TimeMaps, {n} \
                 URI-Rs × {d} days. Its numbers say nothing about real archives."
            );
        }
        Source::File(path) => {
            let _ = writeln!(s, "Series: `{path}`, {n} URI-Rs × {d} days.");
        }
    }
    let _ = writeln!(
        s,
        "\nGrid: policies none, forever, unconditional, conditional and merge, TTL 0..{} days and ∞, \
         loose match; one request per URI-R per day. `none` caches nothing, so its rows are the \
         same at every TTL (Q = N·D): the no-cache baseline. Every cell is in `sweep.csv`.",
        d.saturating_sub(1)
    );

    let opt_u = optimum_of(rows, PolicyKind::Unconditional);
    let opt_c = optimum_of(rows, PolicyKind::Conditional);
    let opt_m = optimum_of(rows, PolicyKind::Merge);
    let cell = |kind: PolicyKind, ttl: Option<i64>| -> (String, String) {
        find(rows, kind, ttl).map_or(("—".into(), "—".into()), |m| {
            (thousands(m.memdays), thousands(m.q))
        })
    };
    let opt_label =
        |o: Option<i64>| o.map_or_else(|| "none (no crossing)".to_string(), |t| t.to_string());

    let _ = writeln!(s, "\n## Ours beside the paper's\n");
    let _ = writeln!(
        s,
        "The paper's data set (4,000 URI-Rs × 92 days, 2012) is not this one, so only the shape \
         compares (which run is 0, which is largest, where the optima fall), not the magnitudes.\n"
    );
    let _ = writeln!(s, "| run | MemDays | Q | paper MemDays | paper Q |");
    let _ = writeln!(s, "|---|---|---|---|---|");
    let mut line = |run: String, (md, q): (String, String), pmd: &str, pq: &str| {
        let _ = writeln!(s, "| {run} | {md} | {q} | {pmd} | {pq} |");
    };
    line(
        "unconditional, TTL 0".into(),
        cell(PolicyKind::Unconditional, Some(0)),
        "98,312",
        "368,000",
    );
    // forever, unconditional and conditional all keep their first fetch at ∞ (checked below).
    line(
        "either policy, TTL ∞".into(),
        cell(PolicyKind::Conditional, None),
        "4,010,406",
        "4,000",
    );
    line(
        format!("unconditional, optimum TTL {}", opt_label(opt_u)),
        opt_u.map_or(("—".into(), "—".into()), |t| {
            cell(PolicyKind::Unconditional, Some(t))
        }),
        "784,895 (TTL 10)",
        "92,000 (as printed)",
    );
    line(
        "conditional, TTL 0".into(),
        cell(PolicyKind::Conditional, Some(0)),
        "0",
        "368,000",
    );
    line(
        format!("conditional, optimum TTL {}", opt_label(opt_c)),
        opt_c.map_or(("—".into(), "—".into()), |t| {
            cell(PolicyKind::Conditional, Some(t))
        }),
        "588,368 (TTL 15)",
        "23,000",
    );
    line(
        format!("merge, optimum TTL {}", opt_label(opt_m)),
        opt_m.map_or(("—".into(), "—".into()), |t| {
            cell(PolicyKind::Merge, Some(t))
        }),
        "— (not in the paper)",
        "—",
    );

    let inf_equal = {
        let f = find(rows, PolicyKind::Forever, None).map(|m| m.memdays);
        let u = find(rows, PolicyKind::Unconditional, None).map(|m| m.memdays);
        let c = find(rows, PolicyKind::Conditional, None).map(|m| m.memdays);
        f.is_some() && f == u && u == c
    };
    let _ = writeln!(
        s,
        "\nAt TTL ∞ forever, unconditional and conditional MemDays are {}.",
        if inf_equal { "equal" } else { "NOT equal" }
    );
    let _ = writeln!(
        s,
        "Q is the exact count of fetches, ceil(D / (n+1)) per URI-R at TTL n; the paper's 23,000 \
         at TTL 15 is N·D/(n+1) without rounding up."
    );

    let _ = writeln!(s, "\n## Optimum TTL\n");
    let _ = writeln!(
        s,
        "Per policy, MemDays and Q are each divided by their maximum over the policy's finite \
         TTLs and ∞; the optimum is the first finite TTL where normalised MemDays ≥ normalised Q \
         (where the rising staleness curve crosses the falling cost curve).\n"
    );
    for kind in POLICIES {
        // forever and none ignore the TTL: both curves are flat at 1, so they "cross" at TTL 0.
        let note = match kind {
            PolicyKind::Forever => " (flat curves: forever ignores the TTL)",
            PolicyKind::None => " (flat curves: none caches nothing)",
            _ => "",
        };
        let _ = writeln!(s, "- {kind}: {}{note}", opt_label(optimum_of(rows, kind)));
    }
    let longer = match (opt_u, opt_c) {
        (Some(u), Some(c)) if c > u => "longer than",
        (Some(u), Some(c)) if c == u => "equal to",
        (Some(_), Some(_)) => "shorter than",
        _ => "not comparable with",
    };
    let _ = writeln!(
        s,
        "\nConditional's optimum is {longer} unconditional's (the paper: 15 vs 10, longer)."
    );

    let _ = writeln!(s, "\n## Per TTL\n");
    let _ = writeln!(
        s,
        "Conditional ≤ unconditional in MemDays should hold at every TTL (conditional refuses the \
         worse replacements unconditional accepts, on the same schedule). Merge against \
         conditional is compared in MemDays (union), the reference merge aims at; a redaction \
         stays in that union though merge rightly drops it.\n"
    );
    let _ = writeln!(
        s,
        "| TTL | unconditional MemDays | conditional MemDays | conditional ≤ unconditional | \
         conditional MemDays (union) | merge MemDays (union) | merge vs conditional |"
    );
    let _ = writeln!(s, "|---|---|---|---|---|---|---|");
    let mut all_le = true;
    let (mut m_better, mut m_equal, mut m_worse) = (0, 0, 0);
    let ttls: Vec<Option<i64>> = (0..i64::from(d)).map(Some).chain([None]).collect();
    for ttl in ttls {
        let (Some(u), Some(c), Some(m)) = (
            find(rows, PolicyKind::Unconditional, ttl),
            find(rows, PolicyKind::Conditional, ttl),
            find(rows, PolicyKind::Merge, ttl),
        ) else {
            continue;
        };
        let le = c.memdays <= u.memdays;
        all_le &= le;
        let vs = match m.memdays_union.cmp(&c.memdays_union) {
            std::cmp::Ordering::Less => {
                m_better += 1;
                "<"
            }
            std::cmp::Ordering::Equal => {
                m_equal += 1;
                "="
            }
            std::cmp::Ordering::Greater => {
                m_worse += 1;
                ">"
            }
        };
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {vs} |",
            ttl.map_or_else(|| "∞".to_string(), |n| n.to_string()),
            thousands(u.memdays),
            thousands(c.memdays),
            if le { "yes" } else { "**NO**" },
            thousands(c.memdays_union),
            thousands(m.memdays_union),
        );
    }
    let _ = writeln!(
        s,
        "\nConditional ≤ unconditional at every TTL: {}. Merge (union) below conditional at {} \
         TTLs, equal at {}, above at {}.",
        if all_le { "yes" } else { "**NO**" },
        m_better,
        m_equal,
        m_worse
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn optimum_is_the_first_ttl_where_normalised_memdays_reaches_normalised_q() {
        // MemDays 0, 10, 20, 30, 40 (∞: 100) → 0, .1, .2, .3, .4;
        // Q 100, 50, 34, 25, 20 (∞: 10) → 1, .5, .34, .25, .2: crossing at TTL 3.
        let finite = [(0, 100), (10, 50), (20, 34), (30, 25), (40, 20)];
        assert_eq!(optimum(&finite, (100, 10)), Some(3));
        // A tie counts as crossed: .5 vs .5 at TTL 1.
        assert_eq!(optimum(&[(0, 100), (50, 50)], (100, 10)), Some(1));
        // Never crossing at a finite TTL.
        assert_eq!(optimum(&[(0, 100), (1, 90)], (100, 1)), None);
        // All-zero MemDays (normalised 0) never reaches a positive Q.
        assert_eq!(optimum(&[(0, 100), (0, 50)], (0, 10)), None);
    }

    #[test]
    fn thousands_groups_by_three() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(4_010_406), "4,010,406");
        assert_eq!(thousands(368_000), "368,000");
    }

    #[test]
    fn the_grid_is_policy_major_with_inf_last() {
        let g = grid(2);
        assert_eq!(g.len(), 5 * 3);
        assert_eq!(g[0], (PolicyKind::None, Some(0)));
        assert_eq!(g[2], (PolicyKind::None, None));
        assert_eq!(g[3], (PolicyKind::Forever, Some(0)));
        assert_eq!(g[14], (PolicyKind::Merge, None));
    }
}
