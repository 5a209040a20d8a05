//! The NDJSON files a run writes: appended to line by line as the stages go, or written whole.

use serde::Serialize;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::Mutex;

/// Append-only NDJSON writer shared by tasks.
pub(super) struct Log {
    pub(super) out: Mutex<BufWriter<std::fs::File>>,
    /// Each line reaches the file (one `write`) before `write` returns: the checkpoint must
    /// survive a `kill -9`, which never runs the buffer's flush. Not fsynced: a killed process
    /// loses nothing the kernel has; a power cut may cost the last answers, asked again.
    pub(super) write_through: bool,
}

impl Log {
    pub(super) fn open(path: &Path, append: bool) -> Result<Log, String> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(append)
            .write(true)
            .truncate(!append)
            .open(path)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(Log {
            out: Mutex::new(BufWriter::new(file)),
            write_through: false,
        })
    }

    pub(super) fn write<T: Serialize>(&self, item: &T) {
        if let (Ok(mut w), Ok(line)) = (self.out.lock(), serde_json::to_string(item)) {
            let _ = writeln!(w, "{line}");
            if self.write_through {
                let _ = w.flush();
            }
        }
    }

    pub(super) fn flush(&self) {
        if let Ok(mut w) = self.out.lock() {
            let _ = w.flush();
        }
    }
}

/// `items` as a file of JSON lines at `path` (the tests' inputs; the stage writes its files
/// through `tmproxy_disk::AtomicFile` and [`write_lines`]).
#[cfg(test)]
pub(super) fn write_ndjson<T: Serialize>(path: &Path, items: &[T]) -> Result<(), String> {
    let file = std::fs::File::create(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut w = BufWriter::new(file);
    write_lines(&mut w, items).map_err(|e| format!("{}: {e}", path.display()))?;
    w.flush().map_err(|e| format!("{}: {e}", path.display()))
}

/// `items` as lines of JSON into `w`.
pub(super) fn write_lines<T: Serialize>(w: &mut impl Write, items: &[T]) -> std::io::Result<()> {
    for i in items {
        let line = serde_json::to_string(i).map_err(std::io::Error::other)?;
        writeln!(w, "{line}")?;
    }
    Ok(())
}
