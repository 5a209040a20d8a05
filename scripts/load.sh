#!/usr/bin/env bash
# The 60 s load benchmark (BENCHMARKS.md, "The 60 s load run"): builds the release server and the load tool, then runs
# 200 persistent connections for 60 s, 90% cache hits / 10% misses against three simulated
# archives answering in 20-80 ms. Exits non-zero on any error or a growing server RSS.
#   bash scripts/load.sh                       # the documented defaults
#   bash scripts/load.sh --duration 10s        # any option of examples/load.rs passes through
# Everything binds 127.0.0.1; the tool starts and kills the server itself (by PID).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
TARGET=${CARGO_TARGET_DIR:-target}
cargo build --release --bin tmproxy --example load
exec "$TARGET/release/examples/load" --server "$TARGET/release/tmproxy" \
  --duration 60s --connections 200 "$@"
