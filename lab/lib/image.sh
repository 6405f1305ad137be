# shellcheck shell=bash
# Builds the lab's boot image from Debian packages and caches it under lab/cache.
#
# The initramfs is three gzip'd cpio archives concatenated (the kernel unpacks them in
# order), so each part is rebuilt only when its own inputs change:
#   base    kernel modules, busybox, dash and the dynamic tools with their libraries;
#           key: kernel package, tool package versions, this file
#   payload nastune (stripped) + libraries, guest/ and scenarios/;
#           key: hash of those files
#   run     this run's plan and commands; always new, a few hundred bytes
# Sourced by lab/run, which sets LAB_DIR, CACHE and the die/need helpers.

# Modules the scenarios use, resolved with their dependencies by the host's kmod.
LAB_MODULES="virtio_pci virtio_blk virtio_rng md-mod raid456 dm-mod dm-crypt loop
  af_alg algif_skcipher algif_aead algif_hash xts ecb cbc aesni-intel
  adiantum chacha_generic chacha-x86_64 nhpoly1305 nhpoly1305-sse2 nhpoly1305-avx2
  sch_netem sch_tbf veth
  virtio_net cifs nfsd nfsv4 cmac gcm ccm ctr ghash-generic sha512_generic aead"

# Guest tools: name, host path, Debian package (named in the error when missing).
LAB_TOOLS="dash:/bin/dash:dash
mdadm:/sbin/mdadm:mdadm
dmsetup:/sbin/dmsetup:dmsetup
cryptsetup:/sbin/cryptsetup:cryptsetup-bin
ip:/bin/ip:iproute2
tc:/sbin/tc:iproute2
mke2fs:/sbin/mke2fs:e2fsprogs
tune2fs:/sbin/tune2fs:e2fsprogs
dumpe2fs:/sbin/dumpe2fs:e2fsprogs
e2fsck:/sbin/e2fsck:e2fsprogs"

# File-service tools, copied when the host has them: without them only the fileserve
# scenario fails (and says which package to install), the other scenarios still run.
LAB_OPTIONAL_TOOLS="smbd:/usr/sbin/smbd:samba
smbpasswd:/usr/bin/smbpasswd:samba-common-bin
rpc.nfsd:/usr/sbin/rpc.nfsd:nfs-kernel-server
rpc.mountd:/usr/sbin/rpc.mountd:nfs-kernel-server
exportfs:/usr/sbin/exportfs:nfs-kernel-server"

LAB_TOOL_PACKAGES="busybox-static dash mdadm dmsetup cryptsetup-bin iproute2 e2fsprogs libc6
  samba samba-common-bin nfs-kernel-server"

resolve_kernel_package() {
    apt-cache depends linux-image-cloud-amd64 2>/dev/null |
        awk '/Depends: linux-image-/{print $2; exit}'
}

# Prints the current cloud kernel package (it follows Debian's security updates).
kernel_package() {
    local pkg
    pkg=$(resolve_kernel_package)
    if [ -z "$pkg" ] && [ "$(id -u)" = 0 ] && [ ! -d "$CACHE/kernel" ]; then
        log "apt knows no cloud kernel yet; running apt-get update"
        apt-get update -qq >&2 || true
        pkg=$(resolve_kernel_package)
    fi
    if [ -n "$pkg" ]; then
        echo "$pkg"
        return
    fi
    # No apt lists (offline, or never updated): reuse the newest cached kernel.
    pkg=$(ls -1 "$CACHE/kernel" 2>/dev/null | sort -V | tail -n1)
    [ -n "$pkg" ] || die 77 "cannot resolve the cloud kernel: 'apt-cache depends linux-image-cloud-amd64' found nothing; run 'apt-get update'"
    echo "$pkg"
}

