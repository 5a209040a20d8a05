//! Writing one format's rendering: rendered in pieces straight into a temporary file and,
//! through zstd and gzip, into two more, hashed as it goes (the ETag, and each file's CRC-32
//! and length), then renamed to names that say the ETag. A crash leaves only `tmp-` files, which the
//! next start removes with the rest.

use super::Rendering;
use crate::http::view::{Fnv, View};
use crate::timemap::serialize::TimeMapFormat;
use axum::http::HeaderValue;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

/// A file written by [`render`]: what reading it back must find.
#[derive(Debug, Clone)]
pub struct SpilledFile {
    pub path: PathBuf,
    pub len: u64,
    pub crc: u32,
}

impl SpilledFile {
    /// Removes the file; one already gone is no error.
    pub fn remove(&self) {
        if let Err(e) = std::fs::remove_file(&self.path) {
            if e.kind() != io::ErrorKind::NotFound {
                tracing::warn!(path = %self.path.display(), error = %e, "cannot remove a rendering");
            }
        }
    }
}

/// A writer that counts and checksums what passes through it.
struct Checked<W> {
    inner: W,
    len: u64,
    crc: crc32fast::Hasher,
}

impl<W: Write> Checked<W> {
    fn new(inner: W) -> Self {
        Checked {
            inner,
            len: 0,
            crc: crc32fast::Hasher::new(),
        }
    }
}

impl<W: Write> Write for Checked<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.len += n as u64;
        self.crc.update(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// The body as it is, zstd-coded and gzip-coded, from one rendering pass. gzip is stored too
/// because clients that take nothing better are common (Python's `requests`, Safari), and
/// coding 122 MB on the way took 0.5-0.65 s a hit (BENCHMARKS.md); br is left to be coded on
/// the way, for the few clients that prefer it to both.
struct Tee {
    plain: Checked<BufWriter<File>>,
    zstd: zstd::stream::Encoder<'static, Checked<BufWriter<File>>>,
    gzip: flate2::write::GzEncoder<Checked<BufWriter<File>>>,
    etag: Fnv,
}

impl Write for Tee {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.plain.write_all(buf)?;
        self.zstd.write_all(buf)?;
        self.gzip.write_all(buf)?;
        self.etag.update(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.plain.flush()?;
        self.zstd.flush()?;
        self.gzip.flush()
    }
}

/// Writes `view`'s whole TimeMap in `format` as `<stem>-<format>-<etag>.txt`, `.zst` and `.gz`
/// in `dir`. A body the view rendered already (a miss's) is copied rather than rendered again.
pub fn render(dir: &Path, stem: &str, view: &View, format: TimeMapFormat) -> io::Result<Rendering> {
    let segment = format.segment();
    let tmp = |ext: &str| dir.join(format!("tmp-{stem}-{segment}.{ext}"));
    let tmps = [tmp("txt"), tmp("zst"), tmp("gz")];
    let (plain, zstd, gzip, etag) = match write_all(&tmps, view, format) {
        Ok(w) => w,
        Err(e) => {
            for t in &tmps {
                let _ = std::fs::remove_file(t);
            }
            return Err(e);
        }
    };
    let hex = etag.value();
    let done = |tmp: &Path, mut file: SpilledFile, ext: &str| -> io::Result<SpilledFile> {
        let path = dir.join(format!("{stem}-{segment}-{hex:016x}.{ext}"));
        std::fs::rename(tmp, &path).inspect_err(|_| {
            let _ = std::fs::remove_file(tmp);
        })?;
        file.path = path;
        Ok(file)
    };
    let plain = done(&tmps[0], plain, "txt")?;
    let zstd = match done(&tmps[1], zstd, "zst") {
        Ok(z) => z,
        Err(e) => {
            plain.remove();
            let _ = std::fs::remove_file(&tmps[2]);
            return Err(e);
        }
    };
    let gzip = match done(&tmps[2], gzip, "gz") {
        Ok(g) => g,
        Err(e) => {
            plain.remove();
            zstd.remove();
            return Err(e);
        }
    };
    let etag = etag.etag();
    Ok(Rendering {
        etag_header: HeaderValue::from_str(&etag).ok(),
        etag,
        link_header: view.link_header(format),
        plain,
        zstd,
        gzip,
    })
}

/// The three files at `paths` (plain, zstd, gzip) and the body's ETag.
fn write_all(
    paths: &[PathBuf; 3],
    view: &View,
    format: TimeMapFormat,
) -> io::Result<(SpilledFile, SpilledFile, SpilledFile, Fnv)> {
    let open = |p: &Path| -> io::Result<_> {
        Ok(Checked::new(BufWriter::with_capacity(
            256 * 1024,
            File::create(p)?,
        )))
    };
    let [plain_path, zstd_path, gzip_path] = paths;
    let mut tee = Tee {
        plain: open(plain_path)?,
        zstd: zstd::stream::Encoder::new(open(zstd_path)?, 3)?,
        // The fast level: written once a revision, in the background, for millions of mementos.
        gzip: flate2::write::GzEncoder::new(open(gzip_path)?, flate2::Compression::fast()),
        etag: Fnv::default(),
    };
    match view.rendered_ready(format) {
        Some(r) => tee.write_all(&r.body)?,
        None => format.render_to(&view.aggregate, view.links(), &mut tee)?,
    }
    let Tee {
        plain,
        zstd,
        gzip,
        etag,
    } = tee;
    let file = |c: Checked<BufWriter<File>>, path: &Path| -> io::Result<SpilledFile> {
        let (len, crc) = (c.len, c.crc.finalize());
        c.inner.into_inner().map_err(|e| e.into_error())?;
        Ok(SpilledFile {
            path: path.to_owned(),
            len,
            crc,
        })
    };
    let plain = file(plain, plain_path)?;
    let zstd = file(zstd.finish()?, zstd_path)?;
    let gzip = file(gzip.finish()?, gzip_path)?;
    Ok((plain, zstd, gzip, etag))
}
