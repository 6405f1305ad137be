# lab-about: ext4 on LUKS2 exported by smbd (SMB3) and nfsd (NFSv4), both mounted in the guest; smbd forwarded to the host
# lab-disks: 1 192M
# lab-hostfwd: 445
#
# The Pogoplug's file service on one CPU-bound box: LUKS2 aes-xts-plain64, ext4 on
# /srv/share, shared as [share] by Debian's smbd (copied from the host with its
# libraries) for user 'lab' (password in LAB_SMB_PASSWORD) and exported by the kernel's
# nfsd as the NFSv4 root. The guest mounts both itself (cifs vers=3.1.1 on /mnt/cifs,
# nfs4 on /mnt/nfs); the host reaches smbd through QEMU's forwarded port 445.
# Commands get LAB_SHARE (/srv/share), LAB_CIFS_MNT, LAB_NFS_MNT, LAB_SMB_USER,
# LAB_SMB_PASSWORD and LAB_SMB_UNC (//127.0.0.1/share, for clients in the guest).

KEY=/run/fileserve.key
SMB=/run/samba
PASSWORD=lab-secret

setup() {
    for t in smbd smbpasswd rpc.nfsd rpc.mountd exportfs; do lab_need_tool "$t"; done
    set -x
    # /init gave the NIC 10.0.2.15, where QEMU forwards the host's ports.
    dev=$(lab_nic)
    ip addr show dev "$dev" | grep -q 'inet 10\.0\.2\.15/' || lab_fail "'$dev' has no address 10.0.2.15"

    lab_luks_open "$(lab_disk 0)" sharecrypt "$KEY"
    mkfs.ext4 -q -F -b 4096 /dev/mapper/sharecrypt
    mkdir -p /srv/share /mnt/cifs /mnt/nfs
    mount -t ext4 /dev/mapper/sharecrypt /srv/share
    chmod 0777 /srv/share

    # NFSv4 only: no rpcbind. nfsd's grace period is cut to its 10 s minimum (or the
    # first open waits 90 s), and started before smbd so the two overlap.
    mkdir -p /proc/fs/nfsd /var/lib/nfs/v4recovery
    mount -t nfsd nfsd /proc/fs/nfsd
    echo 10 >/proc/fs/nfsd/nfsv4leasetime
    echo 10 >/proc/fs/nfsd/nfsv4gracetime
    echo '/srv/share 127.0.0.1(rw,sync,no_subtree_check,no_root_squash,insecure,fsid=0)' >/etc/exports
    : >/var/lib/nfs/etab
    exportfs -ra
    rpc.mountd --no-udp -N 2 -N 3
    rpc.nfsd --no-udp -p 2049 -N 3 -V 4 2
    lab_wait_listen 2049

    lab_smbd_start $SMB /srv/share "$PASSWORD"
    mount -t cifs -o "username=lab,password=$PASSWORD,vers=3.1.1,cache=strict" //127.0.0.1/share /mnt/cifs

    mount -t nfs4 -o vers=4.2,addr=127.0.0.1,clientaddr=127.0.0.1 127.0.0.1:/ /mnt/nfs
    set +x

    lab_check_encrypted sharecrypt
    # Each mount reaches the same encrypted ext4.
    echo cifs >/mnt/cifs/via-cifs
    echo nfs >/mnt/nfs/via-nfs
    [ "$(cat /srv/share/via-cifs)" = cifs ] || lab_fail "a file written on /mnt/cifs is not on /srv/share"
    [ "$(cat /srv/share/via-nfs)" = nfs ] || lab_fail "a file written on /mnt/nfs is not on /srv/share"
    rm /srv/share/via-cifs /srv/share/via-nfs
    echo "both mounts reach /srv/share"

    lab_view mounts cat /proc/mounts
    lab_view dmsetup-table dmsetup table
    lab_view exports exportfs -v
    lab_view nfsd-versions cat /proc/fs/nfsd/versions
    lab_view_stack

    lab_export LAB_SHARE /srv/share
    lab_export LAB_CIFS_MNT /mnt/cifs
    lab_export LAB_NFS_MNT /mnt/nfs
    lab_export LAB_SMB_USER lab
    lab_export LAB_SMB_PASSWORD "$PASSWORD"
    lab_export LAB_SMB_UNC //127.0.0.1/share
}

teardown() {
    umount /mnt/nfs
    umount /mnt/cifs
    rpc.nfsd 0
    exportfs -ua
    killall rpc.mountd 2>/dev/null || true
    kill "$(cat $SMB/smbd.pid)"
    sleep 1
    umount /proc/fs/nfsd
    umount /srv/share
    cryptsetup close sharecrypt
    rm -f "$KEY"
}
