//! Integration tests for tmproxy, run against real pywb archives (see `pywb`).

mod pywb;
