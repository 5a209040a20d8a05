//! Whose memento it is. An archive lists its own captures; an aggregator configured as an
//! archive (`kind = "aggregator"`: MemGator, Time Travel's peers, another tmproxy) lists other
//! archives' captures, and each of those is credited to the archive whose host its URI-M is on:
//! a configured archive when one lives there, else the host itself.

use super::identity::site;
use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

/// Which archives are aggregators, and which archive each memento host belongs to. Built once
/// from the configuration; empty when no aggregator is configured (then nothing is re-credited).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Credits {
    aggregators: Vec<Arc<str>>,
    /// Lower-case host (with a port that is not the scheme's default) → archive id.
    hosts: HashMap<String, Arc<str>>,
}

impl Credits {
    /// `aggregators` by id; `hosts` as (a URL of an archive's mementos, its id): the first
    /// archive configured on a host is the one credited there.
    pub fn new<'a>(
        aggregators: impl IntoIterator<Item = &'a str>,
        hosts: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Credits {
        let mut by_host = HashMap::new();
        for (url, id) in hosts {
            if let Some(host) = site(url) {
                by_host
                    .entry(host.into_owned())
                    .or_insert_with(|| Arc::from(id));
            }
        }
        Credits {
            aggregators: aggregators.into_iter().map(Arc::from).collect(),
            hosts: by_host,
        }
    }

    /// No aggregator: every memento is its own archive's.
    pub fn none() -> &'static Credits {
        static NONE: std::sync::OnceLock<Credits> = std::sync::OnceLock::new();
        NONE.get_or_init(Credits::default)
    }

    /// Whether `archive` lists other archives' mementos.
    pub fn is_aggregator(&self, archive: &str) -> bool {
        self.aggregators.iter().any(|a| **a == *archive)
    }

    /// The archive a memento listed by an aggregator is credited to: the archive configured on
    /// its URI-M's host, else that host; the aggregator itself when the URI-M has no host.
    pub fn credit<'a>(&'a self, aggregator: &'a str, uri_m: &str) -> Cow<'a, str> {
        match site(uri_m) {
            Some(host) => match self.hosts.get(host.as_ref()) {
                Some(id) => Cow::Borrowed(&**id),
                None => Cow::Owned(host.into_owned()),
            },
            None => Cow::Borrowed(aggregator),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_memento_is_credited_to_the_archive_on_its_host_else_the_host() {
        let c = Credits::new(
            ["mg"],
            [
                ("https://web.archive.org/web/", "ia"),
                ("http://arquivo.pt/wayback/", "pt"),
                ("https://web.archive.org/other/", "ia2"),
            ],
        );
        assert!(c.is_aggregator("mg") && !c.is_aggregator("ia"));
        let got = |u: &str| c.credit("mg", u).into_owned();
        assert_eq!(
            got("https://WEB.archive.org:443/web/1999/http://a.com/"),
            "ia"
        );
        assert_eq!(got("http://arquivo.pt/wayback/2001/http://a.com/"), "pt");
        assert_eq!(
            got("http://web.archive.bibalex.org:80/web/1999/http://a.com/"),
            "web.archive.bibalex.org"
        );
        assert_eq!(got("http://Host.example:8080/x"), "host.example:8080");
        assert_eq!(got("not a url"), "mg");
    }
}
