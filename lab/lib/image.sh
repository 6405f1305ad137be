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
# Sourced by lab/run, which sets LAB_DIR, CACHE, LAB_ARCH, ACACHE (the architecture's
# own cache: CACHE for amd64, CACHE/armhf for armhf) and the die/need helpers.
#
# amd64 takes the kernel from the host's apt and the tools from the host itself. armhf
# (Debian's armmp kernel, for qemu-system-arm's virt machine) takes both from Debian's
# armhf archive through a private apt under ACACHE/apt: its own sources, lists, status
# and archives, so the host's apt sources, architectures and packages stay as they are.

# Modules the scenarios use, resolved with their dependencies by the host's kmod.
LAB_MODULES="virtio_pci virtio_blk virtio_rng md-mod raid1 raid456 dm-mod dm-crypt loop
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

# armhf: the same chains on Debian's armmp kernel (the ARMv7 boards' kernel: Raspberry Pi
# 2, CubieTruck). Its AES drivers are aes-arm (scalar), aes-arm-bs (NEON, bit-sliced) and
# aes-arm-ce (ARMv8 Crypto Extensions, absent from a Cortex-A7: its insmod fails, as it
# would on the boards); ChaCha and NHPoly1305 have NEON versions for Adiantum. ext4 and
# crc32c (which ext4 asks the crypto API for, no symbol dependency) are modules there, and
# so are essiv, serpent and twofish, which the guest (no modprobe) cannot load on demand.
LAB_MODULES_ARMHF="virtio_pci virtio_blk virtio-rng md-mod raid456 dm-mod dm-crypt loop
  ext4 crc32c_generic
  af_alg algif_skcipher algif_aead algif_hash xts ecb cbc essiv aes-arm aes-arm-bs aes-arm-ce
  adiantum chacha_generic chacha-neon nhpoly1305 nhpoly1305-neon serpent_generic twofish_generic
  virtio_net cmac gcm ccm ctr ghash-generic ghash-arm-ce sha256-arm sha512-arm aead"

# The armhf guest's tools (found by name in the unpacked packages) and the packages they
# come from; apt adds their libraries. No iproute2 or file servers: the scenarios that
# need them are amd64-only ('# lab-arch:'), and busybox's ip brings a NIC up.
LAB_TOOLS_ARMHF="dash mdadm dmsetup cryptsetup mke2fs tune2fs dumpe2fs e2fsck"
LAB_PACKAGES_ARMHF="busybox-static dash mdadm dmsetup cryptsetup-bin e2fsprogs"

# Runs apt-get or apt-cache (TOOL) on the private armhf apt under ACACHE/apt: Debian's
# armhf archive of the host's release, nothing of the host's apt configuration but its
# keyring, its own lists, an empty package status and its own download cache.
armhf_apt() { # TOOL ARGS...
    local d="$ACACHE/apt" tool=$1
    shift
    "$tool" -o APT::Architecture=armhf -o APT::Architectures::=armhf \
        -o Dir::Etc::SourceList="$d/sources.list" -o Dir::Etc::SourceParts="$d/empty" \
        -o Dir::Etc::Preferences="$d/empty/none" -o Dir::Etc::PreferencesParts="$d/empty" \
        -o Dir::State="$d/state" -o Dir::State::status="$d/status" -o Dir::Cache="$d/cache" \
        -o APT::Sandbox::User=root "$@"
}

