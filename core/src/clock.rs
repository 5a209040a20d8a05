//! Time behind a trait, so the cache, sampling jobs and the simulations can run on a set clock.
//! The core reads no clock itself: the machine's clock (`SystemClock`) is the server's.

use chrono::{DateTime, Utc};

/// Where "now" comes from. The server reads time only through this.
pub trait Clock: Send + Sync + 'static {
    fn now(&self) -> DateTime<Utc>;
}

/// A clock that stands still until told otherwise: `tmproxy serve --sim-clock` uses it so the
/// simulations (and tests) can move the proxy through days in seconds via `PUT /admin/clock`.
#[derive(Debug)]
pub struct SimClock {
    now: std::sync::RwLock<DateTime<Utc>>,
}

impl SimClock {
    pub fn new(start: DateTime<Utc>) -> SimClock {
        SimClock {
            now: std::sync::RwLock::new(start),
        }
    }

    pub fn set(&self, to: DateTime<Utc>) {
        // A poisoned lock holds a plain value that is still valid: take it over.
        let mut now = self.now.write().unwrap_or_else(|p| p.into_inner());
        *now = to;
    }
}

impl Clock for SimClock {
    fn now(&self) -> DateTime<Utc> {
        *self.now.read().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sim_clock_stands_still_until_set() {
        let start = DateTime::from_timestamp(1_335_830_400, 0).expect("valid"); // 2012-05-01
        let clock = SimClock::new(start);
        assert_eq!(clock.now(), start);
        let later = start + chrono::Duration::days(16);
        clock.set(later);
        assert_eq!(clock.now(), later);
    }
}
