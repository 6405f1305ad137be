# lab-about: bench disk's write guard on md and device-mapper chains: members, holders, siblings, stopped arrays
# lab-disks: 5 32M
# lab-disks: 2 16M
# lab-verdict: bash lab/verdicts/livechain.sh
#
# A test host's kernel may have no md or dm (the CI machine's has neither), so these live uses
# are tried in the guest.
# disk 0           whole disk, member of md20 (RAID1)
# disk 1           p1 (12 MiB) under two dm-linear mappings, lc-lin-a and lc-lin-b (ext4,
#                  mounted: writing lc-lin-a writes lc-lin-b's bytes); p2 member of md20
# disk 2           LUKS2, opened as lc-crypt
# disk 3           scratch: an md RAID1 created and stopped (its superblock left behind)
# disk 4           p1, and dm-linear lc-whole over the whole disk
# disk 5           two dm-linear mappings with LVM's uuids (one volume group), each on its own
#                  half: lc-vg-lv1, and lc-vg-lv2 (ext4, mounted); no lvm2 in the image needed
# disk 6           dm-linear lc-swap, active swap (swapon given its /dev/mapper name)
# md20             RAID1 of disk 0 and disk 1 p2: first under plain dm-crypt lc-mdcrypt, then
#                  nothing, then ext4 mounted on /mnt/lc-md20
# /run/lc.img      ext4 behind loop devices A (mounted) and B, dm-linear lc-loop over B
# Each case runs `nastune bench disk` during the setup and lands as one line of cases.txt:
#   ok|FAIL NAME expect=refuse|accept rc=N SECONDSs: the first line nastune printed on stderr
# a refusal must name what holds the device (NEEDLE); lab/verdicts/livechain.sh fails on
# any FAIL. Names carry 'lc' and md numbers start at 20: the other scenarios use md0, md1.

KEY=/run/livechain.key
# A short run, no wait for the box to go idle: what is judged is whether it may write, not
# how fast.
BENCH="nastune bench disk --size 1M --runtime 200ms --ramp-time 0 --settle 0 --no-store"

# lab_case NAME EXPECT NEEDLE ARGS...: runs `$BENCH ARGS`; EXPECT 'refuse' wants a non-zero
# exit whose stderr holds NEEDLE, 'accept' wants exit 0.
lab_case() {
    name=$1 expect=$2 needle=$3
    shift 3
    rc=0 t0=$(cut -d' ' -f1 /proc/uptime)
    # shellcheck disable=SC2086
    $BENCH "$@" >"$LAB_RESULT/case-$name.out" 2>"$LAB_RESULT/case-$name.err" </dev/null || rc=$?
    msg=$(grep -v '^$' "$LAB_RESULT/case-$name.err" | head -n 1)
    verdict=FAIL
    case "$expect" in
    refuse) [ "$rc" != 0 ] && grep -qF -- "$needle" "$LAB_RESULT/case-$name.err" && verdict=ok ;;
    accept) [ "$rc" = 0 ] && verdict=ok ;;
    esac
    t=$(awk -v a="$t0" '{ printf "%.1f", $1 - a }' /proc/uptime)
    echo "$verdict $name expect=$expect rc=$rc ${t}s: $msg" | tee -a "$LAB_RESULT/cases.txt"
}

# dmsetup create NAME TABLE [UUID], and its /dev/mapper node (there is no udev to make it).
dm_create() { # NAME TABLE [UUID]
    dmsetup create "$1" --table "$2" ${3:+--uuid "$3"}
    dmsetup mknodes "$1"
}

