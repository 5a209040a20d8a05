//! The server's archive profiles: the pure [`tmproxy_core::routing`] profiles behind a
//! lock, fed by every fan-out ([`Routing::observe`]), asked before the next
//! ([`Routing::decide`]), saved in the data directory and read back at start.
//!
//! One process owns a data directory's profiles at a time: it holds an advisory lock on
//! `routing/profiles.lock` beside the file. A second server on the same directory learns in
//! memory without saving (it says so); `tmproxy routing import` refuses to run while a server
//! holds it, since that server's next save would overwrite the import.

mod for_cache;
pub mod import;
mod persist;
pub mod stored;

use crate::config::{Config, RoutingConfig};
use crate::uri_r::UriR;
use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;
use tmproxy_core::routing::{self as core, Candidate, Decision, Observation, PerClient, Profiles};

pub use persist::Loaded;

/// How often learned profiles are written while the server runs (and at shutdown): a crash
/// loses at most this much learning, and a write is a few MB at most.
pub const SAVE_EVERY: Duration = Duration::from_secs(60);

/// The profiles file of a config's data directory ([`Config::data_dir`]):
/// `<data dir>/routing/profiles.bin`, beside the sampling jobs.
pub fn profiles_path(config: &Config) -> PathBuf {
    config.data_dir().join("routing").join("profiles.bin")
}

/// The server's routing state.
pub struct Routing {
    settings: core::Settings,
    /// Ids of archives with `always = true` (the Internet Archive is always asked anyway).
    always: Vec<String>,
    profiles: Mutex<Profiles>,
    /// What each client address has taught each key (`[routing] max_per_client`).
    per_client: Mutex<PerClient>,
    /// Learned since the last save.
    dirty: AtomicBool,
    /// Misses decided: the nonce of each one's exploration draw.
    misses: AtomicU64,
    file: persist::ProfilesFile,
    loaded: Loaded,
}

impl Routing {
    /// Reads the profiles of `config`'s data directory (blank when there are none, or when the
    /// file is damaged: it is then moved aside and the log says so).
    pub fn open(config: &Config) -> Routing {
        let mut file = persist::ProfilesFile::new(profiles_path(config));
        let (profiles, loaded) = file.load(config.routing.max_keys);
        match &loaded {
            Loaded::Restored { keys } => {
                tracing::info!(path = %file.path().display(), keys, "routing profiles restored")
            }
            Loaded::Blank => {
                tracing::info!(path = %file.path().display(), "routing profiles: none yet")
            }
            Loaded::Refused { reason, moved_to } => tracing::error!(
                path = %file.path().display(), %reason,
                moved_to = %moved_to.as_deref().map(|p| p.display().to_string()).unwrap_or_default(),
                "routing profiles damaged: refused, starting blank"
            ),
            Loaded::Unreadable { reason } => tracing::error!(
                path = %file.path().display(), %reason,
                "routing profiles unreadable, starting blank (and not saving over them)"
            ),
        }
        if let Some(reason) = file.not_owned_because() {
            tracing::warn!(
                path = %file.path().display(), %reason,
                "routing profiles not ours to save: learning in memory only"
            );
        }
        Routing {
            settings: settings_of(&config.routing),
            always: config
                .archives
                .iter()
                .filter(|a| a.always)
                .map(|a| a.id.clone())
                .collect(),
            profiles: Mutex::new(profiles),
            per_client: Mutex::new(PerClient::new(config.routing.max_per_client)),
            dirty: AtomicBool::new(false),
            misses: AtomicU64::new(0),
            file,
            loaded,
        }
    }

    /// What [`Routing::open`] found.
    pub fn loaded(&self) -> &Loaded {
        &self.loaded
    }

    pub fn settings(&self) -> &core::Settings {
        &self.settings
    }

    /// Learns one fan-out's fresh answers (archives that failed or were skipped teach nothing,
    /// and so does a fan-out in which no archive held anything: memsim learns the same way).
    pub fn observe(&self, observation: &Observation) {
        if observation.keys.is_empty() || !observation.holds_any() {
            return;
        }
        self.lock().observe(observation);
        self.dirty.store(true, Ordering::Relaxed);
    }

