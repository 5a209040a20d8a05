# tmproxy: build with the Rust toolchain, run on a slim Debian with only CA certificates.
# (No Docker engine runs where this was written; it is kept right by reading.)

FROM rust:1-bookworm AS build
WORKDIR /src
# No debug info in the image's binary: Cargo.toml keeps `debug = 1` in the release profile for
# profiling benchmarks, which would make the shipped binary several times larger. Set before the
# first build so the dependencies are built once, with the same profile.
ENV CARGO_PROFILE_RELEASE_DEBUG=0 \
    CARGO_PROFILE_RELEASE_STRIP=debuginfo
# Dependencies first, so a source change does not rebuild them.
COPY Cargo.toml Cargo.lock ./
# The workspace names core/, disk/, sampling/, simulations/ and testkit/, so cargo needs their
# manifests and sources to exist, even though only the proxy (and the crates it is built on) is
# built here; testkit (a dev-dependency) keeps its placeholder.
COPY core/Cargo.toml core/Cargo.toml
COPY disk/Cargo.toml disk/Cargo.toml
COPY sampling/Cargo.toml sampling/Cargo.toml
COPY simulations/Cargo.toml simulations/Cargo.toml
COPY testkit/Cargo.toml testkit/Cargo.toml
RUN mkdir -p src benches tests/it core/src disk/src sampling/src simulations/src testkit/src \
    && echo 'fn main() {}' > src/main.rs \
    && echo '' > src/lib.rs \
    && echo '' > core/src/lib.rs \
    && echo '' > disk/src/lib.rs \
    && echo '' > sampling/src/lib.rs \
    && echo '' > testkit/src/lib.rs \
    && echo 'fn main() {}' > benches/parse.rs \
    && echo 'fn main() {}' > benches/sampling.rs \
    && echo 'fn main() {}' > tests/it/main.rs \
    && echo 'fn main() {}' > simulations/src/main.rs \
    && echo '' > simulations/src/lib.rs \
    && cargo build --release --locked --bin tmproxy \
    && rm -rf src core/src disk/src sampling/src simulations/src
COPY src ./src
COPY core/src core/src
COPY disk/src disk/src
COPY sampling/src sampling/src
COPY simulations/src simulations/src
# The web pages' templates, stylesheet and script: compiled into the binary (askama, include_bytes).
COPY templates ./templates
# Touch so cargo sees the real sources as newer than the placeholder build.
RUN touch src/main.rs src/lib.rs core/src/lib.rs disk/src/lib.rs sampling/src/lib.rs && cargo build --release --locked --bin tmproxy

FROM debian:bookworm-slim
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --home /var/lib/tmproxy --create-home tmproxy
COPY --from=build /src/target/release/tmproxy /usr/local/bin/tmproxy
COPY config.toml /etc/tmproxy/config.toml
USER tmproxy
WORKDIR /var/lib/tmproxy
# Everything a restart must find lives in /var/lib/tmproxy: the cache (sled) in cache/, sampling
# jobs beside it in sampling/jobs/, and [sampling] input_dir (data/sampling/input, relative to
# this working directory). A volume keeps them across containers; a bind mount must be writable
# by the image's `tmproxy` user.
#
# TMPROXY_PUBLIC_URL is the URL clients reach the proxy at, written into every link it serves.
# Listening on 0.0.0.0 without it would put http://0.0.0.0:7089 in those links, so tmproxy refuses
# to start and says to set it. The image sets none on purpose: a default such as localhost would
# be wrong links on every server that forgot it. Run with yours, e.g.
#   docker run -p 7089:7089 -e TMPROXY_PUBLIC_URL=http://localhost:7089 ...   (your own machine)
#   docker run -e TMPROXY_PUBLIC_URL=https://tm.example.org ...                 (a server)
ENV TMPROXY_CONFIG=/etc/tmproxy/config.toml \
    TMPROXY_LISTEN=0.0.0.0:7089 \
    TMPROXY_CACHE_PATH=/var/lib/tmproxy/cache
VOLUME ["/var/lib/tmproxy"]
EXPOSE 7089
# The slim image has no curl: the binary checks itself. `tmproxy health` reads the same config
# and environment as `serve`, asks http://127.0.0.1:7089/healthz within 5 s, and exits 0 on 200
# (also while the cache is degraded: the proxy still answers), 1 with the reason otherwise.
HEALTHCHECK --interval=30s --timeout=10s --start-period=10s --retries=3 \
    CMD ["/usr/local/bin/tmproxy", "health"]
# On SIGTERM tmproxy drains requests, checkpoints sampling jobs and flushes the cache, taking at
# most [upstream] deadline + 13 s (28 s by default): run with `docker run --stop-timeout 30`
# (Docker's default of 10 s would SIGKILL it sooner; that loses work in progress, never an
# answer already sent).
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/tmproxy"]
CMD ["serve"]
