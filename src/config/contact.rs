//! `[upstream] contact`: where an archive's operators can reach whoever runs this proxy, sent in
//! the `User-Agent` as crawlers send theirs (`tmproxy/0.1 (Memento aggregator;
//! +https://ops.example/contact)`), so an archive that sees too much of us writes to a person
//! before it blocks us.

use super::sections::UpstreamConfig;

/// Whether `contact` (not empty) can go in the header: no control characters, and either an
/// http(s) URL with a host or something that looks like an email address.
pub(super) fn check(contact: &str) -> Result<(), String> {
    if contact.chars().any(char::is_control) {
        return Err("must be free of control characters (it is sent as a header)".into());
    }
    if contact.contains("://") {
        let url = url::Url::parse(contact).map_err(|e| format!("{contact:?} is not a URL: {e}"))?;
        if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none_or(str::is_empty) {
            return Err(format!("{contact:?}: a URL must be http(s) with a host"));
        }
        return Ok(());
    }
    if looks_like_email(contact) {
        return Ok(());
    }
    Err(format!(
        "{contact:?} is neither an http(s) URL nor an email address (e.g. \"https://ops.example/contact\" or \"ops@example.org\")"
    ))
}

/// `local@domain.tld`: one `@`, something before it, a dotted domain after it, no spaces, and
/// none of the characters a header comment would need escaped.
fn looks_like_email(text: &str) -> bool {
    let Some((local, domain)) = text.split_once('@') else {
        return false;
    };
    let plain = |s: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| !c.is_whitespace() && !"@()<>,;:\\\"[]".contains(c))
    };
    plain(local)
        && plain(domain)
        && domain.split('.').filter(|label| !label.is_empty()).count() >= 2
        && !domain.starts_with('.')
        && !domain.ends_with('.')
}

impl UpstreamConfig {
    /// The `User-Agent` sent to the archives: `user_agent`, with `contact` (when set) added as
    /// crawlers add theirs, inside its last parenthesised comment (`+URL` for a URL, the
    /// address as it is for an email) or in a comment of its own.
    pub fn agent(&self) -> String {
        let contact = self.contact.trim();
        if contact.is_empty() {
            return self.user_agent.clone();
        }
        let contact = if contact.contains("://") {
            format!("+{contact}")
        } else {
            contact.to_string()
        };
        let agent = self.user_agent.trim_end();
        match agent.strip_suffix(')') {
            Some(open) if open.contains('(') => format!("{open}; {contact})"),
            _ => format!("{agent} ({contact})"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn agent(user_agent: &str, contact: &str) -> String {
        UpstreamConfig {
            user_agent: user_agent.into(),
            contact: contact.into(),
            ..UpstreamConfig::default()
        }
        .agent()
    }

    #[test]
    fn the_contact_joins_the_agents_comment_as_crawlers_do() {
        let ours = "tmproxy/0.1 (Memento aggregator)";
        assert_eq!(agent(ours, ""), ours);
        assert_eq!(
            agent(ours, "https://ops.example/contact"),
            "tmproxy/0.1 (Memento aggregator; +https://ops.example/contact)"
        );
        assert_eq!(
            agent(ours, "ops@example.org"),
            "tmproxy/0.1 (Memento aggregator; ops@example.org)"
        );
        assert_eq!(
            agent("my-proxy/2", "ops@example.org"),
            "my-proxy/2 (ops@example.org)"
        );
    }

    #[test]
    fn urls_must_be_http_and_addresses_must_look_like_one() {
        for ok in [
            "https://ops.example/contact",
            "http://[::1]:8080/",
            "ops@example.org",
            "first.last+tmproxy@mail.example.co.uk",
        ] {
            assert_eq!(check(ok), Ok(()), "{ok}");
        }
        for bad in [
            "ftp://ops.example/",
            "https://",
            "mailto:ops@example.org",
            "ops",
            "ops@localhost",
            "ops@@example.org",
            "o ps@example.org",
            "ops@example.org)",
            "ops@example.org\r\nX-Evil: 1",
            "https://ops.example/\n",
        ] {
            assert!(check(bad).is_err(), "{bad:?} accepted");
        }
    }
}
