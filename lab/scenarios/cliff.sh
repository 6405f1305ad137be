# lab-about: a disk fast for a few seconds then slow (QEMU write burst), and writeback to a slow disk
# lab-disks: 1 512M write-limit=4194304 write-burst=33554432 burst-seconds=4
# lab-disks: 1 512M write-limit=4194304
# lab-verdict: bash lab/verdicts/cliff.sh
#
# The known truth for bench disk's timeline (its cliff, and the cause it names):
#   disk 0  a QEMU throttle-group with a burst: 32 MiB/s of writes (bps-write-max) while the
#           bucket fills, 4 MiB/s after. The bucket holds max x length = 128 MiB and fills at
#           max - avg = 28 MiB/s while bursting, so the cliff is set at 128/28 = 4.6 s, after
#           146 MiB. device-cliff.json: a direct 1 MiB write there for 12 s; the cause must
#           be the device (slower at the same queue: the guest's queue stays full).
#   disk 1  4 MiB/s of writes, no burst, ext4 on it, vm.dirty_bytes 128 MiB and
#           dirty_background_bytes 64 MiB: writeback.json, a buffered write of a 400 MiB file
#           for 6 s; the cause must be writeback, the cliff between 64 MiB (background) and
#           128 MiB (the limit). writeback-small.json: the same with the limits the finding
#           suggests (16/8 MiB): the longest stall must be shorter. Measured: a cliff after 127 MiB at 1.75 s, then one write held
#           31 s while the 128 MiB drained at 4 MiB/s (the stall users describe); with 16/8 MiB
#           the longest stall was 2.75 s.
# lab/verdicts/cliff.sh compares. 75 s of wall clock with the boot (TCG); not in the CI lab
# test (tests/cli/lab.rs): run it by hand with 'lab/run cliff'.

setup() {
    set -x
    dev=$(lab_disk 0)
    nastune bench disk --no-store --rw write --bs 1m --direct --iodepth 4 --runtime 12 \
        --interval 1 --settle 0 --json "$dev" >"$LAB_RESULT/device-cliff.json"
    wb=$(lab_disk 1)
    mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "$wb"
    mkdir -p /mnt/wb
    mount -t ext4 "$wb" /mnt/wb
    fallocate -l 400M /mnt/wb/big.file
    sync
    echo $((128 << 20)) >/proc/sys/vm/dirty_bytes
    echo $((64 << 20)) >/proc/sys/vm/dirty_background_bytes
    nastune bench disk --no-store --rw write --bs 1m --buffered --size 400m --runtime 6 \
        --interval 0.25 --settle 0 --json /mnt/wb/big.file >"$LAB_RESULT/writeback.json"
    # The fix the finding names: about 3 s of the disk's 4 MiB/s (12 MiB; 16 MiB at least).
    sync
    echo $((16 << 20)) >/proc/sys/vm/dirty_bytes
    echo $((8 << 20)) >/proc/sys/vm/dirty_background_bytes
    nastune bench disk --no-store --rw write --bs 1m --buffered --size 400m --runtime 6 \
        --interval 0.25 --settle 0 --json /mnt/wb/big.file >"$LAB_RESULT/writeback-small.json"
    set +x
}

teardown() {
    rm -f /mnt/wb/big.file
    umount /mnt/wb 2>/dev/null || true
}
