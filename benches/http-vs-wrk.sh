#!/usr/bin/env bash
# nastune bench http vs wrk against nginx on loopback, alternating runs with the
# same threads, connections and duration. Prints, for each case, the median
# req/s of each and the ratio (nastune / wrk), and the median CPU per request of
# each (user + system, from getrusage of the tool's process, start-up included)
# and that ratio. Cases: HTTP keep-alive, and HTTPS with a new connection (full
# handshake) per request (wrk -H "Connection: close").
# nginx: 1 worker, 1 KiB static file, self-signed ECDSA P-256, TLS 1.2/1.3.
# Goal: keep-alive req/s ratio >= 1.0 and CPU per request <= 0.7x wrk, so the
# client is never the bottleneck it claims to measure on a 2-core box.
# Usage: benches/http-vs-wrk.sh [runs per tool (5)] [seconds per run (5)] [threads (2)] [connections (50)]
# BIN=path/to/nastune skips the release build.
# On the 2-core dev VM shared with other jobs (-t2 -c50, 5 s runs; req/s spreads +-30 % between
# runs) keep-alive is nginx-bound and over 90 % of both clients' CPU is kernel time (loopback TCP,
# and sleeping and waking in epoll_wait: ~35 % of nastune's samples in perf); nastune makes 2.5
# system calls per request to wrk's 4.7, for about the same CPU per request (0.9-1.0x).
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-5}"
secs="${2:-5}"
threads="${3:-2}"
conns="${4:-50}"
for tool in nginx wrk openssl jq; do
    command -v "$tool" >/dev/null || [ -x "/usr/sbin/$tool" ] ||
        { echo "$tool missing: apt-get install nginx wrk openssl jq" >&2; exit 2; }
done
nginx=$(command -v nginx || echo /usr/sbin/nginx)
if [ -z "${BIN:-}" ]; then
    cargo build --release --quiet
    BIN=target/release/nastune
fi

dir=$(mktemp -d)
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
    -keyout "$dir/key.pem" -out "$dir/cert.pem" -subj /CN=localhost 2>/dev/null
mkdir -p "$dir/www" "$dir/tmp"
head -c 1024 /dev/zero | tr '\0' a >"$dir/www/index.html"
# Two free loopback ports (nothing listening on them now).
free_port() {
    local p
    while :; do
        p=$((20000 + RANDOM % 40000))
        [ -z "$(ss -Htln "sport = :$p")" ] && { echo "$p"; return; }
    done
}
ph=$(free_port); ps=$(free_port)
while [ "$ps" = "$ph" ]; do ps=$(free_port); done
cat >"$dir/nginx.conf" <<EOF
worker_processes 1;
daemon off;
pid $dir/nginx.pid;
error_log $dir/error.log;
events { worker_connections 4096; }
http {
  access_log off;
  keepalive_requests 100000;
  client_body_temp_path $dir/tmp; proxy_temp_path $dir/tmp; fastcgi_temp_path $dir/tmp;
  uwsgi_temp_path $dir/tmp; scgi_temp_path $dir/tmp;
  server { listen 127.0.0.1:$ph; root $dir/www; }
  server { listen 127.0.0.1:$ps ssl; root $dir/www; ssl_protocols TLSv1.2 TLSv1.3;
           ssl_certificate $dir/cert.pem; ssl_certificate_key $dir/key.pem;
           ssl_session_cache off; ssl_session_tickets off; }
}
EOF
"$nginx" -p "$dir" -c "$dir/nginx.conf" & srv=$!
trap 'kill $srv 2>/dev/null || true; rm -rf "$dir"' EXIT
for _ in $(seq 50); do
    [ -n "$(ss -Htln "sport = :$ps")" ] && break
    sleep 0.1
done

# Each tool runs in a subshell whose `times` reports the children's
# getrusage (user and system), so both are measured the same way, start-up and
# all. run TOOL URL CLOSE(0|1) -> "req/s CPU-ns-per-request"
run() {
    local tool=$1 url=$2 close=$3 rps reqs
    if [ "$tool" = nastune ]; then
        local mode=keep-alive
        [ "$close" = 1 ] && mode=close
        ("$BIN" --no-store bench http "$url" -t "$threads" -c "$conns" -d "$secs" --warmup 0 \
            --insecure --mode "$mode" --json >"$dir/out"; times >"$dir/times")
        rps=$(jq '.runs[0].requests_per_sec' "$dir/out")
        reqs=$(jq '.runs[0].requests' "$dir/out")
    else
        local hdr=()
        [ "$close" = 1 ] && hdr=(-H "Connection: close")
        (wrk -t "$threads" -c "$conns" -d "${secs}s" "${hdr[@]}" "$url" >"$dir/out"; times >"$dir/times")
        rps=$(awk '/^Requests\/sec:/ { print $2 }' "$dir/out")
        reqs=$(awk '/ requests in / { print $1 }' "$dir/out")
    fi
    # times' second line: children's user and system time, as "1m2.345s 0m0.678s".
    awk -v rps="$rps" -v reqs="$reqs" 'NR == 2 {
        split($1, u, /[ms]/); split($2, s, /[ms]/)
        printf "%s %.0f\n", rps, (u[1] * 60 + u[2] + s[1] * 60 + s[2]) * 1e9 / (reqs > 0 ? reqs : 1) }' "$dir/times"
}

median() { sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

for case in "http-keep-alive http://127.0.0.1:$ph/ 0 1.0" "https-close https://127.0.0.1:$ps/ 1 0.9"; do
    read -r name url close goal <<<"$case"
    : >"$dir/n"; : >"$dir/w"
    for ((r = 1; r <= runs; r++)); do
        run nastune "$url" "$close" >>"$dir/n"
        run wrk "$url" "$close" >>"$dir/w"
    done
    n=$(cut -d' ' -f1 <"$dir/n" | median); w=$(cut -d' ' -f1 <"$dir/w" | median)
    nc=$(cut -d' ' -f2 <"$dir/n" | median); wc=$(cut -d' ' -f2 <"$dir/w" | median)
    awk -v c="$name" -v n="$n" -v w="$w" -v nc="$nc" -v wc="$wc" -v r="$runs" -v g="$goal" -v t="$threads" -v k="$conns" 'BEGIN {
        printf "%s (-t%d -c%d), %d runs each: nastune %.0f req/s, wrk %.0f req/s, ratio %.2fx (goal >= %.1fx)\n",
            c, t, k, r, n, w, n / w, g
        printf "  CPU per request: nastune %.1f us, wrk %.1f us, ratio %.2fx (goal <= 0.7x)\n",
            nc / 1000, wc / 1000, nc / wc }'
    echo "  nastune runs (req/s CPU-ns/req): $(tr '\n' ',' <"$dir/n")"
    echo "  wrk     runs (req/s CPU-ns/req): $(tr '\n' ',' <"$dir/w")"
done
