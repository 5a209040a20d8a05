//! The configured archives and their health: an archive that keeps failing is left alone a while.

use crate::config::{ArchiveConfig, ArchiveKind, Config, HttpUrl};
use crate::timemap::credit::Credits;
use crate::timemap::model::ArchiveId;
use crate::uri_text::{encoded_dot_segment_in, resolve_uri_r_path};
use chrono::{DateTime, Utc};
use std::sync::Arc;
use std::time::Duration;
use tmproxy_core::cdx::replay::Replay;
use tmproxy_core::cdx::Dialect;
use tmproxy_core::raw_memento::RawForm;
use url::Url;

/// Whose mementos an aggregator's are: the `kind = "aggregator"` archives, and every other
/// configured archive's memento hosts (enabled or not: a host names its archive either way).
pub fn credits(config: &Config) -> Credits {
    let aggregators = config
        .archives
        .iter()
        .filter(|a| a.enabled && a.kind == ArchiveKind::Aggregator)
        .map(|a| a.id.as_str());
    let direct: Vec<(Vec<Url>, &str)> = config
        .archives
        .iter()
        .filter(|a| a.kind != ArchiveKind::Aggregator)
        .map(|a| {
            (
                Archive::from_config(config, a).memento_urls(),
                a.id.as_str(),
            )
        })
        .collect();
    let hosts = direct
        .iter()
        .flat_map(|(urls, id)| urls.iter().map(move |u| (u.as_str(), *id)));
    Credits::new(aggregators, hosts)
}

/// One enabled archive, as the fan-out uses it.
#[derive(Debug, Clone)]
pub struct Archive {
    pub id: ArchiveId,
    pub name: String,
    /// TimeMap URL prefix: the URI-R is appended to it, and to nothing else. None for a
    /// `kind = "cdx"` archive.
    pub timemap: Option<HttpUrl>,
    pub timegate: HttpUrl,
    pub timeout: Duration,
    /// Set for a `kind = "cdx"` archive: asked through its CDX API instead of `timemap`.
    pub cdx: Option<CdxSource>,
    /// `kind = "aggregator"`: lists other archives' mementos.
    pub aggregator: bool,
    /// How `/memento/proxy` makes the raw form of its URI-Ms (`raw`).
    pub raw: RawForm,
}

/// How a `kind = "cdx"` archive is asked and its URI-Ms made.
#[derive(Debug, Clone)]
pub struct CdxSource {
    /// None only in a config built in code without one (validation refuses that), and then
    /// every fetch fails saying so.
    pub endpoint: Option<HttpUrl>,
    /// None: told from its answers.
    pub dialect: Option<Dialect>,
    /// The template, checked as the config was read; None only in a config built in code
    /// without one (validation refuses that), and then every fetch fails saying so.
    pub replay: Option<Replay>,
}

impl Archive {
    pub fn from_config(config: &Config, a: &ArchiveConfig) -> Archive {
        Archive {
            id: Arc::from(a.id.as_str()),
            name: a.name.clone(),
            timemap: a.timemap.clone(),
            timegate: a.timegate.clone(),
            timeout: config.archive_timeout(a),
            cdx: (a.kind == ArchiveKind::Cdx).then(|| CdxSource {
                endpoint: a.cdx.clone(),
                dialect: a.dialect.known(),
                replay: a.replay.clone(),
            }),
            aggregator: a.kind == ArchiveKind::Aggregator,
            raw: a.raw.clone(),
        }
    }

    /// The URLs this archive is configured on: where its requests and redirects may go (its
    /// replay host too, where its TimeGate's mementos live).
    pub fn prefixes(&self) -> Vec<Url> {
        let mut out = vec![self.timegate.url().clone()];
        match &self.cdx {
            Some(c) => {
                out.extend(c.endpoint.as_ref().map(|e| e.url().clone()));
                out.extend(self.replay_url());
            }
            None => out.extend(self.timemap.as_ref().map(|t| t.url().clone())),
        }
        out
    }

    /// The URL a CDX archive's replay template starts with. The configured URLs were parsed as
    /// the config was read; the template is core's, checked then to start with http(s), and its
    /// prefix is parsed here, as the upstream is set up.
    fn replay_url(&self) -> Option<Url> {
        let replay = self.cdx.as_ref()?.replay.as_ref()?;
        Url::parse(replay.prefix()).ok()
    }

