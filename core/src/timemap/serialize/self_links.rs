//! The proxy's own URLs for one URI-R, as every format links them: each format's TimeMap, its
//! pages and the TimeGate.

use super::formats::TimeMapFormat;
use super::page::{Page, Pages};
use crate::uri_text::escape_uri;
use serde::ser::{Serialize, SerializeMap, Serializer};

/// The proxy's own URLs for one URI-R. The URI-R is kept escaped ([`escape_uri`]), so every
/// link built from it is a URL that one `<…>` or one header value holds, in every format.
#[derive(Debug, Clone)]
pub struct SelfLinks {
    pub public_url: String,
    pub uri_r: String,
    /// `[server] page_size`: how many mementos a page holds, so which pages exist.
    pub page_size: usize,
}

impl SelfLinks {
    pub fn new(public_url: &str, uri_r: &str) -> SelfLinks {
        SelfLinks {
            public_url: escape_uri(public_url.trim_end_matches('/')).into_owned(),
            uri_r: escape_uri(uri_r).into_owned(),
            page_size: usize::MAX,
        }
    }

    /// The same links, for a TimeMap split into pages of `page_size` (one page without it).
    pub fn with_page_size(mut self, page_size: usize) -> SelfLinks {
        self.page_size = page_size.max(1);
        self
    }

    /// How a TimeMap of `len` mementos splits into this server's pages.
    pub fn pages(&self, len: usize) -> Pages {
        Pages::new(len, self.page_size)
    }

    /// Page `number` of the TimeMap in `format`: `/timemap/{format}/{number}/{URI-R}`.
    pub fn timemap_page(&self, format: TimeMapFormat, number: usize) -> String {
        format!(
            "{}/timemap/{}/{number}/{}",
            self.public_url,
            format.segment(),
            self.uri_r
        )
    }

    /// The whole TimeMap's URL (`page` None) or a page's.
    pub fn timemap_or_page(&self, format: TimeMapFormat, page: Option<&Page>) -> String {
        match page {
            Some(p) => self.timemap_page(format, p.number),
            None => self.timemap(format),
        }
    }

    pub fn timemap(&self, format: TimeMapFormat) -> String {
        format!(
            "{}/timemap/{}/{}",
            self.public_url,
            format.segment(),
            self.uri_r
        )
    }

    pub fn timegate(&self) -> String {
        format!("{}/timegate/{}", self.public_url, self.uri_r)
    }
}

/// Every format's URL of the TimeMap, keyed by [`TimeMapFormat::json_key`] in the order of
/// [`TimeMapFormat::all`].
pub(super) struct Uris<'a>(pub(super) &'a SelfLinks);

impl Serialize for Uris<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(TimeMapFormat::count()))?;
        for format in TimeMapFormat::all() {
            map.serialize_entry(format.json_key(), &self.0.timemap(format))?;
        }
        map.end()
    }
}

/// The `pages` object of a JSON or CDXJ answer: a page's first, prev, next and last pages; the
/// whole TimeMap's first and last (no neighbours).
#[derive(Debug, serde::Serialize)]
pub(super) struct PageLinks {
    first: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    prev: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    next: Option<String>,
    last: String,
}

impl PageLinks {
    /// A page's links, or the whole TimeMap's (`page` None) when it has more than one page.
    pub(super) fn of(
        links: &SelfLinks,
        format: TimeMapFormat,
        pages: Pages,
        page: Option<&Page>,
    ) -> Option<PageLinks> {
        if page.is_none() && !pages.paged() {
            return None;
        }
        let url = |n: usize| links.timemap_page(format, n);
        Some(PageLinks {
            first: url(1),
            prev: page.and_then(Page::prev).map(url),
            next: page.and_then(Page::next).map(url),
            last: url(pages.count()),
        })
    }
}
