//! The pause after a shared-tier failure: a Redis that drops packets costs the call timeout
//! once, not on every request; the calls meanwhile skip Redis, and the first after the pause
//! tries again.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long calls skip Redis after one failed.
pub const PAUSE_AFTER_FAILURE: Duration = Duration::from_secs(5);

/// When the calls may try Redis again; the time is passed in.
#[derive(Debug, Default)]
pub(super) struct Pause {
    until: Mutex<Option<Instant>>,
}

impl Pause {
    /// Whether a call at `now` must skip Redis.
    pub fn skips(&self, now: Instant) -> bool {
        self.lock().is_some_and(|until| now < until)
    }

    /// A call failed at `now`: the next ones skip Redis for `length`.
    pub fn failed(&self, now: Instant, length: Duration) {
        *self.lock() = Some(now + length);
    }

    /// Ends the pause now.
    pub fn end(&self) {
        *self.lock() = None;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Instant>> {
        self.until.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_pauses_calls_until_the_pause_ends() {
        let pause = Pause::default();
        let t0 = Instant::now();
        assert!(!pause.skips(t0), "no failure yet");
        pause.failed(t0, PAUSE_AFTER_FAILURE);
        assert!(pause.skips(t0));
        assert!(pause.skips(t0 + PAUSE_AFTER_FAILURE - Duration::from_millis(1)));
        assert!(
            !pause.skips(t0 + PAUSE_AFTER_FAILURE),
            "tried again after the pause"
        );
        pause.failed(t0 + PAUSE_AFTER_FAILURE, PAUSE_AFTER_FAILURE);
        assert!(
            pause.skips(t0 + PAUSE_AFTER_FAILURE),
            "failed again: paused again"
        );
        pause.end();
        assert!(!pause.skips(t0));
    }
}
