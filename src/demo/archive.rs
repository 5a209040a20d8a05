//! The archives `tmproxy demo` runs on loopback, and the TimeMaps they send (also sent by the
//! tests' fake archives in `tmproxy-testkit`): captures in order or newest first, a duplicate,
//! pages that cycle, a delay, or a failing status.

use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

/// What a well-behaved TimeMap contains and how it is sent.
#[derive(Debug, Clone, Default)]
pub struct TimeMapSpec {
    pub captures: Vec<String>,
    /// Newest first, as some archives send it (MemGator is quadratic on that).
    pub newest_first: bool,
    /// Lists the first capture twice (as `first memento` and as `memento`), as IA does.
    pub duplicate_first: bool,
    /// Pages of this many mementos linked by `rel="timemap"` (the last links back to the first,
    /// to prove the cycle guard).
    pub page_size: Option<usize>,
    /// Waits this long before answering.
    pub delay: Duration,
}

impl TimeMapSpec {
    pub fn of(captures: &[&str]) -> TimeMapSpec {
        TimeMapSpec {
            captures: captures.iter().map(|s| s.to_string()).collect(),
            ..TimeMapSpec::default()
        }
    }
}

/// How a demo archive answers every TimeMap request.
#[derive(Debug, Clone)]
pub enum DemoAnswer {
    /// A link-format TimeMap of these captures for any URI-R (after its delay).
    TimeMap(TimeMapSpec),
    /// This status with this body.
    Status(u16, String),
}

/// A demo archive on 127.0.0.1; dropping it stops it.
pub struct DemoArchive {
    pub addr: std::net::SocketAddr,
    task: JoinHandle<()>,
}

impl DemoArchive {
    pub async fn start(answer: DemoAnswer) -> std::io::Result<DemoArchive> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let app = axum::Router::new()
            .fallback(answer_request)
            .with_state(Arc::new((addr, answer)));
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(DemoArchive { addr, task })
    }

    /// The prefix to configure as `[[archives]] timemap`.
    pub fn timemap_prefix(&self) -> String {
        format!("http://{}/timemap/link/", self.addr)
    }

    pub fn timegate_prefix(&self) -> String {
        format!("http://{}/timegate/", self.addr)
    }
}

