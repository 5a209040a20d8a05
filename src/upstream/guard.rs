//! Where an archive may send us: the hop rules for its redirects and `rel="timemap"` pages, and
//! the addresses (loopback, private, link-local…) we never connect to on an archive's say-so.
//!
//! Pure: values in, decisions out. The resolved-IP half of the check is in `resolve.rs`, which
//! asks [`forbidden_kind`] about every address a name resolves to.

use crate::config::RedirectHost;
use crate::uri_r::clip;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use url::{Host, Url};

/// One archive's rules: the hosts it is configured on and the ones its operator let it move to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HopRules {
    /// Host and port of the configured `timemap` and `timegate` prefixes, whether that port is
    /// its scheme's default (then the other scheme's default port is the same site: an
    /// http → https upgrade on the same host is followed), and the path a target must start
    /// with there (`/` for any, as a TimeMap's pages and redirects may go anywhere on the host).
    own: Vec<(Host<String>, u16, bool, String)>,
    /// `redirect_hosts`: a host, on the given port or (None) on its scheme's default port.
    extra: Vec<(Host<String>, Option<u16>)>,
    /// Built by [`HopRules::under`]: the refusal names the prefixes, not only the host.
    held_to_paths: bool,
    /// Built by [`HopRules::public`]: any host, but never a loopback, private or link-local
    /// address nor `localhost`.
    anywhere: bool,
}

impl HopRules {
    /// Rules for an archive configured on `prefixes` (its timemap and timegate URLs, parsed as
    /// the config was read) with `redirect_hosts`.
    pub fn new(prefixes: &[Url], redirect_hosts: &[RedirectHost]) -> HopRules {
        HopRules::build(prefixes, redirect_hosts, false)
    }

    /// Rules held to paths: on the hosts of `prefixes`, only under each prefix's own path (on
    /// `redirect_hosts`, anywhere). A memento is fetched under these, so an archive listing a
    /// URI-M elsewhere on its host (`/save/`, an admin page) or on another archive's host gets
    /// nothing fetched.
    pub fn under(prefixes: &[Url], redirect_hosts: &[RedirectHost]) -> HopRules {
        HopRules::build(prefixes, redirect_hosts, true)
    }

    fn build(prefixes: &[Url], redirect_hosts: &[RedirectHost], held_to_paths: bool) -> HopRules {
        let own = prefixes
            .iter()
            .filter_map(|u| {
                let port = u.port_or_known_default()?;
                let path = if held_to_paths { u.path() } else { "/" };
                Some((
                    u.host()?.to_owned(),
                    port,
                    u.port().is_none(),
                    path.to_string(),
                ))
            })
            .collect();
        let extra = redirect_hosts
            .iter()
            .map(|h| (h.host.clone(), h.port))
            .collect();
        HopRules {
            own,
            extra,
            held_to_paths,
            anywhere: false,
        }
    }

    /// Rules for URIs listed, not fetched, on an aggregator's word (its TimeGate's `Link`
    /// header names mementos on every archive's host): any http(s) host but an address of the
    /// kinds [`forbidden_kind`] names, or `localhost`.
    pub fn public() -> HopRules {
        HopRules {
            own: Vec::new(),
            extra: Vec::new(),
            held_to_paths: false,
            anywhere: true,
        }
    }

    /// The domain names of the archive's own configured hosts: the only names allowed to resolve
    /// to a forbidden address (an archive run on a private network is configured so on purpose).
    pub fn own_names(&self) -> Vec<String> {
        self.own
            .iter()
            .filter_map(|(h, ..)| match h {
                Host::Domain(d) => Some(d.to_ascii_lowercase()),
                _ => None,
            })
            .collect()
    }

