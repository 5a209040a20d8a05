# tmproxy: build with the Rust toolchain, run on a slim Debian with only CA certificates.
# (No Docker engine runs where this was written; it is kept right by reading.)

FROM rust:1-bookworm AS build
WORKDIR /src
# Dependencies first, so a source change does not rebuild them.
COPY Cargo.toml Cargo.lock ./
RUN mkdir -p src benches tests/it \
    && echo 'fn main() {}' > src/main.rs \
    && echo '' > src/lib.rs \
    && echo 'fn main() {}' > benches/parse.rs \
    && echo 'fn main() {}' > tests/it/main.rs \
    && cargo build --release --locked --bin tmproxy \
    && rm -rf src
COPY src ./src
# Touch so cargo sees the real sources as newer than the placeholder build.
RUN touch src/main.rs src/lib.rs && cargo build --release --locked --bin tmproxy

FROM debian:bookworm-slim
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --home /var/lib/tmproxy --create-home tmproxy
COPY --from=build /src/target/release/tmproxy /usr/local/bin/tmproxy
COPY config.toml /etc/tmproxy/config.toml
USER tmproxy
WORKDIR /var/lib/tmproxy
ENV TMPROXY_CONFIG=/etc/tmproxy/config.toml \
    TMPROXY_LISTEN=0.0.0.0:7089
EXPOSE 7089
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/tmproxy"]
CMD ["serve"]