    /// Where this archive's mementos may be fetched from (`/memento/proxy`): per host of its
    /// TimeGate and its TimeMap (or CDX replay) prefix, the directory those URLs share there.
    /// `https://web.archive.org/web/timemap/link/` and `…/web/` give `…/web/`; a TimeGate at
    /// `/timegate/` and a TimeMap at `/timemap/link/` give `/`, the whole host.
    pub fn memento_prefixes(&self) -> Vec<String> {
        self.memento_urls().into_iter().map(String::from).collect()
    }

    /// [`Archive::memento_prefixes`] as URLs, for the hop rules.
    pub fn memento_urls(&self) -> Vec<Url> {
        let listing = match &self.cdx {
            Some(_) => self.replay_url(),
            None => self.timemap.as_ref().map(|t| t.url().clone()),
        };
        let mut out: Vec<Url> = Vec::new();
        for u in std::iter::once(self.timegate.url().clone()).chain(listing) {
            let dir = directory(u.path()).to_string();
            let same_site = |o: &Url| {
                o.host() == u.host() && o.port_or_known_default() == u.port_or_known_default()
            };
            match out.iter_mut().find(|o| same_site(o)) {
                Some(o) => {
                    let shared = common_directory(o.path(), &dir).to_string();
                    o.set_path(&shared);
                }
                None => {
                    let mut o = u.clone();
                    o.set_path(&dir);
                    o.set_query(None);
                    o.set_fragment(None);
                    out.push(o);
                }
            }
        }
        out
    }

    /// The TimeGate URL for a URI-R, checked as [`Archive::timemap_for`] checks a URI-T.
    pub fn timegate_for(&self, uri_r: &str) -> Result<Url, String> {
        uri_t_under(&self.timegate, uri_r)
    }

    /// The URI-T for a URI-R, as the exact URL to send (parsed once, here: it is sent as it is).
    /// Because the prefix carries the scheme and host, the URI-R can only ever land in this
    /// archive's path: it never chooses the host we connect to. The URI-R's dot segments are
    /// resolved inside it first (a [`UriR`] already is; an old cache key may not be), and the URL
    /// is checked as `url` parses it (and sent as that parse serialises it): same scheme, host
    /// and port as the prefix, a path that starts with the prefix's path (and a query with its
    /// query). Anything else is refused, never sent.
    ///
    /// [`UriR`]: crate::uri_r::UriR
    pub fn timemap_for(&self, uri_r: &str) -> Result<Url, String> {
        match &self.timemap {
            Some(prefix) => uri_t_under(prefix, uri_r),
            None => Err("the archive has no timemap prefix (kind = \"cdx\")".into()),
        }
    }
}

/// `path` up to and with its last `/` (`/web/timemap` is in `/web/`).
fn directory(path: &str) -> &str {
    &path[..path.rfind('/').map_or(0, |i| i + 1)]
}

/// The longest directory both `a` and `b` (directories, ending in `/`) are in.
fn common_directory<'a>(a: &'a str, b: &str) -> &'a str {
    let same = a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
    directory(&a[..same])
}

/// `prefix` + `uri_r` (dot segments resolved), or why that URL would leave the prefix: the
/// prefix's text is what the URI-R is appended to, its parsed URL what the result must stay in.
pub fn uri_t_under(prefix: &HttpUrl, uri_r: &str) -> Result<Url, String> {
    let base = prefix.url();
    let refused = || format!("refused: the URI-R would leave the archive's prefix {prefix}");
    let resolved = resolve_uri_r_path(uri_r);
    // A front end decoding `%2F` (or dropping `;x`) would read these as `..`: never sent.
    if encoded_dot_segment_in(&resolved).is_some() {
        return Err(refused());
    }
    let joined = format!("{prefix}{resolved}");
    let url = Url::parse(&joined).map_err(|_| refused())?;
    let query_kept = match base.query() {
        Some(q) => url.query().is_some_and(|got| got.starts_with(q)),
        None => true,
    };
    let inside = url.scheme() == base.scheme()
        && url.host() == base.host()
        && url.port_or_known_default() == base.port_or_known_default()
        && url.path().starts_with(base.path())
        && query_kept;
    if inside {
        Ok(url)
    } else {
        Err(refused())
    }
}

/// Consecutive failures of one archive and, once they reach the threshold, until when it sleeps;
/// and until when it asked us to wait (`Retry-After`), which is no failure. Pure: time is
/// passed in.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Health {
    /// Failures in a row since it last answered: what `/archives` reports, so it agrees with
    /// the dormancy message ("dormant after N consecutive failures").
    pub consecutive_failures: u32,
    pub dormant_until: Option<DateTime<Utc>>,
    /// Until when it asked us not to ask it (a 429 or 503 with `Retry-After`, capped).
    pub retry_after_until: Option<DateTime<Utc>>,
}

