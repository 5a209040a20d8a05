//! The routing state at its I/O edge: saved and restored, damaged files refused, one owner per
//! data directory, imports and their errors.

use super::*;
use crate::config::RoutingMode;
use crate::uri_r::UriR;
use std::path::Path;
use tmproxy_core::routing::{Level, Outcome, Route, UriKeys};

fn config_in(dir: &Path) -> Config {
    let mut config = Config::default();
    config.cache.path = dir.join("cache").display().to_string();
    config.routing.min_evidence = 3;
    config
}

fn u(text: &str) -> UriR {
    UriR::parse(text).expect("a URI-R")
}

fn lesson(uri: &str, outcomes: &[(&str, Outcome)]) -> Observation {
    Observation {
        keys: UriKeys::of_uri(uri),
        outcomes: outcomes.iter().map(|(a, o)| ((*a).into(), *o)).collect(),
    }
}

fn teach(routing: &Routing, n: usize) {
    for i in 0..n {
        routing.observe(&lesson(
            &format!("http://example.pt/{i}"),
            &[("ia", Outcome::Held), ("arquivo", Outcome::HeldNone)],
        ));
    }
}

#[test]
fn profiles_are_saved_and_restored() {
    let dir = tempfile::tempdir().unwrap();
    let config = config_in(dir.path());
    let routing = Routing::open(&config);
    assert_eq!(routing.loaded(), &Loaded::Blank);
    assert_eq!(
        routing.save(),
        Ok(false),
        "nothing learned, nothing written"
    );
    teach(&routing, 5);
    assert_eq!(routing.save(), Ok(true));
    assert_eq!(routing.save(), Ok(false), "nothing new since");
    let before = routing.snapshot().to_stored();
    drop(routing);
    assert!(profiles_path(&config).exists());
    let again = Routing::open(&config);
    assert_eq!(again.loaded(), &Loaded::Restored { keys: 3 });
    assert_eq!(again.snapshot().to_stored(), before);
    assert_eq!(again.size("arquivo"), (3, 3));
}

#[test]
fn the_decision_reads_the_profiles_and_the_config() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = config_in(dir.path());
    config.routing.mode = RoutingMode::Learned;
    config.routing.explore = 0.0;
    let routing = Routing::open(&config);
    teach(&routing, 3);
    let ids = ["ia", "arquivo", "perma"];
    let d = routing.decide(&ids, &u("http://example.pt/new"));
    assert_eq!(d.routes[0], Route::Ask);
    let Route::Skip(skip) = &d.routes[1] else {
        panic!("{d:?}")
    };
    assert_eq!(skip.key.level, Level::Host);
    assert_eq!(d.routes[2], Route::Ask, "no evidence about perma");
    // always = true keeps an archive asked.
    config.archives[2].always = true;
    assert_eq!(config.archives[2].id, "arquivo");
    drop(routing);
    let routing = Routing::open(&config);
    teach(&routing, 3);
    assert!(routing.decide(&ids, &u("http://example.pt/new")).routes[1].is_ask());
}

#[test]
fn a_damaged_file_is_refused_moved_aside_and_replaced_by_blank_profiles() {
    let dir = tempfile::tempdir().unwrap();
    let config = config_in(dir.path());
    let routing = Routing::open(&config);
    teach(&routing, 5);
    routing.save().unwrap();
    drop(routing);
    let path = profiles_path(&config);
    let mut bytes = std::fs::read(&path).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0xff;
    std::fs::write(&path, &bytes).unwrap();
    let routing = Routing::open(&config);
    let Loaded::Refused { reason, moved_to } = routing.loaded() else {
        panic!("{:?}", routing.loaded())
    };
    assert!(reason.contains("damaged"), "{reason}");
    let aside = moved_to.clone().expect("moved aside by its owner");
    assert_eq!(
        std::fs::read(&aside).unwrap(),
        bytes,
        "kept for the operator"
    );
    assert!(!path.exists());
    assert!(routing.snapshot().is_empty());
    // A file cut short by a crash mid-write (were the rename not atomic) is refused too.
    teach(&routing, 5);
    routing.save().unwrap();
    drop(routing);
    let whole = std::fs::read(&path).unwrap();
    std::fs::write(&path, &whole[..whole.len() - 3]).unwrap();
    assert!(matches!(
        Routing::open(&config).loaded(),
        Loaded::Refused { .. }
    ));
}

