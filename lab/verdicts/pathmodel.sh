#!/usr/bin/env bash
# Judges the pathmodel scenario's results in LAB_RESULT (see lab/scenarios/pathmodel.sh):
# prints predicted against measured and fails when a prediction misses.
#   - the three throttled disks: shared_ceiling_bytes_per_sec within 10 % of the group's limit
#   - check's predicted SMB read and write (one vCPU, client in the guest) within 25 % of the
#     guest's later plain copies (the faster of two; the prediction from the less disturbed
#     of check's two runs, see best_check), and the what-if "SMB encryption on"
#     within 25 % of the encrypted ones; each copy judged on the CPU it had, by the host's
#     own clock and count (vcpu.txt, see vcpu_watch in lab/run): under TCG the guest counts
#     the time the host kept its vCPU waiting as its own work, and its clock falls behind
#     the host's meanwhile. A copy's rate is its bytes over its window on the host's clock
#     less the vCPU's wait in it (copy_window, rate_on_host_cpu); check's costs, sampled on
#     the guest's clock, are scaled by the same figures of check's copy, which replace the
#     model's cap of them at the guest's busy ticks (host_scale).
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
# The guest's judged copies as `history show --json` printed them: their bench smb documents.
for f in "$R"/guest-smb-*.stored.json; do
    [ -f "$f" ] || continue
    jq '[.documents[].body | select(type == "object" and has("runs"))][0]' "$f" \
        >"${f%.stored.json}.json" 2>/dev/null || rm -f "${f%.stored.json}.json"
