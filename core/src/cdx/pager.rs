//! Paging a CDX query, pure: the count request (`showNumPages=true`), what its answer says, and
//! the page requests after it (`page=0` … `n-1`, or one unpaged query). Both CDX clients page
//! this way, each with its own HTTP and its own limits: the sampling pipeline's
//! (`tmproxy-sampling`, `cdx.rs`: every page) and the server's `kind = "cdx"` archives
//! (`src/upstream/cdx.rs`: at most `max_pages`).

use super::rows::{parse_num_pages, Dialect, ParseError};

/// The parameter of the count request (after `url=`): the number of pages instead of rows.
pub const COUNT_QUERY: (&str, &str) = ("showNumPages", "true");

/// What a `showNumPages=true` answer says about paging.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Paging {
    /// This many pages (`page=0` … `n-1`), in the dialect that answered so.
    Pages(u64, Dialect),
    /// Nothing at all: no captures (pywb over a plain index with none).
    NoCaptures,
    /// Not a page count (pywb over a plain index sends the captures): ask once, unpaged.
    Unpaged,
}

/// Reads a `showNumPages=true` answer in either dialect: a bare number is IA's, `{"pages": n}`
/// is pywb's, anything else is an unpaged index.
pub fn paging(body: &str) -> Paging {
    let t = body.trim();
    if t.is_empty() {
        Paging::NoCaptures
    } else if let Ok(n) = parse_num_pages(Dialect::Ia, t) {
        Paging::Pages(n, Dialect::Ia)
    } else if let Ok(n) = parse_num_pages(Dialect::Pywb, t) {
        Paging::Pages(n, Dialect::Pywb)
    } else {
        Paging::Unpaged
    }
}

/// Reads a `showNumPages=true` answer from a server of a known dialect: IA must answer a
/// number (anything else is an error); pywb answers `{"pages": n}` over a ZipNum index and the
/// captures themselves over a plain one (unpaged).
pub fn paging_in(dialect: Dialect, body: &str) -> Result<Paging, ParseError> {
    if body.trim().is_empty() {
        return Ok(Paging::NoCaptures);
    }
    match parse_num_pages(dialect, body) {
        Ok(n) => Ok(Paging::Pages(n, dialect)),
        Err(_) if dialect == Dialect::Pywb => Ok(Paging::Unpaged),
        Err(e) => Err(e),
    }
}

/// The page requests a count answer calls for, in order: `page=0` up to the last page or
/// `max_pages`, whichever comes first; one unpaged request for an unpaged index; none when
/// there are no captures.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pager {
    /// The next page number; for an unpaged index, 0 until its one request is made.
    next: u64,
    /// One past the last page asked.
    end: u64,
    /// Pages the answer said there are.
    total: u64,
    unpaged: bool,
}

impl Pager {
    pub fn new(paging: Paging, max_pages: u64) -> Pager {
        let (total, unpaged) = match paging {
            Paging::Pages(n, _) => (n, false),
            Paging::NoCaptures => (0, false),
            // One request, whatever the cap: the index has no pages to cap.
            Paging::Unpaged => (1, true),
        };
        let end = if unpaged { 1 } else { total.min(max_pages) };
        Pager {
            next: 0,
            end,
            total,
            unpaged,
        }
    }

    /// The pages the index has (1 when unpaged, 0 with no captures).
    pub fn total(&self) -> u64 {
        self.total
    }

    /// The pages that will be asked: [`Pager::total`] within the cap.
    pub fn asked(&self) -> u64 {
        self.end
    }
}

impl Iterator for Pager {
    type Item = PageQuery;

    fn next(&mut self) -> Option<PageQuery> {
        if self.next >= self.end {
            return None;
        }
        let page = (!self.unpaged).then_some(self.next);
        self.next += 1;
        Some(PageQuery { page })
    }
}

/// One page request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageQuery {
    /// `page=` (None: the one request of an unpaged index).
    pub page: Option<u64>,
}

impl PageQuery {
    /// Its parameters after `url=`: `output=json`, then `page=n` when paged.
    pub fn params(&self) -> Vec<(&'static str, String)> {
        let mut params = vec![("output", "json".to_string())];
        if let Some(n) = self.page {
            params.push(("page", n.to_string()));
        }
        params
    }
}
