//! The run's live progress: counters the stages bump as they go (atomics, read by the CLI's bars
//! and the jobs API), the rate windows, and `progress.json` in the output directory, written
//! whole and renamed into place at every stage change and every few seconds, so a job's stage
//! and counters survive a restart. The view of them is [`super::progress`]'s, pure.

use super::progress::{
    self, ProgressView, RateWindow, Rates, Snapshot, StageCounts, FIRST_CAPTURE, OFFLINE,
    POPULAR_QUOTA, STAGES, TIMEMAPS,
};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// The most of `progress.json` read back (it is a few kilobytes).
const MAX_SAVED: u64 = 1 << 20;

/// How often a run writes `progress.json` besides its stage changes.
pub const SAVE_EVERY: std::time::Duration = std::time::Duration::from_secs(5);

/// One stage's live counters. `floor` and `fetched_before` come from the snapshot a resumed
/// run starts from: the run walks the input again from its start, reusing the checkpoint's
/// answers, so its own `done` starts at 0 and the work already done is the floor.
#[derive(Default)]
struct StageLive {
    done: AtomicU64,
    floor: AtomicU64,
    /// `u64::MAX`: not known yet.
    total: AtomicU64,
    seen: AtomicU64,
    fetched: AtomicU64,
    fetched_before: AtomicU64,
    reused: AtomicU64,
    window: Mutex<RateWindow>,
}

/// Live progress, shared with whoever watches (the CLI's bars, the jobs API).
pub struct Progress {
    pub stage: Mutex<String>,
    pub lines: AtomicU64,
    pub candidates: AtomicU64,
    pub cdx_answers: AtomicU64,
    pub resumed_answers: AtomicU64,
    pub sampled: AtomicU64,
    pub timemaps: AtomicU64,
    /// Set to stop at the next checkpoint.
    pub cancel: AtomicBool,
    /// Bytes of the input file read so far, and its size.
    pub input_read: Arc<AtomicU64>,
    pub input_size: AtomicU64,
    /// The engine's estimate of its big structures, checked against `[sampling] max_memory`.
    pub memory: super::MemoryUse,
    stages: [StageLive; 6],
    /// First-capture answers fetched, the three CDX stages together (they share one client).
    cdx: Mutex<RateWindow>,
    /// The input bytes last counted in the offline stage's window.
    offline_mark: AtomicU64,
    /// What does not change within a run, and the run's warnings.
    fixed: Mutex<Snapshot>,
    epoch: Instant,
    save_to: Mutex<Option<PathBuf>>,
    /// Each stage's total as last shown, which an estimate keeps until the evidence moves it.
    shown: Mutex<[Option<u64>; 6]>,
}

impl Default for Progress {
    fn default() -> Progress {
        let p = Progress {
            stage: Mutex::default(),
            lines: AtomicU64::default(),
            candidates: AtomicU64::default(),
            cdx_answers: AtomicU64::default(),
            resumed_answers: AtomicU64::default(),
            sampled: AtomicU64::default(),
            timemaps: AtomicU64::default(),
            cancel: AtomicBool::default(),
            input_read: Arc::default(),
            input_size: AtomicU64::default(),
            memory: super::MemoryUse::default(),
            stages: Default::default(),
            cdx: Mutex::default(),
            offline_mark: AtomicU64::default(),
            fixed: Mutex::default(),
            epoch: Instant::now(),
            shown: Mutex::default(),
            save_to: Mutex::default(),
        };
        for s in &p.stages {
            s.total.store(u64::MAX, Ordering::Relaxed);
        }
        p
    }
}

/// The index of a stage by name (a stage the view does not show counts nowhere).
fn index(stage: &str) -> Option<usize> {
    STAGES.iter().position(|s| *s == stage)
}

impl Progress {
    /// Progress as a snapshot left it (a job's `progress.json`, read when the server opens its
    /// jobs), shown until a run starts.
    pub fn from_snapshot(s: &Snapshot) -> Progress {
        let p = Progress::default();
        p.show(s);
        p
    }

    /// `progress.json` in `out`, if there is a readable one (read up to `MAX_SAVED`: a file
    /// on disk after a crash is not trusted to be what was written).
    pub fn read_saved(out: &Path) -> Option<Snapshot> {
        use std::io::Read;
        let file = std::fs::File::open(out.join("progress.json")).ok()?;
        let mut text = Vec::new();
        file.take(MAX_SAVED).read_to_end(&mut text).ok()?;
        serde_json::from_slice(&text).ok()
    }

