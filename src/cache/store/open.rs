//! Opening the sled database of the persistent tier, whatever state its directory is in: a held
//! lock is waited for and then refused; a store sled cannot open (an error, or one of its panics
//! on damaged files) is moved aside and replaced; entries that vanished since the last run are
//! counted against the record kept beside them.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::record::{lost_entries, EntryRecord};
use super::StoreError;

/// sled's page cache bound when none is configured: `[cache] persistent_cache`'s default, which
/// is the configuration's to say.
pub use crate::config::SLED_CACHE_BYTES;

/// The sled tree the recovery's probe writes to, apart from the entries so it is never counted
/// or served as one.
const PROBE_TREE: &[u8] = b"tmproxy-probe";

/// The pause between two attempts at the lock.
const LOCK_POLL: Duration = Duration::from_millis(50);

/// An open database: the entries (sled's default tree), the probe's tree and the entry record.
#[derive(Clone)]
pub(super) struct Handle {
    pub db: sled::Db,
    pub probe: sled::Tree,
    pub record: std::sync::Arc<EntryRecord>,
}

/// What opening found.
pub(super) struct Opened {
    pub handle: Handle,
    /// Entries present now.
    pub entries: u64,
    /// Entries the record says were there and are not (sled dropped them on recovery).
    pub lost: u64,
    /// Where a store that could not be opened was moved.
    pub moved_aside: Option<PathBuf>,
}

/// Why sled would not open a directory.
enum Refusal {
    /// Another handle holds the lock, or our uid may not open the files: never treated as
    /// damage.
    Locked(String),
    /// An error or a panic from sled: the files are damaged (or unreadable to us).
    Damaged(String),
}

/// Opens the store in `path`, creating it if needed. A store sled refuses (other than for its
/// lock) is renamed to `<path>.corrupt-<now>` and a fresh one created. Blocking.
pub(super) fn open_or_replace(
    path: &Path,
    lock_wait: Duration,
    page_cache: u64,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<Opened, StoreError> {
    let open_error = |reason: String| StoreError::Open {
        path: path.to_path_buf(),
        reason,
    };
    std::fs::create_dir_all(path)
        .map_err(|e| open_error(format!("cannot create the directory: {e}")))?;
    let reason = match open_caught(path, lock_wait, page_cache) {
        Ok(opened) => return Ok(opened),
        Err(Refusal::Locked(reason)) => return Err(open_error(reason)),
        Err(Refusal::Damaged(reason)) => reason,
    };
    // sled reads `conf` before it takes its lock, so a refusal does not prove nobody holds the
    // directory: check the lock ourselves before moving anything another process may be using.
    if let Some(holder) = held_elsewhere(path) {
        return Err(open_error(format!(
            "the database is locked, is another tmproxy using it? ({holder})"
        )));
    }
    // `<path>.corrupt-<UTC timestamp>`, with a counter if that name is taken (README's name).
    let aside = tmproxy_disk::aside::stamped(path, "corrupt", now);
    tmproxy_disk::aside::move_aside(path, &aside).map_err(|e| {
        open_error(format!(
            "sled cannot open it ({reason}) and it cannot be moved aside to {}: {e}",
            aside.display()
        ))
    })?;
    tracing::error!(
        path = %path.display(),
        moved_to = %aside.display(),
        reason,
        "the cache store is damaged: moved aside, starting with an empty one"
    );
    std::fs::create_dir_all(path)
        .map_err(|e| open_error(format!("cannot create the directory: {e}")))?;
    match open_caught(path, lock_wait, page_cache) {
        Ok(opened) => {
            tracing::error!(path = %path.display(), "a fresh cache store was created in place of the damaged one");
            Ok(Opened {
                moved_aside: Some(aside),
                ..opened
            })
        }
        Err(Refusal::Locked(reason) | Refusal::Damaged(reason)) => Err(open_error(format!(
            "the damaged store was moved to {} but a fresh one cannot be opened: {reason}",
            aside.display()
        ))),
    }
}

/// Opens the store in `path` again after a failure at run time: no moving aside (a disk that
/// fails now says nothing about the files), and a short wait for the lock. Blocking.
pub(super) fn reopen(path: &Path, lock_wait: Duration, page_cache: u64) -> Result<Opened, String> {
    match open_caught(path, lock_wait, page_cache) {
        Ok(opened) => Ok(opened),
        Err(Refusal::Locked(reason) | Refusal::Damaged(reason)) => Err(reason),
    }
}

/// [`open_counted`] on its own thread, so a sled panic on damaged files is an answer, not the end
/// of the process.
fn open_caught(path: &Path, lock_wait: Duration, page_cache: u64) -> Result<Opened, Refusal> {
    let owned = path.to_path_buf();
    let opening = std::thread::Builder::new()
        .name("tmproxy-store-open".into())
        .spawn(move || open_counted(&owned, lock_wait, page_cache))
        .map_err(|e| Refusal::Damaged(format!("cannot start a thread to open it: {e}")))?;
    match opening.join() {
        Ok(result) => result,
        Err(panic) => {
            let message = panic
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| panic.downcast_ref::<&str>().copied())
                .unwrap_or("no message");
            Err(Refusal::Damaged(format!("sled panicked: {message}")))
        }
    }
}

