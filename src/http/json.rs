//! JSON answers: every `application/json` body we write ends with a newline, so `curl` output
//! leaves the shell prompt on a line of its own and line-oriented tools see a whole line.

use crate::error::AppError;
use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

/// A value answered as `application/json` plus a trailing newline; axum's `Json` writes none.
pub struct JsonBody<T>(pub T);

impl<T: Serialize> IntoResponse for JsonBody<T> {
    fn into_response(self) -> Response {
        match json_line(&self.0) {
            Ok(body) => (
                [(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("application/json"),
                )],
                body,
            )
                .into_response(),
            // Our own types always serialise; should one not, it is our fault, mapped in error.rs.
            Err(e) => {
                AppError::Internal(format!("cannot write a JSON answer: {e}")).into_response()
            }
        }
    }
}

/// `value` as compact JSON and a newline.
pub fn json_line<T: Serialize>(value: &T) -> serde_json::Result<Vec<u8>> {
    // Line separators escaped too: a URI-R or an archive's text never splits a line.
    let mut body = tmproxy_core::json_text::to_vec(value)?;
    body.push(b'\n');
    Ok(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_body_is_the_json_and_one_newline() {
        let resp = JsonBody(serde_json::json!({"a": [1, "x"]})).into_response();
        assert_eq!(resp.headers()[header::CONTENT_TYPE], "application/json");
        let body = axum::body::to_bytes(resp.into_body(), 1024)
            .await
            .expect("body");
        assert_eq!(&body[..], b"{\"a\":[1,\"x\"]}\n");
    }
}
