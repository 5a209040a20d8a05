//! A writer that counts and checksums (CRC-32) what passes through it to another writer, so a
//! stored thing's checksum needs no copy of its bytes. It keeps its first failure too: brotli's
//! writer swallows the error of its stream's last write (`into_inner`), and a file cut short
//! by a full disk must not check out.

use std::io::{self, Write};

/// Forwards to `inner`, summing what `inner` took.
pub struct Checksummed<W> {
    inner: W,
    crc: crc32fast::Hasher,
    len: u64,
    failed: Option<io::Error>,
}

impl<W> Checksummed<W> {
    pub fn new(inner: W) -> Checksummed<W> {
        Checksummed {
            inner,
            crc: crc32fast::Hasher::new(),
            len: 0,
            failed: None,
        }
    }

    /// The writer, the CRC-32 and the length of what it took; Err with the first write that
    /// failed, even one whose error a wrapping writer dropped.
    pub fn finish(self) -> io::Result<(W, u32, u64)> {
        match self.failed {
            Some(e) => Err(e),
            None => Ok((self.inner, self.crc.finalize(), self.len)),
        }
    }
}

impl<W: Write> Write for Checksummed<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf).inspect_err(|e| {
            self.failed
                .get_or_insert_with(|| io::Error::new(e.kind(), e.to_string()));
        })?;
        // Only what the inner writer took: a short write is summed as short.
        let taken = buf.get(..n).unwrap_or(buf);
        self.len += taken.len() as u64;
        self.crc.update(taken);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Takes four bytes, then fails.
    struct Full(usize);

    impl Write for Full {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            if self.0 >= 4 {
                return Err(io::Error::new(io::ErrorKind::StorageFull, "full"));
            }
            let n = buf.len().min(4 - self.0);
            self.0 += n;
            Ok(n)
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn sums_what_passes() {
        let mut w = Checksummed::new(Vec::new());
        w.write_all(b"hello ").expect("write");
        w.write_all(b"world").expect("write");
        let (inner, crc, len) = w.finish().expect("no failure");
        assert_eq!(inner, b"hello world");
        assert_eq!((crc, len), (crc32fast::hash(b"hello world"), 11));
    }

    #[test]
    fn keeps_the_first_failure_even_when_its_error_is_dropped() {
        let mut full = Checksummed::new(Full(0));
        // Dropped, as brotli's `into_inner` drops it: `finish` still says.
        let _ = full.write_all(b"too long");
        let why = full.finish().err().map(|e| e.kind());
        assert_eq!(why, Some(io::ErrorKind::StorageFull));
    }
}
