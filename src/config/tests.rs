use super::*;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

const SHIPPED: &str = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/config.toml"));

fn parse(text: &str) -> Result<Config, ConfigError> {
    Config::from_toml_str(text, "./config.toml")
}

fn vars(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let map: HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    move |k| map.get(k).cloned()
}

fn ids(cfg: &Config) -> Vec<&str> {
    cfg.archives.iter().map(|a| a.id.as_str()).collect()
}

fn enabled(cfg: &Config) -> Vec<&str> {
    cfg.archives
        .iter()
        .filter(|a| a.enabled)
        .map(|a| a.id.as_str())
        .collect()
}

const ONE_ARCHIVE: &str = r#"
[[archives]]
id = "x"
timemap = "https://x.example/timemap/link/"
timegate = "https://x.example/"
"#;

#[test]
fn shipped_config_equals_defaults() {
    let cfg = parse(SHIPPED).expect("shipped config.toml parses");
    assert_eq!(cfg, Config::default());
    cfg.validate().expect("shipped config validates");
}

#[test]
fn defaults_have_the_documented_values() {
    let c = Config::default();
    assert_eq!(c.server.listen.to_string(), "127.0.0.1:7089");
    assert_eq!(c.public_url(), "http://127.0.0.1:7089");
    assert_eq!(c.upstream.connect_timeout, Duration::from_secs(3));
    assert_eq!(c.upstream.timeout, Duration::from_secs(10));
    assert_eq!(c.upstream.deadline, Duration::from_secs(15));
    assert_eq!(c.upstream.max_body, 128 << 20);
    assert_eq!(c.upstream.max_buffered, 512 << 20);
    assert!(c.archives.iter().all(|a| a.redirect_hosts.is_empty()));
    assert_eq!(c.upstream.max_pages, 10);
    assert_eq!(c.upstream.failures_before_dormant, 5);
    assert_eq!(c.upstream.dormant_for, Duration::from_secs(300));
    assert_eq!(
        ids(&c),
        [
            "ia",
            "archive-it",
            "arquivo",
            "archive.today",
            "perma",
            "is",
            "ukwa",
            "parliament.uk",
            "nrs",
            "lac",
            "banq",
            "nla",
            "ndl"
        ]
    );
    assert!(c.archives.iter().all(|a| a.enabled && a.timeout.is_none()));
    let ia = &c.archives[0];
    assert_eq!(
        ia.timemap.as_ref().map(HttpUrl::as_str),
        Some("https://web.archive.org/web/timemap/link/")
    );
    assert_eq!(ia.timegate, "https://web.archive.org/web/");
}

#[test]
fn every_env_override_is_documented_in_config_toml() {
    for (var, _) in ENV_OVERRIDES {
        assert!(
            SHIPPED.contains(var),
            "{var} is not mentioned in config.toml"
        );
    }
    assert!(SHIPPED.contains(CONFIG_ENV));
}

/// The text between `heading` (a whole line) and the next heading of the same level or higher.
fn doc_section<'a>(doc: &'a str, heading: &str) -> Option<&'a str> {
    let start = doc.find(&format!("\n{heading}\n"))? + heading.len() + 2;
    let rest = &doc[start..];
    Some(rest.split("\n## ").next().unwrap_or(rest))
}

const CONFIGURATION_MD: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/docs/configuration.md"
));

/// docs/configuration.md's "Environment overrides" section names exactly the variables the code
/// reads.
#[test]
fn configuration_md_lists_exactly_the_env_overrides() {
    let section = doc_section(CONFIGURATION_MD, "## Environment overrides")
        .expect("docs/configuration.md has an Environment overrides section");
    let named: std::collections::BTreeSet<&str> = section
        .split('`')
        .map(|w| w.trim_start_matches('$'))
        .filter(|w| {
            w.starts_with("TMPROXY_") && w.bytes().all(|b| b.is_ascii_uppercase() || b == b'_')
        })
        .collect();
    let mut read: std::collections::BTreeSet<&str> =
        ENV_OVERRIDES.iter().map(|(var, _)| *var).collect();
    read.extend(OTHER_VARIABLES.iter().copied());
    assert_eq!(named, read);
}

/// Every key the shipped config.toml documents, as `[section] key` (`[[archives]] key` for an
/// archive entry's). config.toml writes a key as `key = value` under its `[section]` header, or
/// commented out as `# key = value` (a key whose default cannot be written, such as
/// `connect_timeout`); an archive entry's keys are listed once, in the comment block that starts
/// `# Keys of each entry:`, as lines `#   key   meaning` (a key indented by exactly three
/// spaces; its continuation lines are indented further).
fn keys_in_config_toml(text: &str) -> std::collections::BTreeSet<String> {
    let mut keys = std::collections::BTreeSet::new();
    let mut section = String::new();
    let mut in_entry_keys = false;
    for line in text.lines() {
        let line = line.trim_end();
        if line.starts_with('[') {
            section = line.to_string();
            continue;
        }
        if line == "# Keys of each entry:" {
            in_entry_keys = true;
            continue;
        }
        if in_entry_keys {
            match line.strip_prefix("#   ") {
                Some(rest) if !rest.starts_with(' ') => {
                    let key = rest.split_whitespace().next().unwrap_or_default();
                    keys.insert(format!("[[archives]] {key}"));
                }
                Some(_) => {}
                None if line == "#" => in_entry_keys = false,
                None => {}
            }
            continue;
        }
        let code = line.strip_prefix("# ").unwrap_or(line);
        let Some((key, _)) = code.split_once(" = ") else {
            continue;
        };
        // A key starts with a letter: a comment such as `# 0s = off` names no key.
        let is_key = key.starts_with(|c: char| c.is_ascii_lowercase())
            && key
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
        if is_key && !section.is_empty() {
            keys.insert(format!("{section} {key}"));
        }
    }
    keys
}

/// The keys docs/configuration.md documents: the first cell of every table row whose first cell
/// is a backquoted `[section] key` or `[[archives]] key` (so prose that mentions a key does not
/// count, and a key's row is the one place it is listed).
fn keys_in_configuration_md(doc: &str) -> std::collections::BTreeSet<String> {
    doc.lines()
        .filter_map(|line| line.strip_prefix("| `["))
        .filter_map(|rest| rest.split('`').next())
        .map(|cell| format!("[{cell}"))
        .filter(|cell| {
            let Some((section, key)) = cell.split_once(' ') else {
                return false;
            };
            section.starts_with('[')
                && section.ends_with(']')
                && !key.is_empty()
                && key.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')
        })
        .collect()
}

/// docs/configuration.md lists exactly the keys config.toml documents: none missing, none
/// invented. (config.toml itself is kept equal to the defaults, and unknown keys are refused,
/// by the tests above.)
#[test]
fn configuration_md_lists_exactly_the_config_keys() {
    let shipped = keys_in_config_toml(SHIPPED);
    // The parse found each section's keys, commented-out ones and the archive entries' too.
    for key in [
        "[server] listen",
        "[upstream] connect_timeout",
        "[cache] match",
        "[routing] max_per_client",
        "[[archives]] redirect_hosts",
        "[[archives]] kind",
        "[sampling] max_memory",
    ] {
        assert!(
            shipped.contains(key),
            "{key} not found in config.toml: {shipped:?}"
        );
    }
    let documented = keys_in_configuration_md(CONFIGURATION_MD);
    let missing: Vec<_> = shipped.difference(&documented).collect();
    let invented: Vec<_> = documented.difference(&shipped).collect();
    assert!(
        missing.is_empty() && invented.is_empty(),
        "docs/configuration.md lacks {missing:?} and lists unknown {invented:?}"
    );
}