    /// [`Routing::observe`] of a fan-out's fresh answers ([`Observation::of_fetch`]): call it
    /// with the fetch as the archives answered, before any merge with a cached entry. A fetch
    /// in which no archive held anything teaches nothing, and one made for `client` teaches
    /// only the keys that client has not taught `max_per_client` times already. Without a
    /// client (the server's own refreshes: an admin's, a sampling feed's) nothing is bounded.
    pub fn observe_fetch(
        &self,
        fetch: &tmproxy_core::timemap::answer::Fetch,
        uri_r: &UriR,
        client: Option<IpAddr>,
    ) {
        self.observe_for(
            Observation::of_fetch(fetch, uri_r.routing_keys().clone()),
            client,
        );
    }

    /// [`Routing::observe`] of a fan-out's lesson made for `client` (already its
    /// [`core::client_key`]), through the per-client bound: what [`Routing::observe_fetch`]
    /// does once it has the lesson, and what `memsim route` replays.
    pub fn observe_for(&self, mut lesson: Observation, client: Option<IpAddr>) {
        // Before the bound: a lesson that teaches nothing spends none of its client's share.
        if !lesson.holds_any() {
            return;
        }
        if let Some(client) = client {
            let mut bound = self.per_client.lock().unwrap_or_else(|e| e.into_inner());
            bound.admit(client, &mut lesson.keys);
        }
        self.observe(&lesson);
    }

    /// Routes one miss of `uri_r` over the archives `ids` (in the fan-out's order): the routes
    /// come back in the same order. Each call is a miss: its exploration draw is
    /// [`core::draw_for`]`(uri_r, n)` with `n` the misses decided before it, so a replay of the
    /// same stream draws the same.
    pub fn decide(&self, ids: &[&str], uri_r: &UriR) -> Decision {
        let n = self.misses.fetch_add(1, Ordering::Relaxed);
        self.decide_with_draw(ids, uri_r, core::draw_for(uri_r.as_str(), n))
    }

    /// [`Routing::decide`] with the exploration draw given.
    pub fn decide_with_draw(&self, ids: &[&str], uri_r: &UriR, draw: u64) -> Decision {
        let candidates: Vec<Candidate<'_>> = ids
            .iter()
            .map(|id| Candidate::new(id, self.always.iter().any(|a| a == id)))
            .collect();
        let keys = uri_r.routing_keys();
        core::decide(&self.lock(), &self.settings, &candidates, keys, draw)
    }

    /// Misses decided since start ([`Routing::decide`] calls): what `/archives`' skip share
    /// is over.
    pub fn misses_decided(&self) -> u64 {
        self.misses.load(Ordering::Relaxed)
    }

    /// Keys held now, and how many of them profile `archive` (for `/archives`).
    pub fn size(&self, archive: &str) -> (usize, usize) {
        let p = self.lock();
        (p.len(), p.keys_of(archive))
    }

    /// A copy of the profiles as they stand.
    pub fn snapshot(&self) -> Profiles {
        self.lock().clone()
    }

    /// Writes the profiles if anything was learned since the last save (blocking: call it from
    /// a blocking thread). Ok(false) when there was nothing to write or another process owns
    /// the file.
    pub fn save(&self) -> Result<bool, String> {
        if !self.file.owned() || !self.dirty.swap(false, Ordering::Relaxed) {
            return Ok(false);
        }
        // Copied under the lock, encoded and written outside it: encoding 100,000 keys takes
        // tens of ms, which observations and decisions would otherwise wait for.
        let copy = self.lock().to_stored();
        let bytes = stored::encode(&copy);
        let written = bytes.and_then(|b| self.file.write(&b));
        if written.is_err() {
            self.dirty.store(true, Ordering::Relaxed);
        }
        written.map(|()| true)
    }

    /// Saves every [`SAVE_EVERY`] while the routing state lives.
    pub fn spawn_saver(routing: std::sync::Weak<Routing>) {
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(SAVE_EVERY);
            tick.tick().await;
            loop {
                tick.tick().await;
                let Some(routing) = routing.upgrade() else {
                    return;
                };
                let saved = tokio::task::spawn_blocking(move || routing.save()).await;
                if let Ok(Err(e)) = saved {
                    tracing::error!(error = %e, "cannot save the routing profiles");
                }
            }
        });
    }

    fn lock(&self) -> MutexGuard<'_, Profiles> {
        // A panic elsewhere while it was held leaves counts at worst one observation short.
        self.profiles.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The decision's settings from `[routing]`.
pub fn settings_of(r: &RoutingConfig) -> core::Settings {
    core::Settings {
        mode: r.mode,
        min_evidence: r.min_evidence,
        min_share: r.min_share,
        explore: r.explore,
    }
}

#[cfg(test)]
mod tests;
