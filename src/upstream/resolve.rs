//! Name resolution for one archive's client: every address a name resolves to is checked
//! before any connection, and the connection goes to exactly the addresses checked.
//!
//! hyper's connector connects to what its resolver returns and resolves nothing itself (IP
//! literals skip the resolver; `guard::HopRules::check` judges those), so refusing here leaves
//! no second lookup for a rebinding name to change its answer in.

use super::guard::forbidden_kind;
use futures::future::BoxFuture;
use hyper_util::client::legacy::connect::dns::Name;
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

/// Turns a host name into addresses. Production asks the system; tests pass a fixed map (no
/// DNS here). The check around it is the same either way.
pub type HostLookup =
    Arc<dyn Fn(String) -> BoxFuture<'static, std::io::Result<Vec<IpAddr>>> + Send + Sync>;

/// The system resolver (getaddrinfo on tokio's blocking pool, as hyper's default does).
pub fn system_lookup() -> HostLookup {
    Arc::new(|name: String| {
        Box::pin(async move {
            let addrs = tokio::net::lookup_host((name.as_str(), 0)).await?;
            Ok(addrs.map(|a| a.ip()).collect())
        })
    })
}

/// A fixed name → addresses map; any other name does not resolve. For tests.
pub fn fixed_lookup(map: HashMap<String, Vec<IpAddr>>) -> HostLookup {
    let map = Arc::new(map);
    Arc::new(move |name: String| {
        let found = map.get(&name.to_ascii_lowercase()).cloned();
        Box::pin(async move {
            found.ok_or_else(|| {
                std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    format!("{name}: no such host"),
                )
            })
        })
    })
}

/// A name that resolved to an address we do not connect to on an archive's say-so.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{name} refused: it resolves to {ip}, a {kind} address")]
pub struct AddressRefused {
    pub name: String,
    pub ip: IpAddr,
    pub kind: &'static str,
}

/// A name the lookup could not resolve: the detail an operator needs ("dns: failed to resolve
/// web.archive.org: …"), found in the client's error chain by `failure::classify`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("failed to resolve {name}: {cause}")]
pub struct NameNotResolved {
    pub name: String,
    pub cause: String,
}

/// The resolver of one archive's client: `lookup`, then refuse a name other than the archive's
/// own configured hosts when any of its addresses is forbidden (one bad address is enough: a
/// name pointing at both a public and a private address is not trusted with either).
#[derive(Clone)]
pub struct GuardedResolver {
    lookup: HostLookup,
    own_names: Vec<String>,
}

impl GuardedResolver {
    pub fn new(lookup: HostLookup, own_names: Vec<String>) -> GuardedResolver {
        GuardedResolver { lookup, own_names }
    }
}

/// The decision, pure: the addresses to connect to, or why not.
pub fn judge(
    name: &str,
    ips: Vec<IpAddr>,
    own_names: &[String],
) -> Result<Vec<IpAddr>, AddressRefused> {
    let name = name.to_ascii_lowercase();
    if !own_names.contains(&name) {
        if let Some((ip, kind)) = ips
            .iter()
            .find_map(|ip| forbidden_kind(*ip).map(|k| (*ip, k)))
        {
            return Err(AddressRefused { name, ip, kind });
        }
    }
    Ok(ips)
}

/// What the resolver hands the connector: the addresses checked, each with port 0 (the
/// connector puts the URL's port in).
pub type Addrs = std::vec::IntoIter<SocketAddr>;

/// Why a name gave no address: [`NameNotResolved`] or [`AddressRefused`].
pub type ResolveError = Box<dyn std::error::Error + Send + Sync>;

impl GuardedResolver {
    /// `name`'s addresses, each checked, or why none.
    pub fn resolve(&self, name: &str) -> BoxFuture<'static, Result<Addrs, ResolveError>> {
        let name = name.to_string();
        let lookup = (self.lookup)(name.clone());
        let own = self.own_names.clone();
        Box::pin(async move {
            let ips = lookup.await.map_err(|e| NameNotResolved {
                name: name.clone(),
                cause: e.to_string(),
            })?;
            let ips = judge(&name, ips, &own)?;
            let addrs: Vec<SocketAddr> = ips.into_iter().map(|ip| SocketAddr::new(ip, 0)).collect();
            Ok(addrs.into_iter())
        })
    }
}

/// The resolver as hyper's connector calls it.
impl tower_service::Service<Name> for GuardedResolver {
    type Response = Addrs;
    type Error = ResolveError;
    type Future = BoxFuture<'static, Result<Addrs, ResolveError>>;

    fn poll_ready(
        &mut self,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), ResolveError>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, name: Name) -> Self::Future {
        self.resolve(name.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_foreign_name_on_a_forbidden_address_is_refused_the_own_host_is_not() {
        let meta: IpAddr = "169.254.169.254".parse().expect("ip");
        let public: IpAddr = "93.184.216.34".parse().expect("ip");
        let own = vec!["archive.test".to_string()];
        let err = judge("Metadata.test", vec![public, meta], &own).expect_err("refused");
        assert_eq!(err.kind, "link-local");
        assert!(
            err.to_string().contains("metadata.test")
                && err.to_string().contains("169.254.169.254")
        );
        assert_eq!(judge("archive.test", vec![meta], &own), Ok(vec![meta]));
        assert_eq!(judge("other.test", vec![public], &own), Ok(vec![public]));
    }

    #[tokio::test]
    async fn the_resolver_refuses_before_returning_any_address() {
        let lookup = fixed_lookup(HashMap::from([(
            "metadata.test".to_string(),
            vec!["169.254.169.254".parse().expect("ip")],
        )]));
        let r = GuardedResolver::new(lookup, Vec::new());
        let err = r.resolve("metadata.test").await.expect_err("refused");
        let found = crate::upstream::failure::find_in_chain::<AddressRefused>(&*err);
        assert!(found.is_some(), "{err}");
    }

    #[tokio::test]
    async fn a_name_that_does_not_resolve_says_which_and_why() {
        let r = GuardedResolver::new(fixed_lookup(HashMap::new()), Vec::new());
        let err = r.resolve("web.archive.test").await.expect_err("unresolved");
        let found = crate::upstream::failure::find_in_chain::<NameNotResolved>(&*err);
        assert_eq!(found.map(|n| n.name.as_str()), Some("web.archive.test"));
        assert!(err
            .to_string()
            .starts_with("failed to resolve web.archive.test"));
    }
}
