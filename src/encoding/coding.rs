//! The content codings we send: which one a client accepts (`Accept-Encoding`, RFC 9110
//! §12.5.3), and a body coded whole.

use axum::http::{header, HeaderMap, HeaderValue};
use std::io::Write;

/// A content coding we send. Preferred in this order among equal `q`: brotli and zstd make
/// TimeMaps (long runs of near-identical URIs) markedly smaller than gzip.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Coding {
    Br,
    Zstd,
    Gzip,
}

impl Coding {
    pub const ALL: [Coding; 3] = [Coding::Br, Coding::Zstd, Coding::Gzip];

    pub fn index(self) -> usize {
        self as usize
    }

    /// The token in `Accept-Encoding` and `Content-Encoding`.
    pub fn token(self) -> &'static str {
        match self {
            Coding::Br => "br",
            Coding::Zstd => "zstd",
            Coding::Gzip => "gzip",
        }
    }

    /// The strong ETag of the body in this coding, from the plain body's (`"…"` → `"…-br"`):
    /// each coding is its own representation (RFC 9110 §8.8.3), and `If-None-Match` matches
    /// any of them (`timemap::if_none_match`).
    pub fn etag(self, plain: &str) -> Option<HeaderValue> {
        let tag = format!("{}-{}\"", plain.trim_end_matches('"'), self.token());
        HeaderValue::from_str(&tag).ok()
    }

    /// The body in this coding. Levels are the fast end of each (a TimeMap is coded once per
    /// cached entry, but a client waits for the first): brotli 5, zstd 3, gzip 6.
    pub fn encode(self, body: &[u8]) -> std::io::Result<Vec<u8>> {
        let mut w = self.encoder(Vec::with_capacity(body.len() / 4))?;
        w.write_all(body)?;
        w.finish()
    }

    /// A writer coding what it is given into `out`, piece by piece ([`Encoder::finish`] ends
    /// the coded stream), at the levels of [`Coding::encode`].
    pub fn encoder<W: Write>(self, out: W) -> std::io::Result<Encoder<W>> {
        self.encoder_at(out, [5, 3, 6])
    }

    /// A writer at each coding's fastest level (brotli 1, zstd 1, gzip 1): for a body coded
    /// on the way, where a client waits for every byte (`super::streamed`).
    pub fn fast_encoder<W: Write>(self, out: W) -> std::io::Result<Encoder<W>> {
        self.encoder_at(out, [1, 1, 1])
    }

    /// A writer at `levels`, by [`Coding::index`]: brotli's quality, zstd's and gzip's level.
    fn encoder_at<W: Write>(self, out: W, levels: [u32; 3]) -> std::io::Result<Encoder<W>> {
        let level = levels[self.index()];
        Ok(match self {
            Coding::Br => Encoder::Br(Box::new(brotli::CompressorWriter::new(
                out,
                64 * 1024,
                level,
                22,
            ))),
            Coding::Zstd => Encoder::Zstd(zstd::stream::Encoder::new(out, level as i32)?),
            Coding::Gzip => Encoder::Gzip(flate2::write::GzEncoder::new(
                out,
                flate2::Compression::new(level),
            )),
        })
    }
}

/// A body being coded as it is written ([`Coding::encoder`]). Brotli's state is boxed: it is
/// kilobytes, the others a few pointers.
pub enum Encoder<W: Write> {
    Br(Box<brotli::CompressorWriter<W>>),
    Zstd(zstd::stream::Encoder<'static, W>),
    Gzip(flate2::write::GzEncoder<W>),
}

impl<W: Write> Encoder<W> {
    /// Ends the coded stream and gives back the writer it went to.
    pub fn finish(self) -> std::io::Result<W> {
        match self {
            Encoder::Br(mut w) => {
                w.flush()?;
                Ok(w.into_inner())
            }
            Encoder::Zstd(w) => w.finish(),
            Encoder::Gzip(w) => w.finish(),
        }
    }
}

impl<W: Write> Write for Encoder<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Encoder::Br(w) => w.write(buf),
            Encoder::Zstd(w) => w.write(buf),
            Encoder::Gzip(w) => w.write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Encoder::Br(w) => w.flush(),
            Encoder::Zstd(w) => w.flush(),
            Encoder::Gzip(w) => w.flush(),
        }
    }
}

