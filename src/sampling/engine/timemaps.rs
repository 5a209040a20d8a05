//! The sampled URLs' TimeMaps through CDX pagination, revisits hydrated when the spec asks.

use super::ndjson::write_ndjson;
use super::{Progress, SampledUrl};
use crate::sampling::cdx::CdxClient;
use crate::sampling::revisit::{Hydrator, Row, LRU_SIZE};
use crate::sampling::Counters;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// Each sampled URL's TimeMap via CDX pagination into `out/timemaps/NNNNNN.ndjson`, revisits
/// hydrated when asked; `timemaps/index.ndjson` maps files to URLs.
pub(super) async fn collect_timemaps(
    client: &Arc<CdxClient>,
    sample: &[SampledUrl],
    out: &Path,
    hydrate: bool,
    progress: &Progress,
) -> Result<Counters, String> {
    let dir = out.join("timemaps");
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut c = Counters::default();
    let mut index = Vec::new();
    let mut hydration = crate::sampling::revisit::HydrationReport::default();
    for (i, s) in sample.iter().enumerate() {
        if progress.cancel.load(Ordering::Relaxed) {
            break;
        }
        c.input += 1;
        match client.timemap(&s.url).await {
            Ok(mut rows) => {
                if hydrate {
                    let mut h = Hydrator::new(LRU_SIZE);
                    for r in &mut rows {
                        let mut row = Row {
                            mime: std::mem::take(&mut r.mime),
                            status: std::mem::take(&mut r.status),
                            digest: r.digest.clone(),
                        };
                        h.hydrate(&mut row);
                        r.mime = row.mime;
                        r.status = row.status;
                    }
                    hydration.revisits += h.report.revisits;
                    hydration.hydrated += h.report.hydrated;
                    hydration.misses += h.report.misses;
                    for (d, n) in h.report.distances {
                        *hydration.distances.entry(d).or_default() += n;
                    }
                }
                let name = format!("{i:06}.ndjson");
                write_ndjson(&dir.join(&name), &rows)?;
                index.push(serde_json::json!({"file": name, "url": s.url, "mementos": rows.len()}));
                c.output += 1;
            }
            Err(e) => {
                c.errors += 1;
                index.push(serde_json::json!({"url": s.url, "error": e}));
            }
        }
        progress.timemaps.fetch_add(1, Ordering::Relaxed);
    }
    write_ndjson(&dir.join("index.ndjson"), &index)?;
    if hydrate {
        let text = serde_json::json!({
            "revisits": hydration.revisits,
            "hydrated": hydration.hydrated,
            "misses": hydration.misses,
            "distances": hydration.distances,
        });
        std::fs::write(dir.join("hydration.json"), text.to_string()).map_err(|e| e.to_string())?;
    }
    Ok(c)
}
