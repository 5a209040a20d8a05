//! The process-wide byte budget for archive bodies (`[upstream] max_buffered`): every fan-out
//! together holds at most this many bytes read from archives.
//!
//! A body charges its buffer's capacity as it grows, and the charge is kept until the fetch's
//! parsed result is dropped after the merge, since the parsed mementos stand for the body. When a
//! body would go over what is left, that archive fails at once ("memory budget") rather than
//! waiting: waiting would hold what it already has while others wait on it. `/memento/proxy`
//! charges a share of half the budget ([`Budget::share`]), so clients that stop reading its
//! answers can never leave the fan-outs without room.

use crate::cache::store::renderings::RenderingRuns;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

/// A body past this many bytes waits while a huge entry's renderings are written
/// ([`Budget::heavy_turn`]): a TimeMap this big parses and renders to several times its bytes.
pub const HEAVY_BODY: u64 = 16 << 20;

/// The budget and its gauges. Share it behind an `Arc`.
#[derive(Debug)]
pub struct Budget {
    limit: u64,
    used: AtomicU64,
    high_water: AtomicU64,
    /// A share's whole budget: every charge to the share is a charge to it too.
    parent: Option<Arc<Budget>>,
    /// The huge entries' rendering runs a heavy body waits for (none without a renderings tier).
    runs: OnceLock<Arc<RenderingRuns>>,
}

/// Over budget: what was asked, and the limit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OverBudget {
    pub wanted: u64,
    pub limit: u64,
}

impl std::fmt::Display for OverBudget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "over the memory budget for archive bodies ({} more bytes wanted, max_buffered {} for every fan-out together)",
            self.wanted, self.limit
        )
    }
}

impl Budget {
    pub fn new(limit: u64) -> Arc<Budget> {
        Arc::new(Budget {
            limit,
            used: AtomicU64::new(0),
            high_water: AtomicU64::new(0),
            parent: None,
            runs: OnceLock::new(),
        })
    }

    /// A share of this budget holding at most `limit` of it: what is charged to the share is
    /// charged here too, so one kind of use (answers streamed to slow clients) can never take
    /// the whole budget from the others (fan-outs).
    pub fn share(self: &Arc<Self>, limit: u64) -> Arc<Budget> {
        Arc::new(Budget {
            limit: limit.min(self.limit),
            used: AtomicU64::new(0),
            high_water: AtomicU64::new(0),
            parent: Some(Arc::clone(self)),
            runs: OnceLock::new(),
        })
    }

    /// Makes heavy bodies (and those of its shares) wait for `runs` ([`Budget::heavy_turn`]).
    pub fn yield_to(&self, runs: Arc<RenderingRuns>) {
        let _ = self.runs.set(runs);
    }

    /// Waits, when `bytes` of a body are past [`HEAVY_BODY`], until no huge entry's renderings
    /// are being written: each holds a whole huge TimeMap in memory, and this body would
    /// become another beside it. At once otherwise. The fetch's deadline bounds the wait.
    pub async fn heavy_turn(&self, bytes: u64) {
        if bytes <= HEAVY_BODY {
            return;
        }
        let mut budget = Some(self);
        while let Some(b) = budget {
            if let Some(runs) = b.runs.get() {
                runs.none_under_way().await;
            }
            budget = b.parent.as_deref();
        }
    }

    /// An empty charge against this budget, to grow with [`Held::grow`].
    pub fn hold(self: &Arc<Self>) -> Held {
        Held {
            budget: Arc::clone(self),
            bytes: 0,
        }
    }

    /// Bytes charged now.
    pub fn buffered(&self) -> u64 {
        self.used.load(Ordering::Acquire)
    }

    /// The most bytes ever charged at once.
    pub fn high_water(&self) -> u64 {
        self.high_water.load(Ordering::Acquire)
    }

    pub fn limit(&self) -> u64 {
        self.limit
    }

    fn take(&self, n: u64) -> Result<(), OverBudget> {
        self.take_own(n)?;
        if let Some(parent) = &self.parent {
            if let Err(over) = parent.take(n) {
                self.used.fetch_sub(n, Ordering::AcqRel);
                return Err(over);
            }
        }
        Ok(())
    }

