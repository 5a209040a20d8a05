//! Asking one archive for its TimeMap: one request per page, a body cap, no parse of error bodies.

use super::budget::{Budget, Held, HEAVY_BODY};
use super::clients::Clients;
use super::failure::{classify, classify_send, FailureKind, Stage};
use super::guard::HopRules;
use super::registry::Archive;
use super::resolve::{GuardedResolver, HostLookup};
use super::transport::{self, ArchiveClient, BuildError, Response, SendFailure};
use super::turns::{Turn, Turns};
use crate::config::RedirectHost;
use crate::timemap::answer::{ArchiveAnswer, ArchiveStatus};
use crate::timemap::model::{LinkMemento, MementoDatetime};
use crate::timemap::parse::parse_link_format;
use crate::uri_r::clip;
use http::header::HeaderValue;
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;
use tmproxy_core::failure::{of_status, StatusClass};
use tmproxy_core::retry_after::RetryAfter;
use tmproxy_core::timemap::incremental::Since;
use tmproxy_core::timemap::refresh::{Listing, Refresh};
use url::Url;

/// Bodies larger than this are parsed off the async workers, so one huge TimeMap does not stall
/// every other request on the same thread.
pub(super) const PARSE_INLINE_LIMIT: usize = 1 << 20;

use http::header::{HeaderName, ACCEPT, ETAG, IF_MODIFIED_SINCE, IF_NONE_MATCH, LAST_MODIFIED};

/// What a TimeMap request accepts.
const ACCEPT_LINK_FORMAT: &str = "application/link-format";

/// Redirects followed for one page (pywb answers with one 307).
const MAX_REDIRECTS: usize = 10;

/// A body buffer starts this big and doubles, each growth charged to the budget first.
const FIRST_CAPACITY: usize = 64 * 1024;

/// Limits that apply to every archive.
#[derive(Debug, Clone)]
pub struct FetchLimits {
    pub max_body: u64,
    pub max_pages: usize,
}

/// What one archive gave us: its answer and the mementos it listed (in its order, with its
/// duplicates: the fan-out makes them a [`crate::timemap::answer::Contribution`]), plus what
/// the fan-out needs to know about the asking.
#[derive(Debug, Clone)]
pub struct ArchiveFetch {
    pub answer: ArchiveAnswer,
    pub mementos: Vec<LinkMemento>,
    /// The bytes this answer holds against `max_buffered`, given back when the last clone of
    /// this fetch is dropped (once the fan-out has made it a contribution).
    pub held: Option<Arc<Held>>,
    /// Why it failed, when it did: the one record of it (the answer's status follows from it,
    /// [`FailureKind::status`]). None when the archive answered (ok, empty, 404).
    pub failure: Option<FailureKind>,
    /// What it asked with a 429 or 503: wait before asking again.
    pub retry_after: Option<RetryAfter>,
    /// How the listing was read and what it cost. Boxed: most answers are failures passed
    /// around by value.
    pub read: Box<Read>,
}

/// How an archive's listing was read.
#[derive(Debug, Clone, Default)]
pub struct Read {
    /// In full, incrementally, not modified, and what the next ask may skip.
    pub listing: Listing,
    /// Body bytes read from the archive for this answer, over every page and every try.
    pub bytes: u64,
}

impl ArchiveFetch {
    /// A failure of `kind`; the kind decides the status the answer reports.
    pub fn failed(
        kind: FailureKind,
        http_status: Option<u16>,
        detail: impl Into<String>,
    ) -> ArchiveFetch {
        let mut fetch = ArchiveFetch::answered(ArchiveAnswer::failed(
            kind.status(),
            http_status,
            Some(detail.into()),
        ));
        fetch.failure = Some(kind);
        fetch
    }

    /// Not reached at all: its name did not resolve or no connection could be made. When every
    /// archive of a fan-out fails so, the network is down, not the archives.
    pub fn unreached(&self) -> bool {
        matches!(self.failure, Some(FailureKind::Dns | FailureKind::Connect))
            && self.answer.fallback.is_none()
    }

    /// Failed on our own memory budget, not the archive's fault: no step towards dormancy.
    pub fn over_budget(&self) -> bool {
        self.failure == Some(FailureKind::Budget)
    }

    /// Timed out in our own queue (its turn did not come in time, or waiting cut its time
    /// short): not the archive's fault either.
    pub fn queued(&self) -> bool {
        self.failure == Some(FailureKind::Queued)
    }

