//! An `[[archives]] redirect_hosts` entry, read once with the config: a host, or a host and
//! port, where the archive's redirects and `rel="timemap"` pages may also lead. The fan-out's
//! hop rules (`upstream/guard.rs`) take these values as they are.

use std::fmt;
use std::str::FromStr;
use url::Host;

/// A host (and port) an archive may send us to besides its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedirectHost {
    pub host: Host<String>,
    /// None: its scheme's default port.
    pub port: Option<u16>,
}

impl RedirectHost {
    /// Reads `host` or `host:port` (`[v6]:port` for IPv6), no scheme or path. The error says
    /// why, quoting the entry.
    pub fn parse(s: &str) -> Result<RedirectHost, String> {
        let bad = |why: &str| Err(format!("{s:?} is not a host or host:port ({why})"));
        if s.is_empty() || s.contains(['/', '@', '?', '#', ' ']) {
            return bad(
                "write only the host, e.g. \"web.example.org\" or \"web.example.org:8080\"",
            );
        }
        let (host, port) = if let Some(rest) = s.strip_prefix('[') {
            match rest.split_once(']') {
                Some((v6, "")) => (format!("[{v6}]"), None),
                Some((v6, tail)) => match tail.strip_prefix(':') {
                    Some(p) => (format!("[{v6}]"), Some(p)),
                    None => return bad("junk after the IPv6 address"),
                },
                None => return bad("unclosed ["),
            }
        } else {
            match s.split_once(':') {
                Some((h, p)) => (h.to_string(), Some(p)),
                None => (s.to_string(), None),
            }
        };
        let port = match port {
            Some(p) => match p.parse::<u16>() {
                Ok(n) if n > 0 => Some(n),
                _ => return bad("the port must be 1 to 65535"),
            },
            None => None,
        };
        match Host::parse(&host) {
            Ok(host) => Ok(RedirectHost { host, port }),
            Err(e) => bad(&e.to_string()),
        }
    }
}

impl FromStr for RedirectHost {
    type Err = String;

    fn from_str(s: &str) -> Result<RedirectHost, String> {
        RedirectHost::parse(s)
    }
}

/// As the file writes it (`host`, `host:port`, `[v6]:port`), so it reads back the same.
impl fmt::Display for RedirectHost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.port {
            Some(port) => write!(f, "{}:{port}", self.host),
            None => write!(f, "{}", self.host),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redirect_hosts_entries_parse_strictly() {
        assert!(RedirectHost::parse("web.example.org").is_ok());
        assert_eq!(
            RedirectHost::parse("Web.Example.org:8080").expect("ok"),
            RedirectHost {
                host: Host::Domain("web.example.org".into()),
                port: Some(8080)
            }
        );
        assert!(RedirectHost::parse("[::1]:80").is_ok());
        for bad in [
            "",
            "http://x.org",
            "x.org/",
            "x.org:0",
            "x.org:99999",
            "a@b",
            "[::1",
            "x y",
        ] {
            assert!(RedirectHost::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn an_entry_reads_back_as_written() {
        for text in [
            "moved.example.org",
            "[::1]:8080",
            "10.0.0.1:81",
            "[2001:db8::1]",
        ] {
            let host = RedirectHost::parse(text).expect(text);
            assert_eq!(host.to_string(), text);
            assert_eq!(RedirectHost::parse(&host.to_string()), Ok(host));
        }
    }
}
