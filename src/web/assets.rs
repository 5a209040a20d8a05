//! The page's stylesheet and script, compiled into the binary and served from `/ui/assets/` under
//! names that carry a hash of their content: a browser may keep them for a year, and a new build
//! with a changed file is a new name. No page loads anything from anywhere else.

use std::sync::LazyLock;

/// One embedded file.
pub struct Asset {
    /// `style-0123456789abcdef.css`: the name it is served under.
    pub name: String,
    pub content_type: &'static str,
    pub body: &'static [u8],
}

impl Asset {
    fn new(stem: &str, ext: &str, content_type: &'static str, body: &'static [u8]) -> Asset {
        Asset {
            name: format!("{stem}-{:016x}.{ext}", fnv1a(body)),
            content_type,
            body,
        }
    }

    /// Its URL on this server.
    pub fn url(&self) -> String {
        format!("/ui/assets/{}", self.name)
    }
}

pub static STYLE: LazyLock<Asset> = LazyLock::new(|| {
    Asset::new(
        "style",
        "css",
        "text/css; charset=utf-8",
        include_bytes!("../../templates/assets/style.css"),
    )
});

pub static ADMIN_JS: LazyLock<Asset> = LazyLock::new(|| {
    Asset::new(
        "admin",
        "js",
        "text/javascript; charset=utf-8",
        include_bytes!("../../templates/assets/admin.js"),
    )
});

/// The site's icon (a clock face), also served as `/favicon.ico` for clients that ask there.
pub static ICON: LazyLock<Asset> = LazyLock::new(|| {
    Asset::new(
        "icon",
        "svg",
        "image/svg+xml",
        include_bytes!("../../templates/assets/icon.svg"),
    )
});

/// The embedded file served under `name`, if any.
pub fn named(name: &str) -> Option<&'static Asset> {
    [&*STYLE, &*ADMIN_JS, &*ICON]
        .into_iter()
        .find(|a| a.name == name)
}

/// A 64-bit FNV-1a: stable across builds and restarts, unlike std's seeded hasher.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_carry_the_content_hash() {
        assert!(STYLE.name.starts_with("style-") && STYLE.name.ends_with(".css"));
        assert_eq!(STYLE.name.len(), "style-".len() + 16 + ".css".len());
        assert_ne!(fnv1a(b"a{}"), fnv1a(b"b{}"));
        assert_eq!(ADMIN_JS.url(), format!("/ui/assets/{}", ADMIN_JS.name));
    }
}
