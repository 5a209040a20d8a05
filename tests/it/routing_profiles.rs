//! Archive profiles on the real binary: `tmproxy routing import` writes the
//! data directory's profiles, `tmproxy serve` on the same config reads them back (and refuses a
//! damaged file), an import is refused while a server owns the directory, and bad imports say why.

use crate::support::{client, ServeProcess};
use std::io::Write;
use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;
use tmproxy::config::Config;
use tmproxy::routing::{profiles_path, Loaded, Routing};
use tmproxy_core::routing::{Key, Level};
use tmproxy_testkit::archive::{Behaviour, SimulatedArchive, TimeMapSpec};

const BIN: &str = env!("CARGO_BIN_EXE_tmproxy");

/// A config file with two archives and its data directory in `dir`.
fn config_file(dir: &Path, a: &SimulatedArchive) -> std::path::PathBuf {
    let path = dir.join("config.toml");
    let mut f = std::fs::File::create(&path).expect("config file");
    writeln!(
        f,
        "[cache]\npath = {:?}\n\n[routing]\nmode = \"learned\"\n",
        dir.join("data").join("cache").display().to_string()
    )
    .expect("write");
    for id in ["ia", "arquivo"] {
        writeln!(
            f,
            "[[archives]]\nid = \"{id}\"\ntimemap = \"{}\"\ntimegate = \"{}\"\n",
            a.timemap_prefix(),
            a.timegate_prefix()
        )
        .expect("write");
    }
    path
}

async fn tmproxy(args: &[&str]) -> Output {
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    tokio::task::spawn_blocking(move || {
        Command::new(BIN)
            .args(&args)
            .env_remove("TMPROXY_CONFIG")
            .env("RUST_LOG", "warn")
            .output()
            .expect("tmproxy runs")
    })
    .await
    .expect("join")
}

fn text(out: &[u8]) -> String {
    String::from_utf8_lossy(out).into_owned()
}

const CDXJ: &str = "!OpenWayback-CDXJ 1.0\n\
    pt,sapo)/ 20090101000000 {\"url\": \"http://sapo.pt/\"}\n\
    pt,sapo)/ 20100101000000 {\"url\": \"http://www.sapo.pt/\"}\n\
    pt,sapo,noticias)/a 20110101000000 {\"url\": \"http://noticias.sapo.pt/a\"}\n\
    \u{1}garbage\n";

#[tokio::test]
async fn an_imported_profile_is_what_serve_reads_back() {
    let archive = SimulatedArchive::start(Behaviour::TimeMap(TimeMapSpec::of(&["20010101000000"])))
        .await
        .expect("archive");
    let dir = tempfile::tempdir().expect("temp dir");
    let cfg = config_file(dir.path(), &archive);
    let (cfg_s, cdx) = (cfg.display().to_string(), dir.path().join("arquivo.cdxj"));
    std::fs::write(&cdx, CDXJ).expect("cdxj");
    let cdx_s = cdx.display().to_string();

    let out = tmproxy(&["routing", "import", "arquivo", &cdx_s, "--config", &cfg_s]).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let said = text(&out.stdout);
    assert!(said.contains("imported 2 URI-Rs held by arquivo"), "{said}");
    assert!(
        said.contains("1 repeats") && said.contains("1 unreadable"),
        "{said}"
    );

    let server = ServeProcess::start(&cfg);
    let restored = server
        .log()
        .lines()
        .find(|l| l.contains("routing profiles restored"))
        .map(str::to_owned);
    let restored = restored.unwrap_or_else(|| panic!("no restore line:\n{}", server.log()));
    // Three keys for sapo.pt, noticias.sapo.pt's host, and the TLD.
    assert!(restored.contains("keys=4"), "{restored}");

    // While the server owns the directory an import is refused: its next save would undo it.
    let out = tmproxy(&["routing", "import", "arquivo", &cdx_s, "--config", &cfg_s]).await;
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("held by another process"),
        "{}",
        text(&out.stderr)
    );
    stop(server).await;

    // The library reads the very file the binary wrote.
    let (config, _) = Config::load(Some(&cfg)).expect("config");
    let routing = Routing::open(&config);
    assert_eq!(routing.loaded(), &Loaded::Restored { keys: 4 });
    let tld = Key {
        level: Level::Tld,
        name: "pt".into(),
    };
    let tally = routing.snapshot().tally("arquivo", &tld).expect("tally");
    assert_eq!((tally.held, tally.none), (2, 0));
}

#[tokio::test]
async fn serve_refuses_a_damaged_profiles_file_and_starts_blank() {
    let archive = SimulatedArchive::start(Behaviour::TimeMap(TimeMapSpec::of(&["20010101000000"])))
        .await
        .expect("archive");
    let dir = tempfile::tempdir().expect("temp dir");
    let cfg = config_file(dir.path(), &archive);
    let cdx = dir.path().join("a.cdxj");
    std::fs::write(&cdx, CDXJ).expect("cdxj");
    let out = tmproxy(&[
        "routing",
        "import",
        "arquivo",
        &cdx.display().to_string(),
        "--config",
        &cfg.display().to_string(),
    ])
    .await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let (config, _) = Config::load(Some(&cfg)).expect("config");
    let path = profiles_path(&config);
    let mut bytes = std::fs::read(&path).expect("profiles written");
    let last = bytes.len() - 1;
    bytes[last] ^= 0x01;
    std::fs::write(&path, &bytes).expect("damage");

    let server = ServeProcess::start(&cfg);
    let log = server.log();
    assert!(
        log.contains("routing profiles damaged: refused, starting blank"),
        "{log}"
    );
    assert!(log.contains("checksum mismatch"), "{log}");
    assert_eq!(
        std::fs::read(path.with_extension("bin.damaged")).expect("moved aside"),
        bytes
    );
    stop(server).await;
}

/// SIGTERM once the server answers (its signal handlers are installed by then: it logs where
/// it listens just before), and a clean exit.
async fn stop(mut server: ServeProcess) {
    let health = client()
        .get(format!("{}/healthz", server.base))
        .send()
        .await
        .expect("healthz");
    assert_eq!(health.status(), 200);
    server.term();
    let status = server.exit_within(Duration::from_secs(60)).await;
    assert!(status.success(), "{status:?}\n{}", server.log());
}

#[tokio::test]
async fn a_bad_import_says_why_and_writes_nothing() {
    let archive = SimulatedArchive::start(Behaviour::TimeMap(TimeMapSpec::of(&["20010101000000"])))
        .await
        .expect("archive");
    let dir = tempfile::tempdir().expect("temp dir");
    let cfg = config_file(dir.path(), &archive).display().to_string();
    let junk = dir.path().join("junk");
    std::fs::write(&junk, b"\xff\xfe\xfd\nonly-one-field\n").expect("junk");
    let junk = junk.display().to_string();
    let missing = dir.path().join("missing").display().to_string();
    for (args, says) in [
        (["import", "nope", &junk], "unknown archive \"nope\""),
        (["import", "arquivo", &missing], "cannot read"),
        (["import", "arquivo", &junk], "no usable line"),
    ] {
        let mut all = vec!["routing"];
        all.extend(args);
        all.extend(["--config", &cfg]);
        let out = tmproxy(&all).await;
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let err = text(&out.stderr);
        assert!(err.contains(says), "{args:?}: {err}");
    }
    let (config, _) = Config::load(Some(Path::new(&cfg))).expect("config");
    assert!(!profiles_path(&config).exists());
}
