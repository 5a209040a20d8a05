//! `summary.md`'s section on the adaptive TTL settings of `memsim sweep --ttl-mode adaptive`:
//! each beside the fixed grid's conditional TTL 15, and the best at no higher Q.

use crate::adaptive::{best, meets_goal, AdaptiveRow, PAPER_TTL};
use crate::sweep::{find, thousands, Row};
use std::fmt::Write as _;
use tmproxy_core::policy::PolicyKind;

/// `summary.md`'s section on the adaptive settings.
pub fn summary_section(fixed: &[Row], rows: &[AdaptiveRow]) -> String {
    let mut s = String::from("\n## Adaptive TTL\n\n");
    let Some(paper) = find(fixed, PolicyKind::Conditional, Some(PAPER_TTL)).copied() else {
        let _ = writeln!(s, "(no conditional TTL {PAPER_TTL} cell to compare with)");
        return s;
    };
    let _ = writeln!(
        s,
        "Each entry its own TTL, √(2·budget/λ) days within [ttl_min, ttl_max] \
         (docs/cache-policy.md, \"Adaptive TTL\"), against the paper's recommended point, \
         conditional TTL {PAPER_TTL}: MemDays {}, Q {}. The goal: Q no higher and MemDays at \
         most half ({}). Every setting is in `adaptive.csv`; `adaptive.svg` draws them against \
         the fixed-TTL curves.\n",
        thousands(paper.memdays),
        thousands(paper.q),
        thousands(paper.memdays / 2)
    );
    match best(rows, &paper) {
        Some(b) => {
            let _ = writeln!(
                s,
                "Best at Q ≤ {}: {} {}: MemDays {} ({:.1}% of TTL {PAPER_TTL}'s), Q {} — goal {}.\n",
                thousands(paper.q),
                b.setting.kind,
                b.setting.label(),
                thousands(b.measures.memdays),
                100.0 * b.measures.memdays as f64 / paper.memdays.max(1) as f64,
                thousands(b.measures.q),
                if meets_goal(&b.measures, &paper) {
                    "met"
                } else {
                    "NOT met"
                }
            );
        }
        None => {
            let _ = writeln!(
                s,
                "No setting asks the archives as little as TTL {PAPER_TTL}.\n"
            );
        }
    }
    let _ = writeln!(
        s,
        "| policy | budget | ttl_min (d) | ttl_max (d) | MemDays | Q | MemDays / TTL {PAPER_TTL}'s | goal |\n|---|---|---|---|---|---|---|---|"
    );
    for r in rows {
        let (st, m) = (r.setting, r.measures);
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {:.3} | {} |",
            st.kind,
            st.budget,
            st.min_days,
            st.max_days,
            thousands(m.memdays),
            thousands(m.q),
            m.memdays as f64 / paper.memdays.max(1) as f64,
            if meets_goal(&m, &paper) { "yes" } else { "no" }
        );
    }
    s
}
