//! What the routes serve for a cached or fetched aggregate: each format rendered at most once,
//! with its ETag, and the headers that depend only on the content, built once. The cache keeps
//! one beside each entry it holds in memory (as a [`ServedView`]) without looking inside.

use crate::cache::entry::Entry;
use crate::cache::service::ServedView;
use crate::encoding::Coding;
use crate::timemap::aggregate::{Aggregate, Verdict};
use crate::timemap::credit::Credits;
use crate::timemap::datetime::format_rfc1123;
use crate::timemap::serialize::{Page, PageError, Pages, SelfLinks, TimeMapFormat};
use axum::http::{HeaderMap, HeaderValue};
use bytes::Bytes;
use std::sync::{Arc, OnceLock};
use tmproxy_core::timemap::serialize::Skeleton;
// The ETag's hash is pure, and shared with the renderings written to disk (`cache::store::renderings`).
pub use tmproxy_core::content_hash::ContentHash;

mod pieces;
mod renderings;
mod splice;
use crate::encoding::Part;
pub use pieces::Pieces;

/// An aggregate ready to serve: a cache hit then allocates almost nothing.
#[derive(Debug)]
pub struct View {
    pub aggregate: Aggregate,
    links: SelfLinks,
    /// One per format, by [`TimeMapFormat::index`].
    bodies: Box<[OnceLock<Rendered>]>,
    /// Per format, each coding's body ([`Coding::index`]), made the first time a client
    /// accepts it; None when the body is over [`MAX_CODED`] or could not be coded.
    coded: Box<[[OnceLock<Option<Pieces>>; 3]]>,
    headers: OnceLock<HeaderMap>,
    /// Per format, the whole TimeMap's head as it is ([0]) and in each coding ([1 +
    /// `Coding::index`]), made the first time it is answered ([`View::head`]); at most
    /// [`HEADS_KEPT`] of them, counted in `heads_kept`.
    heads: Box<[[OnceLock<HeaderMap>; 4]]>,
    heads_kept: std::sync::atomic::AtomicUsize,
    /// Another spelling's: the view of the stored spelling, whose memento lists (rendered and
    /// coded) this one's bodies are spliced from ([`View::respell`]).
    origin: Option<Arc<View>>,
    /// Per format: as the origin, where its body's memento list lies (or None, rendered
    /// whole); as another spelling, its skeleton, the list to splice in.
    skeletons: Box<[OnceLock<Option<Skeleton>>]>,
    /// As the origin, per format and coding: the memento list coded as a part to join, made
    /// the first time another spelling is asked in that coding.
    list_parts: Box<[[ListPart; 3]]>,
}

/// One format's memento list coded in one coding, made once (None: it could not be).
type ListPart = OnceLock<Option<Arc<Part>>>;

/// Bodies larger than this are sent as they are: coding a 100 MB TimeMap takes seconds the
/// first client would wait for (a huge entry's coded renderings are stored on disk instead: `cache::store::renderings`).
pub const MAX_CODED: usize = 16 * 1024 * 1024;

/// How many whole-TimeMap heads a view keeps ([`View::head`]): what the hot tier's weight of
/// an entry counts (about 2 KiB each).
const HEADS_KEPT: usize = 2;

/// A head's place among a format's: as it is, then each coding.
fn slot_of(coding: Option<Coding>) -> usize {
    coding.map_or(0, |c| 1 + c.index())
}

/// One format's body, its ETag and its `Link` header.
#[derive(Debug, Clone)]
pub struct Rendered {
    pub body: Pieces,
    pub etag: String,
    pub etag_header: Option<HeaderValue>,
    pub link_header: Option<HeaderValue>,
}

/// What every view's links are written with: the public base URL and `[server] page_size`;
/// and whose mementos an aggregator's are.
#[derive(Debug, Clone)]
pub struct ViewContext {
    pub public_url: String,
    pub page_size: usize,
    pub credits: Arc<Credits>,
}

