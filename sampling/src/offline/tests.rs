//! The offline stages over small indexes: the paper's examples, and when a root re-enters.

use super::*;

fn run(lines: &[&str], popular: &[&str]) -> (Vec<Candidate>, Vec<SetAside>, Vec<FunnelRow>) {
    let popular: Vec<String> = popular.iter().map(|s| s.to_string()).collect();
    let mut o = Offline::new(&popular);
    let (mut c, mut a) = (Vec::new(), Vec::new());
    for l in lines {
        o.push_line(l, &mut |x| c.push(x), &mut |x| a.push(x));
    }
    (c, a, o.funnel())
}

fn urls(c: &[Candidate]) -> Vec<&str> {
    c.iter().map(|c| c.url.as_str()).collect()
}

#[test]
fn the_papers_examples_through_every_stage() {
    let id32 = "0123456789abcdefABCDEF0123456789";
    let session = format!("com,clickbank)/index.html;jsessionid={id32} 20050101000000 p 0 1");
    let lines = [
        " CDX N b a m s k r M S V g",
        ")/?dn=renunciationguide.com&flrdr=yes&nxte=css 20090101000000 p 0 1",
        "*)/robots.txt 20090101000000 p 0 1",
        "am,dx,brs53)/scripts/jquery.min.js 20100101000000 p 0 1",
        "ar,com,notiche)/index.php?limitstart=42 20100101000000 p 0 1",
        "ar,com,notiche)/index.php?limitstart=42 20110101000000 p 0 1",
        session.as_str(),
        "com,abc)/index.asp 20010101000000 p 0 1",
        "com,example:8080)/ 20030101000000 p 0 1",
        "com,example:8080)/a.php3 20030101000000 p 0 1",
        "com,shop)/search?text=* 20120101000000 p 0 1",
        "com)/ 20150101000000 http://www1355544.com/ text/html 200 AAA 100",
        "com,twitter)/jack 20160101000000 p 0 1",
        "garbage-without-timestamp",
    ];
    let (c, a, f) = run(&lines, &["twitter.com"]);
    assert_eq!(
        urls(&c),
        vec![
            "https://notiche.com.ar/index.php?limitstart=42",
            "https://abc.com/",
            "https://example.com:8080/",
            "https://example.com:8080/a.php3",
            "https://shop.com/",
        ]
    );
    assert!(
        c[1].reentered && c[1].root,
        "an index file's host root stands for it"
    );
    // A session-id alias is set aside without re-entering anything.
    assert!(!urls(&c).contains(&"https://clickbank.com/"));
    let reasons: Vec<(&str, &str)> = a.iter().map(|s| (s.stage, s.reason.as_str())).collect();
    assert!(reasons.contains(&("surt_to_url", "invalid: no host")));
    assert!(reasons.contains(&("surt_to_url", "invalid: '*' in the host")));
    assert!(reasons.contains(&("likely_html", "not likely HTML (.js)")));
    assert!(reasons.contains(&("session_ids", "session-id alias")));
    assert!(reasons.contains(&("index_files", "index-file alias of the root URL")));
    assert!(reasons.contains(&("wildcards", "CDX wildcard URL (ends with '*')")));
    assert!(reasons
        .iter()
        .any(|(s, r)| *s == "www_collisions" && r.contains("www1355544.com")));
    assert!(reasons
        .iter()
        .any(|(s, r)| *s == "popular_domains" && r.contains("twitter.com")));
    assert!(reasons.iter().any(|(s, _)| *s == "read"));
    let at = |s: &str| f.iter().find(|r| r.stage == s).map(|r| r.counters);
    assert_eq!(
        at("read"),
        Some(Counters {
            input: 13,
            output: 12,
            set_aside: 0,
            errors: 1
        })
    );
    assert_eq!(
        at("unique_surts"),
        Some(Counters {
            input: 12,
            output: 11,
            set_aside: 1,
            errors: 0
        })
    );
    // Every URL that went in came out, was set aside or was an error; re-entered roots
    // are their own rows, joining popular_domains.
    for r in &f {
        let c = r.counters;
        assert_eq!(c.output + c.set_aside + c.errors, c.input, "{r:?}");
    }
    assert_eq!(STAGES.len(), f.len());
    let side: u64 = f
        .iter()
        .filter(|r| r.into == Some("popular_domains"))
        .map(|r| r.counters.output)
        .sum();
    assert_eq!(at("wildcard_roots").map(|c| c.output), Some(1));
    assert_eq!(at("index_file_roots").map(|c| c.output), Some(1));
    assert_eq!(
        at("popular_domains").map(|c| c.input),
        at("likely_html").map(|c| c.output + side)
    );
}

