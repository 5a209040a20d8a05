//! An archive asking us to wait: a `429 Too Many Requests` or `503 Service Unavailable` with
//! `Retry-After` (delta-seconds or an HTTP date, RFC 9110 section 10.2.3). Until then it is not
//! asked: its outcome is `skipped` with detail [`DETAIL`], which, like a routing skip, is no
//! failure and no step towards dormancy. A wait is capped (`[upstream] max_retry_after`), so an
//! archive (or whatever answers in its name) cannot put itself out of reach for good.
//!
//! Pure: the caller reads the header and passes the time in.

use crate::timemap::datetime::parse_rfc1123;
use chrono::{DateTime, Utc};
use std::time::Duration;

/// The detail of an archive skipped because it asked us to wait (`X-Memento-Archives`
/// `;detail=retry-after`, `archives[]` `detail`).
pub const DETAIL: &str = "retry-after";

/// What a `Retry-After` said.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryAfter {
    /// Wait this many seconds from the answer.
    Seconds(u64),
    /// Wait until this moment.
    At(DateTime<Utc>),
}

impl RetryAfter {
    /// What an answer of `status` with `Retry-After: value` asks: only a 429 or a 503 asks us
    /// to wait (a 301's or a 3xx's `Retry-After` is about something else); None for any other,
    /// or for a value that is neither form.
    pub fn of(status: u16, value: Option<&str>) -> Option<RetryAfter> {
        if !matches!(status, 429 | 503) {
            return None;
        }
        RetryAfter::parse(value?)
    }

    /// The header's value: delta-seconds (digits only) or an HTTP date.
    pub fn parse(value: &str) -> Option<RetryAfter> {
        let value = value.trim();
        if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
            // More digits than a u64 holds is a very long wait: the cap decides it.
            return Some(RetryAfter::Seconds(value.parse().unwrap_or(u64::MAX)));
        }
        parse_rfc1123(value).map(RetryAfter::At)
    }

    /// Until when to hold the archive, asked at `now`: at most `cap` past it. None when there
    /// is nothing to wait for (a date in the past, `0`, or a zero cap). The server's clock counts
    /// whole seconds, as Memento-Datetimes do, so the moment it says may be up to a second
    /// behind: a wait in seconds (and the cap) counts from the end of that second, never
    /// shorter than asked.
    pub fn until(self, now: DateTime<Utc>, cap: Duration) -> Option<DateTime<Utc>> {
        if cap.is_zero() || self == RetryAfter::Seconds(0) {
            return None;
        }
        let from = now.checked_add_signed(chrono::Duration::seconds(1))?;
        let cap = chrono::Duration::from_std(cap).unwrap_or(chrono::Duration::MAX);
        let latest = from
            .checked_add_signed(cap)
            .unwrap_or(DateTime::<Utc>::MAX_UTC);
        let asked = match self {
            RetryAfter::Seconds(s) => i64::try_from(s)
                .ok()
                .and_then(chrono::Duration::try_seconds)
                .and_then(|d| from.checked_add_signed(d))
                .unwrap_or(latest),
            RetryAfter::At(at) => at,
        };
        let until = asked.min(latest);
        (until > now).then_some(until)
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

    const TEN_MINUTES: Duration = Duration::from_secs(600);

    #[test]
    fn only_a_429_or_a_503_asks_us_to_wait() {
        assert_eq!(RetryAfter::of(429, Some("2")), Some(RetryAfter::Seconds(2)));
        assert_eq!(
            RetryAfter::of(503, Some(" 120 ")),
            Some(RetryAfter::Seconds(120))
        );
        for status in [200, 301, 404, 500, 502] {
            assert_eq!(RetryAfter::of(status, Some("2")), None, "{status}");
        }
        assert_eq!(RetryAfter::of(429, None), None);
    }

    #[test]
    fn both_forms_are_read_and_anything_else_is_not() {
        let date = "Wed, 21 Oct 2015 07:28:00 GMT";
        let at = Utc
            .with_ymd_and_hms(2015, 10, 21, 7, 28, 0)
            .single()
            .expect("valid");
        assert_eq!(RetryAfter::parse(date), Some(RetryAfter::At(at)));
        assert_eq!(
            RetryAfter::parse("99999999999999999999999"),
            Some(RetryAfter::Seconds(u64::MAX))
        );
        for bad in ["", "-1", "1.5", "soon", "2s", "+3"] {
            assert_eq!(RetryAfter::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn a_wait_is_capped_and_one_in_the_past_is_none() {
        let now = t(0);
        // From the end of the second the clock says: never shorter than asked.
        assert_eq!(RetryAfter::Seconds(2).until(now, TEN_MINUTES), Some(t(3)));
        assert_eq!(
            RetryAfter::Seconds(u64::MAX).until(now, TEN_MINUTES),
            Some(t(601))
        );
        let far = Utc
            .with_ymd_and_hms(2999, 1, 1, 0, 0, 0)
            .single()
            .expect("valid");
        assert_eq!(RetryAfter::At(far).until(now, TEN_MINUTES), Some(t(601)));
        assert_eq!(RetryAfter::At(t(30)).until(now, TEN_MINUTES), Some(t(30)));
        assert_eq!(RetryAfter::At(t(-30)).until(now, TEN_MINUTES), None);
        assert_eq!(RetryAfter::Seconds(0).until(now, TEN_MINUTES), None);
        assert_eq!(RetryAfter::Seconds(5).until(now, Duration::ZERO), None);
    }
}