/// Opens sled, waiting up to `lock_wait` for a lock being released, then counts the entries and
/// compares them with the record. May panic inside sled on damaged files.
fn open_counted(path: &Path, lock_wait: Duration, page_cache: u64) -> Result<Opened, Refusal> {
    let started = Instant::now();
    let mut logged = false;
    let db = loop {
        let opened = sled::Config::new()
            .path(path)
            .cache_capacity(page_cache)
            .open();
        match opened {
            Err(sled::Error::Io(io)) if is_lock_conflict(&io) && started.elapsed() < lock_wait => {
                if !logged && started.elapsed() >= Duration::from_secs(1) {
                    tracing::info!(path = %path.display(), wait = ?lock_wait, "the cache database is locked; waiting for it");
                    logged = true;
                }
                std::thread::sleep(LOCK_POLL);
            }
            Err(sled::Error::Io(io)) if is_lock_conflict(&io) => {
                // The usual cause: another process (or an undropped store) holds the lock.
                return Err(Refusal::Locked(format!(
                    "the database is still locked after {lock_wait:?}, is another tmproxy using it? ({io})"
                )));
            }
            // Our uid may not read the files: that says nothing about them, so never move
            // a good store aside for it.
            Err(sled::Error::Io(io)) if io.kind() == std::io::ErrorKind::PermissionDenied => {
                return Err(Refusal::Locked(format!(
                    "permission denied, does this user own the directory? ({io})"
                )));
            }
            Err(other) => return Err(Refusal::Damaged(other.to_string())),
            Ok(db) => break db,
        }
    };
    let probe = db
        .open_tree(PROBE_TREE)
        .map_err(|e| Refusal::Damaged(format!("cannot open the probe tree: {e}")))?;
    let entries = db.len() as u64;
    let (record, recorded) = EntryRecord::open(path)
        .map_err(|e| Refusal::Damaged(format!("cannot open the entry record: {e}")))?;
    let lost = recorded.map_or(0, |r| lost_entries(r, entries));
    // From here the record counts what is really there; the loss is reported once, now.
    if recorded != Some(entries) {
        record
            .set(entries)
            .map_err(|e| Refusal::Damaged(format!("cannot write the entry record: {e}")))?;
    }
    Ok(Opened {
        handle: Handle {
            db,
            probe,
            record: std::sync::Arc::new(record),
        },
        entries,
        lost,
        moved_aside: None,
    })
}

/// Whether some other open file holds the `flock` sled takes on `<path>/db`; says which.
fn held_elsewhere(path: &Path) -> Option<String> {
    use fs2::FileExt;
    let file = path.join("db");
    let handle = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&file)
        .ok()?;
    match handle.try_lock_exclusive() {
        Ok(()) => {
            let _ = FileExt::unlock(&handle);
            None
        }
        Err(e) if is_lock_conflict(&e) || e.raw_os_error() == Some(11) => {
            Some(format!("{} is locked: {e}", file.display()))
        }
        Err(_) => None,
    }
}

/// Whether sled refused to open because another handle holds the directory's lock. sled 0.34
/// wraps the `flock` EWOULDBLOCK in an `ErrorKind::Other` error with this message, so the kind
/// alone does not tell (an earlier version of this check looked only at the kind and so never
/// retried).
pub(super) fn is_lock_conflict(io: &std::io::Error) -> bool {
    io.kind() == std::io::ErrorKind::WouldBlock
        || io.to_string().starts_with("could not acquire lock on")
}
