//! The profiles file on disk: read at start (a damaged one moved aside to `profiles.bin.damaged`,
//! never trusted), written atomically (`tmproxy_disk::write_atomically`: a temporary file,
//! fsynced, renamed over the old one, the directory fsynced), and owned by one process at a time
//! through an advisory lock beside it.

use super::stored;
use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use tmproxy_core::routing::Profiles;

/// What was found at start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Loaded {
    /// No file yet: blank profiles.
    Blank,
    /// Profiles read back, holding this many keys.
    Restored { keys: usize },
    /// The file was damaged (checksum, truncation, another format): blank profiles, the file
    /// moved aside to `moved_to` (by its owner only: None when another process owns it).
    Refused {
        reason: String,
        moved_to: Option<PathBuf>,
    },
    /// The file could not be read (permissions, I/O): blank profiles, never saved over it.
    Unreadable { reason: String },
}

/// The file and, when this process owns it, the lock that says so.
pub(super) struct ProfilesFile {
    path: PathBuf,
    /// Held for this value's life; Err says why not (another process holds it, no directory).
    lock: Result<File, String>,
    /// False when the file exists but could not be read: writing would destroy it unread.
    writable: bool,
}

impl ProfilesFile {
    /// Takes the lock if it is free (a server goes on without it).
    pub(super) fn new(path: PathBuf) -> ProfilesFile {
        let lock = take_lock(&path);
        ProfilesFile {
            path,
            lock,
            writable: true,
        }
    }

    /// Takes the lock or says who holds it (an import must not race a server's saves).
    pub(super) fn owned_or_err(path: PathBuf) -> Result<ProfilesFile, String> {
        let lock = take_lock(&path)?;
        Ok(ProfilesFile {
            path,
            lock: Ok(lock),
            writable: true,
        })
    }

    pub(super) fn path(&self) -> &Path {
        &self.path
    }

    /// Whether saves go to disk.
    pub(super) fn owned(&self) -> bool {
        self.lock.is_ok() && self.writable
    }

    /// Why this process does not own the file, if it does not.
    pub(super) fn not_owned_because(&self) -> Option<&str> {
        self.lock.as_ref().err().map(String::as_str)
    }

    /// The profiles on disk, bounded to `max_keys`, or blank ones and why.
    pub(super) fn load(&mut self, max_keys: usize) -> (Profiles, Loaded) {
        let bytes = match std::fs::read(&self.path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return (Profiles::new(max_keys), Loaded::Blank)
            }
            Err(e) => {
                self.writable = false;
                let reason = e.to_string();
                return (Profiles::new(max_keys), Loaded::Unreadable { reason });
            }
        };
        match stored::decode(&bytes, max_keys) {
            Ok(p) => {
                let keys = p.len();
                (p, Loaded::Restored { keys })
            }
            Err(reason) => {
                // Only the owner moves it: another process's file is not ours to touch.
                let moved_to = self
                    .lock
                    .is_ok()
                    .then(|| self.path.with_extension("bin.damaged"));
                if let Some(aside) = &moved_to {
                    if let Err(e) = tmproxy_disk::aside::move_aside(&self.path, aside) {
                        self.writable = false;
                        let reason = format!("{reason}; and cannot move it aside: {e}");
                        return (Profiles::new(max_keys), Loaded::Unreadable { reason });
                    }
                }
                (
                    Profiles::new(max_keys),
                    Loaded::Refused { reason, moved_to },
                )
            }
        }
    }

    /// Replaces the file with `bytes`, atomically: a crash leaves the old file or the new one,
    /// and once this returns a power cut keeps the new one.
    pub(super) fn write(&self, bytes: &[u8]) -> Result<(), String> {
        if !self.owned() {
            return Err(format!("{} is not ours to write", self.path.display()));
        }
        tmproxy_disk::write_atomically(&self.path, bytes, tmproxy_disk::Durability::Synced)
            .map_err(|e| e.to_string())
    }
}

/// Creates the file's directory and takes the exclusive lock on `profiles.lock` beside it.
fn take_lock(path: &Path) -> Result<File, String> {
    use fs2::FileExt;
    let dir = path.parent().unwrap_or(Path::new(""));
    if !dir.as_os_str().is_empty() {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    let lock_path = path.with_file_name("profiles.lock");
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(|e| format!("cannot open {}: {e}", lock_path.display()))?;
    file.try_lock_exclusive().map_err(|e| {
        format!(
            "{} is held by another process (a running tmproxy serve?): {e}",
            lock_path.display()
        )
    })?;
    Ok(file)
}
