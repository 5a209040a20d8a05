//! The machine's clock. The trait and the simulated clock are the core's (`tmproxy_core::clock`,
//! re-exported here), so the sampling crate and `memsim` share them; reading the machine's time
//! is I/O, kept out of the core.

pub use tmproxy_core::clock::{Clock, SimClock};

use chrono::{DateTime, Utc};

/// The machine's clock, truncated to whole seconds like every Memento-Datetime.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        let now = Utc::now();
        DateTime::from_timestamp(now.timestamp(), 0).unwrap_or(now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn system_clock_has_whole_seconds() {
        assert_eq!(SystemClock.now().timestamp_subsec_nanos(), 0);
    }
}
