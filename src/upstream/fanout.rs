//! One request to every enabled archive at once; whatever has answered by the deadline is each
//! archive's contribution to the fetch (merged where it is served, not here). Whether an archive
//! is asked at all, and what its answer does to its health, is `judge`'s.

mod judge;

use super::budget::Budget;
use super::failure::FailureKind;
use super::fallback::ask_archive;
use super::fetch::{ArchiveFetch, ArchiveLink, FetchLimits};
use super::ledger::Ledger;
use super::registry::{Archive, Health};
use super::resolve::HostLookup;
use super::turns::{Load, Standing, Turns};
use super::via::Loops;
use crate::cache::fan_out::{progress, Progress};
use crate::clock::Clock;
use crate::config::{ArchiveKind, Config};
use crate::timemap::answer::{Contribution, Fetch};
use futures::stream::{FuturesUnordered, StreamExt};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tmproxy_core::fan_out::{Ask, Prior, Settled};
use tmproxy_core::timemap::answer::ArchiveAnswer;
use tmproxy_core::timemap::incremental::{extended, unchanged};
use tmproxy_core::timemap::model::{LinkMemento, MementoDatetime};
use tmproxy_core::timemap::refresh::{Listing, Refresh};
use tokio::time::Instant;

/// The archives, each one's client and hop rules, and each one's health. Cheap to share behind
/// an `Arc`.
pub struct Upstream {
    archives: Vec<Archive>,
    /// One per archive, in the same order.
    links: Vec<ArchiveLink>,
    /// Bytes held from archives by every fan-out together (`max_buffered`).
    budget: Arc<Budget>,
    /// `/memento/proxy`'s share of `budget`: half of it.
    proxy_budget: Arc<Budget>,
    health: Vec<Mutex<Health>>,
    /// Requests actually sent to each archive (a dormant archive is skipped, not asked).
    fetches: Vec<AtomicU64>,
    /// What each archive did since start, for `/archives` and `/metrics`.
    ledgers: Vec<Ledger>,
    limits: FetchLimits,
    deadline: Duration,
    failures_before_dormant: u32,
    dormant_for: Duration,
    /// The longest an archive's `Retry-After` holds it (0: not honoured).
    max_retry_after: Duration,
    clock: Arc<dyn Clock>,
    loops: Loops,
}

