//! RFC 7089 §4.3 paged TimeMaps: which mementos page N holds, and which pages it links. Pure
//! arithmetic on the TimeMap's length.

use std::ops::Range;

/// How a TimeMap of `len` mementos splits into pages of `size`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pages {
    pub len: usize,
    pub size: usize,
}

/// Page `number` (from 1) of a TimeMap, known to exist.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Page {
    pub pages: Pages,
    pub number: usize,
}

/// Why a page cannot be served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PageError {
    /// Pages are numbered from 1.
    Zero,
    /// Past the last page; how many pages there are.
    PastEnd { pages: usize },
}

impl Pages {
    /// A `size` of 0 is taken as 1: a page always holds at least one memento.
    pub fn new(len: usize, size: usize) -> Pages {
        Pages {
            len,
            size: size.max(1),
        }
    }

    /// How many pages there are; an empty TimeMap still has its one (empty) page.
    pub fn count(&self) -> usize {
        self.len.div_ceil(self.size).max(1)
    }

    /// True when the TimeMap needs more than one page (and so links its first).
    pub fn paged(&self) -> bool {
        self.count() > 1
    }

    /// Page `number`, or why not. A number too large for any page (even `usize::MAX`) is past
    /// the end, never an overflow.
    pub fn page(self, number: usize) -> Result<Page, PageError> {
        match number {
            0 => Err(PageError::Zero),
            n if n > self.count() => Err(PageError::PastEnd {
                pages: self.count(),
            }),
            number => Ok(Page {
                pages: self,
                number,
            }),
        }
    }

    /// The indexes of page `number`'s mementos (empty past the end).
    pub fn range(&self, number: usize) -> Range<usize> {
        // number <= count, so (number - 1) * size < len + size: no overflow for a real page.
        let start = number
            .saturating_sub(1)
            .saturating_mul(self.size)
            .min(self.len);
        start..start.saturating_add(self.size).min(self.len)
    }
}

impl Page {
    pub fn range(&self) -> Range<usize> {
        self.pages.range(self.number)
    }

    pub fn prev(&self) -> Option<usize> {
        (self.number > 1).then(|| self.number - 1)
    }

    pub fn next(&self) -> Option<usize> {
        (self.number < self.pages.count()).then(|| self.number + 1)
    }

    /// The other pages it links, in order, each once: the first, its neighbours, the last.
    pub fn linked(&self) -> Vec<usize> {
        let mut out = vec![1, self.pages.count()];
        out.extend(self.prev());
        out.extend(self.next());
        out.sort_unstable();
        out.dedup();
        out.retain(|n| *n != self.number);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_ranges_and_ends() {
        let p = Pages::new(10, 3);
        assert_eq!(p.count(), 4);
        assert!(p.paged());
        assert_eq!(p.range(1), 0..3);
        assert_eq!(p.range(3), 6..9);
        assert_eq!(p.range(4), 9..10, "the last page holds the rest");
        assert_eq!(
            Pages::new(9, 3).count(),
            3,
            "an exact multiple has no empty page"
        );
        assert_eq!(Pages::new(0, 3).count(), 1);
        assert!(!Pages::new(3, 3).paged());
        assert_eq!(
            Pages::new(5, 0).size,
            1,
            "a page holds at least one memento"
        );
    }

    #[test]
    fn zero_and_past_the_end_are_refused_without_overflow() {
        let p = Pages::new(10, 3);
        assert_eq!(p.page(0), Err(PageError::Zero));
        assert_eq!(p.page(5), Err(PageError::PastEnd { pages: 4 }));
        assert_eq!(p.page(usize::MAX), Err(PageError::PastEnd { pages: 4 }));
        assert_eq!(p.range(usize::MAX), 10..10);
        let huge = Pages::new(usize::MAX, usize::MAX);
        assert_eq!(huge.count(), 1);
        assert_eq!(huge.page(1).map(|p| p.range()), Ok(0..usize::MAX));
    }

    #[test]
    fn a_page_links_first_neighbours_and_last_once_each() {
        let p = Pages::new(30, 3);
        let linked = |n| p.page(n).map(|p| p.linked()).unwrap_or_default();
        assert_eq!(linked(1), [2, 10]);
        assert_eq!(linked(2), [1, 3, 10]);
        assert_eq!(linked(5), [1, 4, 6, 10]);
        assert_eq!(linked(10), [1, 9]);
        assert_eq!(Pages::new(3, 3).page(1).map(|p| p.linked()), Ok(vec![]));
        let middle = p.page(5).expect("page 5");
        assert_eq!((middle.prev(), middle.next()), (Some(4), Some(6)));
        let last = p.page(10).expect("page 10");
        assert_eq!((last.prev(), last.next()), (Some(9), None));
    }
}
