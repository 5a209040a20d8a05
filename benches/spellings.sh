#!/usr/bin/env bash
# A cached TimeMap asked under other spellings of its URI-R, against the stored spelling, in one
# run: what a hit costs the server's CPU when the client spells the URL its own way.
#   bash benches/spellings.sh [MEMENTOS=60000] [ROUNDS=3 (at most 5)] [CODING=br]
# The archive is e2e_bench's simulated one (synthetic, MEMENTOS captures) on loopback, and one
# `tmproxy serve` (release, default cache in a temp dir) in front of it. The entry is stored
# under `http://cmp.com/page` and its CODING body made by two warm-up hits. Each round then asks
#   - the stored spelling 32 times (the anchor), and
#   - 32 spellings never asked before (`http://CMP.com/page`, `http://cMp.coM:80/page`, …: the
#     same entry under the canonical key),
# each with `Accept-Encoding: CODING`, one request at a time, and reads the server's CPU time
# before and after each set of 32: every thread's run time in nanoseconds
# (/proc/PID/task/*/schedstat; /proc/PID/stat's 10 ms ticks are too coarse for 32 hits of under
# a millisecond). No thread of the server ends within a set (tokio keeps idle blocking threads
# 10 s), which the script checks. A new spelling's first
# request is the costly one (later ones hit its kept view), so every one of them is new.
# Every process is stopped by its PID at the end.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
N=${1:-60000}; ROUNDS=${2:-3}; CODING=${3:-br}
BIN=${BIN:-target/release/tmproxy}
WORK=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT

cargo build --release --quiet --bin tmproxy --example e2e_bench
target/release/examples/e2e_bench archive --captures "$N" --port 18301 >"$WORK/archive.log" 2>&1 &
pids+=($!)
for _ in $(seq 300); do curl -sf -o /dev/null http://127.0.0.1:18301/timemap/link/http://example.com/ && break; sleep 0.2; done
cat >"$WORK/config.toml" <<TOML
[upstream]
timeout = "60s"
deadline = "60s"
[[archives]]
id = "big"
name = "simulated archive with $N mementos (synthetic)"
timemap = "http://127.0.0.1:18301/timemap/link/"
timegate = "http://127.0.0.1:18301/timegate/"
[cache]
path = "$WORK/cache"
TOML
"$BIN" serve --config "$WORK/config.toml" --listen 127.0.0.1:18302 >"$WORK/serve.log" 2>&1 &
TM=$!; pids+=("$TM")
for _ in $(seq 100); do curl -sf -o /dev/null http://127.0.0.1:18302/healthz && break; sleep 0.1; done
# The server's threads and their run times in ns, one "tid ns" line each.
cpu() { for t in /proc/"$TM"/task/*; do echo "${t##*/} $(cut -d' ' -f1 "$t/schedstat")"; done; }
# ns run between two cpu() readings; fails if a thread of the first is gone from the second.
used() { awk 'NR == FNR { a[$1] = $2; next } { if ($1 in a) { s += $2 - a[$1]; seen++ } else s += $2 }
              END { if (seen < length(a)) { print "a thread ended within a set" > "/dev/stderr"; exit 1 }
                    print s }' "$1" "$2"; }
ask() { curl -s -o /dev/null -H "Accept-Encoding: $CODING" -w '%{http_code} %{size_download}\n' \
        "http://127.0.0.1:18302/timemap/link/$1"; }
# Spelling $1 (1 to 191) of http://cmp.com/page: the host's six letters' case by the low six
# bits, and http://, http://…:80 or https:// by the rest (all one canonical key).
spell() { local host=cmp.com out="" i=0 c
          for ((k = 0; k < ${#host}; k++)); do c=${host:k:1}
              if [[ $c == [a-z] ]]; then (( ($1 >> i) & 1 )) && c=${c^^}; i=$((i + 1)); fi
              out+=$c; done
          case $(($1 / 64)) in 0) echo "http://$out/page" ;; 1) echo "http://$out:80/page" ;;
                               *) echo "https://$out/page" ;; esac; }
(( ROUNDS <= 5 )) || { echo "ROUNDS is at most 5 (191 spellings)"; exit 1; }
echo "$N mementos, Accept-Encoding: $CODING, $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2), load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%F)"
echo "warm-up: $(ask http://cmp.com/page | tr '\n' ' ') $(ask http://cmp.com/page | tr '\n' ' ') list part: $(ask "$(spell 191)")"
next=1
for r in $(seq "$ROUNDS"); do
    cpu >"$WORK/t0"
    for _ in $(seq 32); do ask http://cmp.com/page >>"$WORK/stored.out"; done
    cpu >"$WORK/t1"
    for _ in $(seq 32); do ask "$(spell $next)" >>"$WORK/other.out"; next=$((next + 1)); done
    cpu >"$WORK/t2"
    a=$(used "$WORK/t0" "$WORK/t1"); b=$(used "$WORK/t1" "$WORK/t2")
    awk -v a="$a" -v b="$b" -v r="$r" 'BEGIN {
        printf "round %d: stored spelling %.3f ms CPU a hit, new spellings %.3f ms a hit: %.2fx\n",
               r, a / 1e6 / 32, b / 1e6 / 32, (a > 0 ? b / a : 0) }'
done
echo "answers (status bytes): stored $(sort "$WORK/stored.out" | uniq -c | tr -s ' ' | tr '\n' ';') new $(sort "$WORK/other.out" | uniq -c | tr -s ' ' | tr '\n' ';')"
