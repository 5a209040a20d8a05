//! The progress view on SYNTHETIC counters and instants: no clock is read.

use super::*;

/// A run in first_capture: a 1,000,000-byte input read to a quarter, 1,000 candidates handed
/// over so far, 800 decided.
fn in_first_capture() -> Snapshot {
    let mut s = Snapshot {
        spec_hash: "h".into(),
        stage: "first_capture".into(),
        popular_cap: 5_000,
        roots_window: true,
        ..Snapshot::default()
    };
    s.stages[OFFLINE] = StageCounts {
        done: 250_000,
        total: Some(1_000_000),
        ..StageCounts::default()
    };
    s.stages[FIRST_CAPTURE] = StageCounts {
        done: 800,
        seen: 1_000,
        fetched: 600,
        reused: 200,
        ..StageCounts::default()
    };
    s.stages[POPULAR_QUOTA].seen = 50;
    s.stages[ROOT_UPSAMPLING].seen = 40;
    s
}

#[test]
fn the_rate_is_over_a_sliding_minute_of_passed_in_instants() {
    let mut w = RateWindow::default();
    w.start(0);
    assert_eq!(w.rate(5_000), None, "nothing counted yet");
    w.record(100, 2);
    assert_eq!(w.rate(200), None, "too short a time to say");
    // 10 a second for 30 s: the rate is over the 30 s since the start, not a minute.
    for t in 0..30 {
        w.record(t * 1000, if t == 0 { 8 } else { 10 });
    }
    assert_eq!(w.rate(30_000), Some(10.0));
    // 60 more seconds with nothing: the window slides past all of it.
    assert_eq!(w.rate(91_000), None);
    // Then 5 a second for two minutes: only the last minute counts.
    for t in 91..211 {
        w.record(t * 1000, 5);
    }
    let r = w.rate(210_500).expect("a rate");
    assert!((r - 5.0).abs() < 0.2, "{r}");
    assert!(w.buckets.len() <= 61, "bounded: {}", w.buckets.len());
    // The start of a resumed run: what came before is not this run's rate.
    w.start(300_000);
    assert_eq!(w.rate(300_500), None);
}

#[test]
fn first_captures_are_estimated_from_candidates_per_input_byte() {
    let rates = Rates {
        cdx: Some(10.0),
        ..Rates::default()
    };
    let v = view(&in_first_capture(), &rates, &[], true);
    let fc = &v.stages[FIRST_CAPTURE];
    assert_eq!((fc.total, fc.total_estimated), (Some(4_000), true));
    assert_eq!((fc.fetched, fc.reused), (600, 200));
    assert_eq!(v.stages[OFFLINE].state, "running");
    let quota = &v.stages[POPULAR_QUOTA];
    assert_eq!((quota.total, quota.total_estimated), (Some(200), true));
    // 40 domains without a root among 800 decided, of ~4,000.
    assert_eq!(v.stages[ROOT_UPSAMPLING].total, Some(200));
    assert_eq!(v.stages[TIMEMAPS].state, "skipped");
    // (3,200 + 200 + 200) left at 10/s.
    assert_eq!(v.eta_seconds, Some(360.0));
    assert_eq!(v.stages[FIRST_CAPTURE].eta_seconds, Some(320.0));
    assert!(
        v.eta_basis.contains("~3200 left at 10.0/s"),
        "{}",
        v.eta_basis
    );
}

#[test]
fn no_eta_before_any_answer_is_fetched() {
    let v = view(&in_first_capture(), &Rates::default(), &[], true);
    assert_eq!(v.eta_seconds, None);
    assert!(v.eta_basis.contains("nothing fetched"), "{}", v.eta_basis);
    // Nothing read yet: no estimate either, and no number made up.
    let mut s = in_first_capture();
    s.stages[OFFLINE].done = 0;
    let v = view(&s, &Rates::default(), &[], true);
    assert_eq!(v.stages[FIRST_CAPTURE].total, None);
    assert_eq!(v.eta_seconds, None);
}

#[test]
fn the_timemaps_keep_the_eta_unknown_until_their_stage_has_a_rate() {
    let mut s = in_first_capture();
    s.collect_timemaps = true;
    let rates = Rates {
        cdx: Some(10.0),
        ..Rates::default()
    };
    let v = view(&s, &rates, &[], true);
    assert_eq!(v.eta_seconds, None, "the sample size is not known yet");
    assert!(v.eta_basis.contains("timemaps"), "{}", v.eta_basis);
    assert_eq!(v.stages[FIRST_CAPTURE].eta_seconds, Some(320.0));
    // In the TimeMaps: 300 of 1,000, 7 a second.
    s.stage = "timemaps".into();
    s.stages[FIRST_CAPTURE].total = Some(1_000);
    s.stages[TIMEMAPS] = StageCounts {
        done: 300,
        total: Some(1_000),
        ..StageCounts::default()
    };
    assert_eq!(
        view(&s, &rates, &[], true).eta_seconds,
        None,
        "no TimeMap rate"
    );
    let mut rates = rates;
    rates.stage[TIMEMAPS] = Some(7.0);
    let v = view(&s, &rates, &[], true);
    assert_eq!(v.eta_seconds, Some(100.0));
    assert_eq!(v.stages[FIRST_CAPTURE].state, "done");
    assert_eq!(v.stages[TIMEMAPS].rate_per_s, Some(7.0));
}

