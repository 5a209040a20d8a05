//! Writing one format's rendering: rendered in pieces straight into a temporary file and,
//! through zstd, gzip and brotli, into three more, hashed as it goes (the ETag, and each file's
//! CRC-32 and length), then renamed to names that say the ETag. A crash leaves only `tmp-` files,
//! which the next start removes with the rest.

use super::head::{Rendering, RenderingFile, Renders};
use crate::timemap::serialize::TimeMapFormat;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use tmproxy_core::content_hash::ContentHash;
use tmproxy_disk::Checksummed;

/// The brotli quality and window of the stored br copy. On a million mementos (BENCHMARKS.md)
/// quality 1 adds about 0.55 s to the whole pass (1.5 s before) and codes the 122 MB link body
/// to 3.3 MB; quality 2 codes it to 2.4 MB, the bytes quality 5 made on the way, but adds about
/// 0.95 s. Either is half gzip's 6.7 MB or less, so the cheaper one. A 1 MiB window (lgwin 20)
/// codes as small as the 4 MiB default and needs less memory, held while the first answer's
/// peak is.
const BR_QUALITY: u32 = 1;
const BR_LGWIN: u32 = 20;

/// The files of one format, in this order, and their extensions.
const EXTS: [&str; 4] = ["txt", "zst", "gz", "br"];

/// Each file counted and checksummed as written (what reading it back must find), keeping its
/// first failure: brotli's writer swallows the error of the stream's last write (`into_inner`),
/// which must not leave a cut-short br file that checks out.
type Sink = Checksummed<BufWriter<File>>;

/// The body as it is, zstd-, gzip- and br-coded, from one rendering pass, so every coding a
/// client may ask for is sent as stored. gzip is there for clients that take nothing better
/// (Python's `requests`, Safari); br for those that take br and not zstd: coding 122 MB on the
/// way took 0.5-0.65 s a hit for gzip and 1.1-2.1 s for br (BENCHMARKS.md).
struct Tee {
    plain: Sink,
    zstd: zstd::stream::Encoder<'static, Sink>,
    gzip: flate2::write::GzEncoder<Sink>,
    // Boxed: its state is kilobytes, the others' a few pointers.
    br: Box<brotli::CompressorWriter<Sink>>,
    etag: ContentHash,
}

impl Write for Tee {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.plain.write_all(buf)?;
        self.zstd.write_all(buf)?;
        self.gzip.write_all(buf)?;
        self.br.write_all(buf)?;
        self.etag.update(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.plain.flush()?;
        self.zstd.flush()?;
        self.gzip.flush()?;
        self.br.flush()
    }
}

/// Writes `view`'s whole TimeMap in `format` as `<stem>-<format>-<etag>.txt`, `.zst`, `.gz` and
/// `.br` in `dir`. A body the view rendered already (a miss's) is copied rather than rendered
/// again. On any failure no file of it is left.
pub fn render<V: Renders>(
    dir: &Path,
    stem: &str,
    view: &V,
    format: TimeMapFormat,
) -> io::Result<Rendering<V>> {
    let segment = format.segment();
    let tmps = EXTS.map(|ext| dir.join(format!("tmp-{stem}-{segment}.{ext}")));
    let (written, etag) = match write_all(&tmps, view, format) {
        Ok(w) => w,
        Err(e) => {
            for t in &tmps {
                let _ = std::fs::remove_file(t);
            }
            return Err(e);
        }
    };
    let hex = etag.value();
    // Renamed here, not through `tmproxy_disk::AtomicFile`: the names say the ETag, known only
    // once the body is written, and nothing is synced (the directory is emptied at each start).
    let mut done: Vec<RenderingFile> = Vec::with_capacity(EXTS.len());
    for ((tmp, mut file), ext) in tmps.iter().zip(written).zip(EXTS) {
        let path = dir.join(format!("{stem}-{segment}-{hex:016x}.{ext}"));
        if let Err(e) = std::fs::rename(tmp, &path) {
            done.iter().for_each(RenderingFile::remove);
            for t in &tmps[done.len()..] {
                let _ = std::fs::remove_file(t);
            }
            return Err(e);
        }
        file.path = path;
        done.push(file);
    }
    let [plain, zstd, gzip, br] = <[RenderingFile; 4]>::try_from(done)
        .map_err(|_| io::Error::other("a rendering's files went missing"))?;
    Ok(Rendering {
        etag: etag.etag(),
        headers: view.headers(format),
        plain,
        zstd,
        gzip,
        br,
    })
}

/// The files at `paths` (plain, zstd, gzip, br: [`EXTS`]) and the body's ETag.
fn write_all<V: Renders>(
    paths: &[PathBuf; 4],
    view: &V,
    format: TimeMapFormat,
) -> io::Result<([RenderingFile; 4], ContentHash)> {
    let open = |p: &Path| -> io::Result<Sink> {
        Ok(Checksummed::new(BufWriter::with_capacity(
            256 * 1024,
            File::create(p)?,
        )))
    };
    let [plain_path, zstd_path, gzip_path, br_path] = paths;
    let mut tee = Tee {
        plain: open(plain_path)?,
        zstd: zstd::stream::Encoder::new(open(zstd_path)?, 3)?,
        // The fast level: written once a revision, in the background, for millions of mementos.
        gzip: flate2::write::GzEncoder::new(open(gzip_path)?, flate2::Compression::fast()),
        br: Box::new(brotli::CompressorWriter::new(
            open(br_path)?,
            64 * 1024,
            BR_QUALITY,
            BR_LGWIN,
        )),
        etag: ContentHash::default(),
    };
    view.write_body(format, &mut tee)?;
    let Tee {
        plain,
        zstd,
        gzip,
        mut br,
        etag,
    } = tee;
    let file = |c: Sink, path: &Path| -> io::Result<RenderingFile> {
        let (inner, crc, len) = c.finish()?;
        inner.into_inner().map_err(|e| e.into_error())?;
        Ok(RenderingFile {
            path: path.to_owned(),
            len,
            crc,
        })
    };
    let plain = file(plain, plain_path)?;
    let zstd = file(zstd.finish()?, zstd_path)?;
    let gzip = file(gzip.finish()?, gzip_path)?;
    // Flushed first so an error shows; the stream's end is then a few bytes, and `file`
    // sees whether writing them failed.
    br.flush()?;
    let br = file(br.into_inner(), br_path)?;
    Ok(([plain, zstd, gzip, br], etag))
}
