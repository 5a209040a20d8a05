//! Memento datetimes: RFC 1123 (link format, HTTP headers) and 14-digit timestamps (paths, CDXJ).

use super::model::MementoDatetime;
use chrono::{Datelike, NaiveDate, TimeZone, Timelike, Utc};

const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];
const WEEKDAYS: [&str; 7] = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];

/// The form a client must send in `Accept-Datetime`, quoted in our 400 answers.
pub const RFC1123_EXAMPLE: &str = "Thu, 31 May 2007 20:35:00 GMT";

/// Parses `Sun, 06 Nov 1994 08:49:37 GMT`. Tolerates what archives send: a missing weekday,
/// a one-digit day, any case, `UTC` or `+0000` for `GMT`, and extra spaces. The weekday is not
/// checked against the date (several archives get it wrong; the date is what matters).
///
/// Allocation-free. The canonical 29-byte form, which is nearly every datetime in a TimeMap, is
/// read at fixed offsets; anything else takes the tolerant path below.
pub fn parse_rfc1123(s: &str) -> Option<MementoDatetime> {
    if let Some(parsed) = parse_canonical_rfc1123(s.as_bytes()) {
        return parsed;
    }
    let s = s.trim();
    // Skip "Sun," if present.
    let rest = match s.find(',') {
        Some(i) => &s[i + 1..],
        None => s,
    };
    let mut parts = rest.split_ascii_whitespace();
    let day: u32 = parse_digits(parts.next()?, 1, 2)?;
    let month_name = parts.next()?;
    let month = MONTHS
        .iter()
        .position(|m| m.eq_ignore_ascii_case(month_name))? as u32
        + 1;
    let year: i32 = parse_digits(parts.next()?, 4, 4)? as i32;
    let time = parts.next()?;
    let mut hms = time.split(':');
    let hour = parse_digits(hms.next()?, 2, 2)?;
    let minute = parse_digits(hms.next()?, 2, 2)?;
    let second = parse_digits(hms.next()?, 2, 2)?;
    if hms.next().is_some() {
        return None;
    }
    match parts.next() {
        None => {}
        Some(zone)
            if zone.eq_ignore_ascii_case("GMT")
                || zone.eq_ignore_ascii_case("UTC")
                || zone == "+0000"
                || zone == "Z" => {}
        Some(_) => return None,
    }
    if parts.next().is_some() {
        return None;
    }
    build(year, month, day, hour, minute, second)
}

/// The exact form `Sun, 06 Nov 1994 08:49:37 GMT`: `None` if `b` is not in that shape (the caller
/// then tries the tolerant parser), `Some(result)` if it is. A parser of TimeMaps calls this once
/// per memento, so it avoids the splitting and searching of the general path.
fn parse_canonical_rfc1123(b: &[u8]) -> Option<Option<MementoDatetime>> {
    let b: &[u8; 29] = b.try_into().ok()?;
    let shape = b[..3].iter().all(u8::is_ascii_alphabetic)
        && b[3] == b','
        && b[4] == b' '
        && b[7] == b' '
        && b[11] == b' '
        && b[16] == b' '
        && b[19] == b':'
        && b[22] == b':'
        && b[25] == b' '
        && &b[26..] == b"GMT";
    if !shape {
        return None;
    }
    let two = |hi: u8, lo: u8| -> Option<u32> {
        let (hi, lo) = (hi.wrapping_sub(b'0'), lo.wrapping_sub(b'0'));
        (hi < 10 && lo < 10).then_some(u32::from(hi) * 10 + u32::from(lo))
    };
    // Case-sensitive on purpose: other spellings go to the general path, which ignores case.
    let month = match &b[8..11] {
        b"Jan" => 1,
        b"Feb" => 2,
        b"Mar" => 3,
        b"Apr" => 4,
        b"May" => 5,
        b"Jun" => 6,
        b"Jul" => 7,
        b"Aug" => 8,
        b"Sep" => 9,
        b"Oct" => 10,
        b"Nov" => 11,
        b"Dec" => 12,
        _ => return None,
    };
    let day = two(b[5], b[6])?;
    let year = two(b[12], b[13])? * 100 + two(b[14], b[15])?;
    let hour = two(b[17], b[18])?;
    let minute = two(b[20], b[21])?;
    let second = two(b[23], b[24])?;
    Some(build(year as i32, month, day, hour, minute, second))
}

