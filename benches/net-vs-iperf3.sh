#!/usr/bin/env bash
# nastune bench net vs iperf3 on loopback, alternating runs: 1 and 2 streams as
# fast as possible, and 1 stream paced at 1 Gbit/s (what a NAS link carries:
# `bench net -b 1G` against `iperf3 -b 1G`).
#
# CPU is each end's own: user+system seconds of the client (GNU time, from
# wait4's rusage) and of the server (utime+stime of /proc/PID/stat, all its
# threads, before and after the run), per GB the receiver counted. Other work
# on the box barely moves these, where the system-wide /proc/stat busy time
# counts every other process too. Throughput is the median of the runs; the
# ratios are nastune / iperf3 (below 1 is less CPU per GB for nastune).
#
# Usage: benches/net-vs-iperf3.sh [runs per tool (5)] [seconds per run (3)] [paced rate (1G)]
# NASTUNE_BIN=path uses that binary instead of building target/release/nastune.
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-5}"
secs="${2:-3}"
rate="${3:-1G}"
command -v iperf3 >/dev/null || { echo "iperf3 missing: apt-get install iperf3" >&2; exit 2; }
command -v jq >/dev/null || { echo "jq missing: apt-get install jq" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "GNU time missing: apt-get install time" >&2; exit 2; }
if [ -n "${NASTUNE_BIN:-}" ]; then
    bin=$NASTUNE_BIN
else
    cargo build --release --locked --quiet
    bin=target/release/nastune
fi
pn=5411; pi=5412
"$bin" net serve -B 127.0.0.1 -p $pn --max-sessions 1 >/dev/null 2>&1 & srv_n=$!
iperf3 -s -B 127.0.0.1 -p $pi >/dev/null 2>&1 & srv_i=$!
tmp=$(mktemp -d)
trap 'kill $srv_n $srv_i 2>/dev/null || true; rm -rf "$tmp"' EXIT
sleep 1
hz=$(getconf CLK_TCK)

# utime + stime of PID in clock ticks (fields 14 and 15; the command name in
# field 2 has no spaces for these two programs).
proc_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

# run TOOL STREAMS RATE -> "bits_per_second client_cpu_s/GB server_cpu_s/GB"
run() {
    local tool=$1 streams=$2 pace=$3 srv before after out bytes bps args=()
    if [ "$tool" = nastune ]; then
        srv=$srv_n
        [ "$pace" = 0 ] || args=(-b "$pace")
    else
        srv=$srv_i
        [ "$pace" = 0 ] || args=(-b "$pace")
    fi
    before=$(proc_ticks "$srv")
    if [ "$tool" = nastune ]; then
        /usr/bin/time -f '%U %S' -o "$tmp/time" "$bin" bench net 127.0.0.1 -p $pn -t "$secs" \
            -P "$streams" "${args[@]}" -i 0 --json --no-store >"$tmp/out"
    else
        /usr/bin/time -f '%U %S' -o "$tmp/time" iperf3 -c 127.0.0.1 -p $pi -t "$secs" \
            -P "$streams" "${args[@]}" -J >"$tmp/out"
    fi
    # The server counts its side after the client has its results; let it settle.
    sleep 0.3
    after=$(proc_ticks "$srv")
    out=$(cat "$tmp/out")
    bytes=$(jq '.end.sum_received.bytes' <<<"$out")
    bps=$(jq '.end.sum_received.bits_per_second' <<<"$out")
    awk -v b="$bytes" -v bps="$bps" -v t=$((after - before)) -v hz="$hz" -v c="$(cat "$tmp/time")" \
        'BEGIN { split(c, u, " "); gb = b / 1e9;
                 printf "%.0f %.4f %.4f\n", bps, (u[1] + u[2]) / gb, (t / hz) / gb }'
}

median() { sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
col() { cut -d' ' -f"$1" "$2" | median; }

echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs"
printf '%-22s %9s %9s %6s | %-23s %-23s\n' case "nastune" "iperf3" ratio \
    "client CPU s/GB n/i =" "server CPU s/GB n/i ="
for case in "1 0" "2 0" "1 $rate"; do
    read -r streams pace <<<"$case"
    : >"$tmp/n"; : >"$tmp/i"
    for ((r = 1; r <= runs; r++)); do
        run nastune "$streams" "$pace" >>"$tmp/n"
        run iperf3 "$streams" "$pace" >>"$tmp/i"
    done
    name="loopback ${streams} stream(s)"
    [ "$pace" = 0 ] || name="paced $pace, $streams stream"
    awk -v name="$name" \
        -v nb="$(col 1 "$tmp/n")" -v ib="$(col 1 "$tmp/i")" \
        -v nc="$(col 2 "$tmp/n")" -v ic="$(col 2 "$tmp/i")" \
        -v ns="$(col 3 "$tmp/n")" -v is="$(col 3 "$tmp/i")" 'BEGIN {
        printf "%-22s %6.2f Gb/s %6.2f Gb/s %5.2fx | %.3f / %.3f = %5.2fx   %.3f / %.3f = %5.2fx\n",
            name, nb / 1e9, ib / 1e9, nb / ib, nc, ic, nc / ic, ns, is, ns / is }'
    echo "  nastune runs (bps client_s/GB server_s/GB): $(tr '\n' ';' <"$tmp/n")"
    echo "  iperf3  runs (bps client_s/GB server_s/GB): $(tr '\n' ';' <"$tmp/i")"
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
