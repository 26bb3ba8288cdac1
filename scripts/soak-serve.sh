#!/usr/bin/env bash
# A bounded soak of `awari-probe serve`, localhost only: COUNT requests at most, SECONDS at
# most (10 minutes at most), 16 keep-alive connections, valid, invalid, malformed and
# oversized requests mixed (probe/examples/soak.rs). Prints throughput, latency p50 and p99,
# the errors (a valid request not answered 200, a bad one not 400: must be 0) and the server's
# resident memory after a warm-up and at the end: its anonymous part (heap and stacks: what a
# leak would grow) must grow by at most 10 %; the mapped tables' pages are shown apart (they
# grow as the page cache fills, which is no leak). The warm-up is WARMUP requests of the same
# mix (default 4 × COUNT): the allocator's arenas take about a million requests to reach their
# size (RssAnon 14.5 → 18.7 MiB over ten runs of 200,000 here, then flat). Exits non-zero if
# either check fails.
#
# Usage: scripts/soak-serve.sh DB [COUNT=100000] [SECONDS=60] [C=16] [MAX=20]
#   WARMUP=N  requests before the measured run (default 4 × COUNT)
#   AWARI_PROFILE=release  the cargo profile to build with (.ci/run: test, reusing the tests' build)
set -euo pipefail
DB=${1:?usage: scripts/soak-serve.sh DB [COUNT] [SECONDS] [C] [MAX]}
COUNT=${2:-100000}
SECONDS_MAX=${3:-60}
C=${4:-16}
MAX=${5:-20}
[ "$SECONDS_MAX" -le 600 ] || { echo "at most 600 seconds" >&2; exit 2; }
cd "$(dirname "$0")/.."
. scripts/common.sh
cargo build --profile "$AWARI_PROFILE" -q -p awari-probe --bin awari-probe --example soak
TARGET=$(profile_dir)
LOG=$(mktemp)
"$TARGET/awari-probe" serve --db "$DB" --addr 127.0.0.1:0 2> "$LOG" &
SERVER=$!
trap 'kill $SERVER 2>/dev/null; rm -f "$LOG"' EXIT
for _ in $(seq 100); do grep -q "http://" "$LOG" && break; sleep 0.1; done
ADDR=$(grep -o 'http://[0-9.:]*' "$LOG" | sed 's|http://||')
anon() { awk '/RssAnon/ {print $2}' "/proc/$SERVER/status"; }
files() { awk '/RssFile/ {print $2}' "/proc/$SERVER/status"; }
echo "== $(nproc) cores; server and soak share them; $C connections, levels 0..$MAX of $DB"
# Warm-up (untimed): the page cache and the server's buffers reach their working size.
"$TARGET/examples/soak" "$ADDR" "${WARMUP:-$((4 * COUNT))}" 600 "$C" "$MAX" > /dev/null
BEFORE=$(anon)
FILES_BEFORE=$(files)
"$TARGET/examples/soak" "$ADDR" "$COUNT" "$SECONDS_MAX" "$C" "$MAX"
AFTER=$(anon)
kill -0 $SERVER  # still serving
echo "server anonymous RSS: $BEFORE KiB after the warm-up, $AFTER KiB at the end ($(awk -v a="$BEFORE" -v b="$AFTER" 'BEGIN {printf "%+.1f", 100 * (b - a) / a}') %); mapped tables resident: $FILES_BEFORE KiB, then $(files) KiB"
awk -v a="$BEFORE" -v b="$AFTER" 'BEGIN {exit !(b <= 1.10 * a)}' || { echo "anonymous RSS grew more than 10 %" >&2; exit 1; }