/// The coding to answer in, from the request's `Accept-Encoding`: the one with the highest
/// `q` among ours (ties in [`Coding::ALL`]'s order), `*` standing for those not named; None
/// for identity (no header, or nothing of ours acceptable). `identity;q=0` cannot be honoured
/// for a body too big to code; RFC 9110 lets us send identity anyway.
pub fn negotiate(headers: &HeaderMap) -> Option<Coding> {
    let q = weights(headers);
    Coding::ALL
        .iter()
        .map(|c| (*c, q[c.index()]))
        .filter(|(_, w)| *w > 0.0)
        // max_by keeps the last of equals: walk in reverse so the first preferred wins.
        .rev()
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(c, _)| c)
}

/// [`negotiate`], but the first of `favoured` the client accepts as much as the coding it
/// would get: a body already stored in that coding is sent at once rather than coded on the way.
pub fn negotiate_favouring(headers: &HeaderMap, favoured: &[Coding]) -> Option<Coding> {
    let chosen = negotiate(headers)?;
    let q = weights(headers);
    let first = favoured.iter().find(|f| q[f.index()] >= q[chosen.index()]);
    Some(first.copied().unwrap_or(chosen))
}

/// Whether the request's `Accept-Encoding` accepts the coding `token` (`q` above 0, by name
/// or by `*`; `x-gzip` counts as `gzip`). No header accepts none: RFC 9110 §12.5.3 lets a
/// server assume any, but a body coded uninvited is what a client could not read.
pub fn accepts(headers: &HeaderMap, token: &str) -> bool {
    let plain = |s: &str| s.trim_start_matches("x-").to_ascii_lowercase();
    let mut named = None::<f32>;
    let mut star = None::<f32>;
    for (name, weight) in codings(headers) {
        if name == "*" {
            star = Some(weight);
        } else if plain(name) == plain(token) {
            named = Some(weight);
        }
    }
    named.or(star).is_some_and(|w| w > 0.0)
}

/// Each `coding;q=w` of `Accept-Encoding` (every such header), its weight 1 when not given.
fn codings(headers: &HeaderMap) -> impl Iterator<Item = (&str, f32)> {
    headers
        .get_all(header::ACCEPT_ENCODING)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|text| text.split(','))
        .map(|item| {
            let mut parts = item.split(';');
            let name = parts.next().unwrap_or("").trim();
            let weight = parts
                .filter_map(|p| p.trim().strip_prefix("q="))
                .find_map(|v| v.trim().parse::<f32>().ok())
                .filter(|w| (0.0..=1.0).contains(w))
                .unwrap_or(1.0);
            (name, weight)
        })
}

/// Each of our codings' `q` in `Accept-Encoding` (by [`Coding::index`]), `*` standing for
/// those not named; 0 for one not acceptable.
fn weights(headers: &HeaderMap) -> [f32; 3] {
    let mut q = [None::<f32>; 3];
    let mut star = None::<f32>;
    for (token, weight) in codings(headers) {
        if token == "*" {
            star = Some(weight);
        } else if let Some(c) = Coding::ALL
            .iter()
            .find(|c| token.eq_ignore_ascii_case(c.token()))
        {
            q[c.index()] = Some(weight);
        }
    }
    q.map(|w| w.or(star).unwrap_or(0.0))
}

