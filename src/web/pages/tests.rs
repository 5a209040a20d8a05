use super::*;
use crate::timemap::aggregate::ArchiveOutcome;
use crate::timemap::answer::{ArchiveAnswer, ArchiveStatus};
use crate::timemap::datetime::parse_14digit;
use crate::timemap::model::{Memento, TimeMap};

fn memento(uri_m: &str, ts: &str, archive: &str) -> Memento {
    Memento {
        uri_m: uri_m.into(),
        datetime: parse_14digit(ts).expect("timestamp"),
        archive: archive.into(),
    }
}

fn outcome(id: &str, status: ArchiveStatus, detail: Option<&str>, n: usize) -> ArchiveOutcome {
    ArchiveOutcome {
        id: id.to_string(),
        via: None,
        answer: ArchiveAnswer::failed(status, Some(200), detail.map(str::to_string)),
        mementos: n,
        duplicates: 0,
        fetched_at: parse_14digit("20260101").expect("timestamp"),
        last_error: None,
    }
}

/// Everything an attacker controls, crafted to break out of text and attributes.
fn hostile() -> Aggregate {
    let evil = "<b>evil</b>\"'";
    Aggregate {
        uri_r: "http://e.com/\"><script>alert(1)</script>".to_string(),
        timemap: TimeMap {
            mementos: vec![
                memento(
                    "http://a.test/2001/\"><script>alert(2)</script>",
                    "20010101000000",
                    "a",
                ),
                memento("javascript:alert(3)", "20020101000000", evil),
                memento(
                    "http://a.test/2003/x' onmouseover='alert(4)",
                    "20030101000000",
                    "a",
                ),
            ],
        }
        .into(),
        outcomes: vec![
            outcome("a", ArchiveStatus::Ok, None, 2),
            outcome(
                evil,
                ArchiveStatus::Error,
                Some("<img src=x onerror=alert(5)>"),
                1,
            ),
        ],
        fetched_at: parse_14digit("20240101000000").expect("timestamp"),
    }
}

#[test]
fn hostile_text_stays_text() {
    let html = timemap(&hostile(), CacheStatus::Miss, None)
        .render()
        .expect("renders");
    for raw in [
        "<script",
        "<b>",
        "<img",
        "href=\"javascript",
        "onmouseover='",
    ] {
        assert!(!html.contains(raw), "{raw} came through raw:\n{html}");
    }
    assert!(
        html.contains("&#60;b&#62;evil&#60;/b&#62;") || html.contains("&lt;b&gt;evil&lt;/b&gt;")
    );
    // The javascript: URI is shown (escaped) as text, never as a link.
    assert!(html.contains("alert(3)"));
    assert_eq!(html.matches("class=\"memento\"").count(), 2);
    assert_eq!(html.matches("class=\"memento-text\"").count(), 1);
}

#[test]
fn one_year_group_per_year_and_every_link() {
    let html = timemap(&hostile(), CacheStatus::Hit, None)
        .render()
        .expect("renders");
    assert_eq!(html.matches("<g class=\"year\"").count(), 3);
    assert_eq!(html.matches("<h3 id=\"year-").count(), 3);
    assert!(html
        .contains("href=\"/timemap/json/http://e.com/%22%3E%3Cscript%3Ealert(1)%3C/script%3E\""));
    assert!(html.contains("href=\"/timegate/http://e.com/"));
    assert!(html.contains(">HIT<"));
    assert_eq!(html.matches("<h1").count(), 1);
}

#[test]
fn no_memento_says_why_and_draws_no_chart() {
    let agg = Aggregate {
        timemap: TimeMap::default().into(),
        outcomes: vec![outcome("a", ArchiveStatus::NotFound, None, 0)],
        ..hostile()
    };
    let html = timemap(&agg, CacheStatus::Miss, Some("no memento of it".into()))
        .render()
        .expect("renders");
    assert!(html.contains("id=\"problem\">no memento of it<"));
    assert!(!html.contains("<svg xmlns"));
    assert!(html.contains("data-status=\"not_found\""));
}

#[test]
fn the_admin_page_loads_its_script_only_where_the_api_is() {
    let here = admin(false).render().expect("renders");
    assert!(here.contains(&ADMIN_JS.url()));
    assert!(here.contains("<label for=\"token\">"));
    let elsewhere = admin(true).render().expect("renders");
    assert!(!elsewhere.contains(&ADMIN_JS.url()));
    assert!(!elsewhere.contains("id=\"token\""));
    assert!(elsewhere.contains("id=\"elsewhere\""));
}

#[test]
fn no_inline_script_or_style_anywhere() {
    let pages = [
        timemap(&hostile(), CacheStatus::Miss, None).render(),
        admin(false).render(),
        home(&[]).render(),
        error(&AppError::NoSuchRoute).render(),
    ];
    for html in pages {
        let html = html.expect("renders");
        assert!(!html.contains("<script>"), "{html}");
        assert!(!html.contains("style="), "{html}");
        assert!(!html.contains("<style"), "{html}");
        assert!(
            !html.contains("//cdn") && !html.contains("https://"),
            "{html}"
        );
    }
}