/// Every key of the config structs is in config.toml: the default config, serialized, has no
/// key that config.toml does not document (archive entries aside: their optional keys are not
/// serialized at their defaults, and are checked against the comment block above).
#[test]
fn config_toml_documents_every_key_of_the_config_structs() {
    let shipped = keys_in_config_toml(SHIPPED);
    let value = toml::Value::try_from(Config::default()).expect("serializes");
    let table = value.as_table().expect("a table");
    let mut from_structs = std::collections::BTreeSet::new();
    for (section, body) in table {
        if let Some(keys) = body.as_table() {
            for key in keys.keys() {
                from_structs.insert(format!("[{section}] {key}"));
            }
        }
    }
    let archive = toml::Value::try_from(&Config::default().archives[0]).expect("serializes");
    for key in archive.as_table().expect("a table").keys() {
        from_structs.insert(format!("[[archives]] {key}"));
    }
    let undocumented: Vec<_> = from_structs.difference(&shipped).collect();
    assert!(
        undocumented.is_empty(),
        "not in config.toml: {undocumented:?}"
    );
}

#[test]
fn parse_duration_accepts_units_and_combinations() {
    let ok = [
        ("500ms", Duration::from_millis(500)),
        ("2s", Duration::from_secs(2)),
        ("5m", Duration::from_secs(300)),
        ("1h", Duration::from_secs(3600)),
        ("15d", Duration::from_secs(15 * 86400)),
        ("1w", Duration::from_secs(7 * 86400)),
        ("1h30m", Duration::from_secs(5400)),
        ("1m30s250ms", Duration::from_millis(90_250)),
        (" 10s ", Duration::from_secs(10)),
        ("0s", Duration::ZERO),
    ];
    for (s, want) in ok {
        assert_eq!(parse_duration(s), Ok(want), "{s}");
    }
}

#[test]
fn parse_duration_refuses_bad_input() {
    let no_unit = parse_duration("10").unwrap_err();
    assert!(no_unit.contains("unit is required"), "{no_unit}");
    assert_eq!(
        parse_duration("10x").unwrap_err(),
        r#""10x" is not a duration (use e.g. "10s", "500ms", "15d")"#
    );
    for bad in [
        "", "s", "1.5s", "-1s", "10 s", "1S", "ms", "10s5", "5m5m", "30m1h",
    ] {
        assert!(parse_duration(bad).is_err(), "{bad:?} should be refused");
    }
    let order = parse_duration("30m1h").unwrap_err();
    assert!(order.contains("largest to smallest"), "{order}");
    let big = parse_duration("99999999999999999999w").unwrap_err();
    assert!(big.contains("too large"), "{big}");
    assert!(parse_duration("9999999999999999w")
        .unwrap_err()
        .contains("too large"));
}

#[test]
fn format_duration_is_the_inverse() {
    let cases = [
        (Duration::ZERO, "0s"),
        (Duration::from_millis(500), "500ms"),
        (Duration::from_secs(3), "3s"),
        (Duration::from_secs(300), "5m"),
        (Duration::from_secs(5400), "1h30m"),
        (Duration::from_secs(15 * 86400), "15d"),
        (Duration::from_secs(14 * 86400), "2w"),
        (Duration::from_millis(90_250), "1m30s250ms"),
    ];
    for (d, s) in cases {
        assert_eq!(format_duration(d), s);
        assert_eq!(parse_duration(s), Ok(d));
    }
}

#[test]
fn parse_size_accepts_binary_decimal_and_bytes() {
    let ok = [
        ("256MiB", 256 << 20),
        ("64KiB", 64 << 10),
        ("1GiB", 1 << 30),
        ("2TiB", 2 << 40),
        ("100MB", 100_000_000),
        ("64kB", 64_000),
        ("64KB", 64_000),
        ("1GB", 1_000_000_000),
        ("512B", 512),
        ("512", 512),
        ("0", 0),
        ("128 MiB", 128 << 20),
        ("100mb", 100_000_000),
    ];
    for (s, want) in ok {
        assert_eq!(parse_size(s), Ok(want), "{s}");
    }
}

#[test]
fn parse_size_refuses_bad_input() {
    for bad in ["", "MiB", "1.5GiB", "-1", "10 parsecs", "12XB", "1MiBs"] {
        let e = parse_size(bad).unwrap_err();
        assert!(e.contains("is not a size"), "{bad:?}: {e}");
    }
    assert!(parse_size("99999999999TiB")
        .unwrap_err()
        .contains("too large"));
    assert!(parse_size("99999999999999999999")
        .unwrap_err()
        .contains("too large"));
}

#[test]
fn format_size_round_trips() {
    for (n, s) in [
        (0, "0B"),
        (512, "512B"),
        (128 << 20, "128MiB"),
        (64_000, "64kB"),
        (1_000_000_000_000, "1TB"),
        (1_000_001, "1000001B"),
    ] {
        assert_eq!(format_size(n), s);
        assert_eq!(parse_size(s), Ok(n));
    }
}

#[test]
fn missing_keys_take_defaults() {
    let cfg = parse("[upstream]\ntimeout = \"20s\"\n").unwrap();
    let mut want = Config::default();
    want.upstream.timeout = Duration::from_secs(20);
    assert_eq!(cfg, want);
    assert_eq!(parse("").unwrap(), Config::default());
}

#[test]
fn archives_in_the_file_replace_the_defaults() {
    let text = format!("{ONE_ARCHIVE}timeout = \"30s\"\n");
    let cfg = parse(&text).unwrap();
    assert_eq!(ids(&cfg), ["x"]);
    let x = &cfg.archives[0];
    assert_eq!(x.name, "x", "name defaults to the id");
    assert!(x.enabled);
    assert_eq!(cfg.archive_timeout(x), Duration::from_secs(30));
    let ia = &Config::default().archives[0];
    assert_eq!(cfg.archive_timeout(ia), cfg.upstream.timeout);
}

#[test]
fn unknown_key_is_refused_with_its_name() {
    let e = parse("[server]\nlisten = \"127.0.0.1:1\"\nlisen = \"x\"\n").unwrap_err();
    assert_eq!(e.origin, "./config.toml");
    assert_eq!(e.key, "server.lisen");
    assert!(e.reason.contains("unknown field `lisen`"), "{e}");
    assert!(e.reason.contains("line 3"), "{e}");

    let e = parse("[cahce]\nsize = 1\n").unwrap_err();
    assert_eq!(e.key, "cahce");
    assert!(e.reason.contains("unknown field `cahce`"), "{e}");

    let e = parse("[cache]\nsize = 1\n").unwrap_err();
    assert_eq!(e.key, "cache.size");

    let e = parse(&format!("{ONE_ARCHIVE}{ONE_ARCHIVE}url = \"y\"\n")).unwrap_err();
    assert_eq!(e.key, "archives[1].url");
}

