//! Which files of a job's output the admin API serves, and how they are opened. A name from a
//! request is only ever matched against a fixed list (`report.md`, `set_aside.ndjson`,
//! `errors.ndjson`, `retries.ndjson`) or a strict pattern (`timemaps/NNNNNN.ndjson`,
//! `timemaps/index.ndjson`, `timemaps/hydration.json`), never joined to a path as given, so no
//! `..`, `/`, NUL or over-long name reaches the file system. The file is then opened with
//! `openat(2)` and `O_NOFOLLOW` from the job's directory down (`<id>`, `out`, `timemaps`, the
//! file): a symlink anywhere below the jobs directory is refused, even one swapped in after the
//! job was written, and so is anything not a regular file (a FIFO would block the reader). A
//! TimeMap's name is served through the index and the pack it names (`jobs`, [`crate::pack`]),
//! a pack's name checked against its own strict pattern.

use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;
use std::path::Path;

/// The files `GET /admin/sampling/jobs/{id}/files/{name}` serves (the names the jobs API pins).
pub const FILES: [&str; 4] = [
    "report.md",
    "set_aside.ndjson",
    "errors.ndjson",
    "retries.ndjson",
];

/// Longer names are refused before any matching (a TimeMap's name is at most 19 bytes).
pub const MAX_NAME: usize = 64;

/// A file of a job's `out/` the API may serve.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Served {
    /// `timemaps` for a TimeMap file, None for a file of `out/` itself.
    pub dir: Option<&'static str>,
    pub name: String,
    pub content_type: &'static str,
}

impl Served {
    /// The path under `out/`, as the client and the messages name it.
    pub fn shown(&self) -> String {
        match self.dir {
            Some(d) => format!("{d}/{}", self.name),
            None => self.name.clone(),
        }
    }
}

fn content_type(name: &str) -> &'static str {
    if name.ends_with(".md") {
        "text/markdown; charset=utf-8"
    } else if name.ends_with(".ndjson") {
        "application/x-ndjson"
    } else {
        "application/json"
    }
}

fn served(dir: Option<&'static str>, name: &str) -> Served {
    Served {
        dir,
        name: name.to_string(),
        content_type: content_type(name),
    }
}

/// `sample.ndjson`, served by its own route once the job is done.
pub fn sample() -> Served {
    served(None, "sample.ndjson")
}

/// `funnel.json`, served by its own route once the job is done.
pub fn funnel() -> Served {
    served(None, "funnel.json")
}

/// One of [`FILES`], or None.
pub fn job_file(name: &str) -> Option<Served> {
    FILES.contains(&name).then(|| served(None, name))
}

/// A file of `out/timemaps/` by the names the TimeMap stage writes: `NNNNNN.ndjson` (6 to 12
/// digits: the sample's index, zero-padded to 6), `index.ndjson`, `hydration.json`.
pub fn timemap_file(name: &str) -> Option<Served> {
    if name.len() > MAX_NAME {
        return None;
    }
    let numbered = name.strip_suffix(".ndjson").is_some_and(|digits| {
        (6..=12).contains(&digits.len()) && digits.bytes().all(|b| b.is_ascii_digit())
    });
    (numbered || name == "index.ndjson" || name == "hydration.json")
        .then(|| served(Some("timemaps"), name))
}

/// A file of `out/timemaps/` the API reads TimeMaps from: one it serves, a pack
/// (`pack-NNNN.zst`) or `index.offsets`, the last two never served as they are.
pub fn stored_timemaps(name: &str) -> Option<Served> {
    timemap_file(name).or_else(|| {
        let stored = crate::pack::pack_number(name).is_some() || name == crate::pack::OFFSETS;
        stored.then(|| Served {
            dir: Some("timemaps"),
            name: name.to_string(),
            content_type: "application/zstd",
        })
    })
}

/// Why a file could not be opened.
#[derive(Debug, PartialEq, Eq)]
pub enum OpenError {
    /// Not there (yet): the job has not written it.
    Missing,
    /// A symlink, a FIFO, a directory or another thing that is not a regular file.
    Refused(String),
    /// Any other failure (permissions, I/O): ours, not the client's.
    Io(String),
}

