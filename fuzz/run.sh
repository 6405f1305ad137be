#!/usr/bin/env bash
# Fuzzes the control-channel decoder for a bounded time (default 60 s).
# Needs nightly and cargo-fuzz: rustup toolchain install nightly; cargo install cargo-fuzz.
# Without cargo-fuzz it says so and exits 0 after running the deterministic
# random-input unit test, so CI still exercises the decoder.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
    echo "SKIP cargo-fuzz: not installed (cargo install cargo-fuzz); running the random-input test instead"
    cargo test --lib net::fuzz
    exit 0
fi
mkdir -p fuzz/corpus/control_decoder
cargo +nightly fuzz run control_decoder fuzz/corpus/control_decoder -- \
    -max_total_time="$seconds" -max_len=65536 -rss_limit_mb=512
