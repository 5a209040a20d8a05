#!/usr/bin/env bash
# The sampling pipeline at scale, on a SYNTHETIC ZipNum index against a fake CDX API that answers
# at once (examples/sampling_scale.rs, tmproxy_testkit::scale):
#   flock -x /tmp/tmproxy-cpu.lock bash benches/sampling_scale.sh LINES [TIMEMAPS=1]
# 1. generates LINES index lines in SURT order (plain text) in a temp dir;
# 2. runs `tmproxy sample` under /usr/bin/time -v, in a pty (`script`) so its progress bars,
#    which name the current stage, are drawn into a log;
# 3. samples VmRSS from /proc/PID/status once a second with the stage the log last named;
# 4. runs it again over the same directory: every first capture and TimeMap comes from the
#    checkpoint (the resume path, and its memory);
# 5. prints seconds and peak RSS per stage, /usr/bin/time's peak RSS, and the TimeMaps' disk
#    use (blocks, apparent bytes, files), per run.
# Every process is stopped by its PID; the temp dir is deleted at the end (KEEP=1 keeps it).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
LINES=${1:?LINES}; TIMEMAPS=${2:-1}
PORT=${PORT:-18377}
WORK=$(mktemp -d /tmp/sampling_scale.XXXXXX)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    if [ "${KEEP:-0}" != 1 ]; then rm -rf "$WORK"; fi
}
trap cleanup EXIT

T=${CARGO_TARGET_DIR:-target}
BIN=${BIN:-$T/release/tmproxy}; EX=${EX:-$T/release/examples/sampling_scale}
[ -x "$BIN" ] && [ -x "$EX" ] || { echo "build first: cargo build --release --bin tmproxy --example sampling_scale" >&2; exit 1; }

t0=$(date +%s.%N)
"$EX" gen "$WORK/index.txt" "$LINES"
t1=$(date +%s.%N)
printf 'generated in %.1f s, %s bytes, %s SURT hosts\n' "$(echo "$t1 - $t0" | bc)" \
    "$(stat -c %s "$WORK/index.txt")" "$(cut -d')' -f1 "$WORK/index.txt" | uniq | wc -l)"

"$EX" cdx "$PORT" 2>"$WORK/cdx.log" &
pids+=($!)
for _ in $(seq 100); do curl -sf -o /dev/null "http://127.0.0.1:$PORT/cdx?url=x&limit=1" && break; sleep 0.1; done

cat >"$WORK/spec.toml" <<TOML
# SYNTHETIC benchmark input (benches/sampling_scale.sh)
input = "$WORK/index.txt"
cdx_api = "http://127.0.0.1:$PORT/cdx"
dialect = "ia"
seed = 7
concurrency = 32
popular_domains = ["twitter.com"]
collect_timemaps = $([ "$TIMEMAPS" = 1 ] && echo true || echo false)
TOML

run() { # $1: label
    local label=$1 log="$WORK/$1.pty" rss="$WORK/$1.rss" out="$WORK/out"
    : >"$rss"
    script -qefc "/usr/bin/time -v -o $WORK/$label.time $BIN sample --spec $WORK/spec.toml --out $out" "$log" >/dev/null &
    local spid=$! pid="" start
    pids+=($spid)
    start=$(date +%s.%N)
    # tmproxy itself (not `script`, the shell or `time`): the process named tmproxy running this spec.
    for _ in $(seq 100); do
        for p in $(pgrep -f "sample --spec $WORK/spec.toml" || true); do
            [ "$(cat /proc/$p/comm 2>/dev/null)" = tmproxy ] && pid=$p
        done
        [ -n "$pid" ] && break; sleep 0.1
    done
    while kill -0 "$spid" 2>/dev/null; do
        local kb stage
        kb=$(awk '/VmRSS/{print $2}' "/proc/$pid/status" 2>/dev/null || true)
        # The most downstream stage the progress bars show running ("first_capture 12/34
        # candidates (running)"): the bars are drawn in pipeline order.
        stage=$(tr '\r' '\n' <"$log" 2>/dev/null | grep -aoE '[a-z_]+ [0-9]+(/[0-9]+)? [a-z]+ \(running\)' | tail -1 | cut -d' ' -f1 || true)
        [ -n "$kb" ] && printf '%.1f %s %s\n' "$(echo "$(date +%s.%N) - $start" | bc)" "$kb" "${stage:-offline}" >>"$rss"
        sleep 1
    done
    wait "$spid" || { echo "$label: tmproxy sample failed" >&2; tail -c 2000 "$log" >&2; exit 1; }
    local wall
    wall=$(echo "$(date +%s.%N) - $start" | bc)
    echo "== $label: $LINES lines, $(printf '%.1f' "$wall") s wall"
    # Per stage: first and last second seen, and the peak RSS seen in it.
    awk '{ if (!($3 in first)) { first[$3]=$1; order[n++]=$3 } last[$3]=$1; if ($2>peak[$3]) peak[$3]=$2 }
         END { printf "%-16s %8s %12s\n", "stage", "seconds", "peak RSS MB";
               for (i=0;i<n;i++) { s=order[i]; end=(i+1<n)?first[order[i+1]]:last[s]+1;
                 printf "%-16s %8.0f %12.1f\n", s, end-first[s], peak[s]/1024 } }' "$rss"
    grep -E 'Maximum resident|Elapsed|User time|System time' "$WORK/$label.time" | sed 's/^\s*/  /'
    echo "  sample: $(wc -l <"$out/sample.ndjson") URLs; checkpoint $(du -sh "$out/first_captures.ndjson" | cut -f1); timemaps $(du -sh "$out/timemaps" 2>/dev/null | cut -f1)"
    if [ -d "$out/timemaps" ]; then
        # Blocks on disk and bytes written, and how many files (inodes) they take.
        echo "  timemaps: $(du -sB1 "$out/timemaps" | cut -f1) bytes on disk, $(du -sB1 --apparent-size "$out/timemaps" | cut -f1) apparent, $(find "$out/timemaps" -type f | wc -l) files, $(grep -c '"pack"' "$out/timemaps/index.ndjson" || true) TimeMaps, index $(stat -c %s "$out/timemaps/index.ndjson") bytes"
    fi
}
run fresh
python3 - "$WORK/out/funnel.json" <<'PY'
import json, sys
for r in json.load(open(sys.argv[1])):
    print(f"  {r['stage']:<18} in {r['in']:>10} out {r['out']:>10} aside {r['set_aside']:>10} err {r['errors']:>6}")
PY
cp "$WORK/out/sample.ndjson" "$WORK/sample.fresh"
run resumed
cmp -s "$WORK/sample.fresh" "$WORK/out/sample.ndjson" && echo "resumed sample identical to the fresh one" || echo "RESUMED SAMPLE DIFFERS"