    /// Whether we may request `target` for this archive. The error says why, naming the target.
    pub fn check(&self, target: &Url) -> Result<(), String> {
        let refuse = |why: &str| Err(format!("{} refused: {why}", clip(target.as_str())));
        if !matches!(target.scheme(), "http" | "https") {
            return refuse("not an http(s) URL");
        }
        let (Some(host), Some(port)) = (target.host(), target.port_or_known_default()) else {
            return refuse("no host");
        };
        let host = host.to_owned();
        let default_port = target.port().is_none();
        let is_own_host = self.own.iter().any(|(h, ..)| *h == host);
        let local_name = matches!(&host, Host::Domain(d)
            if d.eq_ignore_ascii_case("localhost") || d.to_ascii_lowercase().ends_with(".localhost"));
        if self.anywhere && local_name {
            return refuse("a loopback name");
        }
        let allowed = self.anywhere
            || self.own.iter().any(|(h, p, own_default, path)| {
                *h == host
                    && (*p == port || (*own_default && default_port))
                    && target.path().starts_with(path.as_str())
            })
            || self
                .extra
                .iter()
                .any(|(h, p)| *h == host && p.map_or(default_port, |p| p == port));
        if !allowed && self.held_to_paths {
            return refuse(
                "not under this archive's configured prefixes (list its host in the archive's redirect_hosts if its mementos live elsewhere)",
            );
        }
        if !allowed {
            return refuse(
                "not this archive's host and port (list it in the archive's redirect_hosts if the archive moved)",
            );
        }
        let ip = match &host {
            Host::Ipv4(v4) => Some(IpAddr::V4(*v4)),
            Host::Ipv6(v6) => Some(IpAddr::V6(*v6)),
            Host::Domain(_) => None,
        };
        if let Some(kind) = ip.and_then(forbidden_kind) {
            if !is_own_host {
                return refuse(&format!("a {kind} address"));
            }
        }
        Ok(())
    }
}

/// What kind of address we never connect to on an archive's say-so, or None for a public one.
/// IPv4 inside IPv6 (mapped, compatible, NAT64) is judged as the IPv4 address it carries.
pub fn forbidden_kind(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => forbidden_v4(v4),
        IpAddr::V6(v6) => forbidden_v6(v6),
    }
}

fn forbidden_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, ..] = ip.octets();
    if ip.is_unspecified() || a == 0 {
        Some("unspecified")
    } else if ip.is_loopback() {
        Some("loopback")
    } else if ip.is_private() || (a == 100 && (b & 0xc0) == 64) {
        // 100.64.0.0/10 is carrier-grade NAT: private to the operator's network.
        Some("private")
    } else if ip.is_link_local() {
        Some("link-local")
    } else if ip.is_multicast() {
        Some("multicast")
    } else if ip.is_broadcast() || a >= 240 {
        Some("reserved")
    } else {
        None
    }
}

