#!/usr/bin/env bash
# The depth pass and `verify --prove` against the two-bit build, on one level, in one run:
# level N is built on top of levels 0..N-1 of an existing database (hard links, no copy) with
# the two-bit algorithm under --memory of 0.33 bytes per position; then `awari-solver depth`
# adds its depth table and `verify --prove` proves it, both under the same budget; the three
# are alternated RUNS times. Prints per run: seconds, positions/s, peak anonymous memory and
# its bytes per position; then the median speed ratios (depth / two-bit, prove / two-bit).
#
# Usage: scripts/bench-depth.sh N DB [RUNS=1]
#   BENCH_DIR=/path  where to work (default: a temporary directory next to DB, removed after)
#   SOLVER=/path     benchmark this awari-solver binary instead of building the checkout's
#   B_PER_POS=0.33   the memory budget, in bytes per position of level N
# The depth table is written plain (--depth-form plain): the pass is what is measured, not its
# compression.
set -euo pipefail
N=${1:?level}
DB=${2:?database directory holding levels 0..N-1}
RUNS=${3:-1}
cd "$(dirname "$0")/.."
. scripts/common.sh
solver_bin
BASE=${BENCH_DIR:-$(mktemp -d -p "$(dirname "$(realpath "$DB")")" bench-depth.XXXXXX)}
mkdir -p "$BASE"
trap '[ -z "${BENCH_DIR:-}" ] && rm -rf "$BASE"' EXIT
SIZE=$("$BIN" plan --max-stones "$N" --memory 1T --disk 100T --db "$BASE/none" | awk -v n="$N" '$1 == n {print $2}')
BUDGET=$(awk -v s="$SIZE" -v b="${B_PER_POS:-0.33}" 'BEGIN {printf "%d", s * b}')
echo "== machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo), $(date -u +%Y-%m-%dT%H:%MZ)"
echo "== level $N ($SIZE positions) on levels 0..$((N - 1)) of $DB; every side under --memory $BUDGET"
DIR=$BASE/db
rm -rf "$DIR"
mkdir -p "$DIR"
for k in $(seq 0 $((N - 1))); do
  f=$(printf "level-%02d.values" "$k")
  if [ -f "$DB/$f" ]; then ln "$DB/$f" "$DIR/$f" 2>/dev/null || cp "$DB/$f" "$DIR/$f"; fi
done
VALUES=$DIR/$(printf 'level-%02d.values' "$N")
DEPTH=$DIR/$(printf 'level-%02d.depth' "$N")
RESULTS=$BASE/results.txt
: > "$RESULTS"
# peak KiB of anonymous memory, from /usr/bin/time's maximum resident set where the level
# outweighs the mapped files is not reliable: the binaries report their own (RssAnon peak).
for run in $(seq 1 "$RUNS"); do
  rm -f "$VALUES" "$DEPTH"
  "$BIN" build --db "$DIR" --max-stones "$N" --mode two-bit --memory "$BUDGET" --json > "$BASE/build.txt" 2> "$BASE/build.err"
  level_fields "$BASE/build.txt" "$N" seconds:.2f positions_per_second:.0f peak_anon_bytes:human peak_anon_bytes_per_position:.2f |
    awk -F '\t' -v r="$run" '{
      printf "run %d %-8s %9.1f s  %6.2f M positions/s  peak anon %s (%s B/pos)\n", r, "two-bit", $1, $2 / 1e6, $3, $4
      print "two-bit", $1 > "/dev/stderr"
    }' 2>> "$RESULTS"
  "$BIN" depth --db "$DIR" --stones "$N" --memory "$BUDGET" --depth-form plain > "$BASE/depth.txt" 2> "$BASE/depth.err"
  line=$(grep "^level *$N:" "$BASE/depth.txt")
  secs=$(echo "$line" | sed -n 's/.* positions in \([0-9.]*\) s.*/\1/p')
  anon=$(echo "$line" | sed -n 's/.*peak anon \([^)]*)\).*/\1/p')
  echo "run $run depth    $(printf '%9.1f' "$secs") s  $(awk -v s="$SIZE" -v t="$secs" 'BEGIN {printf "%6.2f", s / t / 1e6}') M positions/s  peak anon $anon; $(echo "$line" | sed -n 's/.*\(max depth *[0-9]*\).*/\1/p')"
  echo "depth $secs" >> "$RESULTS"
  mv "$DEPTH" "$DEPTH.kept"
  "$BIN" verify --db "$DIR" --stones "$N" --prove --memory "$BUDGET" > "$BASE/prove.txt" 2> "$BASE/prove.err"
  line=$(grep "^level *$N:" "$BASE/prove.txt")
  echo "$line" | grep -q "proven: every win" || { echo "NOT PROVEN: $line"; exit 1; }
  secs=$(echo "$line" | sed -n 's/.*; \([0-9.]*\) s, .*/\1/p')
  anon=$(echo "$line" | sed -n 's/.*peak anon \([^)]*)\).*/\1/p')
  echo "run $run prove    $(printf '%9.1f' "$secs") s  $(awk -v s="$SIZE" -v t="$secs" 'BEGIN {printf "%6.2f", s / t / 1e6}') M positions/s  peak anon $anon"
  echo "prove $secs" >> "$RESULTS"
  mv "$DEPTH.kept" "$DEPTH"
done
if [ -f "$DB/$(printf 'level-%02d.values' "$N")" ]; then
  # The header's fields and checksums (bytes 0..48) and the data (from 64); not the header's
  # own checksum (48..56), which tables written before it existed leave zero.
  OLD=$DB/$(printf 'level-%02d.values' "$N")
  if cmp -s -n 48 "$OLD" "$VALUES" && cmp -s -i 64 "$OLD" "$VALUES"; then
    echo "values identical to $DB's level $N"
  else
    echo "values DIFFER from $DB's level $N"
    exit 1
  fi
fi
median() { sort -g | awk '{a[NR] = $1} END {if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
b=$(awk '$1 == "two-bit" {print $2}' "$RESULTS" | median)
d=$(awk '$1 == "depth" {print $2}' "$RESULTS" | median)
p=$(awk '$1 == "prove" {print $2}' "$RESULTS" | median)
echo "depth speed / two-bit speed: $(awk -v b="$b" -v d="$d" 'BEGIN {printf "%.2f", b / d}') (medians $d s and $b s)"
echo "prove speed / two-bit speed: $(awk -v b="$b" -v p="$p" 'BEGIN {printf "%.2f", b / p}') (medians $p s and $b s)"
