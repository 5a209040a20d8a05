//! Properties of the parsers that read untrusted bytes, as functions that panic when one is broken.
//!
//! The cargo-fuzz targets in `fuzz/` call these on every generated input, and the integration
//! test `fuzz_corpus` replays the committed seed corpus and crash reproducers through them, so a
//! property is written once and checked both by the fuzzer (nightly, for minutes) and by CI
//! (stable, on every run). Each function takes raw bytes, as a fuzzer gives them; text parsers see
//! them decoded lossily, so invalid UTF-8 still reaches the parser as replacement characters.
//!
//! A panic here is the finding: either the parser panicked itself or a property below failed.

use chrono::{DateTime, Datelike, TimeZone, Timelike, Utc};
use std::io::{BufRead, BufReader, Read};
use tmproxy::cache::canonical_key;
use tmproxy::config::{format_duration, format_size, parse_duration, parse_size};
use tmproxy::http::timegate::split_path_datetime;
use tmproxy::sampling::cdx::{self, CdxRow, Dialect};
use tmproxy::sampling::index::{self, IndexLine};
use tmproxy::sampling::surt;
use tmproxy::timemap::aggregate::Aggregate;
use tmproxy::timemap::answer::{ArchiveAnswer, ArchiveStatus, Contribution};
use tmproxy::timemap::credit::Credits;
use tmproxy::timemap::datetime::{
    format_14digit, format_rfc1123, format_rfc3339, parse_14digit, parse_rfc1123,
};
use tmproxy::timemap::parse::parse_link_format;
use tmproxy::timemap::serialize::{to_cdxj, to_json, to_link_format, SelfLinks, TimeMapFormat};
use tmproxy::timemap::{LinkMemento, MementoDatetime};

/// The URI-T the fuzzed TimeMaps are read as, so relative URIs have something to resolve against.
const URI_T: &str = "http://arxiv.example.net/timemap/link/http://a.example.org/";
/// Where our own serialisations of them claim to live.
const PUBLIC_URL: &str = "http://127.0.0.1:8080";
const URI_R: &str = "http://a.example.org/";

/// The link-format parser on `data`, then our serialisers on what it read:
/// - it never keeps more mementos or pages than the body has `<` (each link starts with one);
/// - a memento's URI-M is never empty and never holds `<`, `>` or a line end, which would break
///   the link format we write; it is absolute http(s) and kept escaped;
/// - with a base that is not a URL, the mementos are those of a good base minus relative ones;
/// - merged and written by [`to_link_format`], the mementos read back identical, in order, with
///   nothing skipped, and the JSON and CDXJ serialisations hold the same URIs and datetimes.
pub fn link_format(data: &[u8]) {
    let body = String::from_utf8_lossy(data);
    let parsed = parse_link_format(&body, URI_T);
    let links_in_body = body.bytes().filter(|&b| b == b'<').count();
    assert!(
        parsed.mementos.len() + parsed.pages.len() <= links_in_body,
        "{} mementos and {} pages from {links_in_body} links",
        parsed.mementos.len(),
        parsed.pages.len()
    );
    assert!(parsed.skipped <= body.len(), "more skips than bytes");
    for m in &parsed.mementos {
        assert!(!m.uri_m.is_empty(), "empty URI-M");
        assert!(
            !m.uri_m.contains(['<', '>', '\r', '\n']),
            "URI-M {:?} cannot be written back in link format",
            m.uri_m
        );
        // It may become a `Location`: absolute http(s), and already escaped (so a valid header).
        assert!(
            tmproxy::uri_text::is_servable_uri_m(&m.uri_m),
            "URI-M {:?} is not servable",
            m.uri_m
        );
        assert_eq!(
            tmproxy::uri_text::escape_uri(&m.uri_m),
            &*m.uri_m,
            "URI-M kept unescaped"
        );
    }

    // Relative URIs need a usable base; absolute ones do not, so they must come through alike.
    let baseless = parse_link_format(&body, "not a url");
    let mut rest = parsed.mementos.iter();
    for m in &baseless.mementos {
        assert!(
            rest.any(|g| g == m),
            "memento {m:?} read without a base but not with one"
        );
    }

    round_trip(parsed.mementos);
}

