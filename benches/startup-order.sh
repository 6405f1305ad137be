#!/usr/bin/env bash
# Writes benches/startup-symbols.txt: the functions of nastune that probe, advise and
# check (short tests) run, in that order, for lld's --symbol-ordering-file (build.rs).
# Why: the kernel maps the 64 KiB around every page of the binary a process touches
# (fault-around), so start-up code spread over the 4 MiB of .text made ~90 % of it
# resident; packed together it takes few windows (probe: 7.3 -> 5.9 MiB peak RSS).
# The names carry hashes that change with the toolchain, the dependencies' versions and
# features, and the functions our edits add, inline or drop (after session 8's decoder
# changes 1261 of 2679 entries still matched): stale entries are ignored by the linker,
# they only pack less. Rerun after a toolchain or dependency update or a larger change;
# it prints how many entries the current build still has.
# Usage: benches/startup-order.sh   (needs valgrind; the commands run on this box)
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "valgrind not installed: apt-get install valgrind" >&2; exit 2; }
out=benches/startup-symbols.txt
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The release build with its symbol table: `cargo rustc` flags reach only the final
# crate, so every hash stays the one of the shipped build.
cargo rustc --release --locked -q --bin nastune -- -C strip=none
cp target/release/nastune "$work/nastune"
# Leave target/release/nastune as `cargo build --release` makes it.
cargo build --release --locked -q
mkdir "$work/dir"
n=0
trace() { # command args...: callgrind profile $work/cg.N
    n=$((n + 1))
    valgrind --tool=callgrind --demangle=no --callgrind-out-file="$work/cg.$n" \
        "$work/nastune" "$@" >/dev/null 2>"$work/err" ||
        { echo "nastune $* failed under valgrind: $(tail -3 "$work/err")" >&2; exit 1; }
}
trace probe --db "$work/db"
trace advise --db "$work/db"
trace check --skip-crypto --skip-tcp --disk-seconds 1 --disk-size 8M --dir "$work/dir" --db "$work/db"
have=$(nm "$work/nastune" | awk '{ print $NF }' | sort -u)
if [ -f "$out" ]; then
    echo "the previous list: $(grep -cxFf <(echo "$have") "$out" || true) of $(wc -l <"$out") entries in this build"
fi
# Callgrind names each object (ob=) and function (fn=) once as "(id) name", then by id.
python3 - "$work/nastune" "$work"/cg.* >"$out" <<'PY'
import re, sys
binary, seen = sys.argv[1], {}
for path in sys.argv[2:]:
    names, ob = {}, None
    for line in open(path, errors="replace"):
        m = re.match(r"(ob|cob|fn|cfn)=(?:\((\d+)\))? ?(.*)", line.rstrip("\n"))
        if not m:
            continue
        key, ident, name = m.groups()
        table = names.setdefault(key.lstrip("c"), {})
        if name:
            table[ident] = name
        if key == "ob":
            ob = table.get(ident, name)
        elif key == "fn" and ob == binary:
            # "name'2" is a recursion level; a bare address has no symbol to order
            fn = re.sub(r"'\d+$", "", table.get(ident, name))
            if not fn.startswith("0x"):
                seen.setdefault(fn, None)
print("\n".join(seen))
PY
echo "$out: $(wc -l <"$out") functions"