setup() {
    : >"$LAB_RESULT/cases.txt"
    d0=$(lab_disk 0) d1=$(lab_disk 1) d2=$(lab_disk 2) d3=$(lab_disk 3) d4=$(lab_disk 4)
    d5=$(lab_disk 5) d6=$(lab_disk 6)
    head -c 64 /dev/urandom >"$KEY"
    set -x
    for d in "$d1" "$d4"; do
        printf 'o\nn\np\n1\n2048\n+12M\nn\np\n2\n26624\n\nw\n' | fdisk "$d" >/dev/null 2>&1 || true
    done
    # fdisk's re-read can race with nothing here, but a missing node would fail every case.
    [ -b "${d1}1" ] && [ -b "${d1}2" ] && [ -b "${d4}1" ] || lab_fail "no partitions on $d1/$d4"
    mdadm --create /dev/md20 --run --assume-clean --metadata=1.2 --level=1 --raid-devices=2 \
        "$d0" "${d1}2"
    sectors=$(cat "/sys/class/block/${d1##*/}1/size")
    dm_create lc-lin-a "0 $sectors linear ${d1}1 0"
    dm_create lc-lin-b "0 $sectors linear ${d1}1 0"
    mkfs.ext4 -q -F /dev/mapper/lc-lin-b
    mkdir -p /mnt/lc-linb /mnt/lc-md20 /mnt/lc-loop
    mount -t ext4 /dev/mapper/lc-lin-b /mnt/lc-linb
    # pbkdf2 at its cheapest: key stretching is not under test, and argon2 costs seconds.
    cryptsetup luksFormat --batch-mode --type luks2 --pbkdf pbkdf2 --pbkdf-force-iterations 1000 \
        --key-file "$KEY" "$d2"
    cryptsetup open --key-file "$KEY" "$d2" lc-crypt
    cryptsetup open --type plain --cipher aes-xts-plain64 --key-size 256 --key-file "$KEY" \
        /dev/md20 lc-mdcrypt
    mdadm --create /dev/md21 --run --assume-clean --metadata=1.2 --level=1 --raid-devices=2 \
        "$d3" missing
    mdadm --stop /dev/md21
    dm_create lc-whole "0 $(cat "/sys/class/block/${d4##*/}/size") linear $d4 0"
    truncate -s 8M /run/lc.img
    mkfs.ext4 -q -F /run/lc.img
    loop_a=$(losetup -f)
    losetup "$loop_a" /run/lc.img
    mount -t ext4 "$loop_a" /mnt/lc-loop
    loop_b=$(losetup -f)
    losetup "$loop_b" /run/lc.img
    dm_create lc-loop "0 16384 linear $loop_b 0"
    # LVM's uuids: "LVM-", the group's 32 characters, the volume's 32.
    vg=lcvg0000000000000000000000000000
    dm_create lc-vg-lv1 "0 16384 linear $d5 0" "LVM-${vg}lv100000000000000000000000000000"
    dm_create lc-vg-lv2 "0 16384 linear $d5 16384" "LVM-${vg}lv200000000000000000000000000000"
    mkfs.ext4 -q -F /dev/mapper/lc-vg-lv2
    mkdir -p /mnt/lc-lv2
    mount -t ext4 /dev/mapper/lc-vg-lv2 /mnt/lc-lv2
    dm_create lc-swap "0 $(cat "/sys/class/block/${d6##*/}/size") linear $d6 0"
    mkswap /dev/mapper/lc-swap >/dev/null
    swapon /dev/mapper/lc-swap
    set +x
    lab_view_stack

    # 1. An assembled md member, the array not mounted.
    lab_case md-member refuse md20 --rw write --destroy-data "$d0" "$d0"
    # 2. The disk under an open LUKS mapping.
    lab_case luks-disk refuse lc-crypt --rw write --destroy-data "$d2" "$d2"
    # 3. dm-linear over a partition: the partition, and the whole disk (6: whose p2 is an
    #    md member too).
    lab_case dm-partition refuse lc-lin-a --rw write --destroy-data "${d1}1" "${d1}1"
    lab_case dm-md-disk refuse md20 --rw write --destroy-data "$d1" "$d1"
    # 4. The md array under an open dm-crypt mapping.
    lab_case md-under-crypt refuse lc-mdcrypt --rw write --destroy-data /dev/md20 /dev/md20
    # 7. A dm-linear mapping whose partition carries another, mounted mapping: the same bytes.
    lab_case dm-sibling-mounted refuse lc-lin-b --rw write --destroy-data /dev/mapper/lc-lin-a \
        /dev/mapper/lc-lin-a
    # 7. A partition whose whole disk is held by a mapping.
    lab_case partition-of-held-disk refuse lc-whole --rw write --destroy-data "${d4}1" "${d4}1"
    # A mapping nothing uses, over the whole disk (whose partition table it shows): the
    # disk under it is its own, not a use.
    lab_case dm-unused-named accept "" --rw write --destroy-data /dev/mapper/lc-whole \
        /dev/mapper/lc-whole
    # 7. dm over a loop device whose file another loop device has mounted.
    lab_case loop-under-dm refuse lc-loop --rw write --destroy-data "$loop_b" "$loop_b"
    lab_case dm-over-loop-sibling refuse /mnt/lc-loop --rw write --destroy-data \
        /dev/mapper/lc-loop /dev/mapper/lc-loop
    # 7. Swap on a mapping: /proc/swaps names it /dev/mapper/lc-swap, not by its dm-N.
    lab_case swap-mapping refuse "is active swap" --rw write --destroy-data /dev/mapper/lc-swap \
        /dev/mapper/lc-swap
    # 7. Another volume of the group mounted: other sectors of the disk, so written.
    lab_case lvm-other-volume accept "" --rw write --destroy-data /dev/mapper/lc-vg-lv1 \
        /dev/mapper/lc-vg-lv1
    cryptsetup close lc-mdcrypt
    # The array with nothing on it: its members are its own.
    lab_case md-unused-named accept "" --rw write --destroy-data /dev/md20 /dev/md20
    mkfs.ext4 -q -F /dev/md20
    mount -t ext4 /dev/md20 /mnt/lc-md20
    # 4. The md array mounted.
    lab_case md-mounted refuse /mnt/lc-md20 --rw write --destroy-data /dev/md20 /dev/md20
    # Read-only workloads: allowed on a mounted array and on its member, nothing is
    # written (one run, two targets).
    lab_case read-mounted-member accept "" --rw read /dev/md20 "$d0"
    # 5. A member of a stopped array: its superblock is data, named, and the user may
    #    destroy it by naming the disk.
    lab_case stopped-member refuse "md RAID superblock" --rw write "$d3"
    lab_case stopped-member-named accept "" --rw write --destroy-data "$d3" "$d3"
}

# Detaches the loop devices whose backing file's name starts with PREFIX.
detach_loops() { # PREFIX
    for f in /sys/block/loop*/loop/backing_file; do
        [ -f "$f" ] || continue
        case "$(cat "$f")" in "$1"*)
            f=${f%/loop/backing_file}
            losetup -d "/dev/${f##*/}"
            ;;
        esac
    done
}

teardown() {
    swapoff /dev/mapper/lc-swap
    umount /mnt/lc-md20 /mnt/lc-linb /mnt/lc-loop /mnt/lc-lv2
    dmsetup remove lc-loop lc-lin-a lc-lin-b lc-whole lc-vg-lv1 lc-vg-lv2 lc-swap
    detach_loops /run/lc.img
    cryptsetup close lc-crypt
    mdadm --stop /dev/md20
    rm -f "$KEY" /run/lc.img
}