impl ServedView for View {
    type Context = ViewContext;

    fn credits(context: &ViewContext) -> &Credits {
        &context.credits
    }

    fn build(aggregate: Aggregate, context: &ViewContext) -> View {
        let links =
            SelfLinks::new(&context.public_url, &aggregate.uri_r).with_page_size(context.page_size);
        View {
            aggregate,
            links,
            bodies: (0..TimeMapFormat::count())
                .map(|_| OnceLock::new())
                .collect(),
            coded: (0..TimeMapFormat::count())
                .map(|_| Default::default())
                .collect(),
            headers: OnceLock::new(),
            heads: (0..TimeMapFormat::count())
                .map(|_| Default::default())
                .collect(),
            heads_kept: Default::default(),
            origin: None,
            skeletons: (0..TimeMapFormat::count())
                .map(|_| OnceLock::new())
                .collect(),
            list_parts: (0..TimeMapFormat::count())
                .map(|_| Default::default())
                .collect(),
        }
    }

    fn aggregate(&self) -> &Aggregate {
        &self.aggregate
    }

    fn prepare(&self, format: TimeMapFormat) {
        drop(self.rendered(format));
    }

    /// The aggregate's copy of each memento and a rendered body per format (three: the URI-M and
    /// 70–110 bytes of markup each). Calibrated so the weight is at least the live heap an entry holds
    /// once all three formats are rendered (measured with `e2e_bench memory`, see
    /// BENCHMARKS.md), so `hot_capacity` bounds real memory.
    /// Shares the TimeMap (an `Arc`) and copies the archives' outcomes: no merge, no render.
    /// Its bodies, rendered and coded, are its own head and tail around the stored spelling's
    /// memento list, rendered and coded once for every spelling.
    fn respell(this: &Arc<View>, uri_r: &str, context: &ViewContext) -> View {
        let mut aggregate = this.aggregate.clone();
        aggregate.uri_r = uri_r.to_owned();
        let mut view = View::build(aggregate, context);
        view.origin = Some(this.origin.clone().unwrap_or_else(|| this.clone()));
        view
    }

    fn approx_bytes(entry: &Entry) -> usize {
        let listed = entry.contributions.iter().flat_map(|c| &c.mementos);
        let (mementos, uris) = listed.fold((0, 0), |(n, bytes), m| (n + 1, bytes + m.uri_m.len()));
        // 40 more a memento: the coded bodies clients asked for (a coded TimeMap is about a
        // tenth of its text, and usually one coding of one format is asked).
        // 6 KiB for the rest: 2 KiB of its own, 4 KiB the content headers and the heads it
        // keeps ([`HEADS_KEPT`], [`View::head`]).
        3 * uris + 440 * mementos + 6144
    }
}

impl View {
    /// `X-Memento-Count`, `X-Memento-Archives`, `X-Memento-Partial`, `Last-Modified`: fixed for
    /// a given content, so built once per view.
    pub fn content_headers(&self) -> HeaderMap {
        self.headers
            .get_or_init(|| {
                let agg = &self.aggregate;
                // Room for the ~20 headers an answer ends with (cache, content, CORS, request
                // id): a clone keeps the index table's size, so no answer rehashes its map (its
                // entry list, cloned at its length, still grows twice: `http` has no way to
                // reserve entries alone, and a fresh map filled by hand costs as much).
                let mut h = HeaderMap::with_capacity(24);
                h.insert("x-memento-count", HeaderValue::from(agg.timemap.len()));
                if let Some(v) = crate::error::archives_header(agg) {
                    h.insert("x-memento-archives", v);
                }
                if matches!(agg.verdict(), Verdict::Found { partial: true }) {
                    let missing: Vec<&str> = agg.missing().map(|o| o.id.as_str()).collect();
                    if let Ok(v) = HeaderValue::from_str(&missing.join(", ")) {
                        h.insert("x-memento-partial", v);
                    }
                }
                if let Ok(v) = HeaderValue::from_str(&format_rfc1123(agg.fetched_at)) {
                    h.insert(axum::http::header::LAST_MODIFIED, v);
                }
                h
            })
            .clone()
    }

