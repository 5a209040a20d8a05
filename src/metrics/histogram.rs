//! A request-duration histogram kept in atomics, encoded by `prometheus-client` as its own.
//!
//! Why not `prometheus_client`'s `Histogram`: it keeps its buckets behind one mutex, and every
//! request of every connection thread took it. Under load, when the thread holding it was
//! preempted, the other connection threads spun, yielded and slept on it (~170 `sched_yield`
//! and ~50 `futex` calls a second each at 64 connections), and all their connections waited: a
//! tail that nginx's share-nothing workers do not have (BENCHMARKS.md, "Small cache hits against nginx").
//! Here an observation is two relaxed atomic adds and nothing waits; and each thread adds into
//! a stripe of its own (summed at a scrape), so two connection threads never write the same
//! cache line: one shared line, moved between cores on every request, was 0.7% of a cache
//! hit's CPU (BENCHMARKS.md, "Small cache hits against nginx").
//!
//! A scrape reads the buckets one by one while requests go on, so `_sum` may hold an
//! observation or two that the buckets do not yet show (or the other way around); `_count` is
//! the buckets' total, so it always agrees with the `+Inf` bucket.

use prometheus_client::encoding::{EncodeMetric, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::{MetricType, TypedMetric};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Counts of durations by upper bound (seconds), plus a last bucket for anything longer. A
/// clone shares its counts, as the registry and the request path both hold it.
#[derive(Clone, Debug)]
pub struct AtomicHistogram {
    inner: Arc<Counts>,
}

#[derive(Debug)]
struct Counts {
    bounds: &'static [f64],
    stripes: Box<[Stripe]>,
}

/// The most bounds a histogram may have (one bucket more: `+Inf`).
pub const MAX_BOUNDS: usize = 15;
/// Stripes per histogram: threads past this many share them in turn.
const STRIPES: usize = 8;

/// One stripe's counts, on cache lines of its own.
#[derive(Debug, Default)]
#[repr(align(128))]
struct Stripe {
    /// By bucket (`bounds`, then `+Inf`); those past it unused.
    counts: [AtomicU64; MAX_BOUNDS + 1],
    /// The sum in nanoseconds: integer adds are exact and need no compare-and-swap loop.
    sum_nanos: AtomicU64,
}

impl AtomicHistogram {
    /// An empty histogram with these upper bounds, in increasing order; only the first
    /// [`MAX_BOUNDS`] are kept.
    pub fn new(bounds: &'static [f64]) -> AtomicHistogram {
        AtomicHistogram {
            inner: Arc::new(Counts {
                bounds: &bounds[..bounds.len().min(MAX_BOUNDS)],
                stripes: (0..STRIPES).map(|_| Stripe::default()).collect(),
            }),
        }
    }

    pub fn observe(&self, elapsed: Duration) {
        let h = &self.inner;
        let Some(stripe) = h.stripes.get(crate::stripe::of_this_thread(STRIPES)) else {
            return;
        };
        let seconds = elapsed.as_secs_f64();
        // The first bucket whose bound is at or above the value (`le`), else `+Inf`.
        let i = h.bounds.partition_point(|bound| *bound < seconds);
        if let Some(count) = stripe.counts.get(i) {
            count.fetch_add(1, Ordering::Relaxed);
        }
        let nanos = u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX);
        stripe.sum_nanos.fetch_add(nanos, Ordering::Relaxed);
    }

    /// The sum (seconds), the count and each bucket's own count (not cumulative), as the
    /// encoder takes them.
    fn snapshot(&self) -> (f64, u64, Vec<(f64, u64)>) {
        let h = &self.inner;
        let bucket = |i: usize| -> u64 {
            let counts = h
                .stripes
                .iter()
                .map(|s| s.counts[i].load(Ordering::Relaxed));
            counts.fold(0, u64::saturating_add)
        };
        let buckets: Vec<(f64, u64)> = h
            .bounds
            .iter()
            .copied()
            .chain(std::iter::once(f64::INFINITY))
            .enumerate()
            .map(|(i, bound)| (bound, bucket(i)))
            .collect();
        let count = buckets.iter().map(|(_, n)| n).sum();
        let sum_nanos = h
            .stripes
            .iter()
            .map(|s| s.sum_nanos.load(Ordering::Relaxed));
        let sum = sum_nanos.fold(0, u64::saturating_add) as f64 / 1e9;
        (sum, count, buckets)
    }
}

impl TypedMetric for AtomicHistogram {
    const TYPE: MetricType = MetricType::Histogram;
}

impl EncodeMetric for AtomicHistogram {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        let (sum, count, buckets) = self.snapshot();
        encoder.encode_histogram::<NoLabelSet>(sum, count, &buckets, None)
    }

    fn metric_type(&self) -> MetricType {
        Self::TYPE
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prometheus_client::registry::Registry;

    const BOUNDS: [f64; 3] = [0.001, 0.01, 0.1];

    #[test]
    fn observations_land_in_the_first_bucket_at_or_above_them_and_render_cumulatively() {
        let h = AtomicHistogram::new(&BOUNDS);
        h.observe(Duration::from_micros(500));
        h.observe(Duration::from_millis(1)); // on the bound: `le` takes it
        h.observe(Duration::from_millis(5));
        h.observe(Duration::from_secs(3)); // past the last bound: +Inf only
        let mut registry = Registry::default();
        registry.register("t_duration_seconds", "test", h.clone());
        let mut text = String::new();
        prometheus_client::encoding::prometheus_text::encode(&mut text, &registry).expect("encode");
        for line in [
            "t_duration_seconds_count 4",
            "t_duration_seconds_sum 3.0065",
            "t_duration_seconds_bucket{le=\"0.001\"} 2",
            "t_duration_seconds_bucket{le=\"0.01\"} 3",
            "t_duration_seconds_bucket{le=\"0.1\"} 3",
            "t_duration_seconds_bucket{le=\"+Inf\"} 4",
            "# TYPE t_duration_seconds histogram",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} in\n{text}");
        }
    }

    #[test]
    fn threads_observing_at_once_lose_nothing() {
        let h = AtomicHistogram::new(&BOUNDS);
        // More threads than stripes: some share one.
        let threads: Vec<_> = (0..STRIPES + 2)
            .map(|_| {
                let h = h.clone();
                std::thread::spawn(move || {
                    for _ in 0..10_000 {
                        h.observe(Duration::from_micros(20));
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().expect("observer thread");
        }
        let (sum, count, buckets) = h.snapshot();
        let n = (STRIPES as u64 + 2) * 10_000;
        assert_eq!(count, n);
        assert_eq!(buckets[0].1, n);
        assert!((sum - n as f64 * 20e-6).abs() < 1e-9, "{sum}");
    }
}
