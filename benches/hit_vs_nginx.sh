#!/usr/bin/env bash
# Cache-hit throughput of tmproxy against nginx serving the same bytes as a static file.
#   bash benches/hit_vs_nginx.sh [MEMENTOS=100] [SECONDS=10] [CONNECTIONS=64]
# ROUNDS=n (default 2) runs the rows n times in turn; the last lines sum the rounds up per row:
# req/s against nginx's in the same round (median, lowest) and p99 (median, highest, and in how
# many rounds it was above nginx's). One round's p99 on a shared 2-core machine follows the
# kernel's scheduler as much as the server (BENCHMARKS.md, "Small cache hits against nginx"): judge it
# over rounds.
# A third row per round, `tm-br`, asks tmproxy with Accept-Encoding: br (the coded body is made
# once, on the first such request, and kept). With BASE=path/to/an/older/tmproxy a fourth row,
# `base`, serves the same from that binary (its own cache, port 18104): before/after in one run.
# With FLOOR=1 a row `floor` serves the same bytes from plain hyper (examples/hyper_floor.rs, port
# 18105): what is left of the gap to nginx once our router, layers and cache are taken away; and
# a row `floor-hd` (port 18107), the same plain hyper sending tmproxy's whole head with them (its
# headers as a hit carries them, taken with curl -D, made once and cloned per answer as tmproxy
# does): what the head's size costs on its own. The last lines then also give each row's req/s
# against the floor's in the same round (median, lowest) and its median CPU a request.
# With AA=1 a row `nginx-2` serves the same file from a second, identical nginx (port 18106): an
# A/A check of how often a server's p99 lands above nginx's by chance alone.
# Each row also says the server's CPU time (user + system, from /proc) per request.
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

cargo build --release --quiet --bin tmproxy --example e2e_bench --example hyper_floor
target/release/examples/e2e_bench archive --captures "$N" --port 18101 >"$WORK/archive.log" 2>&1 &
pids+=($!)
replica() { # $1 binary, $2 port, $3 cache dir; sets STARTED to its PID
    cat >"$3.toml" <<TOML
[[archives]]
id = "sim"
name = "simulated archive"
timemap = "http://127.0.0.1:18101/timemap/link/"
timegate = "http://127.0.0.1:18101/timegate/"
[cache]
path = "$3"
TOML
    RUST_LOG=warn "$1" serve --config "$3.toml" --listen "127.0.0.1:$2" >"$3.log" 2>&1 &
    STARTED=$!; pids+=("$STARTED")
    for _ in $(seq 50); do curl -sf -o /dev/null "http://127.0.0.1:$2/timemap/link/http://example.com/" && return 0; sleep 0.2; done
}
replica target/release/tmproxy 18102 "$WORK/cache"; TMPROXY=$STARTED
if [ -n "${BASE:-}" ]; then replica "$BASE" 18104 "$WORK/base"; BASE_PID=$STARTED; fi
URL_T="http://127.0.0.1:18102/timemap/link/http://example.com/"
for _ in $(seq 50); do curl -sf -o "$WORK/body" "$URL_T" && break; sleep 0.2; done
curl -s -D - -o "$WORK/body" "$URL_T" | grep -i '^x-cache' # must say HIT
echo "body: $(wc -c <"$WORK/body") bytes, $(grep -c 'rel="[a-z ]*memento"' "$WORK/body") mementos"

