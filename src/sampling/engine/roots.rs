//! Root-URL upsampling: a domain whose candidates held no root URL gets `https://host/` when it
//! was first archived 1996–2002, so the early web's front pages are not lost to deep links.

use super::first_capture::{classify, meta_of, Kept};
use super::Stages;
use crate::sampling::downsample::Sampler;
use crate::sampling::{Counters, SetAside};
use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::Ordering;

/// `domains` maps each kept domain to its host; those in `domains_with_root` are left alone.
pub(super) async fn upsample_roots(
    stages: &Stages<'_>,
    domains: &BTreeMap<String, String>,
    domains_with_root: &HashSet<String>,
    sampler: &mut Sampler,
) -> Counters {
    let Stages {
        progress,
        captures,
        set_aside,
        errors,
        ..
    } = *stages;
    let mut up = Counters::default();
    for (domain, host) in domains {
        if progress.cancel.load(Ordering::Relaxed) {
            break;
        }
        if domains_with_root.contains(domain) {
            continue;
        }
        up.input += 1;
        let root = format!("https://{host}/");
        let answer = captures.get(&root).await;
        match classify(answer, [1996, 2002]) {
            Kept::Sample {
                bucket,
                timestamp,
                mime,
            } => {
                up.output += 1;
                sampler.push_with(bucket, domain, &root, true, &meta_of(&timestamp, &mime));
            }
            Kept::Aside { reason, .. } => {
                up.set_aside += 1;
                set_aside.write(&SetAside {
                    stage: "root_upsampling",
                    url: root,
                    reason,
                });
            }
            Kept::Error(reason) => {
                up.errors += 1;
                errors.write(&SetAside {
                    stage: "root_upsampling",
                    url: root,
                    reason,
                });
            }
        }
    }
    up
}
