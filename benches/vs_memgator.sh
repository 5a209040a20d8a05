#!/usr/bin/env bash
# Aggregated misses: tmproxy without a cache against MemGator, in one run, in front of the same
# three nginx archives, CPU per request from /proc.
#   bash benches/vs_memgator.sh MEMGATOR_SRC_DIR [ROUNDS=5] [SECONDS=10]
# MEMGATOR_SRC_DIR is a checkout of https://github.com/oduwsdl/MemGator fetched by hand (it is
# not part of this repository). It is copied to a temp dir and built there with `go build`; the
# one change made to the copy is its listen address, ":PORT" -> "127.0.0.1:PORT", so that every
# server here binds loopback only (MemGator has no flag for it).
# The archives are three nginx servers, each serving one static link-format TimeMap of 34
# SYNTHETIC mementos (generated below; distinct URI-Ms and datetimes per archive), so every
# aggregated answer holds 3 x 34 = 102 mementos. tmproxy runs with `[cache] policy = "none"`
# (every request asks the three archives, as MemGator does) and `[routing] mode = "all"`, each at
# its default log level with the log written to a file (tmproxy: a line per request).
# Each round runs, for 8 and then 64 connections, `wrk -t2 -cC -dSECONDS` on each aggregator's
# `/timemap/link/http://example.com/`, tmproxy and MemGator in turn (the first of the two
# alternates by round), and reads each aggregator's CPU time (user + system of all its threads,
# from /proc/PID/stat) before and after: CPU microseconds per request, and MemGator's over
# tmproxy's. The last lines give the median over rounds. wrk's non-2xx and socket errors must be
# 0, and each aggregator's answer is checked for status 200 and all 102 mementos first.
# MemGator uses its default flags (its archive list from a file, its own logs discarded).
# With PERF=FILE, after the rounds, `perf record --call-graph dwarf` of tmproxy during one more
# SECONDS of `wrk -t2 -c64` (-cPERF_CONNS) is written to FILE (where a miss's CPU goes; needs linux-perf).
# With BASE=path/to/another/tmproxy a third row, `base`, serves the same from that binary (same
# config, its own port) in the same rounds: a change to tmproxy measured against the build
# before it, beside the anchor.
# With FLOOR=1 three more rows serve the same from examples/miss_floor.rs, plain hyper asking the
# three archives through a hyper client per thread: `floor` answers with their bodies as they are
# (the transport alone: what any aggregator on hyper pays), `floor-core` runs them through
# tmproxy's core as a miss does (parse, list, merge, render), `floor-reqwest` is `floor-core`
# asking through reqwest instead of hyper's client; the last lines give tmproxy's CPU per request
# over each's.
# Needs go, nginx and wrk (Debian: apt-get install golang-go nginx-light wrk). Everything binds
# 127.0.0.1 and is stopped by its PID at exit; every wrk run lasts SECONDS.
set -euo pipefail
SRC=$(realpath "${1:?usage: benches/vs_memgator.sh MEMGATOR_SRC_DIR [ROUNDS] [SECONDS]}")
ROUNDS=${2:-5}; SECS=${3:-10}
cd "$(dirname "${BASH_SOURCE[0]}")/.."
TARGET=${CARGO_TARGET_DIR:-target}
WORK=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT
MEMENTOS=34; PORTS=(18411 18412 18413); TM_PORT=18414; MG_PORT=18415; BASE_PORT=18416
FLOOR_PORT=18417; FLOOR_CORE_PORT=18418; FLOOR_REQWEST_PORT=18419

# --- the two aggregators' binaries ---------------------------------------------------------------
cp -r "$SRC" "$WORK/memgator-src"
sed -i 's|addr := fmt.Sprintf(":%d", \*port)|addr := fmt.Sprintf("127.0.0.1:%d", *port)|' "$WORK/memgator-src/main.go"
grep -q 'Sprintf("127.0.0.1:%d", \*port)' "$WORK/memgator-src/main.go" \
    || { echo "MemGator's listen address not found in main.go: a version this script does not know" >&2; exit 1; }
(cd "$WORK/memgator-src" && go build -o "$WORK/memgator" .)
cargo build --release --quiet --bin tmproxy ${FLOOR:+--example miss_floor}
TMPROXY=$TARGET/release/tmproxy

