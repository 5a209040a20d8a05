//! The route a request is counted and logged under: one of a fixed set, so no client can grow
//! the metrics' series or the log's fields by inventing paths.

/// Every route a request is counted under: a metric label and a log field from a fixed set,
/// which no client can multiply by inventing paths.
pub const ROUTES: [&str; 12] = [
    "root", "timemap", "timegate", "memento", "api", "archives", "about", "ui", "healthz",
    "metrics", "admin", "other",
];

/// One of [`ROUTES`], by its place there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RouteId(usize);

impl RouteId {
    pub fn name(self) -> &'static str {
        ROUTES[self.0]
    }

    pub fn index(self) -> usize {
        self.0
    }
}

/// The route a path belongs to: its first segment when that is one of ours, else `other`.
pub fn route_of(path: &str) -> RouteId {
    if path == "/" {
        return RouteId(0);
    }
    // A byte loop: `split`'s searcher cost every request more than the few bytes it reads.
    let first = path.strip_prefix('/').map(|p| {
        p.get(..p.bytes().position(|b| b == b'/').unwrap_or(p.len()))
            .unwrap_or(p)
    });
    // "root" and "other" are names, never paths.
    let named = ROUTES[1..ROUTES.len() - 1]
        .iter()
        .position(|r| Some(*r) == first)
        .map(|i| i + 1);
    RouteId(named.unwrap_or(ROUTES.len() - 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_come_from_a_fixed_set() {
        assert_eq!(route_of("/").name(), "root");
        assert_eq!(route_of("/timemap/link/http://e.com/").name(), "timemap");
        assert_eq!(route_of("/timemap/json/2/http://e.com/").name(), "timemap");
        assert_eq!(route_of("/api/json/2015/http://e.com/").name(), "api");
        // MemGator's routes count under the route they extend: no new series per format.
        assert_eq!(
            route_of("/memento/proxy/2015/http://e.com/").name(),
            "memento"
        );
        assert_eq!(
            route_of("/memento/json/2015/http://e.com/").name(),
            "memento"
        );
        assert_eq!(route_of("/api/link/2015/http://e.com/").name(), "api");
        assert_eq!(route_of("/admin/jobs/1").name(), "admin");
        assert_eq!(route_of("/ui/admin").name(), "ui");
        for made_up in [
            "/x",
            "/%00",
            "/timemapx/1",
            "/../timemap",
            "//",
            "/root",
            "/other/x",
        ] {
            assert_eq!(route_of(made_up).name(), "other", "{made_up}");
        }
    }
}
