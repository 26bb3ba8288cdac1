#!/usr/bin/env bash
# The depth pass and its proof of one level in the memory of each pass, side by side in one
# run, on DB's level N and the levels below it (hard links, no copy):
#   waves     `depth` by waves (AWARI_DEPTH=waves), --memory B_PER_POS bytes a position
#   classes   `depth` by value classes, two bits (AWARI_DEPTH=classes), the same memory
#   one-bit   `depth --memory ONE_B_PER_POS` (below two bits a position: the one-bit class pass)
#   prove, prove-one-bit   `verify --prove` (no depth table there) under each memory
# each in turn, RUNS times. Prints per run and side: seconds, positions/s, peak anonymous
# memory and its bytes per position, and the bytes read and written per position: for `depth`
# its work files and table, and the lower levels and the level's values as a byte a position
# per pass; for `verify --prove` its work files (the tables it maps not counted); then each side's median speed against `classes`, and whether the
# depth tables are identical.
#
# Usage: scripts/bench-depth.sh N DB [RUNS=1]
#   SIDES="waves classes one-bit prove prove-one-bit"  the sides to run (classes always: the
#                    others are compared with it)
#   BENCH_DIR=/path  where to work (default: a temporary directory next to DB, removed after)
#   SOLVER=/path     benchmark this awari-solver binary instead of building the checkout's
#   B_PER_POS=0.34   the two-bit passes' memory, in bytes per position of level N
#   ONE_B_PER_POS=0.16  the one-bit pass's (it refuses, naming its least, where that is too little)
set -euo pipefail
N=${1:?level}
DB=${2:?database directory holding levels 0..N}
RUNS=${3:-1}
SIDES=" ${SIDES:-waves classes one-bit prove prove-one-bit} "
[[ $SIDES == *" classes "* ]] || SIDES="$SIDES classes "
cd "$(dirname "$0")/.."
. scripts/common.sh
solver_bin
BASE=${BENCH_DIR:-$(mktemp -d -p "$(dirname "$(realpath "$DB")")" bench-depth.XXXXXX)}
mkdir -p "$BASE"
trap '[ -z "${BENCH_DIR:-}" ] && rm -rf "$BASE"' EXIT
SIZE=$("$BIN" plan --max-stones "$N" --memory 1T --disk 100T --db "$BASE/none" | awk -v n="$N" '$1 == n {print $2}')
BUDGET=$(awk -v s="$SIZE" -v b="${B_PER_POS:-0.34}" 'BEGIN {printf "%d", s * b}')
ONE_BUDGET=$(awk -v s="$SIZE" -v b="${ONE_B_PER_POS:-0.16}" 'BEGIN {printf "%d", s * b}')
echo "== machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo), $(date -u +%Y-%m-%dT%H:%MZ)"
echo "== level $N ($SIZE positions) of $DB; sides:$SIDES; --memory $BUDGET, one bit $ONE_BUDGET"
prepare() {
  link_lower_levels "$DB" "$BASE/$1" "$((N + 1))"
}
RESULTS=$BASE/results.txt
: > "$RESULTS"
report() {
  local run=$1 side=$2 secs=$3 rest=$4
  echo "run $run $(printf '%-13s %9.1f' "$side" "$secs") s  $(awk -v s="$SIZE" -v t="$secs" 'BEGIN {printf "%6.2f", s / t / 1e6}') M positions/s  $rest"
  echo "$side $secs" >> "$RESULTS"
}
depth() {
  local run=$1 side=$2 algorithm=$3 memory=$4
  prepare "$side"
  AWARI_DEPTH=$algorithm "$BIN" depth --db "$BASE/$side" --stones "$N" --memory "$memory" --depth-form plain \
    > "$BASE/$side.txt" 2> "$BASE/$side.err" || { tail -3 "$BASE/$side.err" >&2; exit 1; }
  local line
  line=$(grep "^level *$N:" "$BASE/$side.txt")
  report "$run" "$side" "$(echo "$line" | sed -n 's/.* positions in \([0-9.]*\) s.*/\1/p')" \
    "peak anon $(echo "$line" | sed -n 's/.*peak anon \([^)]*)\).*/\1/p'); $(echo "$line" | sed -n 's/.*\(read [0-9.]* and written [0-9.]* B\/pos\).*/\1/p'); $(echo "$line" | sed -n 's/.*, \([0-9]* exit pass[es]*\)).*/\1/p')"
}
prove() {
  local run=$1 side=$2 memory=$3
  prepare "$side"
  "$BIN" verify --db "$BASE/$side" --stones "$N" --prove --memory "$memory" > "$BASE/$side.txt" 2> "$BASE/$side.err" \
    || { tail -3 "$BASE/$side.err" >&2; exit 1; }
  local line
  line=$(grep "^level *$N:" "$BASE/$side.txt")
  echo "$line" | grep -q "proven: every win" || { echo "NOT PROVEN: $line"; exit 1; }
  report "$run" "$side" "$(echo "$line" | sed -n 's/.*; \([0-9.]*\) s, .*/\1/p')" \
    "peak anon $(echo "$line" | sed -n 's/.*peak anon \([^)]*)\).*/\1/p'); $(echo "$line" | sed -n 's/.*\(work files read [0-9.]* and written [0-9.]* B\/pos\).*/\1/p'); $(echo "$line" | sed -n 's/.*depth pass, \([0-9]* exit pass[es]*\).*/\1/p')"
}
table() { echo "$BASE/$1/$(printf 'level-%02d.depth' "$N")"; }
for run in $(seq 1 "$RUNS"); do
  [[ $SIDES == *" waves "* ]] && depth "$run" waves waves "$BUDGET"
  depth "$run" classes classes "$BUDGET"
  [[ $SIDES == *" one-bit "* ]] && depth "$run" one-bit auto "$ONE_BUDGET"
  for side in waves one-bit; do
    [[ $SIDES == *" $side "* ]] || continue
    cmp -s "$(table "$side")" "$(table classes)" && echo "run $run: the $side and classes depth tables are identical" \
      || { echo "run $run: the $side and classes DEPTH TABLES DIFFER"; exit 1; }
  done
  [[ $SIDES == *" prove "* ]] && prove "$run" prove "$BUDGET"
  [[ $SIDES == *" prove-one-bit "* ]] && prove "$run" prove-one-bit "$ONE_BUDGET"
done
median() { sort -g | awk '{a[NR] = $1} END {if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
t=$(awk '$1 == "classes" {print $2}' "$RESULTS" | median)
for side in waves one-bit prove prove-one-bit; do
  [[ $SIDES == *" $side "* ]] || continue
  s=$(awk -v side="$side" '$1 == side {print $2}' "$RESULTS" | median)
  echo "$side speed / classes speed: $(awk -v t="$t" -v s="$s" 'BEGIN {printf "%.2f", t / s}') (medians $s s and $t s)"
done
