//! Another spelling's bodies from the stored spelling's: its own skeleton (head and tail, a few
//! hundred bytes naming its URI-R) around the memento list the stored spelling rendered, and
//! coded, once. A hit under a new spelling then costs its head and tail, not a render of every
//! memento and a brotli pass over them (docs/cache-policy.md, "One entry per URL however spelled").

use super::{ContentHash, Pieces, Rendered, View};
use crate::encoding::{join, Coding, Part};
use std::hash::{BuildHasher, Hasher};
use std::sync::{Arc, OnceLock};
use tmproxy_core::timemap::serialize::{Skeleton, TimeMapFormat};

/// The marker a skeleton holds in place of its list: drawn at random once per process, so no
/// URI-R or archive's text can hold it (a skeleton in which it is not found once is not used).
fn marker() -> &'static str {
    static MARKER: OnceLock<String> = OnceLock::new();
    MARKER.get_or_init(|| {
        let draw = || std::hash::RandomState::new().build_hasher().finish();
        format!("tmproxy-list-{:016x}{:016x}", draw(), draw())
    })
}

impl View {
    /// This view's skeleton in `format` (made once).
    fn skeleton(&self, format: TimeMapFormat) -> Option<&Skeleton> {
        self.skeletons[format.index()]
            .get_or_init(|| format.skeleton(&self.aggregate, &self.links, marker()))
            .as_ref()
    }

    /// The memento list of this view's own rendering in `format` (it renders it if not yet),
    /// sharing the rendering's bytes, and the rendering's ETag.
    fn list(&self, format: TimeMapFormat) -> Option<(bytes::Bytes, String)> {
        let rendered = self.rendered(format);
        let skeleton = self.skeleton(format)?;
        let body = rendered.body.contiguous();
        let list = skeleton.list_in(&body)?;
        let start = list.as_ptr() as usize - body.as_ptr() as usize;
        Some((body.slice(start..start + list.len()), rendered.etag))
    }

    /// Another spelling's rendering in `format`: its skeleton with the origin's list spliced in.
    /// None for the stored spelling's own view, or when there is no skeleton to splice.
    pub(super) fn spliced(&self, format: TimeMapFormat) -> Option<Rendered> {
        let origin = self.origin.as_ref()?;
        let skeleton = self.skeleton(format)?;
        let (list, origin_etag) = origin.list(format)?;
        // Not copied: the list is the origin's own bytes, sent between this head and tail.
        let body = Pieces::three(
            bytes::Bytes::copy_from_slice(skeleton.head()),
            list,
            bytes::Bytes::copy_from_slice(skeleton.tail()),
        );
        // The ETag stands for these bytes without hashing all of them again: the origin's
        // (its list) and this skeleton's (its URI-R), both fixed by the content.
        let mut hash = ContentHash::of(origin_etag.as_bytes());
        hash.update(&skeleton.bytes);
        let etag = hash.etag();
        Some(Rendered {
            body,
            etag_header: axum::http::HeaderValue::from_str(&etag).ok(),
            etag,
            link_header: super::link_header(&self.aggregate, &self.links, format, None),
        })
    }

    /// The origin's memento list in `format` coded as a part to join (made once per coding).
    fn list_part(&self, format: TimeMapFormat, coding: Coding) -> Option<Arc<Part>> {
        self.list_parts[format.index()][coding.index()]
            .get_or_init(|| {
                let (list, _) = self.list(format)?;
                match coding.part(&list) {
                    Ok(part) => Some(Arc::new(part)),
                    Err(e) => {
                        tracing::warn!(error = %e, coding = coding.token(), "cannot code a TimeMap's list");
                        None
                    }
                }
            })
            .clone()
    }

    /// Whether the origin's memento list is coded in `coding` already, so that
    /// [`View::joined`] costs microseconds (its head and tail), not the list's coding.
    pub(super) fn list_part_ready(&self, format: TimeMapFormat, coding: Coding) -> bool {
        self.origin.as_ref().is_some_and(|origin| {
            origin.list_parts[format.index()][coding.index()]
                .get()
                .is_some_and(Option::is_some)
        })
    }

