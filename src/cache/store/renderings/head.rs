//! What a huge entry's renderings are: the [`Head`] kept in memory, each format's files on disk
//! ([`Rendering`], [`RenderingFile`]), and what the tier needs of a view ([`Renders`]). The tier,
//! the writer and the stream all build on these.

use crate::cache::cached::ServedView;
use crate::timemap::model::MementoDatetime;
use crate::timemap::serialize::TimeMapFormat;
use std::fmt;
use std::io;
use std::path::PathBuf;

/// What the tier needs of a view besides being one ([`ServedView`]): each format's whole body
/// written out, and what an answer from the files needs of the view (the serving layer's
/// headers), kept in the head. The serving layer's views implement it; the tier never looks
/// inside what it keeps.
pub trait Renders: ServedView {
    /// What answering one format from its files needs besides the body and its ETag (the
    /// routes: the content headers and the `Link` header), made once per revision.
    type Headers: Send + Sync + fmt::Debug + 'static;
    fn headers(&self, format: TimeMapFormat) -> Self::Headers;
    /// Writes the whole TimeMap in `format` to `out`: a body rendered already (a miss's) is
    /// copied rather than rendered again.
    fn write_body(&self, format: TimeMapFormat, out: &mut dyn io::Write) -> io::Result<()>;
}

/// What a hit on a huge entry needs besides its bodies: kept in memory, a few KiB.
#[derive(Debug)]
pub struct Head<V: Renders> {
    /// The revision its files belong to (one per replacement of the entry).
    pub rev: u64,
    /// The URI-R as stored: the bodies name it so.
    pub uri_r: String,
    pub checked_at: MementoDatetime,
    pub fresh_until: Option<MementoDatetime>,
    /// By [`TimeMapFormat::index`].
    pub formats: Box<[Rendering<V>]>,
}

/// One format's body on disk, as it is, zstd-, gzip- and br-coded, with its ETag and what its
/// answer's headers need ([`Renders::headers`]).
#[derive(Debug)]
pub struct Rendering<V: Renders> {
    pub etag: String,
    pub headers: V::Headers,
    pub plain: RenderingFile,
    pub zstd: RenderingFile,
    pub gzip: RenderingFile,
    pub br: RenderingFile,
}

impl<V: Renders> Rendering<V> {
    pub(super) fn files(&self) -> [&RenderingFile; 4] {
        [&self.plain, &self.zstd, &self.gzip, &self.br]
    }
}

impl<V: Renders> Head<V> {
    pub(super) fn files(&self) -> impl Iterator<Item = &RenderingFile> {
        self.formats.iter().flat_map(Rendering::<V>::files)
    }

    /// Bytes on disk: the head's weight against `renderings_capacity`.
    pub(super) fn bytes(&self) -> u64 {
        self.files().map(|f| f.len).sum()
    }

    pub(super) fn remove_files(&self) {
        for f in self.files() {
            f.remove();
        }
    }
}

/// A rendering's file as written: what reading it back must find.
#[derive(Debug, Clone)]
pub struct RenderingFile {
    pub path: PathBuf,
    pub len: u64,
    pub crc: u32,
}

impl RenderingFile {
    /// Removes the file; one already gone is no error.
    pub fn remove(&self) {
        if let Err(e) = std::fs::remove_file(&self.path) {
            if e.kind() != io::ErrorKind::NotFound {
                tracing::warn!(path = %self.path.display(), error = %e, "cannot remove a rendering");
            }
        }
    }
}