    fn show(&self, s: &Snapshot) {
        self.set_stage(&s.stage);
        for (a, v) in [
            (&self.lines, s.lines),
            (&self.candidates, s.candidates),
            (&self.cdx_answers, s.cdx_answers),
            (&self.resumed_answers, s.checkpoint_answers),
            (&self.sampled, s.sampled),
            (&self.timemaps, s.timemaps),
        ] {
            a.store(v, Ordering::Relaxed);
        }
        self.input_read
            .store(s.stages[OFFLINE].done, Ordering::Relaxed);
        self.input_size
            .store(s.stages[OFFLINE].total.unwrap_or(0), Ordering::Relaxed);
        for (live, c) in self.stages.iter().zip(&s.stages) {
            live.done.store(c.done, Ordering::Relaxed);
            live.floor.store(0, Ordering::Relaxed);
            live.total
                .store(c.total.unwrap_or(u64::MAX), Ordering::Relaxed);
            live.seen.store(c.seen, Ordering::Relaxed);
            live.fetched.store(c.fetched, Ordering::Relaxed);
            live.fetched_before.store(0, Ordering::Relaxed);
            live.reused.store(c.reused, Ordering::Relaxed);
        }
        if let Ok(mut f) = self.fixed.lock() {
            *f = Snapshot {
                stages: Default::default(),
                ..s.clone()
            };
        }
    }

    /// A run starts (the stage it shows stays until the run moves on): this run's counters from zero, its rates from now; `resumed_from` (a
    /// snapshot for the same spec) gives each stage's done work as a floor, its fetched count
    /// and its known totals (the same input and spec give the same ones).
    pub(super) fn begin(&self, fixed: Snapshot, resumed_from: Option<&Snapshot>, save_to: PathBuf) {
        for a in [
            &self.lines,
            &self.candidates,
            &self.cdx_answers,
            &self.sampled,
            &self.timemaps,
            &self.offline_mark,
        ] {
            a.store(0, Ordering::Relaxed);
        }
        self.input_read.store(0, Ordering::Relaxed);
        let now = self.now_ms();
        let empty = StageCounts::default();
        for (i, live) in self.stages.iter().enumerate() {
            let was = resumed_from.map_or(&empty, |s| &s.stages[i]);
            live.done.store(0, Ordering::Relaxed);
            live.floor.store(was.done, Ordering::Relaxed);
            // first_capture's total is re-estimated as the walk reads the input again (a known
            // one would show the offline stages done while they are reading).
            let total = was.total.filter(|_| i != FIRST_CAPTURE);
            live.total
                .store(total.unwrap_or(u64::MAX), Ordering::Relaxed);
            live.seen.store(0, Ordering::Relaxed);
            live.fetched.store(0, Ordering::Relaxed);
            live.fetched_before.store(was.fetched, Ordering::Relaxed);
            live.reused.store(0, Ordering::Relaxed);
            if let Ok(mut w) = live.window.lock() {
                w.start(now);
            }
        }
        if let Ok(mut w) = self.cdx.lock() {
            w.start(now);
        }
        if let Ok(mut f) = self.fixed.lock() {
            *f = fixed;
        }
        if let Ok(mut s) = self.save_to.lock() {
            *s = Some(save_to);
        }
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// Moves to `stage`, and saves the snapshot (the stage before it ended). The stage's own
    /// rate counts from now (the run-wide first-capture rate carries on across stages).
    pub(super) fn set_stage(&self, s: &str) {
        if let Ok(mut g) = self.stage.lock() {
            *g = s.to_string();
        }
        if let Some(i) = index(s) {
            let now = self.now_ms();
            if let Ok(mut w) = self.stages[i].window.lock() {
                w.start(now);
            }
        }
        self.save();
    }

    /// An answer for `stage` (by name): fetched from the CDX server or reused from the
    /// checkpoint. Only fetched ones count in the rates.
    pub(super) fn answer(&self, stage: &str, fetched: bool) {
        self.answer_at(stage, fetched, self.now_ms());
    }

    fn answer_at(&self, stage: &str, fetched: bool, now: u64) {
        let Some(i) = index(stage) else { return };
        let live = &self.stages[i];
        if !fetched {
            live.reused.fetch_add(1, Ordering::Relaxed);
            return;
        }
        live.fetched.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut w) = live.window.lock() {
            w.record(now, 1);
        }
        if i != TIMEMAPS {
            if let Ok(mut w) = self.cdx.lock() {
                w.record(now, 1);
            }
        }
    }

    pub(super) fn add_done(&self, stage: usize, n: u64) {
        self.stages[stage].done.fetch_add(n, Ordering::Relaxed);
    }

    pub(super) fn set_done(&self, stage: usize, n: u64) {
        self.stages[stage].done.store(n, Ordering::Relaxed);
    }

