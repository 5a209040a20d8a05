//! The checkpoint of a run: every CDX first-capture answer appended to `first_captures.ndjson`
//! as it arrives, so a run started again over the same directory asks none of them twice. Its
//! first line is a header with the spec's result hash ([`Spec::result_hash`]): answers and
//! TimeMaps kept for one spec are never reused by another. A checkpoint from before the header
//! existed is adopted (the header written in front), with a warning.

use super::ndjson::Log;
use super::resumed::{DiskThreshold, Resumed};
use super::Spec;
use crate::cdx::{CdxClient, FirstCapture, RetryNote};
use serde::{Deserialize, Serialize};
use std::io::{BufRead, Write};
use std::path::Path;
use std::sync::Arc;

/// A checkpoint line: a CDX answer for a URL.
#[derive(Serialize, Deserialize)]
pub(super) struct Answered {
    pub(super) url: String,
    pub(super) answer: FirstCapture,
}

impl Log {
    /// The checkpoint: appended to, written through. A last line cut short by a crash is ended
    /// first, so the next answer starts a line of its own instead of being glued to the torn
    /// one (which `read_checkpoint` skips) and lost on the next resume.
    pub(super) fn open_checkpoint(path: &Path) -> Result<Log, String> {
        let torn = last_byte(path).is_some_and(|b| b != b'\n');
        let log = Log {
            write_through: true,
            ..Log::open(path, true)?
        };
        if torn {
            if let Ok(mut w) = log.out.lock() {
                w.write_all(b"\n")
                    .and_then(|_| w.flush())
                    .map_err(|e| format!("{}: {e}", path.display()))?;
            }
        }
        Ok(log)
    }
}

/// The checkpoint's first line.
#[derive(Serialize, Deserialize)]
struct Header {
    spec_hash: String,
    fields: String,
}

/// How a run came to hold its checkpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Claim {
    /// New (or empty, or torn before its first answer): the spec's header written.
    New,
    /// Written for this spec.
    Same,
    /// Written before checkpoints were tied to a spec (answers, no header): adopted, the
    /// header written in front, unchecked (the run says so in its warnings).
    Adopted,
}

/// The warning of an adopted checkpoint.
pub(super) const ADOPTED: &str = "checkpoint from before spec hashes: adopted without a check";

/// Ties the checkpoint at `path` to `spec`: a new (or empty, or torn before its first answer)
/// checkpoint gets the spec's header; one from before spec hashes (its first line an answer)
/// is adopted, the header written in front; one written for another spec is refused, naming
/// both hashes, and so is one with answers under a first line that is neither.
pub(super) fn claim(path: &Path, spec: &Spec, has_answers: bool) -> Result<Claim, String> {
    use std::io::Read;
    let hash = spec.result_hash();
    // The first line only: the file may be gigabytes, and a hostile one a single endless line.
    let mut first = Vec::new();
    if let Ok(f) = std::fs::File::open(path) {
        let _ = std::io::BufReader::new(f.take(64 * 1024)).read_until(b'\n', &mut first);
    }
    if let Ok(h) = serde_json::from_slice::<Header>(first.trim_ascii_end()) {
        if h.spec_hash == hash {
            return Ok(Claim::Same);
        }
        return Err(format!(
            "{} was written for another spec (hash {}, this spec's is {hash}; the hash covers {}): \
             run this spec over another output directory",
            path.display(),
            h.spec_hash,
            Spec::RESULT_FIELDS
        ));
    }
    let header = serde_json::to_string(&Header {
        spec_hash: hash,
        fields: Spec::RESULT_FIELDS.to_string(),
    })
    .map_err(|e| e.to_string())?;
    if !has_answers {
        std::fs::write(path, header + "\n").map_err(|e| format!("{}: {e}", path.display()))?;
        return Ok(Claim::New);
    }
    if serde_json::from_slice::<Answered>(first.trim_ascii_end()).is_err() {
        return Err(format!(
            "{} has answers under a first line that is neither a spec hash nor an answer: \
             run over another output directory",
            path.display()
        ));
    }
    adopt(path, &header)?;
    Ok(Claim::Adopted)
}

/// Writes `header` in front of the checkpoint at `path`: the header and the old file copied
/// (streamed) into a new file, synced, renamed over the old one, so a kill leaves one or the
/// other whole.
fn adopt(path: &Path, header: &str) -> Result<(), String> {
    use tmproxy_disk::{AtomicFile, Durability};
    let err = |e: std::io::Error| format!("{}: {e}", path.display());
    let mut old = std::fs::File::open(path).map_err(err)?;
    let mut new = AtomicFile::create_with_suffix(path, ".adopting", Durability::Synced)
        .map_err(|e| e.to_string())?;
    new.write_all(header.as_bytes()).map_err(err)?;
    new.write_all(b"\n").map_err(err)?;
    std::io::copy(&mut old, &mut new).map_err(err)?;
    new.commit().map_err(|e| e.to_string())
}