impl Health {
    /// Whether to skip the archive at `now`.
    pub fn is_dormant(&self, now: DateTime<Utc>) -> bool {
        self.dormant_until.is_some_and(|until| now < until)
    }

    /// Until when the archive asked us to wait, while that is after `now`.
    pub fn held_until(&self, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
        self.retry_after_until.filter(|until| now < *until)
    }

    /// Holds the archive until `until`, or longer if it already asked for longer: an answer to
    /// a request sent earlier does not shorten the wait.
    pub fn hold(&mut self, until: DateTime<Utc>) {
        self.retry_after_until = Some(self.retry_after_until.map_or(until, |u| u.max(until)));
    }

    /// Records an answer (`answered`: it said what it holds, even "nothing") or a failure, and
    /// says whether that put the archive to sleep or woke it. `threshold` 0 means never dormant.
    pub fn record(
        &mut self,
        answered: bool,
        now: DateTime<Utc>,
        threshold: u32,
        dormant_for: Duration,
    ) -> Transition {
        if answered {
            let was_dormant = self.dormant_until.is_some();
            // An answer to a request sent before it asked us to wait does not end the wait.
            *self = Health {
                retry_after_until: self.retry_after_until,
                ..Health::default()
            };
            return if was_dormant {
                Transition::Woke
            } else {
                Transition::None
            };
        }
        self.consecutive_failures = self.consecutive_failures.saturating_add(1);
        // After a sleep it gets one try: the count is still past the threshold, so one more
        // failure puts it back to sleep.
        if threshold > 0 && self.consecutive_failures >= threshold {
            let span = chrono::Duration::from_std(dormant_for).unwrap_or(chrono::Duration::MAX);
            self.dormant_until = now.checked_add_signed(span);
            return Transition::Slept {
                until: self.dormant_until,
            };
        }
        Transition::None
    }
}

