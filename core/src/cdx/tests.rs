//! The dialects read strictly and leniently, paging answers, and the request URL.

use super::*;

#[test]
fn ia_json_is_an_array_with_a_header_row() {
    let body = r#"[["urlkey","timestamp","original","mimetype","statuscode","digest","length"],
        ["com,example)/","19970126045828","http://www.example.com:80/","text/html","200","AAA","1234"]]"#;
    let rows = parse_rows(Dialect::Ia, body).expect("IA rows");
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].timestamp, "19970126045828");
    assert_eq!(
        (rows[0].mime.as_str(), rows[0].status.as_str()),
        ("text/html", "200")
    );
    assert_eq!(parse_rows(Dialect::Ia, "[]").expect("empty"), vec![]);
    assert_eq!(parse_rows(Dialect::Ia, "").expect("empty"), vec![]);
    assert!(parse_rows(Dialect::Ia, "<html>").is_err());
    assert_eq!(parse_num_pages(Dialect::Ia, "17\n"), Ok(17));
    assert_eq!(detect_dialect(body), Some(Dialect::Ia));
}

#[test]
fn pywb_json_is_one_object_per_line() {
    let body = "{\"urlkey\": \"com,example)/\", \"timestamp\": \"20200101000000\", \"url\": \"http://example.com/\", \"mime\": \"text/html\", \"status\": \"200\", \"digest\": \"X\"}\n\
                {\"urlkey\": \"com,example)/\", \"timestamp\": \"20210101000000\", \"url\": \"http://example.com/\", \"mime\": \"warc/revisit\", \"status\": \"-\", \"digest\": \"X\"}\n";
    let rows = parse_rows(Dialect::Pywb, body).expect("pywb rows");
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[1].mime, "warc/revisit");
    assert_eq!(
        parse_num_pages(Dialect::Pywb, r#"{"blocks": 1, "pages": 3, "pageSize": 5}"#),
        Ok(3)
    );
    assert!(parse_num_pages(Dialect::Pywb, "3").is_err());
    assert_eq!(detect_dialect(body), Some(Dialect::Pywb));
}

const IA_HEADER: &str =
    r#"["urlkey","timestamp","original","mimetype","statuscode","digest","length"]"#;

#[test]
fn lenient_ia_rows_skip_what_cannot_be_read() {
    let body = format!(
        r#"[{IA_HEADER},
        ["com,x)/","20010101000000","http://x.com/","text/html","200","A","1"],
        "not a row",
        ["com,x)/",20020101000000,"http://x.com/"],
        {{"timestamp":"20030101000000"}},
        ["com,x)/","20040101000000","http://x.com/","text/html","302","B","1"]]"#
    );
    let got = read_rows(Dialect::Ia, &body).expect("IA rows");
    let stamps: Vec<&str> = got.rows.iter().map(|r| r.timestamp.as_str()).collect();
    assert_eq!(stamps, ["20010101000000", "20040101000000"]);
    assert_eq!(got.skipped, 3);
    // Columns are found by the header, in whatever order it names them.
    let reordered = r#"[["original","timestamp"],["http://x.com/","20050101000000"]]"#;
    let got = read_rows(Dialect::Ia, reordered).expect("rows");
    assert_eq!(got.rows[0].original, "http://x.com/");
    assert_eq!(
        read_rows(Dialect::Ia, "[]").expect("empty"),
        Rows::default()
    );
    for bad in ["<html>", "[[\"a\"]", r#"[["urlkey"],["x"]]"#, "{}", "[1,2]"] {
        assert!(read_rows(Dialect::Ia, bad).is_err(), "{bad}");
    }
}

#[test]
fn lenient_pywb_lines_skip_what_cannot_be_read() {
    let body =
        "{\"timestamp\": \"20200101000000\", \"url\": \"http://x.com/\", \"status\": \"200\"}\n\
                {\"timestamp\": 2020}\n\
                not json\n\
                [1]\n\
                {\"timestamp\": \"20210101000000\", \"url\": \"http://x.com/\"}\n";
    let got = read_rows(Dialect::Pywb, body).expect("pywb rows");
    assert_eq!(got.rows.len(), 2);
    assert_eq!(got.skipped, 3);
    assert!(read_rows(Dialect::Pywb, "<html>\n<body>").is_err());
    assert!(read_rows(Dialect::Pywb, "com,x)/ 20200101000000 {\"url\": \"x\"}").is_err());
    assert_eq!(
        read_rows(Dialect::Pywb, " \n").expect("empty"),
        Rows::default()
    );
}