# Fetches the armhf package lists. A suite whose index fails (a mirror in mid-sync)
# is a warning as long as the release's main suite came: the kernel and tools are there.
armhf_apt_update() {
    local d="$ACACHE/apt" suite mirror=${LAB_DEBIAN_MIRROR:-http://deb.debian.org/debian}
    need apt-get apt
    suite=$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")
    suite=${suite:-bookworm}
    mkdir -p "$d/state/lists/partial" "$d/cache/archives/partial" "$d/empty"
    : >>"$d/status"
    local keys="signed-by=/usr/share/keyrings/debian-archive-keyring.gpg"
    {
        echo "deb [arch=armhf $keys] $mirror $suite main"
        echo "deb [arch=armhf $keys] $mirror $suite-updates main"
        echo "deb [arch=armhf $keys] ${LAB_DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security} $suite-security main"
    } >"$d/sources.list"
    log "updating the armhf package lists ($suite, in ${d#"$REPO"/})"
    if ! armhf_apt apt-get -qq update >"$d/update.log" 2>&1; then
        ls "$d/state/lists/"*"_dists_${suite}_main_binary-armhf_Packages"* >/dev/null 2>&1 ||
            die 77 "cannot fetch Debian's armhf package lists: $(grep '^E:' "$d/update.log" | head -n 2 | tr '\n' ' ')"
        log "warning: some armhf indexes failed, using what came: $(grep '^E: Failed' "$d/update.log" | head -n 1)"
    fi
}

# Downloads the armhf tool packages with everything they depend on (apt resolves against
# the empty status) and unpacks them into ACACHE/sysroot, where the tools are taken from.
# Prints nothing; the sysroot is rebuilt only when the set of packages changes.
armhf_sysroot() {
    local d="$ACACHE/apt" set
    # shellcheck disable=SC2086
    if ! armhf_apt apt-get -qq install --download-only --no-install-recommends -y \
        $LAB_PACKAGES_ARMHF >"$d/download.log" 2>&1; then
        armhf_apt_update
        # shellcheck disable=SC2086
        armhf_apt apt-get -qq install --download-only --no-install-recommends -y \
            $LAB_PACKAGES_ARMHF >"$d/download.log" 2>&1 ||
            die 77 "cannot download the armhf tools ($LAB_PACKAGES_ARMHF): $(grep '^E:' "$d/download.log" | head -n 2 | tr '\n' ' ')"
    fi
    # An older version left behind by an update would be unpacked over the new one.
    armhf_apt apt-get -qq autoclean >/dev/null 2>&1 || true
    set=$(cd "$d/cache/archives" && ls -1 ./*.deb | sha256sum | cut -c1-16)
    [ "$(cat "$ACACHE/sysroot/.set" 2>/dev/null)" = "$set" ] && return
    need dpkg-deb dpkg
    log "unpacking the armhf tools ($(ls "$d/cache/archives/"*.deb | wc -l) packages)"
    rm -rf "$ACACHE/sysroot" && mkdir -p "$ACACHE/sysroot"
    local deb
    for deb in "$d/cache/archives/"*.deb; do
        dpkg-deb -x "$deb" "$ACACHE/sysroot" || die 3 "cannot unpack '$deb'"
    done
    echo "$set" >"$ACACHE/sysroot/.set"
}

# Prints PATH (a path inside SYSROOT) with its symbolic links followed inside SYSROOT:
# an absolute link in an unpacked package points into the host otherwise.
sysroot_resolve() { # SYSROOT PATH
    local root=$1 path=$2 target n
    for ((n = 0; n < 16; n++)); do
        [ -L "$root$path" ] || break
        target=$(readlink "$root$path")
        case "$target" in
        /*) path=$target ;;
        *) path=$(dirname "$path")/$target ;;
        esac
    done
    echo "$root$path"
}

# Copies the dynamic binary BIN from SYSROOT to DEST under ROOTFS with its ELF
# interpreter and every library it needs, transitively (readelf's NEEDED entries, looked
# up where Debian's armhf loader looks without an ld.so.cache): no foreign ldd needed.
copy_elf_with_libs() { # SYSROOT BIN DEST ROOTFS
    local root=$1 rootfs=$4 queue=() seen=" " f name dir found interp
    install -D -m 0755 "$(sysroot_resolve "$root" "$2")" "$rootfs$3"
    interp=$(readelf -l "$rootfs$3" | sed -n 's/.*Requesting program interpreter: \(.*\)]$/\1/p')
    if [ -n "$interp" ] && [ ! -e "$rootfs$interp" ]; then
        install -D -m 0755 "$(sysroot_resolve "$root" "$interp")" "$rootfs$interp"
    fi
    queue=("$rootfs$3")
    while [ ${#queue[@]} -gt 0 ]; do
        f=${queue[0]}
        queue=("${queue[@]:1}")
        for name in $(readelf -d "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p'); do
            [[ "$seen" == *" $name "* ]] && continue
            seen+="$name "
            found=""
            for dir in /lib/arm-linux-gnueabihf /usr/lib/arm-linux-gnueabihf /lib /usr/lib; do
                if [ -e "$root$dir/$name" ]; then
                    found=$dir/$name
                    break
                fi
            done
            [ -n "$found" ] || die 3 "'$2' needs '$name', which no armhf package brought"
            if [ ! -e "$rootfs$found" ]; then
                install -D -m 0755 "$(sysroot_resolve "$root" "$found")" "$rootfs$found"
            fi
            queue+=("$rootfs$found")
        done
    done
}

resolve_kernel_package() {
    local meta=linux-image-cloud-amd64
    if [ "$LAB_ARCH" = armhf ]; then
        meta=linux-image-armmp
        [ -f "$ACACHE/apt/sources.list" ] || return 0
        armhf_apt apt-cache depends "$meta" 2>/dev/null
    else
        apt-cache depends "$meta" 2>/dev/null
    fi | awk '/Depends: linux-image-/{print $2; exit}'
}

# Runs apt-get for this architecture: the host's for amd64, the private one for armhf.
lab_apt_get() {
    if [ "$LAB_ARCH" = armhf ]; then
        armhf_apt apt-get "$@"
    else
        apt-get -o APT::Sandbox::User=root "$@"
    fi
}

# Prints the current kernel package (it follows Debian's security updates): the cloud
# kernel for amd64, armmp for armhf.
kernel_package() {
    local pkg
    # The private armhf lists are refreshed daily: a security update removes the kernel
    # ABI that older lists name, and its download would fail.
    if [ "$LAB_ARCH" = armhf ] && { [ ! -f "$ACACHE/apt/sources.list" ] ||
        [ -n "$(find "$ACACHE/apt/state/lists" -maxdepth 1 -name '*_InRelease' -mmin +1440)" ]; }; then
        armhf_apt_update >&2
    fi
    pkg=$(resolve_kernel_package)
    if [ -z "$pkg" ] && [ "$(id -u)" = 0 ] && [ ! -d "$ACACHE/kernel" ]; then
        log "apt knows no cloud kernel yet; running apt-get update"
        apt-get update -qq >&2 || true
        pkg=$(resolve_kernel_package)
    fi
    if [ -n "$pkg" ]; then
        echo "$pkg"
        return
    fi
    # No apt lists (offline, or never updated): reuse the newest cached kernel.
    pkg=$(ls -1 "$ACACHE/kernel" 2>/dev/null | sort -V | tail -n1)
    [ -n "$pkg" ] || die 77 "cannot resolve the $LAB_ARCH kernel: apt found no kernel package; run 'apt-get update'"
    echo "$pkg"
}

# Downloads and unpacks the kernel package into $ACACHE/kernel/PKG (never into /boot).
fetch_kernel() {
    local pkg=$1 dir="$ACACHE/kernel/$1"
    if [ -f "$dir/.complete" ]; then
        return
    fi
    need apt-get apt
    need dpkg-deb dpkg
    need depmod kmod
    log "downloading $pkg"
    rm -rf "$dir" && mkdir -p "$dir/dl"
    (cd "$dir/dl" && lab_apt_get -qq download "$pkg") ||
        die 77 "cannot download '$pkg' with apt-get; check the package mirror or run 'apt-get update'"
    dpkg-deb -x "$dir"/dl/*.deb "$dir/tree" || die 3 "cannot unpack '$pkg'"
    rm -rf "$dir/dl"
    local kv
    kv=$(ls "$dir/tree/lib/modules")
    depmod -b "$dir/tree" "$kv" || die 3 "depmod failed for '$kv'"
    touch "$dir/.complete"
    # An older ABI left the archive with a security update; its 100 MB tree is dead weight.
    find "$ACACHE/kernel" -mindepth 1 -maxdepth 1 ! -name "$1" -exec rm -rf {} +
}

kernel_version() { ls "$ACACHE/kernel/$1/tree/lib/modules"; }

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
    if [ "$LAB_ARCH" = armhf ]; then
        cat "$ACACHE/sysroot/.set"
        return
    fi
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
    local kpkg=$1 key out modules=$LAB_MODULES sysroot="$ACACHE/sysroot"
    [ "$LAB_ARCH" = armhf ] && armhf_sysroot && modules=$LAB_MODULES_ARMHF
    key=$( { echo "$kpkg"; tool_versions; cat "$LAB_DIR/lib/image.sh"; } | sha256sum | cut -c1-16)
    out="$ACACHE/base-$key.cpio.gz"
    if [ -f "$out" ]; then
        echo "$out"
        return
    fi
    local busybox
    busybox=$(static_busybox)
    need cpio cpio
    need modprobe kmod
    local entry name path pkg
    if [ "$LAB_ARCH" = armhf ]; then
        need readelf binutils
    else
        need ldd libc-bin
        while IFS=: read -r name path pkg; do
            [ -x "$path" ] || die 77 "'$path' ($name) is missing; install it with 'apt-get install $pkg'"
        done <<<"$LAB_TOOLS"
    fi
    log "building the $LAB_ARCH base image for $kpkg"
    local kdir="$ACACHE/kernel/$kpkg/tree" kv rootfs="$ACACHE/build-base"
    kv=$(kernel_version "$kpkg")
    rm -rf "$rootfs" && mkdir -p "$rootfs"/{bin,sbin,usr/bin,usr/sbin,etc,proc,sys,dev,tmp,run,out,lab,mnt}
    mknod -m 600 "$rootfs/dev/console" c 5 1

    # Modules in dependency order; -C /dev/null keeps the host's modprobe.d out.
    # shellcheck disable=SC2086
    modprobe -C /dev/null -d "$kdir" -S "$kv" -a --show-depends $modules |
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
    # A Debian box has its kernel's configuration in /boot, where probe reads which options
    # (qdiscs, BBR) the kernel has; the armhf image carries it as that box would.
    [ "$LAB_ARCH" = armhf ] && install -D -m 0644 "$kdir/boot/config-$kv" "$rootfs/boot/config-$kv"

    # busybox applets, except "busybox" itself (a self-link would replace the binary)
    # and the applets a real tool below replaces. The armhf busybox cannot run here to
    # list its applets; it is built from the same source and configuration as the
    # host's busybox-static (one Debian source package), so the host's list is its list.
    local skip=" busybox sh ip tc mke2fs depmod modprobe " applet
    if [ "$LAB_ARCH" = armhf ]; then
        # No iproute2 in the armhf image: busybox's ip brings a NIC up.
        skip=" busybox sh mke2fs depmod modprobe "
        install -m 0755 "$sysroot/bin/busybox" "$rootfs/bin/busybox"
    else
        install -m 0755 "$busybox" "$rootfs/bin/busybox"
    fi
    for applet in $("$busybox" --list); do
        [[ "$skip" == *" $applet "* ]] && continue
        [ -e "$rootfs/bin/$applet" ] || ln -s busybox "$rootfs/bin/$applet"
    done
    # dash is /bin/sh: busybox's shell would run its own ip/tc applets instead of iproute2.
    if [ "$LAB_ARCH" = armhf ]; then
        for name in $LAB_TOOLS_ARMHF; do
            path=""
            for dir in /sbin /usr/sbin /bin /usr/bin; do
                [ -e "$sysroot$dir/$name" ] && path=$dir/$name && break
            done
            [ -n "$path" ] || die 3 "no armhf package of '$LAB_PACKAGES_ARMHF' has '$name'"
            copy_elf_with_libs "$sysroot" "$path" "/usr/sbin/$name" "$rootfs"
        done
        while IFS=: read -r name path pkg; do
            echo "$name:$pkg (amd64 lab only)" >>"$rootfs/etc/lab-missing-tools"
        done <<<"$LAB_OPTIONAL_TOOLS"
    else
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
    fi
    ln -s ../usr/sbin/dash "$rootfs/bin/sh"
    for name in mkfs.ext4:mke2fs; do
        ln -s "${name#*:}" "$rootfs/usr/sbin/${name%:*}"
    done
    if [ "$LAB_ARCH" = amd64 ]; then
        [ -d /usr/lib/x86_64-linux-gnu/tc ] && mkdir -p "$rootfs/usr/lib/x86_64-linux-gnu" &&
            cp -r /usr/lib/x86_64-linux-gnu/tc "$rootfs/usr/lib/x86_64-linux-gnu/"
        [ -d /etc/iproute2 ] && cp -r /etc/iproute2 "$rootfs/etc/"
    fi
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
    find "$ACACHE" -maxdepth 1 -name 'base-*.cpio.gz' ! -name "base-$key.cpio.gz" -delete
    echo "$out"
}

# Prints the path of the cached payload archive (nastune + guest scripts + scenarios).
build_payload() {
    local nastune=$1 key out rootfs
    key=$( { sha256sum "$nastune" | cut -d' ' -f1
        cd "$LAB_DIR" && find guest scenarios -type f | LC_ALL=C sort | xargs sha256sum; } |
        sha256sum | cut -c1-16)
    out="$ACACHE/payload-$key.cpio.gz"
    if [ -f "$out" ]; then
        echo "$out"
        return
    fi
    log "packing nastune and scenarios"
    rootfs="$ACACHE/build-payload"
    rm -rf "$rootfs" && mkdir -p "$rootfs/usr/bin" "$rootfs/lab"
    if [ "$LAB_ARCH" = armhf ]; then
        # dist/build's binary: static and stripped already, so no libraries to copy.
        need readelf binutils
        readelf -h "$nastune" 2>/dev/null | grep -q 'Machine: *ARM$' ||
            die 2 "'$nastune' is not a 32-bit ARM binary; build one with 'dist/build armv7'"
        ! readelf -l "$nastune" | grep -q 'program interpreter' ||
            die 2 "'$nastune' is dynamically linked and the armhf guest has no libraries for it; build a static one with 'dist/build armv7'"
        install -D -m 0755 "$nastune" "$rootfs/usr/bin/nastune"
    else
        copy_with_libs "$nastune" /usr/bin/nastune "$rootfs"
        # A debug build carries hundreds of MiB of DWARF; the guest needs none of it.
        if command -v strip >/dev/null; then
            strip "$rootfs/usr/bin/nastune" 2>/dev/null || true
        fi
    fi
    cp -r "$LAB_DIR/scenarios" "$rootfs/lab/scenarios"
    cp "$LAB_DIR/guest/lib.sh" "$rootfs/lab/lib.sh"
    install -m 0755 "$LAB_DIR/guest/init" "$rootfs/init"
    pack_cpio "$rootfs" "$out"
    rm -rf "$rootfs"
    find "$ACACHE" -maxdepth 1 -name 'payload-*.cpio.gz' ! -name "payload-$key.cpio.gz" -mmin +60 -delete
    echo "$out"
}