/// Merges `mementos` as one archive's, writes the aggregate in the three formats and reads each
/// back.
fn round_trip(mementos: Vec<LinkMemento>) {
    let at = Utc.timestamp_opt(0, 0).single().unwrap_or_default();
    let answer = ArchiveAnswer::failed(ArchiveStatus::Ok, Some(200), None);
    let agg = Aggregate::of(
        URI_R,
        at,
        &[Contribution::listed("fuzz", answer, at, mementos)],
        Credits::none(),
    );
    let links = SelfLinks::new(PUBLIC_URL, URI_R);
    let want: Vec<(&str, MementoDatetime)> = agg
        .timemap
        .mementos
        .iter()
        .map(|m| (&*m.uri_m, m.datetime))
        .collect();

    let written = to_link_format(&agg, &links);
    let reread = parse_link_format(&written, &links.timemap(TimeMapFormat::LINK));
    let got: Vec<(&str, MementoDatetime)> = reread
        .mementos
        .iter()
        .map(|m| (&*m.uri_m, m.datetime))
        .collect();
    assert_eq!(
        got, want,
        "our link format read back differently:\n{written}"
    );
    assert_eq!(
        reread.skipped, 0,
        "our own link format has skips:\n{written}"
    );
    assert!(reread.pages.is_empty(), "our own link format has pages");
    assert_eq!(reread.original.as_deref(), Some(URI_R));
    assert_eq!(reread.timegate.as_deref(), Some(links.timegate().as_str()));

    let json: serde_json::Value = match serde_json::from_slice(&to_json(&agg, &links)) {
        Ok(v) => v,
        Err(e) => panic!("our JSON TimeMap does not parse: {e}"),
    };
    let list = json["mementos"]["list"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(list.len(), want.len(), "JSON list length");
    for (j, &(uri, dt)) in list.iter().zip(&want) {
        assert_eq!(j["uri"].as_str(), Some(uri), "JSON uri");
        assert_eq!(
            j["datetime"].as_str(),
            Some(format_rfc3339(dt).as_str()),
            "JSON datetime"
        );
    }

    let cdxj = to_cdxj(&agg, &links);
    let rows: Vec<&str> = cdxj.lines().filter(|l| !l.starts_with('!')).collect();
    assert_eq!(rows.len(), want.len(), "CDXJ lines:\n{cdxj}");
    for (row, &(uri, dt)) in rows.iter().zip(&want) {
        let (ts, json) = row.split_once(' ').unwrap_or((row, ""));
        assert_eq!(parse_14digit(ts), Some(dt), "CDXJ timestamp {ts:?}");
        let v: serde_json::Value = match serde_json::from_str(json) {
            Ok(v) => v,
            Err(e) => panic!("CDXJ line {row:?} is not JSON: {e}"),
        };
        assert_eq!(v["uri"].as_str(), Some(uri), "CDXJ uri");
    }
}

/// The Wayback index line parser on each line of `data`, the CDX API answer parsers on the whole
/// of it in both dialects, and the index reader (gzip or plain) on the bytes:
/// - every field of a parsed line is a piece of that line, the key has no separator, the timestamp
///   is 4–14 digits;
/// - CDX rows written back as each dialect's JSON read back identical;
/// - the reader yields at most the bytes it was given when they are not gzip.
pub fn cdx_line(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    for line in text.split('\n') {
        if let Ok(parsed) = index::parse_line(line) {
            check_index_line(line, &parsed);
        }
    }

    for dialect in [Dialect::Ia, Dialect::Pywb] {
        if let Ok(rows) = cdx::parse_rows(dialect, &text) {
            if dialect == Dialect::Pywb {
                let lines = text.lines().filter(|l| !l.trim().is_empty()).count();
                assert_eq!(rows.len(), lines, "one pywb row per non-blank line");
            }
            let again = cdx::parse_rows(Dialect::Ia, &ia_json(&rows));
            assert_eq!(again.as_ref(), Ok(&rows), "IA JSON round trip");
            let again = cdx::parse_rows(Dialect::Pywb, &pywb_json(&rows));
            assert_eq!(again.as_ref(), Ok(&rows), "pywb JSON round trip");
        }
        let _ = cdx::parse_num_pages(dialect, &text);
    }
    let detected = cdx::detect_dialect(&text);
    let t = text.trim_start();
    assert_eq!(detected == Some(Dialect::Ia), t.starts_with('['));
    assert_eq!(detected == Some(Dialect::Pywb), t.starts_with('{'));

    // The reader an HTTP body goes through: gzip by magic bytes, plain otherwise. Bounded, so
    // that a small gzip bomb costs the fuzzer time, not memory.
    if let Ok(reader) = index::from_bytes(BufReader::new(std::io::Cursor::new(data.to_vec()))) {
        let mut out = Vec::new();
        let read = reader.take(1 << 20).read_to_end(&mut out);
        if !data.starts_with(&[0x1f, 0x8b]) {
            assert!(read.is_ok(), "reading plain bytes failed");
            let want = &data[..data.len().min(1 << 20)];
            assert_eq!(out, want, "plain bytes changed on the way");
        }
        for line in out.split(|&b| b == b'\n') {
            if let Ok(line) = std::str::from_utf8(line) {
                if let Ok(parsed) = index::parse_line(line) {
                    check_index_line(line, &parsed);
                }
            }
        }
    }
    // The line-at-a-time path the offline pipeline uses.
    let mut lines = BufReader::new(data).lines();
    while let Some(Ok(line)) = lines.next() {
        if let Ok(parsed) = index::parse_line(&line) {
            check_index_line(&line, &parsed);
        }
    }
}

fn check_index_line(line: &str, parsed: &IndexLine<'_>) {
    let within = |field: &str| {
        let (start, end) = (line.as_ptr() as usize, line.as_ptr() as usize + line.len());
        let at = field.as_ptr() as usize;
        start <= at && at + field.len() <= end
    };
    assert!(!parsed.key.is_empty(), "empty key in {line:?}");
    // The separators only: a stray CR inside a line is data to the index format (only a
    // trailing one is a line end).
    assert!(
        !parsed.key.contains([' ', '\t', '\n']),
        "key {:?} holds a field separator",
        parsed.key
    );
    assert!(within(parsed.key), "key is not from the line");
    let ts = parsed.timestamp.unwrap_or_default();
    assert!(
        (4..=14).contains(&ts.len()) && ts.bytes().all(|b| b.is_ascii_digit()),
        "timestamp {ts:?}"
    );
    assert!(within(ts), "timestamp is not from the line");
    for field in [parsed.original, parsed.mime, parsed.status, parsed.digest]
        .into_iter()
        .flatten()
    {
        assert!(within(field), "field {field:?} is not from the line");
    }
}

fn row_fields(r: &CdxRow) -> [&str; 6] {
    [
        &r.urlkey,
        &r.timestamp,
        &r.original,
        &r.mime,
        &r.status,
        &r.digest,
    ]
}

/// Rows as IA's `output=json` writes them: a header row, then arrays.
fn ia_json(rows: &[CdxRow]) -> String {
    let header = [
        "urlkey",
        "timestamp",
        "original",
        "mimetype",
        "statuscode",
        "digest",
    ];
    let mut all: Vec<[&str; 6]> = vec![header];
    all.extend(rows.iter().map(row_fields));
    serde_json::to_string(&all).unwrap_or_default()
}

/// Rows as pywb's `output=json` writes them: one object per line.
fn pywb_json(rows: &[CdxRow]) -> String {
    let mut out = String::new();
    for r in rows {
        let [urlkey, timestamp, url, mime, status, digest] = row_fields(r);
        let v = serde_json::json!({
            "urlkey": urlkey, "timestamp": timestamp, "url": url,
            "mime": mime, "status": status, "digest": digest,
        });
        out.push_str(&v.to_string());
        out.push('\n');
    }
    out
}

/// SURT keys to URLs and hosts back to SURT host keys, on each line of `data`:
/// - a key [`surt::to_url`] accepts gives an `https` URL that the `url` crate parses, whose host
///   [`surt::url_host`] finds again;
/// - the host keyed by IA's rule ([`surt::host_key`]) parses back to that host minus its `www`;
/// - our `www` stripping removes no more than IA's, and a collision is reported exactly when the
///   two differ;
/// - the cache's [`canonical_key`] takes any text without a panic, and gives the URL a key
///   that its `http://` spelling (no port given) and its host in capitals share.
pub fn surt(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let _ = canonical_key(&text);
    for key in text.split('\n') {
        let _ = canonical_key(key);
        surt_key(key);
    }
}

fn surt_key(key: &str) {
    let Ok(parts) = surt::parse(key) else {
        assert!(
            surt::to_url(key).is_err(),
            "to_url accepts what parse refuses"
        );
        return;
    };
    let url = match surt::to_url(key) {
        Ok(u) => u,
        Err(e) => panic!("parse accepts {key:?} but to_url refuses it: {e:?}"),
    };
    assert!(url.starts_with("https://"), "{url:?}");
    if let Err(e) = url::Url::parse(&url) {
        panic!("SURT {key:?} gave {url:?}, which is not a URL: {e}");
    }
    assert_eq!(
        surt::url_host(&url),
        Some(parts.host.to_ascii_lowercase()),
        "host of {url:?}"
    );
    let cache_key = canonical_key(&url);
    assert!(cache_key.is_some(), "no cache key for {url:?}");
    if parts.port.is_none() {
        let http = url.replacen("https://", "http://", 1);
        assert_eq!(canonical_key(&http), cache_key, "{http:?} vs {url:?}");
    }
    let after_host = &url["https://".len() + parts.host.len()..];
    let upper = format!("HTTPS://{}{after_host}", parts.host.to_ascii_uppercase());
    assert_eq!(canonical_key(&upper), cache_key, "{upper:?} vs {url:?}");

    let host = parts.host.as_str();
    let ours = surt::strip_www(host);
    let ia = surt::ia_strip_www(host);
    assert!(
        host.ends_with(ours) && ours.ends_with(ia),
        "{host:?}: {ours:?} {ia:?}"
    );
    assert_eq!(
        surt::www_collision(ia, host).is_some(),
        ours != ia,
        "collision of {host:?}"
    );
    // Keying is only reversible for a host made of labels: `www.` or `a..b` key to an empty
    // label, which parse rightly refuses.
    if ia.is_empty() || ia.split('.').any(str::is_empty) {
        return;
    }
    let back = format!("{})/", surt::host_key(host));
    match surt::parse(&back) {
        Ok(p) => assert_eq!(p.host, ia, "host key {back:?} of {host:?}"),
        Err(e) => panic!("host key {back:?} of {host:?} does not parse: {e:?}"),
    }
}

/// The datetime parsers on `data` as text, each checked against its formatter:
/// - RFC 1123: what parses formats to the canonical form, which parses to the same instant, and
///   the canonical fast path agrees with the tolerant general one;
/// - 14-digit: what parses formats back to the input padded with the earliest values, and the
///   `/memento/{datetime}/…` path splitter agrees with it;
/// - every parsed instant formats as RFC 3339 that chrono reads back to the same instant;
/// - config durations and sizes re-read what their formatters write.
pub fn datetime(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let s = text.as_ref();

    let rfc1123 = parse_rfc1123(s);
    // One leading space forces the general path (the fast path wants exactly 29 bytes, letter
    // first); the general path trims it, so both must agree.
    assert_eq!(
        parse_rfc1123(&format!(" {s}")),
        rfc1123,
        "fast and general RFC 1123 paths disagree on {s:?}"
    );
    if let Some(dt) = rfc1123 {
        check_instant(dt);
        let canonical = format_rfc1123(dt);
        assert_eq!(canonical.len(), 29, "{canonical:?}");
        assert_eq!(parse_rfc1123(&canonical), Some(dt), "{canonical:?}");
    }

    let fourteen = parse_14digit(s);
    if let Some(dt) = fourteen {
        check_instant(dt);
        let mut padded = format!("{s}{}", &"0101000000"[s.len() - 4..]);
        // A leap second is folded into :59, on purpose.
        if padded.ends_with("60") {
            padded.replace_range(12.., "59");
        }
        assert_eq!(format_14digit(dt), padded, "14-digit {s:?}");
    }
    match split_path_datetime(s) {
        Ok((dt, rest)) => {
            let (head, tail) = s.split_once('/').unwrap_or((s, ""));
            assert_eq!(Some(dt), parse_14digit(head), "path datetime {s:?}");
            assert_eq!(rest, tail);
        }
        Err(_) => {
            let head = s.split_once('/').map_or(s, |(h, _)| h);
            assert_eq!(parse_14digit(head), None, "path splitter refused {s:?}");
        }
    }

    if let Ok(d) = parse_duration(s) {
        let written = format_duration(d);
        assert_eq!(
            parse_duration(&written),
            Ok(d),
            "duration {s:?} → {written:?}"
        );
    }
    if let Ok(n) = parse_size(s) {
        let written = format_size(n);
        assert_eq!(parse_size(&written), Ok(n), "size {s:?} → {written:?}");
    }
}

/// What any parsed Memento-Datetime must be: a real second of a four-digit year, whose 14-digit
/// and RFC 3339 forms read back to it.
fn check_instant(dt: MementoDatetime) {
    assert!((0..=9999).contains(&dt.year()), "year {}", dt.year());
    assert!(dt.second() <= 59 && dt.nanosecond() == 0, "{dt:?}");
    assert_eq!(parse_14digit(&format_14digit(dt)), Some(dt));
    let rfc3339 = format_rfc3339(dt);
    match DateTime::parse_from_rfc3339(&rfc3339) {
        Ok(back) => assert_eq!(back.with_timezone(&Utc), dt, "{rfc3339:?}"),
        Err(e) => panic!("our RFC 3339 {rfc3339:?} does not parse: {e}"),
    }
}
