//! Streamed hits: an entry too heavy for the hot tier is answered from its
//! renderings on disk, streamed; the same bytes as the miss in every format and coding, damaged
//! or missing files never served as a whole wrong body, and files that follow the entry
//! (restart, purge, refresh).

use crate::support::{client, config_for, start_proxy, uri_r, Proxy};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tmproxy::cache::store::renderings::{Head, Renderings};
use tmproxy::config::Config;
use tmproxy::http::view::View;
use tmproxy_testkit::archive::{Behaviour, SimulatedArchive, TimeMapSpec};

const URI_R: &str = "http://example.com/";
const TOKEN: &str = "streamed-hits-token";
const FORMATS: [&str; 3] = ["link", "json", "cdxj"];

/// `n` distinct capture times, oldest first.
fn spec(n: usize, year: u32) -> TimeMapSpec {
    let stamps: Vec<String> = (0..n)
        .map(|i| {
            let (d, s) = (i / 86_400, i % 86_400);
            format!(
                "{year}{:02}{:02}{:02}{:02}{:02}",
                1 + d / 28 % 12,
                1 + d % 28,
                s / 3600,
                s / 60 % 60,
                s % 60
            )
        })
        .collect();
    let stamps: Vec<&str> = stamps.iter().map(String::as_str).collect();
    TimeMapSpec::of(&stamps)
}

/// A hot tier of 1 MiB: a TimeMap of 8,000 mementos weighs several MiB, so it is huge here.
fn config(a: &SimulatedArchive, path: &Path) -> Config {
    let mut c = config_for(&[("a", a)]);
    c.cache.hot_capacity = 1024 * 1024;
    c.cache.path = path.display().to_string();
    c.admin.token = TOKEN.into();
    c
}

/// An archive whose TimeMap is huge for [`config`] (8,000 mementos) and a proxy caching it in
/// a new directory, kept alive by the caller.
async fn huge_entry_proxy() -> (SimulatedArchive, tempfile::TempDir, Proxy) {
    let a = SimulatedArchive::start(Behaviour::TimeMap(spec(8_000, 2001)))
        .await
        .expect("archive");
    let dir = tempfile::tempdir().expect("dir");
    let proxy = start_proxy(config(&a, &dir.path().join("cache"))).await;
    (a, dir, proxy)
}

fn spill(proxy: &Proxy) -> Arc<Renderings<View>> {
    let state = proxy.state.as_ref().expect("state");
    state.renderings.clone().expect("renderings on")
}

/// The head kept for [`URI_R`], under its cache key.
fn kept(proxy: &Proxy) -> Option<Arc<Head<View>>> {
    let state = proxy.state.as_ref().expect("state");
    spill(proxy).head(&state.cache.key_of(&uri_r(URI_R)))
}

