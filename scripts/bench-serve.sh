#!/usr/bin/env bash
# Load on `awari-probe serve`, localhost only: /api/position for random boards of levels
# 0..MAX, COUNT requests at most, SECONDS at most, C keep-alive connections
# (probe/examples/load.rs); prints requests/s and latency percentiles. The page cache is warmed
# by a first, untimed run.
#
# Usage: scripts/bench-serve.sh DB [COUNT=200000] [SECONDS=20] [C=4] [MAX=20]
set -euo pipefail
DB=${1:?usage: scripts/bench-serve.sh DB [COUNT] [SECONDS] [C] [MAX]}
COUNT=${2:-200000}
SECONDS_MAX=${3:-20}
C=${4:-4}
MAX=${5:-20}
cd "$(dirname "$0")/.."
. scripts/common.sh
cargo build --release -q -p awari-probe --example load
TARGET=$(target_dir)
LOG=$(mktemp)
"$TARGET/release/awari-probe" serve --db "$DB" --addr 127.0.0.1:0 2> "$LOG" &
SERVER=$!
trap 'kill $SERVER 2>/dev/null; rm -f "$LOG"' EXIT
for _ in $(seq 100); do grep -q "http://" "$LOG" && break; sleep 0.1; done
ADDR=$(grep -o 'http://[0-9.:]*' "$LOG" | sed 's|http://||')
echo "== $(nproc) cores; server and load generator share them"
"$TARGET/release/examples/load" "$ADDR" "$COUNT" "$SECONDS_MAX" "$C" "$MAX" > /dev/null  # warm-up
"$TARGET/release/examples/load" "$ADDR" "$COUNT" "$SECONDS_MAX" "$C" "$MAX"
