#!/usr/bin/env bash
# Fuzzes every target for a bounded time each (default 60 s): the net control
# decoder, the HTTP response parser, the smb.conf parser and the SMB2 response
# decoders.
# Needs nightly and cargo-fuzz (rustup toolchain install nightly; cargo install cargo-fuzz).
# Without them it says so and runs the deterministic random-input tests of the
# same code instead, so CI still exercises every parser.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
targets=(control_decoder http_response smb_conf smb_response)
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
    echo "SKIP cargo-fuzz: not installed with a nightly toolchain; running the random-input tests instead"
    cargo test --locked --lib -- net::fuzz bench::http::fuzz probe::smb::fuzz smb::fuzz
    exit 0
fi
for t in "${targets[@]}"; do
    mkdir -p "fuzz/corpus/$t"
    echo "fuzzing $t for ${seconds}s"
    cargo +nightly fuzz run "$t" "fuzz/corpus/$t" -- \
        -max_total_time="$seconds" -max_len=65536 -rss_limit_mb=512
done