#[test]
fn bad_value_is_refused_naming_file_key_and_reason() {
    let e = parse("[upstream]\ntimeout = \"10x\"\n").unwrap_err();
    assert_eq!(
        e.to_string(),
        r#"config ./config.toml: upstream.timeout: "10x" is not a duration (use e.g. "10s", "500ms", "15d")"#
    );
    let e = parse("[upstream]\ndeadline = 15\n").unwrap_err();
    assert_eq!(e.key, "upstream.deadline");
    assert!(e.reason.contains("unit is required"), "{e}");
    let e = parse("[upstream]\nmax_body = \"lots\"\n").unwrap_err();
    assert_eq!(e.key, "upstream.max_body");
    let e = parse("[server]\nlisten = \"localhost\"\n").unwrap_err();
    assert_eq!(e.key, "server.listen");
    assert!(e.reason.contains("IP:port"), "{e}");
    let e = parse(&format!("{ONE_ARCHIVE}timeout = \"soon\"\n")).unwrap_err();
    assert_eq!(e.key, "archives[0].timeout");
}

#[test]
fn toml_type_and_syntax_errors_carry_key_and_line() {
    let e = parse("[upstream]\n\nmax_pages = \"ten\"\n").unwrap_err();
    assert_eq!(e.key, "upstream.max_pages");
    assert!(e.reason.contains("invalid type"), "{e}");
    assert!(e.reason.contains("line 3"), "{e}");

    let e = parse("[server]\nlisten = \"127.0.0.1:1\n").unwrap_err();
    assert_eq!(e.origin, "./config.toml");
    assert!(e.reason.contains("line 2"), "{e}");
    assert!(!e.reason.contains('\n'));

    let e = parse("[[archives]]\nid = \"x\"\n").unwrap_err();
    assert!(e.key.starts_with("archives"), "{e}");
    assert!(e.reason.contains("missing field"), "{e}");
}

#[test]
fn duplicate_archive_id_is_refused() {
    let text = format!("{ONE_ARCHIVE}{ONE_ARCHIVE}");
    let e = parse(&text).unwrap().validate().unwrap_err();
    assert_eq!(e.key, "archives[1].id");
    assert!(e.reason.contains("duplicate id \"x\""), "{e}");
}

#[test]
fn validate_refuses_bad_values() {
    let check = |edit: &dyn Fn(&mut Config), key: &str| {
        let mut c = Config::default();
        edit(&mut c);
        let e = c.validate().expect_err(key);
        assert_eq!(e.key, key, "{e}");
    };
    check(&|c| c.archives[2].id = "Arquivo".into(), "archives[2].id");
    for bad in [
        "localhost:6379",
        "http://h:1/",
        "redis+cluster://h",
        "rediss://h:1",
    ] {
        // Refused as the file or the variable is read, under its key: a config built in code
        // cannot hold one.
        let e = parse(&format!("[cache]\nshared = {bad:?}\n")).expect_err(bad);
        assert_eq!(e.key, "cache.shared", "{e}");
        let e = Config::default()
            .apply_env(vars(&[("TMPROXY_CACHE_SHARED", bad)]))
            .expect_err(bad);
        assert_eq!(e.key, "cache.shared", "{e}");
        assert_eq!(e.origin, "env TMPROXY_CACHE_SHARED", "{e}");
    }
    check(&|c| c.archives[2].id = "a b".into(), "archives[2].id");
    check(&|c| c.archives[0].id = String::new(), "archives[0].id");
    // A bad archive URL is refused as the file is read, under its key: a config built in code
    // cannot hold one.
    for (field, bad, key) in [
        ("timemap", "/relative/", "archives[1].timemap"),
        ("timegate", "ftp://x.example/", "archives[1].timegate"),
    ] {
        let second = ONE_ARCHIVE.replace("\"x\"", "\"y\"").replace(
            &format!("{field} = \"https://x.example/"),
            &format!("{field} = \"{bad}"),
        );
        let e = parse(&format!("{ONE_ARCHIVE}{second}")).expect_err(key);
        assert_eq!(e.key, key, "{e}");
    }
    check(
        &|c| c.archives[3].timeout = Some(Duration::ZERO),
        "archives[3].timeout",
    );
    check(&|c| c.upstream.timeout = Duration::ZERO, "upstream.timeout");
    check(
        &|c| c.upstream.connect_timeout = Duration::ZERO,
        "upstream.connect_timeout",
    );
    check(
        &|c| c.upstream.connect_timeout = Duration::from_secs(11),
        "upstream.connect_timeout",
    );
    check(
        &|c| c.upstream.deadline = Duration::ZERO,
        "upstream.deadline",
    );
    check(&|c| c.upstream.max_body = 0, "upstream.max_body");
    check(&|c| c.upstream.max_buffered = 0, "upstream.max_buffered");
    // A bad redirect host is refused as the file is read, named by its entry.
    let five: String = (0..4)
        .map(|i| ONE_ARCHIVE.replace("id = \"x\"", &format!("id = \"x{i}\"")))
        .collect();
    let e = parse(&format!(
        "{five}{ONE_ARCHIVE}redirect_hosts = [\"ok.example\", \"http://x.example/\"]\n"
    ))
    .expect_err("a URL is not a host");
    assert_eq!(e.key, "archives[4].redirect_hosts[1]", "{e}");
    assert_eq!(e.origin, "./config.toml", "{e}");
    assert!(
        e.reason.starts_with("\"http://x.example/\" is not a host"),
        "{e}"
    );
    check(&|c| c.upstream.max_pages = 0, "upstream.max_pages");
    check(
        &|c| c.cache.persistent_cache = 1024 * 1024 - 1,
        "cache.persistent_cache",
    );
    check(
        &|c| c.upstream.user_agent = " ".into(),
        "upstream.user_agent",
    );
    check(
        &|c| c.upstream.dormant_for = Duration::ZERO,
        "upstream.dormant_for",
    );
    check(
        &|c| c.server.public_url = "example.org".into(),
        "server.public_url",
    );
    check(
        &|c| c.server.public_url = "mailto:x@example.org".into(),
        "server.public_url",
    );
    check(&|c| c.server.page_size = 0, "server.page_size");
    check(&|c| c.server.page_size = 1_000_001, "server.page_size");
}

#[test]
fn validate_allows_edge_cases() {
    let mut c = Config::default();
    for a in &mut c.archives {
        a.enabled = false;
    }
    c.upstream.failures_before_dormant = 0;
    c.upstream.dormant_for = Duration::ZERO;
    c.upstream.connect_timeout = c.upstream.timeout;
    c.server.public_url = "https://tm.example.org/base".into();
    c.cache.shared =
        SharedAddress::parse("redis+cluster://10.0.0.1:7000,10.0.0.2:7000").expect("a cluster");
    c.validate()
        .expect("all disabled, no dormancy, equal timeouts are fine");
    for size in [1, 1_000_000] {
        c.server.page_size = size;
        c.validate().expect("page_size at either end of its range");
    }
    c.archives.clear();
    c.validate().expect("no archives at all is fine");
}

#[test]
fn public_url_drops_trailing_slash_and_defaults_to_listen() {
    let cfg =
        parse("[server]\nlisten = \"[::1]:8080\"\npublic_url = \"https://tm.example.org/\"\n")
            .unwrap();
    assert_eq!(cfg.server.public_url, "https://tm.example.org");
    assert_eq!(cfg.public_url(), "https://tm.example.org");
    let cfg = parse("[server]\nlisten = \"[::1]:8080\"\n").unwrap();
    assert_eq!(cfg.public_url(), "http://[::1]:8080");
}