done
V=$R/../vcpu.txt
# The time (microseconds since the epoch, host clock) of the INDEX-th (from 1) progress
# record containing TEXT between the guest's marks 'NAME begin' and 'NAME end'. A record
# ends at a carriage return: a marker line's own, or the one that starts the next drawing
# of a progress bar, so a bar's record N is timed when drawing N+1 starts.
mark_time() { # NAME TEXT INDEX
    awk -v b="vmlab-mark pathmodel $1 begin" -v e="vmlab-mark pathmodel $1 end" \
        -v t="$2" -v want="$3" '$1 == "M" {
            line = $0
            if (index(line, b)) { on = 1; next }
            if (index(line, e)) on = 0
            if (on && index(line, t) && ++n == want) { print $2; exit }
        }' "$V" 2>/dev/null
}
# The host's figures between two times (microseconds): "RUN_NS WAIT_NS QRUN_NS QWAIT_NS"
# (the vCPU threads, then all of QEMU's), each interpolated between the samples around it.
host_between() { # FROM TO
    awk -v a="$1" -v b="$2" '
        function at(x, col,   i) {
            for (i = 1; i < n; i++)
                if (t[i] >= x) return v[col, i - 1] + (v[col, i] - v[col, i - 1]) * (x - t[i - 1]) / (t[i] - t[i - 1] > 0 ? t[i] - t[i - 1] : 1)
            return v[col, n - 1]
        }
        ($1 == "S" || $1 == "M") && NF >= 6 {
            t[n] = $2; v[1, n] = $3; v[2, n] = $4; v[3, n] = $5; v[4, n] = $6; n++
        }
        END {
            if (n < 2 || a == "" || b == "" || a < t[0] || b > t[n - 1]) exit 1
            printf "%.0f %.0f %.0f %.0f\n", at(b, 1) - at(a, 1), at(b, 2) - at(a, 2),
                at(b, 3) - at(a, 3), at(b, 4) - at(a, 4)
        }' "$V" 2>/dev/null
}
# A copy's window on the host's clock: "START END" in microseconds, END empty when no record
# marks it. A write runs from its progress record to the read's (between them only the
# sampler's own reads of /proc); a read from its record (then evict's sync) to the next one
# (the small file's, for bench smb; check's next is its cleanup and the next login, so
# check's reads are unmarked). check's bar draws, in its SMB phase, the phase's start, then
# plain seq-write, seq-read, encrypted seq-write, seq-read (each timed one later, above).
copy_window() { # RUN(check-N|guest-smb-SEC-N) WORKLOAD(seq-write|seq-read) SECURITY
    # Five records or none: a record lost or run together would shift every window.
    case $1 in check-*) [ -n "$(mark_time "$1" "SMB copy" 5)" ] && [ -z "$(mark_time "$1" "SMB copy" 6)" ] ||
        return 0 ;;
    esac
    case $1-$3-$2 in
    check-*-plain-seq-write) echo "$(mark_time "$1" "SMB copy" 1) $(mark_time "$1" "SMB copy" 2)" ;;
    check-*-plain-seq-read) mark_time "$1" "SMB copy" 2 ;;
    check-*-encrypt-seq-write) echo "$(mark_time "$1" "SMB copy" 3) $(mark_time "$1" "SMB copy" 4)" ;;
    check-*) mark_time "$1" "SMB copy" 4 ;;
    *-seq-write) echo "$(mark_time "$1" ": $3 seq-write" 1) $(mark_time "$1" ": $3 seq-read" 1)" ;;
    *) echo "$(mark_time "$1" ": $3 seq-read" 1) $(mark_time "$1" ": $3 small-files" 1)" ;;
    esac
}
# One copy's figures, guest and host: "BYTES ELAPSED_NS BUSY_NS SPAN_NS RUN_NS WAIT_NS
# QRUN_NS QWAIT_NS" (the host's empty when missing). SPAN is the window's length on the
# host's clock: the guest's clock falls behind it while the host keeps the vCPU waiting.
# A read's window is its elapsed time (the guest's) back from the record after it (evict's
# sync comes before), or on from its own when none follows. DOC is a jq path to the copy's
# {bytes, elapsed_ns, busy_by_cpu} in FILE.
copy_figures() { # FILE DOC RUN WORKLOAD SECURITY
    local g w start end host what="$3 $5 $4" e
    g=$(jq -er "$2 | \"\(.bytes) \(.elapsed_ns) \([.busy_by_cpu[]?.busy_ns] | add // 0)\"" "$R/$1" 2>/dev/null) || {
        echo "no copy figures '$2' in $1" >>"$missing"
        echo "0 1 0"
        return
    }
    e=$(cut -d' ' -f2 <<<"$g")
    read -r start end <<<"$(copy_window "$3" "$4" "$5")"
    if [ "$4" = seq-read ]; then
        if [ -n "$end" ]; then start=$((end - e / 1000)); else end=$((start + e / 1000)); fi
    fi
    host=""
    if [ -n "$start" ] && [ -n "$end" ]; then
        host=$(host_between "$start" "$end") && host="$(((end - start) * 1000)) $host"
    fi
    [ -n "$host" ] || [ "${quiet_missing:-0}" = 1 ] || echo "no host figures for $what (vcpu.txt)" >>"$missing"
    echo "$g $host"
}
# A copy's rate on the CPU it had, by the host's clock and count (FIGURES from
# copy_figures): the time the host kept the vCPU waiting taken off the window.
rate_on_host_cpu() {
    awk '{ if ($4 == "") { print 0; exit } printf "%.0f\n", $1 / (($4 - $6) / 1e9) }' <<<"$1"
}
# The raw figures of a copy, for the table.
figures_text() {
    awk '{ if ($4 == "") { printf "guest %.0f ms (busy %.0f); no host figures", $2 / 1e6, $3 / 1e6; exit }
           printf "guest %.0f ms (busy %.0f); host %.0f ms: the vCPU ran %.0f, waited %.0f (QEMU ran %.0f)",
             $2 / 1e6, $3 / 1e6, $4 / 1e6, $5 / 1e6, $6 / 1e6, $7 / 1e6 }' <<<"$1"
}
# What a CPU-bound prediction from check's copy (FIGURES) is multiplied by to be on the
# CPU the copy had by the host's count: the copy's costs were sampled on the guest's clock
# over its elapsed time, of which the vCPU ran (or idled) only the window less its wait;
# and the model's own estimate of that, its cap of the costs at the guest's busy ticks
# (CAP: busy / counted, from ARITHMETIC; those ticks miss time under TCG), is undone.
# 1 without the host's figures: the model's cap then stands.
host_scale() { # FIGURES ARITHMETIC
    local cap
    cap=$(sed -n 's/.*the stages counted \([0-9.]*\) ms, the CPUs were busy \([0-9.]*\) ms.*/\2 \1/p' <<<"$2")
    awk -v cap="${cap:-1 1}" '{ split(cap, c, " "); f = c[2] > 0 ? c[1] / c[2] : 1
        s = ($4 == "" || $4 <= $6) ? 1 : f * $2 / ($4 - $6); printf "%.4f\n", s }' <<<"$1"
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
# check's copy (RUN DIR SECURITY) as copy_figures sees it.
check_figures() { # check-N read|write plain|encrypt
    local key=$2_load w=seq-$2
    [ "$3" = encrypt ] && key=encrypted_$key
    copy_figures "$1.json" ".measurements.services[0].$key" "$1" "$w" "$3"
}
# Of check's two runs, the one whose copy (DIR SECURITY) took the least host time per byte
# with the vCPU's waits taken off (the guest's busy time when the host's figures are
# missing): the host's other work (cache contention the accounting cannot see) only
# inflates it, as it only slows the judged copies (the faster of two is judged).
best_check() {
    local f fig cost best="" best_cost="" by
    # The host's figures when any run has them (a run whose records were lost has none).
    for by in host guest; do
        for f in check-1 check-2; do
            fig=$(quiet_missing=1 check_figures $f "$1" "$2")
            cost=$(awk -v by=$by '$1 > 0 && (by == "guest" || $4 != "") {
                printf "%.6f\n", (by == "guest" ? $3 : $4 - $6) / $1 }' <<<"$fig")
            [ -n "$cost" ] || continue
            if [ -z "$best" ] || awk -v a="$cost" -v b="$best_cost" 'BEGIN { exit !(a < b) }'; then
                best=$f best_cost=$cost
            fi
        done
        [ -n "$best" ] && break
    done
    echo "${best:-check-1}.json"
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
# The faster of the guest's two copies (SECURITY WORKLOAD), each on the CPU it had; prints
# the rate and, on stderr, each copy's figures.
guest_best() {
    local n fig rate best=0
    for n in 1 2; do
        fig=$(copy_figures "guest-smb-$1-$n.json" \
            "[.runs[0].results[] | select(.workload == \"$2\")][0] | {bytes, elapsed_ns, busy_by_cpu: .server.busy_by_cpu}" \
            "guest-smb-$1-$n" "$2" "$1")
        rate=$(rate_on_host_cpu "$fig")
        echo "   guest-smb-$1-$n: $(awk -v r="$rate" -v b="$(smb_bw "guest-smb-$1-$n.json" "$2")" \
            'BEGIN { printf "%.2f MB/s on the CPU it had, %.2f MB/s raw", r / 1e6, b / 1e6 }'), \
$(figures_text "$fig"); guest counters: $(copy_cpu "guest-smb-$1-$n.json" "$2")" >&2
        awk -v a="$rate" -v b="$best" 'BEGIN { exit !(a > b) }' && best=$rate
    done
    echo "$best"
}
# PREDICTED x SCALE, when the path's limit is the CPU (only CPU costs were overcounted).
scaled() { # PREDICTED SCALE LIMIT
    awk -v p="$1" -v s="$2" -v l="$3" 'BEGIN { printf "%.0f\n", l == "cpu" ? p * s : p }'
}

for dir in read write; do
    case $dir in read) path="read from /srv/share" w=seq-read ;; *) path="write to /srv/share" w=seq-write ;; esac
    C=$(best_check $dir plain)
    limit=$(model "$path" .limit)
    echo "-- SMB $dir ($C): limit $limit; cpu: $(model "$path" .cpu.arithmetic)"
    fig=$(check_figures "${C%.json}" $dir plain)
    scale=$(host_scale "$fig" "$(model "$path" .cpu.arithmetic)")
    predicted=$(model "$path" .predicted_bytes_per_sec)
    echo "   check's copy: $(figures_text "$fig"); the costs add up to $(get "$C" ".measurements.services[0] |
        ([.${dir}_costs[].ns_per_byte] | add) * .${dir}_load.bytes / 1e6 | round") ms; \
on the host's count the prediction x $scale"
    compare "check's own copy ($w, costed), on the CPU it had" \
        "$(scaled "$predicted" "$scale" "$limit")" "$(rate_on_host_cpu "$fig")" 25
    compare "   raw" "$predicted" "$(model "$path" .measured_bytes_per_sec)" 0
    compare "guest copy, plain, on the CPU it had (faster of two)" \
        "$(scaled "$predicted" "$scale" "$limit")" "$(guest_best plain $w)" 25
    compare "   raw (client in the guest)" "$predicted" "$(guest_bw plain $w)" 0
    compare "   guest counters only (earlier estimate)" "$predicted" "$(guest_own_cpu_bw plain $w)" 0
    C=$(best_check $dir encrypt)
    fig=$(check_figures "${C%.json}" $dir encrypt)
    scale=$(host_scale "$fig" "$(model "$path" ".what_ifs[] | select(.change == \"SMB encryption on\") | .arithmetic")")
    predicted=$(what_if "$path" "SMB encryption on")
    echo "   check's encrypted copy ($C): $(figures_text "$fig"); what-if: \
$(model "$path" ".what_ifs[] | select(.change == \"SMB encryption on\") | .arithmetic"); \
on the host's count x $scale"
    compare "guest copy, encrypted, on the CPU it had: what-if encryption on" \
        "$(scaled "$predicted" "$scale" "$limit")" "$(guest_best encrypt $w)" 25
    compare "   raw" "$predicted" "$(guest_bw encrypt $w)" 0
    compare "   guest counters only (earlier estimate)" "$predicted" "$(guest_own_cpu_bw encrypt $w)" 0
    C=$(best_check $dir plain)
    compare "host copy, plain: what-if client elsewhere" \
        "$(what_if "$path" "the client on another machine")" "$(smb_bw host-smb-plain.json $w)" 0
    echo "   host copy, encrypted: measured $(awk -v b="$(smb_bw host-smb-encrypt.json $w)" 'BEGIN{printf "%.2f", b/1e6}') MB/s"
done
for f in host-net-send host-net-receive; do
    echo "   $f (host <-> guest TCP through QEMU's user-mode network): $(get $f.json \
        '.end.sum_received.bits_per_second / 8e6 | . * 100 | round / 100') MB/s"
done
[ -f "$R/timings.txt" ] && echo "guest seconds: $(tr '\n' ' ' <"$R/timings.txt")"
[ -f "$V" ] && echo "host load (1 min) at the guest's marks: $(awk '$1 == "M" && /vmlab-mark/ { printf "%s ", $7 }' "$V")"
if [ -s "$missing" ]; then
    sed 's/^/MISSING: /' "$missing"
    failed=1
fi
exit $failed
