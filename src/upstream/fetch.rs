//! Asking one archive for its TimeMap: one request per page, a body cap, no parse of error bodies.

use super::registry::Archive;
use crate::timemap::aggregate::ArchiveStatus;
use crate::timemap::model::LinkMemento;
use crate::timemap::parse::parse_link_format;
use std::collections::HashSet;
use std::time::Duration;

/// Bodies larger than this are parsed off the async workers, so one huge TimeMap does not stall
/// every other request on the same thread.
const PARSE_INLINE_LIMIT: usize = 1 << 20;

/// Limits that apply to every archive.
#[derive(Debug, Clone)]
pub struct FetchLimits {
    pub max_body: u64,
    pub max_pages: usize,
}

/// What one archive gave us, before merging. `mementos` may hold duplicates; the merge removes them.
#[derive(Debug, Clone)]
pub struct ArchiveFetch {
    pub status: ArchiveStatus,
    pub http_status: Option<u16>,
    pub detail: Option<String>,
    pub pages: usize,
    pub skipped: usize,
    pub mementos: Vec<LinkMemento>,
}

impl ArchiveFetch {
    pub fn failed(
        status: ArchiveStatus,
        http_status: Option<u16>,
        detail: impl Into<String>,
    ) -> ArchiveFetch {
        ArchiveFetch {
            status,
            http_status,
            detail: Some(detail.into()),
            pages: 0,
            skipped: 0,
            mementos: Vec::new(),
        }
    }
}

/// Builds the one pooled client every archive request goes through.
pub fn build_client(
    connect_timeout: Duration,
    user_agent: &str,
) -> Result<reqwest::Client, reqwest::Error> {
    reqwest::Client::builder()
        .connect_timeout(connect_timeout)
        .user_agent(user_agent)
        // pywb answers TimeMaps and TimeGates with 307; follow a few, only to http(s).
        .redirect(reqwest::redirect::Policy::custom(|attempt| {
            if attempt.previous().len() >= 10 {
                attempt.error("more than 10 redirects")
            } else if !matches!(attempt.url().scheme(), "http" | "https") {
                attempt.error("redirect to a non-http(s) URL")
            } else {
                attempt.follow()
            }
        }))
        .pool_idle_timeout(Duration::from_secs(90))
        .build()
}

/// Fetches an archive's whole TimeMap for `uri_r`, following `rel="timemap"` pages on the same
/// origin up to `max_pages`, each visited once. The caller bounds it in time.
pub async fn fetch_archive(
    client: &reqwest::Client,
    archive: &Archive,
    uri_r: &str,
    limits: &FetchLimits,
) -> ArchiveFetch {
    let first = match archive.timemap_for(uri_r) {
        Ok(uri_t) => uri_t,
        // Never sent: the URL would reach outside what this archive is configured as.
        Err(why) => return ArchiveFetch::failed(ArchiveStatus::Error, None, why),
    };
    let origin = origin_of(&first);
    let mut queue = vec![first];
    let mut seen: HashSet<String> = HashSet::new();
    let mut result = ArchiveFetch {
        status: ArchiveStatus::Empty,
        http_status: None,
        detail: None,
        pages: 0,
        skipped: 0,
        mementos: Vec::new(),
    };
    let mut notes: Vec<String> = Vec::new();
    // Whether any page held link-format links, and whether any held non-blank text that was not.
    let mut saw_links = false;
    let mut saw_garbage = false;
    // Body bytes read so far over all pages.
    let mut body_bytes: u64 = 0;

    while let Some(uri_t) = queue.pop() {
        if !seen.insert(uri_t.clone()) {
            continue;
        }
        if result.pages >= limits.max_pages {
            notes.push(format!(
                "stopped after {} pages (max_pages)",
                limits.max_pages
            ));
            break;
        }
        // max_body bounds the archive's whole answer, every page together, so one archive's
        // share of a fan-out's memory is max_body however it pages.
        let budget = limits.max_body.saturating_sub(body_bytes);
        let page = match fetch_page(client, &uri_t, budget).await {
            Ok(page) => page,
            Err(failure) if result.pages == 0 => return failure,
            Err(failure) => {
                // A later page failed: keep what the earlier pages gave, and say so.
                notes.push(format!(
                    "page {} failed: {}",
                    result.pages + 1,
                    failure.detail.unwrap_or_default()
                ));
                break;
            }
        };
        result.pages += 1;
        body_bytes += page.body.len() as u64;
        result.http_status = Some(page.http_status);
        if page.http_status == 404 || page.http_status == 410 {
            if result.pages == 1 {
                // The archive holds nothing for this URI-R: an answer, not a failure.
                return ArchiveFetch {
                    status: ArchiveStatus::NotFound,
                    http_status: Some(page.http_status),
                    detail: None,
                    pages: 1,
                    skipped: 0,
                    mementos: Vec::new(),
                };
            }
            notes.push(format!(
                "page {} answered {}",
                result.pages, page.http_status
            ));
            continue;
        }
        let blank = page.body.iter().all(u8::is_ascii_whitespace);
        let parsed = parse_body(page.body, uri_t.clone()).await;
        let has_links = parsed.original.is_some()
            || parsed.self_uri.is_some()
            || !parsed.mementos.is_empty()
            || !parsed.pages.is_empty();
        saw_links |= has_links;
        saw_garbage |= !blank && !has_links;
        result.skipped += parsed.skipped;
        result.mementos.extend(parsed.mementos);
        for link in parsed.pages {
            if seen.contains(&link.uri) {
                continue;
            }
            if origin.is_some() && origin_of(&link.uri) == origin {
                queue.push(link.uri);
            } else {
                notes.push(format!("ignored an off-site page link {}", link.uri));
            }
        }
    }

    if result.skipped > 0 {
        notes.push(format!("skipped {} unreadable entries", result.skipped));
    }
    result.status = if !result.mementos.is_empty() {
        ArchiveStatus::Ok
    } else if result.skipped > 0 || (saw_garbage && !saw_links) {
        // Entries were there but none could be read, or the body was not link format at all
        // (an HTML page with a 200): we do not know what this archive holds.
        ArchiveStatus::Malformed
    } else {
        ArchiveStatus::Empty
    };
    result.detail = (!notes.is_empty()).then(|| notes.join("; "));
    result
}

