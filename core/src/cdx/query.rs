//! The CDX request for one URI-R, built on the archive's endpoint.

/// The CDX request for `uri_r`: the endpoint (its own query kept) with `url=` the URI-R,
/// form-encoded (so the URI-R can never leave the query), and `extra` parameters; parsed, as it
/// is sent.
pub fn query_url(endpoint: &str, uri_r: &str, extra: &[(&str, &str)]) -> Result<url::Url, String> {
    let mut url = url::Url::parse(endpoint)
        .map_err(|e| format!("the archive's cdx endpoint {endpoint:?} is not a URL: {e}"))?;
    {
        let mut q = url.query_pairs_mut();
        q.append_pair("url", uri_r);
        for (k, v) in extra {
            q.append_pair(k, v);
        }
    }
    Ok(url)
}
