//! The `memsim route-e2e` command: `memsim route`'s misses through the real server over HTTP
//! (`route::e2e`, feature `e2e`), compared with the pure replay of the same misses.

/// Arguments of `memsim route-e2e`.
#[derive(clap::Args, Debug)]
pub struct RouteE2eArgs {
    #[command(flatten)]
    pub source: super::command::Source,
    /// Only the first N misses (each is one request to the server).
    #[arg(long)]
    pub misses: Option<usize>,
    /// The min_share values tried (every combination runs on its own fresh server, after `all`).
    #[arg(long, value_delimiter = ',', default_value = "0.01")]
    pub min_share: Vec<f64>,
    #[arg(long, value_delimiter = ',', default_value = "0.07")]
    pub explore: Vec<f64>,
    #[arg(long, value_delimiter = ',', default_value = "20")]
    pub min_evidence: Vec<u32>,
    /// `[routing] max_keys`.
    #[arg(long, default_value_t = super::sim::MAX_KEYS)]
    pub max_keys: usize,
    /// `[routing] max_per_client` (each miss is sent as from its client, `X-Forwarded-For`).
    #[arg(long, default_value_t = super::sim::MAX_PER_CLIENT)]
    pub max_per_client: u32,
    /// Make one archive answer slowly: `ID=MS` (at most 10,000 ms), for the miss latency.
    #[arg(long, value_parser = parse_slow)]
    pub slow: Option<(String, u64)>,
    /// With --slow: the archive is slow, and misses are timed, only from this miss (from 0)
    /// on; the misses before warm the profiles quickly.
    #[arg(long, requires = "slow", default_value_t = 0)]
    pub timed_from: usize,
    /// One JSON object per setting, `memsim route --json`'s fields plus `median_miss_ms`,
    /// `requests_by_archive`, `equal` and `differences`.
    #[arg(long)]
    pub json: bool,
}

fn parse_slow(s: &str) -> Result<(String, u64), String> {
    let (id, ms) = s.split_once('=').ok_or("expected ID=MS")?;
    let ms: u64 = ms.parse().map_err(|_| "expected ID=MS")?;
    if id.is_empty() || ms > 10_000 {
        return Err("expected ID=MS with MS at most 10000".to_string());
    }
    Ok((id.to_string(), ms))
}

/// The stream and its misses, as `memsim route` builds them.
pub fn stream_of(a: &RouteE2eArgs) -> Result<(super::Stream, Vec<super::Request>), String> {
    let (stream, ttl) = a.source.stream()?;
    let mut misses = stream.misses(ttl);
    if let Some(n) = a.misses {
        misses.truncate(n);
    }
    if misses.is_empty() {
        return Err("no misses to replay".to_string());
    }
    Ok((stream, misses))
}

#[cfg(not(feature = "e2e"))]
pub fn run(_: RouteE2eArgs) -> Result<(), String> {
    Err(
        "memsim route-e2e runs the server in-process, which this memsim was built without: \
         build it with the `e2e` feature (cargo run -p simulations --features e2e -- route-e2e …)"
            .to_string(),
    )
}

#[cfg(feature = "e2e")]
pub fn run(a: RouteE2eArgs) -> Result<(), String> {
    use super::{e2e, sim};
    let share = |v: &f64| (0.0..=1.0).contains(v);
    if !a.min_share.iter().all(share) || !a.explore.iter().all(share) {
        return Err("--min-share and --explore take shares between 0 and 1".to_string());
    }
    super::command::check_max_per_client(a.max_per_client)?;
    let (stream, misses) = stream_of(&a)?;
    let settings = sim::grid(&a.min_share, &a.explore, &a.min_evidence);
    let limits = sim::Limits {
        max_keys: a.max_keys,
        max_per_client: a.max_per_client,
    };
    let slow = a.slow.as_ref().map(|(id, ms)| e2e::Slow {
        archive: id.clone(),
        delay: std::time::Duration::from_millis(*ms),
        from: a.timed_from,
    });
    let rows = e2e::run(&stream, &misses, &settings, limits, slow.as_ref())?;
    let mut equal = true;
    if !a.json {
        println!(
            "{} misses over HTTP ({} archives); each row: the server, then memsim route",
            misses.len(),
            stream.archives.len()
        );
    }
    for (row, s) in rows.iter().zip(&settings) {
        let replayed = sim::run(&stream, &misses, s, limits);
        let diff = e2e::differences(&stream, &misses, row, &replayed);
        equal &= diff.is_empty();
        if a.json {
            let mut v = serde_json::to_value(row).map_err(|e| e.to_string())?;
            let asked: serde_json::Map<String, serde_json::Value> = stream
                .archives
                .iter()
                .zip(&row.requests_by_archive)
                .map(|(a, &n)| (a.id.clone(), n.into()))
                .collect();
            v["requests_by_archive"] = asked.into();
            v["equal"] = diff.is_empty().into();
            v["differences"] = diff.clone().into();
            println!("{v}");
            continue;
        }
        println!(
            "{} min_share {} explore {} min_evidence {}: requests {} ({:.1}% avoided), memento \
             recall {:.4}, URI-R recall {:.4}, median miss {:.1} ms | memsim: requests {} \
             ({:.1}% avoided), memento recall {:.4}, URI-R recall {:.4} → {}",
            row.mode,
            row.min_share,
            row.explore,
            row.min_evidence,
            row.requests,
            100.0 * row.avoided,
            row.memento_recall,
            row.uri_recall,
            row.median_miss_ms,
            replayed.requests,
            100.0 * replayed.avoided,
            replayed.memento_recall,
            replayed.uri_recall,
            if diff.is_empty() { "equal" } else { "DIFFER" }
        );
        for d in &diff {
            println!("  {d}");
        }
    }
    if equal {
        Ok(())
    } else {
        Err("the server and memsim route differ (see above)".to_string())
    }
}
