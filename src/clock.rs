//! The machine's clock. The trait and the simulated clock are the core's (`tmproxy_core::clock`,
//! re-exported here), so the sampling crate and `memsim` share them; reading the machine's time
//! is I/O, kept out of the core.

pub use tmproxy_core::clock::{Clock, SimClock};

use chrono::{DateTime, Utc};
use std::time::{SystemTime, UNIX_EPOCH};

/// The machine's clock, truncated to whole seconds like every Memento-Datetime.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        // Whole seconds from the system time, one calendar conversion: `Utc::now` made one and
        // the truncation a second, on every request.
        let since_epoch = SystemTime::now().duration_since(UNIX_EPOCH).ok();
        let whole = since_epoch.and_then(|d| i64::try_from(d.as_secs()).ok());
        whole
            .and_then(|s| DateTime::from_timestamp(s, 0))
            .unwrap_or_else(|| {
                // Before 1970, or past chrono's range: a clock set wrong, read the slow way.
                let now = Utc::now();
                DateTime::from_timestamp(now.timestamp(), 0).unwrap_or(now)
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn system_clock_has_whole_seconds() {
        assert_eq!(SystemClock.now().timestamp_subsec_nanos(), 0);
    }

    #[test]
    fn system_clock_reads_the_time_chrono_reads() {
        let before = Utc::now().timestamp();
        let now = SystemClock.now().timestamp();
        let after = Utc::now().timestamp();
        assert!(before <= now && now <= after, "{before} {now} {after}");
    }
}
