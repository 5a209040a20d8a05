//! Files replaced whole: written to a temporary file beside the target (same directory, so the
//! same file system), then renamed over it, so a reader, a killed process or a power cut finds
//! the old file or the new one, never half of one. With [`Durability::Synced`] the bytes are
//! fsynced before the rename and the directory after it, so the new file also survives a power
//! cut once [`AtomicFile::commit`] returns.
//!
//! The temporary file is `<name>.tmp` (or another suffix a format's docs name, such as a
//! TimeMap's `.part`), one fixed name per target, so a crash leaves at most one behind, which the
//! next write replaces. One not committed is removed when dropped.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

/// How far a replaced file must survive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// A power cut: the file fsynced, renamed, its directory fsynced. For state a restart
    /// needs (a job's record, the routing profiles, a checkpoint).
    Synced,
    /// A killed process, not a power cut (the kernel has the bytes): no fsync. For files
    /// rewritten every second or written by the thousand, where a sync each would cost more
    /// than losing the latest one does.
    Unsynced,
}

/// What an atomic write was doing when it failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    Create,
    Write,
    Sync,
    Rename,
}

/// An atomic write that failed: the target is as it was.
#[derive(Debug, thiserror::Error)]
#[error("cannot {} {}: {source}", step.verb(), path.display())]
pub struct WriteError {
    pub step: Step,
    /// The file being written: the temporary one, or for [`Step::Rename`] the target.
    pub path: PathBuf,
    #[source]
    pub source: io::Error,
}

impl Step {
    fn verb(self) -> &'static str {
        match self {
            Step::Create => "create",
            Step::Write => "write",
            Step::Sync => "sync",
            Step::Rename => "rename the new file to",
        }
    }
}

/// A file being written in place of `path`; nothing is replaced until [`AtomicFile::commit`].
pub struct AtomicFile {
    path: PathBuf,
    tmp: PathBuf,
    out: Option<BufWriter<File>>,
    durability: Durability,
}

impl AtomicFile {
    /// Starts replacing `path` through `<name>.tmp` beside it.
    pub fn create(path: &Path, durability: Durability) -> Result<AtomicFile, WriteError> {
        AtomicFile::create_with_suffix(path, ".tmp", durability)
    }

    /// Starts replacing `path` through `<name><suffix>` beside it.
    pub fn create_with_suffix(
        path: &Path,
        suffix: &str,
        durability: Durability,
    ) -> Result<AtomicFile, WriteError> {
        let tmp = temp_path(path, suffix).ok_or_else(|| WriteError {
            step: Step::Create,
            path: path.to_path_buf(),
            source: io::Error::new(io::ErrorKind::InvalidInput, "not a file name"),
        })?;
        let file = File::create(&tmp).map_err(|source| WriteError {
            step: Step::Create,
            path: tmp.clone(),
            source,
        })?;
        Ok(AtomicFile {
            path: path.to_path_buf(),
            tmp,
            out: Some(BufWriter::with_capacity(64 * 1024, file)),
            durability,
        })
    }

    /// The temporary file's path.
    pub fn temp_path(&self) -> &Path {
        &self.tmp
    }

    /// Flushes, syncs (when [`Durability::Synced`]) and renames the file over the target.
    pub fn commit(mut self) -> Result<(), WriteError> {
        let fail = |step, path: &Path| {
            let path = path.to_path_buf();
            move |source| WriteError { step, path, source }
        };
        let Some(out) = self.out.take() else {
            return Err(fail(Step::Write, &self.tmp)(io::Error::other(
                "already committed",
            )));
        };
        let file = out
            .into_inner()
            .map_err(|e| fail(Step::Write, &self.tmp)(e.into_error()))?;
        if self.durability == Durability::Synced {
            file.sync_all().map_err(fail(Step::Sync, &self.tmp))?;
        }
        drop(file);
        if let Err(e) = std::fs::rename(&self.tmp, &self.path) {
            let _ = std::fs::remove_file(&self.tmp);
            return Err(fail(Step::Rename, &self.path)(e));
        }
        if self.durability == Durability::Synced {
            sync_dir(&self.path);
        }
        Ok(())
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match &mut self.out {
            Some(out) => out.write(buf),
            None => Err(io::Error::other("already committed")),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match &mut self.out {
            Some(out) => out.flush(),
            None => Ok(()),
        }
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        // Not committed (an error on the way, a panic): the target stays as it was, and the
        // half-written temporary file goes.
        if let Some(out) = self.out.take() {
            drop(out);
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

/// Replaces `path` with `bytes` (see [`AtomicFile`]).
pub fn write_atomically(
    path: &Path,
    bytes: &[u8],
    durability: Durability,
) -> Result<(), WriteError> {
    let mut file = AtomicFile::create(path, durability)?;
    file.write_all(bytes).map_err(|source| WriteError {
        step: Step::Write,
        path: file.temp_path().to_path_buf(),
        source,
    })?;
    file.commit()
}

/// `<dir>/<name><suffix>` for `path` = `<dir>/<name>`; None when `path` names no file.
fn temp_path(path: &Path, suffix: &str) -> Option<PathBuf> {
    let mut name = path.file_name()?.to_os_string();
    name.push(suffix);
    Some(path.with_file_name(name))
}

/// Fsyncs the directory holding `path`, which makes a rename in it durable. Best effort: the
/// new file is in place and read either way, and some file systems refuse to sync a directory,
/// so a failure here must not make a caller believe the write did not happen.
pub(crate) fn sync_dir(path: &Path) {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_replaced_whole() {
        for durability in [Durability::Synced, Durability::Unsynced] {
            let dir = tempfile::tempdir().expect("dir");
            let path = dir.path().join("state.json");
            write_atomically(&path, b"old", durability).expect("first");
            write_atomically(&path, b"new", durability).expect("second");
            assert_eq!(std::fs::read(&path).expect("read"), b"new");
            let names: Vec<_> = std::fs::read_dir(dir.path())
                .expect("list")
                .map(|e| e.expect("entry").file_name())
                .collect();
            assert_eq!(names, ["state.json"], "no temporary file left");
        }
    }

    #[test]
    fn nothing_is_replaced_until_commit_and_a_dropped_file_leaves_nothing() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("0.ndjson");
        std::fs::write(&path, b"old").expect("old");
        let mut f =
            AtomicFile::create_with_suffix(&path, ".part", Durability::Unsynced).expect("create");
        assert_eq!(f.temp_path(), dir.path().join("0.ndjson.part"));
        f.write_all(b"half").expect("write");
        f.flush().expect("flush");
        assert_eq!(std::fs::read(&path).expect("read"), b"old");
        drop(f);
        assert_eq!(std::fs::read(&path).expect("read"), b"old");
        assert!(!dir.path().join("0.ndjson.part").exists());
    }

    #[test]
    fn a_failure_names_its_step_and_path() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("missing").join("x.bin");
        let e = write_atomically(&path, b"x", Durability::Synced).expect_err("no directory");
        assert_eq!(e.step, Step::Create);
        assert!(e.to_string().contains("x.bin.tmp"), "{e}");
        // A directory in the way of the rename.
        let blocked = dir.path().join("blocked");
        std::fs::create_dir(&blocked).expect("dir");
        std::fs::write(blocked.join("inside"), b"x").expect("inside");
        let e = write_atomically(&blocked, b"x", Durability::Unsynced).expect_err("a directory");
        assert_eq!(e.step, Step::Rename);
        assert!(!dir.path().join("blocked.tmp").exists());
    }
}
