//! The configured archives and their health: an archive that keeps failing is left alone a while.

use crate::config::{ArchiveConfig, Config};
use crate::timemap::model::ArchiveId;
use chrono::{DateTime, Utc};
use std::sync::Arc;
use std::time::Duration;

/// One enabled archive, as the fan-out uses it.
#[derive(Debug, Clone)]
pub struct Archive {
    pub id: ArchiveId,
    pub name: String,
    /// TimeMap URL prefix: the URI-R is appended to it, and to nothing else.
    pub timemap: String,
    pub timegate: String,
    pub timeout: Duration,
}

impl Archive {
    pub fn from_config(config: &Config, a: &ArchiveConfig) -> Archive {
        Archive {
            id: Arc::from(a.id.as_str()),
            name: a.name.clone(),
            timemap: a.timemap.clone(),
            timegate: a.timegate.clone(),
            timeout: config.archive_timeout(a),
        }
    }

    /// The URI-T for a URI-R. Because the prefix carries the scheme and host, the URI-R can only
    /// ever land in this archive's path: it never chooses the host we connect to.
    pub fn timemap_for(&self, uri_r: &str) -> String {
        format!("{}{}", self.timemap, uri_r)
    }
}

/// Consecutive failures of one archive and, once they reach the threshold, until when it sleeps.
/// Pure: time is passed in.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Health {
    pub consecutive_failures: u32,
    pub dormant_until: Option<DateTime<Utc>>,
}

impl Health {
    /// Whether to skip the archive at `now`.
    pub fn is_dormant(&self, now: DateTime<Utc>) -> bool {
        self.dormant_until.is_some_and(|until| now < until)
    }

    /// Records an answer (`answered`: it said what it holds, even "nothing") or a failure.
    /// `threshold` 0 means never dormant.
    pub fn record(
        &mut self,
        answered: bool,
        now: DateTime<Utc>,
        threshold: u32,
        dormant_for: Duration,
    ) {
        if answered {
            *self = Health::default();
            return;
        }
        self.consecutive_failures = self.consecutive_failures.saturating_add(1);
        if threshold > 0 && self.consecutive_failures >= threshold {
            let span = chrono::Duration::from_std(dormant_for).unwrap_or(chrono::Duration::MAX);
            self.dormant_until = now.checked_add_signed(span);
            // After the sleep it gets one try; one more failure puts it back to sleep.
            self.consecutive_failures = threshold.saturating_sub(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn t(secs: i64) -> DateTime<Utc> {
        Utc.timestamp_opt(1_700_000_000 + secs, 0)
            .single()
            .expect("valid")
    }

    #[test]
    fn dormant_after_threshold_and_awake_after_the_span() {
        let mut h = Health::default();
        for i in 0..2 {
            h.record(false, t(i), 3, Duration::from_secs(60));
            assert!(!h.is_dormant(t(i)));
        }
        h.record(false, t(2), 3, Duration::from_secs(60));
        assert!(h.is_dormant(t(3)));
        assert!(h.is_dormant(t(61)));
        assert!(!h.is_dormant(t(62)));
        // One more failure after waking puts it straight back to sleep.
        h.record(false, t(62), 3, Duration::from_secs(60));
        assert!(h.is_dormant(t(63)));
    }

    #[test]
    fn an_answer_resets_and_zero_threshold_never_sleeps() {
        let mut h = Health::default();
        h.record(false, t(0), 2, Duration::from_secs(60));
        h.record(true, t(1), 2, Duration::from_secs(60));
        h.record(false, t(2), 2, Duration::from_secs(60));
        assert!(!h.is_dormant(t(3)));
        let mut h = Health::default();
        for i in 0..100 {
            h.record(false, t(i), 0, Duration::from_secs(60));
        }
        assert!(!h.is_dormant(t(100)));
    }

    #[test]
    fn uri_t_is_prefix_plus_uri_r() {
        let a = Archive {
            id: Arc::from("ia"),
            name: "Internet Archive".into(),
            timemap: "https://web.archive.org/web/timemap/link/".into(),
            timegate: "https://web.archive.org/web/".into(),
            timeout: Duration::from_secs(1),
        };
        assert_eq!(
            a.timemap_for("http://evil.example@other.host/"),
            "https://web.archive.org/web/timemap/link/http://evil.example@other.host/"
        );
    }
}
