#!/usr/bin/env bash
# Wall time and peak RSS of a release `nastune probe` on this machine.
# Goal: at most 40 ms and 8 MiB peak RSS, so a probe on a 128 MiB box leaves
# Samba its memory and is over before anyone waits.
# NASTUNE_BIN=path/to/nastune measures another build (nothing is built then).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -n "${NASTUNE_BIN:-}" ]; then
    bin=$(realpath "$NASTUNE_BIN")
else
    cargo build --release --locked -q
    bin=target/release/nastune
fi
runs=${RUNS:-20}
db=$(mktemp -d)/bench.db
"$bin" probe --db "$db" >/dev/null   # warm the page cache and create the store
best_ms=; worst_ms=0; total_ms=0; peak_kib=0
for _ in $(seq "$runs"); do
    out=$( { /usr/bin/time -f '%e %M' "$bin" probe --db "$db" >/dev/null; } 2>&1 | tail -1)
    start=$(date +%s%N)
    "$bin" probe --db "$db" >/dev/null
    ms=$(( ($(date +%s%N) - start) / 1000000 ))
    kib=${out#* }
    total_ms=$((total_ms + ms))
    [ -z "$best_ms" ] || [ "$ms" -lt "$best_ms" ] && best_ms=$ms
    [ "$ms" -gt "$worst_ms" ] && worst_ms=$ms
    [ "$kib" -gt "$peak_kib" ] && peak_kib=$kib
done
echo "nastune probe (release, with store): wall min ${best_ms} ms, mean $((total_ms / runs)) ms, max ${worst_ms} ms over ${runs} runs"
# Each shared library mapped costs resident pages (libm.so.6 0.23-0.37 MiB of probe's peak).
echo "shared libraries: $(readelf -d "$bin" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p' | tr '\n' ' ')"
echo "peak RSS: $((peak_kib / 1024)).$(( (peak_kib % 1024) * 10 / 1024 )) MiB (goal: <= 40 ms, <= 8 MiB)"
"$bin" probe --no-store >/dev/null
