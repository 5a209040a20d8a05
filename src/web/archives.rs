//! What the server says about each configured archive: its health and record since start, as
//! `GET /archives` serializes it and the home page lists it, and `GET /about`'s text, the same in
//! MemGator's plain-text shape (its endpoints, its archives with any dormancy or run of failures,
//! its settings), for the clients and people used to that page; with each archive's limits
//! (`max_concurrency`, `rate`), its requests in flight now and any wait it asked of us. Pure: the
//! routes gather what the upstream and routing hold and hand it here.

use crate::config::ArchiveConfig;
use crate::timemap::datetime::format_rfc3339;
use crate::upstream::ledger::{LedgerSnapshot, SkipReason, Turn};
use crate::upstream::turns::Load;
use crate::upstream::{Health, Upstream};
use chrono::{DateTime, Utc};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write;

/// One configured archive as `/archives` shows it.
#[derive(Debug, Serialize, PartialEq)]
pub struct ArchiveReport {
    pub id: String,
    pub name: String,
    pub enabled: bool,
    /// `active` or `dormant`; none for a disabled archive, which is never asked.
    pub state: Option<&'static str>,
    pub dormant_until: Option<String>,
    pub consecutive_failures: u32,
    pub last_outcome: Option<&'static str>,
    pub last_at: Option<String>,
    /// Every outcome, zero counts too, so a dashboard sees the whole set.
    pub counts: BTreeMap<&'static str, u64>,
    pub latency_ms: Latency,
    /// Its routing profile and what routing skipped of it.
    pub routing: RoutingReport,
    /// The most of our requests in flight to it at once (`[[archives]] max_concurrency`).
    pub max_concurrency: u32,
    /// The most of our requests a second (`[[archives]] rate`); null when unlimited.
    pub rate: Option<f64>,
    /// Its turns in flight now.
    pub in_flight: usize,
    /// Until when it asked us not to ask it (a 429 or 503 with `Retry-After`); absent when it
    /// did not, or that time has passed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_after_until: Option<String>,
}

/// One archive's routing since start: `profile_keys` (keys its profile holds), `skipped` (misses
/// routing did not ask it), `skip_share` (those over every miss routing decided; 0 before any).
#[derive(Debug, Serialize, PartialEq, Default)]
pub struct RoutingReport {
    pub profile_keys: usize,
    pub skipped: u64,
    pub skip_share: f64,
}

impl RoutingReport {
    pub fn of(profile_keys: usize, skipped: u64, misses_decided: u64) -> RoutingReport {
        let skip_share = match misses_decided {
            0 => 0.0,
            n => skipped as f64 / n as f64,
        };
        RoutingReport {
            profile_keys,
            skipped,
            skip_share,
        }
    }
}

#[derive(Debug, Serialize, PartialEq, Default)]
pub struct Latency {
    pub p50: Option<u64>,
    pub p95: Option<u64>,
}

/// What one enabled archive has done and how it is now.
pub struct Observed<'a> {
    pub ledger: LedgerSnapshot,
    pub health: &'a Health,
    /// Keys its routing profile holds, and misses routing decided since start.
    pub profile_keys: usize,
    pub misses_decided: u64,
    /// Its turns now.
    pub load: Load,
}

