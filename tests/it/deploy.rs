//! `deploy/compose.yml` and `deploy/nginx.conf` say what docs/replicas.md promises: each replica
//! is given 30 s to stop, reads its admin token from a secret the operator makes, publishes its
//! admin listener on the host's loopback only, and is reached by the public through the balancer
//! alone, which keeps `/admin/` and `/metrics` to the replicas. Read, not run (no Docker engine).

use std::collections::BTreeSet;
use yaml_rust2::{Yaml, YamlLoader};

fn repo_file(path: &str) -> String {
    let full = format!("{}/{path}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{full}: {e}"))
}

fn compose() -> Yaml {
    let text = repo_file("deploy/compose.yml");
    let mut docs = YamlLoader::load_from_str(&text).expect("deploy/compose.yml is YAML");
    assert_eq!(docs.len(), 1, "one document");
    docs.remove(0)
}

/// A service's key, looked up in the service and then in what it merges (`<<: *anchor`, which
/// compose reads as YAML's merge key and this parser leaves as a key named `<<`).
fn key<'a>(service: &'a Yaml, name: &str) -> &'a Yaml {
    match &service[name] {
        Yaml::BadValue => &service["<<"][name],
        found => found,
    }
}

fn strings(list: &Yaml) -> Vec<String> {
    list.as_vec()
        .map(|v| {
            v.iter()
                .filter_map(|s| s.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// The replicas: every service built from this repository.
fn replicas(doc: &Yaml) -> Vec<(String, &Yaml)> {
    let services = doc["services"].as_hash().expect("services");
    let found: Vec<(String, &Yaml)> = services
        .iter()
        .filter(|(_, s)| key(s, "build")["dockerfile"].as_str() == Some("Dockerfile"))
        .map(|(name, s)| (name.as_str().unwrap_or("").to_owned(), s))
        .collect();
    assert!(found.len() >= 2, "two replicas or more: {found:?}");
    found
}

#[test]
fn each_replica_has_the_stop_time_a_drain_needs() {
    let doc = compose();
    for (name, replica) in replicas(&doc) {
        // docs/operating.md: a stop drains and flushes for up to about 30 s.
        assert_eq!(
            key(replica, "stop_grace_period").as_str(),
            Some("30s"),
            "{name}"
        );
    }
    assert!(
        repo_file("docs/operating.md").contains("30"),
        "the 30 s is documented"
    );
}

#[test]
fn the_admin_token_comes_from_a_secret_the_operator_makes_never_the_environment() {
    let doc = compose();
    let declared = doc["secrets"].as_hash().expect("top-level secrets");
    for (name, replica) in replicas(&doc) {
        let env = key(replica, "environment");
        assert!(
            env["TMPROXY_ADMIN_TOKEN"].is_badvalue(),
            "{name}: a token in the environment"
        );
        let file = env["TMPROXY_ADMIN_TOKEN_FILE"]
            .as_str()
            .expect("TMPROXY_ADMIN_TOKEN_FILE");
        let secret = file
            .strip_prefix("/run/secrets/")
            .expect("a compose secret's path");
        assert!(
            strings(key(replica, "secrets")).iter().any(|s| s == secret),
            "{name} is not given the secret {secret}"
        );
        let source = &declared[&Yaml::String(secret.into())]["file"];
        assert!(source.as_str().is_some(), "secret {secret} names no file");
    }
    // The file it names is the operator's, never committed.
    assert!(repo_file(".gitignore")
        .lines()
        .any(|l| l == "/deploy/admin_token"));
}

#[test]
fn each_replicas_admin_listener_is_published_on_loopback_only() {
    let doc = compose();
    let mut host_ports = BTreeSet::new();
    for (name, replica) in replicas(&doc) {
        let listen = key(replica, "environment")["TMPROXY_ADMIN_LISTEN"]
            .as_str()
            .expect("TMPROXY_ADMIN_LISTEN");
        let admin_port = listen.rsplit(':').next().expect("a port");
        let ports = strings(key(replica, "ports"));
        assert!(
            !ports.is_empty(),
            "{name}: its admin listener is not reachable"
        );
        for p in &ports {
            // host-ip:host-port:container-port, the host side on loopback.
            let parts: Vec<&str> = p.split(':').collect();
            assert_eq!(parts.len(), 3, "{name}: {p} binds every interface");
            assert_eq!(parts[0], "127.0.0.1", "{name}: {p}");
            assert_eq!(
                parts[2], admin_port,
                "{name}: {p} is not the admin listener"
            );
            assert!(
                host_ports.insert(parts[1].to_owned()),
                "{p}: a host port twice"
            );
        }
        // The public listener is not published: clients go through the balancer.
        assert_eq!(strings(key(replica, "expose")), ["7089"], "{name}");
    }
    let replicas_md = repo_file("docs/replicas.md");
    for port in &host_ports {
        assert!(
            replicas_md.contains(port),
            "docs/replicas.md never says port {port}"
        );
    }
}

#[test]
fn the_balancer_reaches_every_replica_and_keeps_admin_and_metrics_off() {
    let doc = compose();
    let nginx = repo_file("deploy/nginx.conf");
    for (name, _) in replicas(&doc) {
        assert!(
            nginx.contains(&format!("server {name}:7089")),
            "{name} not balanced"
        );
    }
    assert!(nginx.contains("location /admin/ { return 404; }"));
    assert!(nginx.contains("location = /metrics { return 404; }"));
    let lb = &doc["services"]["lb"];
    assert_eq!(strings(&lb["ports"]), ["8080:80"]);
}

#[test]
fn every_variable_compose_sets_is_one_the_server_reads() {
    let doc = compose();
    let configuration = repo_file("docs/configuration.md");
    for (name, replica) in replicas(&doc) {
        let env = key(replica, "environment").as_hash().expect("environment");
        for var in env.keys().filter_map(Yaml::as_str) {
            // docs/configuration.md's table is checked against the code by the config tests.
            assert!(
                configuration.contains(&format!("| `{var}` |")),
                "{name}: {var} is not a variable tmproxy reads"
            );
        }
    }
}