    /// The head of an answer with the whole TimeMap in `format` and `coding` (None: as it is),
    /// made by `make` the first time and cloned for every answer after: a map built whole once
    /// is cloned at its size, where a map filled header by header per answer grew three times
    /// and hashed each name (BENCHMARKS.md, "Small cache hits against nginx"). `make` puts in
    /// every header such an answer carries, those set per answer too (with any value: they are
    /// written over), so that none is added to the clone.
    pub fn head(
        &self,
        format: TimeMapFormat,
        coding: Option<Coding>,
        make: impl FnOnce() -> HeaderMap,
    ) -> HeaderMap {
        use std::sync::atomic::Ordering;
        let kept = &self.heads[format.index()][slot_of(coding)];
        if let Some(head) = kept.get() {
            return head.clone();
        }
        // The hot tier weighs an entry's heads as two: past that, a head is made per answer
        // (a client asking every format in every coding cannot grow an entry unweighed).
        if self.heads_kept.fetch_add(1, Ordering::Relaxed) < HEADS_KEPT {
            return kept.get_or_init(make).clone();
        }
        self.heads_kept.store(HEADS_KEPT, Ordering::Relaxed);
        make()
    }

    pub fn rendered(&self, format: TimeMapFormat) -> Rendered {
        self.bodies[format.index()]
            .get_or_init(|| {
                if let Some(spliced) = self.spliced(format) {
                    return spliced;
                }
                let mut body = format.render(&self.aggregate, &self.links);
                // Cached for the entry's lifetime: give back the growth slack (up to half of it).
                body.shrink_to_fit();
                self.finish(body, format, None)
            })
            .clone()
    }

    /// How this TimeMap splits into pages of `[server] page_size`.
    pub fn pages(&self) -> Pages {
        self.links.pages(self.aggregate.timemap.len())
    }

    /// Page `number` (from 1), or why there is none.
    pub fn page(&self, number: usize) -> Result<Page, PageError> {
        self.pages().page(number)
    }

    /// One page, rendered on demand from the shared TimeMap (not cached: a page costs a
    /// `page_size` slice, see docs/api.md, "Pages"), with its own ETag and `Link` header.
    pub fn rendered_page(&self, format: TimeMapFormat, page: &Page) -> Rendered {
        let body = format.render_page(&self.aggregate, &self.links, page);
        self.finish(body, format, Some(page))
    }

    /// `format`'s rendering if it is made already (a miss renders the format it answers in).
    pub fn rendered_ready(&self, format: TimeMapFormat) -> Option<Rendered> {
        self.bodies[format.index()].get().cloned()
    }

    /// The self links its bodies are written with.
    pub fn links(&self) -> &SelfLinks {
        &self.links
    }

    /// The whole TimeMap's `Link` header in `format` (as [`View::rendered`] has it).
    pub fn link_header(&self, format: TimeMapFormat) -> Option<HeaderValue> {
        link_header(&self.aggregate, &self.links, format, None)
    }

    fn finish(&self, body: Vec<u8>, format: TimeMapFormat, page: Option<&Page>) -> Rendered {
        let etag = ContentHash::of(&body).etag();
        Rendered {
            body: Pieces::one(Bytes::from(body)),
            etag_header: HeaderValue::from_str(&etag).ok(),
            etag,
            link_header: link_header(&self.aggregate, &self.links, format, page),
        }
    }
}

