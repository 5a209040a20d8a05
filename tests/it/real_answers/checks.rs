//! What tmproxy must do with recorded TimeMaps, judged by the test's own reading of them: every
//! distinct memento served once and spelled as first listed, the ends and the count right, and
//! its TimeGate sending each probe to the closest memento.

use super::reading::{closest, distinct, http_date, memento_key, read, Distinct, Listed};
use super::serving::{config, fixture, fixture_text, proxy, recorded_archive, timegate, timemap};
use std::collections::HashMap;

/// Serves each of `files` from a fake archive of its own (in this order), asks tmproxy for
/// `uri_r` and fails with every problem found.
pub async fn check_recordings(files: &[&str], uri_r: &str) {
    let mut listed = Vec::new();
    let mut archives = Vec::new();
    for file in files {
        let reading = read(&fixture_text(file));
        assert!(
            !reading.mementos.is_empty(),
            "{file}: our reading finds no memento in it"
        );
        listed.extend(reading.mementos);
        archives.push(recorded_archive(fixture(file)).await);
    }
    let expected = distinct(&listed);
    let proxy = proxy(config(&archives)).await;
    let mut problems = served_problems(&proxy, uri_r, &expected).await;
    problems.extend(timegate_problems(&proxy, uri_r, &expected).await);
    proxy.stop().await;
    assert!(
        problems.is_empty(),
        "{} ({} distinct mementos listed): {} problems:\n{}",
        files.join(" + "),
        expected.len(),
        problems.len(),
        problems.join("\n")
    );
}

/// What is wrong with `/timemap/link/{uri_r}` against `expected`.
pub async fn served_problems(
    proxy: &crate::support::Proxy,
    uri_r: &str,
    expected: &[Distinct],
) -> Vec<String> {
    let (status, count, body) = timemap(proxy, uri_r).await;
    if status != 200 {
        return vec![format!("/timemap/link answered {status}: {body:.300}")];
    }
    let mut problems = Vec::new();
    let served = read(&body).mementos;
    let by_key: HashMap<&str, &Distinct> = expected.iter().map(|m| (m.key.as_str(), m)).collect();
    let mut times_served: HashMap<String, usize> = HashMap::new();
    for m in &served {
        let key = memento_key(&m.uri);
        *times_served.entry(key.clone()).or_default() += 1;
        match by_key.get(key.as_str()) {
            None => problems.push(format!("served {} which no recording lists", m.uri)),
            Some(e) if e.uri != m.uri => problems.push(format!(
                "served {} but it was first listed as {}",
                m.uri, e.uri
            )),
            Some(e) if e.at != m.at => problems.push(format!(
                "served {} at {} but it was listed at {}",
                m.uri,
                http_date(m.at),
                http_date(e.at)
            )),
            Some(_) => {}
        }
    }
    for (key, n) in &times_served {
        if *n > 1 {
            problems.push(format!("served {key} {n} times"));
        }
    }
    let missing: Vec<&Distinct> = expected
        .iter()
        .filter(|m| !times_served.contains_key(&m.key))
        .collect();
    if !missing.is_empty() {
        // The usual cause: another URI-M listed at the same second.
        let same_second = missing
            .iter()
            .filter(|m| expected.iter().any(|o| o.at == m.at && o.key != m.key))
            .count();
        let examples: Vec<String> = missing
            .iter()
            .take(3)
            .map(|m| format!("{} ({})", m.uri, http_date(m.at)))
            .collect();
        problems.push(format!(
            "{} of {} distinct mementos not served ({same_second} of them share their second \
             with another URI-M), e.g. {}",
            missing.len(),
            expected.len(),
            examples.join(", ")
        ));
    }
    if count.as_deref() != Some(expected.len().to_string().as_str()) {
        problems.push(format!(
            "X-Memento-Count {count:?}, {} distinct mementos listed",
            expected.len()
        ));
    }
    problems.extend(end_problems(&served, expected));
    problems
}

/// The `first memento` and `last memento` tmproxy names must be at the earliest and latest
/// datetimes listed (any memento at that second will do).
fn end_problems(served: &[Listed], expected: &[Distinct]) -> Vec<String> {
    let mut problems = Vec::new();
    let ends = [
        ("first", expected.iter().map(|m| m.at).min()),
        ("last", expected.iter().map(|m| m.at).max()),
    ];
    for (end, want) in ends {
        let named: Vec<i64> = served
            .iter()
            .filter(|m| m.rels.iter().any(|r| r == end))
            .map(|m| m.at)
            .collect();
        if named.len() != 1 || Some(named[0]) != want {
            problems.push(format!(
                "`{end} memento` at {:?}, the {end} datetime listed is {:?}",
                named.iter().map(|&t| http_date(t)).collect::<Vec<_>>(),
                want.map(http_date)
            ));
        }
    }
    problems
}

/// Datetimes to ask the TimeGate for: exactly a memento's, the midpoint between two mementos
/// (a tie, or nearer the earlier), and a second past it (nearer the later when they are at
/// least three seconds apart). Taken around the middle of the list.
pub fn probes(expected: &[Distinct]) -> Vec<i64> {
    let mut times: Vec<i64> = expected.iter().map(|m| m.at).collect();
    times.sort_unstable();
    times.dedup();
    let mid = times.len() / 2;
    let mut probes = vec![times[mid]];
    if let Some(w) = times[mid..].windows(2).find(|w| w[1] - w[0] >= 3) {
        let half = w[0] + (w[1] - w[0]) / 2;
        probes.extend([half, half + 1]);
    }
    probes
}

/// What is wrong with `/timegate/{uri_r}` at each probe: it must redirect to a memento at the
/// datetime our reading finds closest.
pub async fn timegate_problems(
    proxy: &crate::support::Proxy,
    uri_r: &str,
    expected: &[Distinct],
) -> Vec<String> {
    let mut problems = Vec::new();
    for t in probes(expected) {
        let (at, candidates) = closest(expected, t);
        let (status, location) = timegate(proxy, uri_r, &http_date(t)).await;
        let fine = status == 302
            && location
                .as_deref()
                .is_some_and(|l| candidates.iter().any(|c| c.uri == l));
        if !fine {
            problems.push(format!(
                "TimeGate at {} answered {status} to {location:?}; closest is {} ({})",
                http_date(t),
                candidates
                    .iter()
                    .map(|c| c.uri.as_str())
                    .collect::<Vec<_>>()
                    .join(" or "),
                http_date(at)
            ));
        }
    }
    problems
}