    /// The archive refused the request itself with a 4xx (400, 414, 451, 429…; a 404 or 410 is
    /// an answer, not a failure). What is asked comes from a client's URI-R, so any client can
    /// provoke one: it says nothing about whether the archive is up.
    pub fn refused_by_archive(&self) -> bool {
        self.failure.is_some_and(FailureKind::refused_request)
    }

    /// Failed because the archive sent us where its hop rules do not allow.
    fn refused_hop(&self) -> bool {
        self.failure == Some(FailureKind::RefusedRedirect)
    }

    /// Why this answer is a failure, or None when the archive answered (ok, empty, 404).
    pub fn failure_kind(&self) -> Option<FailureKind> {
        self.failure
    }

    /// Settles a listing read whole with `status`, judged from what its pages held: a
    /// malformed one is a failure of that kind, every other is an answer.
    pub(super) fn settle_listing(&mut self, status: ArchiveStatus) {
        self.answer.status = status;
        self.failure = (status == ArchiveStatus::Malformed).then_some(FailureKind::Malformed);
    }

    pub(super) fn answered(answer: ArchiveAnswer) -> ArchiveFetch {
        ArchiveFetch {
            answer,
            mementos: Vec::new(),
            held: None,
            failure: None,
            retry_after: None,
            read: Box::default(),
        }
    }

    /// A request that did not get its turn in time.
    pub(super) fn late(late: super::turns::Late) -> ArchiveFetch {
        ArchiveFetch::failed(FailureKind::Queued, None, late.0)
    }
}

/// How one archive is reached: its own clients (and resolver), its hop rules and its turns.
pub struct ArchiveLink {
    /// [`Clients::get`] is the one for the calling thread.
    pub clients: Clients,
    pub hops: HopRules,
    /// Where its mementos may be fetched and redirect to (`/memento/proxy`): under its
    /// [`Archive::memento_prefixes`] or on its `redirect_hosts`.
    pub mementos: HopRules,
    /// Every request to it takes one ([`ArchiveLink::limited`]).
    pub turns: Turns,
}

impl ArchiveLink {
    /// The link to an archive configured on `prefixes` (its timemap and timegate URLs), whose
    /// mementos live under `memento_prefixes`.
    pub fn new(
        prefixes: &[Url],
        memento_prefixes: &[Url],
        redirect_hosts: &[RedirectHost],
        connect_timeout: Duration,
        user_agent: &str,
        via: &HeaderValue,
        lookup: HostLookup,
    ) -> Result<ArchiveLink, BuildError> {
        let hops = HopRules::new(prefixes, redirect_hosts);
        let resolver = GuardedResolver::new(lookup, hops.own_names());
        Ok(ArchiveLink {
            clients: Clients::new(connect_timeout, user_agent, via, resolver)?,
            hops,
            mementos: HopRules::under(memento_prefixes, redirect_hosts),
            turns: Turns::new(crate::config::DEFAULT_MAX_CONCURRENCY, 0.0),
        })
    }

    /// This link with the archive's own `max_concurrency` and `rate`.
    pub fn limited(self, turns: Turns) -> ArchiveLink {
        ArchiveLink { turns, ..self }
    }
}

