//! Writing one series the way every scraped family does: an unlabelled metric, a counter's value.

use prometheus_client::encoding::{DescriptorEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;

/// A metric with one unlabelled series.
pub fn one(
    out: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    kind: MetricType,
    v: u64,
) -> Result<(), std::fmt::Error> {
    let mut m = out.encode_descriptor(name, help, None, kind)?;
    match kind {
        MetricType::Counter => counter(&mut m, v),
        _ => m.encode_gauge(&v),
    }
}

/// A counter's value (no exemplar).
pub fn counter(
    m: &mut prometheus_client::encoding::MetricEncoder,
    v: u64,
) -> Result<(), std::fmt::Error> {
    m.encode_counter::<NoLabelSet, _, u64>(&v, None)
}