# --- three archives: nginx serving a SYNTHETIC TimeMap each --------------------------------------
# Archive i's mementos are at http://archive<i>.test/web/<14 digits>/http://example.com/, one a
# month from a start month of its own, oldest first, as a Wayback-style archive lists them.
timemap() { # ARCHIVE_NUMBER
    local i=$1 k y m
    echo '<http://example.com/>; rel="original",'
    echo "<http://archive$i.test/web/timemap/link/http://example.com/>; rel=\"self\"; type=\"application/link-format\","
    for ((k = 0; k < MEMENTOS; k++)); do
        y=$((2000 + (k + 7 * i) / 12)); m=$(((k + 7 * i) % 12 + 1))
        printf '<http://archive%d.test/web/%04d%02d%02d%02d%02d%02d/http://example.com/>; rel="memento"; datetime="%s",\n' \
            "$i" "$y" "$m" $((i + 1)) $((i + 10)) $((k % 60)) 17 \
            "$(date -u -d "$y-$m-$((i + 1)) $((i + 10)):$((k % 60)):17" '+%a, %d %b %Y %H:%M:%S GMT')"
    done
    echo "<http://archive$i.test/web/http://example.com/>; rel=\"timegate\""
}
archive() { # NUMBER PORT
    local dir=$WORK/nginx-$1
    mkdir -p "$dir/www"; timemap "$1" >"$dir/www/timemap"
    # nginx's workers run unprivileged: they must be able to read the file (mktemp dirs are 0700).
    chmod 755 "$WORK" "$dir" "$dir/www"; chmod 644 "$dir/www/timemap"
    cat >"$dir/nginx.conf" <<NGINX
worker_processes 1;
pid $dir/nginx.pid;
error_log $dir/error.log;
daemon off;
events { worker_connections 1024; }
http {
  access_log off;
  keepalive_requests 100000;
  server {
    listen 127.0.0.1:$2; root $dir/www;
    location /timemap/link/ { default_type application/link-format; try_files /timemap =404; }
  }
}
NGINX
    nginx -c "$dir/nginx.conf" & pids+=($!)
    for _ in $(seq 50); do curl -sf -o /dev/null "http://127.0.0.1:$2/timemap/link/http://example.com/" && return 0; sleep 0.2; done
    echo "nginx did not answer on port $2" >&2; return 1
}
for i in 0 1 2; do archive "$i" "${PORTS[$i]}"; done

# --- tmproxy and MemGator configured for the same three archives ---------------------------------
{ printf '[routing]\nmode = "all"\n[cache]\npolicy = "none"\npath = "%s"\n' "$WORK/cache"
  for i in 0 1 2; do printf '[[archives]]\nid = "a%d"\nname = "archive %d (synthetic)"\ntimemap = "http://127.0.0.1:%d/timemap/link/"\ntimegate = "http://127.0.0.1:%d/timegate/"\n' \
      "$i" "$i" "${PORTS[$i]}" "${PORTS[$i]}"; done; } >"$WORK/tmproxy.toml"
{ echo '['
  for i in 0 1 2; do printf '  {"id": "a%d", "name": "archive %d (synthetic)", "timemap": "http://127.0.0.1:%d/timemap/link/", "timegate": "http://127.0.0.1:%d/timegate/", "probability": 0.5, "ignore": false}%s\n' \
      "$i" "$i" "${PORTS[$i]}" "${PORTS[$i]}" "$([ $i = 2 ] || echo ,)"; done
  echo ']'; } >"$WORK/archives.json"
"$TMPROXY" serve --config "$WORK/tmproxy.toml" --listen "127.0.0.1:$TM_PORT" >"$WORK/tmproxy.log" 2>&1 &
TM=$!; pids+=("$TM")
if [ -n "${BASE:-}" ]; then
    sed "s|$WORK/cache|$WORK/cache-base|" "$WORK/tmproxy.toml" >"$WORK/base.toml"
    "$BASE" serve --config "$WORK/base.toml" --listen "127.0.0.1:$BASE_PORT" >"$WORK/base.log" 2>&1 &
    BASE_PID=$!; pids+=("$BASE_PID")
