//! `/api/json/{DATETIME}/{URI-R}`: Time Travel's description of the mementos around a datetime.

use super::json::JsonBody;
use super::timegate::split_path_datetime;
use super::{check_found, raw_after, read_lookup, serve_lookup, SharedState};
use crate::error::AppError;
use crate::timemap::aggregate::{Aggregate, ArchiveOutcome};
use crate::timemap::datetime::format_rfc3339;
use crate::timemap::merge::closest;
use crate::timemap::serialize::{SelfLinks, TimeMapFormat};
use axum::extract::State;
use axum::http::{HeaderMap, Uri};
use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Serialize)]
pub struct ApiAnswer {
    original_uri: String,
    timegate_uri: String,
    timemap_uri: BTreeMap<&'static str, String>,
    mementos: BTreeMap<&'static str, MementoGroup>,
    archives: Vec<ArchiveOutcome>,
}

/// Every URI-M at one datetime: several archives can hold a capture of the same second.
#[derive(Serialize)]
pub struct MementoGroup {
    datetime: String,
    uri: Vec<String>,
}

pub async fn api_json(
    State(state): State<SharedState>,
    uri: Uri,
    headers: HeaderMap,
) -> Result<JsonBody<ApiAnswer>, AppError> {
    let (target, raw) = split_path_datetime(raw_after(&uri, "/api/json/"))?;
    let lookup = read_lookup(&state, raw, &headers)?;
    let served = serve_lookup(&state, &lookup, None).await?;
    let agg = &served.view.aggregate;
    check_found(agg)?;
    Ok(JsonBody(describe(&state.public_url, agg, target)))
}

fn describe(
    public_url: &str,
    agg: &Aggregate,
    target: crate::timemap::model::MementoDatetime,
) -> ApiAnswer {
    let links = SelfLinks::new(public_url, &agg.uri_r);
    let mut mementos = BTreeMap::new();
    if let Some(c) = closest(&agg.timemap, target) {
        let ms = &agg.timemap.mementos;
        let group = |i: usize| {
            let dt = ms[i].datetime;
            MementoGroup {
                datetime: format_rfc3339(dt),
                uri: ms
                    .iter()
                    .skip_while(|m| m.datetime < dt)
                    .take_while(|m| m.datetime == dt)
                    .map(|m| m.uri_m.to_string())
                    .collect(),
            }
        };
        mementos.insert("first", group(c.first));
        mementos.insert("closest", group(c.closest));
        mementos.insert("last", group(c.last));
        if let Some(p) = c.prev {
            mementos.insert("prev", group(p));
        }
        if let Some(n) = c.next {
            mementos.insert("next", group(n));
        }
    }
    ApiAnswer {
        original_uri: agg.uri_r.clone(),
        timegate_uri: links.timegate(),
        timemap_uri: TimeMapFormat::all()
            .map(|f| (f.json_key(), links.timemap(f)))
            .collect(),
        mementos,
        archives: agg.outcomes.clone(),
    }
}
