//! The integration test binary: the real app on 127.0.0.1:0 against simulated archives and pywb.

mod against_pywb;
mod aggregate;
mod budget;
mod cache;
mod cli;
mod compat;
mod connections;
mod damaged_store;
mod disk_faults;
mod endpoints;
mod faults;
mod fuzz_corpus;
mod injection;
mod load;
mod ops;
mod process_bounds;
mod pywb;
mod redirects;
mod restarts;
mod routes_hardening;
mod routes_prop;
mod sampling_api;
mod sampling_cdx;
mod sampling_job;
mod support;
mod ui;
