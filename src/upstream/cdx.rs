//! Asking a `kind = "cdx"` archive: its CDX API, paged by the core's `Pager` as the sampling
//! client pages it (`showNumPages=true`, then `page=0` … `n-1`, or one unpaged query when the
//! index is not paged), every request through the archive's guarded link under a TimeMap's limits
//! (`max_pages` pages, `max_body` bytes over all of them, the shared budget), every row made a
//! memento by the archive's replay template. Rows that cannot be one are skipped and counted.

use super::budget::{Budget, Held};
use super::failure::FailureKind;
use super::fetch::{fetch_page, ArchiveFetch, ArchiveLink, FetchLimits, PARSE_INLINE_LIMIT};
use super::registry::CdxSource;
use super::turns::Turn;
use crate::timemap::answer::{ArchiveAnswer, ArchiveStatus};
use crate::timemap::datetime::format_14digit;
use crate::timemap::model::LinkMemento;
use std::sync::Arc;
use tmproxy_core::cdx::replay::Replay;
use tmproxy_core::cdx::{
    detect_dialect, paging, query_url, read_rows, Dialect, Pager, Paging, COUNT_QUERY,
};
use tmproxy_core::timemap::incremental::Since;
use tmproxy_core::timemap::refresh::Refresh;

/// What a CDX request accepts.
const ACCEPT_JSON: &str = "application/json";

/// Why a CDX archive built in code without a replay template answers nothing: it could make
/// no URI-M of a capture.
const MISSING: &str = "none given: a kind = \"cdx\" archive needs one";

/// What one page of rows gave.
struct PageRows {
    mementos: Vec<LinkMemento>,
    skipped: usize,
    /// The dialect the page was read in (None for an empty page).
    dialect: Option<Dialect>,
}