# Downloads and unpacks the kernel package into $CACHE/kernel/PKG (never into /boot).
fetch_kernel() {
    local pkg=$1 dir="$CACHE/kernel/$1"
    if [ -f "$dir/.complete" ]; then
        return
    fi
    need apt-get apt
    need dpkg-deb dpkg
    need depmod kmod
    log "downloading $pkg"
    rm -rf "$dir" && mkdir -p "$dir/dl"
    (cd "$dir/dl" && apt-get -qq -o APT::Sandbox::User=root download "$pkg") ||
        die 77 "cannot download '$pkg' with apt-get; check the package mirror or run 'apt-get update'"
    dpkg-deb -x "$dir"/dl/*.deb "$dir/tree" || die 3 "cannot unpack '$pkg'"
    rm -rf "$dir/dl"
    local kv
    kv=$(ls "$dir/tree/lib/modules")
    depmod -b "$dir/tree" "$kv" || die 3 "depmod failed for '$kv'"
    touch "$dir/.complete"
    # An older ABI left the archive with a security update; its 100 MB tree is dead weight.
    find "$CACHE/kernel" -mindepth 1 -maxdepth 1 ! -name "$1" -exec rm -rf {} +
}

kernel_version() { ls "$CACHE/kernel/$1/tree/lib/modules"; }

# Copies a dynamic binary and every library ldd lists to the same paths under ROOTFS.
copy_with_libs() {
    local bin=$1 dest=$2 rootfs=$3 lib
    install -D -m 0755 "$bin" "$rootfs$dest"
    for lib in $(ldd "$bin" 2>/dev/null | awk '/=> \//{print $3} /^\t\/lib/{print $1}'); do
        [ -e "$rootfs$lib" ] || install -D -m 0755 "$(readlink -f "$lib")" "$rootfs$lib"
    done
}

pack_cpio() { # DIR OUT
    (cd "$1" && find . -print0 | LC_ALL=C sort -z | cpio --null -o -H newc -R 0:0 --quiet) |
        gzip -1 >"$2.tmp" && mv "$2.tmp" "$2"
}

tool_versions() {
    # shellcheck disable=SC2086
    dpkg-query -W -f='${Package}=${Version}\n' $LAB_TOOL_PACKAGES 2>/dev/null
}

# Prints the path of a statically linked busybox: the guest has no libc of its own for
# it. Debian's busybox-static is that binary, but it conflicts with the dynamic busybox
# package many images ship, so where that one is installed the static binary is
# extracted from the downloaded package into the cache instead of being installed.
static_busybox() {
    local bin
    bin=$(command -v busybox || true)
    if [ -n "$bin" ] && ! ldd "$bin" >/dev/null 2>&1; then
        echo "$bin"
        return
    fi
    local dir="$CACHE/busybox-static"
    if [ ! -x "$dir/bin/busybox" ]; then
        mkdir -p "$dir/deb"
        (cd "$dir/deb" && apt-get download busybox-static >/dev/null 2>&1) ||
            die 77 "no static busybox: 'apt-get download busybox-static' failed; install busybox-static (it replaces busybox)"
        dpkg -x "$dir"/deb/busybox-static_*.deb "$dir"
    fi
    echo "$dir/bin/busybox"
}

# Prints the path of the cached base archive, building it when needed.
build_base() {
    local kpkg=$1 key out
    key=$( { echo "$kpkg"; tool_versions; cat "$LAB_DIR/lib/image.sh"; } | sha256sum | cut -c1-16)
    out="$CACHE/base-$key.cpio.gz"
    if [ -f "$out" ]; then
        echo "$out"
        return
    fi
    local busybox
    busybox=$(static_busybox)
    need cpio cpio
    need modprobe kmod
    need ldd libc-bin
    local entry name path pkg
    while IFS=: read -r name path pkg; do
        [ -x "$path" ] || die 77 "'$path' ($name) is missing; install it with 'apt-get install $pkg'"
    done <<<"$LAB_TOOLS"
    log "building base image for $kpkg"
    local kdir="$CACHE/kernel/$kpkg/tree" kv rootfs="$CACHE/build-base"
    kv=$(kernel_version "$kpkg")
    rm -rf "$rootfs" && mkdir -p "$rootfs"/{bin,sbin,usr/bin,usr/sbin,etc,proc,sys,dev,tmp,run,out,lab,mnt}
    mknod -m 600 "$rootfs/dev/console" c 5 1

    # Modules in dependency order; -C /dev/null keeps the host's modprobe.d out.
    # shellcheck disable=SC2086
    modprobe -C /dev/null -d "$kdir" -S "$kv" -a --show-depends $LAB_MODULES |
        awk '$1=="insmod"{print $2}' | awk '!seen[$0]++' >"$rootfs/order.tmp" ||
        die 3 "modprobe could not resolve the lab modules for '$kv'"
    local ko rel
    while read -r ko; do
        rel=${ko#"$kdir"/}
        install -D -m 0644 "$ko" "$rootfs/$rel"
        echo "/$rel" >>"$rootfs/etc/lab-modules.order"
    done <"$rootfs/order.tmp"
    rm "$rootfs/order.tmp"
    # Newer kernels compress modules; busybox insmod wants them plain.
    find "$rootfs/lib/modules" -name '*.ko.xz' -exec xz -d {} + 2>/dev/null || true
    find "$rootfs/lib/modules" -name '*.ko.zst' -exec sh -c 'for f; do zstd -qd --rm "$f"; done' _ {} + 2>/dev/null || true
    sed -i -e 's/\.ko\.\(xz\|zst\)$/.ko/' "$rootfs/etc/lab-modules.order"
    echo "$kv" >"$rootfs/etc/lab-kernel-release"

    # busybox applets, except "busybox" itself (a self-link would replace the binary)
    # and the applets a real tool below replaces.
    install -m 0755 "$busybox" "$rootfs/bin/busybox"
    local applet
    for applet in $("$busybox" --list); do
        case "$applet" in busybox | sh | ip | tc | mke2fs | depmod | modprobe) continue ;; esac
        [ -e "$rootfs/bin/$applet" ] || ln -s busybox "$rootfs/bin/$applet"
    done
    # dash is /bin/sh: busybox's shell would run its own ip/tc applets instead of iproute2.
    while IFS=: read -r name path pkg; do
        copy_with_libs "$path" "/usr/sbin/$name" "$rootfs"
    done <<<"$LAB_TOOLS"
    while IFS=: read -r name path pkg; do
        if [ -x "$path" ]; then
            copy_with_libs "$path" "/usr/sbin/$name" "$rootfs"
        else
            echo "$name:$pkg" >>"$rootfs/etc/lab-missing-tools"
        fi
    done <<<"$LAB_OPTIONAL_TOOLS"
    ln -s ../usr/sbin/dash "$rootfs/bin/sh"
    for name in mkfs.ext4:mke2fs; do
        ln -s "${name#*:}" "$rootfs/usr/sbin/${name%:*}"
    done
    [ -d /usr/lib/x86_64-linux-gnu/tc ] && mkdir -p "$rootfs/usr/lib/x86_64-linux-gnu" &&
        cp -r /usr/lib/x86_64-linux-gnu/tc "$rootfs/usr/lib/x86_64-linux-gnu/"
    [ -d /etc/iproute2 ] && cp -r /etc/iproute2 "$rootfs/etc/"
    cp /etc/os-release "$rootfs/etc/os-release" 2>/dev/null || cp /usr/lib/os-release "$rootfs/etc/os-release"
    # A fixed machine id keeps captured fixtures stable from run to run.
    echo 6e617374756e652d6c61622d766d3031 >"$rootfs/etc/machine-id"
    # smbd maps a guest to nobody and serves the lab user as itself.
    printf '%s\n' "root:x:0:0:root:/root:/bin/sh" "nobody:x:65534:65534:nobody:/:/bin/false" \
        "lab:x:1000:1000:lab:/:/bin/false" >"$rootfs/etc/passwd"
    printf '%s\n' "root:x:0:" "nogroup:x:65534:" "lab:x:1000:" >"$rootfs/etc/group"

    pack_cpio "$rootfs" "$out"
    rm -rf "$rootfs"
    # Old bases only waste space.
    find "$CACHE" -maxdepth 1 -name 'base-*.cpio.gz' ! -name "base-$key.cpio.gz" -delete
    echo "$out"
}

# Prints the path of the cached payload archive (nastune + guest scripts + scenarios).
build_payload() {
    local nastune=$1 key out rootfs
    key=$( { sha256sum "$nastune" | cut -d' ' -f1
        cd "$LAB_DIR" && find guest scenarios -type f | LC_ALL=C sort | xargs sha256sum; } |
        sha256sum | cut -c1-16)
    out="$CACHE/payload-$key.cpio.gz"
    if [ -f "$out" ]; then
        echo "$out"
        return
    fi
    log "packing nastune and scenarios"
    rootfs="$CACHE/build-payload"
    rm -rf "$rootfs" && mkdir -p "$rootfs/usr/bin" "$rootfs/lab"
    copy_with_libs "$nastune" /usr/bin/nastune "$rootfs"
    # A debug build carries hundreds of MiB of DWARF; the guest needs none of it.
    if command -v strip >/dev/null; then
        strip "$rootfs/usr/bin/nastune" 2>/dev/null || true
    fi
    cp -r "$LAB_DIR/scenarios" "$rootfs/lab/scenarios"
    cp "$LAB_DIR/guest/lib.sh" "$rootfs/lab/lib.sh"
    install -m 0755 "$LAB_DIR/guest/init" "$rootfs/init"
    pack_cpio "$rootfs" "$out"
    rm -rf "$rootfs"
    find "$CACHE" -maxdepth 1 -name 'payload-*.cpio.gz' ! -name "payload-$key.cpio.gz" -mmin +60 -delete
    echo "$out"
}
