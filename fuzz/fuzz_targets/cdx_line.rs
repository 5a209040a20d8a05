//! Fuzz target: Wayback index lines (ZipNum, CDX, CDXJ), CDX API answers in both dialects, the index reader.
//! The properties live in `tmproxy_testkit::invariants::cdx_line`, which the test suite also replays.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| tmproxy_testkit::invariants::cdx_line(data));
