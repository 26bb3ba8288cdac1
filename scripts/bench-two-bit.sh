#!/usr/bin/env bash
# Two-bit against low-memory on one level, side by side: level N is built on top of levels
# 0..N-1 of an existing database (hard links, no copy) with the low-memory algorithm (0.67
# bytes per position, default memory) and with the two-bit algorithm under --memory of 0.33
# bytes per position, alternated RUNS times. Prints per run: seconds, positions/s, peak
# anonymous memory and its bytes per position, the bytes read and written per position; then
# the median speed ratio, and whether the tables are identical (to each other and to DB's).
#
# Usage: scripts/bench-two-bit.sh N DB [RUNS=1]
#   BENCH_DIR=/path  where to build (default: a temporary directory next to DB, removed after)
#   SOLVER=/path     benchmark this awari-solver binary instead of building the checkout's
#   B_PER_POS=0.33   the two-bit run's memory budget, in bytes per position of level N
set -euo pipefail
N=${1:?level}
DB=${2:?database directory holding levels 0..N-1}
RUNS=${3:-1}
cd "$(dirname "$0")/.."
. scripts/common.sh
solver_bin
BASE=${BENCH_DIR:-$(mktemp -d -p "$(dirname "$(realpath "$DB")")" bench-two-bit.XXXXXX)}
mkdir -p "$BASE"
trap '[ -z "${BENCH_DIR:-}" ] && rm -rf "$BASE"' EXIT
SIZE=$("$BIN" plan --max-stones "$N" --memory 1T --disk 100T --db "$BASE/none" | awk -v n="$N" '$1 == n {print $2}')
BUDGET=$(awk -v s="$SIZE" -v b="${B_PER_POS:-0.33}" 'BEGIN {printf "%d", s * b}')
echo "== machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo), $(date -u +%Y-%m-%dT%H:%MZ)"
echo "== level $N ($SIZE positions) on levels 0..$((N - 1)) of $DB; two-bit under --memory $BUDGET"
prepare() {
  rm -rf "$BASE/$1"
  mkdir -p "$BASE/$1"
  for k in $(seq 0 $((N - 1))); do
    f=$(printf "level-%02d.values" "$k")
    if [ -f "$DB/$f" ]; then ln "$DB/$f" "$BASE/$1/$f" 2>/dev/null || cp "$DB/$f" "$BASE/$1/$f"; fi
  done
}
RESULTS=$BASE/results.txt
: > "$RESULTS"
for run in $(seq 1 "$RUNS"); do
  for side in low-memory two-bit; do
    prepare "$side"
    args=(build --db "$BASE/$side" --max-stones "$N" --mode "$side")
    [ "$side" = two-bit ] && args+=(--memory "$BUDGET")
    "$BIN" "${args[@]}" --json > "$BASE/$side.txt" 2> "$BASE/$side.err"
    level_fields "$BASE/$side.txt" "$N" seconds:.2f positions_per_second:.0f peak_anon_bytes:human \
      peak_anon_bytes_per_position:.2f read_bytes_per_position:.2f written_bytes_per_position:.2f resumed_at resumes |
      awk -F '\t' -v r="$run" -v side="$side" -v n="$N" '{
        printf "run %d %-10s %9.1f s  %6.2f M positions/s  peak anon %s (%s B/pos)  I/O read %s B/pos, written %s B/pos\n",
          r, side, $1, $2 / 1e6, $3, $4, $5, $6
        print side, $1 > "/dev/stderr"
        if ($7 != "–")
          printf "level %d: resumed at %s (%d resume%s in all; the times above count each run up to its last checkpoint)\n",
            n, $7, $8, ($8 == 1 ? "" : "s")
      }' 2>> "$RESULTS"
  done
  if cmp -s "$BASE/low-memory/$(printf 'level-%02d.values' "$N")" "$BASE/two-bit/$(printf 'level-%02d.values' "$N")"; then
    echo "run $run: tables identical"
  else
    echo "run $run: TABLES DIFFER"
    exit 1
  fi
done
if [ -f "$DB/$(printf 'level-%02d.values' "$N")" ]; then
  cmp -s "$DB/$(printf 'level-%02d.values' "$N")" "$BASE/two-bit/$(printf 'level-%02d.values' "$N")" \
    && echo "identical to $DB's level $N" || { echo "DIFFERS from $DB's level $N"; exit 1; }
fi
median() { sort -g | awk '{a[NR] = $1} END {if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
l=$(awk '$1 == "low-memory" {print $2}' "$RESULTS" | median)
t=$(awk '$1 == "two-bit" {print $2}' "$RESULTS" | median)
echo "two-bit speed / low-memory speed: $(awk -v l="$l" -v t="$t" 'BEGIN {printf "%.2f", l / t}') (medians $t s and $l s)"