#[test]
fn env_overrides_apply() {
    let mut c = Config::default();
    c.apply_env(vars(&[
        ("TMPROXY_LISTEN", "0.0.0.0:9000"),
        ("TMPROXY_PUBLIC_URL", "https://tm.example.org/"),
        ("TMPROXY_UPSTREAM_TIMEOUT", "20s"),
        ("TMPROXY_UPSTREAM_DEADLINE", "1m"),
        ("TMPROXY_UPSTREAM_CONNECT_TIMEOUT", "500ms"),
        ("TMPROXY_MAX_BODY", "1GiB"),
        ("TMPROXY_USER_AGENT", "test-agent/1"),
        ("TMPROXY_ARCHIVES", " ia, arquivo ,"),
        ("TMPROXY_CACHE_SHARED", "redis://127.0.0.1:6379/1"),
    ]))
    .unwrap();
    assert_eq!(
        c.cache.shared,
        Some(SharedAddress::Single("redis://127.0.0.1:6379/1".into()))
    );
    assert_eq!(c.server.listen.to_string(), "0.0.0.0:9000");
    assert_eq!(c.public_url(), "https://tm.example.org");
    assert_eq!(c.upstream.timeout, Duration::from_secs(20));
    assert_eq!(c.upstream.deadline, Duration::from_secs(60));
    assert_eq!(c.upstream.connect_timeout, Duration::from_millis(500));
    assert_eq!(c.upstream.max_body, 1 << 30);
    assert_eq!(c.upstream.user_agent, "test-agent/1");
    assert_eq!(enabled(&c), ["ia", "arquivo"]);
    assert_eq!(c.archives.len(), Config::default().archives.len());

    let mut untouched = Config::default();
    untouched.apply_env(vars(&[])).unwrap();
    assert_eq!(untouched, Config::default());
}

#[test]
fn the_admin_token_is_read_from_the_file_a_variable_names() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("admin_token");
    std::fs::write(&path, "s3cret-token\n").expect("write");
    let file = path.display().to_string();
    let mut c = Config::default();
    c.apply_env(vars(&[("TMPROXY_ADMIN_TOKEN_FILE", &file)]))
        .expect("a readable token file");
    assert_eq!(c.admin.token, "s3cret-token");
    // Each refusal names the variable, and the file where there is one.
    let empty = dir.path().join("empty");
    std::fs::write(&empty, "\n").expect("write");
    let big = dir.path().join("big");
    std::fs::write(&big, "x".repeat(5000)).expect("write");
    let missing = dir.path().join("missing").display().to_string();
    let cases = [
        (
            vec![("TMPROXY_ADMIN_TOKEN_FILE", missing.clone())],
            missing.clone(),
        ),
        (
            vec![("TMPROXY_ADMIN_TOKEN_FILE", empty.display().to_string())],
            "is empty".into(),
        ),
        (
            vec![("TMPROXY_ADMIN_TOKEN_FILE", big.display().to_string())],
            "not a token".into(),
        ),
        (
            vec![
                ("TMPROXY_ADMIN_TOKEN_FILE", file.clone()),
                ("TMPROXY_ADMIN_TOKEN", "other".into()),
            ],
            "set one of the two".into(),
        ),
    ];
    for (set, says) in cases {
        let pairs: Vec<(&str, &str)> = set.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let e = Config::default()
            .apply_env(vars(&pairs))
            .expect_err("refused")
            .to_string();
        assert!(e.contains("env TMPROXY_ADMIN_TOKEN_FILE"), "{e}");
        assert!(e.contains(&says), "{e}");
    }
}

#[test]
fn an_unknown_tmproxy_variable_is_refused_naming_the_nearest_known_one() {
    let names = |n: &[&str]| n.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let e = check_variable_names(names(&["PATH", "TMPROXY_LISTN"]))
        .expect_err("a misspelt override")
        .to_string();
    assert!(e.contains("env TMPROXY_LISTN"), "{e}");
    assert!(e.contains("did you mean TMPROXY_LISTEN?"), "{e}");
    let e = check_variable_names(names(&["TMPROXY_NOTHING_LIKE_IT_AT_ALL"]))
        .expect_err("unknown")
        .to_string();
    assert!(e.contains("not a variable tmproxy reads"), "{e}");
    assert!(!e.contains("did you mean"), "{e}");
    // Every variable it reads, the test suite's own, and anything not ours pass.
    let mut fine: Vec<String> = ENV_OVERRIDES.iter().map(|(v, _)| v.to_string()).collect();
    fine.extend(OTHER_VARIABLES.iter().map(|v| v.to_string()));
    fine.extend(names(&[
        "TMPROXY_TEST_SEED",
        "TMPROXY_PYWB_VENV",
        "HOME",
        "RUST_LOG",
    ]));
    assert_eq!(check_variable_names(fine), Ok(()));
}

#[test]
fn a_value_a_variable_set_that_validation_refuses_names_the_variable() {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(
        dir.path().join("config.toml"),
        "[server]\nlisten = \"127.0.0.1:7089\"\n",
    )
    .expect("write");
    for (var, value, key) in [
        (
            "TMPROXY_PUBLIC_URL",
            "ftp://tm.example.org",
            "server.public_url",
        ),
        ("TMPROXY_UPSTREAM_DEADLINE", "0s", "upstream.deadline"),
        ("TMPROXY_ADMIN_LISTEN", "127.0.0.1:7089", "admin.listen"),
    ] {
        let e = Config::load_from(None, vars(&[(var, value)]), dir.path())
            .expect_err(var)
            .to_string();
        assert!(e.starts_with(&format!("config env {var}: {key}:")), "{e}");
    }
    // The same value in the file is the file's.
    std::fs::write(
        dir.path().join("config.toml"),
        "[upstream]\ndeadline = \"0s\"\n",
    )
    .expect("write");
    let e = Config::load_from(None, vars(&[]), dir.path())
        .expect_err("0s")
        .to_string();
    assert!(e.contains("config.toml: upstream.deadline:"), "{e}");
}

#[test]
fn the_data_directory_is_data_dir_else_the_cache_paths_parent() {
    let mut c = Config::default();
    c.cache.path = "/srv/x/cache".into();
    assert_eq!(c.data_dir(), PathBuf::from("/srv/x"));
    assert_eq!(
        crate::routing::profiles_path(&c),
        PathBuf::from("/srv/x/routing/profiles.bin")
    );
    c.apply_env(vars(&[("TMPROXY_DATA_DIR", "/var/lib/tmproxy-state")]))
        .expect("a directory");
    assert_eq!(c.data_dir(), PathBuf::from("/var/lib/tmproxy-state"));
    assert_eq!(
        crate::routing::profiles_path(&c),
        PathBuf::from("/var/lib/tmproxy-state/routing/profiles.bin")
    );
    let c = parse("[server]\ndata_dir = \"state\"\n").expect("parses");
    assert_eq!(c.data_dir(), PathBuf::from("state"));
}

