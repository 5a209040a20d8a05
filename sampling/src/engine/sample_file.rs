//! `sample.ndjson`, written a line at a time as the downsampling merge picks (then the popular
//! quota's picks) and read back a line at a time by the stages after it, so the sample is never
//! held: only its count per year label.

use crate::report::YearSample;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::{BufRead, BufWriter, Write};
use std::path::{Path, PathBuf};

/// One line of `sample.ndjson`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SampledUrl {
    pub url: String,
    /// The year bucket: `1996-2000` or the year.
    pub year: String,
    pub root: bool,
    pub first_capture: String,
    pub mime: String,
}

/// The sample being written.
pub(super) struct SampleWriter {
    path: PathBuf,
    w: BufWriter<std::fs::File>,
    /// Lines written.
    pub(super) n: u64,
    /// URLs and roots per year label (the report's Table 7).
    pub(super) per_year: BTreeMap<String, YearSample>,
}

impl SampleWriter {
    pub(super) fn create(path: &Path) -> Result<SampleWriter, String> {
        let file = std::fs::File::create(path).map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(SampleWriter {
            path: path.to_path_buf(),
            w: BufWriter::new(file),
            n: 0,
            per_year: BTreeMap::new(),
        })
    }

    pub(super) fn write(&mut self, s: &SampledUrl) -> Result<(), String> {
        let line = serde_json::to_string(s).map_err(|e| e.to_string())?;
        writeln!(self.w, "{line}").map_err(|e| format!("{}: {e}", self.path.display()))?;
        self.n += 1;
        let y = self.per_year.entry(s.year.clone()).or_default();
        y.urls += 1;
        y.roots += u64::from(s.root);
        Ok(())
    }

    /// Flushed and closed: the lines written and their count per year label.
    pub(super) fn finish(mut self) -> Result<(u64, BTreeMap<String, YearSample>), String> {
        self.w
            .flush()
            .map_err(|e| format!("{}: {e}", self.path.display()))?;
        Ok((self.n, self.per_year))
    }
}

/// `sample.ndjson` read back, line by line, in order; a line that is not a sampled URL (the
/// file is bytes on disk) is an error naming it, and ends the reading.
pub(super) fn read_sample(
    path: &Path,
) -> Result<impl Iterator<Item = Result<SampledUrl, String>>, String> {
    let file = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let path = path.to_path_buf();
    let mut failed = false;
    let lines = std::io::BufReader::new(file).split(b'\n').enumerate();
    Ok(lines.map_while(move |(i, line)| {
        if failed {
            return None;
        }
        let parsed = line
            .map_err(|e| e.to_string())
            .and_then(|l| serde_json::from_slice::<SampledUrl>(&l).map_err(|e| e.to_string()))
            .map_err(|e| format!("{} line {}: {e}", path.display(), i + 1));
        failed = parsed.is_err();
        Some(parsed)
    }))
}