/// The reports, in configured order. Pure: `observed` finds an enabled archive's record by id
/// (None for a disabled one), and `now` judges dormancy.
pub fn reports<'a>(
    configured: &[ArchiveConfig],
    observed: impl Fn(&str) -> Option<Observed<'a>>,
    now: DateTime<Utc>,
) -> Vec<ArchiveReport> {
    configured
        .iter()
        .map(|a| {
            let seen = observed(&a.id).filter(|_| a.enabled);
            let health = seen.as_ref().map(|o| o.health);
            let dormant = health.is_some_and(|h| h.is_dormant(now));
            let ledger = seen.as_ref().map(|o| &o.ledger);
            ArchiveReport {
                id: a.id.clone(),
                name: if a.name.is_empty() {
                    a.id.clone()
                } else {
                    a.name.clone()
                },
                enabled: a.enabled,
                state: seen
                    .as_ref()
                    .map(|_| if dormant { "dormant" } else { "active" }),
                dormant_until: health
                    .filter(|_| dormant)
                    .and_then(|h| h.dormant_until)
                    .map(format_rfc3339),
                consecutive_failures: health.map_or(0, |h| h.consecutive_failures),
                last_outcome: ledger.and_then(|l| l.last).map(|(o, _)| o.as_str()),
                last_at: ledger
                    .and_then(|l| l.last)
                    .map(|(_, at)| format_rfc3339(at)),
                counts: Turn::ALL
                    .iter()
                    .enumerate()
                    .map(|(i, o)| (o.as_str(), ledger.map_or(0, |l| l.counts[i])))
                    .collect(),
                latency_ms: ledger.map_or_else(Latency::default, |l| Latency {
                    p50: l.p50_ms,
                    p95: l.p95_ms,
                }),
                routing: seen.as_ref().map_or_else(RoutingReport::default, |o| {
                    let skipped = o.ledger.skipped_by[SkipReason::Routing.index()];
                    RoutingReport::of(o.profile_keys, skipped, o.misses_decided)
                }),
                max_concurrency: a.max_concurrency,
                rate: (a.rate > 0.0).then_some(a.rate),
                in_flight: seen.as_ref().map_or(0, |o| o.load.in_flight),
                retry_after_until: health.and_then(|h| h.held_until(now)).map(format_rfc3339),
            }
        })
        .collect()
}

/// Every route a client of this listener can ask, as `/about` lists them: (what, path). The
/// admin API only where it answers (`admin_here`: not on its own listener).
fn routes(admin_here: bool) -> Vec<(&'static str, &'static str)> {
    let mut routes = vec![
        ("TimeMap:", "/timemap/{FORMAT}/{URI-R}"),
        ("", "/timemap/{FORMAT}/{N}/{URI-R}  (page N)"),
        ("TimeGate:", "/timegate/{URI-R} [Accept-Datetime]"),
        (
            "Memento:",
            "/memento/{DATETIME}/{URI-R}  (302 to the closest)",
        ),
        (
            "",
            "/memento/{FORMAT}/{DATETIME}/{URI-R}  (the closest and its neighbours)",
        ),
        (
            "",
            "/memento/proxy/{DATETIME}/{URI-R}  (the closest memento's bytes)",
        ),
        (
            "",
            "/api/{FORMAT}/{DATETIME}/{URI-R}, /api/proxy/{DATETIME}/{URI-R}  (as /memento/)",
        ),
        ("Archives:", "/archives"),
        ("About:", "/about"),
        ("Health:", "/healthz"),
        ("Web page:", "/, /ui?url={URI-R}, /ui/{URI-R}"),
    ];
    if admin_here {
        routes.push(("Admin:", "/admin/...  (with the admin token), /ui/admin"));
        routes.push(("Metrics:", "/metrics"));
    }
    routes
}