/// The head once the renderings are written (after a miss they are written behind it).
async fn head(proxy: &Proxy, other_than: Option<u64>) -> Arc<Head<View>> {
    for _ in 0..600 {
        if let Some(h) = kept(proxy).filter(|h| Some(h.rev) != other_than) {
            return h;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("no renderings written for {URI_R}");
}

fn url(proxy: &Proxy, format: &str) -> String {
    format!("{}/timemap/{format}/{URI_R}", proxy.base)
}

async fn get(url: &str, headers: &[(&str, &str)]) -> reqwest::Response {
    let mut req = client().get(url);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    // The error's chain in the message: a failure here says which connection broke, and how.
    match req.send().await {
        Ok(r) => r,
        Err(e) => panic!("GET {url} with {headers:?}: {e:?}"),
    }
}

fn decode(coding: &str, coded: &[u8]) -> Vec<u8> {
    let mut back = Vec::new();
    match coding {
        "br" => brotli::Decompressor::new(coded, 4096).read_to_end(&mut back),
        "zstd" => zstd::stream::Decoder::new(coded).and_then(|mut d| d.read_to_end(&mut back)),
        _ => flate2::read::GzDecoder::new(coded).read_to_end(&mut back),
    }
    .expect("decodes");
    back
}

/// The miss's bodies (and ETags) in every format: the first a MISS, the others read the entry.
async fn bodies(proxy: &Proxy) -> Vec<(Vec<u8>, String)> {
    let mut out = Vec::new();
    for format in FORMATS {
        let r = get(&url(proxy, format), &[]).await;
        assert_eq!(r.status(), 200, "{format}");
        let etag = r.headers()["etag"].to_str().expect("ascii").to_owned();
        out.push((r.bytes().await.expect("body").to_vec(), etag));
    }
    out
}

/// The proxy's base URL as a link-format body names it (its `self` link).
fn proxy_base(link_body: &[u8]) -> String {
    let text = String::from_utf8_lossy(link_body);
    let at = text.find("/timemap/link/").expect("a self link");
    let start = text[..at].rfind('<').expect("<") + 1;
    text[start..at].to_owned()
}

/// Equal bodies, without printing megabytes when they are not.
fn same(got: &[u8], want: &[u8], what: &str) {
    assert!(
        got == want,
        "{what}: {} bytes, want {} (first difference at {:?})",
        got.len(),
        want.len(),
        got.iter().zip(want).position(|(a, b)| a != b)
    );
}

/// The ETag's hash (the body's unseeded 64-bit XXH3), to check an ETag names its body.
fn body_hash(bytes: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(bytes)
}

fn files(dir: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    found.sort();
    found
}

#[tokio::test]
async fn a_huge_entrys_hits_stream_the_misss_bytes_in_every_format_and_coding() {
    let (a, _dir, proxy) = huge_entry_proxy().await;
    let served = bodies(&proxy).await;
    // What the ordinary path makes of the entry: each format asked with no head kept (dropped
    // as a damaged file would be), so the entry is read from disk and rendered in memory.
    let key = proxy
        .state
        .as_ref()
        .expect("state")
        .cache
        .key_of(&uri_r(URI_R));
    let mut missed = Vec::new();
    let mut ordinary = Vec::new();
    for format in FORMATS {
        let h = head(&proxy, None).await;
        spill(&proxy).discard(&key, h.rev);
        let before = spill(&proxy).streamed();
        let r = get(&url(&proxy, format), &[]).await;
        assert_eq!(r.headers()["x-cache"], "HIT");
        let etag = r.headers()["etag"].to_str().expect("ascii").to_owned();
        ordinary.push(r.headers().clone());
        let body = r.bytes().await.expect("body").to_vec();
        assert_eq!(
            spill(&proxy).streamed(),
            before,
            "{format}: not from a file"
        );
        assert_eq!(
            etag,
            format!("\"{:016x}\"", body_hash(&body)),
            "the ETag is the body's"
        );
        missed.push((body, etag));
    }
    for (i, format) in FORMATS.iter().enumerate() {
        same(&served[i].0, &missed[i].0, format);
        assert_eq!(served[i].1, missed[i].1, "{format}: the ETag is the body's");
    }
    let head = head(&proxy, None).await;
    let streamed = spill(&proxy).streamed();
    for (i, format) in FORMATS.iter().enumerate() {
        let (body, etag) = &missed[i];
        let r = get(&url(&proxy, format), &[]).await;
        assert_eq!(r.status(), 200);
        assert_eq!(r.headers()["x-cache"], "HIT");
        assert_eq!(r.headers()["x-memento-count"], "8000");
        assert_eq!(&r.headers()["etag"], etag.as_str(), "{format}");
        assert!(r.headers()["link"]
            .to_str()
            .expect("ascii")
            .contains("rel=\"self\""));
        assert_eq!(
            r.headers()["content-length"],
            body.len().to_string().as_str()
        );
        // The headers of an ordinary hit, but for the clock's (Age, Cache-Control, Date) and
        // the request's own id.
        let names = |h: &reqwest::header::HeaderMap| -> Vec<String> {
            let mut n: Vec<String> = h.keys().map(|k| k.to_string()).collect();
            n.sort();
            n
        };
        assert_eq!(names(r.headers()), names(&ordinary[i]), "{format}");
        for k in ordinary[i].keys() {
            if ["age", "cache-control", "date", "x-request-id"].contains(&k.as_str()) {
                continue;
            }
            let all = |h: &reqwest::header::HeaderMap| {
                let mut v: Vec<String> = h
                    .get_all(k)
                    .iter()
                    .map(|v| v.to_str().expect("ascii").to_owned())
                    .collect();
                v.sort();
                v
            };
            assert_eq!(all(r.headers()), all(&ordinary[i]), "{format}: {k}");
        }
        same(&r.bytes().await.expect("body"), body, format);
        for coding in ["zstd", "br", "gzip"] {
            let r = get(&url(&proxy, format), &[("accept-encoding", coding)]).await;
            assert_eq!(r.status(), 200);
            assert_eq!(r.headers()["content-encoding"], coding);
            let coded_tag = format!("{}-{coding}\"", etag.trim_end_matches('"'));
            assert_eq!(r.headers()["etag"], coded_tag.as_str());
            // Every coding is a stored file, sent with its length.
            let stored = match coding {
                "zstd" => &head.formats[i].zstd,
                "gzip" => &head.formats[i].gzip,
                _ => &head.formats[i].br,
            };
            let length = r.headers().get("content-length").map(|v| v.to_str().ok());
            assert_eq!(
                length.flatten(),
                Some(stored.len.to_string().as_str()),
                "{format} {coding}"
            );
            let coded = r.bytes().await.expect("body");
            assert!(coded.len() * 4 < body.len(), "{format} {coding}");
            same(&decode(coding, &coded), body, coding);
            // Either tag says the client has it.
            for tag in [etag.as_str(), coded_tag.as_str()] {
                let r = get(
                    &url(&proxy, format),
                    &[("accept-encoding", coding), ("if-none-match", tag)],
                )
                .await;
                assert_eq!(r.status(), 304, "{format} {coding} {tag}");
                assert_eq!(r.headers()["x-cache"], "HIT");
            }
        }
        // Safari's Accept-Encoding: the stored br body, smaller than gzip; Python's
        // `requests`' (no br): the stored gzip body.
        for (accept, coding) in [("gzip, deflate, br", "br"), ("gzip, deflate", "gzip")] {
            let r = get(&url(&proxy, format), &[("accept-encoding", accept)]).await;
            assert_eq!(r.headers()["content-encoding"], coding, "{accept}");
            same(
                &decode(coding, &r.bytes().await.expect("body")),
                body,
                accept,
            );
        }
        // A client taking zstd as gladly as br gets the stored zstd body.
        let r = get(
            &url(&proxy, format),
            &[("accept-encoding", "gzip, br, zstd")],
        )
        .await;
        assert_eq!(r.headers()["content-encoding"], "zstd");
        same(
            &decode("zstd", &r.bytes().await.expect("body")),
            body,
            "favoured zstd",
        );
        let r = client()
            .head(url(&proxy, format))
            .send()
            .await
            .expect("HEAD");
        assert_eq!(r.status(), 200);
        assert_eq!(&r.headers()["etag"], etag.as_str());
        assert!(r.bytes().await.expect("no body").is_empty());
    }
    // 3 plain + 3 × 6 coded bodies came from the files; the archive was asked once.
    assert_eq!(spill(&proxy).streamed() - streamed, 21);
    assert_eq!(a.requests(), 1);
    assert_eq!(kept(&proxy).map(|h| h.rev), Some(head.rev));
}

/// A client that takes br and nothing else we send (`Accept-Encoding: br`) gets the br copy
/// written with the other renderings, streamed from its file as stored; a damaged br copy sends
/// that request the ordinary way, whole and right, and is made again.
#[tokio::test]
async fn a_br_only_client_gets_the_stored_br_copy_and_a_damaged_one_falls_back() {
    let (a, _dir, proxy) = huge_entry_proxy().await;
    let want = bodies(&proxy).await.remove(0).0;
    let h = head(&proxy, None).await;
    let br = &h.formats[0].br;
    let stored = std::fs::read(&br.path).expect("the br copy");
    assert_eq!(stored.len() as u64, br.len);
    assert_eq!(crc32fast::hash(&stored), br.crc);
    same(&decode("br", &stored), &want, "the stored br copy");
    for accept in ["br", "br;q=1, identity;q=0"] {
        let before = spill(&proxy).streamed();
        let r = get(&url(&proxy, "link"), &[("accept-encoding", accept)]).await;
        assert_eq!(r.status(), 200, "{accept}");
        assert_eq!(r.headers()["x-cache"], "HIT");
        assert_eq!(r.headers()["content-encoding"], "br", "{accept}");
        assert_eq!(
            r.headers()["content-length"],
            br.len.to_string().as_str(),
            "{accept}"
        );
        same(&r.bytes().await.expect("body"), &stored, "sent as stored");
        assert_eq!(
            spill(&proxy).streamed(),
            before + 1,
            "{accept}: from the file"
        );
    }

    // One byte of the br copy flipped: coded on the way from the entry instead, never the
    // damaged bytes; the head is dropped.
    let mut damaged = stored.clone();
    let mid = damaged.len() / 2;
    damaged[mid] ^= 0x20;
    std::fs::write(&br.path, &damaged).expect("damage");
    let r = get(&url(&proxy, "link"), &[("accept-encoding", "br")]).await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["content-encoding"], "br");
    same(
        &decode("br", &r.bytes().await.expect("whole")),
        &want,
        "the ordinary way",
    );
    assert!(
        kept(&proxy).is_none_or(|k| k.rev != h.rev),
        "damaged head kept"
    );
    // Made again from the entry, and streamed from its new br copy.
    let again = head(&proxy, Some(h.rev)).await;
    let before = spill(&proxy).streamed();
    let r = get(&url(&proxy, "link"), &[("accept-encoding", "br")]).await;
    assert_eq!(
        r.headers()["content-length"],
        again.formats[0].br.len.to_string().as_str()
    );
    same(
        &decode("br", &r.bytes().await.expect("body")),
        &want,
        "after the repair",
    );
    assert_eq!(spill(&proxy).streamed(), before + 1);
    assert_eq!(a.requests(), 1, "repaired from the entry, not the archive");
}

/// The br copies count against `renderings_capacity`: a bound that holds every format's other
/// three files but not its br copy as well keeps nothing, and hits read the entry.
#[tokio::test]
async fn the_br_copies_count_against_the_renderings_capacity() {
    let a = SimulatedArchive::start(Behaviour::TimeMap(spec(8_000, 2001)))
        .await
        .expect("archive");
    let dir = tempfile::tempdir().expect("dir");
    let proxy = start_proxy(config(&a, &dir.path().join("one"))).await;
    bodies(&proxy).await;
    let h = head(&proxy, None).await;
    let br: u64 = h.formats.iter().map(|r| r.br.len).sum();
    let all: u64 = h
        .formats
        .iter()
        .flat_map(|r| [&r.plain, &r.zstd, &r.gzip, &r.br])
        .map(|f| f.len)
        .sum();
    let on_disk: u64 = files(spill(&proxy).dir())
        .iter()
        .map(|f| std::fs::metadata(f).expect("file").len())
        .sum();
    assert_eq!(on_disk, all, "what is counted is what is on disk");
    proxy.stop().await;

    // Half the br copies short of the whole (another port in the bodies moves a few bytes).
    let mut c = config(&a, &dir.path().join("two"));
    c.cache.renderings_capacity = all - br / 2;
    let proxy = start_proxy(c).await;
    let want = bodies(&proxy).await;
    let renderings = spill(&proxy).dir().to_owned();
    for _ in 0..600 {
        if files(&renderings).is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    for (i, format) in FORMATS.iter().enumerate() {
        let r = get(&url(&proxy, format), &[("accept-encoding", "br")]).await;
        assert_eq!(r.headers()["x-cache"], "HIT");
        same(
            &decode("br", &r.bytes().await.expect("body")),
            &want[i].0,
            format,
        );
    }
    assert!(files(&renderings).is_empty(), "{:?}", files(&renderings));
    assert!(kept(&proxy).is_none());
    assert_eq!(spill(&proxy).streamed(), 0);
}

/// Damages `file` with `how` and shows that the answer streamed from it is cut short or, when
/// the damage shows before anything is sent, made the ordinary way: never a complete wrong
/// body. The next answer is right again.
async fn damaged(proxy: &Proxy, file: &Path, want: &[u8], accept: &str, how: &str) {
    let mut bytes = std::fs::read(file).expect("rendering");
    match how {
        "flip" => {
            let mid = bytes.len() / 2;
            bytes[mid] ^= 0x20;
        }
        "truncate" => bytes.truncate(bytes.len() / 3),
        _ => bytes.extend_from_slice(b"<http://evil.example/>; rel=\"memento\"\n"),
    }
    std::fs::write(file, &bytes).expect("damage");
    let asked = client()
        .get(url(proxy, "link"))
        .header("accept-encoding", accept)
        .send()
        .await;
    match accept {
        // The plain file is four pieces: three were handed to the connection before the damage
        // showed, so the transfer is cut short and the client knows it did not get the whole
        // body. Whether the head reached it first is the connection's timing (on a loaded
        // machine the pieces and the cut can all come before its first write): either way no
        // complete body arrives.
        "identity" => {
            if let Ok(r) = asked {
                assert_eq!(r.status(), 200, "{how} {accept}");
                assert!(r.bytes().await.is_err(), "{how} {accept}: a complete body");
            }
        }
        // A coded body here is one piece, checked whole before any of it is sent: this request
        // was answered the ordinary way, whole and right.
        _ => {
            let r = asked.expect("a coded body checked whole is answered");
            assert_eq!(r.status(), 200, "{how} {accept}");
            same(&decode(accept, &r.bytes().await.expect("whole")), want, how)
        }
    }
    // The next answer is whole and right: the entry read again (and rendered again).
    let r = get(&url(proxy, "link"), &[]).await;
    assert_eq!(r.status(), 200);
    same(&r.bytes().await.expect("body"), want, how);
}

#[tokio::test]
async fn a_damaged_rendering_is_cut_short_dropped_and_made_again() {
    let (a, _dir, proxy) = huge_entry_proxy().await;
    let want = bodies(&proxy).await.remove(0).0;
    let mut rev = None;
    for (accept, how) in [
        ("identity", "flip"),
        ("identity", "truncate"),
        ("identity", "append"),
        ("zstd", "flip"),
        ("gzip", "truncate"),
        ("gzip", "flip"),
        ("br", "truncate"),
        ("br", "flip"),
    ] {
        let h = head(&proxy, rev).await;
        rev = Some(h.rev);
        // Each coding is sent as stored, from its own file.
        let file = match accept {
            "zstd" => &h.formats[0].zstd.path,
            "gzip" => &h.formats[0].gzip.path,
            "br" => &h.formats[0].br.path,
            _ => &h.formats[0].plain.path,
        };
        damaged(&proxy, file, &want, accept, how).await;
    }
    assert_eq!(
        a.requests(),
        1,
        "damage is repaired from the entry, not the archive"
    );
}

#[tokio::test]
async fn renderings_removed_while_running_or_across_a_restart_are_made_again() {
    let a = SimulatedArchive::start(Behaviour::TimeMap(spec(8_000, 2001)))
        .await
        .expect("archive");
    let dir = tempfile::tempdir().expect("dir");
    let cache = dir.path().join("cache");
    let proxy = start_proxy(config(&a, &cache)).await;
    let want = bodies(&proxy).await;
    let first = head(&proxy, None).await;
    let renderings = spill(&proxy).dir().to_owned();
    for f in files(&renderings) {
        std::fs::remove_file(f).expect("remove");
    }
    for (i, format) in FORMATS.iter().enumerate() {
        let r = get(&url(&proxy, format), &[]).await;
        assert_eq!(r.status(), 200);
        assert_eq!(r.headers()["x-cache"], "HIT");
        same(&r.bytes().await.expect("body"), &want[i].0, format);
    }
    head(&proxy, Some(first.rev)).await;
    proxy.stop().await;

    // A crash's leftovers: a temporary file and one of an older run.
    std::fs::write(renderings.join("tmp-0000-1-link.txt"), b"partial").expect("write");
    std::fs::write(renderings.join("0000-1-link-00.txt"), b"old").expect("write");
    let old_base = proxy_base(&want[0].0);
    let proxy = start_proxy(config(&a, &cache)).await;
    assert!(files(&renderings).is_empty(), "{:?}", files(&renderings));
    // The bodies name the proxy, which listens on another port now.
    let want: Vec<Vec<u8>> = want
        .iter()
        .map(|(b, _)| {
            let text = String::from_utf8(b.clone()).expect("utf-8");
            text.replace(&old_base, &proxy.base).into_bytes()
        })
        .collect();
    for (i, format) in FORMATS.iter().enumerate() {
        let r = get(&url(&proxy, format), &[]).await;
        assert_eq!(r.status(), 200);
        assert_eq!(r.headers()["x-cache"], "HIT");
        same(&r.bytes().await.expect("body"), &want[i], format);
    }
    head(&proxy, None).await;
    let streamed = spill(&proxy).streamed();
    let r = get(&url(&proxy, "json"), &[]).await;
    same(&r.bytes().await.expect("body"), &want[1], "json streamed");
    assert_eq!(spill(&proxy).streamed(), streamed + 1);
    assert_eq!(a.requests(), 1);
}

#[tokio::test]
async fn a_purge_removes_the_renderings_and_a_refresh_serves_the_new_content() {
    let (a, _dir, proxy) = huge_entry_proxy().await;
    let old = bodies(&proxy).await.remove(0).0;
    let first = head(&proxy, None).await;
    let renderings = spill(&proxy).dir().to_owned();
    assert_eq!(
        files(&renderings).len(),
        12,
        "each format as it is, zstd, gzip and br"
    );

    // A refresh that replaces the entry: the new content, from new files; the old ones gone.
    a.set_behaviour(Behaviour::TimeMap(spec(8_500, 2002)));
    let r = get(&url(&proxy, "link"), &[("cache-control", "no-cache")]).await;
    assert_eq!(r.headers()["x-cache"], "REFRESH");
    let new = r.bytes().await.expect("body").to_vec();
    assert!(new != old, "the refresh's content is new");
    let second = head(&proxy, Some(first.rev)).await;
    assert!(first.formats.iter().all(|r| !r.plain.path.exists()));
    let r = get(&url(&proxy, "link"), &[]).await;
    assert_eq!(r.headers()["x-cache"], "HIT");
    assert_eq!(r.headers()["x-memento-count"], "8500");
    same(&r.bytes().await.expect("body"), &new, "after the refresh");

    let purge = client()
        .delete(format!("{}/admin/cache/{URI_R}", proxy.base))
        .bearer_auth(TOKEN)
        .send()
        .await
        .expect("DELETE");
    assert!(purge.status().is_success(), "{}", purge.status());
    assert!(kept(&proxy).is_none());
    assert!(second
        .formats
        .iter()
        .all(|r| [&r.plain, &r.zstd, &r.gzip, &r.br]
            .iter()
            .all(|f| !f.path.exists())));
    assert!(files(&renderings).is_empty(), "{:?}", files(&renderings));
    let r = get(&url(&proxy, "link"), &[]).await;
    assert_eq!(r.headers()["x-cache"], "MISS");
}

#[tokio::test]
async fn renderings_over_their_bound_are_not_kept_and_hits_read_the_entry() {
    let a = SimulatedArchive::start(Behaviour::TimeMap(spec(8_000, 2001)))
        .await
        .expect("archive");
    let dir = tempfile::tempdir().expect("dir");
    let mut c = config(&a, &dir.path().join("cache"));
    // Far less than one format's body: nothing can be kept.
    c.cache.renderings_capacity = 64 * 1024;
    let proxy = start_proxy(c).await;
    let want = bodies(&proxy).await;
    for _ in 0..3 {
        for (i, format) in FORMATS.iter().enumerate() {
            let r = get(&url(&proxy, format), &[]).await;
            assert_eq!(r.headers()["x-cache"], "HIT");
            same(&r.bytes().await.expect("body"), &want[i].0, format);
        }
    }
    // The one attempt's files go once it is over its bound (it may still be writing).
    let renderings = spill(&proxy).dir().to_owned();
    for _ in 0..600 {
        if files(&renderings).is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(files(&renderings).is_empty(), "{:?}", files(&renderings));
    assert!(kept(&proxy).is_none());
    assert_eq!(spill(&proxy).streamed(), 0);
    assert_eq!(a.requests(), 1);
}

/// Two replicas on one Redis: B streams its renderings of a huge entry; A refreshes it to new
/// content and announces it. B drops its renderings with its local copy, so it serves the new
/// TimeMap (read from Redis), never its old files.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_replicas_refresh_drops_this_replicas_renderings() {
    let redis = crate::redis_server::RedisServer::start();
    let a = SimulatedArchive::start(Behaviour::TimeMap(spec(8_000, 2001)))
        .await
        .expect("archive");
    let dirs = [
        tempfile::tempdir().expect("dir"),
        tempfile::tempdir().expect("dir"),
    ];
    let replica = |dir: &tempfile::TempDir| {
        let mut c = config(&a, &dir.path().join("cache"));
        c.cache.shared = tmproxy::config::SharedAddress::parse(&redis.url()).expect("a Redis URL");
        start_proxy(c)
    };
    let (one, two) = (replica(&dirs[0]).await, replica(&dirs[1]).await);
    let r = get(&url(&one, "link"), &[]).await;
    assert_eq!(r.headers()["x-cache"], "MISS");
    let r = get(&url(&two, "link"), &[]).await;
    assert_eq!(r.headers()["x-cache"], "HIT", "read from Redis");
    let old = r.bytes().await.expect("body").to_vec();
    let first = head(&two, None).await;
    let r = get(&url(&two, "link"), &[]).await;
    same(&r.bytes().await.expect("body"), &old, "two's streamed hit");

    a.set_behaviour(Behaviour::TimeMap(spec(8_500, 2002)));
    let r = get(&url(&one, "link"), &[("cache-control", "no-cache")]).await;
    assert_eq!(r.headers()["x-cache"], "REFRESH");
    let new = r.bytes().await.expect("body").to_vec();
    assert!(new != old, "the refresh's content is new");
    // Two hears of it (pub/sub) and lets its renderings of the old entry go.
    for _ in 0..200 {
        if kept(&two).is_none_or(|h| h.rev != first.rev) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(
        kept(&two).is_none_or(|h| h.rev != first.rev),
        "old renderings kept"
    );
    let asked = a.requests();
    let r = get(&url(&two, "link"), &[]).await;
    assert_eq!(r.headers()["x-cache"], "HIT");
    assert_eq!(r.headers()["x-memento-count"], "8500");
    assert_eq!(a.requests(), asked, "two read Redis, not the archive");
}
