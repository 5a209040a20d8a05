//! Each archive's share of our requests: at most `max_concurrency` turns in flight at once,
//! across every fan-out and `/memento/proxy`, first come first served, and with `rate` each
//! request of a turn sent only in its pace slot (the arithmetic is the core's
//! [`tmproxy_core::pacing`]; the waiting is here). A request that cannot have its turn within
//! its time limit is told so ([`Late`]): a timeout of our queue's making, not the archive's.

use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;
use tmproxy_core::pacing::Pacing;
use tokio::sync::{Semaphore, SemaphorePermit};
use tokio::time::{sleep, timeout_at, Instant};

/// One archive's turns.
pub struct Turns {
    permits: Semaphore,
    max: u32,
    rate: f64,
    /// None when `rate` is unlimited.
    pace: Option<Mutex<Pacing>>,
    /// What the pace's times count from.
    epoch: Instant,
    /// Requests waiting now, for a turn or for a pace slot.
    waiting: AtomicUsize,
}

/// Why a request did not get its turn in time: its `timeout`'s detail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Late(pub String);

/// Where one archive's ask stands, for the fan-out to judge it when its deadline cuts it off:
/// still waiting for its turn, asked at once and never held up since, or held up by our queue.
#[derive(Debug, Default)]
pub struct Standing(AtomicU8);

impl Standing {
    const PROMPT: u8 = 1;
    const DELAYED: u8 = 2;

    /// Whether the archive had all the time there was: its turn began at once and none of its
    /// requests waited since. Only then may a cut-off count against it.
    pub fn prompt(&self) -> bool {
        self.0.load(Ordering::Relaxed) == Self::PROMPT
    }

    /// Whether its turn has begun (it is being asked).
    pub fn began(&self) -> bool {
        self.0.load(Ordering::Relaxed) != 0
    }

    fn set(&self, delayed: bool) {
        let v = if delayed { Self::DELAYED } else { Self::PROMPT };
        self.0.store(v, Ordering::Relaxed);
    }
}

/// What an archive's turns are now, for `/archives` and `/metrics`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Load {
    pub in_flight: usize,
    pub waiting: usize,
}

/// A request's place in the waiting count while it waits.
struct Waiting<'a>(&'a AtomicUsize);

impl<'a> Waiting<'a> {
    fn new(count: &'a AtomicUsize) -> Waiting<'a> {
        count.fetch_add(1, Ordering::Relaxed);
        Waiting(count)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Turns {
    /// `max_concurrency` turns (at least one), paced at `rate` requests a second (0: unlimited).
    pub fn new(max_concurrency: u32, rate: f64) -> Turns {
        let max = max_concurrency.max(1);
        Turns {
            permits: Semaphore::new(max as usize),
            max,
            rate,
            pace: Pacing::new(rate).map(Mutex::new),
            epoch: Instant::now(),
            waiting: AtomicUsize::new(0),
        }
    }

    pub fn load(&self) -> Load {
        Load {
            in_flight: (self.max as usize).saturating_sub(self.permits.available_permits()),
            waiting: self.waiting.load(Ordering::Relaxed),
        }
    }

    /// Waits, by `latest`, for a turn and its first request's pace slot; the turn then has
    /// `timeout` for the archive's answer, counted from when it begins, so time spent in our
    /// queue is not taken from the archive. `standing` says how it began.
    pub async fn take<'a>(
        &'a self,
        latest: Instant,
        timeout: Duration,
        standing: &'a Standing,
    ) -> Result<Turn<'a>, Late> {
        let asked = Instant::now();
        let mut waited = false;
        let permit = match self.permits.try_acquire() {
            Ok(permit) => permit,
            Err(_) => {
                waited = true;
                let _counted = Waiting::new(&self.waiting);
                match timeout_at(latest, self.permits.acquire()).await {
                    Ok(Ok(permit)) => permit,
                    // Closed (never: nothing closes it) or its time limit came first.
                    _ => {
                        return Err(Late(format!(
                            "waited {:.1}s for its turn (max_concurrency {}) until its time limit: not asked",
                            asked.elapsed().as_secs_f64(),
                            self.max
                        )))
                    }
                }
            }
        };
        waited |= self.wait_for_slot(latest).await?;
        standing.set(waited);
        Ok(Turn {
            turns: self,
            _permit: permit,
            standing,
            first_paced: AtomicBool::new(true),
            waited_inside: AtomicBool::new(false),
            waited: asked.elapsed(),
            until: Instant::now() + timeout,
        })
    }

    /// Reserves the next pace slot that starts by `latest` and sleeps until it; whether it had
    /// to wait. No slot by then: nothing reserved, and the request is late at once.
    async fn wait_for_slot(&self, latest: Instant) -> Result<bool, Late> {
        let Some(pace) = &self.pace else {
            return Ok(false);
        };
        let wait = {
            // A poisoned lock only means a panic mid-update of two plain durations.
            let mut pace = pace.lock().unwrap_or_else(|p| p.into_inner());
            let now = self.epoch.elapsed();
            pace.reserve(now, latest.saturating_duration_since(self.epoch))
        };
        match wait {
            None => Err(Late(format!(
                "its turn at rate {}/s would come after its time limit: not sent",
                self.rate
            ))),
            Some(wait) if wait.is_zero() => Ok(false),
            Some(wait) => {
                let _counted = Waiting::new(&self.waiting);
                sleep(wait).await;
                Ok(true)
            }
        }
    }
}

/// A turn of one archive: its place among `max_concurrency`, held until dropped.
pub struct Turn<'a> {
    turns: &'a Turns,
    _permit: SemaphorePermit<'a>,
    standing: &'a Standing,
    /// The first request's pace slot came with the turn.
    first_paced: AtomicBool,
    waited_inside: AtomicBool,
    waited: Duration,
    /// When the archive's time for this turn is up.
    pub until: Instant,
}

