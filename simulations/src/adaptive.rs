//! `memsim sweep --ttl-mode adaptive`: the adaptive TTL rule (`tmproxy_core::policy::Adaptive`)
//! at every budget × `ttl_min` × `ttl_max` of a grid, replayed beside the fixed-TTL grid through
//! the same `serve_day`, written as `adaptive.csv` and a section of `summary.md` that sets each
//! setting against the paper's recommended point (conditional, TTL 15).

use crate::replay::{adaptive_policy, Measures};
use chrono::Duration;
use std::io::{self, Write};
use tmproxy_core::policy::{Adaptive, Match, Policy, PolicyKind};

/// The CSV header of `adaptive.csv`, exactly.
pub const CSV_HEADER: &str = "policy,budget,ttl_min,ttl_max,memdays,memdays_live,memdays_union,q,\
                              missed_days,false_zero_days,worse_replacements";

/// The fixed TTL the paper recommends for `conditional`, which the adaptive settings are held to.
pub const PAPER_TTL: i64 = 15;

/// One adaptive setting: a policy and the rule's three parameters (bounds in days).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Setting {
    pub kind: PolicyKind,
    pub budget: f64,
    pub min_days: f64,
    pub max_days: f64,
}

impl Setting {
    pub fn rule(&self) -> Adaptive {
        let days = |d: f64| Duration::seconds((d * 86_400.0).round() as i64);
        Adaptive {
            min: days(self.min_days),
            max: days(self.max_days),
            budget: self.budget,
        }
    }

    pub fn policy(&self) -> Policy {
        adaptive_policy(self.kind, Match::Loose, self.rule())
    }

    /// `budget 2, TTL 1–90 d`.
    pub fn label(&self) -> String {
        format!(
            "budget {}, TTL {}–{} d",
            self.budget, self.min_days, self.max_days
        )
    }
}

/// Every budget × min × max for `conditional`, budgets innermost (a curve per pair of bounds);
/// pairs with min > max are left out.
pub fn grid(budgets: &[f64], mins: &[f64], maxes: &[f64]) -> Vec<Setting> {
    let mut out = Vec::new();
    for &min_days in mins {
        for &max_days in maxes.iter().filter(|&&m| m >= min_days) {
            for &budget in budgets {
                out.push(Setting {
                    kind: PolicyKind::Conditional,
                    budget,
                    min_days,
                    max_days,
                });
            }
        }
    }
    out
}

/// One adaptive cell's result.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AdaptiveRow {
    pub setting: Setting,
    pub measures: Measures,
}

/// Writes `adaptive.csv`.
pub fn write_csv<W: Write>(rows: &[AdaptiveRow], mut out: W) -> io::Result<()> {
    writeln!(out, "{CSV_HEADER}")?;
    for r in rows {
        let (s, m) = (r.setting, r.measures);
        writeln!(
            out,
            "{},{},{},{},{}",
            s.kind,
            s.budget,
            s.min_days,
            s.max_days,
            m.csv_fields()
        )?;
    }
    out.flush()
}

/// Whether `m` dominates the paper's point as the goal asks: Q no higher, MemDays at most half.
pub fn meets_goal(m: &Measures, paper: &Measures) -> bool {
    m.q <= paper.q && 2 * m.memdays <= paper.memdays
}

/// The setting that meets the goal with the fewest MemDays, else the one with the fewest MemDays
/// at a Q no higher than the paper's point (None: every setting asks more).
pub fn best<'a>(rows: &'a [AdaptiveRow], paper: &Measures) -> Option<&'a AdaptiveRow> {
    rows.iter()
        .filter(|r| r.measures.q <= paper.q)
        .min_by_key(|r| (!meets_goal(&r.measures, paper), r.measures.memdays))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(memdays: u64, q: u64) -> Measures {
        Measures {
            memdays,
            q,
            ..Measures::default()
        }
    }

    #[test]
    fn the_goal_is_q_no_higher_and_at_most_half_the_memdays() {
        let paper = m(1000, 24);
        assert!(meets_goal(&m(500, 24), &paper));
        assert!(!meets_goal(&m(501, 24), &paper));
        assert!(!meets_goal(&m(100, 25), &paper));
    }

    #[test]
    fn the_grid_skips_crossed_bounds() {
        let g = grid(&[1.0, 2.0], &[0.0, 5.0], &[3.0, 90.0]);
        // (0, 3), (0, 90), (5, 90): three pairs of bounds, two budgets each.
        assert_eq!(g.len(), 6);
        assert!(g.iter().all(|s| s.min_days <= s.max_days));
        assert_eq!(g[0].rule().max, Duration::days(3));
    }
}
