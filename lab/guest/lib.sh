# Helpers for scenario scripts (sourced in the guest, /bin/sh is dash).

# Prints the device node of this scenario's disk N (the host gives it the serial
# SCENARIO-N), so scenarios never depend on the vdX order.
lab_disk() {
    for b in /sys/block/vd*; do
        if [ "$(cat "$b/serial" 2>/dev/null)" = "$LAB_SCENARIO-$1" ]; then
            echo "/dev/${b##*/}"
            return 0
        fi
    done
    echo "lab: no disk with serial '$LAB_SCENARIO-$1'" >&2
    return 1
}

# Records NAME=VALUE for the caller's commands (they see it as an environment variable).
lab_export() {
    printf "%s='%s'\n" "$1" "$2" >>"$LAB_RESULT/env"
}

# Saves the output of a command as a result file, e.g. lab_view mdstat cat /proc/mdstat.
lab_view() {
    name=$1
    shift
    "$@" >"$LAB_RESULT/$name.txt" 2>&1
}

# Fails the setup with a message.
lab_fail() {
    echo "lab: check failed: $*" >&2
    exit 1
}

# Writes a file with a recognisable plaintext marker, then checks that the marker is
# readable on PLAIN_DEV and absent from every raw CIPHER_DEV (data really encrypted).
lab_check_encrypted() { # FILE PLAIN_DEV CIPHER_DEV...
    file=$1 plain=$2
    shift 2
    i=0
    : >"$file"
    while [ $i -lt 4096 ]; do
        echo "NASTUNE-LAB-PLAINTEXT-MARKER-$i" >>"$file"
        i=$((i + 1))
    done
    sync
    echo 3 >/proc/sys/vm/drop_caches
    grep -q -a NASTUNE-LAB-PLAINTEXT-MARKER "$plain" || lab_fail "marker not found on '$plain'"
    for dev in "$@"; do
        if grep -q -a NASTUNE-LAB-PLAINTEXT-MARKER "$dev"; then
            lab_fail "plaintext marker found on raw '$dev'"
        fi
    done
    echo "encrypted: marker on $plain, not on $*"
}

# Writes random data, drops the page cache and checks the read-back checksum.
lab_check_readback() { # FILE MIB
    dd if=/dev/urandom of="$1" bs=1M count="$2" 2>/dev/null
    want=$(sha256sum "$1" | cut -d' ' -f1)
    sync
    echo 3 >/proc/sys/vm/drop_caches
    got=$(sha256sum "$1" | cut -d' ' -f1)
    [ "$want" = "$got" ] || lab_fail "read-back of '$1' differs"
    echo "read-back ok: $1 ($2 MiB)"
}
