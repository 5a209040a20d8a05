//! toml's errors turned into [`ConfigError`]s that name the key they sit under.

use super::fields::{KEY_MARK, VALUE_MARK};
use super::ConfigError;
use std::collections::HashMap;
use std::fmt::Write as _;

/// Turns a toml error into a [`ConfigError`], recovering the key path from its span.
pub(super) fn toml_error(e: &toml::de::Error, text: &str, origin: &str) -> ConfigError {
    let message = e.message();
    let (ours, message) = match message.strip_prefix(VALUE_MARK) {
        Some(m) => (true, m),
        None => (false, message),
    };
    // Our message may name a part of the value the span cannot (an array's entry).
    let (key_suffix, message) = match message.split_once(KEY_MARK) {
        Some((suffix, m)) if ours => (suffix, m),
        _ => ("", message),
    };
    // toml's parse messages span several lines; a ConfigError is one.
    let mut reason = message
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("; ");
    let span = e.span();
    let key = span
        .as_ref()
        .and_then(|sp| key_path_at(text, sp.start))
        .map(|k| format!("{k}{key_suffix}"))
        .unwrap_or_else(|| "(file)".to_owned());
    if let (false, Some(sp)) = (ours, span) {
        let (line, col) = line_col(text, sp.start);
        let _ = write!(reason, " (line {line}, column {col})");
    }
    ConfigError::new(origin, &key, reason)
}

fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = text.get(..offset).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

/// The dotted key path of whatever sits at byte `offset`, found by replaying table headers up to that line.
/// A heuristic (it does not understand multi-line strings or inline tables), good for this flat schema.
fn key_path_at(text: &str, offset: usize) -> Option<String> {
    let mut table = String::new();
    let mut counts: HashMap<String, usize> = HashMap::new();
    let mut pos = 0;
    for line in text.split_inclusive('\n') {
        let end = pos + line.len();
        let here = offset < end;
        if let Some((name, is_array)) = parse_header(line.trim()) {
            table = if is_array {
                let n = counts.entry(name.clone()).or_insert(0);
                let path = format!("{name}[{n}]");
                *n += 1;
                path
            } else {
                name
            };
            if here {
                return Some(table);
            }
        } else if here {
            let key = line
                .split_once('=')
                .map(|(k, _)| unquote(k.trim()))
                .filter(|k| !k.is_empty() && !k.starts_with('#'));
            return match key {
                Some(k) if table.is_empty() => Some(k),
                Some(k) => Some(format!("{table}.{k}")),
                None => Some(table).filter(|t| !t.is_empty()),
            };
        }
        pos = end;
    }
    Some(table).filter(|t| !t.is_empty())
}

/// `[name]` → (name, false), `[[name]]` → (name, true); trailing comments allowed.
fn parse_header(line: &str) -> Option<(String, bool)> {
    let (inner, is_array) = if let Some(r) = line.strip_prefix("[[") {
        (r.split_once("]]")?.0, true)
    } else {
        (line.strip_prefix('[')?.split_once(']')?.0, false)
    };
    let name = inner.trim();
    if name.is_empty() || name.contains('=') {
        return None;
    }
    Some((unquote(name), is_array))
}

fn unquote(k: &str) -> String {
    k.trim_matches(|c| c == '"' || c == '\'').to_owned()
}
