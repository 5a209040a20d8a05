//! What the stages after the offline ones share: the spec, the progress, the first captures and
//! the logs of what was set aside.

use super::checkpoint::FirstCaptures;
use super::live::Progress;
use super::ndjson::Log;
use super::spec::Spec;
use crate::SetAside;

/// What the stages after the offline ones share.
#[derive(Clone, Copy)]
pub(super) struct Stages<'a> {
    pub(super) spec: &'a Spec,
    pub(super) progress: &'a Progress,
    /// First captures, the checkpoint's first.
    pub(super) captures: &'a FirstCaptures,
    /// `set_aside.ndjson`: every URL a stage did not pass on.
    pub(super) set_aside: &'a Log,
    /// `errors.ndjson`: CDX answers that were not a clean 200.
    pub(super) errors: &'a Log,
}

impl Stages<'_> {
    /// A URL the sampler let go (its pool had better ones, a second root, past Eq. 1's target).
    pub(super) fn downsampled(&self, url: &str) {
        self.set_aside.write(&SetAside {
            stage: "downsampling",
            url: url.to_string(),
            reason: "downsampled".to_string(),
        });
    }
}
