#!/usr/bin/env bash
# Stripped size of the x86_64 release binary (default features) and what each
# crate contributes (cargo bloat --crates), so what a new dependency costs is
# known before it is taken. There is no budget: well-kept crates are worth
# their bytes on a box with 128 MiB of RAM and gigabytes of disk.
# Usage: benches/size.sh [TOP_N]
#        NASTUNE_BIN=path/to/nastune benches/size.sh   (the size and sections of another
#        build, e.g. an older one; its crates need its symbols and sources, so not those)
set -euo pipefail
cd "$(dirname "$0")/.."
top=${1:-15}
bin=target/release/nastune
if [ -n "${NASTUNE_BIN:-}" ]; then
    bin=$NASTUNE_BIN
else
    command -v cargo-bloat >/dev/null || cargo install --locked cargo-bloat
    # cargo bloat needs the symbols; the size that counts is measured on a stripped copy.
    # Only nastune: nastune-gen (man pages, completions) is a build-time tool users need not copy.
    CARGO_PROFILE_RELEASE_STRIP=false cargo bloat --release --locked --bin nastune --crates -n "$top"
    # nastune's own largest functions (documents show up as serde's derived
    # <T as serde_core::de::Deserialize>::deserialize and Serialize::serialize, the
    # command line as clap's derived <cli::Command as clap::FromArgMatches>::from_arg_matches_mut).
    CARGO_PROFILE_RELEASE_STRIP=false cargo bloat --release --locked --bin nastune --filter nastune -n "$top" |
        grep -v '^Note: \|^$'
fi
stripped=$(mktemp)
trap 'rm -f "$stripped"' EXIT
strip -o "$stripped" "$bin"
bytes=$(stat -c %s "$stripped")
awk -v b="$bytes" 'BEGIN { printf "stripped nastune: %d bytes (%.2f MiB)\n", b, b / 1048576 }'
# Besides code: read-only data, relocated data and the unwind tables (.eh_frame,
# ~0.8 MiB, read only by an unwinding panic: they cost file size, not RSS).
size -A "$stripped" | awk '$1 ~ /^\./ && $2 >= 65536 { printf "  %-14s %7.1f KiB\n", $1, $2 / 1024 }'
