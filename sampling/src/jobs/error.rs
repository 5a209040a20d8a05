//! Why the jobs refuse a request. The crate says what went wrong; the server gives each case its
//! HTTP status and its message in one place (`src/error.rs`, `AppError::Sampling`).

use super::feed_state::Feed;
use super::record::JobState;
use crate::engine::SpecError;

/// A job request that cannot be answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobError {
    /// A spec (or a request about a job) that cannot run: the field and why.
    BadSpec(String),
    /// No job with this id (as asked).
    NoSuchJob(String),
    /// The job's output is asked for before it is done.
    NotDone { id: String, state: JobState },
    /// A feed of the job is running (its state given): a second one is not started.
    FeedRunning { id: String, feed: Feed },
    /// A file name the API does not serve (not one of the pinned names, or not a TimeMap
    /// file's pattern), as asked.
    NoSuchFile(String),
    /// A served file that is not there: the job, the file (as `Served::shown` names it), the
    /// job's state.
    FileMissing {
        id: String,
        file: String,
        state: JobState,
    },
    /// A job file that is a symlink, a FIFO or another non-regular file: refused, and why.
    FileRefused(String),
    /// A TimeMap whose index line or stored frame does not hold (a span outside its pack, a
    /// frame cut short or changed): the file as served, and what is wrong.
    FileDamaged { file: String, why: String },
    /// No jobs run: the jobs directory could not be opened.
    Unavailable,
    /// Any other failure reading a job's files (permissions, I/O): ours, not the client's.
    Io(String),
}

/// A spec refused by validation or by the server's bounds: a bad spec naming the field.
impl From<SpecError> for JobError {
    fn from(e: SpecError) -> Self {
        JobError::BadSpec(e.to_string())
    }
}