fn forbidden_v6(ip: Ipv6Addr) -> Option<&'static str> {
    let seg = ip.segments();
    if ip.is_unspecified() {
        Some("unspecified")
    } else if ip.is_loopback() {
        Some("loopback")
    } else if let Some(v4) = ip.to_ipv4_mapped() {
        forbidden_v4(v4)
    } else if seg[..6] == [0; 6] || seg[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        // IPv4-compatible (::a.b.c.d) and NAT64 (64:ff9b::a.b.c.d) reach the IPv4 address.
        let [.., hi, lo] = seg;
        forbidden_v4(Ipv4Addr::from(((hi as u32) << 16) | lo as u32))
    } else if ip.is_unique_local() || (seg[0] & 0xffc0) == 0xfec0 {
        // fc00::/7, and the deprecated site-local fec0::/10.
        Some("private")
    } else if ip.is_unicast_link_local() {
        Some("link-local")
    } else if ip.is_multicast() {
        Some("multicast")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(extra: &[&str]) -> HopRules {
        HopRules::new(
            &urls(&[
                "http://127.0.0.1:8080/timemap/link/",
                "http://127.0.0.1:8080/timegate/",
            ]),
            &hosts(extra),
        )
    }

    /// Prefixes as the config hands them over: parsed.
    fn urls(texts: &[&str]) -> Vec<Url> {
        texts
            .iter()
            .map(|t| Url::parse(t).expect("a URL"))
            .collect()
    }

    fn hosts(texts: &[&str]) -> Vec<RedirectHost> {
        texts
            .iter()
            .map(|t| RedirectHost::parse(t).expect("a host"))
            .collect()
    }

    fn ok(r: &HopRules, url: &str) -> bool {
        r.check(&Url::parse(url).expect("url")).is_ok()
    }

    #[test]
    fn same_host_and_port_only_unless_listed() {
        let r = rules(&[]);
        assert!(ok(&r, "http://127.0.0.1:8080/moved/x"));
        assert!(!ok(&r, "http://127.0.0.1:8081/x"));
        assert!(!ok(&r, "http://127.0.0.2:8080/x"));
        assert!(!ok(&r, "ftp://127.0.0.1:8080/x"));
        let r = rules(&["127.0.0.1:8081"]);
        assert!(ok(&r, "http://127.0.0.1:8081/x"));
        // A listed port is that port only.
        assert!(!ok(&r, "http://127.0.0.1:8082/x"));
    }

    #[test]
    fn a_listed_forbidden_address_is_still_refused_unless_it_is_the_archives_own_host() {
        let r = rules(&["127.0.0.2:8080", "[::1]:8080", "169.254.169.254"]);
        let err = r
            .check(&Url::parse("http://127.0.0.2:8080/x").expect("url"))
            .expect_err("refused");
        assert!(
            err.contains("127.0.0.2") && err.contains("loopback"),
            "{err}"
        );
        assert!(!ok(&r, "http://[::1]:8080/x"));
        assert!(!ok(&r, "http://169.254.169.254/latest/meta-data/"));
    }

    #[test]
    fn https_upgrade_on_the_default_ports_is_the_same_site() {
        let r = HopRules::new(&urls(&["http://Web.Example.org/tm/"]), &[]);
        assert!(ok(&r, "https://web.example.org/tm/x"));
        assert!(ok(&r, "http://web.example.org:80/tm/x"));
        assert!(!ok(&r, "https://web.example.org:8443/tm/x"));
        assert!(!ok(&r, "https://other.example.org/tm/x"));
        assert_eq!(r.own_names(), vec!["web.example.org".to_string()]);
        let r = HopRules::new(
            &urls(&["http://web.example.org/"]),
            &hosts(&["moved.example.org"]),
        );
        assert!(ok(&r, "https://moved.example.org/x"));
        assert!(!ok(&r, "https://moved.example.org:444/x"));
    }

    #[test]
    fn rules_under_prefixes_hold_the_path_too() {
        let r = HopRules::under(
            &urls(&["https://web.example.org/web/", "https://cdn.example.org/"]),
            &hosts(&["moved.example.org"]),
        );
        assert!(ok(&r, "https://web.example.org/web/2001/http://a.org/"));
        assert!(ok(&r, "http://web.example.org/web/x"));
        assert!(ok(&r, "https://cdn.example.org/anything"));
        assert!(ok(&r, "https://moved.example.org/anywhere"));
        for refused in [
            "https://web.example.org/save/http://a.org/",
            "https://web.example.org/web",
            "https://web.example.org/",
            "https://other.example.org/web/x",
        ] {
            let err = r
                .check(&Url::parse(refused).expect("url"))
                .expect_err(refused);
            assert!(err.contains("configured prefixes"), "{err}");
        }
    }

    #[test]
    fn forbidden_addresses_v4_and_v6() {
        for (ip, kind) in [
            ("0.0.0.0", "unspecified"),
            ("127.0.0.2", "loopback"),
            ("10.1.2.3", "private"),
            ("172.16.0.1", "private"),
            ("192.168.1.1", "private"),
            ("100.64.0.1", "private"),
            ("169.254.169.254", "link-local"),
            ("224.0.0.1", "multicast"),
            ("255.255.255.255", "reserved"),
            ("::", "unspecified"),
            ("::1", "loopback"),
            ("::ffff:169.254.169.254", "link-local"),
            ("::ffff:127.0.0.1", "loopback"),
            ("::127.0.0.1", "loopback"),
            ("64:ff9b::a9fe:a9fe", "link-local"),
            ("fd00::1", "private"),
            ("fe80::1", "link-local"),
            ("ff02::1", "multicast"),
        ] {
            let ip: IpAddr = ip.parse().expect("ip");
            assert_eq!(forbidden_kind(ip), Some(kind), "{ip}");
        }
        for ip in [
            "93.184.216.34",
            "2606:2800:220:1:248:1893:25c8:1946",
            "100.128.0.1",
        ] {
            assert_eq!(forbidden_kind(ip.parse().expect("ip")), None, "{ip}");
        }
    }
}
