//! Fuzz target: SURT keys to URLs and hosts back to SURT host keys.
//! The properties live in `tmproxy_testkit::invariants::surt`, which the test suite also replays.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| tmproxy_testkit::invariants::surt(data));
