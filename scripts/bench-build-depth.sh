#!/usr/bin/env bash
# A level's values and depth table in two-bit mode, both ways, side by side in one run, on
# DB's levels below N (hard links, no copy), under --memory B_PER_POS bytes a position:
#   values        `build --mode two-bit` (the values alone)
#   depth pass    `depth` of that level afterwards (what `build --depth` ran before it found
#                 the depths itself; the pass it picks within the same memory)
#   with depths   `build --mode two-bit --depth`: the steps settled in waves, the depth table
#                 merged from the build's own files
# each in turn, RUNS times. Prints per run and side: seconds (the level's own), positions/s, peak
# anonymous memory per position, and for the builds the bytes read and written per position;
# then the medians: "with depths" against the values alone (what the waves cost) and against
# the values and the depth pass together (what `build --depth` saves), and whether the tables
# are identical.
#
# Usage: scripts/bench-build-depth.sh N DB [RUNS=1]
#   BENCH_DIR=/path  where to work (default: a temporary directory next to DB, removed after)
#   SOLVER=/path     benchmark this awari-solver binary instead of building the checkout's
#   B_PER_POS=0.34   the memory, in bytes per position of level N
set -euo pipefail
N=${1:?level}
DB=${2:?database directory holding levels 0..N-1}
RUNS=${3:-1}
cd "$(dirname "$0")/.."
. scripts/common.sh
solver_bin
BASE=${BENCH_DIR:-$(mktemp -d -p "$(dirname "$(realpath "$DB")")" bench-build-depth.XXXXXX)}
mkdir -p "$BASE"
trap '[ -z "${BENCH_DIR:-}" ] && rm -rf "$BASE"' EXIT
SIZE=$("$BIN" plan --max-stones "$N" --memory 1T --disk 100T --db "$BASE/none" | awk -v n="$N" '$1 == n {print $2}')
BUDGET=$(awk -v s="$SIZE" -v b="${B_PER_POS:-0.34}" 'BEGIN {printf "%d", s * b}')
echo "== machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo), $(date -u +%Y-%m-%dT%H:%MZ)"
echo "== level $N ($SIZE positions) of $DB; --memory $BUDGET"
RESULTS=$BASE/results.txt
: > "$RESULTS"
now() { date +%s.%N; }
report() {
  local run=$1 side=$2 secs=$3 rest=$4
  echo "run $run $(printf '%-12s %9.1f' "$side" "$secs") s  $(awk -v s="$SIZE" -v t="$secs" 'BEGIN {printf "%6.2f", s / t / 1e6}') M positions/s  $rest"
  echo "${side// /-} $secs" >> "$RESULTS"
}
# The build of level N into DIR ($2), with further arguments; reports its JSON's figures.
build() {
  local run=$1 side=$2 dir=$3
  shift 3
  [ "$side" = values ] && link_lower_levels "$DB" "$dir" "$N"
  local json
  "$BIN" build --db "$dir" --max-stones "$N" --mode two-bit --memory "$BUDGET" --json "$@" \
    > "$dir.json" 2> "$dir.err" || { tail -3 "$dir.err" >&2; exit 1; }
  json=$(grep "\"seeds\":$N," "$dir.json")
  field() { echo "$json" | sed -n "s/.*\"$1\":\([^,}]*\).*/\1/p"; }
  report "$run" "$side" "$(field seconds)" "peak anon $(printf '%.3f' "$(field peak_anon_bytes_per_position)") B/pos; read $(printf '%.1f' "$(field read_bytes_per_position)") and written $(printf '%.1f' "$(field written_bytes_per_position)") B/pos; max depth $(field max_depth)"
}
# `build --depth` gives the levels below N depth tables first where they have none: they get
# them here once, beforehand (not timed), so that its run is level N's alone (and its memory
# not what those passes left with the allocator).
link_lower_levels "$DB" "$BASE/lower" "$N"
"$BIN" depth --db "$BASE/lower" --depth-form plain > "$BASE/lower.txt" 2>&1 \
  || { tail -3 "$BASE/lower.txt" >&2; exit 1; }
for run in $(seq 1 "$RUNS"); do
  build "$run" values "$BASE/values"
  t0=$(now)
  "$BIN" depth --db "$BASE/values" --stones "$N" --memory "$BUDGET" --depth-form plain \
    > "$BASE/pass.txt" 2> "$BASE/pass.err" || { tail -3 "$BASE/pass.err" >&2; exit 1; }
  secs=$(awk -v a="$t0" -v b="$(now)" 'BEGIN {print b - a}')
  line=$(grep "^level *$N:" "$BASE/pass.txt")
  report "$run" "depth pass" "$secs" "peak anon $(echo "$line" | sed -n 's/.*peak anon \([^)]*)\).*/\1/p'); $(echo "$line" | sed -n 's/.*\(read [0-9.]* and written [0-9.]* B\/pos\).*/\1/p')"
  link_lower_levels "$DB" "$BASE/depths" "$N"
  for f in "$BASE"/lower/level-*.depth; do ln "$f" "$BASE/depths/"; done
  build "$run" "with depths" "$BASE/depths" --depth --depth-form plain
  for f in values depth; do
    t=$(printf "level-%02d.$f" "$N")
    cmp -s "$BASE/values/$t" "$BASE/depths/$t" && echo "run $run: the $f tables are identical" \
      || { echo "run $run: the $f TABLES DIFFER"; exit 1; }
  done
done
median() { sort -g | awk '{a[NR] = $1} END {if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
v=$(awk '$1 == "values" {print $2}' "$RESULTS" | median)
d=$(awk '$1 == "depth-pass" {print $2}' "$RESULTS" | median)
w=$(awk '$1 == "with-depths" {print $2}' "$RESULTS" | median)
echo "with depths / values alone: $(awk -v w="$w" -v v="$v" 'BEGIN {printf "%.2f", w / v}') (medians $w s and $v s)"
echo "with depths / values then the depth pass: $(awk -v w="$w" -v v="$v" -v d="$d" 'BEGIN {printf "%.2f", w / (v + d)}') (depth pass median $d s)"
