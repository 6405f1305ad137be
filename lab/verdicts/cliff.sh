#!/usr/bin/env bash
# Judges the cliff scenario's results in LAB_RESULT (see lab/scenarios/cliff.sh): the device
# cliff found within one interval of the throttle-group's set point and named the device, and
# the buffered write to the slow disk named writeback with its cliff between the background
# threshold and the dirty limit.
set -uo pipefail
command -v jq >/dev/null || { echo "jq is missing: apt-get install jq" >&2; exit 77; }
R=${LAB_RESULT:?LAB_RESULT must name the results directory}
failed=0
fail() { echo "FAIL: $*"; failed=1; }

# Set in the scenario's lab-disks line: max x length / (max - avg) seconds of burst.
MAX=33554432 AVG=4194304 LEN=4
set_ms=$((MAX * LEN * 1000 / (MAX - AVG)))
d=$R/device-cliff.json
kind=$(jq -r '.tests[0].timeline.event.kind // "none"' "$d")
start=$(jq -r '.tests[0].timeline.event.start_ms // -1' "$d")
interval=$(jq -r '.tests[0].timeline.interval_ms' "$d")
cause=$(jq -r '.tests[0].timeline.cause.kind // "none"' "$d")
echo "device cliff: $kind at ${start} ms, set at ${set_ms} ms (interval ${interval} ms); cause: $cause"
jq -r '.tests[0].timeline.cause.summary // ""' "$d"
[ "$kind" = cliff ] || fail "no cliff found on the burst disk"
diff=$((start - set_ms))
[ "${diff#-}" -le "$interval" ] || fail "the cliff at $start ms is more than one interval from $set_ms ms"
[ "$cause" = device ] || fail "the burst disk's cliff was named '$cause', not device"

w=$R/writeback.json
kind=$(jq -r '.tests[0].timeline.event.kind // "none"' "$w")
before=$(jq -r '.tests[0].timeline.event.bytes_before // 0' "$w")
cause=$(jq -r '.tests[0].timeline.cause.kind // "none"' "$w")
stall=$(jq -r '.tests[0].timeline.event.longest_stall_ms // 0' "$w")
echo "writeback: $kind after $((before >> 20)) MiB, predicted 64-128 MiB (background threshold to limit); longest stall ${stall} ms; cause: $cause"
jq -r '.tests[0].timeline.cause.summary // ""' "$w"
[ "$kind" != none ] || fail "no cliff or stall found on the slow disk"
[ "$cause" = writeback ] || fail "the slow disk's cliff was named '$cause', not writeback"
[ "$before" -ge $((48 << 20)) ] && [ "$before" -le $(((128 + 16) << 20)) ] ||
    fail "the writeback cliff came after $((before >> 20)) MiB, not 64-128 MiB"
s=$R/writeback-small.json
# The longest run of intervals with no I/O, with or without an event.
longest='reduce .tests[0].timeline.points[] as $p ({cur: 0, best: 0};
    if $p.ops == 0 then .cur += $p.ms | .best = ([.best, .cur] | max) else .cur = 0 end) | .best'
small_stall=$(jq -r "$longest" "$s")
big_stall=$(jq -r "$longest" "$w")
row() { # LABEL FILE
    jq -r --arg name "$1" --arg stall "$(jq -r "$longest" "$2")" '.tests[0] as $t |
        "\($name)  longest stall \($stall) ms  mean \(($t.write.bw_bytes / 1e5 | floor) / 10) MB/s over \($t.job_runtime_ms) ms"' "$2"
}
row "dirty 128/64 MiB:" "$w"
row "dirty  16/8  MiB:" "$s"
[ "$small_stall" -lt "$big_stall" ] || fail "smaller dirty limits did not shorten the longest stall ($small_stall ms against $big_stall ms)"
exit $failed