/// MemGator's `/about` sections, in our words: what this is, the endpoints, the archives (with
/// `(DORMANT)` or `(Consecutive failures: N)` as MemGator marks them, and `(asked us to wait
/// until …)` for one holding us off), the settings.
pub fn about_text(
    base: &str,
    reports: &[ArchiveReport],
    upstream: &Upstream,
    admin_here: bool,
) -> String {
    let mut t = format!(
        "# tmproxy ({})\n\nA Memento aggregator: one TimeMap from many web archives.\n\n",
        env!("CARGO_PKG_VERSION")
    );
    t.push_str("## API Endpoints\n\n");
    for (what, route) in routes(admin_here) {
        let _ = writeln!(t, "{what:<9} {base}{route}");
    }
    t.push('\n');
    t.push_str("  {FORMAT}          => link|json|cdxj\n");
    t.push_str("  {DATETIME}        => YYYY[MM[DD[hh[mm[ss]]]]]\n");
    t.push_str("  [Accept-Datetime] => Header in RFC1123 format\n\n");
    t.push_str("## Upstream Archives\n");
    for (i, r) in reports.iter().enumerate() {
        let _ = write!(t, "\n{}. [{}]({})", i + 1, r.name, r.id);
        if !r.enabled {
            t.push_str(" - (DISABLED)");
        } else if r.state == Some("dormant") {
            t.push_str(" - (DORMANT)");
        } else if r.consecutive_failures > 0 {
            let _ = write!(t, " - (Consecutive failures: {})", r.consecutive_failures);
        }
        if let Some(until) = &r.retry_after_until {
            let _ = write!(t, " - (asked us to wait until {until})");
        }
    }
    t.push_str("\n\n## Configs\n\n");
    let _ = writeln!(t, "Base URL:               {base}/");
    let _ = writeln!(t, "Request deadline:       {:?}", upstream.deadline());
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timemap::answer::ArchiveStatus;
    use crate::upstream::ledger::Ledger;
    use chrono::TimeZone;
    use std::time::Duration;

    fn archive(id: &str, enabled: bool) -> ArchiveConfig {
        ArchiveConfig {
            id: id.into(),
            name: String::new(),
            timemap: Some(
                format!("http://{id}.test/timemap/link/")
                    .parse()
                    .expect("a URL"),
            ),
            timegate: format!("http://{id}.test/timegate/")
                .parse()
                .expect("a URL"),
            timeout: None,
            enabled,
            redirect_hosts: Vec::new(),
            ..ArchiveConfig::timemap_default()
        }
    }

    #[test]
    fn each_configured_archive_is_reported_in_order_with_its_state() {
        let at = |s: i64| {
            Utc.timestamp_opt(1_800_000_000 + s, 0)
                .single()
                .expect("time")
        };
        let configured = [
            archive("a", true),
            archive("off", false),
            archive("b", true),
        ];
        let ledger = Ledger::default();
        ledger.record(
            Turn::Asked(ArchiveStatus::Timeout),
            Some(Duration::from_millis(900)),
            at(0),
        );
        ledger.record_skip(SkipReason::Routing, at(0));
        let (a_ledger, b_ledger) = (ledger.snapshot(), Ledger::default().snapshot());
        let sleeping = Health {
            consecutive_failures: 2,
            dormant_until: Some(at(60)),
            retry_after_until: None,
        };
        let awake = Health {
            retry_after_until: Some(at(30)),
            ..Health::default()
        };
        let observed = |id: &str| match id {
            "a" => Some(Observed {
                ledger: a_ledger.clone(),
                health: &sleeping,
                profile_keys: 7,
                misses_decided: 4,
                load: Load {
                    in_flight: 3,
                    waiting: 1,
                },
            }),
            "b" => Some(Observed {
                ledger: b_ledger.clone(),
                health: &awake,
                profile_keys: 0,
                misses_decided: 0,
                load: Load::default(),
            }),
            _ => None,
        };
        let got = reports(&configured, observed, at(1));
        let ids: Vec<&str> = got.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(ids, ["a", "off", "b"]);
        assert_eq!(got[0].state, Some("dormant"));
        assert_eq!(
            got[0].dormant_until.as_deref(),
            Some("2027-01-15T08:01:00Z")
        );
        assert_eq!(got[0].last_outcome, Some("skipped"));
        assert_eq!(
            got[0].routing,
            RoutingReport {
                profile_keys: 7,
                skipped: 1,
                skip_share: 0.25
            }
        );
        assert_eq!(got[2].routing, RoutingReport::default(), "no miss yet: 0");
        assert_eq!(got[0].counts["timeout"], 1);
        assert_eq!(got[0].counts.len(), Turn::ALL.len());
        assert_eq!(got[0].latency_ms.p50, Some(900));
        assert_eq!((got[1].enabled, got[1].state), (false, None));
        assert_eq!(got[2].state, Some("active"));
        assert_eq!(
            (got[2].last_at.as_deref(), got[2].latency_ms.p95),
            (None, None)
        );
        // Its limits, its turns now, and the wait it asked for while it lasts.
        assert_eq!((got[0].max_concurrency, got[0].rate), (8, None));
        assert_eq!((got[0].in_flight, got[2].in_flight), (3, 0));
        assert_eq!(got[0].retry_after_until, None);
        assert_eq!(
            got[2].retry_after_until.as_deref(),
            Some("2027-01-15T08:00:30Z")
        );
        let json = serde_json::to_value(&got[0]).expect("serializes");
        assert!(json.get("retry_after_until").is_none(), "absent: {json}");
        assert!(json["rate"].is_null(), "unlimited: {json}");
        // Past its sleep the same health reads active, with no time to wait for.
        let later = reports(&configured, observed, at(61));
        assert_eq!(
            (later[0].state, later[0].dormant_until.as_deref()),
            (Some("active"), None)
        );
        assert_eq!(later[2].retry_after_until, None);
    }
}
