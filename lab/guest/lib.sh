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

# Checks that the dm-crypt mapping NAME really encrypts: the first 16 KiB of the
# plaintext side (a superblock, so not blank) and the same 16 KiB on the device below,
# at the table's data offset, must differ. Reading 16 KiB twice is cheap under TCG,
# where scanning whole devices for a marker takes minutes.
lab_check_encrypted() { # NAME
    table=$(dmsetup table "$1") || lab_fail "no dm table for '$1'"
    set -- "$1" $table
    [ "$4" = crypt ] || lab_fail "'$1' is a '$4' target, not crypt"
    below=$8 offset=$9
    raw=/dev/$(basename "$(readlink -f "/sys/dev/block/$below")")
    echo 3 >/proc/sys/vm/drop_caches
    plain_sum=$(dd if="/dev/mapper/$1" bs=4096 count=4 2>/dev/null | sha256sum | cut -d' ' -f1)
    nonzero=$(dd if="/dev/mapper/$1" bs=4096 count=4 2>/dev/null | tr -d '\000' | wc -c)
    raw_sum=$(dd if="$raw" bs=512 skip="$offset" count=32 2>/dev/null | sha256sum | cut -d' ' -f1)
    [ "$nonzero" -gt 0 ] || lab_fail "'/dev/mapper/$1' starts with 16 KiB of zeros; nothing to compare"
    [ "$plain_sum" != "$raw_sum" ] || lab_fail "'$raw' at sector $offset holds the plaintext of '$1'"
    echo "encrypted: $1 on $raw at sector $offset differs from its plaintext"
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

# Saves the block stack as the kernel shows it in sysfs, one device a line:
#   dm-0 name=crypt-m0 sectors=98304 slaves=vda
lab_view_stack() {
    for b in /sys/block/*; do
        name=$(cat "$b/dm/name" 2>/dev/null || echo -)
        slaves=$(ls "$b/slaves" 2>/dev/null | tr '\n' ',' | sed 's/,$//')
        echo "${b##*/} name=$name sectors=$(cat "$b/size") slaves=${slaves:--}"
    done >"$LAB_RESULT/stack.txt"
}
