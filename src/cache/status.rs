//! How an answer came about (`X-Cache`): shared by the service that decides it and the
//! counters that count it.

/// How an answer came about, as `X-Cache` says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheStatus {
    Hit,
    Miss,
    Refresh,
    Stale,
}

impl CacheStatus {
    pub const ALL: [CacheStatus; 4] = [
        CacheStatus::Hit,
        CacheStatus::Miss,
        CacheStatus::Refresh,
        CacheStatus::Stale,
    ];

    /// As a metric's label and a log field: lower case.
    pub fn label(self) -> &'static str {
        match self {
            CacheStatus::Hit => "hit",
            CacheStatus::Miss => "miss",
            CacheStatus::Refresh => "refresh",
            CacheStatus::Stale => "stale",
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            CacheStatus::Hit => "HIT",
            CacheStatus::Miss => "MISS",
            CacheStatus::Refresh => "REFRESH",
            CacheStatus::Stale => "STALE",
        }
    }
}
