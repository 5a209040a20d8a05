#!/usr/bin/env bash
# Two tmproxy builds, A and B, measured in one run on the same machine: cache hits (wrk against
# both, alternating, beside nginx serving the same bytes) and cache misses (examples/miss_burst
# against each, alternating).
#   bash benches/ab.sh A_BINARY B_BINARY [ROUNDS=3] [SECONDS=10] [CONNECTIONS=64]
# PARTS="hits" or PARTS="misses" runs one part only (default: both). LOG_A and LOG_B set each
# server's RUST_LOG for the hits (default "warn"; "info" is what an operator runs: a log line per
# request, written to a file here).
# e.g. a build of an older commit in its own worktree against this one:
#   git worktree add ../before <commit> && (cd ../before && cargo build --release --bin tmproxy)
#   cargo build --release --bin tmproxy && bash benches/ab.sh ../before/target/release/tmproxy target/release/tmproxy
# Needs nginx and wrk (Debian: apt-get install nginx-light wrk). Everything binds 127.0.0.1 and is
# stopped by its PID at the end; each wrk run lasts SECONDS, each miss burst a bounded count.
set -euo pipefail
PARTS=${PARTS:-hits misses}
LOG_A=${LOG_A:-warn}; LOG_B=${LOG_B:-warn}
A=$(realpath "$1"); B=$(realpath "$2"); ROUNDS=${3:-3}; SECS=${4:-10}; CONNS=${5:-64}
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source benches/nginx.sh
WORK=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT

cargo build --release --quiet --example e2e_bench --example miss_burst
echo "A: $A"; echo "B: $B"
echo "$(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(date -u +%F)"

# --- hits: one cached 100-memento TimeMap, served by A, B and nginx -----------------------------
if [[ " $PARTS " == *" hits "* ]]; then
target/release/examples/e2e_bench archive --captures 100 --port 18201 >"$WORK/archive.log" 2>&1 &
pids+=($!)
start_proxy() { # NAME BINARY PORT RUST_LOG
    cat >"$WORK/$1.toml" <<TOML
[[archives]]
id = "sim"
name = "simulated archive"
timemap = "http://127.0.0.1:18201/timemap/link/"
timegate = "http://127.0.0.1:18201/timegate/"
[cache]
path = "$WORK/cache-$1"
TOML
    RUST_LOG="$4" "$2" serve --config "$WORK/$1.toml" --listen "127.0.0.1:$3" >"$WORK/$1.log" 2>&1 &
    pids+=($!)
    local url="http://127.0.0.1:$3/timemap/link/http://example.com/"
    for _ in $(seq 50); do curl -sf -o "$WORK/body-$1" "$url" && break; sleep 0.2; done
    curl -s -D - -o "$WORK/body-$1" "$url" | grep -qi '^x-cache: HIT' || { echo "$1: not a HIT" >&2; exit 1; }
}
start_proxy a "$A" 18202 "$LOG_A"
start_proxy b "$B" 18203 "$LOG_B"
# The same bytes but for the port in their own links.
cmp <(sed 's/:18202\//:PORT\//g' "$WORK/body-a") <(sed 's/:18203\//:PORT\//g' "$WORK/body-b") \
    && echo "A and B serve the same TimeMap ($(wc -c <"$WORK/body-a") bytes)"

serve_with_nginx "$WORK" "$WORK/body-a" 18204

hit() { wrk -t2 -c"$CONNS" -d"${SECS}s" --latency "$2" | awk -v who="$1" '
  /Requests\/sec/ {rps=$2} /^ +50%/ {p50=$2} /^ +99%/ {p99=$2} /Non-2xx/ {bad=$NF}
  END {printf "hits  %-6s %10s req/s  p50 %8s  p99 %8s  non-2xx %s\n", who, rps, p50, p99, (bad==""?0:bad)}'; }
echo "hits: wrk -t2 -c$CONNS -d${SECS}s, load $(cut -d' ' -f1-3 /proc/loadavg)"
for round in $(seq "$ROUNDS"); do
    echo "round $round"
    hit nginx "http://127.0.0.1:18204/timemap"
    hit A "http://127.0.0.1:18202/timemap/link/http://example.com/"
    hit B "http://127.0.0.1:18203/timemap/link/http://example.com/"
done
cleanup; pids=(); WORK=$(mktemp -d)
fi

# --- misses: distinct never-seen URI-Rs, small and large TimeMaps -------------------------------
[[ " $PARTS " == *" misses "* ]] || exit 0
miss() { # NAME BINARY MISSES MEMENTOS CONNECTIONS
    target/release/examples/miss_burst --server "$2" --misses "$3" --mementos "$4" \
        --connections "$5" --after 0s | awk -v who="$1" '/^miss_burst:|RSS:/ {print "misses " who ": " $0}'
}
for round in $(seq "$ROUNDS"); do
    echo "round $round"
    miss A "$A" 5000 1000 64
    miss B "$B" 5000 1000 64
    miss A "$A" 20 100000 4
    miss B "$B" 20 100000 4
done
