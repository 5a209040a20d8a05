//! An absolute http:// or https:// URL from the configuration, parsed once as the file (or the
//! archives file) is read. Its text is kept as written: an archive's `timemap`, `timegate` and
//! `cdx` are prefixes a URI-R is appended to verbatim, so that text is what is sent, while the
//! parsed URL is what the hop rules and the prefix checks compare against.

use std::fmt;
use std::str::FromStr;
use url::Url;

/// A checked absolute http(s) URL and its text as written.
#[derive(Clone, PartialEq, Eq)]
pub struct HttpUrl {
    text: String,
    url: Url,
}

impl HttpUrl {
    /// `text` as an absolute http(s) URL, or why it is not one (the reason a config error
    /// gives under the key).
    pub fn parse(text: &str) -> Result<HttpUrl, String> {
        let url = Url::parse(text).map_err(|e| format!("{text:?} is not an absolute URL ({e})"))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(format!("{text:?} must be an http:// or https:// URL"));
        }
        Ok(HttpUrl {
            text: text.to_owned(),
            url,
        })
    }

    /// The text as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The URL as parsed.
    pub fn url(&self) -> &Url {
        &self.url
    }
}

impl FromStr for HttpUrl {
    type Err = String;

    fn from_str(text: &str) -> Result<HttpUrl, String> {
        HttpUrl::parse(text)
    }
}

impl fmt::Display for HttpUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// As its text: a config printed for debugging shows what was written.
impl fmt::Debug for HttpUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.text, f)
    }
}

impl PartialEq<str> for HttpUrl {
    fn eq(&self, other: &str) -> bool {
        self.text == other
    }
}

impl PartialEq<&str> for HttpUrl {
    fn eq(&self, other: &&str) -> bool {
        self.text == *other
    }
}

impl From<HttpUrl> for String {
    fn from(u: HttpUrl) -> String {
        u.text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_text_is_kept_and_only_http_urls_pass() {
        let u = HttpUrl::parse("https://web.archive.org/web/timemap/link/").expect("a URL");
        assert_eq!(u, "https://web.archive.org/web/timemap/link/");
        assert_eq!(u.url().host_str(), Some("web.archive.org"));
        let relative = HttpUrl::parse("/relative/").expect_err("relative");
        assert!(relative.contains("not an absolute URL"), "{relative}");
        let ftp = HttpUrl::parse("ftp://x.example/").expect_err("ftp");
        assert!(ftp.contains("must be an http:// or https:// URL"), "{ftp}");
    }
}
