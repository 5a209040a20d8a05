//! Routing as the cache asks for it: [`Routing`] is the cache's [`Router`], given to it in
//! `app.rs`, so the cache never names routing.

use super::Routing;
use crate::cache::fan_out::Router;
use crate::timemap::answer::Fetch;
use crate::uri_r::UriR;
use std::net::IpAddr;
use tmproxy_core::routing::Decision;

impl Router for Routing {
    fn decide(&self, ids: &[&str], uri_r: &UriR) -> Decision {
        Routing::decide(self, ids, uri_r)
    }

    fn observe(&self, fetch: &Fetch, uri_r: &UriR, client: Option<IpAddr>) {
        self.observe_fetch(fetch, uri_r, client);
    }
}
