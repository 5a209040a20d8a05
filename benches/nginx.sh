# Sourced by the hit benchmarks: nginx serving one file on 127.0.0.1, as the anchor tmproxy's
# cache hits are measured against. `serve_with_nginx WORK FILE PORT` copies FILE to WORK/www,
# starts nginx in the foreground (its PID appended to the caller's `pids`) and waits until it
# answers on http://127.0.0.1:PORT/timemap.
serve_with_nginx() {
    local work=$1 file=$2 port=$3
    mkdir -p "$work/www"; cp "$file" "$work/www/timemap"
    # nginx's workers run unprivileged: they must be able to read the file (mktemp dirs are 0700).
    chmod 755 "$work" "$work/www"; chmod 644 "$work/www/timemap"
    cat >"$work/nginx.conf" <<NGINX
worker_processes auto;
pid $work/nginx.pid;
error_log $work/nginx-error.log;
daemon off;
events { worker_connections 1024; }
http {
  access_log off;
  default_type application/link-format;
  server { listen 127.0.0.1:$port; root $work/www; }
}
NGINX
    nginx -c "$work/nginx.conf" &
    pids+=($!)
    for _ in $(seq 50); do curl -sf -o /dev/null "http://127.0.0.1:$port/timemap" && return 0; sleep 0.2; done
    echo "nginx did not answer on port $port" >&2; return 1
}