/// Fetches an archive's TimeMap for `uri_r`, following `rel="timemap"` pages up to
/// `max_pages`, each visited once, and only where the archive's hop rules allow. The bodies are
/// charged to `budget`. The caller bounds it in time.
///
/// With `since` (an incremental refresh), a paged TimeMap is read from the page that held the
/// newest stored memento on, skipping pages that end before it, and a single page with
/// validators is asked conditionally (a 304 is [`Refresh::NotModified`]). Whether what an
/// incremental read found can be trusted is the caller's to judge ([`Since::trusts`]).
pub async fn fetch_archive(
    link: &ArchiveLink,
    turn: &Turn<'_>,
    archive: &Archive,
    uri_r: &str,
    limits: &FetchLimits,
    budget: &Arc<Budget>,
    since: Option<&Since>,
) -> ArchiveFetch {
    let first = match archive.timemap_for(uri_r) {
        Ok(uri_t) => uri_t,
        // Never sent: the URL would reach outside what this archive is configured as.
        Err(why) => return ArchiveFetch::failed(FailureKind::RefusedRedirect, None, why),
    };
    // Read incrementally from the page that held the newest stored memento, or (one page)
    // asked conditionally.
    let paged = since.filter(|s| s.page.is_some());
    let conditional = since
        .filter(|_| paged.is_none())
        .map(conditions)
        .unwrap_or_default();
    // A stored page's URL is read back from the store: parsed and checked as any other.
    let start = match paged.and_then(|s| s.page.as_deref()) {
        None => first,
        Some(page) => match parse_url(page) {
            Ok(url) => url,
            Err(why) => return ArchiveFetch::failed(FailureKind::RefusedRedirect, None, why),
        },
    };
    let mut queue = vec![start];
    let mut seen: HashSet<Url> = HashSet::new();
    let mut result =
        ArchiveFetch::answered(ArchiveAnswer::failed(ArchiveStatus::Empty, None, None));
    // What every page read so far still holds against the budget (its parsed mementos).
    let mut held = budget.hold();
    let mut notes: Vec<String> = Vec::new();
    // Whether any page held link-format links, and whether any held non-blank text that was not.
    let mut saw_links = false;
    let mut saw_garbage = false;
    // Body bytes read so far over all pages.
    let mut body_bytes: u64 = 0;
    // The page holding the newest memento so far, and that memento's datetime.
    let mut newest: Option<(MementoDatetime, String)> = None;

    while let Some(uri_t) = queue.pop() {
        if !seen.insert(uri_t.clone()) {
            continue;
        }
        if result.answer.pages >= limits.max_pages {
            notes.push(format!(
                "stopped after {} pages (max_pages)",
                limits.max_pages
            ));
            break;
        }
        // max_body bounds the archive's whole answer, every page together, so one archive's
        // share of a fan-out's memory is max_body however it pages.
        let cap = limits.max_body.saturating_sub(body_bytes);
        let asking: &[_] = if result.answer.pages == 0 {
            &conditional
        } else {
            &[]
        };
        let accept = ACCEPT_LINK_FORMAT;
        let page = match fetch_page(link, turn, &uri_t, cap, budget, accept, asking).await {
            Ok(page) => page,
            // A refused hop is the archive sending us where it must not: nothing it gave counts.
            Err(failure) if result.answer.pages == 0 || failure.refused_hop() => return failure,
            Err(failure) => {
                // A later page failed: keep what the earlier pages gave, and say so.
                notes.push(format!(
                    "page {} failed: {}",
                    result.answer.pages + 1,
                    failure.answer.detail.unwrap_or_default()
                ));
                break;
            }
        };
        result.answer.pages += 1;
        body_bytes += page.body.len() as u64;
        result.answer.http_status = Some(page.http_status);
        if page.http_status == 304 {
            return not_modified(result.answer.pages);
        }
        if result.answer.pages == 1 {
            result.read.listing.etag = page.etag.clone();
            result.read.listing.last_modified = page.last_modified.clone();
        }
        if page.http_status == 404 || page.http_status == 410 {
            if result.answer.pages == 1 {
                // The archive holds nothing for this URI-R: an answer, not a failure.
                let mut answer =
                    ArchiveAnswer::failed(ArchiveStatus::NotFound, Some(page.http_status), None);
                answer.pages = 1;
                let mut fetch = ArchiveFetch::answered(answer);
                fetch.read.bytes = body_bytes;
                // The page that held the newest memento is gone: paged anew, not "nothing".
                if paged.is_some() {
                    fetch.read.listing.refresh = Refresh::Incremental;
                }
                return fetch;
            }
            notes.push(format!(
                "page {} answered {}",
                result.answer.pages, page.http_status
            ));
            continue;
        }
        let blank = page.body.iter().all(u8::is_ascii_whitespace);
        let (parsed, page_held) = parse_body(page.body, page.held, uri_t.as_str().to_owned()).await;
        held.absorb(page_held);
        let has_links = parsed.original.is_some()
            || parsed.self_uri.is_some()
            || !parsed.mementos.is_empty()
            || !parsed.pages.is_empty();
        saw_links |= has_links;
        saw_garbage |= !blank && !has_links;
        result.answer.skipped += parsed.skipped;
        if let Some(top) = parsed.mementos.iter().map(|m| m.datetime).max() {
            if newest.as_ref().is_none_or(|(at, _)| top > *at) {
                newest = Some((top, uri_t.as_str().to_owned()));
            }
        }
        result.mementos.extend(parsed.mementos);
        for next_page in parsed.pages {
            // Read incrementally, a page that ends before the newest stored memento holds
            // nothing new.
            if paged.is_some_and(|s| next_page.until.is_some_and(|until| until < s.newest)) {
                continue;
            }
            let checked = parse_url(&next_page.uri).and_then(|u| link.hops.check(&u).map(|()| u));
            match checked {
                Ok(url) if seen.contains(&url) => {}
                Ok(url) => queue.push(url),
                Err(why) => notes.push(format!("ignored a page link: {why}")),
            }
        }
    }

    if result.answer.skipped > 0 {
        notes.push(format!(
            "skipped {} unreadable entries",
            result.answer.skipped
        ));
    }
    result.settle_listing(if !result.mementos.is_empty() {
        ArchiveStatus::Ok
    } else if result.answer.skipped > 0 || (saw_garbage && !saw_links) {
        // Entries were there but none could be read, or the body was not link format at all
        // (an HTML page with a 200): we do not know what this archive holds.
        ArchiveStatus::Malformed
    } else {
        ArchiveStatus::Empty
    });
    result.answer.detail = (!notes.is_empty()).then(|| notes.join("; "));
    result.held = Some(Arc::new(held));
    result.read.bytes = body_bytes;
    let many_pages = result.answer.pages > 1 || paged.is_some();
    if many_pages {
        // Validators of one page of many say nothing of the others.
        result.read.listing.etag = None;
        result.read.listing.last_modified = None;
        result.read.listing.newest_page = newest.map(|(_, page)| page);
    }
    result.read.listing.refresh = match paged {
        Some(_) => Refresh::Incremental,
        None => Refresh::Full,
    };
    result
}

