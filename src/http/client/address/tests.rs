use super::*;
use axum::http::HeaderValue;

fn trusted(nets: &[&str]) -> TrustedProxies {
    let nets: Vec<IpNet> = nets
        .iter()
        .map(|n| {
            n.parse()
                .or_else(|_| n.parse::<IpAddr>().map(IpNet::from))
                .expect("net")
        })
        .collect();
    TrustedProxies::new(&nets)
}

fn ip(s: &str) -> IpAddr {
    s.parse().expect("ip")
}

fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
    let mut h = HeaderMap::new();
    for (name, value) in pairs {
        h.append(*name, HeaderValue::from_str(value).expect("value"));
    }
    h
}

fn client_of(t: &TrustedProxies, peer: &str, pairs: &[(&'static str, &str)]) -> IpAddr {
    t.client(ip(peer), &headers(pairs)).0
}

#[test]
fn an_untrusted_peer_is_the_client_whatever_it_forwards() {
    let t = trusted(&["10.0.0.0/8"]);
    let spoof = [
        ("x-forwarded-for", "203.0.113.9"),
        ("forwarded", "for=203.0.113.9"),
    ];
    assert_eq!(client_of(&t, "192.0.2.1", &spoof), ip("192.0.2.1"));
    assert_eq!(
        client_of(&TrustedProxies::default(), "10.0.0.1", &spoof),
        ip("10.0.0.1")
    );
}

#[test]
fn the_right_most_untrusted_hop_is_the_client() {
    let t = trusted(&["10.0.0.0/8", "192.0.2.7"]);
    // The client wrote 198.51.100.1 itself; its own address was appended by the first proxy.
    let chain = [("x-forwarded-for", "198.51.100.1, 203.0.113.5, 10.1.1.1")];
    assert_eq!(client_of(&t, "10.0.0.2", &chain), ip("203.0.113.5"));
    // Over several lines, the later line continues the list.
    let lines = [
        ("x-forwarded-for", "198.51.100.1"),
        ("x-forwarded-for", "203.0.113.5 , 192.0.2.7"),
    ];
    assert_eq!(client_of(&t, "10.0.0.2", &lines), ip("203.0.113.5"));
    // Every hop trusted: the left-most.
    let inside = [("x-forwarded-for", "10.9.9.9, 192.0.2.7")];
    assert_eq!(client_of(&t, "10.0.0.2", &inside), ip("10.9.9.9"));
}

#[test]
fn forwarded_for_takes_every_form_of_node() {
    let t = trusted(&["127.0.0.1"]);
    for (value, want) in [
        ("for=\"[::1]:80\"", "::1"),
        ("for=\"[2001:db8:cafe::17]\"", "2001:db8:cafe::17"),
        ("For=192.0.2.43", "192.0.2.43"),
        (
            "for=\"192.0.2.43:4711\";proto=https;by=10.0.0.1",
            "192.0.2.43",
        ),
        ("proto=http;for=198.51.100.17", "198.51.100.17"),
        ("for=198.51.100.1, for=\"[2001:db8::9]:1\"", "2001:db8::9"),
        ("for=\"::ffff:192.0.2.8\"", "192.0.2.8"),
    ] {
        let got = client_of(&t, "127.0.0.1", &[("forwarded", value)]);
        assert_eq!(got, ip(want), "{value}");
    }
}

#[test]
fn x_forwarded_for_wins_over_forwarded() {
    let t = trusted(&["127.0.0.1"]);
    let both = [
        ("forwarded", "for=198.51.100.1"),
        ("x-forwarded-for", "203.0.113.5"),
    ];
    assert_eq!(client_of(&t, "127.0.0.1", &both), ip("203.0.113.5"));
}

#[test]
fn a_malformed_hop_before_the_client_leaves_the_peer() {
    let t = trusted(&["127.0.0.1"]);
    for pairs in [
        vec![("x-forwarded-for", "not-an-ip")],
        vec![("x-forwarded-for", "203.0.113.5, ")],
        vec![("x-forwarded-for", "")],
        vec![("x-forwarded-for", "203.0.113.5\t\"} x")],
        vec![("forwarded", "for=unknown")],
        vec![("forwarded", "for=_hidden")],
        vec![("forwarded", "proto=https")],
        vec![("forwarded", "for=\"[::1]:80")],
        vec![("forwarded", "for=\"1.2.3.4,for=5.6.7.8\"")],
    ] {
        let got = client_of(&t, "127.0.0.1", &pairs);
        assert_eq!(got, ip("127.0.0.1"), "{pairs:?}");
    }
    // Garbage the client wrote left of its own address changes nothing.
    let left = [("x-forwarded-for", "<script>, 203.0.113.5")];
    assert_eq!(client_of(&t, "127.0.0.1", &left), ip("203.0.113.5"));
    // Bytes that are not UTF-8.
    let mut h = HeaderMap::new();
    h.insert(
        "x-forwarded-for",
        HeaderValue::from_bytes(b"203.0.113.5\xff").expect("value"),
    );
    assert_eq!(t.client(ip("127.0.0.1"), &h).0, ip("127.0.0.1"));
}

#[test]
fn a_mapped_peer_is_trusted_as_its_ipv4_address() {
    let t = trusted(&["127.0.0.0/8"]);
    let chain = [("x-forwarded-for", "203.0.113.5")];
    assert_eq!(client_of(&t, "::ffff:127.0.0.1", &chain), ip("203.0.113.5"));
    assert_eq!(client_of(&t, "::ffff:192.0.2.1", &[]), ip("192.0.2.1"));
}
