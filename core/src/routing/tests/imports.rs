//! Imports of CDX summaries and MementoMap files, hostile lines included.

use super::*;

fn import(profiles: &mut Profiles, archive: &str, text: &[u8]) -> ImportReport {
    let mut importer = Importer::new(profiles, archive, None);
    for line in text.split(|&b| b == b'\n') {
        importer.line(line);
    }
    importer.finish()
}

fn held(p: &Profiles, archive: &str, level: Level, name: &str) -> u32 {
    p.tally(archive, &key(level, name))
        .map_or(0, |t| u32::from(t.held))
}

const CDXJ: &str = r#"!OpenWayback-CDXJ 1.0
pt,sapo)/ 20090101000000 {"url": "http://sapo.pt/", "status": "200"}
pt,sapo)/ 20100101000000 {"url": "http://www.sapo.pt/", "status": "200"}
pt,sapo,noticias)/a 20110101000000 {"url": "http://noticias.sapo.pt/a"}
pt,sapo,noticias)/b?x=1 20110101000000 {"url": "http://noticias.sapo.pt/b?x=1"}
pt,publico)/ 20120101000000 {"url": "http://publico.pt/"}
"#;

#[test]
fn a_cdxj_summary_credits_distinct_uri_rs() {
    let mut p = Profiles::new(100);
    let r = import(&mut p, "pt", CDXJ.as_bytes());
    assert_eq!(r.format, Some(Format::Cdx));
    assert_eq!((r.used, r.repeats, r.headers), (4, 1, 2), "{r:?}");
    assert_eq!((r.garbage, r.non_utf8, r.too_long), (0, 0, 0));
    assert_eq!(r.uri_rs, 4);
    assert_eq!(held(&p, "pt", Level::Domain, "sapo.pt"), 3);
    assert_eq!(held(&p, "pt", Level::Host, "noticias.sapo.pt"), 2);
    assert_eq!(held(&p, "pt", Level::Tld, "pt"), 4);
    assert_eq!(p.tally("pt", &key(Level::Tld, "pt")).unwrap().none, 0);
}

#[test]
fn a_classic_cdx_file_reads_too() {
    let text = " CDX N b a m s k r M S V g\n\
        uk,co,bbc)/ 20010101000000 http://www.bbc.co.uk/ text/html 200 AAA - - 100 0 x.warc.gz\n\
        uk,co,bbc)/news 20010101000000 http://www.bbc.co.uk/news text/html 200 BBB - - 100 9 x.warc.gz\n";
    let mut p = Profiles::new(100);
    let r = import(&mut p, "ukwa", text.as_bytes());
    assert_eq!(r.format, Some(Format::Cdx));
    assert_eq!((r.used, r.headers), (2, 2), "{r:?}");
    assert_eq!(held(&p, "ukwa", Level::Domain, "bbc.co.uk"), 2);
}

const MEMENTO_MAP: &str = "!context [\"https://oduwsdl.github.io/contexts/ukvs\"]
!meta {\"type\": \"MementoMap\"}
com,cnn)/ 200
com,cnn)/news/* 40
edu,odu,cs)/~mln/ 40
uk,co,* 9
org,* 1000
";

#[test]
fn a_memento_map_credits_exact_keys_once_and_wildcards_by_frequency() {
    let mut p = Profiles::new(100);
    let r = import(&mut p, "arc", MEMENTO_MAP.as_bytes());
    assert_eq!(r.format, Some(Format::MementoMap));
    assert_eq!((r.used, r.headers, r.garbage), (5, 3, 0), "{r:?}");
    assert_eq!(r.uri_rs, 1 + 40 + 1 + 9 + 1000);
    assert_eq!(held(&p, "arc", Level::Host, "cnn.com"), 41);
    assert_eq!(held(&p, "arc", Level::Domain, "odu.edu"), 1);
    // `uk,co,*`: co.uk is a public suffix: the TLD alone is credited.
    assert_eq!(held(&p, "arc", Level::Tld, "uk"), 9);
    assert_eq!(held(&p, "arc", Level::Host, "co.uk"), 0);
    assert_eq!(held(&p, "arc", Level::Tld, "org"), 1000);
}

#[test]
fn hostile_lines_are_counted_never_trusted() {
    let mut text = Vec::new();
    text.extend_from_slice(b"com,example)/ 20200101000000 {}\n");
    text.extend_from_slice(b"\xff\xfe not utf-8\n");
    text.extend_from_slice(b"just-one-field\n");
    text.extend_from_slice(b"com,example)/x notatimestamp {}\n");
    text.extend_from_slice(b")/ 20200101000000 {}\n");
    text.extend_from_slice(&vec![b'a'; import::MAX_LINE + 1]);
    text.extend_from_slice(b"\n\n");
    let mut p = Profiles::new(100);
    let r = import(&mut p, "x", &text);
    assert_eq!(r.used, 1, "{r:?}");
    assert_eq!(r.non_utf8, 1);
    assert_eq!(r.too_long, 1);
    assert_eq!(r.garbage, 3);
    // A MementoMap with a zero, negative or huge frequency or a bad wildcard.
    let mut p = Profiles::new(100);
    let r = import(
        &mut p,
        "x",
        b"!meta {}\ncom,a)/ 0\ncom,a)/ -3\ncom,a)/ 99999999999\n)/* 5\n,* 2\ncom,a)/ 2\n",
    );
    assert_eq!((r.used, r.garbage), (1, 5), "{r:?}");
    // The caller's cut line counts as too long.
    let mut p = Profiles::new(100);
    let mut importer = Importer::new(&mut p, "x", Some(Format::Cdx));
    importer.too_long();
    assert_eq!(importer.finish().too_long, 1);
}

#[test]
fn imported_evidence_keeps_an_archive_asked() {
    // Observed: pt held nothing for 30 URI-Rs of .pt…
    let mut p = Profiles::new(100);
    for i in 0..30 {
        p.observe(&observation(
            &format!("http://h{i}.pt/"),
            &[("pt", Outcome::HeldNone)],
        ));
    }
    let s = Settings {
        mode: Mode::Learned,
        min_evidence: 20,
        min_share: 0.02,
        explore: 0.0,
    };
    let c = [Candidate::new("pt", false)];
    let keys = UriKeys::of_uri("http://noticias.sapo.pt/z");
    assert!(!decide(&p, &s, &c, &keys, 0).routes[0].is_ask());
    // …its index says otherwise.
    import(&mut p, "pt", CDXJ.as_bytes());
    assert!(decide(&p, &s, &c, &keys, 0).routes[0].is_ask());
}