/// `text` as a URL, or why it is refused: what an archive or the store hands us is never sent
/// unparsed.
pub(super) fn parse_url(text: &str) -> Result<Url, String> {
    Url::parse(text).map_err(|_| format!("{} refused: not a URL", clip(text)))
}

/// A conditional ask's headers, from the validators an archive sent with the stored listing.
fn conditions(since: &Since) -> Vec<(HeaderName, String)> {
    let etag = since.etag.iter().map(|v| (IF_NONE_MATCH, v.clone()));
    let date = since
        .last_modified
        .iter()
        .map(|v| (IF_MODIFIED_SINCE, v.clone()));
    etag.chain(date).collect()
}

/// A 304 to a conditional ask: the stored listing stands.
fn not_modified(pages: usize) -> ArchiveFetch {
    let why = "not modified: the stored listing stands".to_string();
    let mut answer = ArchiveAnswer::failed(ArchiveStatus::Ok, Some(304), Some(why));
    answer.pages = pages;
    let mut fetch = ArchiveFetch::answered(answer);
    fetch.read.listing.refresh = Refresh::NotModified;
    fetch
}

pub(super) struct Page {
    pub(super) http_status: u16,
    pub(super) body: Vec<u8>,
    /// The body buffer's charge against the budget.
    pub(super) held: Held,
    /// Its validators, when it sent usable ones ([`validator`]).
    pub(super) etag: Option<String>,
    pub(super) last_modified: Option<String>,
}

/// The longest validator kept: an archive's `ETag` is a hash or a version, and what is kept
/// is stored with the entry.
const MAX_VALIDATOR: usize = 256;

/// A validator header as sent, when it is short visible ASCII; else none (asked in full).
fn validator(resp: &Response, name: HeaderName) -> Option<String> {
    let value = resp.headers().get(name)?.to_str().ok()?.trim();
    let usable = !value.is_empty() && value.len() <= MAX_VALIDATOR;
    usable.then(|| value.to_string())
}

