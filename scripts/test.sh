#!/usr/bin/env bash
# The one test command: installs what the tests need, then runs the whole suite.
#   bash scripts/test.sh
# Needs cargo (rustup), python3 (3.11), node with npm, chromium, redis-server, fiu-utils and a C
# compiler; run as root on a fresh Debian machine it adds any missing Debian packages itself.
# Re-runs skip installs that are already done. A test that cannot run (a missing tool or
# privilege) fails; with TMPROXY_TEST_ALLOW_SKIP=1 it is skipped instead and listed at the end.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"
VENV="$REPO/.venv"
REQS="$REPO/scripts/requirements-test.txt"
STAMP="$VENV/.requirements.sha256"

log() { printf '==> %s\n' "$*" >&2; }

# --- Debian packages, only those missing ------------------------------------------------
apt_updated=0
apt_install() {
    if [ "$(id -u)" != 0 ]; then
        log "missing Debian packages: $*; install them (needs root) and rerun"
        exit 1
    fi
    if [ "$apt_updated" = 0 ]; then
        apt-get update -qq
        apt_updated=1
    fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$@"
}

command -v cargo >/dev/null || { log "cargo not found: install Rust with rustup"; exit 1; }
# pyenv's python3 has venv and ensurepip built in; Debian's splits them into python3-venv.
if ! command -v python3 >/dev/null; then
    apt_install python3 python3-venv
elif ! python3 -c 'import venv, ensurepip' 2>/dev/null; then
    if [ "$(command -v python3)" = /usr/bin/python3 ]; then
        apt_install python3-venv
    else
        log "$(command -v python3) lacks venv/ensurepip; use a full CPython 3.11"
        exit 1
    fi
fi
# tests/it/ui.rs drives a real headless Chromium (and its screenshots need a font with text).
command -v chromium >/dev/null || apt_install chromium fonts-dejavu-core
# tests/it/shared_tier.rs runs a real Redis on loopback (redis-cli is in redis-tools).
command -v redis-server >/dev/null || apt_install redis-server
command -v redis-cli >/dev/null || apt_install redis-tools
# tests/it/canonical.rs decodes coded answers with curl's own brotli, zstd and zlib.
command -v curl >/dev/null || apt_install curl
# tests/it/sled_faults.rs fails sled's writes under the real binary with libfiu (fiu-run,
# fiu-ctrl), and builds a preloaded shim of its own with a C compiler.
command -v fiu-run >/dev/null || apt_install fiu-utils
command -v cc >/dev/null || apt_install gcc libc6-dev
# tests/it/disk_faults.rs mounts its full disk in a user namespace when not run as root.
command -v unshare >/dev/null || apt_install util-linux
# tests/it/comunica.rs runs Comunica's comunica-sparql, a Memento client on Node.js.
command -v node >/dev/null || apt_install nodejs
command -v npm >/dev/null || apt_install npm

# --- fast checks first --------------------------------------------------------------------
log "cargo fmt --check"
cargo fmt --all --check

# --- Python venv with pywb + warcio -------------------------------------------------------
# The stamp is the hash of the requirements and the interpreter: if either changes, rebuild
# from scratch so no stale package lingers. It is written last, so a broken install redoes.
want="$( { sha256sum <"$REQS"; python3 -VV; } | sha256sum | cut -d' ' -f1)"
if [ -x "$VENV/bin/wayback" ] && [ "$(cat "$STAMP" 2>/dev/null)" = "$want" ]; then
    log "venv up to date ($VENV)"
else
    log "creating $VENV with $(python3 -V) and scripts/requirements-test.txt"
    rm -rf "$VENV"
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install --no-input --quiet --disable-pip-version-check -r "$REQS"
    "$VENV/bin/python" -c 'import pywb, warcio, memento_client' # fail here, not in every test
    echo "$want" >"$STAMP"
fi
export TMPROXY_PYWB_VENV="$VENV"

# --- Node.js Memento clients, pinned by testkit/node/package-lock.json --------------------
# Same rule as the venv: the stamp is the lockfile's and node's hash, written last, and a
# change to either reinstalls from scratch. The tests find the client at this fixed path.
NODE_DIR="$REPO/testkit/node"
NODE_STAMP="$NODE_DIR/node_modules/.lock.sha256"
node_want="$( { sha256sum <"$NODE_DIR/package-lock.json"; node --version; } | sha256sum | cut -d' ' -f1)"
if [ -x "$NODE_DIR/node_modules/.bin/comunica-sparql" ] && [ "$(cat "$NODE_STAMP" 2>/dev/null)" = "$node_want" ]; then
    log "node clients up to date ($NODE_DIR/node_modules)"
else
    log "installing $NODE_DIR/package-lock.json with node $(node --version)"
    rm -rf "$NODE_DIR/node_modules"
    # No package in the lock needs an install script: none runs.
    (cd "$NODE_DIR" && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error)
    # Fail here, not in the test: the engine with its Memento actor loads.
    (cd "$NODE_DIR" && node -e 'require("@comunica/actor-init-sparql"); require("@comunica/actor-http-memento")')
    echo "$node_want" >"$NODE_STAMP"
fi

log "cargo clippy"
# memsim's `e2e` feature (the server in-process) on, and the pure harness without it.
cargo clippy --workspace --all-targets --all-features -- -D warnings
cargo clippy -p simulations --all-targets -- -D warnings

# --- the suite ----------------------------------------------------------------------------
log "cargo test"
# Panic messages, not backtraces: a failing test's reason must survive a cut-down log.
export RUST_BACKTRACE=0
out="$(mktemp)"
# A test whose prerequisite is missing fails, unless TMPROXY_TEST_ALLOW_SKIP=1: then it appends
# a line here, and every skip is listed at the end of the run.
export TMPROXY_TEST_SKIP_LOG="$(mktemp)"
trap 'rm -f "$out" "$TMPROXY_TEST_SKIP_LOG"' EXIT
set +e
# Every test binary runs even after one fails, so a run names all its failures at once.
cargo test --workspace --all-targets --all-features --no-fail-fast 2>&1 | tee "$out"
status=${PIPESTATUS[0]}
set -e
if [ -s "$TMPROXY_TEST_SKIP_LOG" ]; then
    printf 'skipped (TMPROXY_TEST_ALLOW_SKIP=1), %d:\n' "$(wc -l <"$TMPROXY_TEST_SKIP_LOG")"
    sed 's/^/  /' "$TMPROXY_TEST_SKIP_LOG"
fi
# One closing line for the whole run: cargo prints one "test result" per test binary.
awk '/^test result:/ { for (i = 1; i < NF; i++) { if ($(i+1) ~ /^passed/) p += $i; if ($(i+1) ~ /^failed/) f += $i } }
     END { printf "tests: %d passed, %d failed\n", p, f }' "$out"
exit "$status"
