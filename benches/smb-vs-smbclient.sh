#!/usr/bin/env bash
# nastune bench smb vs Samba's smbclient (put/get) on the same file size against
# the same private smbd on loopback, alternating runs. Prints the median
# throughput of each, the ratio (nastune / smbclient), and client CPU-seconds
# per GB of each, for sequential write (put) and read (get).
# nastune: --block 1M --depth 4 (its defaults), plain session, dialect 3.1.1;
# smbclient: its defaults (SMB3, its own pipelining); both as the same user.
# Throughput: nastune's bw_bytes; smbclient's printed "average" rate (KiB/s: "kb/s" on put,
# "KiloBytes/sec" on get).
# Client CPU: nastune's client_cpu_ns (the workload only); smbclient's user+sys
# for the whole command (connect and logon included, a few ms).
# Needs root (a unix user for smbd and a private smbd), samba, smbclient and jq.
# Usage: benches/smb-vs-smbclient.sh [runs per tool (5)] [size (512M)]
# BIN=path/to/nastune skips the release build.
# Measured on the 2-core dev VM shared with other jobs (5 runs of 256 MiB, medians; runs
# spread 2-3x): write 1397 vs 544 MB/s (2.57x), client CPU 0.18 vs 0.42 s/GB (0.43x);
# read 2485 vs 907 MB/s (2.74x), client CPU 0.13 vs 0.47 s/GB (0.29x).
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-5}"
size="${2:-512M}"
for tool in smbd smbpasswd smbclient jq; do
    command -v "$tool" >/dev/null || [ -x "/usr/sbin/$tool" ] ||
        { echo "$tool missing: apt-get install samba smbclient jq" >&2; exit 2; }
done
[ "$(id -u)" = 0 ] || { echo "needs root (smbd serves as a unix user)" >&2; exit 2; }
if [ -z "${BIN:-}" ]; then
    cargo build --release --quiet
    BIN=target/release/nastune
fi
user=nastune-smb
pass=nastune-bench-pw
id "$user" >/dev/null 2>&1 || useradd -M -s /usr/sbin/nologin "$user"

dir=$(mktemp -d)
mkdir -p "$dir"/{private,lock,state,cache,pid,ncalrpc,binddns,share}
chmod 755 "$dir"   # smbd serves as the user, who must reach the share
chmod 777 "$dir/share"
free_port() {
    local p
    while :; do
        p=$((20000 + RANDOM % 40000))
        [ -z "$(ss -Htln "sport = :$p")" ] && { echo "$p"; return; }
    done
}
port=$(free_port)
cat >"$dir/smb.conf" <<EOF
[global]
  netbios name = NASTUNEBENCH
  security = user
  passdb backend = tdbsam:$dir/private/passdb.tdb
  private dir = $dir/private
  lock directory = $dir/lock
  state directory = $dir/state
  cache directory = $dir/cache
  pid directory = $dir/pid
  ncalrpc dir = $dir/ncalrpc
  binddns dir = $dir/binddns
  log file = $dir/log.%m
  smb ports = $port
  interfaces = 127.0.0.1
  bind interfaces only = yes
  disable netbios = yes
  load printers = no
  disable spoolss = yes
[share]
  path = $dir/share
  read only = no
EOF
printf '%s\n%s\n' "$pass" "$pass" | smbpasswd -c "$dir/smb.conf" -s -a "$user" >/dev/null
smbd --foreground --no-process-group -s "$dir/smb.conf" & srv=$!
trap 'kill $srv 2>/dev/null || true; rm -rf "$dir"' EXIT
for _ in $(seq 100); do
    [ -n "$(ss -Htln "sport = :$port")" ] && break
    sleep 0.1
done
bytes=$(numfmt --from=iec "$size")
head -c "$bytes" /dev/urandom >"$dir/local.bin"
cp "$dir/local.bin" "$dir/share/remote.bin"
chmod 666 "$dir/share/remote.bin"

# nastune WORKLOAD -> "bytes_per_sec cpu_s_per_gb"
nastune_run() {
    NASTUNE_SMB_PASSWORD=$pass "$BIN" --no-store bench smb "//127.0.0.1:$port/share" \
        --user "$user" --workload "$1" --size "$size" --dialect 3.1.1 --json |
        jq -r --arg w "$1" '.runs[0].results[] | select(.workload == $w) |
            "\(.bw_bytes) \(.client_cpu_ns / 1e9 / (.bytes / 1e9))"'
}

# smbclient put|get -> "bytes_per_sec cpu_s_per_gb"
smbclient_run() {
    local cmd out t
    # get into /dev/null: nastune keeps no local copy either.
    if [ "$1" = put ]; then cmd="put $dir/local.bin put.bin"; else cmd="get remote.bin /dev/null"; fi
    t=$( { TIMEFORMAT='%U %S'; time smbclient "//127.0.0.1/share" -p "$port" -U "$user%$pass" \
        -c "$cmd" >"$dir/sc.out" 2>&1; } 2>&1 )
    out=$(grep -oE 'average [0-9.]+ (kb/s|KiloBytes/sec)' "$dir/sc.out" | awk '{ print $2 * 1024 }')
    rm -f "$dir/share/put.bin"
    awk -v r="$out" -v t="$t" -v b="$bytes" 'BEGIN { split(t, c, " "); printf "%s %s\n", r, (c[1] + c[2]) / (b / 1e9) }'
}

median() { sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

for case in "write seq-write put" "read seq-read get"; do
    read -r name workload verb <<<"$case"
    : >"$dir/n"; : >"$dir/s"
    for ((r = 1; r <= runs; r++)); do
        nastune_run "$workload" >>"$dir/n"
        smbclient_run "$verb" >>"$dir/s"
    done
    nr=$(cut -d' ' -f1 "$dir/n" | median); nc=$(cut -d' ' -f2 "$dir/n" | median)
    sr=$(cut -d' ' -f1 "$dir/s" | median); sc=$(cut -d' ' -f2 "$dir/s" | median)
    awk -v c="$name" -v nr="$nr" -v sr="$sr" -v nc="$nc" -v sc="$sc" -v r="$runs" -v z="$size" 'BEGIN {
        printf "%s %s, %d runs each: nastune %.0f MB/s, smbclient %.0f MB/s, ratio %.2fx (goal >= 1.0x); client CPU-s/GB nastune %.2f, smbclient %.2f, ratio %.2fx (goal <= 1.0x)\n",
            c, z, r, nr / 1e6, sr / 1e6, nr / sr, nc, sc, nc / sc }'
    echo "  nastune   runs (B/s CPU-s/GB): $(tr '\n' ';' <"$dir/n")"
    echo "  smbclient runs (B/s CPU-s/GB): $(tr '\n' ';' <"$dir/s")"
done
