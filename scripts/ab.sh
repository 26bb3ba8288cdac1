#!/usr/bin/env bash
# A/B benchmark of a base commit against the working tree, in one run on one machine.
#
# Builds BASE (in its own target directory, kept between runs) and the working tree, then runs
# the two alternately, RUNS times each: `awari-solver build` of LEVELS into a fresh directory,
# then (VERIFY=1) `awari-solver verify` of the built levels, then `awari-probe batch --json`
# of BATCH random boards. Prints each run, the medians and their ratio (new speed / base
# speed), the tables' byte-identity, and positions per second as a fraction of this machine's
# random-read limit, measured in the same run (solver/examples/random_reads.rs: random byte
# reads per second over a 2 GiB array on all cores).
#
# Usage: scripts/ab.sh BASE [LEVELS=24]
#   BASE      a commit (e.g. 7718c1f, the main of issue 11)
#   LEVELS    N: levels 0..N;  A..B: levels A..B built on top of levels 0..A-1 of REUSE
#   RUNS=2    runs of each side
#   REUSE=DB  database holding levels 0..A-1 (hard-linked, or copied across file systems)
#   BASE_REUSE=DB  the base's own levels 0..A-1 where it cannot read REUSE's (a base from
#             before the plain tables' version 2 reads version 1 only): build them with the
#             base's awari-solver (target/ab-base/release/awari-solver after a first run)
#   MODE=memory|low-memory|two-bit  the build algorithm of both sides (default: build's auto)
#   BUILD_ARGS="..."  further `build` arguments for every side (e.g. "--depth --depth-form
#             plain": REUSE's depth tables are linked too, and the sides' compared)
#   MEMORY=M  --memory M for every side (e.g. 0.34 bytes a position of the top level, so
#             that two-bit takes the exit passes of a tight budget on both sides)
#   LOWMEM=1  add a third side: the working tree with --mode low-memory, whose speed is then
#             also given as a fraction of the working tree's in-memory speed
#   VERIFY=1  also time `verify` of levels A..B by base and new (the low-memory side writes
#             the same tables)
#   BATCH=N   random boards for the batch test (default 200000; 0 skips it)
#   WORK=DIR  where databases go (default: a fresh temporary directory, removed afterwards)
#   THREADS=T worker threads of build and verify (default: every core)
set -euo pipefail
BASE_REV=${1:?usage: scripts/ab.sh BASE [LEVELS]}
LEVELS=${2:-24}
RUNS=${RUNS:-2}
BATCH=${BATCH:-200000}
case "$LEVELS" in
  *..*) FROM=${LEVELS%..*}; TO=${LEVELS#*..} ;;
  *) FROM=0; TO=$LEVELS ;;
esac
if [ "$FROM" -gt 0 ] && [ -z "${REUSE:-}" ]; then
  echo "levels $FROM..$TO need REUSE=DB holding levels 0..$((FROM - 1))" >&2
  exit 2
fi
cd "$(dirname "$0")/.."
. scripts/common.sh
BASE_SHA=$(git rev-parse --verify "$BASE_REV^{commit}")
TARGET=$(target_dir)

echo "== building the working tree and base ${BASE_SHA:0:10}" >&2
cargo build --release -q -p awari-solver -p awari-probe
cargo build --release -q -p awari-solver --example random_reads
NEW_SOLVER=$TARGET/release/awari-solver
NEW_PROBE=$TARGET/release/awari-probe
SRC=$TARGET/ab-base-src/$BASE_SHA
if [ ! -f "$SRC/Cargo.toml" ]; then
  rm -rf "$SRC"
  mkdir -p "$SRC"
  git archive "$BASE_SHA" | tar -x -C "$SRC"
fi
(cd "$SRC" && CARGO_TARGET_DIR=$TARGET/ab-base cargo build --release -q -p awari-solver -p awari-probe)
BASE_SOLVER=$TARGET/ab-base/release/awari-solver
BASE_PROBE=$TARGET/ab-base/release/awari-probe

WORK=${WORK:-}
if [ -z "$WORK" ]; then
  WORK=$(mktemp -d)
  trap 'rm -rf "$WORK"' EXIT
