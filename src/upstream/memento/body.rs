//! A memento's body as `/memento/proxy` passes it on: an identity body streamed after a first
//! read, a coded one read whole, inflated once to hold its size to the cap, then passed on coded
//! or inflated a piece at a time; what each may hold is charged to the budget first.

use crate::upstream::budget::{Budget, OverBudget};
use crate::upstream::decode::{Codec, Inflate};
use crate::upstream::failure::FailureKind;
use crate::upstream::fetch::{read_capped, ArchiveFetch};
use crate::upstream::streamed::{Streamed, FRAME, IN_FLIGHT};
use crate::uri_r::clip;
use bytes::Bytes;
use futures::StreamExt;
use std::sync::Arc;

/// An identity body is read this far before the answer starts: one that ends within it is
/// judged against the cap whole (a 502, not a cut answer); a longer one streams.
const PREFETCH: u64 = 64 * 1024;

const LIMIT: &str = "[server] memento_proxy_max_bytes";

pub(super) fn too_large(status: u16, len: u64, max_bytes: u64) -> ArchiveFetch {
    ArchiveFetch::failed(
        FailureKind::TooLarge,
        Some(status),
        format!("body of {len} bytes is over {LIMIT} ({max_bytes})"),
    )
}

/// The body's coding and its token as we send it, None for identity; a failure for a coding we
/// cannot inflate (and so cannot hold to the cap), or several stacked.
pub(super) fn coding_of(
    encoding: Option<&str>,
    status: u16,
) -> Result<Option<(Codec, &'static str)>, ArchiveFetch> {
    let Some(encoding) = encoding.map(str::trim).filter(|e| !e.is_empty()) else {
        return Ok(None);
    };
    if encoding.eq_ignore_ascii_case("identity") {
        return Ok(None);
    }
    let token = |c: Codec| match c {
        Codec::Gzip => "gzip",
        Codec::Deflate => "deflate",
        Codec::Br => "br",
        Codec::Zstd => "zstd",
    };
    match Codec::from_token(encoding) {
        Some(c) => Ok(Some((c, token(c)))),
        None => Err(ArchiveFetch::failed(
            FailureKind::Malformed,
            Some(status),
            format!(
                "Content-Encoding {:?} is not one coding tmproxy can inflate (gzip, deflate, br, zstd), so its size cannot be checked",
                clip(encoding)
            ),
        )),
    }
}

/// An identity body: [`IN_FLIGHT`] (or the whole body, when smaller) charged first, the first
/// [`PREFETCH`] bytes read (a body ending there is held to the cap before anything is sent),
/// the rest streamed.
pub(super) async fn stream_identity(
    resp: crate::upstream::transport::Response,
    announced: Option<u64>,
    max_bytes: u64,
    budget: &Arc<Budget>,
) -> Result<Streamed, ArchiveFetch> {
    let status = resp.status().as_u16();
    let mut held = budget.hold();
    let reserve = IN_FLIGHT
        .min(announced.unwrap_or(u64::MAX))
        .min(max_bytes.saturating_add(1));
    held.grow(reserve).map_err(|over| {
        ArchiveFetch::failed(FailureKind::Budget, Some(status), over.to_string())
    })?;
    let mut stream = http_body_util::BodyDataStream::new(resp.into_body()).boxed();
    let mut first = Vec::new();
    let mut read = 0u64;
    let mut ended = false;
    while read < PREFETCH.min(max_bytes.saturating_add(1)) {
        match stream.next().await {
            Some(Ok(chunk)) => {
                read += chunk.len() as u64;
                first.push(chunk);
            }
            Some(Err(e)) => {
                let stage = crate::upstream::failure::Stage::Body;
                let (kind, detail) = crate::upstream::failure::classify(&e, stage);
                return Err(ArchiveFetch::failed(kind, Some(status), detail));
            }
            None => {
                ended = true;
                break;
            }
        }
    }
    if read > max_bytes {
        return Err(ArchiveFetch::failed(
            FailureKind::TooLarge,
            Some(status),
            format!("body over {LIMIT} ({max_bytes} bytes)"),
        ));
    }
    let rest = (!ended).then_some(stream);
    Ok(Streamed::upstream(first, rest, announced, max_bytes, held))
}

/// A coded body: read whole (it is at most the cap), inflated once to hold its inflated size to
/// the cap, then sent coded (`passed_on`) or inflated a frame at a time.
pub(super) async fn coded_body(
    resp: crate::upstream::transport::Response,
    codec: Codec,
    passed_on: bool,
    max_bytes: u64,
    budget: &Arc<Budget>,
) -> Result<Streamed, ArchiveFetch> {
    let status = resp.status().as_u16();
    let (coded, mut held) = read_capped(resp, max_bytes, LIMIT, budget).await?;
    let coded = Bytes::from(coded);
    let over_budget = |over: OverBudget| {
        ArchiveFetch::failed(FailureKind::Budget, Some(status), over.to_string())
    };
    // The decoder's window while it counts, and later while it inflates for the client, with
    // what a streamed answer may hold.
    let extra = codec.state_bytes()
        + if passed_on {
            0
        } else {
            IN_FLIGHT.min(max_bytes)
        };
    held.grow(extra).map_err(over_budget)?;
    let malformed = |e: std::io::Error| {
        ArchiveFetch::failed(
            FailureKind::Malformed,
            Some(status),
            format!("the body is not valid in its Content-Encoding: {e}"),
        )
    };
    let inflated = inflated_size(codec, coded.clone(), max_bytes).map_err(malformed)?;
    if inflated > max_bytes {
        return Err(ArchiveFetch::failed(
            FailureKind::TooLarge,
            Some(status),
            format!("body inflates past {LIMIT} ({max_bytes} bytes): a decompression bomb?"),
        ));
    }
    if passed_on {
        return Ok(Streamed::in_memory(coded, held));
    }
    let inflate = Inflate::new(codec, coded).map_err(malformed)?;
    Ok(Streamed::inflating(inflate, max_bytes, held))
}

/// How many bytes `coded` inflates to, counting no further than just past `cap`.
fn inflated_size(codec: Codec, coded: Bytes, cap: u64) -> std::io::Result<u64> {
    let mut inflate = Inflate::new(codec, coded)?;
    let mut total = 0u64;
    while total <= cap {
        match inflate.next_piece(FRAME)? {
            Some(piece) => total += piece.len() as u64,
            None => break,
        }
    }
    Ok(total)
}
