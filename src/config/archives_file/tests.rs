use super::*;
use crate::config::{Config, HttpUrl, CONFIG_ENV};
use std::path::PathBuf;

/// MemGator's maintained list as it was on 2026-04-09 (oduwsdl/MemGator commit 6a22246,
/// `docs/archives.json`), copied unchanged.
const MEMGATOR: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/memgator-archives.json"
));

fn err(text: &str) -> ConfigError {
    parse(text.as_bytes(), "list.json").expect_err("refused")
}

#[test]
fn memgators_own_list_loads_with_its_ignored_archives_disabled() {
    let list = parse(MEMGATOR.as_bytes(), "memgator").expect("MemGator's list parses");
    assert_eq!(list.len(), 20);
    let ia = list.iter().find(|a| a.id == "web.archive.org").expect("IA");
    assert_eq!(ia.name, "Internet Archive");
    assert_eq!(
        ia.timemap.as_ref().map(HttpUrl::as_str),
        Some("https://web.archive.org/web/timemap/link/")
    );
    assert!(ia.enabled);
    let disabled: Vec<&str> = list
        .iter()
        .filter(|a| !a.enabled)
        .map(|a| a.id.as_str())
        .collect();
    assert_eq!(
        disabled,
        [
            "pastpages.org",
            "swap.stanford.edu",
            "web.archive.bibalex.org",
            "webarchive.loc.gov",
            "webarchive.nationalarchives.gov",
            "webarchive.proni.gov.uk",
            "wayback.nli.org.il"
        ]
    );
}

#[test]
fn the_built_in_list_agrees_with_memgators_on_every_timemap_prefix() {
    let list = parse(MEMGATOR.as_bytes(), "memgator").expect("MemGator's list parses");
    for known in tmproxy_core::archives::KNOWN {
        let theirs = list
            .iter()
            .find(|a| {
                let timemap = a.timemap.as_ref().map_or("", HttpUrl::as_str);
                // archive.today: MemGator asks http://, we ask https:// (config.toml says so).
                timemap == known.timemap
                    || timemap.strip_prefix("http://") == known.timemap.strip_prefix("https://")
            })
            .unwrap_or_else(|| panic!("{}: {} not in MemGator's list", known.id, known.timemap));
        assert!(theirs.enabled, "{} is ignored by MemGator", known.id);
    }
    // The three names aligned with MemGator, TimeGates included.
    for (id, timemap, timegate) in [
        (
            "is",
            "https://vefsafn.is/timemap/link/",
            "https://vefsafn.is/",
        ),
        (
            "parliament.uk",
            "http://webarchive.parliament.uk/timemap/link/",
            "http://webarchive.parliament.uk/timegate/",
        ),
        (
            "nrs",
            "https://webarchive.nrscotland.gov.uk/timemap/link/",
            "https://webarchive.nrscotland.gov.uk/timegate/",
        ),
    ] {
        let ours = Config::default();
        let a = ours.archives.iter().find(|a| a.id == id).expect(id);
        assert_eq!(
            (
                a.timemap.as_ref().map_or("", HttpUrl::as_str),
                a.timegate.as_str()
            ),
            (timemap, timegate)
        );
        assert!(list
            .iter()
            .any(|m| m.timemap.as_ref().is_some_and(|t| *t == timemap) && m.timegate == timegate));
    }
}

#[test]
fn fields_memgator_files_carry_besides_ours_are_tolerated() {
    let list = parse(
        br#"[{"id": "a.example", "timemap": "https://a.example/tm/", "timegate": "https://a.example/",
              "probability": 0.42, "rels": ["x"]}]"#,
        "list.json",
    )
    .expect("extra fields are fine");
    assert_eq!(list[0].name, "a.example", "name defaults to the id");
    assert!(list[0].enabled);
}

