#!/usr/bin/env bash
# A huge TimeMap through the cache, against the same TimeMap uncached, in one run:
#   bash benches/huge_timemap.sh [MEMENTOS=1000000] [HITS=20]
# 1. `[cache] policy = "none"`: three misses (the first warms the archive); the last two are the
#    anchor. Peak RSS from /usr/bin/time -v.
# 2. the default cache on an empty directory: the first request (a MISS that builds and stores
#    the entry), six at once with a browser's Accept-Encoding (coded on the way while the coded
#    renderings are written, or from disk: never plain), then HITS hits, each with its first-byte
#    and whole-body time; RSS after the hits from /proc, peak RSS from /usr/bin/time -v, and the
#    rendering pass's time as it logs it.
# 3. the default cache on another empty directory: two first requests one after the other, for
#    two URI-Rs (each a MISS that builds and stores a huge entry), their peak RSS (VmHWM) against
#    the anchor's, then at once HITS hits alternating between the two, each with its first-byte
#    time, and the peak RSS of it all.
# The archive is the simulated one of e2e_bench (synthetic, newest first) on loopback; curl
# writes bodies to /dev/null. Every process is stopped by its PID at the end.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
N=${1:-1000000}; HITS=${2:-20}
WORK=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT

cargo build --release --quiet --bin tmproxy --example e2e_bench
target/release/examples/e2e_bench archive --captures "$N" --port 18201 >"$WORK/archive.log" 2>&1 &
pids+=($!)
# The archive renders its TimeMap before it listens: wait for it (this also warms it).
for _ in $(seq 300); do curl -sf -o /dev/null http://127.0.0.1:18201/timemap/link/http://example.com/ && break; sleep 0.2; done
config() { # $1: extra [cache] lines
    cat <<TOML
[upstream]
timeout = "60s"
deadline = "60s"
max_body = "256MiB"
[[archives]]
id = "big"
name = "simulated archive with $N mementos (synthetic)"
timemap = "http://127.0.0.1:18201/timemap/link/"
timegate = "http://127.0.0.1:18201/timegate/"
[cache]
$1
TOML
}
URL="http://127.0.0.1:18202/timemap/link/http://example.com/"
URL2="http://127.0.0.1:18202/timemap/link/http://example.org/"
BROWSER='Accept-Encoding: gzip, deflate, br, zstd' # what browsers send
ask() { ask_at "$URL" "$@"; }
ask_at() { curl -s -o /dev/null -D "$WORK/headers" -w '%{http_code} first_byte=%{time_starttransfer}s total=%{time_total}s bytes=%{size_download}' "$@"
        echo " $(grep -iE '^(x-cache(-action)?|content-encoding):' "$WORK/headers" | tr -d '\r' | tr '\n' ' ')"; }
serve() { # $1: config file; starts tmproxy under time -v, sets SERVE (time's pid) and TM (tmproxy's)
    /usr/bin/time -v target/release/tmproxy serve --config "$1" --listen 127.0.0.1:18202 \
        >"$WORK/serve.out" 2>"$WORK/serve.err" &
    SERVE=$!; pids+=("$SERVE")
    for _ in $(seq 100); do curl -sf -o /dev/null http://127.0.0.1:18202/healthz && break; sleep 0.1; done
    TM=$(pgrep -P "$SERVE" tmproxy)
}
stop() { kill -TERM "$TM"; wait "$SERVE" || true; grep 'Maximum resident' "$WORK/serve.err" | sed 's/^\s*/  /'; }
rss() { awk '/VmRSS/ {printf "%d MiB", $2/1024}' "/proc/$TM/status"; }
hwm() { awk '/VmHWM/ {printf "%d kB", $2}' "/proc/$TM/status"; } # the peak so far

echo "$N mementos, $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2), load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%F)"
config 'policy = "none"' >"$WORK/none.toml"
serve "$WORK/none.toml"
echo "uncached (policy none):"
for i in 1 2 3; do echo -n "  miss $i: "; ask; done
echo "  RSS after the misses: $(rss)"
stop

config "path = \"$WORK/cache\"" >"$WORK/cached.toml"
serve "$WORK/cached.toml"
echo "default cache, empty directory:"
echo -n "  first request: "; ask
# Right after the store, while its coded renderings are being written: coded on the way or
# from disk, never the plain body (bytes= says which).
for i in 1 2 3 4 5 6; do echo -n "  at once, browser $i: "; ask -H "$BROWSER"; done
sleep 2 # the entry's write lands behind the answer
# The peak so far is the first request's own: time -v's peak below also covers the hits.
echo "  RSS after the first request: $(rss), its peak RSS: $(hwm)"
for i in $(seq "$HITS"); do echo -n "  hit $i: "; ask; done
echo -n "  hit, zstd: "; ask -H 'Accept-Encoding: zstd'
echo -n "  hit, gzip (Python requests): "; ask -H 'Accept-Encoding: gzip, deflate'
echo -n "  hit, br only: "; ask -H 'Accept-Encoding: br'
echo "  RSS after $HITS hits: $(rss)"
# The one rendering pass (all formats, each as it is and zstd-, gzip- and br-coded), as it logs.
grep -o 'renderings written.*' "$WORK/serve.err" | tr -d '"' | sed 's/^/  /' || true
stop

config "path = \"$WORK/cache2\"" >"$WORK/cached2.toml"
serve "$WORK/cached2.toml"
echo "default cache, another empty directory: two huge first requests back to back"
echo -n "  first request, URI-R 1: "; ask_at "$URL"
echo -n "  first request, URI-R 2: "; ask_at "$URL2"
# At once: the hits come while the entries' writes and renderings are still under way.
echo "  peak RSS after both: $(hwm)"
for i in $(seq "$HITS"); do
    if [ $((i % 2)) = 1 ]; then u=$URL; else u=$URL2; fi
    echo -n "  hit $i: "; ask_at "$u"
done
echo "  RSS after $HITS hits: $(rss), peak RSS of the two first requests and the hits: $(hwm)"
stop
