#!/usr/bin/env bash
# Cache-hit throughput of two replicas sharing Redis, beside one replica without Redis, in one run:
#   bash benches/replicas.sh [SECONDS=5] [CONNECTIONS=64]
# 1. `solo`: one replica, no shared tier, 3000 entries warm in memory: hits, round and round.
# 2. A and B share a real redis-server. A fetches 40,000 URI-Rs (its writes fill Redis); then
#    `redis-only`: B asks for them, each once, so every answer is read from Redis (B's local
#    tiers start empty and are filled as it goes; the run must end before the URI-Rs do, and
#    says so if not); then `warm`: B, round and round over 3000 of them, after one unmeasured
#    round that brings them back into its memory tier.
# Each entry is a 100-memento TimeMap from the simulated archive (synthetic; every URI-R gets
# the same list; 3000 of them fit the default 256 MiB memory tier). wrk walks the URI-Rs in
# order with a Lua counter. Everything binds 127.0.0.1 and is stopped by
# its PID at the end. Needs wrk and redis-server.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
SECS=${1:-5}; CONNS=${2:-64}; N=3000; ALL=40000
WORK=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT

cargo build --release --quiet --bin tmproxy --example e2e_bench
target/release/examples/e2e_bench archive --captures 100 --port 18301 >"$WORK/archive.log" 2>&1 &
pids+=($!)
redis-server --port 18309 --bind 127.0.0.1 --save '' --appendonly no --daemonize no >"$WORK/redis.log" 2>&1 &
pids+=($!)

replica() { # $1 name, $2 port, $3 shared address ("" = none)
    cat >"$WORK/$1.toml" <<TOML
[[archives]]
id = "sim"
name = "simulated archive (synthetic)"
timemap = "http://127.0.0.1:18301/timemap/link/"
timegate = "http://127.0.0.1:18301/timegate/"
[cache]
path = "$WORK/$1-cache"
shared = "$3"
TOML
    RUST_LOG=warn target/release/tmproxy serve --config "$WORK/$1.toml" --listen "127.0.0.1:$2" >"$WORK/$1.log" 2>&1 &
    pids+=($!)
    for _ in $(seq 100); do curl -sf -o /dev/null "http://127.0.0.1:$2/healthz" && return 0; sleep 0.1; done
    echo "replica $1 did not start" >&2; return 1
}
for _ in $(seq 100); do curl -sf -o /dev/null http://127.0.0.1:18301/timemap/link/http://example.com/ && break; sleep 0.1; done
replica solo 18302 ""
replica a 18303 "redis://127.0.0.1:18309/0"
replica b 18304 "redis://127.0.0.1:18309/0"

# Walks /timemap/link/http://example.com/u<i> for i = 1..N: once (then stops), or round and round.
walk() { # $1: file, $2: how many URI-Rs
    cat >"$WORK/$1.lua" <<LUA
local i, n = 0, $2
request = function()
  i = i % n + 1
  return wrk.format("GET", "/timemap/link/http://example.com/u" .. i)
end
LUA
}
walk mem "$N"; walk all "$ALL"
warm() { # $1 port, $2 how many: asks for u1..u<how many> once each, 16 at a time
    sed "s/^  i = i % n + 1/  i = i + 1; if i > n then wrk.thread:stop() end/; s/n = 0, [0-9]*/n = 0, $2/" \
        "$WORK/all.lua" >"$WORK/once.lua"
    wrk -t1 -c16 -d120s -s "$WORK/once.lua" "http://127.0.0.1:$1" >/dev/null &
    local w=$!
    for _ in $(seq 1200); do
        curl -s -o /dev/null -w '%{http_code}' -H 'Cache-Control: only-if-cached' \
            "http://127.0.0.1:$1/timemap/link/http://example.com/u$2" | grep -q 200 && break
        sleep 0.1
    done
    kill "$w" 2>/dev/null || true; wait "$w" 2>/dev/null || true
}
run() { # $1 label, $2 port, $3 mem | all
    wrk -t1 -c"$CONNS" -d"${SECS}s" --latency -s "$WORK/$3.lua" "http://127.0.0.1:$2" | awk -v who="$1" '
      /requests in/ {reqs=$1} /Requests\/sec/ {rps=$2} /^ +50%/ {p50=$2} /^ +99%/ {p99=$2} /Non-2xx/ {bad=$NF}
      END {printf "%-11s %8s requests %10s req/s  p50 %8s  p99 %8s  non-2xx %s\n", who, reqs, rps, p50, p99, (bad==""?0:bad)}'
}
xcache() { curl -s -D - -o /dev/null "http://127.0.0.1:$1/timemap/link/http://example.com/u$2" | grep -i '^x-cache' | tr -d '\r'; }

echo "URI-Rs of 100 mementos, wrk -t1 -c$CONNS -d${SECS}s, $(nproc) cores,$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2), load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%F)"
warm 18302 "$N"; warm 18303 "$ALL"
echo "entries in Redis: $(redis-cli -p 18309 DBSIZE)"
run solo 18302 mem
run redis-only 18304 all | tee "$WORK/redis-only.txt"
[ "$(awk '{print $2}' "$WORK/redis-only.txt")" -lt "$ALL" ] || echo "  (ran out of URI-Rs: some of these were memory hits)"
# B's memory tier holds the last URI-Rs it read from Redis: a first round brings u1..u3000 back
# into it (not measured), then the measured one.
run promote 18304 mem >/dev/null
run warm 18304 mem
# What each memory tier holds: B's filled up during redis-only, and its admission policy
# (moka's TinyLFU) need not take all 3,000 back, so some warm hits read B's sled.
tiers() { curl -s "http://127.0.0.1:$1/metrics" | grep -E '^tmproxy_cache_tier_entries' | tr '\n' ' '; }
echo "B's tiers: $(tiers 18304)"; echo "solo's tiers: $(tiers 18302)"
run solo 18302 mem
echo "B after: $(xcache 18304 1) (u1: from its memory now); solo: $(xcache 18302 1)"
echo "B's shared-tier calls: $(curl -s http://127.0.0.1:18304/metrics | grep -E '^tmproxy_cache_shared_(errors|unreadable)' | tr '\n' ' ')"