serve_with_nginx "$WORK" "$WORK/body" 18103
NGINX=${pids[-1]}
if [ -n "${FLOOR:-}" ]; then
    target/release/examples/hyper_floor "$WORK/body" 18105 >"$WORK/floor.log" 2>&1 &
    FLOOR_PID=$!; pids+=("$FLOOR_PID")
    for _ in $(seq 50); do curl -sf -o /dev/null http://127.0.0.1:18105/ && break; sleep 0.2; done
    cmp "$WORK/body" <(curl -sf http://127.0.0.1:18105/) && echo "hyper_floor serves the same bytes"
    curl -s -D "$WORK/head" -o /dev/null "$URL_T"
    target/release/examples/hyper_floor "$WORK/body" 18107 "$(nproc)" "$WORK/head" >"$WORK/floor-hd.log" 2>&1 &
    FLOOR_HD_PID=$!; pids+=("$FLOOR_HD_PID")
    for _ in $(seq 50); do curl -sf -o /dev/null http://127.0.0.1:18107/ && break; sleep 0.2; done
    echo "head bytes: tmproxy $(curl -s -D - -o /dev/null "$URL_T" | wc -c), floor-hd $(curl -s -D - -o /dev/null http://127.0.0.1:18107/ | wc -c)"
fi
if [ -n "${AA:-}" ]; then
    serve_with_nginx "$WORK/aa" "$WORK/body" 18106
    NGINX2=${pids[-1]}
fi
URL_N="http://127.0.0.1:18103/timemap"
cmp "$WORK/body" <(curl -sf "$URL_N") && echo "nginx serves the same bytes"

# CPU time (user + system, clock ticks) of a server: the process and its children (nginx's
# workers). Beside req/s it is the load-independent figure: CPU per request.
ticks() { local sum=0 p; for p in "$1" $(pgrep -P "$1"); do
    sum=$((sum + $(awk '{print $14 + $15}' "/proc/$p/stat"))); done; echo "$sum"; }
run() { local before after; before=$(ticks "$2")
    wrk -t2 -c"$CONNS" -d"${SECS}s" --latency ${4:+-H "$4"} "$3" >"$WORK/wrk.out"
    after=$(ticks "$2")
    awk -v who="$1" -v ticks=$((after - before)) -v hz="$(getconf CLK_TCK)" '
  /Requests\/sec/ {rps=$2} /^ +50%/ {p50=$2} /^ +99%/ {p99=$2} /Non-2xx/ {bad=$NF}
  /requests in/ {n=$1}
  END {printf "%-8s %10s req/s  p50 %8s  p99 %8s  CPU %5.1f us/req  non-2xx %s\n", who, rps, p50, p99,
       (n > 0 ? ticks / hz * 1e6 / n : 0), (bad==""?0:bad)}' "$WORK/wrk.out" | tee -a "$WORK/rows"; }
echo "wrk -t2 -c$CONNS -d${SECS}s, $(nproc) cores,$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2), load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%F)"
echo "br body: $(curl -s -H 'Accept-Encoding: br' "$URL_T" | wc -c) bytes"
for round in $(seq "${ROUNDS:-2}"); do
    run nginx "$NGINX" "$URL_N"; run tmproxy "$TMPROXY" "$URL_T"
    run tm-br "$TMPROXY" "$URL_T" "Accept-Encoding: br"
    if [ -n "${BASE:-}" ]; then run base "$BASE_PID" "${URL_T/18102/18104}"; fi
    if [ -n "${FLOOR:-}" ]; then
        run floor "$FLOOR_PID" http://127.0.0.1:18105/
        run floor-hd "$FLOOR_HD_PID" http://127.0.0.1:18107/
    fi
    if [ -n "${AA:-}" ]; then run nginx-2 "$NGINX2" http://127.0.0.1:18106/timemap; fi
done
# The median of a[1..n], for both summaries below.
MEDIAN='
  function median(a, n,   i, j, t) { for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++)
      if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
'
# Per row over the rounds: each round's req/s and p99 against nginx's in that round.
awk "$MEDIAN"'
  function ms(v) { return v ~ /us$/ ? v / 1000 : v ~ /ms$/ ? v + 0 : v * 1000 }
  $1 == "nginx" { nrps = $2; np99 = ms($7); k = ++n["nginx"]; p["nginx", k] = np99; next }
  { k = ++n[$1]; r[$1, k] = $2 / nrps; p[$1, k] = ms($7); if (ms($7) > np99) above[$1]++ }
  END { for (w in n) { split("", a); split("", b); lo = 1e9; hi = 0
      for (i = 1; i <= n[w]; i++) { b[i] = p[w, i]; if (p[w, i] > hi) hi = p[w, i]
        if (w != "nginx") { a[i] = r[w, i]; if (a[i] < lo) lo = a[i] } }
      if (w == "nginx") printf "over %d rounds: %-8s p99 median %.2f ms, highest %.2f ms\n", n[w], w, median(b, n[w]), hi
      else printf "over %d rounds: %-8s %.2fx nginx (lowest %.2fx), p99 median %.2f ms, highest %.2f ms, above nginx'"'"'s in %d\n",
        n[w], w, median(a, n[w]), lo, median(b, n[w]), hi, above[w] + 0 } }' "$WORK/rows" | sort
# With FLOOR=1 (or BASE=), per row over the rounds: each round's req/s against the floor's (and
# the base's) in that round, and the median CPU a request. The floor moves most with the
# machine's state, so only ratios within one round are compared.
if [ -n "${FLOOR:-}${BASE:-}" ]; then awk "$MEDIAN"'
  { k = ++n[$1]; rps[$1, k] = $2; cpu[$1, k] = $9 }
  END { for (w in n) { split("", f); split("", b); split("", c); lo = 1e9
      for (i = 1; i <= n[w]; i++) { c[i] = cpu[w, i]
        if ("floor" in n) { f[i] = rps[w, i] / rps["floor", i]; if (f[i] < lo) lo = f[i] }
        if ("base" in n) b[i] = rps[w, i] / rps["base", i] }
      printf "over %d rounds: %-8s CPU median %.1f us/req", n[w], w, median(c, n[w])
      if ("floor" in n) printf ", %.2fx the floor (lowest %.2fx)", median(f, n[w]), lo
      if ("base" in n) printf ", %.3fx base", median(b, n[w])
      print "" } }' "$WORK/rows" | sort; fi
