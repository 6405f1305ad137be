# lab-about: one vCPU serving a LUKS2 share over SMB: check's path model against measured copies; three disks in one throttle-group
# lab-cpus: 1
# lab-nice: -10
# lab-disks: 1 160M
# lab-disks: 3 64M read-limit=16777216
# lab-hostfwd: 445 5201
# lab-host-turn: NASTUNE_SMB_PASSWORD=lab-secret $LAB_NASTUNE bench smb //127.0.0.1:$LAB_FWD_445/share --user lab --size 32M --workload seq-write,seq-read --json --no-store >$LAB_RESULT/host-smb-plain.json
# lab-host-turn: NASTUNE_SMB_PASSWORD=lab-secret $LAB_NASTUNE bench smb //127.0.0.1:$LAB_FWD_445/share --user lab --size 32M --workload seq-write,seq-read --security encrypt --json --no-store >$LAB_RESULT/host-smb-encrypt.json
# lab-host-turn: $LAB_NASTUNE bench net 127.0.0.1 -p $LAB_FWD_5201 -t 3 --json --no-store >$LAB_RESULT/host-net-send.json
# lab-host-turn: $LAB_NASTUNE bench net 127.0.0.1 -p $LAB_FWD_5201 -t 3 -R --json --no-store >$LAB_RESULT/host-net-receive.json
# lab-verdict: bash lab/verdicts/pathmodel.sh
#
# The path model where the truth is known (issue 19): a box with ONE CPU (the guest has a
# single vCPU) serving ext4 on LUKS2 aes-xts-plain64 through Debian's smbd, and three
# disks behind one QEMU throttle-group (16 MiB/s of reads for all three: a shared
# controller). In the guest, during setup:
#   shared.json        bench disk --rw read --direct on the three disks: alone, together
#   warm-{plain,encrypt}.json
#                      a small copy each way first: TCG translates code on first use
#   check-{1,2}.json   check --smb //127.0.0.1/share --smb-encrypt-too, twice: probe, the quick
#                      disk suite on the share's ext4, the ciphers, loopback TCP and the
#                      SMB copy (plain, then encrypted) whose per-byte costs, client
#                      included, make the CPU stage; predictions and what-ifs
#   guest-smb-{plain,encrypt}-{1,2}.stored.json
#                      bench smb from the guest again, plain and encrypted, twice: the
#                      copies the predictions are judged against (not the ones costed),
#                      as `history show --json` prints them
# check's and these copies write their progress to ttyS1: the host notes its count of the
# vCPU thread's CPU time at each (OUT/vcpu.txt), and the verdict judges each copy on it.
# Then the host, through the forwarded ports: bench smb plain and encrypted, bench net both
# ways against the guest's 'nastune net serve'. lab/verdicts/pathmodel.sh compares.

KEY=/run/pathmodel.key
SMB=/run/samba
PASSWORD=lab-secret
UNC=//127.0.0.1/share

