//! Wall-clock time behind a trait, so the cache policy and the simulations can run on a set clock.

use chrono::{DateTime, Utc};

/// Where "now" comes from. The server reads time only through this.
pub trait Clock: Send + Sync + 'static {
    fn now(&self) -> DateTime<Utc>;
}

/// The machine's clock, truncated to whole seconds like every Memento-Datetime.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        let now = Utc::now();
        DateTime::from_timestamp(now.timestamp(), 0).unwrap_or(now)
    }
}
