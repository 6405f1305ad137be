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

# Prints the first network interface that is not lo.
lab_nic() {
    for n in /sys/class/net/*; do
        [ "${n##*/}" = lo ] || {
            echo "${n##*/}"
            return 0
        }
    done
    lab_fail "no network interface; is virtio_net in the image?"
}

# Waits up to 30 s for a TCP listener on PORT (from /proc/net/tcp, state 0A).
lab_wait_listen() { # PORT
    hex=$(printf ':%04X ' "$1")
    for _ in $(seq 60); do
        grep -q "$hex.* 0A " /proc/net/tcp /proc/net/tcp6 2>/dev/null && return 0
        sleep 0.5
    done
    lab_fail "nothing listens on port $1"
}

# Fails unless the optional tool NAME made it into the image, naming its package.
lab_need_tool() { # NAME
    command -v "$1" >/dev/null && return 0
    pkg=$(sed -n "s/^$1://p" /etc/lab-missing-tools 2>/dev/null)
    lab_fail "'$1' is not in the lab image; install '${pkg:-its package}' on the host and rerun"
}

# Formats DEV as LUKS2 aes-xts-plain64 with a random key in KEYFILE (key stretching at its
# cheapest: not under test, time is) and opens it as /dev/mapper/NAME.
lab_luks_open() { # DEV NAME KEYFILE
    head -c 64 /dev/urandom >"$3"
    cryptsetup luksFormat --batch-mode --type luks2 --cipher aes-xts-plain64 --key-size 512 \
        --pbkdf argon2id --pbkdf-memory 32768 --pbkdf-parallel 1 --pbkdf-force-iterations 4 \
        --key-file "$3" "$1"
    cryptsetup open --key-file "$3" "$1" "$2"
}

# Starts Debian's smbd (copied from the host) on port 445 serving DIR as [share] for user
# 'lab' with PASSWORD, its state under STATE; the pid goes to STATE/smbd.pid.
lab_smbd_start() { # STATE DIR PASSWORD
    mkdir -p "$1/private" "$1/lock" "$1/state" "$1/cache" "$1/pid" "$1/ncalrpc" "$1/binddns"
    cat >"$1/smb.conf" <<CONF
[global]
  netbios name = NASTUNELAB
  security = user
  passdb backend = tdbsam:$1/private/passdb.tdb
  private dir = $1/private
  lock directory = $1/lock
  state directory = $1/state
  cache directory = $1/cache
  pid directory = $1/pid
  ncalrpc dir = $1/ncalrpc
  binddns dir = $1/binddns
  log file = $1/log.%m
  smb ports = 445
  disable netbios = yes
  load printers = no
  printcap name = /dev/null
  disable spoolss = yes
  server min protocol = SMB2_02
  # The image has no iconv modules for the default CP850.
  dos charset = ASCII
[share]
  path = $2
  read only = no
CONF
    printf '%s\n%s\n' "$3" "$3" | smbpasswd -c "$1/smb.conf" -s -a lab
    # In its own session (no --no-process-group): smbd signals its process group when it
    # stops, which would take init's scenario shells with it.
    smbd --foreground --debug-stdout -s "$1/smb.conf" >"$LAB_RESULT/smbd.log" 2>&1 &
    echo $! >"$1/smbd.pid"
    lab_wait_listen 445
}

# Writes a line to the second serial port (ttyS1; ttyAMA1 on armhf), where the host notes
# it with the time and its own count of the vCPU's CPU time (OUT/vcpu.txt, see vcpu_watch
# in lab/run): the guest cannot see the time the host gives its vCPU to others. Programs
# whose stderr goes there mark their progress too (a progress bar's \r-drawn updates each
# count).
lab_mark() { # TEXT...
    echo "vmlab-mark $LAB_SCENARIO $*" >"/dev/${LAB_MARK_TTY:-ttyS1}"
}
