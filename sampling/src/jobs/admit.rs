//! A submitted job's boundary: its `input` and `cdx_api` checked against `[sampling] input_dir`
//! and `allowed_urls` (what is checked is what is opened), and its budget capped, each cap named.

use super::Jobs;
use crate::engine::{Spec, SpecError};
use std::path::Path;

/// Why a submission was refused (a 400 naming the field).
pub type Refused = SpecError;

fn refuse(field: &str, reason: impl Into<String>) -> Refused {
    SpecError {
        field: field.to_string(),
        reason: reason.into(),
    }
}

impl Jobs {
    /// Checks a submitted spec against the boundary (its budget is capped by `submit`, which
    /// says so in the job's `warnings`).
    pub fn admit(&self, mut spec: Spec) -> Result<Spec, Refused> {
        spec.validate()?;
        // What is checked is what is used: the URL as the client that will fetch it reads it.
        let allowed = |u: &str| {
            self.limits
                .allowed_urls
                .iter()
                .find_map(|p| under_prefix(u, p))
        };
        spec.cdx_api = allowed(&spec.cdx_api).ok_or_else(|| {
            refuse(
                "cdx_api",
                format!("{} is not under [sampling] allowed_urls", spec.cdx_api),
            )
        })?;
        if spec.input.contains("://") {
            spec.input = allowed(&spec.input).ok_or_else(|| {
                refuse(
                    "input",
                    format!("{} is not under [sampling] allowed_urls", spec.input),
                )
            })?;
        } else {
            let root = std::fs::canonicalize(&self.limits.input_dir).map_err(|e| {
                refuse(
                    "input",
                    format!("[sampling] input_dir {}: {e}", self.limits.input_dir),
                )
            })?;
            let given = Path::new(&spec.input);
            let candidate = if given.is_absolute() {
                given.to_path_buf()
            } else {
                root.join(given)
            };
            // Resolves `..` and symlinks: what is opened is what is checked.
            let real = std::fs::canonicalize(&candidate)
                .map_err(|e| refuse("input", format!("{}: {e}", spec.input)))?;
            if !real.starts_with(&root) || !real.is_file() {
                return Err(refuse(
                    "input",
                    format!("{} is not a file inside [sampling] input_dir", spec.input),
                ));
            }
            spec.input = real.display().to_string();
        }
        Ok(spec)
    }

    /// Caps the spec's budget by `[sampling]`; says what it changed (the job's `warnings`).
    pub(super) fn cap(&self, spec: &mut Spec) -> Vec<String> {
        let mut warnings = Vec::new();
        if spec.concurrency > self.limits.concurrency {
            warnings.push(format!(
                "concurrency {} capped to {} by [sampling] concurrency",
                spec.concurrency, self.limits.concurrency
            ));
            spec.concurrency = self.limits.concurrency;
        }
        let cap = self.limits.rate_limit;
        if cap > 0.0 && (spec.rate_limit == 0.0 || spec.rate_limit > cap) {
            let asked = if spec.rate_limit == 0.0 {
                "unlimited".to_string()
            } else {
                format!("{}/s", spec.rate_limit)
            };
            warnings.push(format!(
                "rate_limit {asked} capped to {cap}/s by [sampling] rate_limit"
            ));
            spec.rate_limit = cap;
        }
        warnings
    }
}

/// `candidate` parsed, when it is under the allowed `prefix`: the same scheme, host and port, no
/// user info (`https://web.archive.org@evil.example/` names the host evil.example), and a path
/// that continues the prefix's at a segment boundary (`/cdx` admits `/cdx` and `/cdx/x`, not
/// `/cdx.evil`); dot segments are resolved first, as any client fetching it would. A prefix
/// with a query admits only URLs whose query starts with it.
pub fn under_prefix(candidate: &str, prefix: &url::Url) -> Option<String> {
    let p = prefix;
    let c = url::Url::parse(candidate.trim()).ok()?;
    let same_origin = matches!(c.scheme(), "http" | "https")
        && c.scheme() == p.scheme()
        && c.host() == p.host()
        && c.port_or_known_default() == p.port_or_known_default();
    if !same_origin || !c.username().is_empty() || c.password().is_some() {
        return None;
    }
    let (cp, pp) = (c.path(), p.path());
    let path_ok =
        cp == pp || (cp.starts_with(pp) && (pp.ends_with('/') || cp[pp.len()..].starts_with('/')));
    let query_ok = match p.query() {
        None => true,
        Some(q) => cp == pp && c.query().is_some_and(|cq| cq.starts_with(q)),
    };
    (path_ok && query_ok).then(|| c.to_string())
}
