//! The offline sampling stages over an index file, timed: `gen FILE N` writes N SYNTHETIC ZipNum
//! lines (gzip when FILE ends in .gz), `run FILE` streams it through the stages on one thread and
//! prints lines per second and the funnel.

use std::io::{BufRead, BufWriter};
use std::time::Instant;
use tmproxy::sampling::index;
use tmproxy::sampling::offline::Offline;
use tmproxy::sampling::synthetic::write_zipnum;

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
        _ => return Err("usage: sampling_offline gen FILE N | run FILE".into()),
    }
    Ok(())
}