#[test]
fn bad_env_values_name_the_variable() {
    let mut c = Config::default();
    let e = c
        .apply_env(vars(&[("TMPROXY_UPSTREAM_TIMEOUT", "10")]))
        .unwrap_err();
    assert_eq!(e.origin, "env TMPROXY_UPSTREAM_TIMEOUT");
    assert_eq!(e.key, "upstream.timeout");
    assert!(e
        .to_string()
        .starts_with("config env TMPROXY_UPSTREAM_TIMEOUT: upstream.timeout: "));

    let e = c
        .apply_env(vars(&[("TMPROXY_MAX_BODY", "big")]))
        .unwrap_err();
    assert_eq!(e.origin, "env TMPROXY_MAX_BODY");
    let e = c
        .apply_env(vars(&[("TMPROXY_LISTEN", "nowhere")]))
        .unwrap_err();
    assert_eq!(e.origin, "env TMPROXY_LISTEN");
    let e = c
        .apply_env(vars(&[("TMPROXY_ARCHIVES", "ia,nope")]))
        .unwrap_err();
    assert_eq!(e.origin, "env TMPROXY_ARCHIVES");
    assert!(e.reason.contains("\"nope\""), "{e}");
    let e = c
        .apply_env(vars(&[("TMPROXY_ARCHIVES", " , ")]))
        .unwrap_err();
    assert!(e.reason.contains("no archive ids"), "{e}");
}

#[test]
fn serialized_config_reads_back_equal() {
    let mut c = Config::default();
    c.archives[0].timeout = Some(Duration::from_millis(2500));
    c.archives[1].redirect_hosts = ["moved.example.org", "[::1]:8080"]
        .map(|h| RedirectHost::parse(h).expect(h))
        .to_vec();
    c.cache.shared =
        SharedAddress::parse("redis+cluster://10.0.0.1:7000, 10.0.0.2:7001").expect("a cluster");
    c.upstream.max_buffered = 8 << 20;
    c.server.public_url = "https://tm.example.org".into();
    let text = toml::to_string(&c).expect("serializes");
    assert_eq!(parse(&text).unwrap(), c);
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).expect("write temp file");
    p
}

#[test]
fn load_reads_an_explicit_file_and_validates_it() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), "mine.toml", "[upstream]\nmax_pages = 3\n");
    let (cfg, origin) = Config::load(Some(&p)).unwrap();
    assert_eq!(cfg.upstream.max_pages, 3);
    assert_eq!(origin, p.display().to_string());

    let bad = write(
        dir.path(),
        "bad.toml",
        &format!("{ONE_ARCHIVE}{ONE_ARCHIVE}"),
    );
    let e = Config::load(Some(&bad)).unwrap_err();
    assert_eq!(e.origin, bad.display().to_string());
    assert_eq!(e.key, "archives[1].id");

    let e = Config::load(Some(&dir.path().join("missing.toml"))).unwrap_err();
    assert_eq!(e.key, "(file)");
    assert!(e.reason.starts_with("cannot read"), "{e}");
}

#[test]
fn load_precedence_explicit_then_env_then_cwd_then_defaults() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path();
    let explicit = write(cwd, "explicit.toml", "[upstream]\nmax_pages = 1\n");
    write(cwd, "from-env.toml", "[upstream]\nmax_pages = 2\n");
    let env_path = || vars(&[(CONFIG_ENV, "from-env.toml")]);

    // Nothing anywhere: built-in defaults.
    let (cfg, origin) = Config::load_from(None, vars(&[]), cwd).unwrap();
    assert_eq!((cfg, origin.as_str()), (Config::default(), BUILTIN_ORIGIN));

    // ./config.toml beats the defaults.
    let local = write(cwd, DEFAULT_FILE, "[upstream]\nmax_pages = 3\n");
    let (cfg, origin) = Config::load_from(None, vars(&[]), cwd).unwrap();
    assert_eq!(cfg.upstream.max_pages, 3);
    assert_eq!(origin, local.display().to_string());

    // TMPROXY_CONFIG (relative to cwd) beats ./config.toml.
    let (cfg, _) = Config::load_from(None, env_path(), cwd).unwrap();
    assert_eq!(cfg.upstream.max_pages, 2);

    // --config beats TMPROXY_CONFIG.
    let (cfg, origin) = Config::load_from(Some(&explicit), env_path(), cwd).unwrap();
    assert_eq!(cfg.upstream.max_pages, 1);
    assert_eq!(origin, explicit.display().to_string());

    // Env overrides apply on top of whichever file won, then validation runs.
    let get = vars(&[(CONFIG_ENV, "from-env.toml"), ("TMPROXY_ARCHIVES", "nla")]);
    let (cfg, _) = Config::load_from(None, get, cwd).unwrap();
    assert_eq!(enabled(&cfg), ["nla"]);
    let get = vars(&[("TMPROXY_UPSTREAM_CONNECT_TIMEOUT", "1h")]);
    let e = Config::load_from(None, get, cwd).unwrap_err();
    assert_eq!(e.key, "upstream.connect_timeout");

    // A TMPROXY_CONFIG naming a missing file is an error, not a fall-through.
    let e = Config::load_from(None, vars(&[(CONFIG_ENV, "nope.toml")]), cwd).unwrap_err();
    assert_eq!(e.key, "(file)");
}

#[test]
fn cache_defaults_are_the_papers() {
    let c = Config::default().cache;
    assert_eq!(
        (c.policy.as_str(), c.matching.as_str()),
        ("conditional", "loose")
    );
    assert_eq!(c.ttl, Duration::from_secs(15 * 86_400));
    assert_eq!(c.hot_capacity, 256 * 1024 * 1024);
    assert_eq!(c.persistent_cache, 32 * 1024 * 1024);
    assert_eq!(c.path, "data/cache");
    assert_eq!(c.redaction_confirmations, 2);
}

#[test]
fn cache_policy_and_match_are_checked() {
    let cfg =
        parse("[cache]\npolicy = \"merge\"\nmatch = \"strict\"\nttl = \"0s\"\n").expect("parses");
    assert!(cfg.validate().is_ok());
    assert_eq!(cfg.cache.matching, tmproxy_core::policy::Match::Strict);
    // Refused as the file is read, under its key.
    let e = parse("[cache]\npolicy = \"lru\"\n").unwrap_err();
    assert_eq!(e.key, "cache.policy");
    assert!(
        e.reason
            .contains("\"lru\" is not a policy: use conditional, merge"),
        "{e}"
    );
    assert_eq!(
        parse("[cache]\nmatch = \"fuzzy\"\n").unwrap_err().key,
        "cache.match"
    );
}

