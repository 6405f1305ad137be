#!/usr/bin/env bash
# nastune bench net vs iperf3 on loopback, alternating runs, 1 and 2 streams.
# Prints the median throughput of each, the throughput ratio (nastune / iperf3)
# and the ratio of system-wide CPU seconds per GB moved (from /proc/stat, both
# ends together, since both run on this box).
# Usage: benches/net-vs-iperf3.sh [runs per tool (5)] [seconds per run (3)]
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-5}"
secs="${2:-3}"
command -v iperf3 >/dev/null || { echo "iperf3 missing: apt-get install iperf3" >&2; exit 2; }
command -v jq >/dev/null || { echo "jq missing: apt-get install jq" >&2; exit 2; }
cargo build --release --quiet
bin=target/release/nastune
pn=5411; pi=5412
"$bin" net serve -B 127.0.0.1 -p $pn --max-sessions 1 >/dev/null 2>&1 & srv_n=$!
iperf3 -s -B 127.0.0.1 -p $pi >/dev/null 2>&1 & srv_i=$!
trap 'kill $srv_n $srv_i 2>/dev/null || true' EXIT
sleep 1

busy_ticks() { awk '/^cpu /{print $2+$3+$4+$7+$8+$9}' /proc/stat; }
hz=$(getconf CLK_TCK)

# run TOOL STREAMS -> "bits_per_second cpu_seconds_per_gb"
run() {
    local tool=$1 streams=$2 before after out bytes bps
    before=$(busy_ticks)
    if [ "$tool" = nastune ]; then
        out=$("$bin" bench net 127.0.0.1 -p $pn -t "$secs" -P "$streams" -i 0 --json --no-store)
    else
        out=$(iperf3 -c 127.0.0.1 -p $pi -t "$secs" -P "$streams" -J)
    fi
    after=$(busy_ticks)
    bytes=$(jq '.end.sum_received.bytes' <<<"$out")
    bps=$(jq '.end.sum_received.bits_per_second' <<<"$out")
    awk -v b="$bytes" -v bps="$bps" -v t=$((after - before)) -v hz="$hz" \
        'BEGIN { printf "%.0f %.4f\n", bps, (t / hz) / (b / 1e9) }'
}

median() { sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

for streams in 1 2; do
    : >/tmp/nb.n; : >/tmp/nb.i
    for ((r = 1; r <= runs; r++)); do
        run nastune "$streams" >>/tmp/nb.n
        run iperf3 "$streams" >>/tmp/nb.i
    done
    nb=$(cut -d' ' -f1 /tmp/nb.n | median); ib=$(cut -d' ' -f1 /tmp/nb.i | median)
    nc=$(cut -d' ' -f2 /tmp/nb.n | median); ic=$(cut -d' ' -f2 /tmp/nb.i | median)
    awk -v s="$streams" -v nb="$nb" -v ib="$ib" -v nc="$nc" -v ic="$ic" -v r="$runs" 'BEGIN {
        printf "%d stream(s), %d runs each: nastune %.2f Gbit/s, iperf3 %.2f Gbit/s, throughput ratio %.2fx; CPU s/GB nastune %.3f, iperf3 %.3f, ratio %.2fx\n",
            s, r, nb / 1e9, ib / 1e9, nb / ib, nc, ic, nc / ic }'
    echo "  nastune runs (bps cpu_s/GB): $(tr '\n' ';' </tmp/nb.n)"
    echo "  iperf3  runs (bps cpu_s/GB): $(tr '\n' ';' </tmp/nb.i)"
done