/// One GET, following redirects hop by hop where `hops` allows, its body read up to the cap and
/// charged to `budget` as it grows. Non-2xx bodies are never read: an HTML 404 page is not a
/// TimeMap (nor a CDX answer).
///
/// With `conditions` (`If-None-Match`, `If-Modified-Since`), a 304 to them is a page of its
/// own, without a body.
pub(super) async fn fetch_page(
    link: &ArchiveLink,
    turn: &Turn<'_>,
    uri_t: &Url,
    max_body: u64,
    budget: &Arc<Budget>,
    accept: &'static str,
    conditions: &[(HeaderName, String)],
) -> Result<Page, ArchiveFetch> {
    let mut headers = vec![(ACCEPT, accept)];
    headers.extend(
        conditions
            .iter()
            .map(|(name, value)| (name.clone(), value.as_str())),
    );
    let get = http::Method::GET;
    let resp = send_within(
        link.clients.get(),
        &link.hops,
        turn,
        get,
        uri_t.clone(),
        &headers,
    )
    .await?;
    let http_status = resp.status().as_u16();
    let empty = |http_status| Page {
        http_status,
        body: Vec::new(),
        held: budget.hold(),
        etag: None,
        last_modified: None,
    };
    if http_status == 304 && !conditions.is_empty() {
        return Ok(empty(http_status));
    }
    match of_status(http_status) {
        StatusClass::Success => {}
        StatusClass::NotFound | StatusClass::Gone => return Ok(empty(http_status)),
        StatusClass::Failed(kind) => {
            let mut failed =
                ArchiveFetch::failed(kind, Some(http_status), format!("HTTP {http_status}"));
            failed.retry_after = retry_after_of(&resp);
            return Err(failed);
        }
    }
    let etag = validator(&resp, ETAG);
    let last_modified = validator(&resp, LAST_MODIFIED);
    let (body, held) = read_capped(resp, max_body, "what max_body leaves", budget).await?;
    Ok(Page {
        http_status,
        body,
        held,
        etag,
        last_modified,
    })
}

/// What an answer's `Retry-After` asks, on a 429 or a 503.
pub(crate) fn retry_after_of(resp: &Response) -> Option<RetryAfter> {
    let value = resp.headers().get(http::header::RETRY_AFTER);
    RetryAfter::of(resp.status().as_u16(), value.and_then(|v| v.to_str().ok()))
}

/// A request of `target` with `method` and these `headers`, following redirects hop by hop,
/// each hop (and `target` itself) only where the hop rules `hops` allow: the answer that is
/// not a redirect, unread. A failure says why (refused hop, redirect loop, the request's own
/// error, no turn in time). Each hop is a request of `turn`, sent in its pace slot.
pub(crate) async fn send_within(
    client: &ArchiveClient,
    hops: &HopRules,
    turn: &Turn<'_>,
    method: http::Method,
    target: Url,
    headers: &[(HeaderName, &str)],
) -> Result<Response, ArchiveFetch> {
    let refused = |http_status: Option<u16>, why: String| {
        ArchiveFetch::failed(FailureKind::RefusedRedirect, http_status, why)
    };
    let mut url = target;
    // The first URL too: a prefix without a trailing slash could let a URI-R change the host.
    hops.check(&url).map_err(|why| refused(None, why))?;
    let mut redirects = 0;
    loop {
        turn.pace().await.map_err(ArchiveFetch::late)?;
        let resp = client
            .send(method.clone(), &url, headers)
            .await
            .map_err(|e| send_failure(&e))?;
        let code = resp.status().as_u16();
        let location = resp.headers().get(http::header::LOCATION);
        if !resp.status().is_redirection() || code == 304 || location.is_none() {
            return Ok(resp);
        }
        redirects += 1;
        if redirects > MAX_REDIRECTS {
            return Err(ArchiveFetch::failed(
                FailureKind::Redirects,
                Some(code),
                format!("more than {MAX_REDIRECTS} redirects (a redirect loop?)"),
            ));
        }
        let next = location
            .and_then(|l| l.to_str().ok())
            .and_then(|l| url.join(l).ok())
            .ok_or_else(|| {
                ArchiveFetch::failed(
                    FailureKind::Redirects,
                    Some(code),
                    "a redirect with an unreadable Location",
                )
            })?;
        hops.check(&next)
            .map_err(|why| refused(Some(code), format!("redirect to {why}")))?;
        url = next;
    }
}