#[test]
fn a_root_already_in_the_index_is_not_reentered() {
    let (c, _, _) = run(
        &[
            "com,abc)/ 20010101000000 p 0 1",
            "com,abc)/index.html 20010101000000 p 0 1",
            "com,abc)/index.php 20010101000000 p 0 1",
        ],
        &[],
    );
    assert_eq!(urls(&c), vec!["https://abc.com/"]);
    assert!(!c[0].reentered);
}

/// `run` over lines checked sorted by key, as the engine refuses any other input.
fn run_sorted(lines: &[&str], popular: &[&str]) -> (Vec<Candidate>, Vec<SetAside>) {
    let keys: Vec<&str> = lines.iter().filter_map(|l| l.split(' ').next()).collect();
    assert!(keys.windows(2).all(|w| w[0] <= w[1]), "unsorted: {keys:?}");
    let (c, a, _) = run(lines, popular);
    (c, a)
}

fn reentered(c: &[Candidate]) -> Vec<&str> {
    c.iter()
        .filter(|c| c.reentered)
        .map(|c| c.url.as_str())
        .collect()
}

#[test]
fn a_root_is_one_per_port_and_reentered_once() {
    // The port makes another root URL: `https://example.com/` passing does not stand for
    // `https://example.com:8080/` (it did when the stage remembered hosts without ports).
    let (c, _) = run_sorted(
        &[
            "com,example)/ 20010101000000 p 0 1",
            "com,example:8080)/a* 20010101000000 p 0 1",
            "com,example:8080)/index.html 20010101000000 p 0 1",
            "com,example:8080)/x* 20010101000000 p 0 1",
        ],
        &[],
    );
    assert_eq!(
        urls(&c),
        vec!["https://example.com/", "https://example.com:8080/"]
    );
    assert_eq!(reentered(&c), vec!["https://example.com:8080/"]);
}

#[test]
fn a_root_in_its_block_is_not_reentered_across_the_hosts_sorted_between() {
    // `com,example)` and `com,example:8080)` sort apart (`,` `-` digits come before `:`);
    // each root URL's lines are together all the same.
    let (c, _) = run_sorted(
        &[
            "com,example)/ 20010101000000 p 0 1",
            "com,example)/index.html 20010101000000 p 0 1",
            "com,example,a)/index.html 20010101000000 p 0 1",
            "com,example,a)/z* 20010101000000 p 0 1",
            "com,example-foo)/* 20010101000000 p 0 1",
            "com,example0)/ 20010101000000 p 0 1",
            "com,example0)/index.php 20010101000000 p 0 1",
            "com,example:8080)/ 20010101000000 p 0 1",
            "com,example:8080)/index.html 20010101000000 p 0 1",
            "com,example:8080)/z* 20010101000000 p 0 1",
        ],
        &[],
    );
    assert_eq!(
        urls(&c),
        vec![
            "https://example.com/",
            "https://a.example.com/",
            "https://example-foo.com/",
            "https://example0.com/",
            "https://example.com:8080/",
        ]
    );
    assert_eq!(
        reentered(&c),
        vec!["https://a.example.com/", "https://example-foo.com/"]
    );
}

#[test]
fn www_collisions_are_set_aside_as_before() {
    let (c, a) = run_sorted(
        &[
            "com)/ 20150101000000 http://www1355544.com/ text/html 200 AAA 100",
            "com)/index.html 20150101000000 p 0 1",
            "com)/x* 20150101000000 p 0 1",
            "com,example)/ 20010101000000 http://www2.example.com/ text/html 200 A 1",
            "com,example)/index.html 20010101000000 http://example.com/index.html text/html 200 A 1",
        ],
        &[],
    );
    // A bare-TLD key stands for some `wwwN.com`: set aside with or without its original URL,
    // and a wildcard under it re-enters nothing (`https://com/` was set aside: once is all).
    // `www2.example.com` keeps two dots once stripped: by our rule it is `example.com`, no
    // collision, and its root stands for the index file.
    assert_eq!(urls(&c), vec!["https://example.com/"]);
    assert!(reentered(&c).is_empty());
    let collisions = a.iter().filter(|s| s.stage == "www_collisions").count();
    assert_eq!(collisions, 2, "{a:?}");
    assert_eq!(a.iter().filter(|s| s.url == "https://com/").count(), 1);
}

