//! `render_to` streams the same bytes as `render`, in bounded pieces, and stops at a writer's
//! error.

use super::*;
use crate::timemap::aggregate::Aggregate;
use crate::timemap::model::{Memento, TimeMap};
use chrono::{TimeZone, Utc};
use std::io;
use std::sync::Arc;

/// The one-archive aggregate of the format tests, with `n` mementos from two archives whose
/// URI-Ms hold characters each format escapes.
fn agg(n: usize) -> Aggregate {
    let mut a = super::tests::agg(&[]);
    a.uri_r = "http://e.com/a\"b".into();
    let mementos = (0..n)
        .filter_map(|i| {
            let archive = if i % 3 == 0 { "pt" } else { "ia" };
            Some(Memento {
                uri_m: format!("http://{archive}.example/web/{i}/http://e.com/a\"b>c d\u{7f}")
                    .into(),
                datetime: Utc.timestamp_opt(946_684_800 + i as i64 * 97, 0).single()?,
                archive: Arc::from(archive),
            })
        })
        .collect();
    a.timemap = Arc::new(TimeMap { mementos });
    a
}

/// Records every write, to show no piece is the whole body.
#[derive(Default)]
struct Pieces(Vec<Vec<u8>>);

impl io::Write for Pieces {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.push(buf.to_vec());
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Takes `left` bytes, then fails.
struct FailsAfter(usize);

impl io::Write for FailsAfter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.0 == 0 {
            return Err(io::Error::other("disk full"));
        }
        let n = buf.len().min(self.0);
        self.0 -= n;
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[test]
fn render_to_writes_what_render_returns_in_every_format() {
    let links = SelfLinks::new("http://proxy.test", "http://e.com/a\"b");
    for n in [0, 1, 2, 7, 3_000] {
        let a = agg(n);
        for paged in [links.clone(), links.clone().with_page_size(500)] {
            for format in TimeMapFormat::all() {
                let whole = format.render(&a, &paged);
                let mut pieces = Pieces::default();
                format.render_to(&a, &paged, &mut pieces).expect("writes");
                assert_eq!(pieces.0.concat(), whole, "{format:?}, {n} mementos");
            }
        }
    }
    // The String renderers are the same bytes.
    let a = agg(50);
    assert_eq!(
        to_link_format(&a, &links).into_bytes(),
        TimeMapFormat::LINK.render(&a, &links)
    );
    assert_eq!(
        to_cdxj(&a, &links).into_bytes(),
        TimeMapFormat::CDXJ.render(&a, &links)
    );
    assert_eq!(to_json(&a, &links), TimeMapFormat::JSON.render(&a, &links));
}

#[test]
fn a_big_timemap_is_written_in_bounded_pieces() {
    let a = agg(20_000);
    let links = SelfLinks::new("http://proxy.test", "http://e.com/");
    for format in TimeMapFormat::all() {
        let mut pieces = Pieces::default();
        format.render_to(&a, &links, &mut pieces).expect("writes");
        let total: usize = pieces.0.iter().map(Vec::len).sum();
        let largest = pieces.0.iter().map(Vec::len).max().unwrap_or(0);
        assert!(total > 10 * CHUNK, "{format:?}: {total} bytes");
        // A piece is at most a chunk plus the memento that crossed it.
        assert!(
            largest <= CHUNK + 4096,
            "{format:?}: a piece of {largest} bytes"
        );
    }
}

#[test]
fn a_writer_error_stops_the_rendering() {
    let a = agg(5_000);
    let links = SelfLinks::new("http://proxy.test", "http://e.com/");
    for format in TimeMapFormat::all() {
        let e = format.render_to(&a, &links, &mut FailsAfter(100_000));
        assert!(e.is_err(), "{format:?}");
    }
}
