//! Restarts of the real binary over one data directory: `kill -9` while cache entries are being
//! written and a sampling job runs (every answer already sent is served from disk afterwards,
//! sled opens, the job resumes from its checkpoint to the uninterrupted run's sample), and
//! SIGTERM (requests in flight finish, the job stops at a checkpoint and resumes, the process
//! exits 0 in bounded time, a second signal cuts a stuck drain short).

use crate::sampling_job::{fake_cdx, index_file, sample_of, spec, Fake};
use crate::support::{client, memento_uris, ServeProcess};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tmproxy::sampling::engine::{run, Progress, SampledUrl};
use tmproxy_testkit::archive::{Behaviour, SimulatedArchive, TimeMapSpec};

const TOKEN: &str = "restarts-token";
const CAPTURES: &[&str] = &["19990101000000", "20050505050505", "20200101000000"];

/// The sampling tests' fake CDX API, steady (no first-try 503s, so a run's request count is its
/// number of distinct questions), with a latency to keep a job busy.
async fn start_cdx(latency_ms: u64) -> (String, Arc<Fake>, tokio::task::JoinHandle<()>) {
    let (url, fake, task) = fake_cdx().await;
    fake.steady.store(true, Ordering::Relaxed);
    fake.latency_ms.store(latency_ms, Ordering::Relaxed);
    (url, fake, task)
}

/// What an uninterrupted run of the job's spec gives (on its own fake, no latency).
struct Reference {
    sample: Vec<SampledUrl>,
    funnel: Value,
    /// CDX requests of a fresh run.
    requests: u64,
}

async fn reference(index: &Path, out: &Path) -> Reference {
    let (cdx, fake, task) = start_cdx(0).await;
    run(&spec(index, &cdx), out, Arc::new(Progress::default()))
        .await
        .expect("the reference run");
    task.abort();
    let funnel = std::fs::read_to_string(out.join("funnel.json")).expect("funnel.json");
    Reference {
        sample: sample_of(out),
        funnel: serde_json::from_str(&funnel).expect("funnel JSON"),
        requests: fake.requests.load(Ordering::SeqCst),
    }
}

// ---------------------------------------------------------------------------------------------
// The binary over a data directory.
// ---------------------------------------------------------------------------------------------

/// A data directory, the job's input directory and a config file naming the archives.
struct Setup {
    _dir: tempfile::TempDir,
    config: PathBuf,
    data: PathBuf,
    index: PathBuf,
}

fn setup(archives: &[&SimulatedArchive], cdx: &str, deadline_secs: u64) -> Setup {
    let dir = tempfile::tempdir().expect("temp dir");
    let inputs = dir.path().join("inputs");
    std::fs::create_dir_all(&inputs).expect("mkdir");
    let index = index_file(&inputs);
    let data = dir.path().join("data");
    let connect = deadline_secs.min(2);
    let mut text = format!(
        "[upstream]\nconnect_timeout = \"{connect}s\"\ntimeout = \"{deadline_secs}s\"\ndeadline = \"{deadline_secs}s\"\n\n\
         [cache]\npath = {:?}\n\n[admin]\ntoken = {TOKEN:?}\n\n\
         [sampling]\ninput_dir = {:?}\nallowed_urls = [{cdx:?}]\nconcurrency = 4\nrate_limit = 0.0\n\n",
        data.join("cache").display().to_string(),
        inputs.display().to_string(),
    );
    for (i, a) in archives.iter().enumerate() {
        text.push_str(&format!(
            "[[archives]]\nid = \"a{i}\"\nname = \"a{i}\"\ntimemap = {:?}\ntimegate = {:?}\n\n",
            a.timemap_prefix(),
            a.timegate_prefix()
        ));
    }
    let config = dir.path().join("config.toml");
    std::fs::write(&config, text).expect("config");
    Setup {
        _dir: dir,
        config,
        data,
        index,
    }
}

/// A response's body as JSON; `what` names it in a failure.
async fn json_of(r: reqwest::Response, what: &str) -> Value {
    let text = r
        .text()
        .await
        .unwrap_or_else(|e| panic!("{what}: no whole body: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{what}: not JSON ({e}): {text}"))
}

fn admin_get(url: String) -> reqwest::RequestBuilder {
    client().get(url).bearer_auth(TOKEN)
}