#[test]
fn one_process_owns_a_data_directory() {
    let dir = tempfile::tempdir().unwrap();
    let config = config_in(dir.path());
    let owner = Routing::open(&config);
    let second = Routing::open(&config);
    teach(&second, 5);
    assert_eq!(second.save(), Ok(false), "the second learns in memory only");
    let cdx = dir.path().join("a.cdxj");
    std::fs::write(&cdx, "pt,example)/ 20200101000000 {}\n").unwrap();
    let err = import::import_file(&config, "arquivo", &cdx, None).unwrap_err();
    assert!(err.contains("held by another process"), "{err}");
    drop((owner, second));
    assert!(import::import_file(&config, "arquivo", &cdx, None).is_ok());
}

#[test]
fn an_import_lands_in_the_profiles_a_server_reads() {
    let dir = tempfile::tempdir().unwrap();
    let config = config_in(dir.path());
    let cdx = dir.path().join("arquivo.cdxj.gz");
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(
        &mut gz,
        b"pt,sapo)/ 20090101000000 {}\r\npt,sapo)/ 20100101000000 {}\npt,publico)/ 2012 {}\n",
    )
    .unwrap();
    std::fs::write(&cdx, gz.finish().unwrap()).unwrap();
    let done = import::import_file(&config, "arquivo", &cdx, None).unwrap();
    assert_eq!((done.report.used, done.report.repeats), (2, 1));
    assert!(done.summary("arquivo", &cdx).contains("imported 2 URI-Rs"));
    let routing = Routing::open(&config);
    let p = routing.snapshot();
    let tld = tmproxy_core::routing::Key {
        level: Level::Tld,
        name: "pt".into(),
    };
    assert_eq!(p.tally("arquivo", &tld).map(|t| t.held), Some(2));
}

#[test]
fn import_errors_say_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let config = config_in(dir.path());
    let junk = dir.path().join("junk.txt");
    std::fs::write(&junk, b"hello\n\xff\xfe\nno timestamp here at all\n").unwrap();
    let err = import::import_file(&config, "nope", &junk, None).unwrap_err();
    assert!(err.contains("unknown archive \"nope\""), "{err}");
    let err = import::import_file(&config, "ia", &dir.path().join("missing"), None).unwrap_err();
    assert!(err.contains("cannot read"), "{err}");
    let err = import::import_file(&config, "ia", &junk, None).unwrap_err();
    assert!(err.contains("no usable line"), "{err}");
    assert!(err.contains("1 not UTF-8"), "{err}");
    assert!(!profiles_path(&config).exists(), "nothing written");
}

#[test]
fn lines_are_read_within_their_bound() {
    let mut text = b"short\r\n".to_vec();
    text.extend(std::iter::repeat_n(b'x', 100_000));
    text.extend_from_slice(b"\nlast");
    let mut seen = Vec::new();
    // A small buffer, so a line spans many reads.
    let reader = std::io::BufReader::with_capacity(7, &text[..]);
    import::each_line(reader, 10, |line| {
        seen.push(line.map(|l| String::from_utf8_lossy(l).into_owned()))
    })
    .unwrap();
    assert_eq!(
        seen,
        [Some("short".to_owned()), None, Some("last".to_owned())]
    );
}

#[test]
fn exploration_replays_miss_for_miss() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = config_in(dir.path());
    config.routing.mode = RoutingMode::Learned;
    config.routing.explore = 0.5;
    let run = || {
        let routing = Routing::open(&config);
        teach(&routing, 3);
        (0..200)
            .map(|i| {
                let uri = format!("http://example.pt/{}", i % 7);
                let d = routing.decide(&["ia", "arquivo"], &u(&uri));
                (d.explored, d.routes[1].is_ask())
            })
            .collect::<Vec<_>>()
    };
    let first = run();
    assert_eq!(first, run());
    let explored = first.iter().filter(|(e, _)| *e).count();
    assert!((60..140).contains(&explored), "{explored} of 200");
    // An explored miss asks arquivo; any other skips it.
    assert!(first.iter().all(|(e, asked)| e == asked));
}
