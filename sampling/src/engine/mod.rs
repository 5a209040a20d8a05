//! The sampling engine: a job spec in, a sample out, every stage streamed and counted, resumable.
//! `tmproxy sample` runs it from the command line; the admin jobs will run the same engine.
//!
//! Stages after the offline ones: first capture of each candidate through the CDX API (in
//! parallel, rate-limited), the MIME filter (`text/html`), the year filter (1996 on, within
//! `years`), the popular domains' quota, root-URL upsampling (a domain without a root URL gets
//! `https://host/` if it was first archived 1996–2002, within `years`), the long-tail reduction,
//! log downsampling, and optionally each sampled URL's TimeMap through CDX pagination (revisits
//! hydrated). Every CDX stage asks `concurrency` at a time and decides in a fixed order, so the
//! result depends on the seed, never on arrival order.
//!
//! Files in the output directory: `sample.ndjson` (`url, year, root, first_capture, mime`),
//! `funnel.json` (`[{stage, in, out, set_aside, errors, from?, into?}]`, pipeline order, chained:
//! see [`FunnelRow`](crate::FunnelRow)), `set_aside.ndjson` and `errors.ndjson` (every URL a stage did not pass on,
//! with its stage and reason: with the sample, each URL exactly once), `retries.ndjson` (every
//! CDX retry), `shortfalls.json` (targets the candidate pool could not meet), `report.md`,
//! `ccdf.svg`, `progress.json` (the counters, see [`progress`], saved at each stage change and every
//! few seconds), `timemaps/` when collected, and the checkpoints: `first_captures.ndjson` (a header
//! with the spec's result hash, then each CDX answer appended as it arrives) and
//! `timemaps/index.ndjson` (each TimeMap once its frame is whole in its pack, [`crate::pack`]). A run that stops (killed,
//! cancelled) and starts again over the same directory reuses them instead of asking again, and
//! ends with the uninterrupted run's sample; a directory checkpointed for another spec is
//! refused.
//!
//! Memory: the offline stages keep the current key host part's root, nothing per line or host;
//! candidates stream to the CDX stage through a bounded channel; the sampler
//! ([`SpillSampler`](crate::downsample::SpillSampler)) writes every kept candidate to sorted runs under `out/.spill/` (a chunk
//! of at most 64 MiB in memory, less under a small `max_memory`), and downsampling is a merge
//! of them that holds one (year, domain)'s `candidate_pool` at a time and writes
//! `sample.ndjson` as it picks; the report's per-domain counts are spilled too and summed into
//! histograms and top-20 lists. Root upsampling's per-domain facts (a root candidate, a kept
//! URL's host) are spilled the same way as answers arrive and merged by domain when the stage
//! starts (`root_hosts.rs`: a chunk of a quarter of the sampler's, and a window of 4,096
//! recent domains for the progress estimate). The quota holds 5,000 URLs per popular domain;
//! the TimeMap stage reads the sample back line by line beside its index's entries and its
//! failures, sorted under `out/.spill/` (`timemaps/index.rs`: a chunk of a quarter of the
//! sampler's). A resumed run's checkpoint answers are on disk above 262,144 lines
//! (`resumed.rs`: a sorted file, its index in pages on disk, one entry a page of 21,760 answers
//! in memory, what still grows, 0.0011 bytes an answer); BENCHMARKS.md, "Sampling at scale", measures the rest.
//! `.spill/` is removed at the start of every run (never trusted across runs: a resumed run walks the input again)
//! and however the run ends (`run_with`).

mod checkpoint;
mod first_capture;
mod input;
mod limits;
mod live;
mod ndjson;
mod popular;
pub mod progress;
mod resumed;
mod root_hosts;
mod roots;
mod run;
mod sample_file;
mod spec;
mod stages;
mod timemaps;

// A façade: the run (which calls every stage), what the stages share and the sample's line are
// files of their own, so no stage imports the run that calls it.
pub use limits::{Limits, MemoryUse};
pub use live::Progress;
pub use run::{run, run_with, RunSummary};
pub use sample_file::SampledUrl;
pub use spec::{DownsamplingSpec, Spec, SpecError};