async fn job_status(base: &str, id: &str) -> Value {
    let r = admin_get(format!("{base}/admin/sampling/jobs/{id}"))
        .send()
        .await
        .expect("job status");
    assert_eq!(r.status(), 200);
    json_of(r, "status JSON").await
}

async fn submit_job(base: &str, cdx: &str) -> String {
    let body = json!({"input": "index.txt", "cdx_api": cdx, "dialect": "ia", "seed": 42,
                      "popular_domains": ["twitter.com"], "popular_quota": 1, "concurrency": 4});
    let r = client()
        .post(format!("{base}/admin/sampling/jobs"))
        .bearer_auth(TOKEN)
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .expect("POST job");
    assert_eq!(r.status(), 201);
    let v: Value = json_of(r, "JSON").await;
    v["id"].as_str().expect("an id").to_string()
}

fn answers(v: &Value) -> u64 {
    v["counters"]["cdx_answers"].as_u64().unwrap_or(0)
}

/// Polls the job until `until` holds (bounded: a hang is a failure, not a stuck test).
async fn wait_job(base: &str, id: &str, what: &str, until: impl Fn(&Value) -> bool) -> Value {
    let started = Instant::now();
    loop {
        let v = job_status(base, id).await;
        assert_ne!(v["state"], "failed", "{v}");
        if until(&v) {
            return v;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "job {id}: never {what}: {v}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The job's sample and funnel over HTTP are the uninterrupted run's.
async fn assert_same_sample(base: &str, id: &str, want: &Reference) {
    let r = admin_get(format!("{base}/admin/sampling/jobs/{id}/sample"))
        .send()
        .await
        .expect("sample");
    assert_eq!(r.status(), 200);
    let got: Vec<SampledUrl> = r
        .text()
        .await
        .expect("body")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a sample line"))
        .collect();
    assert_eq!(
        got, want.sample,
        "the resumed job's sample is the uninterrupted run's"
    );
    let r = admin_get(format!("{base}/admin/sampling/jobs/{id}/funnel"))
        .send()
        .await
        .expect("funnel");
    let funnel: Value = json_of(r, "funnel JSON").await;
    // Every stage counted every URL once: none lost to the stops, none counted twice.
    assert_eq!(funnel, want.funnel);
    let rows = funnel.as_array().expect("funnel rows");
    let first = rows
        .iter()
        .find(|r| r["stage"] == "first_capture")
        .expect("first_capture row");
    let n = |k: &str| first[k].as_u64().expect("a count");
    assert_eq!(n("in"), n("out") + n("set_aside") + n("errors"), "{first}");
}

/// The entries a restarted server must serve from disk: URI-R → its mementos as first served.
type Served = Arc<Mutex<Vec<(String, Vec<String>)>>>;

/// Each recorded URI-R is a HIT with the same mementos, and no archive is asked.
async fn assert_served_from_disk(base: &str, served: &Served, archives: &[&SimulatedArchive]) {
    let before: Vec<usize> = archives.iter().map(|a| a.requests()).collect();
    let entries = served.lock().expect("lock").clone();
    assert!(!entries.is_empty());
    for (uri, mementos) in &entries {
        let r = client()
            .get(format!("{base}/timemap/json/{uri}"))
            .send()
            .await
            .expect("request");
        assert_eq!(r.status(), 200, "{uri}");
        let cache = r
            .headers()
            .get("x-cache")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        assert_eq!(cache, "HIT", "{uri} answered before the stop");
        let json: Value = json_of(r, "JSON").await;
        assert_eq!(&memento_uris(&json), mementos, "{uri}");
    }
    let after: Vec<usize> = archives.iter().map(|a| a.requests()).collect();
    assert_eq!(before, after, "no archive was asked");
    let r = admin_get(format!("{base}/admin/stats"))
        .send()
        .await
        .expect("stats");
    let stats: Value = json_of(r, "stats JSON").await;
    let persistent = &stats["tiers"]["persistent"];
    assert_eq!(persistent["unreadable"], 0, "{stats}");
    assert!(
        persistent["entries"].as_u64().unwrap_or(0) >= entries.len() as u64,
        "{stats}"
    );
}

fn timemap_behaviour(delay: Duration) -> Behaviour {
    Behaviour::TimeMap(TimeMapSpec {
        delay,
        ..TimeMapSpec::of(CAPTURES)
    })
}

/// Clients asking for distinct URI-Rs (each a miss, so an entry written) until `stop`; each one
/// whose 200 arrived whole is recorded. `in_flight` counts requests sent and not yet answered.
fn clients(
    base: &str,
    round: usize,
    served: &Served,
    stop: &Arc<AtomicBool>,
    in_flight: &Arc<AtomicUsize>,
) -> Vec<tokio::task::JoinHandle<()>> {
    (0..4)
        .map(|task| {
            let (base, served, stop, in_flight) = (
                base.to_string(),
                served.clone(),
                stop.clone(),
                in_flight.clone(),
            );
            tokio::spawn(async move {
                let http = client();
                for i in 0..10_000 {
                    if stop.load(Ordering::SeqCst) {
                        return;
                    }
                    let uri = format!("http://r{round}.example/t{task}/p{i}");
                    in_flight.fetch_add(1, Ordering::SeqCst);
                    let answer = async {
                        let r = http
                            .get(format!("{base}/timemap/json/{uri}"))
                            .send()
                            .await
                            .ok()?;
                        if r.status() != 200 {
                            return None;
                        }
                        serde_json::from_str::<Value>(&r.text().await.ok()?).ok()
                    }
                    .await;
                    in_flight.fetch_sub(1, Ordering::SeqCst);
                    match answer {
                        Some(json) => served
                            .lock()
                            .expect("lock")
                            .push((uri, memento_uris(&json))),
                        // The server is gone: the kill.
                        None => return,
                    }
                }
            })
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// kill -9
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_mid_write_loses_nothing_answered_and_the_job_resumes() {
    let archives = [
        SimulatedArchive::start(timemap_behaviour(Duration::from_millis(15)))
            .await
            .expect("archive"),
        SimulatedArchive::start(timemap_behaviour(Duration::from_millis(5)))
            .await
            .expect("archive"),
    ];
    let refs: Vec<&SimulatedArchive> = archives.iter().collect();
    // Slow enough that the job is still in its first captures at the third kill (~300 of them,
    // 4 at a time), however slowly the clients' entries get written.
    let (cdx, fake, cdx_task) = start_cdx(30).await;
    let s = setup(&refs, &cdx, 10);
    let want = reference(&s.index, &s.data.join("reference")).await;

    // Each round kills at a different moment: the job after a varying number of answers, the
    // clients wherever they are.
    // `TMPROXY_TEST_SEED` replays a run's kill points (the answers counted before each kill);
    // the seed is printed, so a failure's output says how.
    let mut jitter = match std::env::var("TMPROXY_TEST_SEED") {
        Ok(v) => v
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("TMPROXY_TEST_SEED={v:?} is not a whole number")),
        Err(_) => std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos() as u64)
            .unwrap_or(7),
    };
    eprintln!("kill -9 rounds, jitter seed {jitter} (TMPROXY_TEST_SEED={jitter} replays it)");
    let served: Served = Arc::new(Mutex::new(Vec::new()));
    let mut job: Option<String> = None;
    let mut seen_answers = 0;
    for round in 0..3 {
        let server = ServeProcess::start(&s.config);
        let base = server.base.clone();
        let id = match &job {
            None => submit_job(&base, &cdx).await,
            Some(id) => {
                // Restarted: what was answered is on disk, and the job carries on from its
                // checkpoint (every answer counted before the kill was in it).
                for a in &archives {
                    a.set_behaviour(Behaviour::Status(404, String::new()));
                }
                assert_served_from_disk(&base, &served, &refs).await;
                for a in &archives {
                    a.set_behaviour(timemap_behaviour(Duration::from_millis(10)));
                }
                let v = job_status(&base, id).await;
                assert!(
                    matches!(v["state"].as_str(), Some("running")),
                    "resumed: {v}"
                );
                let resumed = wait_job(&base, id, "resumed", |v| {
                    v["stage"] != "" && v["stage"] != "offline"
                })
                .await;
                let resumed = resumed["counters"]["resumed_answers"].as_u64().unwrap_or(0);
                assert!(
                    resumed >= seen_answers,
                    "round {round}: the checkpoint holds {resumed} answers, {seen_answers} were counted before the kill"
                );
                id.clone()
            }
        };
        job = Some(id.clone());
        let stop = Arc::new(AtomicBool::new(false));
        let in_flight = Arc::new(AtomicUsize::new(0));
        let before = served.lock().expect("lock").len();
        let tasks = clients(&base, round, &served, &stop, &in_flight);
        jitter = jitter
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let target = seen_answers + 20 + (jitter >> 33) % 40;
        let started = Instant::now();
        loop {
            let v = job_status(&base, &id).await;
            let n = answers(&v);
            let recorded = served.lock().expect("lock").len() - before;
            if n >= target && recorded >= 5 && in_flight.load(Ordering::SeqCst) > 0 {
                seen_answers = n;
                break;
            }
            assert_eq!(
                v["state"], "running",
                "the job must be mid-way at the kill: {v}"
            );
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "round {round}: no progress ({n} answers, {recorded} answered):\n{}",
                server.log()
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        server.kill9();
        eprintln!(
            "round {round}: SIGKILL after {seen_answers} CDX answers, {} entries answered so far",
            served.lock().expect("lock").len()
        );
        stop.store(true, Ordering::SeqCst);
        for t in tasks {
            t.await.expect("client task");
        }
    }

    // The last restart: everything answered is there, the job finishes as if never stopped.
    for a in &archives {
        a.set_behaviour(Behaviour::Status(404, String::new()));
    }
    let before_last = fake.requests.load(Ordering::SeqCst);
    let server = ServeProcess::start(&s.config);
    let base = server.base.clone();
    let id = job.expect("a job");
    assert_served_from_disk(&base, &served, &refs).await;
    let done = wait_job(&base, &id, "done", |v| v["state"] == "done").await;
    let resumed = done["counters"]["resumed_answers"].as_u64().unwrap_or(0);
    assert!(resumed >= seen_answers, "{done}");
    assert_same_sample(&base, &id, &want).await;
    let last_part = fake.requests.load(Ordering::SeqCst) - before_last;
    assert!(
        last_part + resumed <= want.requests + 8,
        "the resumed run asked only what its checkpoint lacked: {last_part} requests after \
         the last restart, {resumed} from the checkpoint, a fresh run makes {}",
        want.requests
    );
    assert!(last_part < want.requests);
    drop(server);
    cdx_task.abort();
}

// ---------------------------------------------------------------------------------------------
// SIGTERM
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_finishes_requests_checkpoints_the_job_and_exits_0() {
    let slow = SimulatedArchive::start(timemap_behaviour(Duration::from_millis(1500)))
        .await
        .expect("archive");
    let (cdx, fake, cdx_task) = start_cdx(40).await;
    let s = setup(&[&slow], &cdx, 10);
    let want = reference(&s.index, &s.data.join("reference")).await;
    let mut server = ServeProcess::start(&s.config);
    let base = server.base.clone();
    let id = submit_job(&base, &cdx).await;
    wait_job(&base, &id, "busy", |v| answers(v) >= 30).await;

    // Slow requests, all of them reaching the archive before the signal.
    let uris: Vec<String> = (0..5).map(|i| format!("http://term.example/{i}")).collect();
    let requests: Vec<_> = uris
        .iter()
        .map(|uri| {
            let url = format!("{base}/timemap/json/{uri}");
            tokio::spawn(async move {
                let r = client().get(url).send().await.expect("answered");
                let status = r.status().as_u16();
                let json: Value = json_of(r, "a whole JSON body").await;
                (status, memento_uris(&json))
            })
        })
        .collect();
    let started = Instant::now();
    while slow.requests() < uris.len() {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "requests never arrived"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let v = job_status(&base, &id).await;
    assert_eq!(v["state"], "running", "mid-way at the signal: {v}");
    let counted = answers(&v);
    server.term();
    let signalled = Instant::now();
    let served: Served = Arc::new(Mutex::new(Vec::new()));
    for (uri, task) in uris.iter().zip(requests) {
        let (status, mementos) = task.await.expect("request task");
        assert_eq!(
            status, 200,
            "{uri}: a request in flight at SIGTERM finishes"
        );
        assert_eq!(mementos.len(), CAPTURES.len(), "{uri}");
        served.lock().expect("lock").push((uri.clone(), mementos));
    }
    let status = server.exit_within(Duration::from_secs(20)).await;
    assert!(
        status.success(),
        "exit 0 after SIGTERM, got {status:?}:\n{}",
        server.log()
    );
    eprintln!("SIGTERM to exit: {:?}", signalled.elapsed());
    let log = server.log();
    assert!(!log.contains("panicked"), "{log}");
    // The wind-down ran whole: the job reached its checkpoint in time, the store was flushed.
    assert!(
        log.contains("cache store flushed") && !log.contains("still busy"),
        "{log}"
    );

    // Checkpointed: still `running` on disk (to be resumed), every counted answer saved.
    let job_dir = s.data.join("sampling/jobs").join(&id);
    let state: Value = serde_json::from_str(
        &std::fs::read_to_string(job_dir.join("state.json")).expect("state.json"),
    )
    .expect("state JSON");
    assert_eq!(state["state"], "running", "{state}");
    let checkpoint =
        std::fs::read_to_string(job_dir.join("out/first_captures.ndjson")).expect("checkpoint");
    assert!(
        checkpoint.lines().count() as u64 >= counted,
        "{} answers in the checkpoint, {counted} counted before SIGTERM",
        checkpoint.lines().count()
    );
    assert!(
        checkpoint.is_empty() || checkpoint.ends_with('\n'),
        "no torn line"
    );

    // Restarted: the answers are served from disk, the job resumes and ends as if never stopped.
    slow.set_behaviour(Behaviour::Status(404, String::new()));
    let before = fake.requests.load(Ordering::SeqCst);
    let server = ServeProcess::start(&s.config);
    let base = server.base.clone();
    assert_served_from_disk(&base, &served, &[&slow]).await;
    let done = wait_job(&base, &id, "done", |v| v["state"] == "done").await;
    assert!(
        done["counters"]["resumed_answers"].as_u64().unwrap_or(0) >= counted,
        "{done}"
    );
    assert_same_sample(&base, &id, &want).await;
    assert!(fake.requests.load(Ordering::SeqCst) - before < want.requests);
    drop(server);
    cdx_task.abort();
}

/// A stop after the first captures (the popular-domain quota, asked one URL at a time) must not
/// let the job finish with the quota half filled and call that sample done.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_during_a_later_stage_resumes_to_the_whole_sample() {
    let (cdx, _fake, cdx_task) = start_cdx(40).await;
    let unused = SimulatedArchive::start(Behaviour::Status(404, String::new()))
        .await
        .expect("archive");
    let s = setup(&[&unused], &cdx, 10);
    let want = reference(&s.index, &s.data.join("reference")).await;
    let mut server = ServeProcess::start(&s.config);
    let base = server.base.clone();
    let id = submit_job(&base, &cdx).await;
    // The first captures go quickly, then the quota stage asks one URL at a time.
    wait_job(&base, &id, "in the quota stage", |v| {
        v["stage"] == "popular_quota"
    })
    .await;
    server.term();
    let status = server.exit_within(Duration::from_secs(20)).await;
    assert!(status.success(), "{status:?}:\n{}", server.log());
    let state: Value = serde_json::from_str(
        &std::fs::read_to_string(s.data.join("sampling/jobs").join(&id).join("state.json"))
            .expect("state.json"),
    )
    .expect("JSON");
    assert_eq!(state["state"], "running", "stopped, not done: {state}");
    let server = ServeProcess::start(&s.config);
    let base = server.base.clone();
    wait_job(&base, &id, "done", |v| v["state"] == "done").await;
    assert_same_sample(&base, &id, &want).await;
    drop(server);
    cdx_task.abort();
}

/// SIGTERM waits for requests in flight, but not forever: a second signal ends the wait.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_signal_cuts_a_stuck_drain_short() {
    let stuck = SimulatedArchive::start(Behaviour::HangBeforeHeaders)
        .await
        .expect("archive");
    let (cdx, _fake, cdx_task) = start_cdx(0).await;
    // An upstream deadline far beyond the test: only the second signal can end the drain.
    let s = setup(&[&stuck], &cdx, 300);
    let mut server = ServeProcess::start(&s.config);
    let base = server.base.clone();
    let request = tokio::spawn(async move {
        client()
            .get(format!("{base}/timemap/json/http://stuck.example/"))
            .send()
            .await
            .map(|r| r.status().as_u16())
    });
    let started = Instant::now();
    while stuck.requests() < 1 {
        assert!(started.elapsed() < Duration::from_secs(10), "never asked");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    server.term();
    // Still draining the stuck request a moment later…
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert!(
        server.is_running(),
        "the first signal waits for the request in flight:\n{}",
        server.log()
    );
    // …until a second signal.
    server.term();
    let status = server.exit_within(Duration::from_secs(10)).await;
    assert!(status.success(), "{status:?}:\n{}", server.log());
    let _ = request.await;
    cdx_task.abort();
}

/// A client that never finishes its request cannot hold the drain past its bound (the upstream
/// deadline + `DRAIN_SLACK`), even without a second signal. A half-sent body is a request in
/// flight, which only that bound ends (a half-sent head is no request yet: its connection is
/// dropped `serve::CLOSE_GRACE` after the server stops, so alone it no longer reaches the bound).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_never_finishes_cannot_hold_the_drain() {
    use tokio::io::AsyncWriteExt;
    let archive = SimulatedArchive::start(timemap_behaviour(Duration::ZERO))
        .await
        .expect("archive");
    let (cdx, _fake, cdx_task) = start_cdx(0).await;
    let s = setup(&[&archive], &cdx, 1);
    let mut server = ServeProcess::start(&s.config);
    let addr = server.base.trim_start_matches("http://").to_string();
    // Half a request head, then nothing.
    let mut stalled = tokio::net::TcpStream::connect(&addr)
        .await
        .expect("connect");
    stalled
        .write_all(b"GET /timemap/link/http://stalled.example/ HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        .await
        .expect("write");
    // A whole head, then half its body: the handler waits in `read_body`.
    let mut half_body = tokio::net::TcpStream::connect(&addr)
        .await
        .expect("connect");
    let head = format!(
        "POST /admin/sampling/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n\
         Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{{\"input\": "
    );
    half_body.write_all(head.as_bytes()).await.expect("write");
    tokio::time::sleep(Duration::from_millis(200)).await;
    server.term();
    let signalled = Instant::now();
    // docs/operating.md's bound: the whole shutdown takes at most deadline (1 s here) + 13 s.
    let status = server.exit_within(Duration::from_secs(1 + 13)).await;
    assert!(status.success(), "{status:?}:\n{}", server.log());
    eprintln!(
        "exit {:?} after SIGTERM with a stalled client",
        signalled.elapsed()
    );
    let log = server.log();
    assert!(
        log.contains("requests still in flight: closing them"),
        "the drain's bound ended it:\n{log}"
    );
    drop((stalled, half_body));
    cdx_task.abort();
}

/// A fan-out whose client hung up runs on (others may share it) and stores its TimeMap; SIGTERM
/// lets it finish and store before the process exits, so the restart serves it from disk.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_lets_a_refresh_nobody_waits_for_store_its_result() {
    let slow = SimulatedArchive::start(timemap_behaviour(Duration::from_millis(1500)))
        .await
        .expect("archive");
    let (cdx, _fake, cdx_task) = start_cdx(0).await;
    let s = setup(&[&slow], &cdx, 10);
    let mut server = ServeProcess::start(&s.config);
    let base = server.base.clone();
    let uri = "http://hung-up.example/";
    // The client gives up long before the archive answers.
    let gave_up = reqwest::Client::builder()
        .timeout(Duration::from_millis(300))
        .build()
        .expect("client")
        .get(format!("{base}/timemap/json/{uri}"))
        .send()
        .await;
    assert!(gave_up.is_err(), "the client hung up");
    let started = Instant::now();
    while slow.requests() < 1 {
        assert!(started.elapsed() < Duration::from_secs(10), "never asked");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    server.term();
    let status = server.exit_within(Duration::from_secs(20)).await;
    assert!(status.success(), "{status:?}:\n{}", server.log());

    slow.set_behaviour(Behaviour::Status(404, String::new()));
    let server = ServeProcess::start(&s.config);
    let served: Served = Arc::new(Mutex::new(vec![(
        uri.to_string(),
        CAPTURES
            .iter()
            .map(|t| slow.uri_m(t, uri))
            .collect::<Vec<_>>(),
    )]));
    assert_served_from_disk(&server.base, &served, &[&slow]).await;
    drop(server);
    cdx_task.abort();
}
