#!/usr/bin/env bash
# Judges the pathmodel scenario's results in LAB_RESULT (see lab/scenarios/pathmodel.sh):
# prints predicted against measured and fails when a prediction misses.
#   - the three throttled disks: shared_ceiling_bytes_per_sec within 10 % of the group's limit
#   - check's predicted SMB read and write (one vCPU, client in the guest) within 25 % of the
#     guest's later plain copies (the faster of two; the prediction from the less disturbed
#     of check's two runs, see best_check), and the what-if "SMB encryption on"
#     within 25 % of the encrypted ones; each copy judged by its rate on the CPU it had
#     (the time the host took the vCPU away, seen as the threads' clocks running past the
#     CPU's busy ticks, off its elapsed time: the model caps its costs the same way)
#   - from the host (shown, not judged): the what-if "the client on another machine"
#     against the host's copies through QEMU's user-mode network
set -uo pipefail
command -v jq >/dev/null || { echo "jq is missing: apt-get install jq" >&2; exit 77; }
R=${LAB_RESULT:?LAB_RESULT must name the results directory}
LIMIT=16777216 # the throttle-group's x-bps-read in the scenario's lab-disks line
failed=0
missing=$(mktemp)
trap 'rm -f "$missing"' EXIT

# jq on a result file; a missing file or value is noted (the verdict fails) and reads as 0.
get() { # FILE FILTER
    jq -er "$2" "$R/$1" 2>/dev/null || {
        echo "no '$2' in $1" >>"$missing"
        echo 0
    }
}
# A workload's bandwidth in a bench smb document.
smb_bw() { get "$1" "[.runs[0].results[] | select(.workload == \"$2\") | .bw_bytes][0]"; }
# The faster of the guest's two copies (SECURITY WORKLOAD): under TCG the host's other
# work slows a copy down, never up.
guest_bw() {
    printf '%s\n' "$(smb_bw "guest-smb-$1-1.json" "$2")" "$(smb_bw "guest-smb-$1-2.json" "$2")" |
        sort -g | tail -n 1
}
# What one copy's CPU did (FILE WORKLOAD): the threads' own count (server stages and the
# client), the CPU's busy ticks and the elapsed time. Counted above busy is time the
# host took the vCPU away (no steal accounting under TCG), which the model caps.
copy_cpu() {
    jq -r --arg w "$2" '[.runs[0].results[] | select(.workload == $w)][0] |
        "counted \((([.server.stages[]? | select(.stage != "iowait") | .cpu_ns] | add // 0)
            + .client_cpu_ns) / 1e6 | round) ms (client \(.client_cpu_ns / 1e6 | round)), " +
        "busy \(([.server.busy_by_cpu[]?.busy_ns] | add // 0) / 1e6 | round) ms of \(.elapsed_ns / 1e6 | round) ms"' \
        "$R/$1" 2>/dev/null || echo "no $2 in $1"
}
# One copy's rate on the CPU time it had (FILE WORKLOAD): the time the host took the vCPU
# away (counted above busy, as above) taken off its elapsed time. The model's costs are
# capped the same way, so this is the figure it predicts.
own_cpu_bw() {
    jq -er --arg w "$2" '[.runs[0].results[] | select(.workload == $w)][0] |
        ((([.server.stages[]? | select(.stage != "iowait") | .cpu_ns] | add // 0) + .client_cpu_ns)
            - ([.server.busy_by_cpu[]?.busy_ns] | add // 0)) as $away |
        .bytes / ((.elapsed_ns - ([$away, 0] | max)) / 1e9)' "$R/$1" 2>/dev/null || {
        echo "no $2 CPU figures in $1" >>"$missing"
        echo 0
    }
}
guest_own_cpu_bw() { # SECURITY WORKLOAD
    printf '%s\n' "$(own_cpu_bw "guest-smb-$1-1.json" "$2")" "$(own_cpu_bw "guest-smb-$1-2.json" "$2")" |
        sort -g | tail -n 1
}
# Of check's two runs, the one whose copy (DIR SECURITY: read|write plain|encrypt) had the
# least CPU per byte: the host's other work only inflates a copy's costs, never deflates
# them, as it only slows the judged copies down (the faster of two is judged). The CPU per
# byte is the copy's busy ticks or its threads' count, the lower (the model's cap).
best_check() {
    local key=$1_load costs=$1_costs f cost best="" best_cost=""
    [ "$2" = encrypt ] && key=encrypted_$key costs=encrypted_$costs
    for f in check-1.json check-2.json; do
        cost=$(jq -er ".measurements.services[0] | ([(([.${costs}[].ns_per_byte] | add) * .${key}.bytes),
            ([.${key}.busy_by_cpu[].busy_ns] | add)] | min) / .${key}.bytes" "$R/$f" 2>/dev/null) || continue
        if [ -z "$best" ] || awk -v a="$cost" -v b="$best_cost" 'BEGIN { exit !(a < b) }'; then
            best=$f best_cost=$cost
        fi
    done
    echo "${best:-check-1.json}"
}
# The model of the chosen check's path NAME: FIELD (a jq path under .model); C names the file.
C=check-1.json
model() { get "$C" "[.paths[] | select(.name == \"$1\") | .model$2][0]"; }
what_if() { model "$1" ".what_ifs[] | select(.change == \"$2\") | .predicted_bytes_per_sec"; }

# compare LABEL PREDICTED MEASURED TOLERANCE_PCT (0: shown only)
compare() {
    awk -v l="$1" -v p="$2" -v m="$3" -v t="$4" 'BEGIN {
        miss = m > 0 ? (p - m) / m * 100 : 1e9
        verdict = t == 0 ? "shown" : ((miss <= t && miss >= -t) ? "ok" : "MISS")
        printf "%-64s predicted %7.2f MB/s  measured %7.2f MB/s  %+6.1f %%  %s\n",
            l, p / 1e6, m / 1e6, miss, verdict
        exit(verdict == "MISS")
    }' || failed=1
}

echo "one vCPU (TCG), ext4 on LUKS2 aes-xts-plain64, smbd; figures in MB/s"
compare "shared ceiling of 3 disks in one throttle-group" \
    "$LIMIT" "$(get shared.json .together.shared_ceiling_bytes_per_sec)" 10
for dir in read write; do
    case $dir in read) path="read from /srv/share" w=seq-read ;; *) path="write to /srv/share" w=seq-write ;; esac
    C=$(best_check $dir plain)
    echo "-- SMB $dir ($C): limit $(model "$path" .limit); cpu: $(model "$path" .cpu.arithmetic)"
    # On one CPU the costs of a copy cannot add up to more than the CPU was busy during it.
    echo "   check's copy: the costs add up to $(get "$C" ".measurements.services[0] |
        ([.${dir}_costs[].ns_per_byte] | add) * .${dir}_load.bytes / 1e6 | round") ms of CPU; \
the CPU was busy $(get "$C" ".measurements.services[0].${dir}_load |
        ([.busy_by_cpu[].busy_ns] | add) / 1e6 | round") ms of $(get "$C" \
        ".measurements.services[0].${dir}_load.elapsed_ns / 1e6 | round") ms"
    # Judged: each copy's rate on the CPU it had (see own_cpu_bw), which is what the
    # capped costs predict; the raw rates are shown beside them.
    compare "check's own copy ($w, costed), on the CPU it had" \
        "$(model "$path" .predicted_bytes_per_sec)" "$(get "$C" ".measurements.services[0] |
            (([.${dir}_costs[].ns_per_byte] | add) * .${dir}_load.bytes
              - ([.${dir}_load.busy_by_cpu[].busy_ns] | add)) as \$away |
            .${dir}_load.bytes / (.${dir}_load.bytes / .${dir}_bytes_per_sec - ([\$away, 0] | max) / 1e9)")" 25
    compare "   raw" "$(model "$path" .predicted_bytes_per_sec)" "$(model "$path" .measured_bytes_per_sec)" 0
    compare "guest copy, plain, on the CPU it had" \
        "$(model "$path" .predicted_bytes_per_sec)" "$(guest_own_cpu_bw plain $w)" 25
    compare "   raw (client in the guest)" \
        "$(model "$path" .predicted_bytes_per_sec)" "$(guest_bw plain $w)" 0
    C=$(best_check $dir encrypt)
    compare "guest copy, encrypted, on the CPU it had: what-if encryption on ($C)" \
        "$(what_if "$path" "SMB encryption on")" "$(guest_own_cpu_bw encrypt $w)" 25
    compare "   raw" "$(what_if "$path" "SMB encryption on")" "$(guest_bw encrypt $w)" 0
    C=$(best_check $dir plain)
    for f in guest-smb-plain-1 guest-smb-plain-2 guest-smb-encrypt-1 guest-smb-encrypt-2; do
        echo "   $f: $(awk -v b="$(smb_bw $f.json $w)" 'BEGIN{printf "%.2f", b/1e6}') MB/s, $(copy_cpu $f.json $w)"
    done
    compare "host copy, plain: what-if client elsewhere" \
        "$(what_if "$path" "the client on another machine")" "$(smb_bw host-smb-plain.json $w)" 0
    echo "   host copy, encrypted: measured $(awk -v b="$(smb_bw host-smb-encrypt.json $w)" 'BEGIN{printf "%.2f", b/1e6}') MB/s"
done
for f in host-net-send host-net-receive; do
    echo "   $f (host <-> guest TCP through QEMU's user-mode network): $(get $f.json \
        '.end.sum_received.bits_per_second / 8e6 | . * 100 | round / 100') MB/s"
done
[ -f "$R/timings.txt" ] && echo "guest seconds: $(tr '\n' ' ' <"$R/timings.txt")"
if [ -s "$missing" ]; then
    sed 's/^/MISSING: /' "$missing"
    failed=1
fi
exit $failed