/// True when `If-None-Match` lists `etag` in any coding (`"…"`, `"…-br"`, weak or not), or
/// `*`.
pub fn if_none_match(headers: &HeaderMap, etag: &str) -> bool {
    let bare = etag.trim_matches('"');
    let same = |t: &str| {
        let t = t.strip_prefix("W/").unwrap_or(t).trim_matches('"');
        t == bare
            || t.strip_prefix(bare)
                .and_then(|rest| rest.strip_prefix('-'))
                .is_some_and(|c| Coding::ALL.iter().any(|k| k.token() == c))
    };
    headers.get_all(header::IF_NONE_MATCH).iter().any(|v| {
        v.to_str()
            .is_ok_and(|list| list.split(',').map(str::trim).any(|t| t == "*" || same(t)))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;
    use std::io::Read;

    fn accept(v: &'static str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::ACCEPT_ENCODING, HeaderValue::from_static(v));
        h
    }

    #[test]
    fn the_best_accepted_coding_wins() {
        assert_eq!(negotiate(&HeaderMap::new()), None);
        assert_eq!(
            negotiate(&accept("gzip, deflate, br, zstd")),
            Some(Coding::Br)
        );
        assert_eq!(negotiate(&accept("gzip")), Some(Coding::Gzip));
        assert_eq!(
            negotiate(&accept("br;q=0.5, gzip;q=0.9")),
            Some(Coding::Gzip)
        );
        assert_eq!(negotiate(&accept("*")), Some(Coding::Br));
        assert_eq!(negotiate(&accept("*;q=0.1, br;q=0")), Some(Coding::Zstd));
        assert_eq!(negotiate(&accept("identity, deflate")), None);
        assert_eq!(negotiate(&accept("gzip;q=0")), None);
        assert_eq!(negotiate(&accept("GZIP;Q=0.5")), Some(Coding::Gzip), "case");
        assert_eq!(negotiate(&accept("gzip;q=7, br;q=nope")), Some(Coding::Br));
    }

    #[test]
    fn a_favoured_coding_wins_where_it_is_accepted_as_much() {
        let z = &[Coding::Zstd][..];
        assert_eq!(negotiate_favouring(&HeaderMap::new(), z), None);
        assert_eq!(
            negotiate_favouring(&accept("gzip, br, zstd"), z),
            Some(Coding::Zstd)
        );
        assert_eq!(negotiate_favouring(&accept("*"), z), Some(Coding::Zstd));
        assert_eq!(negotiate_favouring(&accept("br"), z), Some(Coding::Br));
        assert_eq!(
            negotiate_favouring(&accept("br, zstd;q=0.5"), z),
            Some(Coding::Br)
        );
        assert_eq!(
            negotiate_favouring(&accept("gzip, zstd;q=0"), z),
            Some(Coding::Gzip)
        );
        assert_eq!(negotiate_favouring(&accept("identity"), z), None);
        // The stored codings in order: zstd, then gzip, before br coded on the way.
        let stored = &[Coding::Zstd, Coding::Gzip][..];
        let safari = accept("gzip, deflate, br");
        assert_eq!(negotiate_favouring(&safari, stored), Some(Coding::Gzip));
        let requests = accept("gzip, deflate");
        assert_eq!(negotiate_favouring(&requests, stored), Some(Coding::Gzip));
        let all = accept("gzip, deflate, br, zstd");
        assert_eq!(negotiate_favouring(&all, stored), Some(Coding::Zstd));
        let br_first = accept("br, gzip;q=0.8");
        assert_eq!(negotiate_favouring(&br_first, stored), Some(Coding::Br));
        // Every coding stored, smallest first: Safari's gets br, a br-only client br.
        let all_stored = &[Coding::Zstd, Coding::Br, Coding::Gzip][..];
        assert_eq!(negotiate_favouring(&safari, all_stored), Some(Coding::Br));
        assert_eq!(
            negotiate_favouring(&requests, all_stored),
            Some(Coding::Gzip)
        );
        assert_eq!(negotiate_favouring(&all, all_stored), Some(Coding::Zstd));
        assert_eq!(
            negotiate_favouring(&accept("br"), all_stored),
            Some(Coding::Br)
        );
    }

    #[test]
    fn each_coding_decodes_back_to_the_body() {
        let body: Vec<u8> = (0..5000)
            .flat_map(|i| {
                format!("<http://web.archive.org/web/{i:014}/http://e.com/>;\n").into_bytes()
            })
            .collect();
        for c in Coding::ALL {
            let coded = c.encode(&body).expect("encodes");
            assert!(coded.len() < body.len() / 5, "{c:?}: {}", coded.len());
            let mut back = Vec::new();
            match c {
                Coding::Br => brotli::Decompressor::new(&coded[..], 4096).read_to_end(&mut back),
                Coding::Zstd => zstd::stream::Decoder::new(&coded[..])
                    .and_then(|mut d| d.read_to_end(&mut back)),
                Coding::Gzip => flate2::read::GzDecoder::new(&coded[..]).read_to_end(&mut back),
            }
            .expect("decodes");
            assert_eq!(back, body, "{c:?}");
        }
    }
}