/// One line of `retries.ndjson`.
#[derive(Serialize)]
pub(super) struct Retried<'a> {
    pub(super) url: &'a str,
    pub(super) stage: &'static str,
    pub(super) attempt: u32,
    pub(super) status: Option<u16>,
    pub(super) reason: String,
    pub(super) wait_ms: u64,
}

/// First captures as the stages ask for them: the checkpoint's answer when a previous run had
/// one, else the CDX API's, appended to the checkpoint before it is used.
pub(super) struct FirstCaptures {
    pub(super) client: Arc<CdxClient>,
    pub(super) resumed: Resumed,
    pub(super) answers: Log,
    /// `retries.ndjson`: every retry the client made, with the URL and stage.
    pub(super) retries: Log,
    /// Told of each answer, fetched or reused.
    pub(super) progress: Arc<super::Progress>,
}

impl FirstCaptures {
    /// Tells `retries.ndjson` of a retry for `url` in `stage`.
    pub(super) fn note<'a>(
        &'a self,
        url: &'a str,
        stage: &'static str,
    ) -> impl Fn(RetryNote) + Send + Sync + 'a {
        move |n: RetryNote| {
            self.retries.write(&Retried {
                url,
                stage,
                attempt: n.attempt,
                status: n.status,
                reason: n.reason,
                wait_ms: u64::try_from(n.wait.as_millis()).unwrap_or(u64::MAX),
            })
        }
    }

    /// The first capture of `url`, asked for `stage`.
    pub(super) async fn get(&self, url: &str, stage: &'static str) -> FirstCapture {
        // Synchronous, on this runtime worker: for a large checkpoint two positioned reads of
        // 4 KB (an index page, a block), microseconds from the page cache (see `Resumed::get`).
        match self.resumed.get(url) {
            Some(a) => {
                self.progress.answer(stage, false);
                a
            }
            None => {
                let a = self
                    .client
                    .first_capture_noting(url, &self.note(url, stage))
                    .await;
                self.answers.write(&Answered {
                    url: url.to_string(),
                    answer: a.clone(),
                });
                self.progress.answer(stage, true);
                a
            }
        }
    }
}

/// The answers in the checkpoint at `path` (none when there is no file), held compactly: in
/// memory for a small checkpoint, else on disk under `.resumed/` beside it (see `resumed.rs`).
/// Err when the file on disk cannot be built (a full disk): asking every answer again instead
/// would be silent and slow.
pub(super) fn read_checkpoint(path: &Path) -> Result<Resumed, String> {
    read_checkpoint_with(path, DiskThreshold::default())
}

pub(super) fn read_checkpoint_with(path: &Path, spill: DiskThreshold) -> Result<Resumed, String> {
    let lines = count_lines(path);
    let Ok(file) = std::fs::File::open(path) else {
        return Ok(Resumed::default());
    };
    // Split on bytes, not `lines()`: a line torn inside a multi-byte character is not UTF-8,
    // and `lines()` would end the reading there, losing every answer after it.
    let answers = std::io::BufReader::new(file)
        .split(b'\n')
        .map_while(Result::ok)
        // A line cut by a kill is skipped: its URL is simply asked again. A failure is not
        // kept (asked again on resume: the archive may answer now).
        .filter_map(|line| serde_json::from_slice::<Answered>(&line).ok());
    if lines <= spill.in_memory {
        // Room for every line at once (the header and failures make it a little more than
        // needed): a table grown by doubling would briefly hold both sizes.
        let mut map = Resumed::with_capacity(lines);
        for a in answers {
            map.insert(&a.url, &a.answer);
        }
        return Ok(map);
    }
    let dir = path.parent().unwrap_or(Path::new(".")).join(".resumed");
    let mut building = Resumed::on_disk(&dir, spill)?;
    for a in answers {
        building.insert(&a.url, &a.answer)?;
    }
    building.finish()
}

/// Newlines in the file at `path` (0 when it cannot be read), read in blocks.
fn count_lines(path: &Path) -> usize {
    use std::io::Read;
    let Ok(mut file) = std::fs::File::open(path) else {
        return 0;
    };
    let (mut n, mut buf) = (0, vec![0u8; 1 << 16]);
    while let Ok(got) = file.read(&mut buf) {
        if got == 0 {
            break;
        }
        n += buf[..got].iter().filter(|&&b| b == b'\n').count();
    }
    n
}