#[test]
fn a_finished_or_stopped_run_has_no_rate_and_says_why() {
    let mut s = in_first_capture();
    let rates = Rates {
        cdx: Some(10.0),
        stage: [Some(1.0); 6],
    };
    let stopped = view(&s, &rates, &[], false);
    assert_eq!(stopped.eta_seconds, None);
    assert_eq!(stopped.cdx_rate_per_s, None);
    assert_eq!(stopped.stages[FIRST_CAPTURE].state, "stopped");
    assert_eq!(stopped.stages[FIRST_CAPTURE].rate_per_s, None);
    s.stage = "done".into();
    let done = view(&s, &Rates::default(), &[], false);
    assert_eq!(done.eta_seconds, Some(0.0));
    assert!(done.stages[..5].iter().all(|st| st.state == "done"));
    s.stage = String::new();
    assert_eq!(view(&s, &rates, &[], true).eta_basis, "not started");
}

#[test]
fn work_left_in_known_totals_is_what_the_eta_counts() {
    // Root upsampling with 100 domains, 60 asked, the quota done: 40 at 20/s.
    let mut s = in_first_capture();
    s.stage = "root_upsampling".into();
    s.stages[FIRST_CAPTURE].total = Some(1_000);
    s.stages[POPULAR_QUOTA].total = Some(50);
    s.stages[ROOT_UPSAMPLING] = StageCounts {
        done: 60,
        total: Some(100),
        ..StageCounts::default()
    };
    let rates = Rates {
        cdx: Some(20.0),
        ..Rates::default()
    };
    let v = view(&s, &rates, &[], true);
    assert_eq!(v.eta_seconds, Some(2.0));
    assert!(!v.stages[ROOT_UPSAMPLING].total_estimated);
    assert_eq!(v.stages[OFFLINE].state, "done");
    // No window for roots: nothing to ask, whatever was seen.
    s.roots_window = false;
    s.stages[ROOT_UPSAMPLING] = StageCounts::default();
    assert_eq!(view(&s, &rates, &[], true).eta_seconds, Some(0.0));
}

#[test]
fn lines_for_the_cli() {
    let rates = Rates {
        cdx: Some(10.0),
        stage: [None, Some(10.0), None, None, None, None],
    };
    let v = view(&in_first_capture(), &rates, &[], true);
    assert_eq!(
        plain_line(&v),
        "first_capture 800/~4000 candidates (running), 10.0/s fetched, 200 reused; ETA 6m 00s"
    );
    let v = view(&in_first_capture(), &Rates::default(), &[], true);
    assert!(plain_line(&v).contains("no rate yet"), "{}", plain_line(&v));
    assert_eq!(human_secs(59.4), "59s");
    assert_eq!(human_secs(3725.0), "1h 02m");
    assert_eq!(human_secs(2.0 * 86400.0 + 7200.0), "2d 02h");
}

#[test]
fn a_snapshot_round_trips_and_an_old_or_torn_one_reads_as_defaults() {
    let s = in_first_capture();
    let text = serde_json::to_string(&s).expect("json");
    assert_eq!(serde_json::from_str::<Snapshot>(&text).expect("read"), s);
    let partial: Snapshot = serde_json::from_str(r#"{"stage": "done"}"#).expect("partial");
    assert_eq!(partial.stage, "done");
    assert!(serde_json::from_str::<Snapshot>("{\"stage\": \"do").is_err());
}

#[test]
fn an_estimate_moves_only_when_the_evidence_does() {
    // Nothing shown yet: the estimate, at least what is done.
    assert_eq!(steady(None, 1_443, 0.1, 0), 1_443);
    assert_eq!(steady(None, 10, 0.1, 50), 50);
    // Early (a tenth read, a band of ±45%): 1,986 and 1,557 are within the noise of 1,443.
    assert_eq!(steady(Some(1_443), 1_986, 0.1, 100), 1_443);
    assert_eq!(steady(Some(1_443), 1_557, 0.1, 100), 1_443);
    // Well past it, the estimate moves.
    assert_eq!(steady(Some(1_443), 2_500, 0.1, 100), 2_500);
    // Near the end the band is narrow: a 10% move is evidence.
    assert_eq!(steady(Some(2_000), 2_200, 0.95, 1_900), 2_200);
    assert_eq!(steady(Some(2_000), 2_050, 0.95, 1_900), 2_000);
    // Never under what is done.
    assert_eq!(steady(Some(1_000), 1_050, 0.5, 1_200), 1_200);
}