impl Upstream {
    /// `lookup` resolves archive host names: [`super::resolve::system_lookup`] in production, a
    /// fixed map in tests (there is no DNS there).
    pub fn new(
        config: &Config,
        public_url: &str,
        clock: Arc<dyn Clock>,
        lookup: HostLookup,
    ) -> Result<Upstream, super::transport::BuildError> {
        let enabled: Vec<_> = config.archives.iter().filter(|a| a.enabled).collect();
        let aggregator_urls = enabled
            .iter()
            .filter(|a| a.kind == ArchiveKind::Aggregator)
            .flat_map(|a| a.timemap.iter().chain([&a.timegate]))
            .map(|u| u.url().as_str());
        let loops = Loops::new(public_url, aggregator_urls);
        let archives: Vec<Archive> = enabled
            .iter()
            .map(|a| Archive::from_config(config, a))
            .collect();
        let agent = config.upstream.agent();
        let links = enabled
            .iter()
            .zip(&archives)
            .map(|(a, archive)| {
                ArchiveLink::new(
                    &archive.prefixes(),
                    &archive.memento_urls(),
                    &a.redirect_hosts,
                    config.upstream.connect_timeout,
                    &agent,
                    loops.header(),
                    lookup.clone(),
                )
                .map(|link| link.limited(Turns::new(a.max_concurrency, a.rate)))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let budget = Budget::new(config.upstream.max_buffered);
        Ok(Upstream {
            links,
            proxy_budget: budget.share(config.upstream.max_buffered / 2),
            budget,
            health: archives
                .iter()
                .map(|_| Mutex::new(Health::default()))
                .collect(),
            fetches: archives.iter().map(|_| AtomicU64::new(0)).collect(),
            ledgers: archives.iter().map(|_| Ledger::default()).collect(),
            archives,
            limits: FetchLimits {
                max_body: config.upstream.max_body,
                max_pages: config.upstream.max_pages,
            },
            deadline: config.upstream.deadline,
            failures_before_dormant: config.upstream.failures_before_dormant,
            dormant_for: config.upstream.dormant_for,
            max_retry_after: config.upstream.max_retry_after,
            clock,
            loops,
        })
    }

    /// Who we are to the archives, and which requests would make a loop.
    pub fn loops(&self) -> &Loops {
        &self.loops
    }

    /// The byte budget for archive bodies, for its gauges.
    pub fn budget(&self) -> &Budget {
        &self.budget
    }

    pub fn archives(&self) -> &[Archive] {
        &self.archives
    }

    /// The configured whole-request deadline (the most a client's `timeout` can ask for).
    pub fn deadline(&self) -> Duration {
        self.deadline
    }

    /// Asks every awake archive in parallel and keeps what arrives within `deadline` (capped at
    /// the configured one), one contribution per archive. Never fails: each archive's failure is
    /// in its answer.
    pub async fn fetch(&self, uri_r: &str, deadline: Duration) -> Fetch {
        self.fetch_from(uri_r, deadline, Instant::now()).await
    }

    /// [`Upstream::fetch`] for a request that arrived at `arrived`: the deadline counts from
    /// then, so time the request already spent (reading a huge entry from disk) is not added.
    pub async fn fetch_from(&self, uri_r: &str, deadline: Duration, arrived: Instant) -> Fetch {
        self.fetch_asking(uri_r, deadline, arrived, Ask::All).await
    }

    /// [`Upstream::fetch_from`] asking only the archives whose ids are in `only` (a client's
    /// `archives=`), or every archive when None. The others are not in the fetch at all.
    pub async fn fetch_only(
        &self,
        uri_r: &str,
        deadline: Duration,
        arrived: Instant,
        only: Option<&[String]>,
    ) -> Fetch {
        let ask = only.map_or(Ask::All, Ask::Only);
        self.fetch_asking(uri_r, deadline, arrived, ask).await
    }

    /// [`Upstream::fetch_from`] asking the archives `ask` says.
    pub async fn fetch_asking(
        &self,
        uri_r: &str,
        deadline: Duration,
        arrived: Instant,
        ask: Ask<'_>,
    ) -> Fetch {
        let progress = progress();
        self.fetch_watched(uri_r, deadline, arrived, ask, None, &progress)
            .await
    }

    /// [`Upstream::fetch_asking`] publishing each archive's contribution to `progress` as it
    /// settles (a skipped or dormant one at once), so a request that cannot wait for the whole
    /// fan-out is answered with what came so far. With `prior` (a refresh), an archive whose
    /// stored contribution allows it is asked only for what is new, and its contribution is
    /// the stored one with that added ([`tmproxy_core::timemap::incremental`]).
    pub async fn fetch_watched(
        &self,
        uri_r: &str,
        deadline: Duration,
        arrived: Instant,
        ask: Ask<'_>,
        prior: Option<Prior<'_>>,
        progress: &Progress,
    ) -> Fetch {
        let asked: Vec<bool> = self
            .archives
            .iter()
            .map(|a| match ask {
                Ask::Only(ids) => ids.iter().any(|id| **id == *a.id),
                Ask::All | Ask::Routed(_) => true,
            })
            .collect();
        let routes = match ask {
            Ask::Routed(decision) => &decision.routes[..],
            _ => &[],
        };
        let deadline = deadline.min(self.deadline);
        let started = Instant::now();
        let stop_at = arrived + deadline;
        let now = self.clock.now();
        // The published answers are the fan-out's own results: slot `i` is archive `i`'s, and
        // the contributions are taken back out of it at the end.
        progress.send_replace(Settled {
            at: Some(now),
            archives: self.archives.iter().map(|a| (a.id.clone(), None)).collect(),
            done: false,
        });
        let publish = |i: usize, mut f: ArchiveFetch, elapsed: Duration| {
            f.answer.elapsed_ms = elapsed.as_millis() as u64;
            let mementos = std::mem::take(&mut f.mementos);
            let id = &self.archives[i].id;
            let stored = prior.and_then(|p| p.of(id));
            let c = Arc::new(contribution(
                id,
                f.answer,
                f.read.listing,
                mementos,
                stored,
                now,
            ));
            progress.send_modify(|s| s.archives[i].1 = Some(c));
            // The budget's hold on the mementos' bytes lasts as long as the fan-out.
            f.held
        };
        let mut held = Vec::new();

        // How each asked archive stands in its queue, read if the deadline cuts it off.
        let standing: Vec<Standing> = self.archives.iter().map(|_| Standing::default()).collect();
        let mut pending = FuturesUnordered::new();
        for (i, archive) in self.archives.iter().enumerate() {
            if !asked[i] {
                continue;
            }
            if let Some(skipped) = self.not_asked(i, routes, now) {
                publish(i, skipped, Duration::ZERO);
                continue;
            }
            self.fetches[i].fetch_add(1, Ordering::Relaxed);
            let (link, limits, budget) = (&self.links[i], &self.limits, &self.budget);
            let standing = &standing[i];
            let since = prior.and_then(|p| p.since(&archive.id, now));
            pending.push(async move {
                // Its turn, its listing, and its TimeGate if that failed, within its own timeout.
                let (fetch, waited) = ask_archive(
                    link,
                    archive,
                    uri_r,
                    limits,
                    budget,
                    stop_at,
                    standing,
                    since.as_ref(),
                )
                .await;
                (i, fetch, started.elapsed(), waited)
            });
        }

        let asked_now = pending.len();
        // Archives not reached at all (name or connection), judged once the fan-out is over:
        // when that is every archive asked, the network is down, not the archives.
        let mut unreached = Vec::new();
        let deadline_passed = tokio::time::sleep_until(stop_at);
        tokio::pin!(deadline_passed);
        while !pending.is_empty() {
            tokio::select! {
                Some((i, mut fetch, elapsed, waited)) = pending.next() => {
                    // Our own memory budget running out says nothing about the archive, nor does
                    // a 4xx any client can provoke with the URI-R it asks for, nor a wait in our
                    // own queue: dormancy comes from the archive's own faults (connect, TLS,
                    // timeout, 5xx, malformed).
                    let blame = !fetch.over_budget() && !fetch.refused_by_archive() && !fetch.queued();
                    // Its own time: the wait for its turn was ours.
                    let own = elapsed.saturating_sub(waited);
                    let listed = fetch.answer.status.answered() && fetch.answer.fallback.is_none();
                    let refresh = listed.then_some(fetch.read.listing.refresh);
                    self.ledgers[i].record_listing(refresh, fetch.read.bytes);
                    if blame && fetch.unreached() {
                        self.settle(i, &mut fetch, own, false);
                        unreached.push(i);
                    } else {
                        self.settle(i, &mut fetch, own, blame);
                    }
                    held.push(publish(i, fetch, elapsed));
                }
                _ = &mut deadline_passed => break,
            }
        }
        if asked_now >= 2 && unreached.len() == asked_now {
            tracing::warn!(
                archives = asked_now,
                "no archive could be reached (each name failed to resolve or each connection failed): the network, not the archives; none is made dormant"
            );
        } else {
            for i in unreached {
                self.judge(i, false);
            }
        }
        // Dropping the stream cancels the requests still in flight.
        drop(pending);
        // A client that asked for less time than the configured deadline cut these archives off,
        // not their own slowness: it must not push them towards dormancy for everyone.
        let cut_by_client = deadline < self.deadline;
        let unsettled: Vec<usize> = progress
            .borrow()
            .archives
            .iter()
            .enumerate()
            .filter(|(i, (_, c))| c.is_none() && asked[*i])
            .map(|(i, _)| i)
            .collect();
        for i in unsettled {
            let secs = deadline.as_secs_f64();
            // An archive held up in our queue did not have the whole deadline: not its doing.
            let prompt = standing[i].prompt();
            let mut fetch = if prompt {
                let why = format!("no answer within the request deadline ({secs}s)");
                ArchiveFetch::failed(FailureKind::Timeout, None, why)
            } else if standing[i].began() {
                let why = format!("no answer within the request deadline ({secs}s), part of it spent waiting for its turn");
                ArchiveFetch::failed(FailureKind::Queued, None, why)
            } else {
                let why =
                    format!("waited for its turn until the request deadline ({secs}s): not asked");
                ArchiveFetch::failed(FailureKind::Queued, None, why)
            };
            self.settle(i, &mut fetch, deadline, !cut_by_client && prompt);
            publish(i, fetch, deadline);
        }

        // Taken back: a watcher still holding one (answering its client right now) has its
        // own reference, and only then is a contribution copied.
        let settled = progress.send_replace(Settled {
            at: Some(now),
            archives: Vec::new(),
            done: true,
        });
        let archives = settled
            .archives
            .into_iter()
            .filter_map(|(_, c)| c)
            .map(|c| Arc::try_unwrap(c).unwrap_or_else(|shared| Contribution::clone(&shared)))
            .collect();
        drop(held);
        Fetch {
            uri_r: uri_r.to_string(),
            at: now,
            archives,
        }
    }

    /// `/memento/proxy`'s share of the byte budget (half), to charge its answers against.
    pub(crate) fn shared_budget(&self) -> &Arc<Budget> {
        &self.proxy_budget
    }

    /// The archive that listed `uri_m` (`listed_by`), its place, and the link to it, when that URL is under its
    /// [`Archive::memento_prefixes`] or on its `redirect_hosts`; else why not. Only the listing
    /// archive: a URI-M is its word, so it never makes us fetch from another archive's host
    /// (`/memento/proxy` refuses it and connects nowhere).
    pub(crate) fn link_for(
        &self,
        uri_m: &url::Url,
        listed_by: &str,
    ) -> Result<(usize, &Archive, &ArchiveLink), String> {
        let i = (0..self.archives.len())
            .find(|i| &*self.archives[*i].id == listed_by)
            .ok_or_else(|| format!("{listed_by} is not an enabled archive"))?;
        self.links[i].mementos.check(uri_m)?;
        Ok((i, &self.archives[i], &self.links[i]))
    }

    /// How many times each archive has been asked, by id, in configured order.
    pub fn fetch_counts(&self) -> Vec<(String, u64)> {
        self.archives
            .iter()
            .zip(&self.fetches)
            .map(|(a, n)| (a.id.to_string(), n.load(Ordering::Relaxed)))
            .collect()
    }

    /// What each archive did since start, in configured order (as [`Upstream::archives`]).
    pub fn ledgers(&self) -> &[Ledger] {
        &self.ledgers
    }

    /// Now, on the clock the archives' health is judged by.
    pub fn now(&self) -> chrono::DateTime<chrono::Utc> {
        self.clock.now()
    }

    /// Each archive's health now, in configured order.
    pub fn health(&self) -> Vec<Health> {
        (0..self.archives.len())
            .map(|i| self.health_of(i))
            .collect()
    }

    /// What each archive's turns are now (in flight, waiting), in configured order.
    pub fn loads(&self) -> Vec<Load> {
        self.links.iter().map(|l| l.turns.load()).collect()
    }
}

/// An archive's contribution from its answer at `now`: what it listed, or with a `stored`
/// contribution read incrementally, that with what is new (a 304: that, confirmed). A full
/// listing dates `full_at`, from which the next full one is due.
fn contribution(
    id: &str,
    answer: ArchiveAnswer,
    mut listing: Listing,
    mementos: Vec<LinkMemento>,
    stored: Option<&Contribution>,
    now: MementoDatetime,
) -> Contribution {
    match (listing.refresh, stored) {
        (Refresh::Incremental, Some(stored)) if answer.status.answered() => {
            extended(stored, answer, now, mementos, listing)
        }
        (Refresh::NotModified, Some(stored)) => unchanged(stored, answer, now),
        _ => {
            let whole = answer.status.answered() && answer.fallback.is_none();
            listing.full_at = whole.then_some(now);
            listing.refresh = Refresh::Full;
            let mut c = Contribution::listed(id, answer, now, mementos);
            c.listing = listing;
            c
        }
    }
}