#[test]
fn a_bad_entry_is_refused_naming_the_entry_and_field() {
    let ok =
        r#"{"id": "ok", "timemap": "https://ok.example/tm/", "timegate": "https://ok.example/"}"#;
    for (entry, key, says) in [
        (
            r#"{"id": "b", "timegate": "https://b.example/"}"#,
            "archives_file[1].timemap",
            "missing",
        ),
        (
            r#"{"timemap": "https://b.example/", "timegate": "https://b.example/"}"#,
            "archives_file[1].id",
            "missing",
        ),
        (
            r#"{"id": 7, "timemap": "https://b.example/", "timegate": "https://b.example/"}"#,
            "archives_file[1].id",
            "must be a string",
        ),
        (
            r#"{"id": "B b", "timemap": "https://b.example/", "timegate": "https://b.example/"}"#,
            "archives_file[1].id",
            "may only contain",
        ),
        (
            r#"{"id": "b", "timemap": "javascript:alert(1)//", "timegate": "https://b.example/"}"#,
            "archives_file[1].timemap",
            "http",
        ),
        (
            r#"{"id": "b", "timemap": "https://b.example/", "timegate": "/relative/"}"#,
            "archives_file[1].timegate",
            "not an absolute URL",
        ),
        (
            r#"{"id": "b", "timemap": "file:///etc/passwd", "timegate": "https://b.example/"}"#,
            "archives_file[1].timemap",
            "http",
        ),
        (
            r#"{"id": "b", "timemap": "https://b.example/", "timegate": "https://b.example/", "ignore": "yes"}"#,
            "archives_file[1].ignore",
            "true or false",
        ),
        (
            r#"{"id": "b", "name": "x\u0000y", "timemap": "https://b.example/", "timegate": "https://b.example/"}"#,
            "archives_file[1].name",
            "control",
        ),
        (
            r#"{"id": "ok", "timemap": "https://b.example/", "timegate": "https://b.example/"}"#,
            "archives_file[1].id",
            "duplicate id (also archives_file[0])",
        ),
        (r#""just a string""#, "archives_file[1].(entry)", "object"),
    ] {
        let e = err(&format!("[{ok}, {entry}]"));
        assert_eq!(e.origin, "list.json");
        assert_eq!(e.key, key, "{entry}: {e}");
        assert!(e.reason.contains(says), "{entry}: {e}");
    }
    // Once the entry has an id, the reason names it too.
    let e = err(&format!(
        r#"[{ok}, {{"id": "named", "timemap": "ftp://x/", "timegate": "https://x/"}}]"#
    ));
    assert!(e.reason.starts_with("\"named\": "), "{e}");
}

#[test]
fn what_is_not_an_archive_list_is_refused() {
    for text in ["", "not json", "{\"id\": \"a\"}", "[1, 2", "null"] {
        let e = err(text);
        assert_eq!(e.key, "(file)", "{text:?}");
        assert!(e.reason.contains("JSON array"), "{text:?}: {e}");
    }
    assert_eq!(parse(b"[]", "x").expect("empty list"), vec![]);
}

#[test]
fn a_huge_file_is_refused_without_reading_it_whole() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("huge.json");
    let big = format!("[{}]", " ".repeat(2 * MAX_ARCHIVES_FILE as usize));
    std::fs::write(&path, big).expect("write");
    let e = read(&path).expect_err("too big");
    assert_eq!(e.key, "(file)");
    assert!(e.reason.contains("larger than 1024 KiB"), "{e}");
    let e = read(&dir.path().join("missing.json")).expect_err("missing");
    assert!(e.reason.starts_with("cannot read"), "{e}");
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).expect("write temp file");
    p
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

const MINE: &str = r#"
[[archives]]
id = "mine"
timemap = "https://mine.example/timemap/link/"
timegate = "https://mine.example/"
"#;

#[test]
fn the_file_replaces_the_built_in_list_and_config_entries_follow_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cwd = dir.path();
    write(cwd, "memgator.json", MEMGATOR);
    // Relative to the working directory.
    let cfg_path = write(
        cwd,
        "a.toml",
        "[upstream]\narchives_file = \"memgator.json\"\n",
    );
    let (cfg, _) = Config::load_from(Some(&cfg_path), vars(&[]), cwd).expect("loads");
    assert_eq!(cfg.archives.len(), 20);
    assert_eq!(cfg.archives[0].id, "archive.today");
    assert!(!ids(&cfg).contains(&"ia"), "the built-in list is replaced");

    let with_mine = write(
        cwd,
        "b.toml",
        &format!("[upstream]\narchives_file = \"memgator.json\"\n{MINE}"),
    );
    let (cfg, _) = Config::load_from(Some(&with_mine), vars(&[]), cwd).expect("loads");
    assert_eq!(cfg.archives.len(), 21);
    assert_eq!(
        ids(&cfg)[20],
        "mine",
        "config.toml's entries come after the file's"
    );

    // An id in both is refused, naming the config entry and the file's.
    let dup = write(
        cwd,
        "c.toml",
        &format!(
            "[upstream]\narchives_file = \"memgator.json\"\n{}",
            MINE.replace("\"mine\"", "\"perma.cc\"")
        ),
    );
    let e = Config::load_from(Some(&dup), vars(&[]), cwd).expect_err("duplicate");
    assert_eq!(e.key, "archives[0].id");
    assert!(e.reason.contains("archives_file[3]"), "{e}");
}

#[test]
fn the_environment_names_the_file_and_picks_among_its_archives() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cwd = dir.path();
    write(cwd, "memgator.json", MEMGATOR);
    let (cfg, origin) = Config::load_from(
        None,
        vars(&[
            ("TMPROXY_ARCHIVES_FILE", "memgator.json"),
            ("TMPROXY_ARCHIVES", "web.archive.org,arquivo.pt"),
        ]),
        cwd,
    )
    .expect("loads");
    assert_eq!(origin, crate::config::BUILTIN_ORIGIN);
    assert_eq!(cfg.upstream.archives_file, "memgator.json");
    let enabled: Vec<&str> = cfg
        .archives
        .iter()
        .filter(|a| a.enabled)
        .map(|a| a.id.as_str())
        .collect();
    assert_eq!(enabled, ["arquivo.pt", "web.archive.org"]);

    // An empty variable turns a configured file off.
    let cfg_path = write(
        cwd,
        "a.toml",
        "[upstream]\narchives_file = \"memgator.json\"\n",
    );
    let (cfg, _) = Config::load_from(
        Some(&cfg_path),
        vars(&[("TMPROXY_ARCHIVES_FILE", ""), (CONFIG_ENV, "ignored")]),
        cwd,
    )
    .expect("loads");
    assert_eq!(cfg.archives, Config::default().archives);

    // A bad file stops the start, naming the file.
    let bad = write(
        cwd,
        "bad.json",
        r#"[{"id": "x", "timemap": "javascript:alert(1)", "timegate": "https://x/"}]"#,
    );
    let e = Config::load_from(None, vars(&[("TMPROXY_ARCHIVES_FILE", "bad.json")]), cwd)
        .expect_err("refused");
    assert_eq!(e.origin, bad.display().to_string());
    assert_eq!(e.key, "archives_file[0].timemap");
}
