#!/usr/bin/env bash
# User-space instructions per cache hit, counted by callgrind: the figure that does not move with
# the machine's load or state, for telling what a change to the hit path saves.
#   bash benches/hit_instructions.sh [MEMENTOS=100] [SECONDS=8]
# Rows: tmproxy serving a cached MEMENTOS-memento TimeMap; with BASE=path/to/another/tmproxy, that
# build (`base`); and the two anchors of benches/hit_vs_nginx.sh: plain hyper serving the same
# bytes (`floor`, examples/hyper_floor.rs) and the same plain hyper sending tmproxy's whole head
# (`floor-hd`). Each server runs under `valgrind --tool=callgrind`; after a warm-up of 3 s of wrk
# its counts are zeroed, `wrk -t1 -c4 -dSECONDS` asks, and the instructions counted since (every
# thread of the server) are divided by the requests wrk saw answered. KEEP=dir keeps each row's
# callgrind file there (`callgrind_annotate --inclusive=yes FILE` shows where they went).
# Needs valgrind and wrk (Debian: apt-get install valgrind wrk). Binds 127.0.0.1 only; every
# server is stopped by its PID.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
N=${1:-100}; SECS=${2:-8}
WORK=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT
command -v valgrind >/dev/null || { echo "valgrind is needed (apt-get install valgrind)"; exit 1; }

cargo build --release --quiet --bin tmproxy --example e2e_bench --example hyper_floor
target/release/examples/e2e_bench archive --captures "$N" --port 18131 >"$WORK/archive.log" 2>&1 &
pids+=($!)

# $1 row name, $2 URL, then the server's command line. Prints the row.
count() {
    local name=$1 url=$2 out="$WORK/$1.cg" pid
    shift 2
    valgrind --tool=callgrind --callgrind-out-file="$out" "$@" >"$WORK/$name.log" 2>&1 &
    pid=$!; pids+=("$pid")
    for _ in $(seq 240); do curl -sf -o /dev/null "$url" && break; sleep 0.5; done
    wrk -t1 -c4 -d3s "$url" >/dev/null
    callgrind_control -z "$pid" >/dev/null 2>&1
    wrk -t1 -c4 -d"${SECS}s" "$url" >"$WORK/$name.wrk"
    callgrind_control -d "$pid" >/dev/null 2>&1
    kill "$pid"; wait "$pid" 2>/dev/null || true
    local requests instructions
    requests=$(awk '/requests in/ {print $1}' "$WORK/$name.wrk")
    instructions=$(awk '/^summary:/ {print $2}' "$out".1)
    if [ -n "${KEEP:-}" ]; then mkdir -p "$KEEP"; cp "$out".1 "$KEEP/$name.callgrind"; fi
    awk -v who="$name" -v n="$requests" -v i="$instructions" \
        'BEGIN {printf "%-8s %8d requests  %7.0f instructions a request\n", who, n, i / n}' | tee -a "$WORK/rows"
}

tmproxy_row() { # $1 row name, $2 binary, $3 port
    cat >"$WORK/$1.toml" <<TOML
[[archives]]
id = "sim"
name = "simulated archive"
timemap = "http://127.0.0.1:18131/timemap/link/"
timegate = "http://127.0.0.1:18131/timegate/"
[cache]
path = "$WORK/$1-cache"
TOML
    RUST_LOG=warn count "$1" "http://127.0.0.1:$3/timemap/link/http://example.com/" \
        "$2" serve --config "$WORK/$1.toml" --listen "127.0.0.1:$3"
}

echo "callgrind, wrk -t1 -c4 -d${SECS}s after 3 s, $(nproc) cores,$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2), $(date -u +%F)"
tmproxy_row tmproxy target/release/tmproxy 18132
if [ -n "${BASE:-}" ]; then tmproxy_row base "$BASE" 18133; fi
# The anchors serve what tmproxy serves: its body, and (floor-hd) its head as a hit carries it,
# made once and cloned per answer.
RUST_LOG=warn target/release/tmproxy serve --config "$WORK/tmproxy.toml" --listen 127.0.0.1:18134 >"$WORK/head-source.log" 2>&1 &
pids+=($!)
for _ in $(seq 50); do curl -sf -o "$WORK/body" http://127.0.0.1:18134/timemap/link/http://example.com/ && break; sleep 0.2; done
curl -s -D "$WORK/head" -o "$WORK/body" http://127.0.0.1:18134/timemap/link/http://example.com/
count floor http://127.0.0.1:18135/ target/release/examples/hyper_floor "$WORK/body" 18135 2
count floor-hd http://127.0.0.1:18136/ target/release/examples/hyper_floor "$WORK/body" 18136 2 "$WORK/head"
awk '{i[$1] = $4} END {printf "tmproxy: %.2fx the floor, %.2fx floor-hd", i["tmproxy"] / i["floor"], i["tmproxy"] / i["floor-hd"]
    if ("base" in i) printf ", %.3fx base", i["tmproxy"] / i["base"]; print ""}' "$WORK/rows"