impl Turn<'_> {
    /// Waits for the next request's pace slot (each page, redirect and fallback is a
    /// request), within the turn's time limit.
    pub async fn pace(&self) -> Result<(), Late> {
        if self.first_paced.swap(false, Ordering::Relaxed) {
            return Ok(());
        }
        if self.turns.wait_for_slot(self.until).await? {
            self.waited_inside.store(true, Ordering::Relaxed);
            self.standing.set(true);
        }
        Ok(())
    }

    /// Whether a request of this turn waited for its pace slot: its time limit was cut short
    /// by our queue, so a timeout now is not all the archive's doing.
    pub fn waited_inside(&self) -> bool {
        self.waited_inside.load(Ordering::Relaxed)
    }

    /// How long it waited before it began: not the archive's time.
    pub fn waited(&self) -> Duration {
        self.waited
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_turn_waits_for_a_free_place_and_is_late_past_its_limit() {
        let turns = Turns::new(1, 0.0);
        let (a, b) = (Standing::default(), Standing::default());
        let soon = Instant::now() + Duration::from_millis(50);
        let first = turns.take(soon, Duration::from_secs(5), &a).await;
        assert!(first.is_ok() && a.prompt());
        assert_eq!(turns.load().in_flight, 1);
        let late = turns.take(soon, Duration::from_secs(5), &b).await;
        assert!(late.is_err_and(|l| l.0.contains("max_concurrency 1")));
        assert!(!b.began());
        assert_eq!(
            turns.load(),
            Load {
                in_flight: 1,
                waiting: 0
            }
        );
        drop(first);
        let far = Instant::now() + Duration::from_secs(60);
        let later = turns.take(far, Duration::ZERO, &b).await;
        assert!(later.is_ok() && b.prompt());
    }

    #[tokio::test]
    async fn paced_requests_wait_their_slot_and_a_slot_too_late_is_refused_at_once() {
        // 20 a second: 50 ms apart; the turn has 120 ms for its requests.
        let turns = Turns::new(8, 20.0);
        let s = Standing::default();
        let far = Instant::now() + Duration::from_secs(60);
        let start = Instant::now();
        let turn = turns
            .take(far, Duration::from_millis(120), &s)
            .await
            .expect("a turn");
        assert!(
            turn.pace().await.is_ok(),
            "the first slot came with the turn"
        );
        assert!(s.prompt() && !turn.waited_inside());
        assert!(turn.pace().await.is_ok());
        assert!(start.elapsed() >= Duration::from_millis(50));
        assert!(turn.waited_inside() && !s.prompt());
        assert!(
            turn.pace().await.is_ok(),
            "the slot at 100 ms is within 120 ms"
        );
        let refused = turn
            .pace()
            .await
            .expect_err("the slot at 150 ms is too late");
        assert!(refused.0.contains("rate 20/s"), "{refused:?}");
        // A slot far past the limit is refused at once, not after sleeping towards it.
        let slow = Turns::new(8, 0.5);
        let turn = slow
            .take(far, Duration::from_secs(1), &s)
            .await
            .expect("a turn");
        let (asked, _) = (Instant::now(), turn.pace().await);
        assert!(turn.pace().await.is_err(), "the next slot is 2 s away");
        assert!(
            asked.elapsed() < Duration::from_millis(900),
            "{:?}",
            asked.elapsed()
        );
    }
}
