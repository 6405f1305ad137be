# lab-about: md RAID5 over four LUKS2 members (md0) and LUKS2 over a RAID5 (md1), ext4 on both
# lab-disks: 8 48M
# lab-arch: amd64 armhf
#
# md0: disks 0-3 -> LUKS2 aes-xts-plain64 (4096-byte sectors) each -> RAID5, chunk 64 KiB
#      -> ext4 stride=16 stripe_width=48, mounted on /mnt/md0 (the RK3399 box's order)
# md1: disks 4-7 -> RAID5, chunk 128 KiB -> LUKS2 aes-xts-plain64 (4096-byte sectors)
#      -> ext4 stride=32 stripe_width=96, mounted on /mnt/md1
# Commands get LAB_MD0_MNT, LAB_MD1_MNT, LAB_MD0_DISKS and LAB_MD1_DISK.

KEY=/run/raid5-crypt.key

luks_format() { # DEV NAME
    # pbkdf2 with the minimum iterations: key stretching is not under test, time is.
    cryptsetup luksFormat --batch-mode --type luks2 --cipher aes-xts-plain64 \
        --key-size 512 --sector-size 4096 --pbkdf pbkdf2 --pbkdf-force-iterations 1000 \
        --key-file "$KEY" "$1"
    cryptsetup open --key-file "$KEY" "$1" "$2"
}

make_ext4() { # DEV STRIDE STRIPE_WIDTH MOUNTPOINT
    mkfs.ext4 -q -F -b 4096 -E "stride=$2,stripe_width=$3" "$1"
    mkdir -p "$4"
    mount -t ext4 "$1" "$4"
}

setup() {
    set -x
    # md would throttle the initial resync to speed_limit_min whenever it sees other I/O.
    echo 1000000 >/proc/sys/dev/raid/speed_limit_min
    echo 1000000 >/proc/sys/dev/raid/speed_limit_max
    head -c 64 /dev/urandom >"$KEY"
    members="" raw0=""
    for i in 0 1 2 3; do
        d=$(lab_disk $i)
        raw0="$raw0 $d"
        luks_format "$d" "crypt-m$i"
        members="$members /dev/mapper/crypt-m$i"
    done
    # shellcheck disable=SC2086
    mdadm --create /dev/md0 --run --metadata=1.2 --level=5 --raid-devices=4 --chunk=64 $members
    raw1=""
    for i in 4 5 6 7; do raw1="$raw1 $(lab_disk $i)"; done
    # shellcheck disable=SC2086
    mdadm --create /dev/md1 --run --metadata=1.2 --level=5 --raid-devices=4 --chunk=128 $raw1
    # Let the resync finish so the views show a clean, complete array.
    mdadm --wait /dev/md0 /dev/md1 || true
    luks_format /dev/md1 crypt-md1
    make_ext4 /dev/md0 16 48 /mnt/md0
    make_ext4 /dev/mapper/crypt-md1 32 96 /mnt/md1
    set +x

    lab_check_readback /mnt/md0/random.bin 8
    lab_check_readback /mnt/md1/random.bin 8
    for name in crypt-m0 crypt-m1 crypt-m2 crypt-m3 crypt-md1; do
        lab_check_encrypted "$name"
    done

    lab_view mdstat cat /proc/mdstat
    lab_view mdadm-detail-md0 mdadm --detail /dev/md0
    lab_view mdadm-detail-md1 mdadm --detail /dev/md1
    lab_view dmsetup-table dmsetup table
    lab_view cryptsetup-status-md1 cryptsetup status crypt-md1
    lab_view tune2fs-md0 tune2fs -l /dev/md0
    lab_view tune2fs-md1 tune2fs -l /dev/mapper/crypt-md1
    lab_view mounts cat /proc/mounts
    lab_view_stack

    lab_export LAB_MD0_MNT /mnt/md0
    lab_export LAB_MD1_MNT /mnt/md1
    lab_export LAB_MD0_DISKS "${raw0# }"
    lab_export LAB_MD1_DISKS "${raw1# }"
}

teardown() {
    umount /mnt/md0 /mnt/md1
    cryptsetup close crypt-md1
    mdadm --stop /dev/md0 /dev/md1
    for i in 0 1 2 3; do cryptsetup close "crypt-m$i"; done
    rm -f "$KEY"
}