struct Page {
    http_status: u16,
    body: Vec<u8>,
}

/// One GET, its body read up to the cap. Non-2xx bodies are never read: an HTML 404 page is
/// not a TimeMap.
async fn fetch_page(
    client: &reqwest::Client,
    uri_t: &str,
    max_body: u64,
) -> Result<Page, ArchiveFetch> {
    let mut resp = client
        .get(uri_t)
        .header(reqwest::header::ACCEPT, "application/link-format")
        .send()
        .await
        .map_err(|e| request_failure(&e, None))?;
    let http_status = resp.status().as_u16();
    if !resp.status().is_success() {
        if http_status == 404 || http_status == 410 {
            return Ok(Page {
                http_status,
                body: Vec::new(),
            });
        }
        return Err(ArchiveFetch::failed(
            ArchiveStatus::Error,
            Some(http_status),
            format!("HTTP {http_status}"),
        ));
    }
    if let Some(len) = resp.content_length() {
        if len > max_body {
            return Err(ArchiveFetch::failed(
                ArchiveStatus::Error,
                Some(http_status),
                format!("body of {len} bytes is over what max_body leaves ({max_body})"),
            ));
        }
    }
    // Sized from Content-Length when the archive sends one (already checked against the cap), so
    // a 100 MB TimeMap is not copied through a dozen regrowths.
    let mut body = Vec::with_capacity(resp.content_length().unwrap_or(0) as usize);
    loop {
        match resp.chunk().await {
            Ok(Some(chunk)) => {
                if body.len() as u64 + chunk.len() as u64 > max_body {
                    return Err(ArchiveFetch::failed(
                        ArchiveStatus::Error,
                        Some(http_status),
                        format!("body over what max_body leaves ({max_body} bytes)"),
                    ));
                }
                body.extend_from_slice(&chunk);
            }
            Ok(None) => break,
            Err(e) => return Err(request_failure(&e, Some(http_status))),
        }
    }
    Ok(Page { http_status, body })
}

fn request_failure(e: &reqwest::Error, http_status: Option<u16>) -> ArchiveFetch {
    let (status, detail) = if e.is_timeout() {
        (ArchiveStatus::Timeout, "timed out".to_string())
    } else if e.is_connect() {
        (ArchiveStatus::Error, "connection failed".to_string())
    } else if e.is_redirect() {
        (
            ArchiveStatus::Error,
            "redirect loop or bad redirect".to_string(),
        )
    } else if e.is_body() || e.is_decode() {
        (
            ArchiveStatus::Error,
            "connection broke while reading the body".to_string(),
        )
    } else {
        (ArchiveStatus::Error, "request failed".to_string())
    };
    // The error's own chain names the cause (refused, reset…) without any secrets of ours.
    let cause = std::error::Error::source(e).map(|s| s.to_string());
    ArchiveFetch::failed(
        status,
        http_status,
        match cause {
            Some(c) => format!("{detail}: {c}"),
            None => detail,
        },
    )
}

async fn parse_body(body: Vec<u8>, base: String) -> crate::timemap::model::LinkTimeMap {
    let inline = body.len() <= PARSE_INLINE_LIMIT;
    let parse = move || {
        // Invalid UTF-8 is replaced, not fatal: the entries around it are still readable.
        let text = String::from_utf8_lossy(&body);
        parse_link_format(&text, &base)
    };
    if inline {
        parse()
    } else {
        tokio::task::spawn_blocking(parse).await.unwrap_or_default()
    }
}

/// `scheme://host:port` of a URL, for the same-origin rule on page links.
fn origin_of(uri: &str) -> Option<String> {
    let u = url::Url::parse(uri).ok()?;
    Some(u.origin().ascii_serialization())
}