/// Formats as RFC 1123 (`Sun, 06 Nov 1994 08:49:37 GMT`).
pub fn format_rfc1123(dt: MementoDatetime) -> String {
    let mut out = String::with_capacity(29);
    write_rfc1123(&mut out, dt);
    out
}

/// Appends the RFC 1123 form to `out`, without allocating or going through `fmt`: the
/// serialisers call it once per memento, a million times for the largest TimeMaps.
pub fn write_rfc1123(out: &mut String, dt: MementoDatetime) {
    // Read from the naive form: each accessor of a `DateTime` converts to it again.
    let dt = dt.naive_utc();
    out.push_str(WEEKDAYS[dt.weekday().num_days_from_monday() as usize]);
    out.push_str(", ");
    push_2(out, dt.day());
    out.push(' ');
    out.push_str(MONTHS[dt.month0() as usize]);
    out.push(' ');
    push_year(out, dt.year());
    out.push(' ');
    push_2(out, dt.hour());
    out.push(':');
    push_2(out, dt.minute());
    out.push(':');
    push_2(out, dt.second());
    out.push_str(" GMT");
}

/// Two decimal digits, zero-padded (values are always < 100 here).
fn push_2(out: &mut String, v: u32) {
    out.push(char::from(b'0' + (v / 10 % 10) as u8));
    out.push(char::from(b'0' + (v % 10) as u8));
}

/// Parses a 4 to 14 digit timestamp (`YYYY[MM[DD[hh[mm[ss]]]]]`), padding missing parts with the
/// earliest value (month and day 01, time 00), as Time Travel and MemGator do in paths.
pub fn parse_14digit(s: &str) -> Option<MementoDatetime> {
    if !(4..=14).contains(&s.len())
        || !s.len().is_multiple_of(2)
        || !s.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    let field = |from: usize, default: u32| -> Option<u32> {
        if s.len() >= from + 2 {
            s[from..from + 2].parse().ok()
        } else {
            Some(default)
        }
    };
    let year: i32 = s[0..4].parse().ok()?;
    build(
        year,
        field(4, 1)?,
        field(6, 1)?,
        field(8, 0)?,
        field(10, 0)?,
        field(12, 0)?,
    )
}

/// Formats as `YYYYMMDDhhmmss`.
pub fn format_14digit(dt: MementoDatetime) -> String {
    let mut out = String::with_capacity(14);
    write_14digit(&mut out, dt);
    out
}

/// Appends `YYYYMMDDhhmmss` to `out` (per memento in CDXJ, so no `fmt`).
pub fn write_14digit(out: &mut String, dt: MementoDatetime) {
    let dt = dt.naive_utc();
    push_year(out, dt.year());
    for v in [dt.month(), dt.day(), dt.hour(), dt.minute(), dt.second()] {
        push_2(out, v);
    }
}

/// Formats as RFC 3339 with a `Z` and second precision (`2007-05-31T20:35:00Z`).
pub fn format_rfc3339(dt: MementoDatetime) -> String {
    let dt = dt.naive_utc();
    let mut out = String::with_capacity(20);
    push_year(&mut out, dt.year());
    out.push('-');
    push_2(&mut out, dt.month());
    out.push('-');
    push_2(&mut out, dt.day());
    out.push('T');
    push_2(&mut out, dt.hour());
    out.push(':');
    push_2(&mut out, dt.minute());
    out.push(':');
    push_2(&mut out, dt.second());
    out.push('Z');
    out
}

fn push_year(out: &mut String, year: i32) {
    if (0..=9999).contains(&year) {
        push_2(out, (year / 100) as u32);
        push_2(out, (year % 100) as u32);
    } else {
        // Outside what these forms can say; keep it readable rather than wrong.
        use std::fmt::Write;
        let _ = write!(out, "{year:04}");
    }
}

