#!/usr/bin/env bash
# Cache-hit throughput of tmproxy against nginx serving the same bytes as a static file.
#   bash benches/hit_vs_nginx.sh [MEMENTOS=100] [SECONDS=10] [CONNECTIONS=64]
# A third row per round, `tm-br`, asks tmproxy with Accept-Encoding: br (the coded body is made
# once, on the first such request, and kept).
# Needs nginx and wrk (Debian: apt-get install nginx-light wrk). Everything binds 127.0.0.1 and is
# stopped by its PID at the end; wrk runs are bounded by SECONDS.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source benches/nginx.sh
N=${1:-100}; SECS=${2:-10}; CONNS=${3:-64}
WORK=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT

cargo build --release --quiet --bin tmproxy --example e2e_bench
target/release/examples/e2e_bench archive --captures "$N" --port 18101 >"$WORK/archive.log" 2>&1 &
pids+=($!)
cat >"$WORK/tmproxy.toml" <<TOML
[[archives]]
id = "sim"
name = "simulated archive"
timemap = "http://127.0.0.1:18101/timemap/link/"
timegate = "http://127.0.0.1:18101/timegate/"
[cache]
path = "$WORK/cache"
TOML
RUST_LOG=warn target/release/tmproxy serve --config "$WORK/tmproxy.toml" --listen 127.0.0.1:18102 >"$WORK/tmproxy.log" 2>&1 &
pids+=($!)
URL_T="http://127.0.0.1:18102/timemap/link/http://example.com/"
for _ in $(seq 50); do curl -sf -o "$WORK/body" "$URL_T" && break; sleep 0.2; done
curl -s -D - -o "$WORK/body" "$URL_T" | grep -i '^x-cache' # must say HIT
echo "body: $(wc -c <"$WORK/body") bytes, $(grep -c 'rel="[a-z ]*memento"' "$WORK/body") mementos"

serve_with_nginx "$WORK" "$WORK/body" 18103
URL_N="http://127.0.0.1:18103/timemap"
cmp "$WORK/body" <(curl -sf "$URL_N") && echo "nginx serves the same bytes"

run() { wrk -t2 -c"$CONNS" -d"${SECS}s" --latency ${3:+-H "$3"} "$2" | awk -v who="$1" '
  /Requests\/sec/ {rps=$2} /^ +50%/ {p50=$2} /^ +99%/ {p99=$2} /Non-2xx/ {bad=$NF}
  END {printf "%-8s %10s req/s  p50 %8s  p99 %8s  non-2xx %s\n", who, rps, p50, p99, (bad==""?0:bad)}'; }
echo "wrk -t2 -c$CONNS -d${SECS}s, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "br body: $(curl -s -H 'Accept-Encoding: br' "$URL_T" | wc -c) bytes"
for round in 1 2; do
    run nginx "$URL_N"; run tmproxy "$URL_T"; run tm-br "$URL_T" "Accept-Encoding: br"
done
