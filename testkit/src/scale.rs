//! SYNTHETIC data for the sampling benchmark at scale (`benches/sampling_scale.sh`): a ZipNum
//! index of any number of lines in SURT order, and the answers of a fake CDX API that knows every
//! URL at once. Nothing here describes the real Wayback index or the real CDX API's contents:
//! the mix (Zipf-ish URLs per host, years 1996–2021, traps) is made up, and deterministic, so
//! two runs over the same files give the same sample.
//!
//! The index: TLDs in SURT order (`com`, `de`, `net`, `org`, `uk,co`); within each, hosts
//! `h000000000`, `h000000001`… (fixed width, so numeric order is SURT order) with a Pareto
//! number of URLs each (α = 1, at most 200,000), a popular domain (`com,twitter)`, 1% of the
//! lines) after the `com,h…` hosts; per host a root line for most, a wildcard (`)/*`) or an
//! `index.html` for some, then pages `p{j:08}` with an extension mix (HTML, no extension,
//! images, scripts, session ids); a fifth of the keys repeat (more captures); a few invalid keys
//! first. The fake CDX answers are a function of the URL's hash: 6% not archived, 1% blocked,
//! 12% not HTML, first captures spread over 1996–2021, TimeMaps of 1–20 rows on one page
//! (two pages for one URL in fifty).

use std::fmt::Write as _;
use std::io::{self, Write};

/// FNV-1a then SplitMix64's finaliser: a stable hash (not Rust's, which may change).
pub fn hash(s: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    mix(h)
}

fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

const TLDS: [(&str, u64); 5] = [
    ("com", 50),
    ("de", 10),
    ("net", 15),
    ("org", 15),
    ("uk,co", 10),
];

/// Page extensions, by weight out of 100.
const EXTS: [(&str, u64); 9] = [
    (".html", 30),
    ("/", 20),
    (".php", 10),
    (".jpg", 15),
    (".js", 8),
    (".css", 5),
    (".php?phpsessid=0123456789abcdef0123456789abcdef", 3),
    (".asp?id=7", 5),
    (".pdf", 4),
];

fn pick<'a>(table: &[(&'a str, u64)], x: u64) -> &'a str {
    let total: u64 = table.iter().map(|t| t.1).sum();
    let mut r = x % total;
    for (s, w) in table {
        if r < *w {
            return s;
        }
        r -= w;
    }
    table[0].0
}

/// URLs of host `id` of `tld`: Pareto (α = 1, a Zipf-like tail), 1 to 200,000.
pub fn host_size(tld: &str, id: u64) -> u64 {
    let u = ((mix(hash(tld) ^ id) >> 11) as f64 + 1.0) / (1u64 << 53) as f64;
    (u.powf(-1.0) as u64).clamp(1, 200_000)
}

/// Writes the index's lines, stopping at `lines`: IA's layout `SURT timestamp part offset
/// length`. Returns the number of lines written.
pub struct ScaleIndex<W: Write> {
    out: W,
    left: u64,
    written: u64,
    line: String,
}

impl<W: Write> ScaleIndex<W> {
    fn emit(&mut self, key: &str, x: u64) -> io::Result<bool> {
        let copies = if x.is_multiple_of(5) { 1 + x % 3 } else { 1 };
        let year = 1996 + (x >> 8) % 26;
        for c in 0..copies {
            if self.left == 0 {
                return Ok(false);
            }
            self.line.clear();
            let _ = writeln!(
                self.line,
                "{key} {year}{:02}01000000 part-{:05} {} 3000",
                1 + c,
                self.written / 3_000_000,
                self.written * 2_000
            );
            self.out.write_all(self.line.as_bytes())?;
            self.left -= 1;
            self.written += 1;
        }
        Ok(self.left > 0)
    }

    /// One host's lines; false once the index is full.
    fn host(&mut self, host: &str, n: u64) -> io::Result<bool> {
        let h = hash(host);
        if (h >> 40) % 10 < 8 && !self.emit(&format!("{host})/"), h)? {
            return Ok(false);
        }
        if (h >> 20) % 200 == 1 && !self.emit(&format!("{host})/*"), h >> 3)? {
            return Ok(false);
        }
        if (h >> 30) % 20 == 2 && !self.emit(&format!("{host})/index.html"), h >> 5)? {
            return Ok(false);
        }
        let mut key = String::with_capacity(96);
        for j in 0..n {
            let x = mix(h ^ j.wrapping_mul(0x9e37_79b9_7f4a_7c15));
            key.clear();
            let _ = write!(key, "{host})/p{j:08}{}", pick(&EXTS, x >> 20));
            if !self.emit(&key, x)? {
                return Ok(false);
            }
        }
        Ok(true)
    }
}

/// Writes `lines` SYNTHETIC index lines in SURT order to `out`.
pub fn write_scale_zipnum<W: Write>(lines: u64, out: W) -> io::Result<u64> {
    let mut idx = ScaleIndex {
        out,
        left: lines,
        written: 0,
        line: String::with_capacity(160),
    };
    // Invalid keys sort first (`)` is below every letter): no host, a bad port.
    for (i, key) in [")/?dn=x", ")/nohost.html", "com,bad:99999)/"]
        .iter()
        .enumerate()
    {
        if !idx.emit(key, i as u64 + 1)? {
            return finish(idx);
        }
    }
    let total: u64 = TLDS.iter().map(|t| t.1).sum();
    let mut id = 0u64;
    for (tld, weight) in TLDS {
        let budget = lines * weight / total;
        let stop = idx.written + budget;
        while idx.written < stop && idx.left > 0 {
            let host = format!("{tld},h{id:09}");
            if !idx.host(&host, host_size(tld, id))? {
                return finish(idx);
            }
            id += 1;
        }
        if tld == "com" && !idx.host("com,twitter", lines / 100)? {
            return finish(idx);
        }
    }
    // What the budgets' rounding left: one more host per line short.
    while idx.left > 0 {
        let host = format!("uk,co,z{id:09}");
        if !idx.host(&host, 1)? {
            break;
        }
        id += 1;
    }
    finish(idx)
}

