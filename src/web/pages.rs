//! The pages as values: what each template shows, built from the aggregate, the archives'
//! reports or an error, without HTTP. askama renders them (and HTML-escapes every value).

use super::archives::ArchiveReport;
use super::assets::{ADMIN_JS, STYLE};
use super::timeline::{self, Timeline, YearList};
use crate::cache::service::CacheStatus;
use crate::error::AppError;
use crate::timemap::aggregate::{Aggregate, Verdict};
use crate::timemap::serialize::{SelfLinks, TimeMapFormat};
use crate::uri_text::{escape_uri, is_servable_uri_m};
use askama::Template;

/// What every page's frame needs (`base.html`).
pub struct Layout {
    pub title: String,
    pub style: String,
    pub script: Option<String>,
    pub version: &'static str,
    /// The site icon's URL (the embedded SVG).
    pub icon: String,
    /// Whether the header links to `/ui/admin`: not on a listener the admin API is not on
    /// (`[admin] listen` set), where the page could only say it is elsewhere.
    pub admin_link: bool,
}

impl Layout {
    fn new(title: impl Into<String>) -> Layout {
        Layout {
            title: title.into(),
            style: STYLE.url(),
            script: None,
            version: env!("CARGO_PKG_VERSION"),
            icon: super::assets::ICON.url(),
            admin_link: true,
        }
    }
}

/// `GET /`: the search box and the archives.
#[derive(Template)]
#[template(path = "home.html")]
pub struct Home {
    pub layout: Layout,
    pub archives: Vec<ArchiveRow>,
}

/// One archive as the home page lists it.
pub struct ArchiveRow {
    pub id: String,
    pub name: String,
    pub state: String,
    /// `active`, `dormant` or `disabled`: a class, so one of a fixed set.
    pub state_class: &'static str,
    pub last: String,
    pub answers: String,
    pub latency: String,
}

pub fn home(reports: &[ArchiveReport]) -> Home {
    let archives = reports
        .iter()
        .map(|r| {
            let (state, state_class) = match (r.enabled, r.state) {
                (false, _) => ("disabled".to_string(), "disabled"),
                (true, Some("dormant")) => (
                    match &r.dormant_until {
                        Some(until) => format!("dormant until {until}"),
                        None => "dormant".to_string(),
                    },
                    "dormant",
                ),
                (true, _) => ("active".to_string(), "active"),
            };
            let answers: Vec<String> = r
                .counts
                .iter()
                .filter(|(_, n)| **n > 0)
                .map(|(outcome, n)| format!("{outcome} {n}"))
                .collect();
            ArchiveRow {
                id: r.id.clone(),
                name: r.name.clone(),
                state,
                state_class,
                last: match (r.last_outcome, &r.last_at) {
                    (Some(o), Some(at)) => format!("{o} at {at}"),
                    (Some(o), None) => o.to_string(),
                    _ => "not asked yet".to_string(),
                },
                answers: if answers.is_empty() {
                    "none".to_string()
                } else {
                    answers.join(", ")
                },
                latency: match (r.latency_ms.p50, r.latency_ms.p95) {
                    (Some(p50), Some(p95)) => format!("{p50} ms / {p95} ms"),
                    _ => "none yet".to_string(),
                },
            }
        })
        .collect();
    Home {
        layout: Layout::new("Find mementos"),
        archives,
    }
}

/// `GET /ui/{URI-R}`: the aggregated TimeMap.
#[derive(Template)]
#[template(path = "timemap.html")]
pub struct TimeMapPage {
    pub layout: Layout,
    pub uri_r: String,
    pub summary: String,
    /// Why there is no memento to show (not archived, no archive answered).
    pub problem: Option<String>,
    pub links: Links,
    /// The URI-R itself, when it can be a link.
    pub live: Option<String>,
    pub timeline: Option<Timeline>,
    pub cache: &'static str,
    pub fetched: String,
    pub outcomes: Vec<OutcomeRow>,
    pub years: Vec<YearList>,
    pub unlisted: usize,
    pub unlisted_years: usize,
    pub per_year: usize,
    pub list_total: usize,
}

/// This server's own URLs for the URI-R, relative to the page.
pub struct Links {
    pub link: String,
    pub json: String,
    pub cdxj: String,
    pub timegate: String,
}

impl Links {
    pub fn of(uri_r: &str) -> Links {
        // An empty base: the same paths every format's self links use, relative to this host.
        let own = SelfLinks::new("", uri_r);
        Links {
            link: own.timemap(TimeMapFormat::LINK),
            json: own.timemap(TimeMapFormat::JSON),
            cdxj: own.timemap(TimeMapFormat::CDXJ),
            timegate: own.timegate(),
        }
    }
}

