#!/usr/bin/env bash
# Verify benchmark: the streamed and the lookup check of the same levels of one database,
# alternated, each run printing per level its seconds, positions/s, bytes read from storage
# and peak anonymous memory per position (from `verify`'s own line), then per method the
# total and the ratio of the two. With the page cache dropped or squeezed, it also prints
# what each streamed pass read against the level and its lower levels (the bound is 2x).
#
# Usage: scripts/bench-verify.sh "LEVELS" DB [RUNS=1]     e.g. "16 20 24" awari-db 2
#   METHODS="streamed lookup"   which methods, in this order (default both)
#   MEMORY=4.5G      the streamed check's accumulator budget (default: what is free)
#   EVICT=1          drop the database's files from the page cache before every run
#                    (posix_fadvise; works where DROP_CACHES does not)
#   DROP_CACHES=1    drop the whole page cache before every run (needs root)
#   SQUEEZE=G        a helper holds G GiB of RAM for the whole benchmark (see bench.sh)
#   TIMEOUT=S        stop a run after S seconds, reported as stopped (a lookup check of an
#                    uncached level above ~32 seeds here takes days)
#   SOLVER=/path     benchmark this awari-solver binary instead of building the checkout's
set -euo pipefail
LEVELS=${1:?usage: scripts/bench-verify.sh \"LEVELS\" DB [RUNS]}
DB=${2:?usage: scripts/bench-verify.sh \"LEVELS\" DB [RUNS]}
RUNS=${3:-1}
METHODS=${METHODS:-streamed lookup}
cd "$(dirname "$0")/.."
. scripts/common.sh
solver_bin
OUT=$(mktemp -d)
trap 'squeeze_stop; rm -rf "$OUT"' EXIT
[ -n "${SQUEEZE:-}" ] && squeeze_start "$SQUEEZE" "$OUT"
EXTRA=()
[ -n "${MEMORY:-}" ] && EXTRA+=(--memory "$MEMORY")

echo "== machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo), $(date -u +%Y-%m-%dT%H:%MZ); levels $LEVELS of $DB"
for run in $(seq 1 "$RUNS"); do
  for m in $METHODS; do
    if [ -n "${DROP_CACHES:-}" ]; then
      sync; echo 3 > /proc/sys/vm/drop_caches || echo "(could not drop the page cache)"
    fi
    [ -n "${EVICT:-}" ] && evict_cache "$DB"/level-*.values "$DB"/scores.* 2>/dev/null || true
    echo "-- run $run, $m"
    set +e
    timeout "${TIMEOUT:-0}" "$BIN" verify --db "$DB" --stones $LEVELS --method "$m" "${EXTRA[@]}" 2>/dev/null \
      | grep '^level' | tee "$OUT/$m.$run"
    rc=${PIPESTATUS[0]}
    set -e
    [ "$rc" = 124 ] && echo "stopped after ${TIMEOUT} s"
    [ "$rc" = 0 ] || [ "$rc" = 124 ] || { echo "verify failed (exit $rc)"; exit 1; }
  done
done

# Seconds of a "level N: ... ; S s, ..." line.
secs() { sed -n 's/.*; \([0-9.]*\) s, .*/\1/p' "$@" | awk '{s += $1} END {printf "%.2f", s}'; }
echo "== totals over $RUNS run(s)"
for m in $METHODS; do
  echo "$m: $(cat "$OUT/$m".* | secs) s"
done
set -- $METHODS
if [ $# = 2 ]; then
  A=$(cat "$OUT/$1".* | secs); B=$(cat "$OUT/$2".* | secs)
  echo "$1 / $2 time: $(awk -v a="$A" -v b="$B" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }')"
fi
# Bytes a streamed pass reads at most: the level and its lower levels n-2 .. n-18.
if [ -n "${DROP_CACHES:-}${SQUEEZE:-}${EVICT:-}" ] && grep -qs 'streamed' "$OUT"/streamed.* 2>/dev/null; then
  for n in $LEVELS; do
    inputs=0
    for k in $(seq $((n > 18 ? n - 18 : 0)) "$n"); do
      [ "$k" = $((n - 1)) ] && continue
      f=$(printf "%s/level-%02d.values" "$DB" "$k"); [ -f "$f" ] || f="$DB/scores.$k"
      [ -f "$f" ] && inputs=$((inputs + $(stat -c %s "$f")))
    done
    awk -v n="$n" -v inputs="$inputs" '
      function bytes(x, u) { sub(/,$/, "", u); return x * (u == "KiB" ? 2^10 : u == "MiB" ? 2^20 : u == "GiB" ? 2^30 : u == "TiB" ? 2^40 : 1) }
      $2 == n":" { for (i = 1; i <= NF; i++) { if ($i == "read") r = bytes($(i+1), $(i+2)); if ($i ~ /^pass/) p = $(i-1) }
                   printf "level %d: read %.2f GiB per pass, %.2fx the level and its lower levels (%.2f GiB)\n", n, r / p / 2^30, r / p / inputs, inputs / 2^30 }' \
      "$OUT"/streamed.*
  done
fi
