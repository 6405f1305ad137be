#!/usr/bin/env bash
# Peak RSS of each command, which must stay inside 64 MiB (a 128 MiB box shared
# with Samba), from a release build
# (GNU time's maximum resident set size). tests/cli/memory.rs runs the same
# commands inside a 64 MiB memory cgroup as a test; this prints the table.
# Usage: benches/memory.sh   (root for net serve and bench disk on a real file)
#        NASTUNE_BIN=path/to/nastune benches/memory.sh   (another build, e.g. an older one
#        to compare with; then nothing is built)
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x /usr/bin/time ] || { echo "GNU time not installed: apt-get install time" >&2; exit 2; }
if [ -n "${NASTUNE_BIN:-}" ]; then
    bin=$(realpath "$NASTUNE_BIN")
else
    cargo build --release --locked -q
    bin=$PWD/target/release/nastune
fi
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
db=$work/nastune.db

peak() { # label command...
    local label=$1; shift
    /usr/bin/time -f '%M' -o "$work/kib" "$@" >/dev/null 2>"$work/err" ||
        { echo "$label failed: $(tail -3 "$work/err")" >&2; return 1; }
    awk -v l="$label" '/^[0-9]+$/ { printf "%-30s %7.1f MiB\n", l, $1 / 1024 }' "$work/kib"
}

# A keep-alive HTTP server for bench http -c 100 (python3's, one thread per connection).
http_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
python3 - "$http_port" 2>/dev/null <<'PY' &
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        self.send_response(200); self.send_header("Content-Length", "5"); self.end_headers()
        self.wfile.write(b"hello")
    def log_message(self, *a): pass
ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
PY
# (its stderr is dropped: the client closing 100 connections at once is not news)
mkdir "$work/dir"
echo "command                        peak RSS"
peak "probe" "$bin" probe --db "$db"
peak "advise" "$bin" advise --db "$db"
peak "check --disk-seconds 1" "$bin" check --disk-seconds 1 --disk-size 32M --dir "$work/dir" --db "$db"
peak "bench disk (32M, randread)" "$bin" bench disk --rw randread --size 32M --runtime 1s --db "$db" "$work/dir"
peak "bench net --loopback" "$bin" bench net --loopback -t 1 --db "$db"
peak "bench crypto --no-kdf" "$bin" bench crypto --no-kdf --duration 0.05 --size 4096 --db "$db"
# Argon2id takes what cryptsetup would here (1 GiB on a big box); inside a 64 MiB cgroup
# it takes half the room left (tests/cli/memory.rs), so this row is the box's choice.
peak "bench crypto (Argon2id as here)" "$bin" bench crypto --duration 0.05 --size 4096 --db "$db"
peak "bench http -c 100" "$bin" bench http -c 100 -d 2 --warmup 0 --db "$db" "http://127.0.0.1:$http_port/"

net_port=$((http_port + 1))
/usr/bin/time -f '%M' -o "$work/serve.kib" "$bin" net serve --sessions 2 -B 127.0.0.1 -p "$net_port" \
    >/dev/null 2>&1 &
serve=$!
sleep 0.5
for _ in 1 2; do "$bin" bench net 127.0.0.1 -p "$net_port" -t 1 -P 4 --no-store >/dev/null 2>&1; done
wait "$serve"
awk '/^[0-9]+$/ { printf "%-30s %7.1f MiB\n", "net serve (2 sessions)", $1 / 1024 }' "$work/serve.kib"

peak "watch (${WATCH_SECS:=60} s at 1 Hz)" "$bin" watch --interval 1 --count "$WATCH_SECS" --json --db "$db"

# A store of 200 runs: one probe and one crypto run, exported and imported 99 times.
big=$work/big.db
"$bin" probe --db "$big" >/dev/null
"$bin" bench crypto --no-kdf --duration 0.01 --size 4096 --cipher gcm --db "$big" >/dev/null
"$bin" history export 1 2 --db "$big" >"$work/runs.json"
for _ in $(seq 99); do "$bin" history import "$work/runs.json" --db "$big" >/dev/null; done
peak "history list (200 runs)" "$bin" history list --limit 1000 --db "$big"
peak "report --html (200 runs)" "$bin" report --html - --db "$big" $(seq 1 200)
peak "compare (store of 200 runs)" "$bin" compare 1 199 --db "$big"
