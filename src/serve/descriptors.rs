//! The open-file limit (`RLIMIT_NOFILE`) and the connections that fit under it: `tmproxy serve`
//! raises its soft limit to the hard one, then holds `[server] max_connections` below it, so
//! client connections alone can never use up the descriptors the archives' sockets, the store
//! and the log need. Running out anyway (another use of descriptors) is met in the accept loop.

/// Descriptors kept back from client connections: a quarter of the limit, at least this many
/// (the store's files, the log, the runtimes' own, one socket per archive per fan-out)…
pub const HEADROOM_MIN: u64 = 128;
/// …and at most this many: past it a quarter of a big limit would only sit unused.
pub const HEADROOM_MAX: u64 = 4096;

/// How many connections fit under `limit` open files: the limit less its headroom, at least 1.
pub fn connections_under(limit: u64) -> usize {
    let headroom = (limit / 4).clamp(HEADROOM_MIN, HEADROOM_MAX);
    usize::try_from(limit.saturating_sub(headroom).max(1)).unwrap_or(usize::MAX)
}

/// The cap to serve with: `configured`, or fewer when `limit` (the soft open-file limit, None
/// when unknown or unlimited) cannot hold that many.
pub fn fitted_cap(configured: usize, limit: Option<u64>) -> usize {
    limit.map_or(configured, |l| configured.min(connections_under(l)))
}

/// Raises the soft open-file limit to the hard one; the soft limit in force afterwards (None
/// when it cannot be read, or is unlimited). A raise refused is no error: the limit stays.
pub fn raise_open_file_limit() -> Option<u64> {
    use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
    let now = getrlimit(Resource::Nofile);
    if now.current != now.maximum {
        let raised = Rlimit {
            current: now.maximum,
            maximum: now.maximum,
        };
        if let Err(e) = setrlimit(Resource::Nofile, raised) {
            tracing::debug!(error = %e, "cannot raise the open-file limit to the hard limit");
        }
    }
    getrlimit(Resource::Nofile).current
}

/// Whether an accept failed for want of a descriptor (the process's, or the system's).
pub fn out_of_descriptors(e: &std::io::Error) -> bool {
    matches!(
        rustix::io::Errno::from_io_error(e),
        Some(rustix::io::Errno::MFILE | rustix::io::Errno::NFILE)
    )
}

/// `configured` fitted under this process's open-file limit (raised to the hard one first), with
/// a line saying what was chosen and why.
pub fn fit_max_connections(configured: usize) -> usize {
    let limit = raise_open_file_limit();
    let cap = fitted_cap(configured, limit);
    let shown = limit.map_or_else(|| "unlimited".to_owned(), |l| l.to_string());
    if cap < configured {
        tracing::warn!(
            max_connections = cap,
            configured,
            open_file_limit = %shown,
            "max_connections lowered to fit the open-file limit (less a quarter kept for the archives, the store and the log)"
        );
    } else {
        tracing::info!(max_connections = cap, open_file_limit = %shown, "connections capped");
    }
    cap
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_stays_a_headroom_below_the_limit() {
        assert_eq!(connections_under(1024), 768);
        assert_eq!(connections_under(256), 128);
        assert_eq!(connections_under(100), 1);
        assert_eq!(connections_under(1 << 20), (1 << 20) - 4096);
        assert_eq!(fitted_cap(10_000, Some(1024)), 768);
        assert_eq!(fitted_cap(500, Some(1024)), 500);
        assert_eq!(fitted_cap(10_000, Some(65_536)), 10_000);
        assert_eq!(fitted_cap(10_000, None), 10_000);
    }

    #[test]
    fn emfile_and_enfile_are_running_out_and_others_are_not() {
        let e = |n| std::io::Error::from_raw_os_error(n);
        assert!(out_of_descriptors(&e(
            rustix::io::Errno::MFILE.raw_os_error()
        )));
        assert!(out_of_descriptors(&e(
            rustix::io::Errno::NFILE.raw_os_error()
        )));
        assert!(!out_of_descriptors(&e(
            rustix::io::Errno::CONNABORTED.raw_os_error()
        )));
        assert!(!out_of_descriptors(&std::io::Error::other("x")));
    }
}