/// Fetches every capture of `uri_r` from a CDX archive. Statuses as for a TimeMap: `ok` with
/// mementos; `not_found` for a 404/410 or an answer with no capture; `malformed` when nothing
/// could be read (not the dialect's JSON, or no row usable).
///
/// With `since` (an incremental refresh) every query asks `from=` the newest stored memento's
/// second, which both the Internet Archive's and pywb's CDX servers take: only captures from
/// then on come. Whether that answer can be trusted is the caller's to judge.
pub async fn fetch_cdx(
    link: &ArchiveLink,
    turn: &Turn<'_>,
    source: &CdxSource,
    uri_r: &str,
    limits: &FetchLimits,
    budget: &Arc<Budget>,
    since: Option<&Since>,
) -> ArchiveFetch {
    let Some(replay) = &source.replay else {
        return ArchiveFetch::failed(FailureKind::Other, None, format!("replay: {MISSING}"));
    };
    let Some(endpoint) = &source.endpoint else {
        return ArchiveFetch::failed(FailureKind::Other, None, format!("cdx: {MISSING}"));
    };
    let from = since.map(|s| format_14digit(s.newest));
    let url = |extra: &[(&str, &str)]| {
        let mut extra = extra.to_vec();
        extra.extend(from.as_deref().map(|from| ("from", from)));
        query_url(endpoint.as_str(), uri_r, &extra)
    };
    let refresh = match since {
        Some(_) => Refresh::Incremental,
        None => Refresh::Full,
    };
    let mut body_bytes: u64 = 0;
    let not_found = |http_status: u16, pages: usize, bytes: u64| {
        let mut answer = ArchiveAnswer::failed(ArchiveStatus::NotFound, Some(http_status), None);
        answer.pages = pages;
        let mut fetch = ArchiveFetch::answered(answer);
        fetch.read.listing.refresh = refresh;
        fetch.read.bytes = bytes;
        fetch
    };

    // How many pages: IA answers a number, pywb over a ZipNum index `{"pages": n}`, pywb over a
    // plain index the captures themselves (then one unpaged query follows).
    let first = match url(&[COUNT_QUERY]) {
        Ok(u) => u,
        Err(why) => return ArchiveFetch::failed(FailureKind::Other, None, why),
    };
    let page = match fetch_page(
        link,
        turn,
        &first,
        limits.max_body,
        budget,
        ACCEPT_JSON,
        &[],
    )
    .await
    {
        Ok(page) => page,
        Err(failure) => return failure,
    };
    body_bytes += page.body.len() as u64;
    if page.http_status == 404 || page.http_status == 410 {
        return not_found(page.http_status, 0, body_bytes);
    }
    let mut dialect = source.dialect;
    let mut notes: Vec<String> = Vec::new();
    let answer = paging(&String::from_utf8_lossy(&page.body));
    match answer {
        Paging::NoCaptures | Paging::Pages(0, _) => {
            return not_found(page.http_status, 0, body_bytes)
        }
        Paging::Pages(_, said) => {
            dialect.get_or_insert(said);
        }
        Paging::Unpaged => {}
    }
    let pager = Pager::new(answer, limits.max_pages as u64);
    if pager.asked() < pager.total() {
        notes.push(format!(
            "stopped after {} of {} pages (max_pages)",
            pager.asked(),
            pager.total()
        ));
    }
    drop(page);

    let mut result =
        ArchiveFetch::answered(ArchiveAnswer::failed(ArchiveStatus::Empty, None, None));
    let mut held = budget.hold();
    let mut unreadable = false;
    for (i, query) in pager.enumerate() {
        let params = query.params();
        let extra: Vec<(&str, &str)> = params.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let uri = match url(&extra) {
            Ok(u) => u,
            Err(why) => return ArchiveFetch::failed(FailureKind::Other, None, why),
        };
        let cap = limits.max_body.saturating_sub(body_bytes);
        let page = match fetch_page(link, turn, &uri, cap, budget, ACCEPT_JSON, &[]).await {
            Ok(page) => page,
            // A refused hop is the archive sending us where it must not: nothing it gave counts.
            Err(failure) if i == 0 || failure.failure == Some(FailureKind::RefusedRedirect) => {
                return failure
            }
            Err(failure) => {
                // A later page failed: keep what the earlier pages gave, and say so.
                notes.push(format!("page {} failed: {}", i + 1, detail(&failure)));
                break;
            }
        };
        result.answer.pages += 1;
        result.answer.http_status = Some(page.http_status);
        if page.http_status == 404 || page.http_status == 410 {
            if i == 0 {
                return not_found(page.http_status, 1, body_bytes);
            }
            notes.push(format!("page {} answered {}", i + 1, page.http_status));
            continue;
        }
        body_bytes += page.body.len() as u64;
        let (read, page_held) = read_page(page.body, page.held, dialect, replay.clone()).await;
        held.absorb(page_held);
        match read {
            Ok(rows) => {
                dialect = dialect.or(rows.dialect);
                result.answer.skipped += rows.skipped;
                result.mementos.extend(rows.mementos);
            }
            Err(why) => {
                unreadable = true;
                notes.push(format!("page {}: {why}", i + 1));
            }
        }
    }

    if result.answer.skipped > 0 {
        notes.push(format!(
            "skipped {} unreadable CDX rows",
            result.answer.skipped
        ));
    }
    result.settle_listing(if !result.mementos.is_empty() {
        ArchiveStatus::Ok
    } else if unreadable || result.answer.skipped > 0 {
        ArchiveStatus::Malformed
    } else {
        ArchiveStatus::NotFound
    });
    result.answer.detail = (!notes.is_empty()).then(|| notes.join("; "));
    result.held = Some(Arc::new(held));
    result.read.listing.refresh = refresh;
    result.read.bytes = body_bytes;
    result
}

fn detail(failure: &ArchiveFetch) -> String {
    failure.answer.detail.clone().unwrap_or_default()
}

/// Reads one page of rows into mementos, off the async workers when it is large. The body's
/// charge travels with it and comes back with the result, as for a TimeMap page.
async fn read_page(
    body: Vec<u8>,
    held: Held,
    dialect: Option<Dialect>,
    replay: Replay,
) -> (Result<PageRows, String>, Held) {
    let inline = body.len() <= PARSE_INLINE_LIMIT;
    let read = move || {
        let text = super::fetch::body_text(&body);
        let rows = match dialect.or_else(|| detect_dialect(&text)) {
            None if text.trim().is_empty() => Ok(PageRows {
                mementos: Vec::new(),
                skipped: 0,
                dialect: None,
            }),
            None => Err("not CDX JSON in either dialect".to_string()),
            Some(d) => read_rows(d, &text).map_err(|e| e.0).map(|rows| {
                let (mementos, bad) = replay.mementos(&rows.rows);
                PageRows {
                    mementos,
                    skipped: rows.skipped + bad,
                    dialect: Some(d),
                }
            }),
        };
        drop(text);
        drop(body);
        (rows, held)
    };
    if inline {
        read()
    } else {
        match tokio::task::spawn_blocking(read).await {
            Ok(done) => done,
            // The read panicked: its charge was given back when it unwound.
            Err(_) => (
                Err("reading the rows failed".to_string()),
                Budget::new(0).hold(),
            ),
        }
    }
}