fn parse_digits(s: &str, min: usize, max: usize) -> Option<u32> {
    if s.len() < min || s.len() > max || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

fn build(year: i32, month: u32, day: u32, h: u32, m: u32, s: u32) -> Option<MementoDatetime> {
    // A leap second (:60) is folded into :59 rather than dropping the memento; :61 and above
    // are not seconds and are refused below, like a minute of 60.
    let s = if s == 60 { 59 } else { s };
    let naive = NaiveDate::from_ymd_opt(year, month, day)?.and_hms_opt(h, m, s)?;
    Some(Utc.from_utc_datetime(&naive))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc1123_round_trips() {
        let dt = parse_rfc1123("Tue, 20 Jun 2000 18:02:59 GMT").expect("valid");
        assert_eq!(format_rfc1123(dt), "Tue, 20 Jun 2000 18:02:59 GMT");
        assert_eq!(format_14digit(dt), "20000620180259");
        assert_eq!(format_rfc3339(dt), "2000-06-20T18:02:59Z");
    }

    #[test]
    fn rfc1123_tolerates_archive_variants() {
        let want = parse_rfc1123("Tue, 20 Jun 2000 18:02:59 GMT");
        assert!(want.is_some());
        for v in [
            "20 Jun 2000 18:02:59 GMT",
            "tue, 20 jun 2000 18:02:59 gmt",
            "Mon, 20 Jun 2000 18:02:59 GMT",
            "Tue,  20 Jun 2000  18:02:59 UTC",
            " Tue, 20 Jun 2000 18:02:59 +0000 ",
        ] {
            assert_eq!(parse_rfc1123(v), want, "{v}");
        }
        assert_eq!(
            parse_rfc1123("Sat, 1 Jan 2005 00:00:00 GMT"),
            parse_14digit("20050101")
        );
    }

    #[test]
    fn rfc1123_rejects_garbage() {
        for v in [
            "",
            "2000-06-20T18:02:59Z",
            "Tue, 32 Jun 2000 18:02:59 GMT",
            "Tue, 20 Foo 2000 18:02:59 GMT",
            "Tue, 20 Jun 2000 25:02:59 GMT",
            "Tue, 20 Jun 2000 18:02 GMT",
            "Tue, 20 Jun 2000 18:02:59 PST",
            "Tue, 20 Jun 2000 18:02:59 GMT trailing",
            "Tue, 20 Jun 00 18:02:59 GMT",
        ] {
            assert_eq!(parse_rfc1123(v), None, "{v:?}");
        }
    }

    #[test]
    fn rfc1123_fast_path_agrees_with_general_path() {
        for v in [
            "Tue, 20 Jun 2000 18:02:59 GMT",
            "Sat, 29 Feb 2020 23:59:60 GMT",
            "Sun, 30 Feb 2020 00:00:00 GMT",
            "Mon, 01 Jan 0000 00:00:00 GMT",
            "Mon, 01 jan 2000 00:00:00 GMT",
            "1on, 01 Jan 2000 00:00:00 GMT",
            ",ab, 01 Jan 2000 00:00:00 GMT",
            "Mon, 0x Jan 2000 00:00:00 GMT",
            "Mon, 01 Jan 2000 24:00:00 GMT",
        ] {
            // A leading space makes the input 30 bytes long, which forces the general path.
            let general = parse_rfc1123(&format!(" {v}"));
            assert_eq!(parse_rfc1123(v), general, "{v:?}");
        }
    }

    #[test]
    fn fourteen_digit_pads_missing_parts() {
        let full = parse_14digit("20050101000000").expect("valid");
        assert_eq!(parse_14digit("2005"), Some(full));
        assert_eq!(parse_14digit("200501"), Some(full));
        assert_eq!(parse_14digit("20050101"), Some(full));
        assert_eq!(
            format_14digit(parse_14digit("200702").expect("valid")),
            "20070201000000"
        );
    }

    #[test]
    fn fourteen_digit_rejects_bad_forms() {
        for v in [
            "",
            "200",
            "20051",
            "2005130100",
            "20050230",
            "2005010125",
            "2005abcd",
            "200501010000001",
        ] {
            assert_eq!(parse_14digit(v), None, "{v:?}");
        }
    }

    #[test]
    fn seconds_past_a_leap_second_are_refused() {
        // Found by the `datetime` fuzz target: :61 to :99 were folded into :59 like a leap second.
        assert_eq!(
            parse_14digit("20161231235960"),
            parse_14digit("20161231235959")
        );
        assert_eq!(parse_14digit("20161231235961"), None);
        assert_eq!(parse_14digit("20161231235999"), None);
        for v in [
            "Sat, 31 Dec 2016 23:59:61 GMT",
            "Sat, 31 Dec 2016 23:59:99 GMT",
            "31 Dec 2016 23:59:61 GMT",
        ] {
            assert_eq!(parse_rfc1123(v), None, "{v:?}");
        }
    }
}