/// What one recorded answer did to an archive's health: what an operator is told.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transition {
    None,
    /// It has failed the threshold's times in a row and is left alone until `until`.
    Slept {
        until: Option<DateTime<Utc>>,
    },
    /// It answered after having been dormant.
    Woke,
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    /// [`uri_t_under`] for a prefix given as text (parsed here, as the config is).
    fn uri_t_within(prefix: &str, uri_r: &str) -> Result<String, String> {
        let prefix = HttpUrl::parse(prefix)
            .map_err(|e| format!("the archive's timemap prefix {prefix:?} is not a URL: {e}"))?;
        uri_t_under(&prefix, uri_r).map(String::from)
    }

    fn t(secs: i64) -> DateTime<Utc> {
        Utc.timestamp_opt(1_700_000_000 + secs, 0)
            .single()
            .expect("valid")
    }

    fn archive(timemap: &str, timegate: &str) -> Archive {
        Archive {
            id: Arc::from("a"),
            name: "a".into(),
            timemap: Some(timemap.parse().expect("a URL")),
            timegate: timegate.parse().expect("a URL"),
            timeout: Duration::from_secs(1),
            cdx: None,
            aggregator: false,
            raw: RawForm::Id,
        }
    }

    #[test]
    fn mementos_live_in_the_directory_the_configured_urls_share() {
        let ia = archive(
            "https://web.archive.org/web/timemap/link/",
            "https://web.archive.org/web/",
        );
        assert_eq!(ia.memento_prefixes(), ["https://web.archive.org/web/"]);
        let uk = archive(
            "http://webarchive.parliament.uk/timemap/link/",
            "http://webarchive.parliament.uk/timegate/",
        );
        assert_eq!(uk.memento_prefixes(), ["http://webarchive.parliament.uk/"]);
        let split = archive("https://tm.example/a/b/tm", "https://tg.example/x/?q=1");
        assert_eq!(
            split.memento_prefixes(),
            ["https://tg.example/x/", "https://tm.example/a/b/"]
        );
        let siblings = archive("http://h.example/col/timemap/", "http://h.example/col/tg/");
        assert_eq!(siblings.memento_prefixes(), ["http://h.example/col/"]);
    }

    #[test]
    fn dormant_after_threshold_and_awake_after_the_span() {
        let mut h = Health::default();
        for i in 0..2 {
            h.record(false, t(i), 3, Duration::from_secs(60));
            assert!(!h.is_dormant(t(i)));
        }
        h.record(false, t(2), 3, Duration::from_secs(60));
        assert!(h.is_dormant(t(3)));
        assert!(h.is_dormant(t(61)));
        assert!(!h.is_dormant(t(62)));
        // One more failure after waking puts it straight back to sleep.
        h.record(false, t(62), 3, Duration::from_secs(60));
        assert!(h.is_dormant(t(63)));
        // The count is the failures in a row, as the dormancy message says.
        assert_eq!(h.consecutive_failures, 4);
    }

    #[test]
    fn falling_asleep_and_waking_are_said_once_each() {
        let mut h = Health::default();
        let span = Duration::from_secs(60);
        assert_eq!(h.record(false, t(0), 2, span), Transition::None);
        let slept = h.record(false, t(1), 2, span);
        assert_eq!(slept, Transition::Slept { until: Some(t(61)) });
        // Its one try after the sleep fails: asleep again.
        let again = h.record(false, t(62), 2, span);
        assert_eq!(
            again,
            Transition::Slept {
                until: Some(t(122))
            }
        );
        assert_eq!(h.record(true, t(123), 2, span), Transition::Woke);
        assert_eq!(h.record(true, t(124), 2, span), Transition::None);
    }

    #[test]
    fn a_hold_lasts_until_its_moment_whatever_is_answered_meanwhile() {
        let mut h = Health::default();
        h.hold(t(10));
        h.hold(t(5));
        assert_eq!(h.held_until(t(0)), Some(t(10)), "the longer wait stands");
        h.record(true, t(1), 2, Duration::from_secs(60));
        assert_eq!(h.held_until(t(9)), Some(t(10)));
        assert_eq!(h.held_until(t(10)), None);
        assert_eq!(h.consecutive_failures, 0);
        assert!(!h.is_dormant(t(9)));
    }

    #[test]
    fn an_answer_resets_and_zero_threshold_never_sleeps() {
        let mut h = Health::default();
        h.record(false, t(0), 2, Duration::from_secs(60));
        h.record(true, t(1), 2, Duration::from_secs(60));
        h.record(false, t(2), 2, Duration::from_secs(60));
        assert!(!h.is_dormant(t(3)));
        let mut h = Health::default();
        for i in 0..100 {
            h.record(false, t(i), 0, Duration::from_secs(60));
        }
        assert!(!h.is_dormant(t(100)));
    }

    #[test]
    fn uri_t_is_prefix_plus_uri_r() {
        let a = Archive {
            id: Arc::from("ia"),
            name: "Internet Archive".into(),
            timemap: Some(
                "https://web.archive.org/web/timemap/link/"
                    .parse()
                    .expect("a URL"),
            ),
            timegate: "https://web.archive.org/web/".parse().expect("a URL"),
            timeout: Duration::from_secs(1),
            cdx: None,
            aggregator: false,
            raw: RawForm::Id,
        };
        assert_eq!(
            a.timemap_for("http://evil.example@other.host/")
                .as_ref()
                .map(Url::as_str),
            Ok("https://web.archive.org/web/timemap/link/http://evil.example@other.host/")
        );
    }

    #[test]
    fn uri_t_never_leaves_the_prefix() {
        let prefix = "http://127.0.0.1:9/archive/timemap/link/";
        for uri_r in [
            "http://e.com/../../../../../canary/x",
            "http://e.com/%2e%2e/%2E%2e/%2e./.%2e/canary",
            "http://e.com\\..\\..\\..\\canary",
            "http://e.com/a/..\\../%2e%2e\\canary",
            "http://../../../canary",
            "http://%2e%2e/%2e%2e/canary",
            "http://e.com/..%2f..%2fcanary",
        ] {
            match uri_t_within(prefix, uri_r) {
                Ok(uri_t) => assert!(uri_t.starts_with(prefix), "{uri_r} became {uri_t}"),
                Err(why) => assert!(why.contains("refused"), "{uri_r}: {why}"),
            }
        }
        assert_eq!(
            uri_t_within(prefix, "http://e.com/../../canary/x").as_deref(),
            Ok("http://127.0.0.1:9/archive/timemap/link/http://e.com/canary/x")
        );
        // What the dot removal cannot see, the check after parsing still refuses.
        assert!(uri_t_within("http://a.org/tm/", "/../../x").is_err());
        assert!(uri_t_within("http://a.org/tm/", "@b.org/x").is_ok());
        assert!(uri_t_within("http://a.org/tm?url=", "http://e.com/../x").is_ok());
        assert!(uri_t_within("not a url", "http://e.com/").is_err());
    }
}
