#!/usr/bin/env bash
# nastune's user-space AES-256-XTS and AES-128-GCM against `openssl speed -evp` at
# 16 KiB, run alternately so both see the same machine state. Prints each pair and
# the ratio nastune/openssl (goal: >= 0.9). Both are encryption, wall clock
# (-elapsed), one thread. openssl's aes-256-xts is nastune's 512-bit XTS key.
# Usage: benches/crypto-vs-openssl.sh [ROUNDS] [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
secs=${2:-2}
command -v openssl >/dev/null || { echo "openssl not installed: apt-get install openssl" >&2; exit 2; }
cargo build --release --locked -q
bin=target/release/nastune

# bytes/s from `openssl speed -evp ALG -bytes 16384 -elapsed -seconds N`
# (last line: "<name>  <value>k", in 1000s of bytes per second).
openssl_rate() {
    openssl speed -evp "$1" -bytes 16384 -elapsed -seconds "$secs" 2>/dev/null |
        awk 'END { v = $NF; sub(/k$/, "", v); printf "%.0f\n", v * 1000 }'
}

# bytes/s of nastune's user-space encryption for CIPHER at KEY_BITS, 16 KiB requests
# (with a third argument "impl": the implementation that ran instead).
nastune_rate() {
    "$bin" bench crypto --no-store --no-kdf --json --cipher "$1" --size 16384 \
        --duration "$secs" --depth 1 |
        python3 -c '
import json, sys
doc = json.load(sys.stdin)
name, bits = sys.argv[1], int(sys.argv[2])
for c in doc["user_space"]:
    if c["cipher"] == name and c["key_bits"] == bits:
        print(c["implementation"] if sys.argv[3:] == ["impl"] else
              "%.0f" % c["points"][0]["encrypt"]["bytes_per_sec"])
        break
else:
    sys.exit("no %s/%d result" % (name, bits))
' "$@"
}

compare() { # label openssl-alg nastune-cipher key-bits
    local label=$1 alg=$2 cipher=$3 bits=$4 ratios=()
    echo "# $label: nastune runs $(secs=0.1 nastune_rate "$cipher" "$bits" impl)"
    for r in $(seq "$rounds"); do
        n=$(nastune_rate "$cipher" "$bits")
        o=$(openssl_rate "$alg")
        ratio=$(awk -v n="$n" -v o="$o" 'BEGIN { printf "%.2f", n / o }')
        ratios+=("$ratio")
        printf '%-12s round %d: nastune %8.1f MB/s  openssl %8.1f MB/s  ratio %s\n' \
            "$label" "$r" "$(awk -v x="$n" 'BEGIN{print x/1e6}')" "$(awk -v x="$o" 'BEGIN{print x/1e6}')" "$ratio"
    done
    printf '%-12s median ratio nastune/openssl: %s (goal >= 0.9)\n' "$label" \
        "$(printf '%s\n' "${ratios[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')"
}

echo "# $(openssl version); 16 KiB requests, encryption, ${secs} s per run, ${rounds} rounds"
compare AES-256-XTS aes-256-xts aes-xts-plain64 512
compare AES-128-GCM aes-128-gcm aes-gcm 128