/// One archive's answer, as the table shows it.
pub struct OutcomeRow {
    pub id: String,
    /// `ok`, `empty`, `not_found`, `timeout`, `error` or `malformed`.
    pub status: &'static str,
    pub http: String,
    pub mementos: usize,
    pub elapsed: String,
    pub detail: String,
}

/// The page for `agg`; `problem` is the reason its status says (None when it has mementos).
pub fn timemap(agg: &Aggregate, cache: CacheStatus, problem: Option<String>) -> TimeMapPage {
    let mementos = &agg.timemap.mementos;
    let outcome_ids: Vec<String> = agg.outcomes.iter().map(|o| o.id.clone()).collect();
    let order = timeline::archive_order(&outcome_ids, mementos);
    let (years, unlisted, unlisted_years) = timeline::list_by_year(mementos);
    let with_mementos = agg.outcomes.iter().filter(|o| o.mementos > 0).count();
    let summary = match (agg.verdict(), mementos.first(), mementos.last()) {
        (Verdict::Found { partial }, Some(first), Some(last)) => format!(
            "{} {} from {} of {} {}, {} to {}{}.",
            mementos.len(),
            if mementos.len() == 1 {
                "memento"
            } else {
                "mementos"
            },
            with_mementos,
            agg.outcomes.len(),
            if agg.outcomes.len() == 1 {
                "archive"
            } else {
                "archives"
            },
            first.datetime.format("%Y-%m-%d"),
            last.datetime.format("%Y-%m-%d"),
            if partial {
                "; some archives did not answer (see below)"
            } else {
                ""
            },
        ),
        _ => "No memento to show.".to_string(),
    };
    TimeMapPage {
        layout: Layout::new(format!("Mementos of {}", agg.uri_r)),
        uri_r: agg.uri_r.clone(),
        summary,
        problem,
        links: Links::of(&agg.uri_r),
        live: is_servable_uri_m(&agg.uri_r).then(|| escape_uri(&agg.uri_r).into_owned()),
        timeline: timeline::timeline(mementos, &order),
        cache: cache.as_str(),
        fetched: agg.fetched_at.format("%Y-%m-%d %H:%M:%S UTC").to_string(),
        outcomes: agg
            .outcomes
            .iter()
            .map(|o| OutcomeRow {
                id: match &o.via {
                    Some(via) => format!("{} (via {via})", o.id),
                    None => o.id.clone(),
                },
                status: o.answer.status.as_str(),
                http: o
                    .answer
                    .http_status
                    .map_or_else(|| "none".to_string(), |s| s.to_string()),
                mementos: o.mementos,
                elapsed: format!("{} ms", o.answer.elapsed_ms),
                // A kept answer whose archive failed since: say both, so the page is as honest
                // as archives[] (askama escapes it, like every archive text).
                detail: match &o.last_error {
                    Some(e) => format!(
                        "{}{}served from {}; asked again {} and got {}{}",
                        o.answer.detail.as_deref().unwrap_or_default(),
                        if o.answer.detail.is_some() { "; " } else { "" },
                        o.fetched_at.format("%Y-%m-%d %H:%M UTC"),
                        e.at.format("%Y-%m-%d %H:%M UTC"),
                        e.status.as_str(),
                        e.detail
                            .as_deref()
                            .map(|d| format!(": {d}"))
                            .unwrap_or_default(),
                    ),
                    None => o.answer.detail.clone().unwrap_or_default(),
                },
            })
            .collect(),
        years,
        unlisted,
        unlisted_years,
        per_year: timeline::LIST_PER_YEAR,
        list_total: timeline::LIST_TOTAL,
    }
}

/// `GET /ui/admin`: the token form, or (on the public listener while `[admin] listen` is set)
/// where to find it.
#[derive(Template)]
#[template(path = "admin.html")]
pub struct Admin {
    pub layout: Layout,
    pub elsewhere: bool,
}

pub fn admin(elsewhere: bool) -> Admin {
    let mut layout = Layout::new("Administration");
    if !elsewhere {
        layout.script = Some(ADMIN_JS.url());
    }
    // A page saying the admin API is elsewhere is on a listener without it.
    layout.admin_link = !elsewhere;
    Admin { layout, elsewhere }
}

/// A request the pages cannot answer (a bad URI-R…): its status and reason, from `error.rs`.
#[derive(Template)]
#[template(path = "error.html")]
pub struct ErrorPage {
    pub layout: Layout,
    pub heading: String,
    pub reason: String,
    /// What was typed in the search box, kept there so it can be corrected rather than typed
    /// again.
    pub asked: String,
}

pub fn error(e: &AppError) -> ErrorPage {
    let status = e.status();
    let heading = format!(
        "{} {}",
        status.as_u16(),
        status.canonical_reason().unwrap_or("Error")
    );
    ErrorPage {
        layout: Layout::new(heading.clone()),
        heading,
        reason: e.reason(),
        asked: String::new(),
    }
}

#[cfg(test)]
mod tests;
