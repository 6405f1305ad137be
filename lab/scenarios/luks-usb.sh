# lab-about: one disk as LUKS2 aes-xts-plain64 (argon2id, small memory), ext4, mounted (the Pi's USB disk)
# lab-disks: 1 128M
# lab-arch: amd64 armhf
#
# The cloud kernel has no USB stack, so the "USB" disk is a virtio disk; the crypto and
# filesystem layers are the same as on the Raspberry Pi 2.
# Commands get LAB_MNT (/mnt/usb), LAB_DISK and LAB_CRYPT (/dev/mapper/usbcrypt).

KEY=/run/luks-usb.key

setup() {
    set -x
    d=$(lab_disk 0)
    head -c 64 /dev/urandom >"$KEY"
    # argon2id as cryptsetup defaults to, with memory the 1 GiB VM (and a Pi 2) can give.
    cryptsetup luksFormat --batch-mode --type luks2 --cipher aes-xts-plain64 --key-size 512 \
        --pbkdf argon2id --pbkdf-memory 32768 --pbkdf-parallel 1 --pbkdf-force-iterations 4 \
        --key-file "$KEY" "$d"
    cryptsetup open --key-file "$KEY" "$d" usbcrypt
    mkfs.ext4 -q -F -b 4096 /dev/mapper/usbcrypt
    mkdir -p /mnt/usb
    mount -t ext4 /dev/mapper/usbcrypt /mnt/usb
    set +x

    lab_check_readback /mnt/usb/random.bin 8
    lab_check_encrypted usbcrypt

    lab_view luks-dump cryptsetup luksDump "$d"
    lab_view cryptsetup-status cryptsetup status usbcrypt
    lab_view dmsetup-table dmsetup table
    lab_view tune2fs tune2fs -l /dev/mapper/usbcrypt
    lab_view mounts cat /proc/mounts
    lab_view_stack

    lab_export LAB_MNT /mnt/usb
    lab_export LAB_DISK "$d"
    lab_export LAB_CRYPT /dev/mapper/usbcrypt
}

teardown() {
    umount /mnt/usb
    cryptsetup close usbcrypt
    rm -f "$KEY"
}
