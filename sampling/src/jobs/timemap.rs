//! A job's TimeMap opened by its served name (`timemaps/NNNNNN.ndjson`): found through the
//! job's `timemaps/index.ndjson` and decoded from its pack as it is read ([`crate::pack`]), or
//! its own file for a job written one file per TimeMap; the index, the packs and the files all
//! opened without following a symlink (`job_files::open`).

use super::error::JobError;
use super::registry::{refusal, Jobs};
use crate::job_files::{self, OpenError, Served};
use std::io::Read;

impl Jobs {
    /// `file` (one of `job_files::timemap_file`'s names) of job `id`'s `timemaps/`, as it
    /// stands (a running job's TimeMaps are served as they are written). Blocking: call it off
    /// the async workers.
    pub fn open_timemap(&self, id: &str, file: &Served) -> Result<Box<dyn Read + Send>, JobError> {
        let (dir, state) = self.output(id)?;
        let numbered = file.name != "index.ndjson" && file.name != "hydration.json";
        if !numbered {
            let f = job_files::open(&dir, file).map_err(|e| refusal(id, file, state, e))?;
            return Ok(Box::new(f));
        }
        let damaged = |why: String| {
            tracing::warn!(job = %id, %why, "damaged TimeMap");
            JobError::FileDamaged {
                file: file.shown(),
                why,
            }
        };
        let open = |name: &str| {
            let Some(served) = job_files::stored_timemaps(name) else {
                return Err(damaged(format!("{name:?} is not a file of timemaps/")));
            };
            match job_files::open(&dir, &served) {
                Ok(f) => Ok(Some(f)),
                Err(OpenError::Missing) => Ok(None),
                Err(e) => Err(refusal(id, &served, state, e)),
            }
        };
        crate::pack::open_timemap(&file.name, open, damaged)?.ok_or_else(|| JobError::FileMissing {
            id: id.to_string(),
            file: file.shown(),
            state,
        })
    }
}
