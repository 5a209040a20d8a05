//! The sampling benchmark at scale (`benches/sampling_scale.sh`): `gen FILE LINES` writes a
//! SYNTHETIC ZipNum index of LINES lines in SURT order (gzip when FILE ends in .gz;
//! `tmproxy_testkit::scale`); `cdx PORT` serves a fake CDX API (IA's dialect) on 127.0.0.1:PORT
//! that answers every first-capture and TimeMap query at once, from the URL's hash, so the
//! time measured is tmproxy's own.

use std::io::BufWriter;
use tmproxy_testkit::scale::{cdx_answer, write_scale_zipnum};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    match (args.get(1).map(String::as_str), args.get(2), args.get(3)) {
        (Some("gen"), Some(path), Some(n)) => {
            let n: u64 = n.parse()?;
            let file = BufWriter::with_capacity(1 << 20, std::fs::File::create(path)?);
            let written = if path.ends_with(".gz") {
                let gz = flate2::write::GzEncoder::new(file, flate2::Compression::fast());
                write_scale_zipnum(n, gz)?
            } else {
                write_scale_zipnum(n, file)?
            };
            println!("SYNTHETIC: {written} ZipNum lines in SURT order → {path}");
            Ok(())
        }
        (Some("cdx"), Some(port), _) => {
            let port: u16 = port.parse()?;
            serve(port)
        }
        _ => Err("usage: sampling_scale gen FILE LINES | cdx PORT".into()),
    }
}

/// The fake CDX API until killed; one worker thread, so it takes little from tmproxy.
fn serve(port: u16) -> Result<(), Box<dyn std::error::Error>> {
    use axum::extract::RawQuery;
    use axum::http::StatusCode;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let app = axum::Router::new().route(
            "/cdx",
            axum::routing::get(|RawQuery(q): RawQuery| async move {
                let params: Vec<(String, String)> =
                    url::form_urlencoded::parse(q.unwrap_or_default().as_bytes())
                        .into_owned()
                        .collect();
                let (status, body) = cdx_answer(&params);
                (
                    StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
                    body,
                )
            }),
        );
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
        eprintln!(
            "SYNTHETIC fake CDX API on http://{}/cdx",
            listener.local_addr()?
        );
        axum::serve(listener, app).await?;
        Ok(())
    })
}