impl Drop for DemoArchive {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn answer_request(
    State(demo): State<Arc<(std::net::SocketAddr, DemoAnswer)>>,
    req: Request,
) -> Response {
    let (addr, answer) = (&demo.0, &demo.1);
    let target = Target::of(req.uri().path());
    match answer {
        DemoAnswer::TimeMap(spec) => {
            tokio::time::sleep(spec.delay).await;
            let body = timemap_body(*addr, spec, &target.uri_r, target.page);
            ([(header::CONTENT_TYPE, "application/link-format")], body).into_response()
        }
        DemoAnswer::Status(code, body) => {
            let code = StatusCode::from_u16(*code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            (code, [(header::CONTENT_TYPE, "text/html")], body.clone()).into_response()
        }
    }
}

/// What an archive's request path asks for: `/timemap/link/{URI-R}`, `/moved/{URI-R}` (where a
/// redirecting archive sends it) or `/page/{n}/{URI-R}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub page: usize,
    pub uri_r: String,
    pub moved: bool,
}

impl Target {
    pub fn of(path: &str) -> Target {
        let (page, uri_r, moved) = if let Some(rest) = path.strip_prefix("/page/") {
            let (n, uri_r) = rest.split_once('/').unwrap_or(("1", ""));
            (n.parse::<usize>().unwrap_or(1), uri_r, false)
        } else if let Some(rest) = path.strip_prefix("/moved/") {
            (1, rest, true)
        } else {
            (1, path.strip_prefix("/timemap/link/").unwrap_or(""), false)
        };
        Target {
            page,
            uri_r: uri_r.to_string(),
            moved,
        }
    }
}

/// The URI-M a simulated archive gives a capture.
pub fn uri_m(addr: std::net::SocketAddr, timestamp: &str, uri_r: &str) -> String {
    format!("http://{addr}/web/{timestamp}/{uri_r}")
}

/// The link-format TimeMap (or one page of it) for `uri_r`.
pub fn timemap_body(
    addr: std::net::SocketAddr,
    spec: &TimeMapSpec,
    uri_r: &str,
    page: usize,
) -> String {
    let mut captures: Vec<&str> = spec.captures.iter().map(String::as_str).collect();
    captures.sort_unstable();
    if spec.newest_first {
        captures.reverse();
    }
    let pages = spec
        .page_size
        .map_or(1, |k| captures.len().div_ceil(k.max(1)).max(1));
    let slice: &[&str] = match spec.page_size {
        Some(k) => {
            let k = k.max(1);
            let start = ((page.max(1) - 1) * k).min(captures.len());
            &captures[start..(start + k).min(captures.len())]
        }
        None => &captures,
    };
    let mut out = String::with_capacity(200 + slice.len() * 140);
    out.push_str(&format!("<{uri_r}>; rel=\"original\",\n"));
    out.push_str(&format!(
        "<http://{addr}/timegate/{uri_r}>; rel=\"timegate\",\n"
    ));
    if spec.page_size.is_some() {
        // The next page, or (from the last page) the first again: a cycle the client must survive.
        let next = if page >= pages {
            format!("http://{addr}/timemap/link/{uri_r}")
        } else {
            format!("http://{addr}/page/{}/{uri_r}", page + 1)
        };
        out.push_str(&format!(
            "<{next}>; rel=\"timemap\"; type=\"application/link-format\",\n"
        ));
    }
    for (i, ts) in slice.iter().enumerate() {
        let Some(dt) = crate::timemap::datetime::parse_14digit(ts) else {
            continue;
        };
        let when = crate::timemap::datetime::format_rfc1123(dt);
        let uri = uri_m(addr, ts, uri_r);
        if i == 0 && spec.duplicate_first {
            out.push_str(&format!(
                "<{uri}>; rel=\"first memento\"; datetime=\"{when}\",\n"
            ));
        }
        out.push_str(&format!("<{uri}>; rel=\"memento\"; datetime=\"{when}\",\n"));
    }
    out.push_str(&format!(
        "<http://{addr}/timemap/link/{uri_r}>; rel=\"self\"; type=\"application/link-format\"\n"
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_target_is_a_page_a_move_or_a_timemap() {
        let t = Target::of("/page/3/http://e.com/a?b=1");
        assert_eq!(
            (t.page, t.uri_r.as_str(), t.moved),
            (3, "http://e.com/a?b=1", false)
        );
        let t = Target::of("/moved/http://e.com/");
        assert_eq!(
            (t.page, t.uri_r.as_str(), t.moved),
            (1, "http://e.com/", true)
        );
        let t = Target::of("/timemap/link/http://e.com/");
        assert_eq!((t.page, t.uri_r.as_str()), (1, "http://e.com/"));
        assert_eq!(Target::of("/page/x/y").page, 1);
        assert_eq!(Target::of("/elsewhere").uri_r, "");
    }

    #[tokio::test]
    async fn a_demo_archive_serves_its_pages_and_its_failure() {
        let spec = TimeMapSpec {
            page_size: Some(1),
            ..TimeMapSpec::of(&["20010101000000", "20020101000000"])
        };
        let paged = DemoArchive::start(DemoAnswer::TimeMap(spec))
            .await
            .expect("start");
        let client = reqwest::Client::new();
        let url = format!("http://{}/page/2/http://e.com/", paged.addr);
        let body = client
            .get(url)
            .send()
            .await
            .expect("get")
            .text()
            .await
            .expect("body");
        assert!(body.contains("/web/20020101000000/http://e.com/"), "{body}");
        assert!(!body.contains("20010101000000"), "{body}");
        let broken = DemoArchive::start(DemoAnswer::Status(500, "oops".into()))
            .await
            .expect("start");
        let answer = client
            .get(broken.timemap_prefix())
            .send()
            .await
            .expect("get");
        assert_eq!(answer.status(), 500);
    }
}
