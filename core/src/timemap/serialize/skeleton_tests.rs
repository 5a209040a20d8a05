//! Skeletons: another spelling's body is its skeleton with the stored spelling's list spliced
//! in, byte for byte what rendering it whole writes, in every format, paged or not.

use super::tests::agg;
use super::*;
use crate::timemap::aggregate::Aggregate;

const MARKER: &str = "list-3f1c9b7e0d2a4c6e";

fn respelled(a: &Aggregate, uri_r: &str) -> Aggregate {
    let mut b = a.clone();
    b.uri_r = uri_r.to_string();
    b
}

#[test]
fn a_respelled_body_is_its_skeleton_with_the_stored_list() {
    let stored = agg(&[
        ("ia", "20000620180259"),
        ("pt", "20050101000000"),
        ("ia", "20091027204954"),
    ]);
    // Spellings that escape differently in each format: case, a quote, a space, non-ASCII.
    let others = [
        "http://EXAMPLE.com/",
        "http://example.com:80/",
        "http://example.com/a\"b c",
        "http://example.com/\u{e9}t\u{e9}",
    ];
    for page_size in [2, 1000] {
        let links_of = |u: &str| SelfLinks::new("http://proxy.test/", u).with_page_size(page_size);
        for format in TimeMapFormat::all() {
            let own_links = links_of(&stored.uri_r);
            let body = format.render(&stored, &own_links);
            let own = format
                .skeleton(&stored, &own_links, MARKER)
                .expect("skeleton");
            let list = own.list_in(&body).expect("the list in the stored body");
            assert!(!list.is_empty(), "{format:?}");
            assert_eq!(own.splice(list), body, "{format:?}");
            for uri_r in others {
                let other = respelled(&stored, uri_r);
                let links = links_of(uri_r);
                let skeleton = format.skeleton(&other, &links, MARKER).expect("skeleton");
                assert_eq!(
                    skeleton.splice(list),
                    format.render(&other, &links),
                    "{format:?} {uri_r} page_size {page_size}"
                );
            }
        }
    }
}

#[test]
fn an_empty_timemap_has_an_empty_list() {
    let stored = agg(&[]);
    for format in TimeMapFormat::all() {
        let body = format.render(&stored, &links_of_stored());
        let skeleton = format
            .skeleton(&stored, &links_of_stored(), MARKER)
            .expect("skeleton");
        let list = skeleton.list_in(&body).expect("list");
        assert_eq!(skeleton.splice(list), body, "{format:?}");
    }
}

fn links_of_stored() -> SelfLinks {
    SelfLinks::new("http://proxy.test/", "http://example.com/")
}

#[test]
fn a_marker_that_is_not_plain_or_that_the_text_holds_makes_no_skeleton() {
    let stored = agg(&[("ia", "20000620180259")]);
    for format in TimeMapFormat::all() {
        for bad in ["", "a\"b", "a b", "a\nb", "é"] {
            assert!(
                format.skeleton(&stored, &links_of_stored(), bad).is_none(),
                "{bad:?}"
            );
        }
        // A URI-R that holds the marker: where it is found twice there is no skeleton (JSON
        // escapes a quote in a URI-R, so its quoted marker is found once, and rightly).
        for uri_r in [
            format!("http://example.com/{MARKER}"),
            format!("http://e.com/\"{MARKER}\""),
        ] {
            let holding = respelled(&stored, &uri_r);
            let links = SelfLinks::new("http://proxy.test/", &holding.uri_r);
            let body = format.render(&holding, &links);
            match format.skeleton(&holding, &links, MARKER) {
                Some(skeleton) => {
                    assert_eq!(format, TimeMapFormat::JSON, "{uri_r}");
                    let list = skeleton.list_in(&body).expect("list");
                    assert_eq!(skeleton.splice(list), body);
                }
                None => assert_ne!(format, TimeMapFormat::JSON, "{uri_r}"),
            }
        }
    }
}

#[test]
fn a_body_of_other_mementos_has_no_list_for_this_skeleton() {
    let stored = agg(&[("ia", "20000620180259"), ("pt", "20050101000000")]);
    let other = agg(&[("ia", "20000620180259")]);
    let skeleton = TimeMapFormat::LINK
        .skeleton(&stored, &links_of_stored(), MARKER)
        .expect("skeleton");
    // The head names the TimeMap's span: another span's body does not fit it.
    let body = TimeMapFormat::LINK.render(&other, &links_of_stored());
    assert!(skeleton.list_in(&body).is_none());
    assert!(skeleton.list_in(b"").is_none());
}