/// The last byte of a file, if it has one (read without reading the rest).
fn last_byte(path: &Path) -> Option<u8> {
    use std::io::{Read, Seek, SeekFrom};
    let mut file = std::fs::File::open(path).ok()?;
    file.seek(SeekFrom::End(-1)).ok()?;
    let mut byte = [0u8; 1];
    file.read_exact(&mut byte).ok()?;
    Some(byte[0])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_checkpoint_torn_by_a_kill_keeps_every_whole_answer() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("first_captures.ndjson");
        let answered = |url: &str| Answered {
            url: url.to_string(),
            answer: FirstCapture::NotArchived,
        };
        let first = Log::open_checkpoint(&path).expect("open");
        first.write(&answered("http://a.example/"));
        // Written through: on disk without a flush or a drop (a kill -9 runs neither).
        assert_eq!(read_checkpoint(&path).expect("read").len(), 1);
        std::mem::forget(first);
        // A line cut inside a multi-byte character, as a kill mid-write may leave it.
        let mut bytes = std::fs::read(&path).expect("read");
        bytes.extend_from_slice("{\"url\":\"http://\u{e9}".as_bytes());
        bytes.pop();
        std::fs::write(&path, bytes).expect("write");
        let resumed = Log::open_checkpoint(&path).expect("reopen");
        resumed.write(&answered("http://b.example/"));
        let read = read_checkpoint(&path).expect("read");
        assert!(read.contains("http://a.example/") && read.contains("http://b.example/"));
        assert_eq!(read.len(), 2);
    }

    #[test]
    fn a_checkpoint_is_claimed_by_one_spec_only() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("first_captures.ndjson");
        let spec: Spec =
            serde_json::from_str(r#"{"input": "x", "cdx_api": "http://h/cdx"}"#).expect("a spec");
        let other = Spec {
            seed: 9,
            ..spec.clone()
        };
        // New: the header is written; the same spec claims it again, another is refused.
        assert_eq!(claim(&path, &spec, false), Ok(Claim::New));
        assert_eq!(claim(&path, &spec, false), Ok(Claim::Same));
        let refused = claim(&path, &other, false).expect_err("another spec");
        assert!(refused.contains(&spec.result_hash()) && refused.contains(&other.result_hash()));
        // A header torn by a kill, before any answer: claimed afresh.
        std::fs::write(&path, "{\"spec_ha").expect("torn");
        assert_eq!(claim(&path, &other, false), Ok(Claim::New));
        assert!(claim(&path, &spec, false).is_err());
        // Answers under a garbage first line: refused.
        std::fs::write(&path, "garbage\n").expect("write");
        assert!(claim(&path, &spec, true).is_err());
    }

    #[test]
    fn a_checkpoint_from_before_spec_hashes_is_adopted_and_then_tied_to_its_spec() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("first_captures.ndjson");
        let spec: Spec =
            serde_json::from_str(r#"{"input": "x", "cdx_api": "http://h/cdx"}"#).expect("a spec");
        // As the engine wrote it before the header existed: answers from the first line.
        let old = Log::open_checkpoint(&path).expect("open");
        for url in ["http://a.example/", "http://b.example/"] {
            old.write(&Answered {
                url: url.to_string(),
                answer: FirstCapture::NotArchived,
            });
        }
        drop(old);
        let before = read_checkpoint(&path).expect("read");
        assert_eq!(claim(&path, &spec, !before.is_empty()), Ok(Claim::Adopted));
        // Every answer kept, the header in front, no temporary file left.
        let after = read_checkpoint(&path).expect("read");
        assert_eq!(after.len(), before.len());
        for url in ["http://a.example/", "http://b.example/"] {
            assert_eq!(after.get(url), Some(FirstCapture::NotArchived), "{url}");
        }
        let text = std::fs::read_to_string(&path).expect("read");
        assert!(text.starts_with("{\"spec_hash\":"), "{text}");
        assert_eq!(text.lines().count(), 3);
        assert_eq!(std::fs::read_dir(dir.path()).expect("dir").count(), 1);
        // Tied from now on: the same spec claims it, another is refused.
        assert_eq!(claim(&path, &spec, true), Ok(Claim::Same));
        let other = Spec {
            seed: 9,
            ..spec.clone()
        };
        assert!(claim(&path, &other, true).is_err());
    }
}
