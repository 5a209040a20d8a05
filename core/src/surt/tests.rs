use super::*;

fn key(uri: &str) -> String {
    canonical_key(uri).unwrap_or_else(|| panic!("{uri} has a key"))
}

#[test]
fn ias_surt_examples_give_ias_keys() {
    // The examples of IA's surt library (README and tests), where its rules and ours agree.
    assert_eq!(key("http://www.archive.org/"), "org,archive)/");
    assert_eq!(key("http://archive.org/"), "org,archive)/");
    assert_eq!(key("http://www.rediff.com/"), "com,rediff)/");
    assert_eq!(
        key("http://archive.org/index.html?b=b&a=b"),
        "org,archive)/index.html?a=b&b=b"
    );
    assert_eq!(
        key("http://archive.org/index.html?a=b&b=c"),
        "org,archive)/index.html?a=b&b=c"
    );
    assert_eq!(key("http://archive.org:8080/"), "org,archive:8080)/");
    assert_eq!(key("http://archive.org:80/"), "org,archive)/");
    assert_eq!(key("https://archive.org:443/"), "org,archive)/");
    assert_eq!(key("http://192.168.1.254/info/"), "254,1,168,192)/info/");
    // IA gives org,archive)/goo?a=1&a=2&b: it also strips the trailing slash, we keep it.
    assert_eq!(
        key("http://archive.org/goo/?a=2&b&a=1"),
        "org,archive)/goo/?a=1&a=2&b"
    );
}

#[test]
fn the_issues_three_spellings_are_one_key() {
    let k = key("http://example.com");
    assert_eq!(k, "com,example)/");
    for spelling in [
        "http://example.com/",
        "https://www.example.com/",
        "HTTPS://WWW.Example.COM:443/",
        "http://www2.example.com/",
        "http://example.com/?",
        "http://example.com/#frag",
    ] {
        assert_eq!(key(spelling), k, "{spelling}");
    }
}

#[test]
fn equivalent_escapes_and_query_orders_meet() {
    assert_eq!(key("http://e.com/%7Euser/a%2fb"), "com,e)/~user/a%2Fb");
    assert_eq!(key("http://e.com/~user/a%2Fb"), "com,e)/~user/a%2Fb");
    assert_eq!(
        key("http://e.com/a?%62=1&a=2"),
        key("http://e.com/a?a=2&b=1")
    );
    assert_eq!(
        key("http://e.com/a?b=1&%61=2"),
        key("http://e.com/a?a=2&b=1")
    );
    // IDNA and IPv4 forms, as the URL parser normalizes them.
    assert_eq!(key("http://пример.рф/"), "xn--p1ai,xn--e1afmkfd)/");
    assert_eq!(key("http://0x7f.1/"), "1,0,0,127)/");
    assert_eq!(key("http://[::1]:8080/x"), "[::1]:8080)/x");
}

#[test]
fn what_can_be_another_resource_keeps_its_own_key() {
    let pairs = [
        // The path's and the query's case (IA lower-cases both).
        ("http://e.com/A", "http://e.com/a"),
        ("http://e.com/a?Q=1", "http://e.com/a?q=1"),
        // A trailing slash (IA strips it).
        ("http://e.com/a/", "http://e.com/a"),
        // Session ids and every other parameter (IA strips jsessionid & co).
        (
            "http://e.com/a;jsessionid=0123456789abcdef0123456789abcdef",
            "http://e.com/a",
        ),
        (
            "http://e.com/a?sid=0123456789abcdef0123456789abcdef",
            "http://e.com/a",
        ),
        ("http://e.com/a?x=", "http://e.com/a?x"),
        // A www label that is the name itself: IA's rule makes both `com`.
        ("http://www3288.com/", "http://www1355544.com/"),
        ("http://www3288.com/", "http://com/"),
        // `,` and `)` in a host are escaped: no host spells another's reversed labels.
        ("http://x,y.com/", "http://y.x.com/"),
        // A port that is not the scheme's default.
        ("http://e.com:443/", "https://e.com/"),
        ("https://e.com:80/", "http://e.com/"),
        // Not unreserved: stays escaped.
        ("http://e.com/a%2Fb", "http://e.com/a/b"),
        ("http://e.com/?a=1%26b=2", "http://e.com/?a=1&b=2"),
    ];
    for (a, b) in pairs {
        assert_ne!(canonical_key(a), canonical_key(b), "{a} vs {b}");
    }
    assert_eq!(key("http://www3288.com/"), "com,www3288)/");
    assert_eq!(key("http://x,y.com/"), "com,x%2Cy)/");
}

#[test]
fn what_has_no_key_is_none() {
    for uri in [
        "ftp://e.com/",
        "javascript:alert(1)",
        "http://user:pw@e.com/",
        "http://user@e.com/",
        "not a url",
        "",
        "http://",
    ] {
        assert_eq!(canonical_key(uri), None, "{uri:?}");
    }
    // A stray `%` is text: kept as written, never a panic.
    assert_eq!(key("http://e.com/100%"), "com,e)/100%");
    assert_eq!(key("http://e.com/%zz%4"), "com,e)/%zz%4");
    assert_eq!(key("http://e.com/é?q=ü"), "com,e)/%C3%A9?q=%C3%BC");
}