fn finish<W: Write>(mut idx: ScaleIndex<W>) -> io::Result<u64> {
    idx.out.flush()?;
    Ok(idx.written)
}

/// The fake CDX API's answer (IA's dialect) to a query given as its decoded parameters: a
/// status and a body, at once, from the URL's hash alone.
pub fn cdx_answer(params: &[(String, String)]) -> (u16, String) {
    let get = |k: &str| params.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
    let Some(url) = get("url") else {
        return (400, "url is required".into());
    };
    let h = hash(url);
    if get("showNumPages") == Some("true") {
        return (
            200,
            format!("{}\n", if h.is_multiple_of(50) { 2 } else { 1 }),
        );
    }
    match h % 100 {
        0..=5 => return (200, "[]".into()),
        6 => return (403, "Blocked Site Error".into()),
        _ => {}
    }
    let mime = match h % 100 {
        7..=12 => "image/jpeg",
        13..=18 => "application/pdf",
        _ => "text/html",
    };
    let year = 1996 + (h >> 8) % 26;
    let header = r#"[["urlkey","timestamp","original","mimetype","statuscode","digest","length"]"#;
    let mut body = String::from(header);
    let row = |body: &mut String, k: u64| {
        let _ = write!(
            body,
            r#",["k","{}{:02}{:02}000000","{}","{mime}","200","D{}","1"]"#,
            year + k / 12,
            1 + k % 12,
            1 + (h >> 16) % 28,
            url.replace('\\', "\\\\").replace('"', "\\\""),
            (h >> (k % 32)) % 4
        );
    };
    if get("limit") == Some("1") {
        row(&mut body, 0);
    } else {
        let page: u64 = get("page").and_then(|p| p.parse().ok()).unwrap_or(0);
        let n = 1 + (h >> 24) % 20;
        for k in page * n..(page + 1) * n {
            row(&mut body, k);
        }
    }
    body.push(']');
    (200, body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tmproxy::sampling::offline::Offline;

    fn q(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn the_index_is_in_surt_order_exactly_as_long_as_asked_and_parses() {
        let mut bytes = Vec::new();
        let n = write_scale_zipnum(200_000, &mut bytes).expect("write to a Vec");
        assert_eq!(n, 200_000);
        let text = String::from_utf8(bytes).expect("ASCII");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 200_000);
        let keys: Vec<&str> = lines
            .iter()
            .map(|l| l.split(' ').next().unwrap_or(""))
            .collect();
        for w in keys.windows(2) {
            assert!(w[0] <= w[1], "out of SURT order: {} then {}", w[0], w[1]);
        }
        let mut o = Offline::new(&["twitter.com".to_string()]);
        let (mut kept, mut aside) = (0u64, 0u64);
        for l in &lines {
            o.push_line(l, &mut |_| kept += 1, &mut |_| aside += 1);
        }
        let funnel = o.funnel();
        let read = funnel.iter().find(|r| r.stage == "read").expect("read row");
        assert_eq!((read.counters.input, read.counters.errors), (200_000, 0));
        assert!(
            kept > 50_000 && aside > 10_000,
            "{kept} kept, {aside} aside"
        );
        // Deterministic: the same lines again.
        let mut again = Vec::new();
        write_scale_zipnum(200_000, &mut again).expect("again");
        assert_eq!(again, text.as_bytes());
    }

    #[test]
    fn the_fake_cdx_answers_are_deterministic_and_parse() {
        use tmproxy::sampling::cdx::{parse_num_pages, parse_rows, Dialect};
        let (mut found, mut empty, mut blocked) = (0, 0, 0);
        for i in 0..2_000 {
            let url = format!("https://h{i}.com/p{i}.html");
            let first = q(&[("url", &url), ("limit", "1"), ("output", "json")]);
            let a = cdx_answer(&first);
            assert_eq!(a, cdx_answer(&first), "the same answer twice");
            match a.0 {
                403 => blocked += 1,
                200 => match parse_rows(Dialect::Ia, &a.1).expect("IA rows").len() {
                    0 => empty += 1,
                    1 => found += 1,
                    n => panic!("{n} rows for a first capture"),
                },
                s => panic!("status {s}"),
            }
            let pages = cdx_answer(&q(&[("url", &url), ("showNumPages", "true")]));
            let n = parse_num_pages(Dialect::Ia, &pages.1).expect("a page count");
            assert!(n == 1 || n == 2);
            if a.0 == 200 && found > 0 {
                let page = cdx_answer(&q(&[("url", &url), ("output", "json"), ("page", "0")]));
                assert!(!parse_rows(Dialect::Ia, &page.1).expect("rows").is_empty() || a.1 == "[]");
            }
        }
        assert!(
            found > 1_500 && empty > 50 && blocked > 5,
            "{found} {empty} {blocked}"
        );
    }
}
