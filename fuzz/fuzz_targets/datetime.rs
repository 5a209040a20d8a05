//! Fuzz target: RFC 1123 and 14-digit datetimes, the /memento/ path datetime, config durations and sizes.
//! The properties live in `tmproxy_testkit::invariants::datetime`, which the test suite also replays.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| tmproxy_testkit::invariants::datetime(data));
