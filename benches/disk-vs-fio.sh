#!/usr/bin/env bash
# nastune bench disk against fio on the same 1 GiB file, alternately, for:
#   (a) 4K randread QD32 direct, (b) 1M sequential write direct QD1,
#   (c) 4K randwrite with fsync after each write.
# Prints, per run, the IOPS ratio (nastune / fio) and the CPU-per-I/O ratio
# (nastune / fio), then each case's mean and its worst run.
# Goal: IOPS ratio >= 1.0 and CPU per I/O <= 0.7x fio in every run, so the
# tool is never the bottleneck it claims to measure.
# Both tools run the same engine per case (fio's), unless ENGINE picks nastune's.
# Rounds alternate who goes first (nastune, fio; then fio, nastune; …), so a
# disk that warms up or a load that fades favours neither side.
# Env: DIR (where the file goes, default: a temp dir under /var/tmp), RUNTIME (s, default 5),
#      ROUNDS (alternations, default 5), SIZE (default 1g), ENGINE (nastune engine, default:
#      fio's for the case), CASES (letters of the cases to run, default abc).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v fio >/dev/null || { echo "fio is not installed: apt-get install fio" >&2; exit 2; }
command -v jq >/dev/null || { echo "jq is not installed: apt-get install jq" >&2; exit 2; }
cargo build --release --locked -q
bin=$PWD/target/release/nastune
runtime=${RUNTIME:-5}; rounds=${ROUNDS:-5}; size=${SIZE:-1g}; only=${CASES:-abc}
dir=${DIR:-$(mktemp -d /var/tmp/nastune-vs-fio.XXXXXX)}
file=$dir/vs-fio.img
# The file always goes; the directory too when this script made it.
if [ -n "${DIR:-}" ]; then trap 'rm -f "$file"' EXIT; else trap 'rm -rf "$dir"' EXIT; fi

# Lay the file out once with fio (random data), so both tools read real blocks.
fio --name=layout --filename="$file" --size="$size" --rw=write --bs=1m --direct=1 \
    --end_fsync=1 --output-format=json >/dev/null

# name | nastune options | fio options | fio ioengine
# Neither tool is told to register files or buffers, poll, or batch: each runs
# its engine's defaults (fio 3.33's io_uring: one io_uring_enter per I/O).
cases=(
  "a 4K randread QD32 direct|--rw randread --bs 4k --iodepth 32 --direct|--rw=randread --bs=4k --iodepth=32 --direct=1|io_uring"
  "b 1M seq write QD1 direct|--rw write --bs 1m --iodepth 1 --direct|--rw=write --bs=1m --iodepth=1 --direct=1|io_uring"
  "c 4K randwrite fsync each|--rw randwrite --bs 4k --iodepth 1 --fsync 1|--rw=randwrite --bs=4k --iodepth=1 --fsync=1|psync"
)

# Prints "IOPS CPU-per-I/O-in-us" for one run of either tool.
run_nastune() {
  # shellcheck disable=SC2086
  "$bin" bench disk --no-store --json $1 --runtime "${runtime}s" --size "$size" \
      --engine "${ENGINE:-$2}" "$file" |
    jq -r '.tests[0] | "\((.read.iops // 0) + (.write.iops // 0)) \(.cpu_ns_per_io / 1000)"'
}
run_fio() {
  # fio: usr_cpu/sys_cpu are % of one CPU over job_runtime (ms); CPU per I/O in us.
  # shellcheck disable=SC2086
  fio --name=cmp --filename="$file" --size="$size" $1 --ioengine="$2" \
      --time_based --runtime="$runtime" --randrepeat=0 --output-format=json |
    jq -r '.jobs[0] | "\(.read.iops + .write.iops) \((.usr_cpu + .sys_cpu) / 100 * .job_runtime * 1000 / (.read.total_ios + .write.total_ios))"'
}

row='%-28s %3s %10s %10s %6s %9s %9s %6s\n'
# shellcheck disable=SC2059
printf "$row" case run "n IOPS" "fio IOPS" ratio "n us/IO" "fio us/IO" ratio
for c in "${cases[@]}"; do
  IFS='|' read -r name nopts fopts fengine <<<"$c"
  [[ $only == *"${name:0:1}"* ]] || continue
  runs=()
  for r in $(seq "$rounds"); do
    if (( r % 2 )); then
      n=$(run_nastune "$nopts" "$fengine"); f=$(run_fio "$fopts" "$fengine")
    else
      f=$(run_fio "$fopts" "$fengine"); n=$(run_nastune "$nopts" "$fengine")
    fi
    runs+=("$n $f")
    read -r ni nc fi fc <<<"$n $f"
    # shellcheck disable=SC2059
    printf "$row" "$name" "$r" "${ni%.*}" "${fi%.*}" \
      "$(jq -n "$ni / $fi * 100 | round / 100")" "$(jq -n "$nc * 100 | round / 100")" \
      "$(jq -n "$fc * 100 | round / 100")" "$(jq -n "$nc / $fc * 100 | round / 100")"
  done
  printf '%s\n' "${runs[@]}" | jq -rRn --arg name "$name" '
    [inputs | split(" ") | map(tonumber) | {ni: .[0], nc: .[1], fi: .[2], fc: .[3]}] as $r
    | ($r | map(.ni / .fi)) as $iops | ($r | map(.nc / .fc)) as $cpu
    | def r2: . * 100 | round / 100;
    "\($name): IOPS ratio mean \($iops | add / length | r2), worst \($iops | min | r2);" +
    " CPU per I/O ratio mean \($cpu | add / length | r2), worst \($cpu | max | r2)"'
done
echo "goal: IOPS ratio >= 1.0 and CPU per I/O ratio <= 0.7 in every run (runtime ${runtime}s, ${rounds} rounds, file $size)"