fi
"$WORK/memgator" --arcs "$WORK/archives.json" --port "$MG_PORT" --contact benchmark server >"$WORK/memgator.log" 2>&1 &
MG=$!; pids+=("$MG")
if [ -n "${FLOOR:-}" ]; then
    ARCHIVE_URLS=(); for i in 0 1 2; do ARCHIVE_URLS+=("http://127.0.0.1:${PORTS[$i]}/timemap/link/http://example.com/"); done
    "$TARGET/release/examples/miss_floor" "$FLOOR_PORT" bytes "${ARCHIVE_URLS[@]}" >"$WORK/floor.log" 2>&1 &
    FLOOR_PID=$!; pids+=("$FLOOR_PID")
    "$TARGET/release/examples/miss_floor" "$FLOOR_CORE_PORT" core "${ARCHIVE_URLS[@]}" >"$WORK/floor-core.log" 2>&1 &
    FLOOR_CORE_PID=$!; pids+=("$FLOOR_CORE_PID")
    "$TARGET/release/examples/miss_floor" "$FLOOR_REQWEST_PORT" reqwest "${ARCHIVE_URLS[@]}" >"$WORK/floor-reqwest.log" 2>&1 &
    FLOOR_REQWEST_PID=$!; pids+=("$FLOOR_REQWEST_PID")
fi
URL_FLOOR="http://127.0.0.1:$FLOOR_PORT/"; URL_FLOOR_CORE="http://127.0.0.1:$FLOOR_CORE_PORT/"
URL_FLOOR_REQWEST="http://127.0.0.1:$FLOOR_REQWEST_PORT/"
URL_TM="http://127.0.0.1:$TM_PORT/timemap/link/http://example.com/"
URL_MG="http://127.0.0.1:$MG_PORT/timemap/link/http://example.com/"
check() { # NAME URL: status 200 and every archive's mementos in the answer
    local n
    for _ in $(seq 50); do curl -sf -o /dev/null "$2" && break; sleep 0.2; done
    [ "$(curl -s -o "$WORK/body-$1" -w '%{http_code}' "$2")" = 200 ] || { echo "$1: not 200" >&2; exit 1; }
    n=$(grep -c 'rel="[a-z ]*memento"' "$WORK/body-$1")
    [ "$n" = $((3 * MEMENTOS)) ] || { echo "$1: $n mementos, not $((3 * MEMENTOS))" >&2; exit 1; }
    echo "$1: 200, $n mementos, $(wc -c <"$WORK/body-$1") bytes"
}
URL_BASE="http://127.0.0.1:$BASE_PORT/timemap/link/http://example.com/"
check tmproxy "$URL_TM"; check memgator "$URL_MG"; if [ -n "${BASE:-}" ]; then check base "$URL_BASE"; fi
if [ -n "${FLOOR:-}" ]; then check floor "$URL_FLOOR"; check floor-core "$URL_FLOOR_CORE"
    check floor-reqwest "$URL_FLOOR_REQWEST"; fi
curl -s -D - -o /dev/null "$URL_TM" | grep -i '^x-cache' # MISS: no cache

# CPU time (user + system, clock ticks) of a process: /proc/PID/stat counts all its threads,
# those that ended included.
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
run() { # NAME PID URL CONNECTIONS ROUND
    local before after
    before=$(ticks "$2")
    wrk -t2 -c"$4" -d"${SECS}s" "$3" >"$WORK/wrk.out"
    after=$(ticks "$2")
    awk -v who="$1" -v c="$4" -v r="$5" -v ticks=$((after - before)) -v hz="$(getconf CLK_TCK)" '
      /Requests\/sec/ {rps = $2} /requests in/ {n = $1} /Non-2xx/ {bad = $NF}
      /Socket errors/ {gsub(",", ""); err = $4 + $6 + $8 + $10}
      END { if (bad + err > 0 || n == 0) { print who ": " bad + 0 " non-2xx, " err + 0 " socket errors" > "/dev/stderr"; exit 1 }
            printf "round %d c=%-3d %-8s %9.1f req/s  CPU %7.1f us/req\n", r, c, who, rps, ticks / hz * 1e6 / n }' \
        "$WORK/wrk.out" | tee -a "$WORK/rows"
}
echo "wrk -t2 -d${SECS}s, $ROUNDS rounds, $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%F)"
for round in $(seq "$ROUNDS"); do
    for c in 8 64; do
        if ((round % 2)); then run tmproxy "$TM" "$URL_TM" "$c" "$round"; run memgator "$MG" "$URL_MG" "$c" "$round"
        else run memgator "$MG" "$URL_MG" "$c" "$round"; run tmproxy "$TM" "$URL_TM" "$c" "$round"; fi
        if [ -n "${BASE:-}" ]; then run base "$BASE_PID" "$URL_BASE" "$c" "$round"; fi
        if [ -n "${FLOOR:-}" ]; then
            run floor "$FLOOR_PID" "$URL_FLOOR" "$c" "$round"
            run floor-core "$FLOOR_CORE_PID" "$URL_FLOOR_CORE" "$c" "$round"
            run floor-reqwest "$FLOOR_REQWEST_PID" "$URL_FLOOR_REQWEST" "$c" "$round"
        fi
    done
