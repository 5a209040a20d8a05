//! Revisit hydration: a TimeMap row with mimetype `warc/revisit` (status `-`) takes the mimetype
//! and status of the most recent earlier row with the same digest, looked up in an LRU of 1,000
//! digests (the paper measured a largest distance of 792 rows). One hydrator per TimeMap: digests
//! are not shared across files.

use std::collections::{BTreeMap, HashMap};

/// The LRU size the paper settled on.
pub const LRU_SIZE: usize = 1_000;

/// One CDX row's fields the hydration reads and writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub mime: String,
    pub status: String,
    pub digest: String,
}

impl Row {
    pub fn is_revisit(&self) -> bool {
        self.mime.eq_ignore_ascii_case("warc/revisit")
    }
}

/// What hydration did over a TimeMap.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HydrationReport {
    pub revisits: u64,
    pub hydrated: u64,
    /// Revisits whose digest was not in the LRU (left as they were).
    pub misses: u64,
    /// Distance in rows to the row that hydrated it → count.
    pub distances: BTreeMap<usize, u64>,
}

/// An LRU from digest to (mime, status, row index).
pub struct Hydrator {
    cap: usize,
    tick: u64,
    by_digest: HashMap<String, (String, String, usize, u64)>,
    by_age: BTreeMap<u64, String>,
    row: usize,
    pub report: HydrationReport,
}

impl Hydrator {
    pub fn new(cap: usize) -> Hydrator {
        Hydrator {
            cap: cap.max(1),
            tick: 0,
            by_digest: HashMap::new(),
            by_age: BTreeMap::new(),
            row: 0,
            report: HydrationReport::default(),
        }
    }

    /// Hydrates `row` in place if it is a revisit, and remembers it if it is not.
    pub fn hydrate(&mut self, row: &mut Row) {
        let index = self.row;
        self.row += 1;
        self.tick += 1;
        if row.is_revisit() {
            self.report.revisits += 1;
            match self.by_digest.get_mut(&row.digest) {
                Some((mime, status, at, age)) => {
                    row.mime = mime.clone();
                    row.status = status.clone();
                    *self.report.distances.entry(index - *at).or_default() += 1;
                    self.report.hydrated += 1;
                    // A hit is a use: refresh its age.
                    self.by_age.remove(age);
                    *age = self.tick;
                    self.by_age.insert(self.tick, row.digest.clone());
                }
                None => self.report.misses += 1,
            }
            return;
        }
        if let Some((_, _, _, age)) = self.by_digest.remove(&row.digest) {
            self.by_age.remove(&age);
        }
        self.by_digest.insert(
            row.digest.clone(),
            (row.mime.clone(), row.status.clone(), index, self.tick),
        );
        self.by_age.insert(self.tick, row.digest.clone());
        while self.by_digest.len() > self.cap {
            let Some((_, oldest)) = self.by_age.pop_first() else {
                break;
            };
            self.by_digest.remove(&oldest);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(mime: &str, status: &str, digest: &str) -> Row {
        Row {
            mime: mime.into(),
            status: status.into(),
            digest: digest.into(),
        }
    }

    #[test]
    fn revisit_rows_take_the_last_earlier_row_with_their_digest() {
        // The paper's Figure 10: example.com rows marked warc/revisit with status "-".
        let mut h = Hydrator::new(LRU_SIZE);
        let mut rows = vec![
            row("text/html", "200", "AAA"),
            row("warc/revisit", "-", "AAA"),
            row("text/html", "301", "BBB"),
            row("warc/revisit", "-", "BBB"),
            row("warc/revisit", "-", "AAA"),
            row("warc/revisit", "-", "ZZZ"),
        ];
        for r in &mut rows {
            h.hydrate(r);
        }
        assert_eq!(rows[1], row("text/html", "200", "AAA"));
        assert_eq!(rows[3], row("text/html", "301", "BBB"));
        assert_eq!(rows[4], row("text/html", "200", "AAA"));
        assert_eq!(
            rows[5],
            row("warc/revisit", "-", "ZZZ"),
            "a miss stays as it was"
        );
        assert_eq!(
            (h.report.revisits, h.report.hydrated, h.report.misses),
            (4, 3, 1)
        );
        assert_eq!(h.report.distances.get(&1), Some(&2));
        assert_eq!(h.report.distances.get(&4), Some(&1));
    }

    #[test]
    fn the_lru_forgets_the_least_recently_used_digest() {
        let mut h = Hydrator::new(2);
        for d in ["A", "B", "C"] {
            h.hydrate(&mut row("text/html", "200", d));
        }
        let mut a = row("warc/revisit", "-", "A");
        h.hydrate(&mut a);
        assert_eq!(a.status, "-", "A was evicted by C");
        let mut c = row("warc/revisit", "-", "C");
        h.hydrate(&mut c);
        assert_eq!(c.status, "200");
    }
}