#[test]
fn a_wildcard_after_its_collided_root_re_enters_nothing() {
    // The root line's original URL says `com)` stands for `www1355544.com`; the wildcard's
    // says nothing against `com`, but its root is the URL already set aside.
    let (c, a) = run_sorted(
        &[
            "com)/ 20150101000000 http://www1355544.com/ text/html 200 AAA 100",
            "com)/y* 20150101000000 http://com/y* text/html 200 AAA 100",
        ],
        &[],
    );
    assert!(urls(&c).is_empty(), "{c:?}");
    assert_eq!(a.iter().filter(|s| s.url == "https://com/").count(), 1);
}

#[test]
fn a_key_spelled_unlike_the_first_is_set_aside_so_no_root_goes_twice() {
    // `com,example,)` and `http://(com,example,)` are `https://example.com/` too.
    let (c, a) = run_sorted(
        &[
            "com,example)/index.html 20010101000000 p 0 1",
            "com,example,)/ 20010101000000 p 0 1",
            "http://(com,example,)/ 20010101000000 p 0 1",
        ],
        &[],
    );
    assert_eq!(urls(&c), vec!["https://example.com/"]);
    let spelled: Vec<&str> = a
        .iter()
        .filter(|s| s.stage == "surt_to_url" && s.reason.contains("spelled unlike"))
        .map(|s| s.url.as_str())
        .collect();
    assert_eq!(spelled, vec!["com,example,)/", "http://(com,example,)/"]);
    // An index spelled the other way throughout is read as it is.
    let (c, a) = run_sorted(
        &[
            "http://(com,example,)/ 20010101000000 p 0 1",
            "http://(com,example,)/index.html 20010101000000 p 0 1",
            "http://(com,example,:8080)/index.html 20010101000000 p 0 1",
        ],
        &[],
    );
    assert!(a.iter().all(|s| s.stage == "index_files"), "{a:?}");
    assert_eq!(
        urls(&c),
        vec!["https://example.com/", "https://example.com:8080/"]
    );
}

#[test]
fn a_popular_root_goes_to_the_quota_once() {
    let (c, a) = run_sorted(
        &[
            "com,twitter)/ 20010101000000 p 0 1",
            "com,twitter)/index.html 20010101000000 p 0 1",
            "com,twitter)/search* 20010101000000 p 0 1",
        ],
        &["twitter.com"],
    );
    assert!(c.is_empty());
    let quota: Vec<&str> = a
        .iter()
        .filter(|s| s.stage == "popular_domains")
        .map(|s| s.url.as_str())
        .collect();
    assert_eq!(quota, vec!["https://twitter.com/"]);
}

#[test]
fn an_ip_host_fits_either_comma_spelling() {
    // The `surt` tools' form: names with a trailing comma, IPv4 hosts without (and sorted
    // first). Neither is set aside, whichever comes first; a named key without the comma
    // still is, once the index's spelling is known.
    let (c, a) = run_sorted(
        &[
            "http://(127.0.0.1)/ 20010101000000 p 0 1",
            "http://(127.0.0.1:8080)/a 20010101000000 p 0 1",
            "http://(com,example,)/ 20010101000000 p 0 1",
            "http://(org,example)/ 20010101000000 p 0 1",
            "http://(org,example,)/a 20010101000000 p 0 1",
        ],
        &[],
    );
    assert_eq!(
        urls(&c),
        vec![
            "https://127.0.0.1/",
            "https://127.0.0.1:8080/a",
            "https://example.com/",
            "https://example.org/a"
        ]
    );
    let spelled: Vec<&str> = a.iter().map(|s| s.url.as_str()).collect();
    assert_eq!(spelled, vec!["http://(org,example)/"], "{a:?}");
}
