#!/usr/bin/env bash
# What a kill costs a resumable level build: level N is built on levels 0..N-1 of an existing
# database (hard links, no copy) by each of MODES, once whole, then again killed (SIGKILL) at
# KILL_AT of the whole build's time and run once more to its end. Prints per mode: the whole
# build's seconds; where the second run was killed and where the third resumed; the third run's
# seconds and, for low-memory, how it restored its states (loaded as the checkpoint saved them,
# or rebuilt from the work file where they were not saved) and in how long (in memory: the
# saved state loaded);
# so the time a kill lost (killed run + resumed run − whole build); and whether the resumed
# table is the whole build's, byte for byte. A checkpoint is taken every CHECKPOINT seconds
# (the default 300 is longer than a small level takes).
#
# Usage: scripts/bench-resume.sh N DB [KILL_AT=0.6]
#   MODES="low-memory two-bit"  the algorithms (also: memory)
#   MEMORY=SIZE      --memory of every build (default: 0.9 bytes a position for low-memory,
#                    0.45 for two-bit, whose least is above 0.33 on small levels, 2.2 in memory)
#   CHECKPOINT=5     AWARI_CHECKPOINT_SECONDS of the killed run
#   BENCH_DIR=/path  where to work (default: a temporary directory next to DB, removed after)
#   SOLVER=/path     this awari-solver binary instead of the checkout's
set -euo pipefail
N=${1:?level}
DB=${2:?database directory holding levels 0..N-1}
KILL_AT=${3:-0.6}
MODES=${MODES:-low-memory two-bit}
CHECKPOINT=${CHECKPOINT:-5}
cd "$(dirname "$0")/.."
. scripts/common.sh
solver_bin
BASE=${BENCH_DIR:-$(mktemp -d -p "$(dirname "$(realpath "$DB")")" bench-resume.XXXXXX)}
mkdir -p "$BASE"
trap '[ -z "${BENCH_DIR:-}" ] && rm -rf "$BASE"' EXIT
SIZE=$("$BIN" plan --max-stones "$N" --memory 1T --disk 100T --db "$BASE/none" | awk -v n="$N" '$1 == n {print $2}')
echo "== machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo), $(date -u +%Y-%m-%dT%H:%MZ)"
echo "== level $N ($SIZE positions) on levels 0..$((N - 1)) of $DB; killed at $KILL_AT of the whole build"
prepare() { link_lower_levels "$DB" "$BASE/$1" "$N"; }
table() { echo "$BASE/$1/$(printf 'level-%02d.values' "$N")"; }
now() { date +%s.%N; }
for mode in $MODES; do
  case $mode in
    low-memory) per=0.9 ;;
    two-bit) per=0.45 ;;
    memory) per=2.2 ;;
    *) echo "bench-resume.sh: $mode does not resume" >&2; exit 2 ;;
  esac
  mem=${MEMORY:-$(awk -v s="$SIZE" -v b="$per" 'BEGIN {printf "%d", s * b}')}
  args=(build --max-stones "$N" --mode "$mode" --memory "$mem" --db)
  prepare "$mode-whole"
  t0=$(now)
  "$BIN" "${args[@]}" "$BASE/$mode-whole" > /dev/null 2>&1
  whole=$(awk -v a="$t0" -v b="$(now)" 'BEGIN {printf "%.1f", b - a}')
  prepare "$mode-killed"
  wait_s=$(awk -v w="$whole" -v k="$KILL_AT" 'BEGIN {printf "%.1f", w * k}')
  AWARI_CHECKPOINT_SECONDS=$CHECKPOINT "$BIN" "${args[@]}" "$BASE/$mode-killed" > /dev/null 2>&1 &
  job=$!
  sleep "$wait_s"
  kill -KILL "$job" 2> /dev/null || { echo "$mode: the build ended before the kill"; continue; }
  wait "$job" 2> /dev/null || true
  t0=$(now)
  AWARI_TIMINGS=1 "$BIN" "${args[@]}" "$BASE/$mode-killed" > "$BASE/$mode.out" 2> "$BASE/$mode.err"
  resumed=$(awk -v a="$t0" -v b="$(now)" 'BEGIN {printf "%.1f", b - a}')
  at=$(sed -n 's/.*resumed at \(.*\) (.*/\1/p' "$BASE/$mode.out" | head -1)
  rebuild=$(sed -n 's/.*states \(loaded after\|rebuilt before\) step [0-9]* in \([0-9.]*\) s.*/\1: \2 s/p' "$BASE/$mode.err" | head -1)
  [ "$mode" = memory ] && rebuild=$(sed -n 's/.*state loaded at step [0-9]* in \([0-9.]*\) s.*/loaded: \1 s/p' "$BASE/$mode.err" | head -1)
  lost=$(awk -v w="$whole" -v k="$wait_s" -v r="$resumed" 'BEGIN {printf "%.1f", k + r - w}')
  same=DIFFERS
  cmp -s "$(table "$mode-whole")" "$(table "$mode-killed")" && same=identical
  echo "$mode: whole ${whole} s; killed after ${wait_s} s, resumed at ${at:-the start} in ${resumed} s${rebuild:+ (states $rebuild)}; lost to the kill ${lost} s ($(awk -v l="$lost" -v w="$whole" 'BEGIN {printf "%.2f", l / w}') of the whole); table $same"
  [ "$same" = identical ] || exit 1
done
