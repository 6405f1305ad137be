#!/usr/bin/env bash
# nastune bench disk against fio on the same 1 GiB file, alternately, for:
#   (a) 4K randread QD32 direct, (b) 1M sequential write direct QD1,
#   (c) 4K randwrite with fsync after each write.
# Prints the IOPS ratio (nastune / fio) and the CPU-per-I/O ratio (nastune / fio).
# Goal (issue 22): IOPS ratio >= 1.0 and CPU per I/O <= 0.7x fio. Both tools run
# the same engine per case (fio's), unless ENGINE picks nastune's.
# Env: DIR (where the file goes, default: a temp dir under /var/tmp), RUNTIME (s, default 5),
#      ROUNDS (alternations, default 2), SIZE (default 1g), ENGINE (nastune engine, default: fio's for the case).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v fio >/dev/null || { echo "fio is not installed: apt-get install fio" >&2; exit 2; }
command -v jq >/dev/null || { echo "jq is not installed: apt-get install jq" >&2; exit 2; }
cargo build --release --locked -q
bin=$PWD/target/release/nastune
runtime=${RUNTIME:-5}; rounds=${ROUNDS:-2}; size=${SIZE:-1g}
dir=${DIR:-$(mktemp -d /var/tmp/nastune-vs-fio.XXXXXX)}
file=$dir/vs-fio.img
# The file always goes; the directory too when this script made it.
if [ -n "${DIR:-}" ]; then trap 'rm -f "$file"' EXIT; else trap 'rm -rf "$dir"' EXIT; fi

# Lay the file out once with fio (random data), so both tools read real blocks.
fio --name=layout --filename="$file" --size="$size" --rw=write --bs=1m --direct=1 \
    --end_fsync=1 --output-format=json >/dev/null

# name | nastune options | fio options | fio ioengine
cases=(
  "a 4K randread QD32 direct|--rw randread --bs 4k --iodepth 32 --direct|--rw=randread --bs=4k --iodepth=32 --direct=1|io_uring"
  "b 1M seq write QD1 direct|--rw write --bs 1m --iodepth 1 --direct|--rw=write --bs=1m --iodepth=1 --direct=1|io_uring"
  "c 4K randwrite fsync each|--rw randwrite --bs 4k --iodepth 1 --fsync 1|--rw=randwrite --bs=4k --iodepth=1 --fsync=1|psync"
)

printf '%-28s %14s %14s %8s %12s %12s %8s\n' case "nastune IOPS" "fio IOPS" ratio "n cpu/IO us" "fio cpu/IO us" ratio
for c in "${cases[@]}"; do
  IFS='|' read -r name nopts fopts fengine <<<"$c"
  engine_opt=(--engine "${ENGINE:-$fengine}")
  n_iops=0; f_iops=0; n_cpu=0; f_cpu=0
  for _ in $(seq "$rounds"); do
    # shellcheck disable=SC2086
    n=$("$bin" bench disk --no-store --json $nopts --runtime "${runtime}s" --size "$size" "${engine_opt[@]}" "$file")
    n_iops=$(jq -n "$n_iops + ($n | .tests[0] | ((.read.iops // 0) + (.write.iops // 0)))")
    n_cpu=$(jq -n "$n_cpu + ($n | .tests[0].cpu_ns_per_io / 1000)")
    # shellcheck disable=SC2086
    f=$(fio --name=cmp --filename="$file" --size="$size" $fopts --ioengine="$fengine" \
          --time_based --runtime="$runtime" --randrepeat=0 --output-format=json)
    # fio: usr_cpu/sys_cpu are % of one CPU over job_runtime (ms); CPU per I/O in us.
    f_iops=$(jq -n "$f_iops + ($f | .jobs[0] | (.read.iops + .write.iops))")
    f_cpu=$(jq -n "$f_cpu + ($f | .jobs[0] | ((.usr_cpu + .sys_cpu) / 100 * .job_runtime * 1000) / (.read.total_ios + .write.total_ios))")
  done
  jq -rn --arg name "$name" "[$n_iops, $f_iops, $n_cpu, $f_cpu] | map(. / $rounds) as [\$ni, \$fi, \$nc, \$fc] |
     \"\(\$name | .[0:28] | . + \" \" * (28 - length)) \(\$ni | floor | tostring | \" \" * (14 - length) + .) \(\$fi | floor | tostring | \" \" * (14 - length) + .) \((\$ni / \$fi * 100 | round) / 100 | tostring | \" \" * (8 - length) + .) \((\$nc * 100 | round) / 100 | tostring | \" \" * (12 - length) + .) \((\$fc * 100 | round) / 100 | tostring | \" \" * (12 - length) + .) \((\$nc / \$fc * 100 | round) / 100 | tostring | \" \" * (8 - length) + .)\""
done
echo "goal: IOPS ratio >= 1.0, CPU per I/O ratio <= 0.7 (runtime ${runtime}s x ${rounds} rounds, file $size)"