#[test]
fn adaptive_ttl_keys_parse_default_and_are_checked() {
    let c = Config::default().cache;
    assert_eq!(c.ttl_mode, crate::config::TtlModeName::Fixed);
    assert_eq!(
        (c.ttl_min, c.ttl_max),
        (
            Duration::from_secs(86_400),
            Duration::from_secs(90 * 86_400)
        )
    );
    let cfg = parse(
        "[cache]\nttl_mode = \"adaptive\"\nttl_min = \"6h\"\nttl_max = \"30d\"\nttl_budget = 0.5\n",
    )
    .expect("parses");
    cfg.validate().expect("validates");
    assert_eq!(cfg.cache.ttl_mode, crate::config::TtlModeName::Adaptive);
    assert_eq!(cfg.cache.ttl_min, Duration::from_secs(6 * 3600));
    assert_eq!(cfg.cache.ttl_budget, 0.5);
    // The policy the server builds from it.
    let p = crate::app::policy_of(&cfg).expect("a policy");
    assert_eq!(
        p.ttl_mode,
        tmproxy_core::policy::TtlMode::Adaptive(tmproxy_core::policy::Adaptive {
            min: chrono::Duration::hours(6),
            max: chrono::Duration::days(30),
            budget: 0.5,
        })
    );

    let e = parse("[cache]\nttl_mode = \"smart\"\n").unwrap_err();
    assert_eq!(e.key, "cache.ttl_mode");
    assert!(
        e.reason
            .contains("\"smart\" is not a TTL mode: use fixed or adaptive"),
        "{e}"
    );
    let refused = |text: &str, key: &str, says: &str| {
        let e = parse(text)
            .and_then(|c| c.validate().map(|()| c))
            .expect_err(text);
        assert_eq!(e.key, key, "{text}");
        assert!(e.reason.contains(says), "{text}: {e}");
    };
    refused(
        "[cache]\nttl_min = \"10d\"\nttl_max = \"5d\"\n",
        "cache.ttl_min",
        "10d is longer than cache.ttl_max (5d)",
    );
    refused(
        "[cache]\nttl_max = \"0s\"\n",
        "cache.ttl_max",
        "must be greater than 0s",
    );
    refused(
        "[cache]\nttl_max = \"40000d\"\n",
        "cache.ttl_max",
        "at most",
    );
    for bad in ["0", "-1.5", "nan", "inf"] {
        refused(
            &format!("[cache]\nttl_budget = {bad}\n"),
            "cache.ttl_budget",
            "must be a number greater than 0",
        );
    }
    // A budget is a number, not text.
    assert_eq!(
        parse("[cache]\nttl_budget = \"1\"\n").unwrap_err().key,
        "cache.ttl_budget"
    );
    // The mode from the environment, named when bad.
    let mut c = Config::default();
    c.apply_env(vars(&[("TMPROXY_CACHE_TTL_MODE", "adaptive")]))
        .expect("applies");
    assert_eq!(c.cache.ttl_mode, crate::config::TtlModeName::Adaptive);
    let e = c
        .apply_env(vars(&[("TMPROXY_CACHE_TTL_MODE", "often")]))
        .unwrap_err();
    assert_eq!(
        (e.origin.as_str(), e.key.as_str()),
        ("env TMPROXY_CACHE_TTL_MODE", "cache.ttl_mode")
    );
}

#[test]
fn admin_token_and_observe_log_from_env() {
    let mut cfg = Config::default();
    cfg.apply_env(|k| match k {
        "TMPROXY_ADMIN_TOKEN" => Some("s3cret".into()),
        "TMPROXY_OBSERVE_LOG" => Some("/tmp/obs.ndjson".into()),
        "TMPROXY_CACHE_POLICY" => Some("merge".into()),
        _ => None,
    })
    .expect("applies");
    assert_eq!(cfg.admin.token, "s3cret");
    assert_eq!(cfg.observe.log, "/tmp/obs.ndjson");
    assert_eq!(cfg.cache.policy, tmproxy_core::policy::PolicyKind::Merge);
}

#[test]
fn debug_of_the_config_never_shows_the_admin_token() {
    let mut c = Config::default();
    c.admin.token = "s3cret-token-xyz".into();
    let text = format!("{c:?} {:?} {c:#?}", c.admin);
    assert!(!text.contains("s3cret-token-xyz"), "{text}");
    assert!(text.contains("<redacted>"), "{text}");
}

#[test]
fn server_limits_and_admin_listen_parse_and_validate() {
    let c = parse(
        "[server]\nmax_header_bytes = \"32KiB\"\nrate_limit = 2.5\nrate_burst = 5\n[admin]\nlisten = \"127.0.0.1:7090\"\n",
    )
    .expect("parses");
    assert_eq!(c.server.max_header_bytes, 32 * 1024);
    assert_eq!(
        Config::default().server.header_read_timeout,
        Duration::from_secs(30)
    );
    assert_eq!(c.server.rate_limit, 2.5);
    assert_eq!(c.server.rate_burst, 5);
    assert_eq!(
        c.admin.listen,
        Some("127.0.0.1:7090".parse().expect("addr"))
    );
    c.validate().expect("valid");
    let e = parse("[admin]\nlisten = \"nowhere\"\n").expect_err("refused");
    assert_eq!(e.key, "admin.listen");
    for (text, key) in [
        ("[server]\nrate_limit = -1.0\n", "server.rate_limit"),
        (
            "[server]\nrate_limit = 1.0\nrate_burst = 0\n",
            "server.rate_burst",
        ),
        (
            "[server]\nmax_header_bytes = 100\n",
            "server.max_header_bytes",
        ),
        (
            "[server]\nheader_read_timeout = \"0s\"\n",
            "server.header_read_timeout",
        ),
        ("[server]\nidle_timeout = \"0s\"\n", "server.idle_timeout"),
        ("[server]\nmax_connections = 0\n", "server.max_connections"),
        (
            "[server]\nlisten = \"127.0.0.1:7089\"\n[admin]\nlisten = \"127.0.0.1:7089\"\n",
            "admin.listen",
        ),
    ] {
        let e = parse(text).expect("parses").validate().expect_err(text);
        assert_eq!(e.key, key, "{text}");
    }
    let mut c = Config::default();
    c.apply_env(vars(&[("TMPROXY_ADMIN_LISTEN", "127.0.0.1:7091")]))
        .expect("env");
    assert_eq!(
        c.admin.listen,
        Some("127.0.0.1:7091".parse().expect("addr"))
    );
}

#[test]
fn connection_limits_parse_with_their_defaults() {
    let d = Config::default();
    assert_eq!(d.server.idle_timeout, Duration::from_secs(60));
    assert_eq!(d.server.max_connections, 10_000);
    let c = parse("[server]\nidle_timeout = \"5s\"\nmax_connections = 20\n").expect("parses");
    assert_eq!(c.server.idle_timeout, Duration::from_secs(5));
    assert_eq!(c.server.max_connections, 20);
    c.validate().expect("valid");
}

#[test]
fn an_unset_connect_timeout_follows_a_shorter_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path();
    // The file sets only the timeout: the connect timeout it never named follows it down.
    let p = write(cwd, "short.toml", "[upstream]\ntimeout = \"1s\"\n");
    let (cfg, _) = Config::load_from(Some(&p), vars(&[]), cwd).expect("starts");
    assert_eq!(cfg.upstream.connect_timeout, Duration::from_secs(1));
    // Likewise the variable alone.
    let get = vars(&[("TMPROXY_UPSTREAM_TIMEOUT", "1s")]);
    let (cfg, _) = Config::load_from(None, get, cwd).expect("starts");
    assert_eq!(cfg.upstream.connect_timeout, Duration::from_secs(1));
    // A timeout longer than the default leaves the default connect timeout.
    let get = vars(&[("TMPROXY_UPSTREAM_TIMEOUT", "1m")]);
    let (cfg, _) = Config::load_from(None, get, cwd).expect("starts");
    assert_eq!(cfg.upstream.connect_timeout, Duration::from_secs(3));
}

