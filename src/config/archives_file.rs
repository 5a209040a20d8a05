//! `[upstream] archives_file`: an archive list in the shape of MemGator's `archives.json`
//! (`[{id, name, timemap, timegate, ignore}]`), so the list the community keeps can be dropped in
//! as it changes. The file replaces the built-in list; `[[archives]]` in config.toml come after it.

use super::archives::ArchiveConfig;
use super::http_url::HttpUrl;
use super::ConfigError;
use serde::Deserialize;
use std::collections::HashMap;
use std::io::Read;
use std::path::Path;

/// The largest archives file read (MemGator's is about 4 KiB): a wrong path pointing at a huge
/// file is refused instead of read into memory.
pub const MAX_ARCHIVES_FILE: u64 = 1024 * 1024;

/// One entry as MemGator writes it. Fields MemGator's files have that we do not use
/// (`probability`, `rels`, …) are ignored rather than refused: the file is someone else's format.
#[derive(Deserialize)]
struct FileEntry {
    id: Option<serde_json::Value>,
    name: Option<serde_json::Value>,
    timemap: Option<serde_json::Value>,
    timegate: Option<serde_json::Value>,
    ignore: Option<serde_json::Value>,
}

/// Reads the file at `path` (at most [`MAX_ARCHIVES_FILE`] bytes); errors name the file as origin.
pub fn read(path: &Path) -> Result<Vec<ArchiveConfig>, ConfigError> {
    let origin = path.display().to_string();
    let fail = |reason: String| ConfigError::new(&origin, "(file)", reason);
    let file = std::fs::File::open(path).map_err(|e| fail(format!("cannot read: {e}")))?;
    let mut bytes = Vec::new();
    file.take(MAX_ARCHIVES_FILE + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| fail(format!("cannot read: {e}")))?;
    if bytes.len() as u64 > MAX_ARCHIVES_FILE {
        return Err(fail(format!(
            "larger than {} KiB: not an archive list",
            MAX_ARCHIVES_FILE / 1024
        )));
    }
    parse(&bytes, &origin)
}

/// Parses an archive list in MemGator's shape: `id`, `timemap`, `timegate` required (strings),
/// `name` optional (the id when absent), `ignore` optional (`true` = kept, disabled). Each value
/// is checked as `[[archives]]`' are; an error names the entry (`archives_file[N]`, and its id
/// in the reason when it has one) and the field.
pub fn parse(bytes: &[u8], origin: &str) -> Result<Vec<ArchiveConfig>, ConfigError> {
    let entries: Vec<serde_json::Value> = serde_json::from_slice(bytes).map_err(|e| {
        ConfigError::new(
            origin,
            "(file)",
            format!("not a JSON array of archives like MemGator's archives.json: {e}"),
        )
    })?;
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut archives = Vec::with_capacity(entries.len());
    for (i, value) in entries.into_iter().enumerate() {
        let fail = |field: &str, reason: String| {
            ConfigError::new(origin, &format!("archives_file[{i}].{field}"), reason)
        };
        let entry: FileEntry = serde_json::from_value(value)
            .map_err(|e| fail("(entry)", format!("must be an object: {e}")))?;
        let id = required_str(entry.id, "id").map_err(|r| fail("id", r))?;
        // From here the reason names the entry by its id too.
        let fail = |field: &str, reason: String| fail(field, format!("{id:?}: {reason}"));
        super::validate::check_id(&id).map_err(|r| fail("id", r))?;
        if let Some(first) = seen.insert(id.clone(), i) {
            return Err(fail(
                "id",
                format!("duplicate id (also archives_file[{first}])"),
            ));
        }
        let timemap = required_str(entry.timemap, "timemap").map_err(|r| fail("timemap", r))?;
        let timemap = HttpUrl::parse(&timemap).map_err(|r| fail("timemap", r))?;
        let timegate = required_str(entry.timegate, "timegate").map_err(|r| fail("timegate", r))?;
        let timegate = HttpUrl::parse(&timegate).map_err(|r| fail("timegate", r))?;
        let name = match entry.name {
            None | Some(serde_json::Value::Null) => id.clone(),
            Some(serde_json::Value::String(s)) if s.chars().any(char::is_control) => {
                return Err(fail("name", "must be free of control characters".into()))
            }
            Some(serde_json::Value::String(s)) if s.trim().is_empty() => id.clone(),
            Some(serde_json::Value::String(s)) => s,
            Some(_) => return Err(fail("name", "must be a string".into())),
        };
        let ignore = match entry.ignore {
            None | Some(serde_json::Value::Null) => false,
            Some(serde_json::Value::Bool(b)) => b,
            Some(_) => return Err(fail("ignore", "must be true or false".into())),
        };
        archives.push(ArchiveConfig {
            id,
            name,
            timemap: Some(timemap),
            timegate,
            enabled: !ignore,
            ..ArchiveConfig::timemap_default()
        });
    }
    Ok(archives)
}

fn required_str(value: Option<serde_json::Value>, field: &str) -> Result<String, String> {
    match value {
        None | Some(serde_json::Value::Null) => Err(format!("missing (every entry needs {field})")),
        Some(serde_json::Value::String(s)) => Ok(s),
        Some(_) => Err("must be a string".into()),
    }
}

/// The archive list once `archives_file` is read: the file's entries, then the `[[archives]]`
/// config.toml itself lists (`from_config`, empty when it lists none). An id in both is refused:
/// which of the two was meant cannot be guessed.
pub fn combine(
    file: Vec<ArchiveConfig>,
    from_config: Vec<ArchiveConfig>,
    file_origin: &str,
    config_origin: &str,
) -> Result<Vec<ArchiveConfig>, ConfigError> {
    for (i, a) in from_config.iter().enumerate() {
        if let Some(j) = file.iter().position(|f| f.id == a.id) {
            return Err(ConfigError::new(
                config_origin,
                &format!("archives[{i}].id"),
                format!(
                    "duplicate id {:?}: upstream.archives_file ({file_origin}) lists it too, as archives_file[{j}]",
                    a.id
                ),
            ));
        }
    }
    let mut all = file;
    all.extend(from_config);
    Ok(all)
}

#[cfg(test)]
mod tests;
