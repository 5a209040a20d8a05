#!/usr/bin/env python3
"""Where tmproxy's CPU went, by phase, from a perf recording with call graphs.

    perf script -i FILE -F comm,ip,sym > stacks.txt
    python3 benches/perf_phases.py stacks.txt

Each sample goes to the innermost frame on its stack that names a phase (the kernel's work, and
pass-through frames such as tokio's TcpStream, count for the phase that called them); a sample
on the log writer's thread is the log's. `benches/vs_memgator.sh` writes such a recording with
PERF=FILE. The patterns below are the phases of a miss: the fan-out's HTTP client, the server
side, parsing, the merge, rendering, the log, metrics, the handler with the cache and routing,
and tokio's own scheduling.
"""
import collections
import re
import sys

PHASES = [
    ("parse", r"parse_link_format|fetch::parse_body|timemap::parse::"),
    ("merge", r"merge_with|Aggregate::of|timemap::identity::|Contribution::listed"
              r"|fanout::contribution|uri_text::is_servable"),
    ("render", r"View::rendered|timemap::serialize::"),
    ("metrics", r"tmproxy::metrics::|prometheus_client"),
    ("log", r"tmproxy::http::log::|tmproxy::logs::|tracing_subscriber::|tracing_core::|tracing::span"),
    ("client", r"reqwest::|hyper::client::|hyper_util::client::|role::Client|dispatch::Client"
               r"|hyper_rustls::|tmproxy::upstream::transport"
               r"|fetch::send_within|fetch::fetch_page|fetch::read_capped|fetch::fetch_archive"
               r"|registry::uri_t_under|url::parser|Url::parse|upstream::fallback|upstream::guard"),
    ("server", r"hyper::proto::h1|hyper::server::|hyper_util::server|tmproxy::serve::|TrackedBody"),
    ("handler, cache, routing", r"tmproxy::http::|tmproxy::cache::|tmproxy::routing|tmproxy_core::routing"
                                r"|tmproxy::upstream::|tmproxy::view|axum::|tower::|tower_http::|moka::"),
    ("tokio", r"tokio::runtime::scheduler|tokio::runtime::time|tokio::time::|tokio::runtime::io::driver"
              r"|mio::poll|mio::sys::unix::selector::Selector|tokio::runtime::task|tokio::sync"
              r"|tokio::runtime::park|tokio::runtime::context"),
]
LOG_THREAD = "tmproxy-log"


def samples(lines):
    """(thread name, [frame symbols, innermost first]) per sample."""
    comm, frames = None, []
    for line in lines:
        line = line.rstrip("\n")
        if not line.strip():
            if comm is not None:
                yield comm, frames
            comm, frames = None, []
            continue
        parts = line.split(None, 1)
        if comm is None:
            comm = parts[0]
        elif len(parts) == 2:
            frames.append(parts[1])
    if comm is not None:
        yield comm, frames


def phase_of(comm, frames, compiled):
    if comm.startswith(LOG_THREAD):
        return "log"
    for frame in frames:
        for name, pattern in compiled:
            if pattern.search(frame):
                return name
    return "other"


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    compiled = [(name, re.compile(p)) for name, p in PHASES]
    counts, allocator, total = collections.Counter(), 0, 0
    with open(sys.argv[1], errors="replace") as f:
        for comm, frames in samples(f):
            total += 1
            counts[phase_of(comm, frames, compiled)] += 1
            allocator += any("mi_" in s for s in frames[:3])
    if total == 0:
        sys.exit("no samples")
    for name, n in counts.most_common():
        print(f"{name:26s} {100 * n / total:5.1f}%")
    print(f"{total} samples; the allocator at the top of the stack in {100 * allocator / total:.1f}%")


if __name__ == "__main__":
    main()