#[test]
fn paging_answers_in_either_dialect() {
    assert_eq!(paging("3\n"), Paging::Pages(3, Dialect::Ia));
    assert_eq!(
        paging(r#"{"blocks": 1, "pages": 2, "pageSize": 5}"#),
        Paging::Pages(2, Dialect::Pywb)
    );
    assert_eq!(paging(""), Paging::NoCaptures);
    assert_eq!(
        paging("com,x)/ 20200101000000 {\"url\": \"http://x.com/\"}"),
        Paging::Unpaged
    );
    assert_eq!(paging("-1"), Paging::Unpaged);
}

#[test]
fn paging_in_a_known_dialect_is_strict_for_ia_and_unpaged_for_pywb() {
    assert_eq!(
        paging_in(Dialect::Ia, "3\n"),
        Ok(Paging::Pages(3, Dialect::Ia))
    );
    assert_eq!(paging_in(Dialect::Ia, " "), Ok(Paging::NoCaptures));
    assert!(paging_in(Dialect::Ia, r#"{"pages": 2}"#).is_err());
    assert_eq!(
        paging_in(Dialect::Pywb, r#"{"pages": 2}"#),
        Ok(Paging::Pages(2, Dialect::Pywb))
    );
    assert_eq!(
        paging_in(Dialect::Pywb, "com,x)/ 20200101000000 {}"),
        Ok(Paging::Unpaged)
    );
}

#[test]
fn the_pager_asks_each_page_in_order_within_the_cap() {
    let pages = |p: Paging, max: u64| Pager::new(p, max).map(|q| q.params()).collect::<Vec<_>>();
    let json = ("output", "json".to_string());
    let page = |n: &str| ("page", n.to_string());
    assert_eq!(
        pages(Paging::Pages(3, Dialect::Ia), u64::MAX),
        vec![
            vec![json.clone(), page("0")],
            vec![json.clone(), page("1")],
            vec![json.clone(), page("2")]
        ]
    );
    let capped = Pager::new(Paging::Pages(5, Dialect::Pywb), 2);
    assert_eq!((capped.asked(), capped.total()), (2, 5));
    assert_eq!(capped.count(), 2);
    // An unpaged index: one request without `page=`, whatever the cap.
    assert_eq!(pages(Paging::Unpaged, 0), vec![vec![json.clone()]]);
    assert!(pages(Paging::NoCaptures, 10).is_empty());
    assert!(pages(Paging::Pages(0, Dialect::Ia), 10).is_empty());
}

#[test]
fn the_uri_r_stays_in_the_query() {
    let u = query_url(
        "http://cdx.example/coll/cdx?src=a",
        "http://x.com/a?b=c&d=e#f",
        &[("output", "json")],
    )
    .expect("url");
    assert_eq!(
        u.as_str(),
        "http://cdx.example/coll/cdx?src=a&url=http%3A%2F%2Fx.com%2Fa%3Fb%3Dc%26d%3De%23f&output=json"
    );
    assert!(query_url("not a url", "http://x.com/", &[]).is_err());
}

mod replay {
    use super::super::replay::Replay;
    use super::super::CdxRow;

    fn row(ts: &str, url: &str) -> CdxRow {
        CdxRow {
            urlkey: String::new(),
            timestamp: ts.into(),
            original: url.into(),
            mime: String::new(),
            status: String::new(),
            digest: String::new(),
        }
    }

    #[test]
    fn a_template_needs_both_placeholders_after_a_fixed_host() {
        let r = Replay::parse("https://a.example/coll/{timestamp}mp_/{url}").expect("ok");
        assert_eq!(r.to_string(), "https://a.example/coll/{timestamp}mp_/{url}");
        assert_eq!(
            r.uri_m("20200101000000", "http://x.com/?a=b"),
            "https://a.example/coll/20200101000000mp_/http://x.com/?a=b"
        );
        assert!(Replay::parse("http://a.example/?u={url}&t={timestamp}").is_ok());
        for bad in [
            "https://a.example/{timestamp}/",
            "https://a.example/{url}",
            "https://a.example/{timestamp}/{url}/{url}",
            "https://a.example/{ts}/{timestamp}/{url}",
            "https://a.example{timestamp}/{url}",
            "http://{url}/{timestamp}",
            "{url}{timestamp}",
            "ftp://a.example/{timestamp}/{url}",
            "javascript:alert(1)//{timestamp}/{url}",
            "/relative/{timestamp}/{url}",
            "https://a.example/ {timestamp}/{url}",
            "https://a.example/\"{timestamp}/{url}",
            "https://a.example/é/{timestamp}/{url}",
        ] {
            assert!(Replay::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn hostile_rows_are_skipped_and_urls_escaped() {
        let r = Replay::parse("http://a.example/w/{timestamp}/{url}").expect("ok");
        let (ms, skipped) = r.mementos(&[
            row("20200101000000", "http://x.com/"),
            row("2020010100000", "http://x.com/odd"),
            row("20201301000000", "http://x.com/month13"),
            row("2020x101000000", "http://x.com/"),
            row("20200101000000", "javascript:alert(1)"),
            row("20200101000000", "http://x.com/\r\nSet-Cookie: a=b"),
            row("20200101000000", "/relative"),
            row(
                "20210101000000",
                "http://x.com/a>; rel=\"original\", <http://evil/",
            ),
            row("2022", "http://x.com/é \"q\""),
            row("20230101000000{url}", "http://x.com/"),
        ]);
        let uris: Vec<&str> = ms.iter().map(|m| &*m.uri_m).collect();
        assert_eq!(
            uris,
            [
                "http://a.example/w/20200101000000/http://x.com/",
                "http://a.example/w/20210101000000/http://x.com/a%3E;%20rel=%22original%22,%20%3Chttp://evil/",
                "http://a.example/w/2022/http://x.com/%C3%A9%20%22q%22",
            ]
        );
        assert_eq!(skipped, 7);
    }
}
