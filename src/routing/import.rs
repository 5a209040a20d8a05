//! `tmproxy routing import ARCHIVE FILE`: an archive's CDX summary or MementoMap file (plain or
//! gzipped) read line by line, each line at most [`MAX_LINE`] bytes held, into the profiles of
//! the config's data directory.

use super::persist::{Loaded, ProfilesFile};
use super::{profiles_path, stored};
use crate::config::Config;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use tmproxy_core::routing::import::MAX_LINE;
use tmproxy_core::routing::{Format, ImportReport, Importer};

/// What an import did.
#[derive(Debug)]
pub struct Imported {
    pub report: ImportReport,
    /// The profiles file written.
    pub path: PathBuf,
    /// Keys the profiles hold after it.
    pub keys: usize,
    /// What was there before (a damaged file is moved aside and replaced).
    pub before: Loaded,
}

impl Imported {
    /// One paragraph for the operator.
    pub fn summary(&self, archive: &str, file: &Path) -> String {
        let r = &self.report;
        let format = match r.format {
            Some(Format::Cdx) => "CDX",
            Some(Format::MementoMap) => "MementoMap",
            None => "unknown format",
        };
        let mut text = format!(
            "imported {} URI-Rs held by {archive} from {} ({format}): {} lines, {} used, {} repeats, \
             {} headers, {} unreadable, {} not UTF-8, {} too long; {} keys in {}",
            r.uri_rs,
            file.display(),
            r.lines,
            r.used,
            r.repeats,
            r.headers,
            r.garbage,
            r.non_utf8,
            r.too_long,
            self.keys,
            self.path.display()
        );
        if let Loaded::Refused { reason, moved_to } = &self.before {
            let aside = moved_to.as_deref().map(Path::display);
            text.push_str(&format!(
                "\nthe profiles file was damaged ({reason}): moved to {}, started blank",
                aside.map(|p| p.to_string()).unwrap_or_default()
            ));
        }
        text
    }
}

/// Imports `file` into `archive`'s profile in `config`'s data directory. `format` None tells it
/// from the first data line.
pub fn import_file(
    config: &Config,
    archive: &str,
    file: &Path,
    format: Option<Format>,
) -> Result<Imported, String> {
    if !config.archives.iter().any(|a| a.id == archive) {
        let ids: Vec<&str> = config.archives.iter().map(|a| a.id.as_str()).collect();
        return Err(format!(
            "unknown archive {archive:?}: the config names {}",
            ids.join(", ")
        ));
    }
    let input =
        std::fs::File::open(file).map_err(|e| format!("cannot read {}: {e}", file.display()))?;
    let mut profiles_file = ProfilesFile::owned_or_err(profiles_path(config))?;
    let (mut profiles, before) = profiles_file.load(config.routing.max_keys);
    if let Loaded::Unreadable { reason } = &before {
        return Err(format!(
            "cannot read {}: {reason}",
            profiles_file.path().display()
        ));
    }
    let mut importer = Importer::new(&mut profiles, archive, format);
    each_line(decompressed(input)?, MAX_LINE, |line| match line {
        Some(bytes) => importer.line(bytes),
        None => importer.too_long(),
    })
    .map_err(|e| format!("cannot read {}: {e}", file.display()))?;
    let report = importer.finish();
    if report.used == 0 {
        return Err(format!(
            "no usable line in {}: {} lines ({} headers, {} unreadable, {} not UTF-8, {} too long, \
             {} repeats); a CDX/CDXJ line is `SURT TIMESTAMP ...`, a MementoMap line `SURT FREQUENCY`",
            file.display(),
            report.lines,
            report.headers,
            report.garbage,
            report.non_utf8,
            report.too_long,
            report.repeats
        ));
    }
    profiles_file.write(&stored::encode(&profiles.to_stored())?)?;
    Ok(Imported {
        report,
        path: profiles_file.path().to_path_buf(),
        keys: profiles.len(),
        before,
    })
}

/// The file's bytes, gunzipped when they start with gzip's magic (indexes are often `.gz`).
fn decompressed(file: std::fs::File) -> Result<Box<dyn BufRead>, String> {
    let mut reader = BufReader::new(file);
    let head = reader
        .fill_buf()
        .map_err(|e| format!("cannot read the file: {e}"))?;
    if head.starts_with(&[0x1f, 0x8b]) {
        Ok(Box::new(BufReader::new(
            flate2::bufread::MultiGzDecoder::new(reader),
        )))
    } else {
        Ok(Box::new(reader))
    }
}

/// Calls `f` with each line (without `\n` or `\r\n`), or None for a line past `max` bytes, of
/// which at most `max` bytes were ever held.
pub(crate) fn each_line(
    mut reader: impl BufRead,
    max: usize,
    mut f: impl FnMut(Option<&[u8]>),
) -> std::io::Result<()> {
    let mut line = Vec::new();
    let mut over = false;
    let mut emit = |line: &mut Vec<u8>, over: &mut bool| {
        if *over {
            f(None);
        } else {
            let end = line.strip_suffix(b"\r").map_or(line.len(), <[u8]>::len);
            f(Some(&line[..end]));
        }
        line.clear();
        *over = false;
    };
    loop {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            if over || !line.is_empty() {
                emit(&mut line, &mut over);
            }
            return Ok(());
        }
        let newline = buf.iter().position(|&b| b == b'\n');
        let chunk = &buf[..newline.unwrap_or(buf.len())];
        if !over {
            if line.len() + chunk.len() > max {
                over = true;
                line.clear();
            } else {
                line.extend_from_slice(chunk);
            }
        }
        let used = newline.map_or(buf.len(), |i| i + 1);
        reader.consume(used);
        if newline.is_some() {
            emit(&mut line, &mut over);
        }
    }
}