/// The body of `resp`, whole, or a failure once it is over `max_body` bytes (announced or
/// sent; `limit` names the cap in the reason): never a truncated body. The buffer doubles as bytes arrive, never past the announced
/// length or the cap, and each growth is charged to `budget` first: an archive that announces a
/// big body and trickles it holds only about twice what it has sent, here and against the budget.
pub(crate) async fn read_capped(
    mut resp: Response,
    max_body: u64,
    limit: &str,
    budget: &Arc<Budget>,
) -> Result<(Vec<u8>, Held), ArchiveFetch> {
    let http_status = resp.status().as_u16();
    let announced = transport::content_length(&resp);
    if let Some(len) = announced {
        if len > max_body {
            return Err(ArchiveFetch::failed(
                FailureKind::TooLarge,
                Some(http_status),
                format!("body of {len} bytes is over {limit} ({max_body})"),
            ));
        }
    }
    let ceiling = announced.unwrap_or(max_body).min(max_body) as usize;
    // A heavy body announced waits before any of it is read; one not announced, once it is.
    budget.heavy_turn(announced.unwrap_or(0)).await;
    let mut waited = announced.is_some_and(|len| len > HEAVY_BODY);
    let mut body: Vec<u8> = Vec::new();
    let mut held = budget.hold();
    loop {
        match transport::chunk(&mut resp).await {
            Ok(Some(chunk)) => {
                let need = body.len() + chunk.len();
                if !waited && need as u64 > HEAVY_BODY {
                    budget.heavy_turn(need as u64).await;
                    waited = true;
                }
                if need as u64 > max_body {
                    return Err(ArchiveFetch::failed(
                        FailureKind::TooLarge,
                        Some(http_status),
                        format!("body over {limit} ({max_body} bytes)"),
                    ));
                }
                if need > body.capacity() {
                    let target = (body.capacity() * 2)
                        .max(FIRST_CAPACITY)
                        .min(ceiling)
                        .max(need);
                    let more = (target as u64).saturating_sub(held.bytes());
                    if let Err(over) = held.grow(more) {
                        return Err(ArchiveFetch::failed(
                            FailureKind::Budget,
                            Some(http_status),
                            over.to_string(),
                        ));
                    }
                    body.reserve_exact(target - body.len());
                }
                body.extend_from_slice(&chunk);
            }
            Ok(None) => return Ok((body, held)),
            Err(e) => {
                let (kind, detail) = classify(&e, Stage::Body);
                return Err(ArchiveFetch::failed(kind, Some(http_status), detail));
            }
        }
    }
}

/// A request that got no answer: its kind and root cause (a name our resolver refused is a
/// refused hop, made before any connection).
fn send_failure(e: &SendFailure) -> ArchiveFetch {
    let (kind, detail) = classify_send(e);
    ArchiveFetch::failed(kind, None, detail)
}

/// An archive's body as text. Invalid UTF-8 is replaced, not fatal: the entries around it are
/// still readable. The strict check comes first because it is several times faster than the
/// lossy one on the valid text archives nearly always send.
pub(super) fn body_text(body: &[u8]) -> std::borrow::Cow<'_, str> {
    match std::str::from_utf8(body) {
        Ok(text) => std::borrow::Cow::Borrowed(text),
        Err(_) => String::from_utf8_lossy(body),
    }
}

/// Parses a body, off the async workers when it is large. The body's charge travels with it and
/// comes back with the result, so a parse that outlives a cancelled fetch keeps its bytes
/// counted until it has freed them.
async fn parse_body(
    body: Vec<u8>,
    held: Held,
    base: String,
) -> (crate::timemap::model::LinkTimeMap, Held) {
    let inline = body.len() <= PARSE_INLINE_LIMIT;
    let parse = move || {
        let text = body_text(&body);
        let parsed = parse_link_format(&text, &base);
        drop(text);
        drop(body);
        (parsed, held)
    };
    if inline {
        parse()
    } else {
        match tokio::task::spawn_blocking(parse).await {
            Ok(done) => done,
            // The parse panicked: its charge was given back when it unwound.
            Err(_) => (Default::default(), Budget::new(0).hold()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::body_text;
    use std::borrow::Cow;

    #[test]
    fn a_body_is_read_as_text_whole_and_invalid_utf8_is_replaced_not_fatal() {
        let valid = "<http://a.example/web/1/x>; rel=\"memento\", ä".as_bytes();
        assert!(matches!(body_text(valid), Cow::Borrowed(t) if t.as_bytes() == valid));
        let mut broken = b"<http://a.example/1>; rel=\"memento\",\n".to_vec();
        broken.extend([0xff, 0xfe]);
        broken.extend(b"\n<http://a.example/2>; rel=\"memento\"");
        let text = body_text(&broken);
        assert!(text.starts_with("<http://a.example/1>"), "{text}");
        assert!(text.contains("\u{fffd}"), "{text}");
        assert!(
            text.ends_with("<http://a.example/2>; rel=\"memento\""),
            "{text}"
        );
    }
}
