//! Each archive at a scrape: its turns by outcome and latency (its ledger), whether it sleeps
//! (its health), and its requests in flight and waiting for a turn now.

use super::encode::counter;
use crate::upstream::ledger::{SkipReason, Turn, BUCKETS};
use crate::upstream::turns::Load;
use crate::upstream::Upstream;
use prometheus_client::encoding::{DescriptorEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use tmproxy_core::timemap::refresh::Refresh;

/// One figure of an archive's turns now.
type LoadValue = fn(&Load) -> usize;

/// Per archive: its turns by outcome, their latency, whether it sleeps now, and its turns in
/// flight and requests waiting for one now.
pub(super) fn encode(
    out: &mut DescriptorEncoder,
    upstream: &Upstream,
) -> Result<(), std::fmt::Error> {
    let ledgers: Vec<_> = upstream.ledgers().iter().map(|l| l.snapshot()).collect();
    let ids: Vec<&str> = upstream.archives().iter().map(|a| &*a.id).collect();
    let mut requests = out.encode_descriptor(
        "tmproxy_archive_requests",
        "Each archive's turns in a fan-out, by outcome (skipped: not asked, dormant or routed).",
        None,
        MetricType::Counter,
    )?;
    for (id, ledger) in ids.iter().zip(&ledgers) {
        for (outcome, n) in Turn::ALL.iter().zip(ledger.counts) {
            let labels = [("archive", *id), ("outcome", outcome.as_str())];
            counter(&mut requests.encode_family(&labels)?, n)?;
        }
    }
    let mut skipped = out.encode_descriptor(
        "tmproxy_archive_requests_skipped",
        "Each archive's turns it was not asked, by reason (dormant; routing: its profile says it holds nothing there; retry-after: it asked us to wait).",
        None,
        MetricType::Counter,
    )?;
    for (id, ledger) in ids.iter().zip(&ledgers) {
        for (reason, n) in SkipReason::ALL.iter().zip(ledger.skipped_by) {
            let labels = [("archive", *id), ("reason", reason.as_str())];
            counter(&mut skipped.encode_family(&labels)?, n)?;
        }
    }
    let mut durations = out.encode_descriptor(
        "tmproxy_archive_duration_seconds",
        "How long each archive took to answer, fail or be cut off.",
        None,
        MetricType::Histogram,
    )?;
    for (id, ledger) in ids.iter().zip(&ledgers) {
        let buckets: Vec<(f64, u64)> = BUCKETS.iter().copied().zip(ledger.buckets).collect();
        let labels = [("archive", *id)];
        durations
            .encode_family(&labels)?
            .encode_histogram::<NoLabelSet>(ledger.seconds, ledger.asked, &buckets, None)?;
    }
    let mut bytes = out.encode_descriptor(
        "tmproxy_archive_bytes",
        "Body bytes read from each archive: every TimeMap page and CDX answer, every try.",
        None,
        MetricType::Counter,
    )?;
    for (id, ledger) in ids.iter().zip(&ledgers) {
        counter(&mut bytes.encode_family(&[("archive", *id)])?, ledger.bytes)?;
    }
    let mut refreshes = out.encode_descriptor(
        "tmproxy_archive_refreshes",
        "Each archive's answered listings, by how they were read (full; incremental: only what may be new; not_modified: a 304 to a conditional ask).",
        None,
        MetricType::Counter,
    )?;
    for (id, ledger) in ids.iter().zip(&ledgers) {
        for (kind, n) in Refresh::ALL.iter().zip(ledger.refreshes) {
            let labels = [("archive", *id), ("kind", kind.as_str())];
            counter(&mut refreshes.encode_family(&labels)?, n)?;
        }
    }
    let now = upstream.now();
    let mut dormant = out.encode_descriptor(
        "tmproxy_archive_dormant",
        "1 while the archive is skipped after repeated failures, else 0.",
        None,
        MetricType::Gauge,
    )?;
    for (id, health) in ids.iter().zip(upstream.health()) {
        let labels = [("archive", *id)];
        let v = u64::from(health.is_dormant(now));
        dormant.encode_family(&labels)?.encode_gauge(&v)?;
    }
    let loads = upstream.loads();
    let gauges: [(&str, &str, LoadValue); 2] = [
        (
            "tmproxy_archive_in_flight",
            "Requests in flight to each archive now (at most its max_concurrency).",
            |l| l.in_flight,
        ),
        (
            "tmproxy_archive_waiting",
            "Requests waiting now for a turn with each archive (max_concurrency) or for their pace slot (rate).",
            |l| l.waiting,
        ),
    ];
    for (name, help, value) in gauges {
        let mut family = out.encode_descriptor(name, help, None, MetricType::Gauge)?;
        for (id, load) in ids.iter().zip(&loads) {
            let labels = [("archive", *id)];
            let v = value(load) as u64;
            family.encode_family(&labels)?.encode_gauge(&v)?;
        }
    }
    Ok(())
}