fi
mkdir -p "$WORK"
THREAD_ARGS=()
[ -n "${THREADS:-}" ] && THREAD_ARGS=(--threads "$THREADS")

echo "== machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo), $(date -u +%Y-%m-%dT%H:%MZ)"
# (Not `tee /dev/stderr`: it reopens stderr, which truncates a log both streams share.)
READS=$("$TARGET/release/examples/random_reads" 2 3)
echo "$READS" >&2
LIMIT=$(awk '{print $3}' <<< "$READS")

SIDES=(base new)
[ -n "${LOWMEM:-}" ] && SIDES+=(new-low-memory)
solver() { case "$1" in base) echo "$BASE_SOLVER" ;; *) echo "$NEW_SOLVER" ;; esac; }
probe() { case "$1" in base) echo "$BASE_PROBE" ;; *) echo "$NEW_PROBE" ;; esac; }
mode_args() {
  case "$1" in
    new-low-memory) echo "--mode low-memory" ;;
    *) [ -n "${MODE:-}" ] && echo "--mode $MODE" || true ;;
  esac
  [ -n "${MEMORY:-}" ] && echo "--memory $MEMORY" || true
  echo "${BUILD_ARGS:-}"
}
# A fresh database directory for a side, with levels 0..FROM-1 of REUSE in it.
fresh() {
  local d=$WORK/$1 from=$REUSE
  [ "$1" = base ] && [ -n "${BASE_REUSE:-}" ] && from=$BASE_REUSE
  rm -rf "$d"
  mkdir -p "$d"
  if [ "$FROM" -gt 0 ]; then
    for k in $(seq 0 $((FROM - 1))); do
      for f in $(printf "level-%02d.values level-%02d.depth" "$k" "$k"); do
        [ -f "$from/$f" ] || continue
        ln "$from/$f" "$d/$f" 2>/dev/null || cp "$from/$f" "$d/$f"
      done
    done
  fi
  echo "$d"
}
# Random playable boards of the built levels (47 seeds never occurs), one per line.
boards() {
  awk -v n="$1" -v hi="$TO" 'BEGIN {
    srand(7)
    for (i = 0; i < n; i++) {
      do s = int(rand() * (hi + 1)); while (s == 47)
      for (p = 0; p < 12; p++) pit[p] = 0
      for (k = 0; k < s; k++) pit[int(rand() * 12)]++
      line = pit[0]; for (p = 1; p < 12; p++) line = line " " pit[p]
      print line
    }
  }'
}
# `build --json` where the side's solver has it: a base from before it prints only the table,
# whose first three columns (level, positions, seconds or "kept") are read instead.
json_arg() { case "$("$(solver "$1")" build --help)" in *--json*) echo --json ;; esac; }
# "POSITIONS SECONDS" of the levels FROM..TO a build made, from its output FILE.
build_totals() {
  if grep -q '^{' "$1"; then
    built_totals "$1" "$FROM" "$TO"
  else
    awk -v a="$FROM" '$1 ~ /^[0-9]+$/ && $1 >= a && $3 != "kept" {p += $2; s += $3} END {printf "%d %.3f\n", p, s}' "$1"
  fi
}
median() { sort -g | awk '{a[NR] = $1} END {if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }

RESULTS=$WORK/results.txt
: > "$RESULTS"
[ "$BATCH" -gt 0 ] && boards "$BATCH" > "$WORK/boards.txt"
for run in $(seq 1 "$RUNS"); do
  for side in "${SIDES[@]}"; do
    d=$(fresh "$side")
    # shellcheck disable=SC2046
    "$(solver "$side")" build --db "$d" --max-stones "$TO" "${THREAD_ARGS[@]}" $(mode_args "$side") $(json_arg "$side") > "$WORK/$side.build.txt"
    read -r pos secs < <(build_totals "$WORK/$side.build.txt")
    echo "build $side $secs $pos" >> "$RESULTS"
    printf 'run %d %-15s build %s..%s: %9.1f s  %6.2f M positions/s\n' "$run" "$side" "$FROM" "$TO" "$secs" "$(awk -v p="$pos" -v s="$secs" 'BEGIN {print p / s / 1e6}')"
    if [ -n "${VERIFY:-}" ] && [ "$side" != new-low-memory ]; then
      start=$(date +%s.%N)
      "$(solver "$side")" verify --db "$d" --stones $(seq "$FROM" "$TO" | grep -vx 47) "${THREAD_ARGS[@]}" > /dev/null
      secs=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN {printf "%.3f", b - a}')
      echo "verify $side $secs $pos" >> "$RESULTS"
      printf 'run %d %-15s verify:         %9.1f s  %6.2f M positions/s\n' "$run" "$side" "$secs" "$(awk -v p="$pos" -v s="$secs" 'BEGIN {print p / s / 1e6}')"
    fi
    if [ "$BATCH" -gt 0 ] && [ "$side" != new-low-memory ]; then
      start=$(date +%s.%N)
      "$(probe "$side")" batch --db "$d" --json < "$WORK/boards.txt" > "$WORK/$side.batch.json"
      secs=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN {printf "%.3f", b - a}')
      echo "batch $side $secs $BATCH" >> "$RESULTS"
      printf 'run %d %-15s batch --json:   %9.1f s  %6.3f M lines/s\n' "$run" "$side" "$secs" "$(awk -v p="$BATCH" -v s="$secs" 'BEGIN {print p / s / 1e6}')"
    fi
  done
  # Every side must write the same tables and print the same answers.
  for side in "${SIDES[@]:1}"; do
    for k in $(seq "$FROM" "$TO"); do
      [ "$k" = 47 ] && continue
      f=$(printf "level-%02d.values" "$k")
      # Another table format (BASE_REUSE): the same values, compared entry by entry.
      cmp -s "$WORK/base/$f" "$WORK/$side/$f" \
        || { [ -n "${BASE_REUSE:-}" ] && "$NEW_SOLVER" compare "$WORK/base" "$WORK/$side" --stones "$k" > /dev/null; } \
        || { echo "MISMATCH: $f of $side differs from base" >&2; exit 1; }
      f=$(printf "level-%02d.depth" "$k")
      if [ -f "$WORK/base/$f" ] || [ -f "$WORK/$side/$f" ]; then
        cmp -s "$WORK/base/$f" "$WORK/$side/$f" || { echo "MISMATCH: $f of $side differs from base" >&2; exit 1; }
      fi
    done
    if [ "$BATCH" -gt 0 ] && [ "$side" != new-low-memory ]; then
      cmp -s "$WORK/base.batch.json" "$WORK/$side.batch.json" || { echo "MISMATCH: batch output of $side differs from base" >&2; exit 1; }
    fi
  done
done

echo "== medians of $RUNS runs (levels $FROM..$TO; tables and batch output identical across sides)"
printf '%-8s %-15s %10s %14s %10s %12s\n' what side seconds "per second" "vs base" "/ rand. read"
for what in build verify batch; do
  grep -q "^$what " "$RESULTS" || continue
  base_s=$(awk -v w="$what" '$1 == w && $2 == "base" {print $3}' "$RESULTS" | median)
  for side in "${SIDES[@]}"; do
    grep -q "^$what $side " "$RESULTS" || continue
    s=$(awk -v w="$what" -v x="$side" '$1 == w && $2 == x {print $3}' "$RESULTS" | median)
    n=$(awk -v w="$what" -v x="$side" '$1 == w && $2 == x {print $4; exit}' "$RESULTS")
    awk -v w="$what" -v x="$side" -v s="$s" -v n="$n" -v b="$base_s" -v l="$LIMIT" 'BEGIN {
      rate = n / s
      per = (w == "batch") ? "–" : sprintf("%.4f", rate / l)
      printf "%-8s %-15s %10.1f %14.0f %9.2fx %12s\n", w, x, s, rate, b / s, per
    }'
  done
done
if [ -n "${LOWMEM:-}" ]; then
  m=$(awk '$1 == "build" && $2 == "new" {print $3}' "$RESULTS" | median)
  l=$(awk '$1 == "build" && $2 == "new-low-memory" {print $3}' "$RESULTS" | median)
  echo "low-memory speed / in-memory speed (working tree): $(awk -v m="$m" -v l="$l" 'BEGIN {printf "%.2f", m / l}')"
fi
echo "(/ rand. read: positions per random byte read the memory serves, $LIMIT reads/s on this machine)"