impl View {
    /// `format`'s body in `coding`, coded the first time it is asked for (seconds for a
    /// body near [`MAX_CODED`]: call it off the runtime's threads unless [`View::codes_at_once`]).
    /// None: send the body as it is.
    pub fn coded(&self, format: TimeMapFormat, coding: Coding) -> Option<Pieces> {
        self.coded[format.index()][coding.index()]
            .get_or_init(|| {
                let body = self.rendered(format).body;
                if body.len() > MAX_CODED {
                    return None;
                }
                if let Some(joined) = self.joined(format, coding) {
                    return Some(joined);
                }
                match coding.encode(&body.contiguous()) {
                    Ok(coded) => Some(Pieces::one(Bytes::from(coded))),
                    Err(e) => {
                        tracing::warn!(error = %e, coding = coding.token(), "cannot code a TimeMap body");
                        None
                    }
                }
            })
            .clone()
    }

    /// Whether [`View::coded`] would answer at once: coded already, or another spelling's
    /// body to join around the stored spelling's list coded already (a few hundred bytes coded).
    pub fn codes_at_once(&self, format: TimeMapFormat, coding: Coding) -> bool {
        self.coded[format.index()][coding.index()].get().is_some()
            || self.list_part_ready(format, coding)
    }
}

/// RFC 7089's `Link` on a TimeMap answer, as archives send it (pywb does): the original, our
/// TimeGate, and this TimeMap (or page) as `self` with the span of its mementos. A client that
/// reads the original from a TimeMap URL's headers then finds the URI-R, not the TimeMap itself.
/// A page also names the whole TimeMap; a whole TimeMap of several pages names its first page.
/// Every URI is escaped by [`SelfLinks`]; a value that still could not be a header is left out.
fn link_header(
    agg: &Aggregate,
    links: &SelfLinks,
    format: TimeMapFormat,
    page: Option<&Page>,
) -> Option<HeaderValue> {
    let all = &agg.timemap.mementos;
    let pages = links.pages(all.len());
    let mut value = format!(
        "<{}>; rel=\"original\", <{}>; rel=\"timegate\"",
        links.uri_r,
        links.timegate(),
    );
    let mut add = |url: String, rel: &str, ms: &[crate::timemap::model::Memento]| {
        value.push_str(&format!(
            ", <{url}>; rel=\"{rel}\"; type=\"{}\"",
            format.content_type()
        ));
        if let (Some(first), Some(last)) = (ms.first(), ms.last()) {
            value.push_str(&format!(
                "; from=\"{}\"; until=\"{}\"",
                format_rfc1123(first.datetime),
                format_rfc1123(last.datetime)
            ));
        }
    };
    match page {
        Some(p) => {
            add(
                links.timemap_page(format, p.number),
                "self",
                &all[p.range()],
            );
            add(links.timemap(format), "timemap", all);
        }
        None => {
            add(links.timemap(format), "self", all);
            if pages.paged() {
                add(
                    links.timemap_page(format, 1),
                    "timemap",
                    &all[pages.range(1)],
                );
            }
        }
    }
    HeaderValue::from_str(&value).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::service::ServedView;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A client asking every format in every coding leaves the view with `HEADS_KEPT` heads:
    /// the rest are made per answer.
    #[test]
    fn a_view_keeps_two_heads_and_makes_the_rest_per_answer() {
        let aggregate = Aggregate {
            uri_r: "http://example.com/".into(),
            timemap: Default::default(),
            outcomes: Vec::new(),
            fetched_at: Default::default(),
        };
        let context = ViewContext {
            public_url: "http://proxy.test".into(),
            page_size: 100,
            credits: Default::default(),
        };
        let view = View::build(aggregate, &context);
        let made = AtomicUsize::new(0);
        let make = || {
            made.fetch_add(1, Ordering::SeqCst);
            HeaderMap::new()
        };
        let asked = [
            (TimeMapFormat::LINK, None),
            (TimeMapFormat::LINK, Some(Coding::Br)),
            (TimeMapFormat::JSON, Some(Coding::Gzip)),
        ];
        for round in 1..=3 {
            for (format, coding) in asked {
                drop(view.head(format, coding, make));
            }
            // Two made once, the third once an answer.
            assert_eq!(made.load(Ordering::SeqCst), HEADS_KEPT + round);
        }
    }
}
