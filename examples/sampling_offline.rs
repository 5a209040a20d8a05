//! The sampling stages timed: `gen FILE N` writes N SYNTHETIC ZipNum lines (gzip when FILE ends
//! in .gz); `run FILE` streams it through the offline stages on one thread and prints lines per
//! second and the funnel; `cdx N CONCURRENCY [LATENCY_MS]` asks a loopback fake CDX server that
//! answers after LATENCY_MS (30 by default) for N first captures and compares the throughput
//! with CONCURRENCY / latency, the most a client could get.

use std::io::{BufRead, BufWriter};
use std::time::Instant;
use tmproxy::sampling::index;
use tmproxy::sampling::offline::Offline;
use tmproxy_testkit::synthetic::write_zipnum;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("gen") => {
            let path = args.get(2).ok_or("gen FILE N")?;
            let n: usize = args.get(3).ok_or("gen FILE N")?.parse()?;
            let file = BufWriter::with_capacity(1 << 20, std::fs::File::create(path)?);
            let written = if path.ends_with(".gz") {
                let gz = flate2::write::GzEncoder::new(file, flate2::Compression::fast());
                write_zipnum(n, gz)?
            } else {
                write_zipnum(n, file)?
            };
            println!("SYNTHETIC: {written} ZipNum lines → {path}");
        }
        Some("run") => {
            let path = args.get(2).ok_or("run FILE")?;
            let popular = vec!["twitter.com".to_string()];
            let mut o = Offline::new(&popular);
            let (mut kept, mut aside, mut lines) = (0u64, 0u64, 0u64);
            let start = Instant::now();
            let mut reader = index::open(std::path::Path::new(path))?;
            let mut line = String::new();
            while reader.read_line(&mut line)? > 0 {
                lines += 1;
                o.push_line(&line, &mut |_| kept += 1, &mut |_| aside += 1);
                line.clear();
            }
            let secs = start.elapsed().as_secs_f64();
            println!(
                "{lines} lines in {secs:.2} s = {:.2} M lines/s; {kept} candidates, {aside} set aside",
                lines as f64 / secs / 1e6
            );
            println!("{}", serde_json::to_string_pretty(&o.funnel())?);
        }
        Some("cdx") => {
            let n: usize = args.get(2).ok_or("cdx N CONCURRENCY")?.parse()?;
            let concurrency: usize = args.get(3).ok_or("cdx N CONCURRENCY")?.parse()?;
            let latency_ms: u64 = args.get(4).map_or(Ok(30), |s| s.parse())?;
            cdx_throughput(n, concurrency, latency_ms)?;
        }
        _ => {
            return Err(
                "usage: sampling_offline gen FILE N | run FILE | cdx N CONCURRENCY [LATENCY_MS]"
                    .into(),
            )
        }
    }
    Ok(())
}

fn cdx_throughput(
    n: usize,
    concurrency: usize,
    latency_ms: u64,
) -> Result<(), Box<dyn std::error::Error>> {
    use tmproxy::sampling::cdx::{CdxClient, CdxSettings, Dialect, FirstCapture};
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let latency = std::time::Duration::from_millis(latency_ms);
        let app = axum::Router::new().route(
            "/cdx",
            axum::routing::get(move || async move {
                tokio::time::sleep(latency).await;
                r#"[["urlkey","timestamp","original","mimetype","statuscode","digest","length"],["com,x)/","19990101000000","http://x.com/","text/html","200","D","1"]]"#
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        let settings = CdxSettings {
            concurrency,
            ..CdxSettings::new(&format!("http://{addr}/cdx"), Dialect::Ia)
        };
        let client = CdxClient::new(settings)?;
        let start = Instant::now();
        use futures::StreamExt;
        let found = futures::stream::iter(0..n)
            .map(|i| {
                let c = client.clone();
                async move { c.first_capture(&format!("http://x{i}.com/")).await }
            })
            .buffer_unordered(concurrency * 2)
            .filter(|r| futures::future::ready(matches!(r, FirstCapture::Found { .. })))
            .count()
            .await;
        let secs = start.elapsed().as_secs_f64();
        let ideal = concurrency as f64 / latency.as_secs_f64();
        println!(
            "{n} first captures ({found} found) in {secs:.2} s = {:.1}/s; concurrency {concurrency} \
             / {latency_ms} ms = {ideal:.1}/s at most; {:.1}% of that",
            n as f64 / secs,
            100.0 * (n as f64 / secs) / ideal
        );
        server.abort();
        Ok::<(), Box<dyn std::error::Error>>(())
    })
}
