//! Root-URL upsampling: a domain whose candidates held no root URL gets `https://host/` when it
//! was first archived 1996–2002, so the early web's front pages are not lost to deep links.
//!
//! `years` bounds it like every stage: the window is 1996–2002 intersected with `years`, and
//! with no overlap (a 2010–2021 sample) the stage asks nothing. A domain whose root URL was a
//! candidate (whatever its answer) is left alone: that URL is already accounted for once.
//! A domain spelled several ways (`www.example.com`, `example.com`, `www2.example.com`: one
//! domain once `www\d*.` is stripped) is asked at one host, the shortest of its kept URLs'
//! hosts, ties broken by byte order (`example.com`, the natural front page): a choice made on
//! the set of kept URLs, so it does not depend on the order their answers arrived in.
//! The roots are asked `concurrency`·2 at a time, in domain order; the sampler does not depend
//! on arrival order anyway. The domains come from the first-capture stage's facts, spilled to
//! disk and merged by domain here ([`RootHosts`]), not from sets held in memory.

use super::first_capture::{classify, meta_of, Kept};
use super::progress::ROOT_UPSAMPLING;
use super::root_hosts::RootHosts;
use super::stages::Stages;
use crate::downsample::SpillSampler;
use crate::{Counters, SetAside};
use std::sync::atomic::Ordering;

const STAGE: &str = "root_upsampling";

/// The paper's window of first captures for an upsampled root.
const WINDOW: [u16; 2] = [1996, 2002];

/// The window within `years`, if they overlap.
pub(super) fn window(years: [u16; 2]) -> Option<[u16; 2]> {
    let w = [WINDOW[0].max(years[0]), WINDOW[1].min(years[1])];
    (w[0] <= w[1]).then_some(w)
}

/// `root_hosts` holds, per domain, whether a root was a candidate and its kept hosts (merged
/// here by domain, twice: once to count, once to ask). Stops early (counters partial) when the
/// run is cancelled; Err: the sampler could not write, or `root_hosts`' runs could not be read.
pub(super) async fn upsample_roots(
    stages: &Stages<'_>,
    root_hosts: &mut RootHosts,
    sampler: &mut SpillSampler,
) -> Result<Counters, String> {
    use futures::StreamExt;
    let Stages {
        spec,
        progress,
        captures,
        set_aside,
        errors,
        ..
    } = *stages;
    let mut up = Counters::default();
    let Some(window) = window(spec.years) else {
        progress.set_total(ROOT_UPSAMPLING, 0);
        return Ok(up);
    };
    // The exact total, which first captures could only estimate: a pass over the merge that
    // holds nothing but the count.
    let mut rootless = 0u64;
    for d in root_hosts.rootless()? {
        d?;
        rootless += 1;
    }
    progress.set_total(ROOT_UPSAMPLING, rootless);
    let mut asked = futures::stream::iter(root_hosts.rootless()?)
        .map(|d| async move {
            let (domain, host) = d?;
            let root = format!("https://{host}/");
            let answer = captures.get(&root, STAGE).await;
            Ok::<_, String>((domain, root, answer))
        })
        .buffered(spec.concurrency.max(1) * 2);
    while let Some(asked) = asked.next().await {
        if progress.cancel.load(Ordering::Relaxed) {
            break;
        }
        let (domain, root, answer) = asked?;
        up.input += 1;
        progress.add_done(ROOT_UPSAMPLING, 1);
        match classify(answer, window) {
            Kept::Sample {
                bucket,
                timestamp,
                mime,
            } => {
                up.output += 1;
                let meta = meta_of(&timestamp, &mime);
                sampler.push_with(bucket, &domain, &root, true, &meta)?;
            }
            Kept::Aside { reason, .. } => {
                up.set_aside += 1;
                set_aside.write(&SetAside {
                    stage: STAGE,
                    url: root,
                    reason,
                });
            }
            Kept::Error(reason) => {
                up.errors += 1;
                errors.write(&SetAside {
                    stage: STAGE,
                    url: root,
                    reason,
                });
            }
        }
    }
    Ok(up)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_is_bounded_by_years() {
        assert_eq!(window([1996, 2021]), Some([1996, 2002]));
        assert_eq!(window([1999, 2001]), Some([1999, 2001]));
        assert_eq!(window([2000, 2010]), Some([2000, 2002]));
        assert_eq!(
            window([2010, 2021]),
            None,
            "no early years: nothing to upsample"
        );
    }
}