    pub(super) fn set_total(&self, stage: usize, n: u64) {
        self.stages[stage].total.store(n, Ordering::Relaxed);
    }

    pub(super) fn add_seen(&self, stage: usize, n: u64) {
        self.stages[stage].seen.fetch_add(n, Ordering::Relaxed);
    }

    pub(super) fn set_seen(&self, stage: usize, n: u64) {
        self.stages[stage].seen.store(n, Ordering::Relaxed);
    }

    pub(super) fn add_reused(&self, stage: usize, n: u64) {
        self.stages[stage].reused.fetch_add(n, Ordering::Relaxed);
    }

    /// The offline stages are through the input: first_capture's total is the candidates
    /// they handed over, popular_quota's the pool.
    pub(super) fn input_through(&self, pool: u64) {
        let fc = &self.stages[FIRST_CAPTURE];
        fc.total
            .store(fc.seen.load(Ordering::Relaxed), Ordering::Relaxed);
        self.set_total(POPULAR_QUOTA, pool);
    }

    /// Counts the input bytes read since the last call in the offline stage's rate.
    pub(super) fn offline_read(&self) {
        let read = self.input_read.load(Ordering::Relaxed);
        let before = self.offline_mark.swap(read, Ordering::Relaxed);
        let now = self.now_ms();
        if let Ok(mut w) = self.stages[OFFLINE].window.lock() {
            w.record(now, read.saturating_sub(before));
        }
    }

    /// A warning of the run (also in its `RunSummary` and the saved snapshot).
    pub(super) fn warn(&self, w: &str) {
        if let Ok(mut f) = self.fixed.lock() {
            if !f.warnings.iter().any(|x| x == w) {
                f.warnings.push(w.to_string());
            }
        }
    }

    /// The run's warnings so far.
    pub fn warnings(&self) -> Vec<String> {
        self.fixed
            .lock()
            .map(|f| f.warnings.clone())
            .unwrap_or_default()
    }

    /// The counters as they stand.
    pub fn snapshot(&self) -> Snapshot {
        let mut s = self.fixed.lock().map(|f| f.clone()).unwrap_or_default();
        s.stage = self.stage.lock().map(|g| g.clone()).unwrap_or_default();
        for (a, v) in [
            (&self.lines, &mut s.lines),
            (&self.candidates, &mut s.candidates),
            (&self.cdx_answers, &mut s.cdx_answers),
            (&self.resumed_answers, &mut s.checkpoint_answers),
            (&self.sampled, &mut s.sampled),
            (&self.timemaps, &mut s.timemaps),
        ] {
            *v = a.load(Ordering::Relaxed);
        }
        for (c, live) in s.stages.iter_mut().zip(&self.stages) {
            let total = live.total.load(Ordering::Relaxed);
            *c = StageCounts {
                done: live
                    .done
                    .load(Ordering::Relaxed)
                    .max(live.floor.load(Ordering::Relaxed)),
                total: (total != u64::MAX).then_some(total),
                seen: live.seen.load(Ordering::Relaxed),
                fetched: live
                    .fetched_before
                    .load(Ordering::Relaxed)
                    .saturating_add(live.fetched.load(Ordering::Relaxed)),
                reused: live.reused.load(Ordering::Relaxed),
            };
        }
        // The offline stage counts the input's bytes, the counters it always had.
        let size = self.input_size.load(Ordering::Relaxed);
        let through = s.stages[FIRST_CAPTURE].total.is_some();
        let offline = &mut s.stages[OFFLINE];
        offline.done = offline.done.max(self.input_read.load(Ordering::Relaxed));
        offline.total = (size > 0).then_some(size).or(offline.total);
        if through {
            // The input is through: what was read is all of it.
            offline.done = offline.done.max(offline.total.unwrap_or(0));
        }
        s
    }

    /// The view now; `active`: the run is going.
    pub fn view(&self, active: bool) -> ProgressView {
        self.view_at(self.now_ms(), active)
    }

    /// The view at `now` (milliseconds since this progress was made).
    fn view_at(&self, now: u64, active: bool) -> ProgressView {
        let rate = |w: &Mutex<RateWindow>| w.lock().ok().and_then(|w| w.rate(now));
        let mut rates = Rates {
            cdx: rate(&self.cdx),
            ..Rates::default()
        };
        for (r, live) in rates.stage.iter_mut().zip(&self.stages) {
            *r = rate(&live.window);
        }
        let mut shown = self.shown.lock().unwrap_or_else(|p| p.into_inner());
        let view = progress::view(&self.snapshot(), &rates, &shown[..], active);
        for (kept, stage) in shown.iter_mut().zip(&view.stages) {
            *kept = stage.total;
        }
        view
    }