/// Opens `file` of `job_dir/out/`. `job_dir`'s parent (the jobs directory, the operator's) is
/// opened as configured; every component below it without following a symlink.
pub fn open(job_dir: &Path, file: &Served) -> Result<std::fs::File, OpenError> {
    let (Some(jobs), Some(id)) = (job_dir.parent(), job_dir.file_name()) else {
        return Err(OpenError::Io(format!(
            "{}: no job directory",
            job_dir.display()
        )));
    };
    let dir_flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let io = |e: Errno, what: &str| match e {
        Errno::NOENT => OpenError::Missing,
        // O_NOFOLLOW on a symlink, O_DIRECTORY on a file.
        Errno::LOOP | Errno::NOTDIR | Errno::MLINK => {
            OpenError::Refused(format!("{what} is not a regular file or directory"))
        }
        e => OpenError::Io(format!("{what}: {e}")),
    };
    let root = rustix::fs::open(jobs, dir_flags, Mode::empty())
        .map_err(|e| OpenError::Io(format!("{}: {e}", jobs.display())))?;
    let job = rustix::fs::openat(&root, id, dir_flags | OFlags::NOFOLLOW, Mode::empty())
        .map_err(|e| io(e, "the job directory"))?;
    let mut dir = rustix::fs::openat(&job, "out", dir_flags | OFlags::NOFOLLOW, Mode::empty())
        .map_err(|e| io(e, "out"))?;
    if let Some(sub) = file.dir {
        dir = rustix::fs::openat(&dir, sub, dir_flags | OFlags::NOFOLLOW, Mode::empty())
            .map_err(|e| io(e, sub))?;
    }
    // NONBLOCK: opening a FIFO for reading would otherwise wait for a writer.
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let fd = rustix::fs::openat(&dir, file.name.as_str(), flags, Mode::empty())
        .map_err(|e| io(e, &file.shown()))?;
    let f = std::fs::File::from(fd);
    match f.metadata() {
        Ok(m) if m.is_file() => Ok(f),
        Ok(_) => Err(OpenError::Refused(format!(
            "{} is not a regular file",
            file.shown()
        ))),
        Err(e) => Err(OpenError::Io(format!("{}: {e}", file.shown()))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_pinned_names_and_the_timemap_pattern_pass() {
        for name in FILES {
            assert_eq!(job_file(name).map(|s| s.name), Some(name.to_string()));
        }
        assert_eq!(
            job_file("report.md").map(|s| s.content_type),
            Some("text/markdown; charset=utf-8")
        );
        assert_eq!(
            job_file("errors.ndjson").map(|s| s.content_type),
            Some("application/x-ndjson")
        );
        for bad in [
            "",
            ".",
            "..",
            "../spec.json",
            "spec.json",
            "state.json",
            "sample.ndjson",
            "funnel.json",
            "ccdf.svg",
            "first_captures.ndjson",
            "/etc/passwd",
            "report.md\0",
            "report.md/",
            "REPORT.md",
            " report.md",
        ] {
            assert_eq!(job_file(bad), None, "{bad:?}");
        }
        for good in [
            "000000.ndjson",
            "123456.ndjson",
            "1234567.ndjson",
            "index.ndjson",
            "hydration.json",
        ] {
            let s = timemap_file(good).expect(good);
            assert_eq!(
                (s.dir, s.shown()),
                (Some("timemaps"), format!("timemaps/{good}"))
            );
        }
        assert_eq!(
            timemap_file("hydration.json").map(|s| s.content_type),
            Some("application/json")
        );
        let long = format!("{}.ndjson", "0".repeat(5000));
        for bad in [
            "0.ndjson",
            "00000.ndjson",
            "0000000000000.ndjson",
            "000000.ndjson.tmp",
            "000000.ndjson\0",
            "00000a.ndjson",
            "+00000.ndjson",
            "../000000.ndjson",
            "..%2f000000.ndjson",
            "index.ndjson/..",
            "INDEX.ndjson",
            "report.md",
            long.as_str(),
        ] {
            assert_eq!(timemap_file(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn symlinks_fifos_and_directories_are_refused_and_absent_files_are_missing() {
        let tmp = tempfile::tempdir().expect("temp dir");
        let job = tmp.path().join("jobs").join("j1");
        let out = job.join("out");
        std::fs::create_dir_all(out.join("timemaps")).expect("mkdir");
        std::fs::write(out.join("report.md"), "# report\n").expect("write");
        std::fs::write(tmp.path().join("secret"), "secret\n").expect("write");
        std::os::unix::fs::symlink(tmp.path().join("secret"), out.join("errors.ndjson"))
            .expect("symlink");
        std::fs::create_dir(out.join("set_aside.ndjson")).expect("a directory by that name");
        let read = |f: &Served| {
            open(&job, f).map(|mut file| {
                let mut s = String::new();
                std::io::Read::read_to_string(&mut file, &mut s).expect("read");
                s
            })
        };
        let file = |n: &str| job_file(n).expect("a served name");
        assert_eq!(read(&file("report.md")), Ok("# report\n".into()));
        assert_eq!(read(&file("retries.ndjson")), Err(OpenError::Missing));
        assert!(matches!(
            read(&file("errors.ndjson")),
            Err(OpenError::Refused(_))
        ));
        // A FIFO: refused at once, not waited on for a writer.
        let made = std::process::Command::new("mkfifo")
            .arg(out.join("retries.ndjson"))
            .status()
            .expect("mkfifo");
        assert!(made.success());
        assert!(matches!(
            read(&file("retries.ndjson")),
            Err(OpenError::Refused(_))
        ));
        assert!(matches!(
            read(&file("set_aside.ndjson")),
            Err(OpenError::Refused(_))
        ));
        let tm = timemap_file("index.ndjson").expect("served");
        assert_eq!(read(&tm), Err(OpenError::Missing));
        // The timemaps directory swapped for a symlink to a directory outside.
        let elsewhere = tmp.path().join("elsewhere");
        std::fs::create_dir(&elsewhere).expect("mkdir");
        std::fs::write(elsewhere.join("index.ndjson"), "secret\n").expect("write");
        std::fs::remove_dir(out.join("timemaps")).expect("rmdir");
        std::os::unix::fs::symlink(&elsewhere, out.join("timemaps")).expect("symlink");
        assert!(matches!(read(&tm), Err(OpenError::Refused(_))));
        // The job directory itself a symlink.
        let other = tmp.path().join("jobs").join("j2");
        std::os::unix::fs::symlink(&job, &other).expect("symlink");
        assert!(matches!(
            read_at(&other, &file("report.md")),
            Err(OpenError::Refused(_))
        ));
    }

    fn read_at(job: &Path, f: &Served) -> Result<(), OpenError> {
        open(job, f).map(|_| ())
    }
}