#[test]
fn a_connect_timeout_set_beyond_the_timeout_names_both_sources() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path();
    // Both in the file: the file is the origin, and the reason names the timeout's value.
    let p = write(
        cwd,
        "both.toml",
        "[upstream]\nconnect_timeout = \"2s\"\ntimeout = \"1s\"\n",
    );
    let e = Config::load_from(Some(&p), vars(&[]), cwd).unwrap_err();
    let file = p.display().to_string();
    assert_eq!(
        (e.origin.as_str(), e.key.as_str()),
        (file.as_str(), "upstream.connect_timeout")
    );
    assert!(
        e.reason.starts_with(&format!(
            "2s is longer than upstream.timeout (1s, from {file})"
        )),
        "{e}"
    );
    // The connect timeout from the environment, the timeout from the file.
    let p = write(cwd, "timeout.toml", "[upstream]\ntimeout = \"1s\"\n");
    let get = vars(&[("TMPROXY_UPSTREAM_CONNECT_TIMEOUT", "2s")]);
    let e = Config::load_from(Some(&p), get, cwd).unwrap_err();
    assert_eq!(e.origin, "env TMPROXY_UPSTREAM_CONNECT_TIMEOUT");
    assert!(
        e.reason.contains(&format!("(1s, from {})", p.display())),
        "{e}"
    );
    // Both from the environment: each variable named.
    let get = vars(&[
        ("TMPROXY_UPSTREAM_CONNECT_TIMEOUT", "2s"),
        ("TMPROXY_UPSTREAM_TIMEOUT", "1s"),
    ]);
    let e = Config::load_from(Some(&p), get, cwd).unwrap_err();
    assert_eq!(
        e.to_string(),
        "config env TMPROXY_UPSTREAM_CONNECT_TIMEOUT: upstream.connect_timeout: 2s is longer than \
         upstream.timeout (1s, from env TMPROXY_UPSTREAM_TIMEOUT); a connect cannot outlast the \
         request it belongs to"
    );
    // Equal is fine, and a connect timeout set under the timeout is kept as set.
    let get = vars(&[("TMPROXY_UPSTREAM_CONNECT_TIMEOUT", "500ms")]);
    let (cfg, _) = Config::load_from(Some(&p), get, cwd).expect("starts");
    assert_eq!(cfg.upstream.connect_timeout, Duration::from_millis(500));
}

#[test]
fn an_unspecified_listen_address_needs_a_public_url() {
    let mut c = Config::default();
    assert_eq!(c.check_links_reachable(), Ok(()));
    assert_eq!(c.local_url(), "http://127.0.0.1:7089");
    for (listen, local) in [
        ("0.0.0.0:7089", "http://127.0.0.1:7089"),
        ("[::]:8080", "http://[::1]:8080"),
    ] {
        c.server.listen = listen.parse().unwrap();
        c.server.public_url = String::new();
        let e = c.check_links_reachable().unwrap_err();
        assert!(
            e.contains("TMPROXY_PUBLIC_URL") && e.contains("[server] public_url"),
            "{e}"
        );
        assert_eq!(c.local_url(), local);
        c.server.public_url = "https://tm.example.org".into();
        assert_eq!(c.check_links_reachable(), Ok(()));
    }
}

#[test]
fn compat_and_the_memento_proxy_cap_parse_and_validate() {
    let d = Config::default();
    assert_eq!(d.server.compat, super::Compat::TimeTravel);
    assert_eq!(d.server.memento_proxy_max_bytes, 4 * 1024 * 1024);
    let c = parse("[server]\ncompat = \"memgator\"\nmemento_proxy_max_bytes = \"1MiB\"\n")
        .expect("parses");
    assert_eq!(c.server.compat, super::Compat::MemGator);
    assert_eq!(c.server.memento_proxy_max_bytes, 1024 * 1024);
    c.validate().expect("valid");
    let e = parse("[server]\ncompat = \"wayback\"\n").expect_err("refused");
    assert_eq!(e.key, "server.compat");
    let e = parse("[server]\nmemento_proxy_max_bytes = 0\n")
        .expect("parses")
        .validate()
        .expect_err("refused");
    assert_eq!(e.key, "server.memento_proxy_max_bytes");
}

const CDX_ARCHIVE: &str = r#"
[[archives]]
id = "c"
kind = "cdx"
cdx = "http://cdx.example/coll/cdx"
dialect = "pywb"
replay = "http://cdx.example/coll/{timestamp}mp_/{url}"
timegate = "http://cdx.example/coll/"
"#;

#[test]
fn a_cdx_archive_is_read_and_checked() {
    let c = parse(CDX_ARCHIVE).expect("parses");
    c.validate().expect("validates");
    let a = &c.archives[0];
    assert_eq!(a.kind, ArchiveKind::Cdx);
    assert_eq!(a.dialect, CdxDialect::Pywb);
    assert_eq!(a.timemap, None);
    // An entry without the new keys is a TimeMap archive, as before.
    let t = parse(ONE_ARCHIVE).expect("parses");
    assert_eq!(t.archives[0].kind, ArchiveKind::Timemap);
    assert_eq!(t.archives[0].dialect, CdxDialect::Auto);
    let refused = |text: &str, key: &str, says: &str| {
        let e = parse(text)
            .and_then(|c| c.validate().map(|_| c))
            .expect_err(text);
        assert_eq!(e.key, key, "{e}");
        assert!(e.reason.contains(says), "{e}");
    };
    let edit = |from: &str, to: &str| CDX_ARCHIVE.replace(from, to);
    refused(
        &edit("cdx = \"http://cdx.example/coll/cdx\"\n", ""),
        "archives[0].cdx",
        "not an absolute URL",
    );
    refused(
        &edit("cdx = \"http", "cdx = \"ftp"),
        "archives[0].cdx",
        "http",
    );
    refused(
        &edit(
            "replay = \"http://cdx.example/coll/{timestamp}mp_/{url}\"\n",
            "",
        ),
        "archives[0].replay",
        "{timestamp} and {url}",
    );
    refused(
        &edit("/{url}", "/"),
        "archives[0].replay",
        "{timestamp} and {url}",
    );
    refused(
        &edit("http://cdx.example/coll/{timestamp}", "{timestamp}"),
        "archives[0].replay",
        "must start with http",
    );
    refused(
        &edit("mp_/{url}", "mp_/{url}<script>"),
        "archives[0].replay",
        "quote, < or >",
    );
    refused(
        &format!("{CDX_ARCHIVE}timemap = \"http://cdx.example/tm/\"\n"),
        "archives[0].timemap",
        "kind = \"cdx\"",
    );
    refused(
        &format!("{ONE_ARCHIVE}replay = \"http://x.example/{{timestamp}}/{{url}}\"\n"),
        "archives[0].replay",
        "only for kind = \"cdx\"",
    );
    refused(
        &format!("{ONE_ARCHIVE}dialect = \"ia\"\n"),
        "archives[0].dialect",
        "only for kind = \"cdx\"",
    );
    refused(
        &format!("{ONE_ARCHIVE}cdx = \"http://x.example/cdx\"\n"),
        "archives[0].cdx",
        "kind = \"timemap\"",
    );
    let e = parse(&edit("kind = \"cdx\"", "kind = \"warc\"")).unwrap_err();
    assert!(e.key.starts_with("archives"), "{e}");
    let e = parse(&edit("dialect = \"pywb\"", "dialect = \"wayback\"")).unwrap_err();
    assert!(e.key.starts_with("archives"), "{e}");
}

