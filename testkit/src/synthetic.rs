//! SYNTHETIC ZipNum index lines for benchmarks and tests: a made-up mix of deep pages, images and
//! scripts, duplicates, session ids, index files, invalid keys and a popular domain, sorted by
//! host as an index is. Nothing here describes the real Wayback index.

use std::io::{self, Write};

const EXTS: [&str; 10] = [
    "html", "php", "", "jpg", "js", "htm", "aspx", "gif", "css", "",
];

/// Writes `n` lines (plus the duplicates a real index has: one per extra capture) in IA's layout
/// `SURT timestamp part offset length`.
pub fn write_zipnum<W: Write>(n: usize, mut out: W) -> io::Result<u64> {
    let mut x: u64 = 0x1234_5678;
    let mut written = 0;
    let mut line = String::with_capacity(160);
    for i in 0..n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let host = i / 40;
        let ext = EXTS[(x % 10) as usize];
        let year = 1996 + (x >> 8) % 26;
        line.clear();
        use std::fmt::Write as _;
        let _ = match (x >> 16) % 50 {
            0 => write!(line, ")/?dn=x{i}"),
            1 => write!(
                line,
                "com,site{host})/p{i}.php?PHPSESSID=0123456789abcdef0123456789abcdef"
            ),
            2 => write!(line, "com,site{host})/index.html"),
            3 => write!(line, "com,twitter)/u{i}"),
            _ if ext.is_empty() => write!(line, "com,site{host})/dir{i}/page/"),
            _ => write!(line, "com,site{host})/dir/p{i}.{ext}?q={x}"),
        };
        let _ = writeln!(line, " {year}0101000000 part-00001 {i} 100");
        let copies = if x.is_multiple_of(7) { 2 } else { 1 };
        for _ in 0..copies {
            out.write_all(line.as_bytes())?;
            written += 1;
        }
    }
    out.flush()?;
    Ok(written)
}
