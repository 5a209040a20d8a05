//! A view as the store's renderings tier needs it ([`Renders`]): each format's whole body
//! written out, and the headers an answer from the files sends, made once per revision.

use super::View;
use crate::cache::store::renderings::Renders;
use crate::timemap::serialize::TimeMapFormat;
use axum::http::{HeaderMap, HeaderValue};
use std::io::{self, Write};

/// What a huge entry's answer from its files sends besides the body and its ETag.
#[derive(Debug)]
pub struct FileHeaders {
    /// `X-Memento-Count`, `-Archives`, `-Partial`, `Last-Modified` ([`View::content_headers`]).
    pub content: HeaderMap,
    /// The whole TimeMap's `Link` header in this format ([`View::link_header`]).
    pub link: Option<HeaderValue>,
}

impl Renders for View {
    type Headers = FileHeaders;

    fn headers(&self, format: TimeMapFormat) -> FileHeaders {
        FileHeaders {
            content: self.content_headers(),
            link: self.link_header(format),
        }
    }

    fn write_body(&self, format: TimeMapFormat, out: &mut dyn Write) -> io::Result<()> {
        match self.rendered_ready(format) {
            Some(r) => r.body.iter().try_for_each(|piece| out.write_all(piece)),
            None => format.render_to(&self.aggregate, self.links(), out),
        }
    }
}
