//! What an entry is stored under: the URI-R's canonical key (`[cache] canonical`), so every
//! spelling of a URL finds one entry; the views naming each spelling; and the entries written
//! under exact keys before, moved to their canonical key when asked.

use super::{CachedTimeMap, ServedView, TimeMapCache};
use crate::cache::store::{Observed, PutIf, Store};
use crate::uri_r::UriR;
use std::sync::Arc;

/// The URI-R a refresh asks the archives with: the spelling `cached` was stored under (its first
/// asker's) when that differs from `uri_r` and still reads as a URI-R (it came from a store, so
/// it passes the same check as a client's), else `uri_r`.
pub(super) fn stored_spelling<V>(cached: Option<&CachedTimeMap<V>>, uri_r: &UriR) -> UriR {
    match cached {
        Some(c) if c.entry.uri_r != uri_r.as_str() => {
            UriR::parse(&c.entry.uri_r).unwrap_or_else(|_| uri_r.clone())
        }
        _ => uri_r.clone(),
    }
}

impl<S: Store<CachedTimeMap<V>> + 'static, V: ServedView> TimeMapCache<S, V> {
    /// The key `uri_r`'s entry is stored and coalesced under: its canonical form with
    /// `[cache] canonical` (the exact text when it has none), else its exact text.
    pub fn key_of(&self, uri_r: &UriR) -> String {
        match (self.settings.canonical, uri_r.canonical_key()) {
            (true, Some(key)) => key.to_owned(),
            _ => uri_r.as_str().to_owned(),
        }
    }

    /// The entry under `key`. With canonical keys, an entry written before them under the
    /// URI-R's exact text (an older version, or `canonical = false`) is moved to `key` when
    /// asked so spelled, so an upgrade keeps what it had; other spellings of it miss.
    pub(super) async fn read(
        &self,
        store: &S,
        key: &str,
        uri_r: &str,
    ) -> Option<Arc<CachedTimeMap<V>>> {
        if let Some(cached) = store.get(key).await {
            return Some(cached);
        }
        if key == uri_r {
            return None;
        }
        let old = store.get(uri_r).await?;
        // A value under an exact key that is not this URI-R's entry is left alone.
        if old.entry.uri_r != uri_r {
            return None;
        }
        // Read again: a fan-out of another spelling may have stored a newer entry meanwhile,
        // which the old one must not replace.
        if let Some(cached) = store.get(key).await {
            return Some(cached);
        }
        // If absent: another replica may have stored one under the canonical key meanwhile.
        match store.put_if(key, old.clone(), Observed::Absent).await {
            Ok(PutIf::Stored) => {
                if let Err(e) = store.remove(uri_r).await {
                    tracing::warn!(uri_r, error = %e, "cannot remove an entry moved to its canonical key");
                }
            }
            Ok(PutIf::Lost { current, .. }) => {
                if let Some(current) = current {
                    let _ = store.install(key, current.clone()).await;
                    return Some(current);
                }
            }
            Err(e) => {
                tracing::warn!(uri_r, error = %e, "cannot move an entry to its canonical key")
            }
        }
        Some(old)
    }

    /// Drops the entry for `uri_r` (any spelling of it) from both tiers, and one left under its
    /// exact text from before canonical keys, which would otherwise be moved back when asked.
    pub async fn purge(&self, uri_r: &UriR) -> Result<bool, String> {
        let Some(store) = &self.store else {
            return Ok(false);
        };
        let key = self.key_of(uri_r);
        let uri_r = uri_r.as_str();
        let mut existed = store.get(&key).await.is_some();
        store.remove(&key).await.map_err(|e| e.to_string())?;
        if key != uri_r {
            existed |= store.get(uri_r).await.is_some();
            store.remove(uri_r).await.map_err(|e| e.to_string())?;
        }
        Ok(existed)
    }

    /// The stored entry for `uri_r` (any spelling of it), if any (for the admin API); one left
    /// under its exact text from before canonical keys is read, not moved.
    pub async fn entry(&self, uri_r: &UriR) -> Option<Arc<CachedTimeMap<V>>> {
        let store = self.store.as_ref()?;
        let key = self.key_of(uri_r);
        let uri_r = uri_r.as_str();
        match store.get(&key).await {
            Some(cached) => Some(cached),
            None if key != uri_r => store.get(uri_r).await.filter(|c| c.entry.uri_r == uri_r),
            None => None,
        }
    }
}