    /// Writes `progress.json` (whole, then renamed) where the run said, if it did.
    pub(super) fn save(&self) {
        let Some(path) = self.save_to.lock().ok().and_then(|p| p.clone()) else {
            return;
        };
        // Not synced: rewritten every second, and a power cut loses at most the latest.
        let written = serde_json::to_string_pretty(&self.snapshot())
            .map_err(|e| e.to_string())
            .and_then(|text| {
                let bytes = (text + "\n").into_bytes();
                tmproxy_disk::write_atomically(&path, &bytes, tmproxy_disk::Durability::Unsynced)
                    .map_err(|e| e.to_string())
            });
        if let Err(e) = written {
            tracing::warn!(path = %path.display(), error = %e, "cannot save the run's progress");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reused_answers_count_as_reused_not_in_the_rate() {
        let p = Progress::default();
        let dir = tempfile::tempdir().expect("temp dir");
        p.begin(Snapshot::default(), None, dir.path().join("progress.json"));
        p.set_stage("first_capture");
        // Instants well after the run's start (which was at most a few ms after `p` was made).
        for t in 0..500 {
            p.answer_at("first_capture", false, 10_000 + t);
        }
        let v = p.view_at(20_000, true);
        assert_eq!(v.stages[FIRST_CAPTURE].reused, 500);
        assert_eq!(v.stages[FIRST_CAPTURE].fetched, 0);
        assert_eq!(v.cdx_rate_per_s, None, "reused answers are no rate");
        p.answer_at("first_capture", true, 20_000);
        assert!(p.view_at(20_000, true).cdx_rate_per_s.is_some());
        // Saved at the stage change, read back as it was.
        p.set_stage("popular_quota");
        let saved = Progress::read_saved(dir.path()).expect("saved");
        assert_eq!(saved.stage, "popular_quota");
        assert_eq!(saved.stages[FIRST_CAPTURE].reused, 500);
    }

    #[test]
    fn a_resumed_run_starts_from_the_saved_counters() {
        let mut was = Snapshot {
            stage: "first_capture".into(),
            ..Snapshot::default()
        };
        was.stages[FIRST_CAPTURE] = StageCounts {
            done: 300,
            total: Some(1000),
            fetched: 300,
            ..StageCounts::default()
        };
        was.stages[POPULAR_QUOTA].total = Some(40);
        let shown = Progress::from_snapshot(&was);
        assert_eq!(
            shown.snapshot().stages[FIRST_CAPTURE],
            was.stages[FIRST_CAPTURE]
        );
        let dir = tempfile::tempdir().expect("temp dir");
        let p = Progress::default();
        p.begin(
            Snapshot::default(),
            Some(&was),
            dir.path().join("progress.json"),
        );
        // The walk reuses 200 answers: done stays at the floor, fetched is the job's.
        for _ in 0..200 {
            p.answer("first_capture", false);
            p.add_done(FIRST_CAPTURE, 1);
        }
        let s = p.snapshot();
        let fc = &s.stages[FIRST_CAPTURE];
        assert_eq!((fc.done, fc.fetched, fc.reused), (300, 300, 200));
        // Its total is estimated again as the input is read again; later stages' are kept.
        assert_eq!(fc.total, None);
        assert_eq!(s.stages[POPULAR_QUOTA].total, Some(40));
        // Past the floor, with new answers fetched.
        for _ in 0..150 {
            p.answer("first_capture", true);
            p.add_done(FIRST_CAPTURE, 1);
        }
        let fc = p.snapshot().stages[FIRST_CAPTURE].clone();
        assert_eq!((fc.done, fc.fetched), (350, 450));
    }

    #[test]
    fn a_torn_or_hostile_saved_progress_is_no_progress() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("progress.json");
        for bad in [
            "{\"stage\": \"first_cap".to_string(),
            "\u{0}".repeat(10),
            format!("{{\"stage\": \"{}\"}}", "x".repeat(2 << 20)),
        ] {
            std::fs::write(&path, bad).expect("write");
            assert_eq!(Progress::read_saved(dir.path()), None);
        }
        // Counts at the edge of u64 do not overflow (a floor and a fetched count carried on).
        let mut huge = Snapshot::default();
        huge.stages[FIRST_CAPTURE].fetched = u64::MAX;
        huge.stages[FIRST_CAPTURE].done = u64::MAX;
        let p = Progress::default();
        p.begin(Snapshot::default(), Some(&huge), path);
        p.answer("first_capture", true);
        let v = p.view(true);
        assert_eq!(v.stages[FIRST_CAPTURE].fetched, u64::MAX);
    }
}
