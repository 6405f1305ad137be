#!/bin/sh
# What `nastune watch` costs at 1 Hz: CPU share of one core and peak RSS, from
# /usr/bin/time and from /proc/PID/stat + /proc/PID/status while it runs.
# Goal: below 1 % of one core and below 10 MiB RSS.
#
# usage: benches/watch-cost.sh [SAMPLES]   (default 60; NASTUNE=path overrides the binary)
set -eu
samples=${1:-60}
bin=${NASTUNE:-target/release/nastune}
if [ ! -x "$bin" ]; then
    echo "building $bin (cargo build --release)" >&2
    cargo build --release --quiet
fi
[ -x /usr/bin/time ] || { echo "needs /usr/bin/time (apt-get install time)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
hz=$(getconf CLK_TCK)

/usr/bin/time -f '%U %S %e %M' -o "$tmp/time" \
    "$bin" watch --no-store --interval 1 --count "$samples" >/dev/null &
tpid=$!
# The watch process is /usr/bin/time's child.
pid=""
for _ in $(seq 50); do
    pid=$(pgrep -P "$tpid" 2>/dev/null | head -n1 || true)
    [ -n "$pid" ] && break
    sleep 0.1
done
[ -n "$pid" ] || { echo "watch did not start" >&2; exit 1; }
start=$(cut -d' ' -f22 "/proc/$pid/stat")
last_ticks=0
peak_rss_kib=0
while kill -0 "$pid" 2>/dev/null; do
    # utime + stime (fields 14, 15) in clock ticks; the comm field has no spaces here.
    if stat=$(cat "/proc/$pid/stat" 2>/dev/null); then
        last_ticks=$(echo "$stat" | awk '{print $14 + $15}')
        rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status" 2>/dev/null || echo 0)
        [ "${rss:-0}" -gt "$peak_rss_kib" ] && peak_rss_kib=$rss
        now=$(awk '{print $1}' /proc/uptime)
    fi
    sleep 1
done
wait "$tpid"
read -r user sys wall maxrss_kib < "$tmp/time"
echo "samples:                         $samples at 1 Hz"
awk -v u="$user" -v s="$sys" -v w="$wall" -v m="$maxrss_kib" 'BEGIN {
    printf "/usr/bin/time: cpu of one core   %.3f %% (user %.2f s + sys %.2f s over %.1f s)\n", 100 * (u + s) / w, u, s, w
    printf "/usr/bin/time: peak RSS          %.2f MiB\n", m / 1024 }'
awk -v t="$last_ticks" -v hz="$hz" -v st="$start" -v now="$now" -v r="$peak_rss_kib" 'BEGIN {
    el = now - st / hz
    printf "/proc/PID/stat: cpu of one core  %.3f %% (%d ticks over %.1f s, last reading)\n", 100 * t / hz / el, t, el
    printf "/proc/PID/status: peak VmRSS     %.2f MiB\n", r / 1024 }'
