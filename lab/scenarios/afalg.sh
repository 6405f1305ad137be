# lab-about: AF_ALG sockets with xts(aes), cbc(aes) and adiantum (when the kernel has it)
# lab-disks: 0
# lab-arch: amd64 armhf
#
# The init already loaded af_alg, algif_skcipher, algif_aead, algif_hash, xts, cbc,
# aesni-intel (aes-arm and aes-arm-bs on armhf) and the adiantum/chacha/nhpoly1305 modules. The setup proves that AF_ALG
# works with a Debian tool (cryptsetup benchmark runs its ciphers through AF_ALG) and
# records which drivers the kernel picked; the caller's commands then use AF_ALG themselves.
# Commands get LAB_AFALG_CIPHERS: the skcipher names that worked here.

bench() { # NAME CIPHER KEY_BITS (result in bench-CIPHER.txt)
    f="$LAB_RESULT/bench-$(echo "$2" | sed "s/-plain64$//; s/-essiv:.*$//").txt"
    if cryptsetup benchmark --cipher "$2" --key-size "$3" >"$f" 2>&1; then
        ok="$ok $1"
        echo "AF_ALG $1 ok"
    else
        echo "AF_ALG $1 failed:"
        cat "$f"
    fi
}

setup() {
    for m in af_alg algif_skcipher algif_aead; do
        [ -d "/sys/module/$m" ] || lab_fail "module '$m' is not loaded"
    done
    ok=""
    bench "xts(aes)" aes-xts-plain64 512
    bench "cbc(aes)" aes-cbc-essiv:sha256 256
    if grep -q adiantum /proc/crypto || [ -d /sys/module/adiantum ]; then
        bench "adiantum(xchacha12,aes)" xchacha12,aes-adiantum-plain64 256
    else
        echo "adiantum: not in this kernel"
    fi
    case "$ok" in *"xts(aes)"*) ;; *) lab_fail "AF_ALG xts(aes) does not work" ;; esac
    lab_view proc-crypto cat /proc/crypto
    lab_export LAB_AFALG_CIPHERS "${ok# }"
}

teardown() { :; }