#[test]
fn sampling_reading_limits_parse_as_sizes_and_max_line_is_bounded() {
    let c = parse(
        "[sampling]\nmax_line = \"1MiB\"\nmax_input_bytes = \"10GB\"\nmax_gzip_ratio = 50\nmax_memory = \"512MiB\"\n",
    )
    .expect("parses");
    assert_eq!(c.sampling.max_line, 1 << 20);
    assert_eq!(c.sampling.max_input_bytes, 10_000_000_000);
    assert_eq!(c.sampling.max_gzip_ratio, 50);
    assert_eq!(c.sampling.max_memory, 512 << 20);
    c.validate().expect("valid");
    for bad in ["\"10B\"", "\"1GiB\""] {
        let e = parse(&format!("[sampling]\nmax_line = {bad}\n"))
            .expect("parses")
            .validate()
            .unwrap_err();
        assert_eq!(e.key, "sampling.max_line", "{bad}");
    }
}

#[test]
fn trusted_proxies_take_addresses_and_ranges_and_name_the_key_when_bad() {
    assert!(Config::default().server.trusted_proxies.is_empty());
    let c = parse("[server]\ntrusted_proxies = [\"10.0.0.7\", \"172.30.89.0/24\", \"fd00::/8\"]\n")
        .expect("parses");
    let shown: Vec<String> = c
        .server
        .trusted_proxies
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(shown, ["10.0.0.7/32", "172.30.89.0/24", "fd00::/8"]);
    for bad in ["10.0.0.0/33", "10.0.0", "example.org", "::1/129", ""] {
        let text = format!("[server]\ntrusted_proxies = [\n  \"10.0.0.1\",\n  \"{bad}\",\n]\n");
        let e = parse(&text).expect_err(bad);
        assert_eq!(e.key, "server.trusted_proxies", "{bad}: {e}");
        assert!(e.reason.contains("CIDR"), "{bad}: {e}");
    }
    let mut c = Config::default();
    c.apply_env(vars(&[("TMPROXY_TRUSTED_PROXIES", "127.0.0.1, ::1/128")]))
        .expect("env");
    assert_eq!(c.server.trusted_proxies.len(), 2);
    let e = c
        .apply_env(vars(&[("TMPROXY_TRUSTED_PROXIES", "127.0.0.1/40")]))
        .expect_err("bad env");
    assert_eq!(e.key, "server.trusted_proxies");
}

#[test]
fn an_archives_raw_form_is_on_off_or_a_checked_template() {
    use tmproxy_core::raw_memento::RawForm;
    let raw_of = |value: &str| {
        parse(&format!("{ONE_ARCHIVE}raw = {value}\n")).map(|c| c.archives[0].raw.clone())
    };
    assert_eq!(
        parse(ONE_ARCHIVE).expect("parses").archives[0].raw,
        RawForm::Id
    );
    assert_eq!(raw_of("true").expect("true"), RawForm::Id);
    assert_eq!(raw_of("false").expect("false"), RawForm::Off);
    let template = "\"https://x.example/raw/{timestamp}/{url}\"";
    let RawForm::Template(t) = raw_of(template).expect("a template") else {
        panic!("not read as a template");
    };
    assert_eq!(t.to_string(), "https://x.example/raw/{timestamp}/{url}");
    // Written back as read.
    for value in ["false", template] {
        let c = parse(&format!("{ONE_ARCHIVE}raw = {value}\n")).expect("parses");
        let text = toml::to_string(&c).expect("serializes");
        assert_eq!(parse(&text).expect("reparses"), c, "{value}");
    }
    for (value, says) in [
        (
            "\"https://x.example/{timestamp}/{uri_r}\"",
            "{timestamp} and {url}",
        ),
        (
            "\"https://x.example/{timestamp}/{url}/{uri_m}\"",
            "placeholder other than",
        ),
        (
            "\"ftp://x.example/{timestamp}/{url}\"",
            "must start with http",
        ),
        ("\"{timestamp}/{url}\"", "must start with http"),
        ("\"\"", "{timestamp} and {url}"),
        ("1", "true, false or a URL template"),
    ] {
        let e = raw_of(value).expect_err(value);
        assert_eq!(e.key, "archives[0].raw", "{value}: {e}");
        assert!(e.reason.contains(says), "{value}: {e}");
    }
}

#[test]
fn archive_limits_and_the_contact_parse_validate_and_default() {
    let c = Config::default();
    assert!(c
        .archives
        .iter()
        .all(|a| a.max_concurrency == 8 && a.rate == 0.0));
    assert_eq!(c.upstream.max_retry_after, Duration::from_secs(600));
    assert_eq!(c.upstream.contact, "");
    let c = parse(&format!(
        "[upstream]\ncontact = \"ops@example.org\"\nmax_retry_after = \"30s\"\n{ONE_ARCHIVE}max_concurrency = 2\nrate = 0.5\n"
    ))
    .expect("parses");
    c.validate().expect("valid");
    assert_eq!(
        (c.archives[0].max_concurrency, c.archives[0].rate),
        (2, 0.5)
    );
    assert_eq!(c.upstream.max_retry_after, Duration::from_secs(30));
    assert_eq!(
        c.upstream.agent(),
        "tmproxy/0.1 (Memento aggregator; ops@example.org)"
    );
    let check = |edit: &dyn Fn(&mut Config), key: &str| {
        let mut c = Config::default();
        edit(&mut c);
        let e = c.validate().expect_err(key);
        assert_eq!(e.key, key, "{e}");
    };
    check(
        &|c| c.archives[1].max_concurrency = 0,
        "archives[1].max_concurrency",
    );
    check(
        &|c| c.archives[1].max_concurrency = 1025,
        "archives[1].max_concurrency",
    );
    for bad in [-1.0, f64::NAN, f64::INFINITY, 0.0001] {
        check(&move |c| c.archives[2].rate = bad, "archives[2].rate");
    }
    check(
        &|c| c.upstream.contact = "ftp://x.example/".into(),
        "upstream.contact",
    );
    check(
        &|c| c.upstream.contact = "nobody".into(),
        "upstream.contact",
    );
    let mut c = Config::default();
    c.archives[0].max_concurrency = 1024;
    c.archives[0].rate = 0.001;
    c.upstream.max_retry_after = Duration::ZERO;
    c.validate()
        .expect("the edges of each range, and Retry-After not honoured");
    // The override, and a bad one named by its variable.
    let mut c = Config::default();
    c.apply_env(vars(&[(
        "TMPROXY_UPSTREAM_CONTACT",
        "https://ops.example/contact",
    )]))
    .expect("env");
    assert_eq!(c.upstream.contact, "https://ops.example/contact");
    let dir = tempfile::tempdir().expect("temp dir");
    let e = Config::load_from(
        None,
        vars(&[("TMPROXY_UPSTREAM_CONTACT", "ops at example")]),
        dir.path(),
    )
    .expect_err("not a contact")
    .to_string();
    assert!(
        e.starts_with("config env TMPROXY_UPSTREAM_CONTACT: upstream.contact:"),
        "{e}"
    );
    // Written out and read back, a changed limit stays.
    let mut c = Config::default();
    c.archives[3].max_concurrency = 3;
    c.archives[3].rate = 2.5;
    let text = toml::to_string(&c).expect("serializes");
    assert_eq!(parse(&text).expect("reads back"), c);
}
