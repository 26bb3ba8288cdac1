#!/usr/bin/env bash
# One level under each out-of-core algorithm, and its proof, side by side in one run: level N
# is built on top of levels 0..N-1 of an existing database (hard links, no copy) by
#   low-memory  `build --mode low-memory` (0.67 bytes per position, default memory)
#   two-bit     `build --mode two-bit --memory BUDGET` (BUDGET: B_PER_POS bytes a position)
#   one-bit     `build --mode one-bit --memory ONE_BUDGET` (ONE_B_PER_POS bytes a position)
# then, on the two-bit table, under the same BUDGET,
#   depth       `depth --depth-form plain` (the pass, not its compression, is measured)
#   prove       `verify --prove`
# each in turn, RUNS times. Prints per run and side: seconds, positions/s, peak anonymous
# memory and its bytes per position (and for the builds the bytes read and written per
# position); then the median speed of each side against two-bit's, and whether the tables are
# identical (the two builds', and DB's level N where it has one).
#
# Usage: scripts/bench-level.sh N DB [RUNS=1]
#   SIDES="low-memory two-bit depth prove"  the sides to run (one-bit too if named; two-bit is always run: the
#                    others are compared with it, and depth and prove need its table)
#   BENCH_DIR=/path  where to work (default: a temporary directory next to DB, removed after)
#   SOLVER=/path     benchmark this awari-solver binary instead of building the checkout's
#   B_PER_POS=0.33   the memory budget, in bytes per position of level N
#   ONE_B_PER_POS=0.16  one-bit's (it refuses, naming its least, where that is too little)
set -euo pipefail
N=${1:?level}
DB=${2:?database directory holding levels 0..N-1}
RUNS=${3:-1}
SIDES=" ${SIDES:-low-memory two-bit depth prove} "
cd "$(dirname "$0")/.."
. scripts/common.sh
solver_bin
BASE=${BENCH_DIR:-$(mktemp -d -p "$(dirname "$(realpath "$DB")")" bench-level.XXXXXX)}
mkdir -p "$BASE"
trap '[ -z "${BENCH_DIR:-}" ] && rm -rf "$BASE"' EXIT
SIZE=$("$BIN" plan --max-stones "$N" --memory 1T --disk 100T --db "$BASE/none" | awk -v n="$N" '$1 == n {print $2}')
BUDGET=$(awk -v s="$SIZE" -v b="${B_PER_POS:-0.33}" 'BEGIN {printf "%d", s * b}')
ONE_BUDGET=$(awk -v s="$SIZE" -v b="${ONE_B_PER_POS:-0.16}" 'BEGIN {printf "%d", s * b}')
echo "== machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo), $(date -u +%Y-%m-%dT%H:%MZ)"
echo "== level $N ($SIZE positions) on levels 0..$((N - 1)) of $DB; sides:$SIDES; --memory $BUDGET but for low-memory (and one-bit: $ONE_BUDGET)"
prepare() { link_lower_levels "$DB" "$BASE/$1" "$N"; }
table() { echo "$BASE/$1/$(printf 'level-%02d.values' "$N")"; }
RESULTS=$BASE/results.txt
: > "$RESULTS"
# A side's line from the seconds it took, and what follows on the line.
report() {
  local run=$1 side=$2 secs=$3 rest=$4
  echo "run $run $(printf '%-10s %9.1f' "$side" "$secs") s  $(awk -v s="$SIZE" -v t="$secs" 'BEGIN {printf "%6.2f", s / t / 1e6}') M positions/s  $rest"
  echo "$side $secs" >> "$RESULTS"
}
build() {
  local run=$1 side=$2
  prepare "$side"
  local args=(build --db "$BASE/$side" --max-stones "$N" --mode "$side")
  [ "$side" = two-bit ] && args+=(--memory "$BUDGET")
  [ "$side" = one-bit ] && args+=(--memory "$ONE_BUDGET")
  "$BIN" "${args[@]}" --json > "$BASE/$side.txt" 2> "$BASE/$side.err" || { tail -3 "$BASE/$side.err" >&2; exit 1; }
  local f
  IFS=$'\t' read -r -a f < <(level_fields "$BASE/$side.txt" "$N" seconds:.2f peak_anon_bytes:human \
    peak_anon_bytes_per_position:.2f read_bytes_per_position:.2f written_bytes_per_position:.2f resumed_at resumes)
  report "$run" "$side" "${f[0]}" "peak anon ${f[1]} (${f[2]} B/pos)  I/O read ${f[3]} B/pos, written ${f[4]} B/pos"
  if [ "${f[5]}" != "–" ]; then
    echo "level $N: resumed at ${f[5]} (${f[6]} resumes in all; the time counts each run up to its last checkpoint)"
  fi
}
for run in $(seq 1 "$RUNS"); do
  [[ $SIDES == *" low-memory "* ]] && build "$run" low-memory
  [[ $SIDES == *" one-bit "* ]] && build "$run" one-bit
  build "$run" two-bit
  for side in low-memory one-bit; do
    [[ $SIDES == *" $side "* ]] || continue
    cmp -s "$(table "$side")" "$(table two-bit)" && echo "run $run: the $side and two-bit tables are identical" \
      || { echo "run $run: the $side and two-bit TABLES DIFFER"; exit 1; }
  done
  DIR=$BASE/two-bit
  DEPTH=$DIR/$(printf 'level-%02d.depth' "$N")
  if [[ $SIDES == *" depth "* ]]; then
    "$BIN" depth --db "$DIR" --stones "$N" --memory "$BUDGET" --depth-form plain > "$BASE/depth.txt" 2> "$BASE/depth.err" \
      || { tail -3 "$BASE/depth.err" >&2; exit 1; }
    line=$(grep "^level *$N:" "$BASE/depth.txt")
    report "$run" depth "$(echo "$line" | sed -n 's/.* positions in \([0-9.]*\) s.*/\1/p')" \
      "peak anon $(echo "$line" | sed -n 's/.*peak anon \([^)]*)\).*/\1/p'); $(echo "$line" | sed -n 's/.*\(max depth *[0-9]*\).*/\1/p')"
    rm -f "$DEPTH"
  fi
  if [[ $SIDES == *" prove "* ]]; then
    "$BIN" verify --db "$DIR" --stones "$N" --prove --memory "$BUDGET" > "$BASE/prove.txt" 2> "$BASE/prove.err" \
      || { tail -3 "$BASE/prove.err" >&2; exit 1; }
    line=$(grep "^level *$N:" "$BASE/prove.txt")
    echo "$line" | grep -q "proven: every win" || { echo "NOT PROVEN: $line"; exit 1; }
    report "$run" prove "$(echo "$line" | sed -n 's/.*; \([0-9.]*\) s, .*/\1/p')" \
      "peak anon $(echo "$line" | sed -n 's/.*peak anon \([^)]*)\).*/\1/p')"
  fi
done
OLD=$DB/$(printf 'level-%02d.values' "$N")
if [ -f "$OLD" ]; then
  # The header's fields and checksums (bytes 0..48) and the data (from 64); not the header's
  # own checksum (48..56), which tables written before it existed leave zero.
  if cmp -s -n 48 "$OLD" "$(table two-bit)" && cmp -s -i 64 "$OLD" "$(table two-bit)"; then
    echo "identical to $DB's level $N"
  else
    echo "DIFFERS from $DB's level $N"
    exit 1
  fi
fi
median() { sort -g | awk '{a[NR] = $1} END {if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
t=$(awk '$1 == "two-bit" {print $2}' "$RESULTS" | median)
for side in low-memory one-bit depth prove; do
  [[ $SIDES == *" $side "* ]] || continue
  s=$(awk -v side="$side" '$1 == side {print $2}' "$RESULTS" | median)
  echo "$side speed / two-bit speed: $(awk -v t="$t" -v s="$s" 'BEGIN {printf "%.2f", t / s}') (medians $s s and $t s)"
done
