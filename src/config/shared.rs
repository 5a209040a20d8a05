//! `[cache] shared`, read once with the config: off, one Redis server, or a Redis Cluster's
//! seed nodes. The cache's shared tier (`cache/store/remote.rs`) connects to what this gives.

/// A validated `[cache] shared` value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SharedAddress {
    /// One server: `redis://…`, as the redis crate reads it.
    Single(String),
    /// A Redis Cluster's seed nodes, each `redis://HOST:PORT`.
    Cluster(Vec<String>),
}

impl SharedAddress {
    /// `Ok(None)` for empty (off); otherwise the address, or why it is not one.
    pub fn parse(text: &str) -> Result<Option<SharedAddress>, String> {
        let text = text.trim();
        if text.is_empty() {
            return Ok(None);
        }
        if let Some(nodes) = text.strip_prefix("redis+cluster://") {
            let nodes = nodes.trim_end_matches('/');
            let mut seeds = Vec::new();
            for node in nodes.split(',') {
                let url = url::Url::parse(&format!("redis://{}", node.trim()))
                    .map_err(|e| format!("{node:?} is not HOST:PORT: {e}"))?;
                match (url.host_str(), url.port(), url.path()) {
                    (Some(host), Some(port), "" | "/") if url.username().is_empty() => {
                        seeds.push(format!("redis://{host}:{port}"))
                    }
                    _ => return Err(format!("{node:?} is not HOST:PORT")),
                }
            }
            return Ok(Some(SharedAddress::Cluster(seeds)));
        }
        if text.starts_with("rediss://") {
            return Err(
                "TLS (rediss://) is not supported yet: use redis:// on a private network".into(),
            );
        }
        if !text.starts_with("redis://") {
            return Err(format!(
                "{text:?} is not a Redis URL: use redis://HOST:PORT/DB or redis+cluster://HOST:PORT,HOST:PORT,…"
            ));
        }
        redis::Client::open(text).map_err(|e| format!("{}: {e}", redacted(text)))?;
        Ok(Some(SharedAddress::Single(text.to_owned())))
    }

    /// The address for logs and `/healthz`: hosts only, never a password.
    pub fn display(&self) -> String {
        match self {
            SharedAddress::Single(url) => redacted(url),
            SharedAddress::Cluster(seeds) => {
                let hosts: Vec<&str> = seeds
                    .iter()
                    .map(|s| s.trim_start_matches("redis://"))
                    .collect();
                format!("redis+cluster://{}", hosts.join(","))
            }
        }
    }
}

/// `redis://HOST:PORT/DB` without any user or password.
fn redacted(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(u) => format!(
            "{}://{}:{}{}",
            u.scheme(),
            u.host_str().unwrap_or("?"),
            u.port().unwrap_or(6379),
            u.path()
        ),
        Err(_) => "<unparsable URL>".into(),
    }
}

impl SharedAddress {
    /// The address as the config file writes it, so it reads back the same (a password
    /// included: [`SharedAddress::display`] is the one for logs).
    pub fn text(&self) -> String {
        match self {
            SharedAddress::Single(url) => url.clone(),
            SharedAddress::Cluster(seeds) => {
                let nodes: Vec<&str> = seeds
                    .iter()
                    .map(|s| s.trim_start_matches("redis://"))
                    .collect();
                format!("redis+cluster://{}", nodes.join(","))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_parse_or_say_why() {
        assert_eq!(SharedAddress::parse("").expect("empty"), None);
        assert_eq!(
            SharedAddress::parse("redis://127.0.0.1:6379/2").expect("single"),
            Some(SharedAddress::Single("redis://127.0.0.1:6379/2".into()))
        );
        assert_eq!(
            SharedAddress::parse("redis+cluster://10.0.0.1:7000, 10.0.0.2:7001").expect("cluster"),
            Some(SharedAddress::Cluster(vec![
                "redis://10.0.0.1:7000".into(),
                "redis://10.0.0.2:7001".into()
            ]))
        );
        for bad in [
            "http://x:1",
            "localhost:6379",
            "redis+cluster://a:1,",
            "redis+cluster://a",
            "redis+cluster://a:1/x",
            "rediss://h:1",
        ] {
            assert!(SharedAddress::parse(bad).is_err(), "{bad} accepted");
        }
    }

    #[test]
    fn logs_never_show_a_password() {
        let address = SharedAddress::parse("redis://user:secret@h:6380/1")
            .expect("valid")
            .expect("on");
        let shown = address.display();
        assert!(!shown.contains("secret"), "{shown}");
        assert!(shown.contains("h:6380"), "{shown}");
    }

    #[test]
    fn an_address_reads_back_as_written() {
        for text in [
            "redis://u:p@h:6380/1",
            "redis+cluster://10.0.0.1:7000,10.0.0.2:7001",
        ] {
            let address = SharedAddress::parse(text).expect(text).expect("on");
            assert_eq!(address.text(), text);
        }
    }
}
