//! Fuzz target: The link-format TimeMap parser and the round trip through our serialisers.
//! The properties live in `tmproxy_testkit::invariants::link_format`, which the test suite also replays.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| tmproxy_testkit::invariants::link_format(data));
