//! The first-capture stage: each candidate's first capture through the CDX API (in parallel,
//! rate-limited by the client), then the MIME and year rules, the kept ones into the sampler.

use super::progress::{FIRST_CAPTURE, ROOT_UPSAMPLING};
use super::root_hosts::RootHosts;
use super::stages::Stages;
use crate::cdx::FirstCapture;
use crate::downsample::SpillSampler;
use crate::filters::{is_html_mime, year_bucket};
use crate::offline::Candidate;
use crate::{Counters, SetAside};
use std::sync::atomic::Ordering;

/// What the stage leaves for the next ones.
pub(super) struct FirstCaptured {
    pub(super) first_capture: Counters,
    pub(super) mime: Counters,
    pub(super) years: Counters,
}

/// Runs until `rx` is through or the run is cancelled; `rx` is dropped on return, which stops
/// the offline stages if they are still reading. What root upsampling needs goes to
/// `root_hosts`: each domain's root candidates and kept hosts. Err: the sampler or
/// `root_hosts` could not write its runs.
pub(super) async fn first_captures(
    stages: &Stages<'_>,
    mut rx: tokio::sync::mpsc::Receiver<Candidate>,
    sampler: &mut SpillSampler,
    root_hosts: &mut RootHosts,
) -> Result<FirstCaptured, String> {
    use futures::StreamExt;
    let Stages {
        spec,
        progress,
        captures,
        set_aside,
        errors,
    } = *stages;
    let mut fc = Counters::default();
    let mut mime_c = Counters::default();
    let mut year_c = Counters::default();
    let stream = futures::stream::poll_fn(|cx| rx.poll_recv(cx));
    let mut asked = stream
        .map(|c: Candidate| async move {
            let answer = captures.get(&c.url, "first_capture").await;
            progress.cdx_answers.fetch_add(1, Ordering::Relaxed);
            (c, answer)
        })
        .buffer_unordered(spec.concurrency.max(1) * 2);
    while let Some((c, answer)) = asked.next().await {
        progress.candidates.fetch_add(1, Ordering::Relaxed);
        progress.add_done(FIRST_CAPTURE, 1);
        fc.input += 1;
        if progress.cancel.load(Ordering::Relaxed) {
            break;
        }
        // A domain whose root was a candidate is left alone by root upsampling, whatever the
        // root's answer.
        if c.root {
            root_hosts.root_candidate(&c.domain)?;
        }
        match classify(answer, spec.years) {
            Kept::Sample {
                bucket,
                timestamp,
                mime,
            } => {
                fc.output += 1;
                mime_c.input += 1;
                mime_c.output += 1;
                year_c.input += 1;
                year_c.output += 1;
                // Every kept host, not the first to arrive: root upsampling chooses among
                // them, as answers come in completion order, which a resumed run does not
                // repeat.
                if let Some(host) = crate::surt::url_host(&c.url) {
                    root_hosts.kept(&c.domain, &host)?;
                }
                // Domains kept without a root so far: root upsampling's work, estimated as it
                // grows.
                progress.set_seen(ROOT_UPSAMPLING, root_hosts.rootless_estimate());
                let meta = meta_of(&timestamp, &mime);
                sampler.push_with(bucket, &c.domain, &c.url, c.root, &meta)?;
                if fc.output.is_multiple_of(1024) {
                    progress
                        .memory
                        .set_spilled(sampler.held() + root_hosts.held());
                }
            }
            Kept::Aside { stage, reason } => {
                match stage {
                    "first_capture" => fc.set_aside += 1,
                    "mime_html" => {
                        fc.output += 1;
                        mime_c.input += 1;
                        mime_c.set_aside += 1
                    }
                    _ => {
                        fc.output += 1;
                        mime_c.input += 1;
                        mime_c.output += 1;
                        year_c.input += 1;
                        year_c.set_aside += 1
                    }
                }
                set_aside.write(&SetAside {
                    stage,
                    url: c.url.clone(),
                    reason,
                });
            }
            Kept::Error(reason) => {
                fc.errors += 1;
                errors.write(&SetAside {
                    stage: "first_capture",
                    url: c.url.clone(),
                    reason,
                });
            }
        }
    }
    Ok(FirstCaptured {
        first_capture: fc,
        mime: mime_c,
        years: year_c,
    })
}

/// The sampler's payload for a URL: its first capture and MIME (a tab cannot be in either).
pub(super) fn meta_of(timestamp: &str, mime: &str) -> String {
    format!("{timestamp}\t{mime}")
}

pub(super) enum Kept {
    Sample {
        bucket: u16,
        timestamp: String,
        mime: String,
    },
    Aside {
        stage: &'static str,
        reason: String,
    },
    Error(String),
}

/// The first-capture, MIME and year rules on one answer.
pub(super) fn classify(answer: FirstCapture, years: [u16; 2]) -> Kept {
    match answer {
        FirstCapture::Found {
            timestamp,
            mime,
            status: _,
        } => {
            if !is_html_mime(&mime) {
                return Kept::Aside {
                    stage: "mime_html",
                    reason: format!("first capture is {mime}, not text/html"),
                };
            }
            let year: Option<u16> = timestamp.get(..4).and_then(|y| y.parse().ok());
            match (year_bucket(&timestamp), year) {
                (Some(bucket), Some(y)) if y >= years[0] && y <= years[1] => Kept::Sample {
                    bucket,
                    timestamp,
                    mime,
                },
                _ => Kept::Aside {
                    stage: "years",
                    reason: format!(
                        "first captured {} (kept: {}–{})",
                        timestamp.get(..4).unwrap_or(&timestamp),
                        years[0],
                        years[1]
                    ),
                },
            }
        }
        FirstCapture::NotArchived => Kept::Aside {
            stage: "first_capture",
            reason: "not archived (empty CDX answer)".into(),
        },
        FirstCapture::Blocked => Kept::Aside {
            stage: "first_capture",
            reason: "blocked (403 Blocked Site Error)".into(),
        },
        FirstCapture::Failed { reason } => Kept::Error(reason),
    }
}
