//! Spacing our requests to one archive at its configured `rate`: each request reserves the next
//! free slot, one period after the slot before it (GCRA with no burst), so requests go out in the
//! order they asked and never closer together than the rate allows. A request whose slot would
//! come after the latest moment it may start reserves nothing and is told so at once, rather than
//! sleeping only to be cut off.
//!
//! Pure: time is a [`Duration`] since any fixed start, passed in by the caller.

use std::time::Duration;

/// One archive's pace: its period and the first slot not yet reserved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pacing {
    period: Duration,
    /// The earliest start of the next reservation (time since the caller's start).
    next: Duration,
}

impl Pacing {
    /// The pace of `per_second` requests a second; None when that is unlimited (0) or no
    /// period can be made of it (negative, not finite, or so slow it overflows).
    pub fn new(per_second: f64) -> Option<Pacing> {
        if !(per_second.is_finite() && per_second > 0.0) {
            return None;
        }
        let period = Duration::try_from_secs_f64(1.0 / per_second).ok()?;
        Some(Pacing {
            period,
            next: Duration::ZERO,
        })
    }

    /// The time between two requests.
    pub fn period(&self) -> Duration {
        self.period
    }

    /// Reserves the next slot for a request ready at `now` that must start by `latest`: how long
    /// it waits (zero when the archive is idle), or None, with nothing reserved, when its slot
    /// would come after `latest`.
    pub fn reserve(&mut self, now: Duration, latest: Duration) -> Option<Duration> {
        let slot = self.next.max(now);
        if slot > latest {
            return None;
        }
        self.next = slot.saturating_add(self.period);
        Some(slot - now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn unlimited_or_nonsense_rates_make_no_pace() {
        for r in [0.0, -1.0, f64::NAN, f64::INFINITY, 1e-300] {
            assert_eq!(Pacing::new(r), None, "{r}");
        }
        assert_eq!(Pacing::new(4.0).map(|p| p.period()), Some(ms(250)));
    }

    #[test]
    fn requests_ready_together_are_spaced_one_period_apart_in_order() {
        let mut p = Pacing::new(5.0).expect("a pace");
        let far = Duration::from_secs(60);
        let waits: Vec<_> = (0..4).map(|_| p.reserve(ms(1000), far)).collect();
        assert_eq!(
            waits,
            [Some(ms(0)), Some(ms(200)), Some(ms(400)), Some(ms(600))]
        );
        // An idle archive is asked at once.
        assert_eq!(p.reserve(ms(5000), far), Some(ms(0)));
    }

    #[test]
    fn a_slot_past_the_latest_start_reserves_nothing() {
        let mut p = Pacing::new(1.0).expect("a pace");
        assert_eq!(p.reserve(ms(0), ms(500)), Some(ms(0)));
        // The next slot is at 1 s: too late for a request that must start by 0.5 s...
        assert_eq!(p.reserve(ms(0), ms(500)), None);
        // ...and it was not taken: the next request still gets it.
        assert_eq!(p.reserve(ms(100), ms(2000)), Some(ms(900)));
    }
}