    fn give_back(&self, n: u64) {
        self.used.fetch_sub(n, Ordering::AcqRel);
        if let Some(parent) = &self.parent {
            parent.give_back(n);
        }
    }

    fn take_own(&self, n: u64) -> Result<(), OverBudget> {
        let over = || OverBudget {
            wanted: n,
            limit: self.limit,
        };
        let mut cur = self.used.load(Ordering::Acquire);
        loop {
            let next = cur
                .checked_add(n)
                .filter(|&t| t <= self.limit)
                .ok_or_else(over)?;
            match self
                .used
                .compare_exchange_weak(cur, next, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => {
                    self.high_water.fetch_max(next, Ordering::AcqRel);
                    return Ok(());
                }
                Err(actual) => cur = actual,
            }
        }
    }
}

/// Bytes charged for one archive's answer; given back when dropped.
#[derive(Debug)]
pub struct Held {
    budget: Arc<Budget>,
    bytes: u64,
}

impl Held {
    /// Charges `n` more bytes, or refuses (charging nothing) when that would pass the limit.
    pub fn grow(&mut self, n: u64) -> Result<(), OverBudget> {
        self.budget.take(n)?;
        self.bytes += n;
        Ok(())
    }

    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Takes over `other`'s charge (same budget): one archive's pages become one charge.
    pub fn absorb(&mut self, mut other: Held) {
        debug_assert!(Arc::ptr_eq(&self.budget, &other.budget) || other.bytes == 0);
        self.bytes += std::mem::take(&mut other.bytes);
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.budget.give_back(self.bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charges_up_to_the_limit_refuses_past_it_and_gives_back_on_drop() {
        let b = Budget::new(100);
        let mut one = b.hold();
        let mut two = b.hold();
        one.grow(60).expect("fits");
        let err = two.grow(41).expect_err("over");
        assert_eq!(err.wanted, 41);
        assert!(err.to_string().contains("memory budget"));
        two.grow(40).expect("fits exactly");
        assert_eq!((b.buffered(), b.high_water()), (100, 100));
        drop(one);
        assert_eq!(b.buffered(), 40);
        drop(two);
        assert_eq!((b.buffered(), b.high_water()), (0, 100));
        assert!(b.hold().grow(u64::MAX).is_err());
    }

    #[test]
    fn a_share_is_held_to_its_own_limit_and_counts_in_the_whole() {
        let whole = Budget::new(100);
        let share = whole.share(50);
        let mut s = share.hold();
        s.grow(40).expect("fits the share");
        assert!(s.grow(11).is_err(), "past the share");
        assert_eq!((share.buffered(), whole.buffered()), (40, 40));
        let mut other = whole.hold();
        other.grow(60).expect("the rest of the whole");
        assert!(share.hold().grow(5).is_err(), "the whole is full");
        assert_eq!((share.buffered(), whole.buffered()), (40, 100));
        drop(s);
        assert_eq!((share.buffered(), whole.buffered()), (0, 60));
    }

    #[tokio::test]
    async fn a_heavy_body_waits_for_the_rendering_runs_and_a_light_one_does_not() {
        use std::time::Duration;
        let budget = Budget::new(1 << 30);
        let proxy = budget.share(1 << 29);
        let runs = RenderingRuns::new();
        budget.yield_to(runs.clone());
        let run = runs.begin();
        let quick = Duration::from_millis(50);
        // Light bodies, and heavy ones while nothing is written, go on at once.
        tokio::time::timeout(quick, budget.heavy_turn(HEAVY_BODY))
            .await
            .expect("a light body does not wait");
        for b in [&budget, &proxy] {
            assert!(
                tokio::time::timeout(quick, b.heavy_turn(HEAVY_BODY + 1))
                    .await
                    .is_err(),
                "a heavy body waits while a run is under way (a share too)"
            );
        }
        drop(run);
        for b in [&budget, &proxy] {
            tokio::time::timeout(Duration::from_secs(5), b.heavy_turn(HEAVY_BODY + 1))
                .await
                .expect("goes on once the run ended");
        }
    }
}
