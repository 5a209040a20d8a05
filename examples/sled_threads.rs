//! Why the server caps tokio's blocking threads: sled puts (each flushed) from N threads at once,
//! with the server's allocator, and the process's RSS as entries accumulate. SYNTHETIC values
//! shaped like a 95-memento cache entry (~10 KB of JSON each).
//!
//!   cargo run --release --example sled_threads -- ENTRIES THREADS
//!
//! Prints the RSS every 2,000 entries; the database lives in a temporary directory.

// The server's allocator: the effect measured here is mimalloc's memory per thread.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::process::ExitCode;

fn rss_mib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        })
        .unwrap_or(0)
        / 1024
}

/// One entry's worth of JSON for URI-R number `i`.
fn entry(i: usize) -> Vec<u8> {
    let mut v =
        format!("{{\"v\":1,\"value\":{{\"uri_r\":\"http://load.example/{i}\",\"mementos\":[");
    for k in 0..95 {
        v.push_str(&format!(
            "{{\"uri_m\":\"http://127.0.0.1:4{:04}/web/2001{:02}{:02}000000/http://load.example/{i}\",\"datetime\":\"2001-{:02}-{:02}T00:00:00Z\"}},",
            k * 7 + i % 13, 1 + k % 12, 1 + k % 28, 1 + k % 12, 1 + k % 28
        ));
    }
    v.push_str("]}}");
    v.into_bytes()
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(entries), Some(threads)) = (
        args.first().and_then(|a| a.parse::<usize>().ok()),
        args.get(1)
            .and_then(|a| a.parse::<usize>().ok())
            .filter(|&t| t > 0),
    ) else {
        eprintln!("usage: sled_threads ENTRIES THREADS");
        return ExitCode::from(2);
    };
    let dir = match tempfile::tempdir() {
        Ok(d) => d,
        Err(e) => {
            eprintln!("cannot make a temporary directory: {e}");
            return ExitCode::FAILURE;
        }
    };
    // The server's settings (src/cache/store.rs): a 32 MiB page cache, a flush after each put.
    let db = match sled::Config::new()
        .path(dir.path())
        .cache_capacity(32 << 20)
        .open()
    {
        Ok(db) => db,
        Err(e) => {
            eprintln!("cannot open sled: {e}");
            return ExitCode::FAILURE;
        }
    };
    let failed = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|scope| {
        for t in 0..threads {
            let (db, failed) = (db.clone(), &failed);
            scope.spawn(move || {
                for i in (t..entries).step_by(threads) {
                    let put = db
                        .insert(format!("http://load.example/{i}"), entry(i))
                        .and_then(|_| db.flush());
                    if let Err(e) = put {
                        eprintln!("put {i}: {e}");
                        failed.store(true, std::sync::atomic::Ordering::Relaxed);
                        return;
                    }
                    if i % 2000 == 1999 {
                        println!(
                            "{threads} threads: {} entries, RSS {} MiB",
                            i + 1,
                            rss_mib()
                        );
                    }
                }
            });
        }
    });
    if failed.load(std::sync::atomic::Ordering::Relaxed) {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
