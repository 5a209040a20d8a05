//! A check before each persistent write that the disk can take it, so sled never meets the
//! failure. sled 0.34 wedges for good when writing a blob file fails (the log reservation taken
//! for it is never released: every later flush waits forever), and after an I/O error on its log
//! it refuses every later write. A write refused here leaves sled untouched, so it works again as
//! soon as the disk does (space freed, permission restored).
//!
//! A race remains: the disk can fail between this check and sled's write. That case is caught
//! by the write's error or timeout, and the tier is reopened (see `recover`).

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

/// Room kept free beyond the entry itself: sled may start a new 512 KiB log segment, write its
/// blob header and its own metadata on the same flush.
pub const SPACE_MARGIN: u64 = 2 * 1024 * 1024;

/// sled stores a value of more than about a quarter of its 512 KiB segment as a file under
/// `blobs/`; from this size on we check that a file can be created there. Smaller than sled's
/// threshold, so no blob goes unchecked.
pub const BLOB_CHECK_FROM: usize = 64 * 1024;

/// Distinguishes the probe files of concurrent writes.
static PROBES: AtomicU64 = AtomicU64::new(0);

/// Whether the store in `dir` has room for an entry of `len` bytes; says why not.
pub fn room_for(dir: &Path, len: usize) -> Result<(), String> {
    let free = fs2::available_space(dir)
        .map_err(|e| format!("cannot read the free space of {}: {e}", dir.display()))?;
    let needed = (len as u64).saturating_add(SPACE_MARGIN);
    if free < needed {
        return Err(format!(
            "the cache disk is full: {free} bytes free at {}, a write needs {needed}",
            dir.display()
        ));
    }
    if len >= BLOB_CHECK_FROM {
        let blobs = dir.join("blobs");
        let probe = blobs.join(format!(
            ".tmproxy-probe-{}-{}",
            std::process::id(),
            PROBES.fetch_add(1, Ordering::Relaxed)
        ));
        // sled skips names in blobs/ that are not numbers, so a probe left by a crash is harmless.
        std::fs::File::create(&probe)
            .map_err(|e| format!("cannot create files in {}: {e}", blobs.display()))?;
        let _ = std::fs::remove_file(&probe);
    }
    Ok(())
}