done
# Per round and connection count: MemGator's CPU per request over tmproxy's, and tmproxy's
# req/s over MemGator's; then the medians over rounds.
awk -v rounds="$ROUNDS" '
  function median(a, n,   i, j, t) { for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++)
      if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
  { sub("c=", "", $3); rps[$4, $3, $2] = $5; cpu[$4, $3, $2] = $8 }
  END { split("8 64", cs, " ")
    for (k = 1; k <= 2; k++) { c = cs[k]
      for (r = 1; r <= rounds; r++) {
        t = rps["tmproxy", c, r]; m = rps["memgator", c, r]; tc = cpu["tmproxy", c, r]; mc = cpu["memgator", c, r]
        printf "round %d c=%-3d req/s %8.1f / %7.1f (%.2fx)  CPU us/req %6.1f / %7.1f (MemGator %.2fx)\n",
          r, c, t, m, t / m, tc, mc, mc / tc
        a1[r] = t; a2[r] = m; a3[r] = t / m; a4[r] = tc; a5[r] = mc; a6[r] = mc / tc
        if (("base", c, r) in cpu) { b[r] = cpu["base", c, r] / tc; bm[r] = mc / cpu["base", c, r]; nb++
          printf "round %d c=%-3d base %8.1f req/s  CPU us/req %6.1f: base %.2fx tmproxy (MemGator %.2fx base)\n",
            r, c, rps["base", c, r], cpu["base", c, r], b[r], bm[r] } }
      lo = a6[1]; for (r = 2; r <= rounds; r++) if (a6[r] < lo) lo = a6[r]
      printf "median c=%-3d req/s %8.1f / %7.1f (%.2fx)  CPU us/req %6.1f / %7.1f (MemGator %.2fx, lowest %.2fx)\n",
        c, median(a1, rounds), median(a2, rounds), median(a3, rounds), median(a4, rounds), median(a5, rounds),
        median(a6, rounds), lo
      if (nb) { printf "median c=%-3d CPU per request: base %.2fx tmproxy, MemGator %.2fx base\n", c, median(b, rounds), median(bm, rounds); nb = 0 }
      split("floor floor-core floor-reqwest", fl, " ")
      for (f = 1; f <= 3; f++) { w = fl[f]; nf = 0
        for (r = 1; r <= rounds; r++) if ((w, c, r) in cpu) { fc[++nf] = cpu[w, c, r]; ft[nf] = cpu["tmproxy", c, r] / cpu[w, c, r]
          fm[nf] = cpu["memgator", c, r] / cpu[w, c, r] }
        if (nf) printf "median c=%-3d %-10s CPU %6.1f us/req: tmproxy %.2fx it, MemGator %.2fx it\n", c, w, median(fc, nf), median(ft, nf), median(fm, nf) } } }' "$WORK/rows"
echo "(req/s and CPU: tmproxy / MemGator; the ratio in brackets after CPU is MemGator's CPU per request over tmproxy's)"
if [ -n "${PERF:-}" ]; then
    wrk -t2 -c"${PERF_CONNS:-64}" -d"$((SECS + 2))s" "$URL_TM" >/dev/null &
    WRK=$!; pids+=("$WRK")
    sleep 1
    perf record -F 1999 -g --call-graph dwarf,16384 -p "$TM" -o "$PERF" -- sleep "$SECS" 2>/dev/null
    wait "$WRK"
    echo "perf data of tmproxy under wrk -c${PERF_CONNS:-64}: $PERF"
fi