    /// Another spelling's body in `format` and `coding`: its own head and tail coded around the
    /// origin's coded list (its bytes, shared). None for the stored spelling's view, or when a
    /// part cannot be made.
    pub(super) fn joined(&self, format: TimeMapFormat, coding: Coding) -> Option<Pieces> {
        let origin = self.origin.as_ref()?;
        let skeleton = self.skeleton(format)?;
        let list = origin.list_part(format, coding)?;
        let head = coding.part(skeleton.head()).ok()?;
        let tail = coding.part(skeleton.tail()).ok()?;
        let [head, list, tail] = join(&head, &list, &tail).ok()?;
        Some(Pieces::three(head, list, tail))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::service::ServedView;
    use crate::timemap::aggregate::Aggregate;
    use crate::view::ViewContext;
    use std::io::Read;
    use tmproxy_core::timemap::datetime::parse_14digit;
    use tmproxy_core::timemap::model::{Memento, TimeMap};

    fn aggregate(uri_r: &str, n: usize) -> Aggregate {
        let at = |i: usize| {
            let ts = format!("20{:02}01{:02}{:02}0000", i % 25, 1 + i % 28, i % 24);
            parse_14digit(&ts).expect("ts")
        };
        let mut mementos: Vec<Memento> = (0..n)
            .map(|i| Memento {
                uri_m: format!("https://web.example/{i}/http://example.com/").into(),
                datetime: at(i),
                archive: "ia".into(),
            })
            .collect();
        mementos.sort_by_key(|m| m.datetime);
        mementos.dedup_by_key(|m| m.datetime);
        Aggregate {
            uri_r: uri_r.to_string(),
            timemap: Arc::new(TimeMap { mementos }),
            outcomes: Vec::new(),
            fetched_at: parse_14digit("20261122").expect("ts"),
        }
    }

    fn context() -> ViewContext {
        ViewContext {
            public_url: "http://proxy.test".into(),
            page_size: 100,
            credits: Default::default(),
        }
    }

    fn decode(coding: Coding, body: &[u8]) -> Vec<u8> {
        let mut plain = Vec::new();
        let read = match coding {
            Coding::Gzip => flate2::read::GzDecoder::new(body).read_to_end(&mut plain),
            Coding::Zstd => {
                zstd::stream::read::Decoder::new(body).and_then(|mut d| d.read_to_end(&mut plain))
            }
            Coding::Br => brotli::Decompressor::new(body, 4096).read_to_end(&mut plain),
        };
        read.expect("decodes");
        plain
    }

    #[test]
    fn another_spelling_serves_the_bytes_a_whole_render_would_in_every_format_and_coding() {
        let stored = Arc::new(View::build(
            aggregate("http://example.com/", 500),
            &context(),
        ));
        for uri_r in [
            "http://EXAMPLE.com/",
            "http://example.com:80/",
            "example.com/",
        ] {
            let alias = View::respell(&stored, uri_r, &context());
            let whole = View::build(aggregate(uri_r, 500), &context());
            for format in TimeMapFormat::all() {
                let spliced = alias.rendered(format);
                assert!(
                    alias.spliced(format).is_some(),
                    "{format:?}: spliced, not rendered"
                );
                let want = whole.rendered(format).body.contiguous();
                assert!(spliced.body.contiguous() == want, "{format:?} {uri_r}");
                assert_ne!(spliced.etag, stored.rendered(format).etag, "{format:?}");
                assert_eq!(spliced.link_header, whole.rendered(format).link_header);
                for coding in Coding::ALL {
                    let coded = alias.coded(format, coding).expect("coded");
                    assert!(
                        decode(coding, &coded.contiguous()) == want,
                        "{format:?} {coding:?} {uri_r}"
                    );
                }
            }
            // A spelling of a spelling splices from the stored one.
            let again = View::respell(&Arc::new(alias), "http://Example.com/", &context());
            let whole = View::build(aggregate("http://Example.com/", 500), &context());
            assert!(
                again.rendered(TimeMapFormat::JSON).body.contiguous()
                    == whole.rendered(TimeMapFormat::JSON).body.contiguous()
            );
        }
    }

    #[test]
    fn a_spelling_has_one_etag_however_often_it_is_asked() {
        let stored = Arc::new(View::build(
            aggregate("http://example.com/", 50),
            &context(),
        ));
        let a = View::respell(&stored, "http://EXAMPLE.com/", &context());
        let b = View::respell(&stored, "http://EXAMPLE.com/", &context());
        let c = View::respell(&stored, "http://Example.com/", &context());
        let etag = |v: &View| v.rendered(TimeMapFormat::LINK).etag;
        assert_eq!(etag(&a), etag(&b));
        assert_ne!(etag(&a), etag(&c));
    }
}
