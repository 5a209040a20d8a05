//! MemDays/Q simulation harness: replays daily TimeMap series through tmproxy's own cache policy
//! (`tmproxy_core::policy`) and reports the measures of `docs/cache-policy.md`.

pub mod adaptive;
pub mod adaptive_summary;
pub mod calibration;
#[cfg(feature = "e2e")]
pub mod e2e;
pub mod generate;
pub mod import;
pub mod jcdl;
pub mod plot;
pub mod progress;
pub mod replay;
pub mod rng;
pub mod route;
pub mod series;
pub mod sweep;