setup() {
    for t in smbd smbpasswd; do lab_need_tool "$t"; done
    [ "$(grep -c '^processor' /proc/cpuinfo)" = 1 ] || lab_fail "the guest has more than one vCPU"
    set -x
    lab_luks_open "$(lab_disk 0)" sharecrypt "$KEY"
    # Inode tables and journal written now: ext4lazyinit would otherwise zero them through
    # dm-crypt during the copies, and its encryption would be billed to them as kworker.
    mkfs.ext4 -q -F -b 4096 -E lazy_itable_init=0,lazy_journal_init=0 /dev/mapper/sharecrypt
    mkdir -p /srv/share
    mount -t ext4 /dev/mapper/sharecrypt /srv/share
    chmod 0777 /srv/share
    lab_smbd_start $SMB /srv/share "$PASSWORD"
    nastune net serve --port 5201 --no-store >"$LAB_RESULT/net-serve.log" 2>&1 &
    echo $! >/run/pathmodel-net.pid
    lab_wait_listen 5201
    # A small NAS cannot hold a copy in its page cache: with 1 GiB a 32 MiB write would end
    # before dm-crypt encrypted a byte of it (writeback comes later), and the write would
    # measure the page cache, not the path. 4 MiB of dirty pages make it write through.
    echo 1048576 >/proc/sys/vm/dirty_background_bytes
    echo 4194304 >/proc/sys/vm/dirty_bytes
    set +x
    lab_view_stack
    lab_view dmsetup-table dmsetup table
    # The guest's clock: under TCG it can fall behind the host's while the host keeps the
    # vCPU waiting (the verdict shows by how much, per copy).
    lab_view clocksource cat /sys/devices/system/clocksource/clocksource0/current_clocksource \
        /sys/devices/system/clocksource/clocksource0/available_clocksource

    # Each measurement's seconds of guest time go to timings.txt (the CI budget).
    timed() { # NAME COMMAND...
        name=$1
        shift
        t0=$(cut -d' ' -f1 /proc/uptime)
        "$@" >"$LAB_RESULT/$name.json" 2>"$LAB_RESULT/$name.err" ||
            lab_fail "$name failed: $(tail -n 5 "$LAB_RESULT/$name.err")"
        echo "$name $t0 $(cut -d' ' -f1 /proc/uptime)" |
            awk '{printf "%s %.1f\n", $1, $3 - $2}' >>"$LAB_RESULT/timings.txt"
    }
    timed shared nastune bench disk --rw read --direct --bs 1m --runtime 2s --ramp-time 500ms \
        --settle 0 --json --no-store "$(lab_disk 1)" "$(lab_disk 2)" "$(lab_disk 3)"
    export NASTUNE_SMB_PASSWORD=$PASSWORD
    # TCG translates guest code the first time it runs and bills the time to the thread
    # running it: check's copies, the first of smbd's, the client's and dm-crypt's paths
    # plain and encrypted, cost more per byte than every later copy (its predictions
    # came out 9-33 % under the copies judged). A small copy each way first warms it,
    # as a real CPU is warm.
    for sec in plain encrypt; do
        timed "warm-$sec" nastune bench smb $UNC --user lab --size 8M \
            --workload seq-write,seq-read --security $sec --settle 0 --json --no-store
    done
    # The copies the verdict judges run with their stderr on the second serial port, so the
    # host notes the time on its own clock and its count of the vCPU's CPU time at each
    # workload's start (check's progress bar on a terminal, bench smb's progress lines; see
    # lab_mark). The time the host kept the vCPU waiting is then known per copy, not
    # guessed from guest counters, and the guest's clock is not trusted with the window.
    marked() { # NAME COMMAND...
        name=$1
        shift
        lab_mark "$name begin"
        t0=$(cut -d' ' -f1 /proc/uptime)
        "$@" >"$LAB_RESULT/$name.out" 2>/dev/ttyS1 ||
            lab_fail "$name failed: its stderr is in vcpu.txt ('M' lines)"
        echo "$name $t0 $(cut -d' ' -f1 /proc/uptime)" |
            awk '{printf "%s %.1f\n", $1, $3 - $2}' >>"$LAB_RESULT/timings.txt"
        lab_mark "$name end"
    }
    # Twice: the host's other work only inflates a copy's costs; the verdict takes the run
    # whose copy took the least host time per byte, the vCPU's waits taken off.
    for n in 1 2; do
        marked "check-$n" nastune check --smb $UNC --smb-user lab --smb-size 32M --smb-encrypt-too \
            --disk-size 32M --disk-seconds 1 --settle 0 --json --no-store
        mv "$LAB_RESULT/check-$n.out" "$LAB_RESULT/check-$n.json"
    done
    # Twice each: the host's other work can only slow a copy down, the faster one is judged.
    # Without --json (which silences the progress lines); the document comes from the store.
    # One small file after the read, so a progress line marks the read's end.
    for n in 1 2; do
        for sec in plain encrypt; do
            marked "guest-smb-$sec-$n" nastune --db "/run/guest-smb-$sec-$n.db" bench smb $UNC \
                --user lab --size 32M --workload seq-write,seq-read,small-files --files 1 \
                --security $sec --settle 0
            nastune --db "/run/guest-smb-$sec-$n.db" history show 1 --json \
                >"$LAB_RESULT/guest-smb-$sec-$n.stored.json"
        done
    done
    cat "$LAB_RESULT/timings.txt"

    lab_export LAB_SHARE /srv/share
    lab_export LAB_SMB_USER lab
    lab_export LAB_SMB_PASSWORD "$PASSWORD"
    lab_export LAB_SMB_UNC $UNC
}

teardown() {
    kill "$(cat /run/pathmodel-net.pid)" "$(cat $SMB/smbd.pid)"
    sleep 1
    umount /srv/share
    cryptsetup close sharecrypt
    rm -f "$KEY"
}
