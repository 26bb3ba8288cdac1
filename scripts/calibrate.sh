#!/usr/bin/env bash
# Calibrate `awari-solver plan` to this machine: measures the build speed of one level in each
# level algorithm, the depth pass and `verify --prove`, the disk traffic per position of the
# out-of-core algorithms, and the disk's sequential bandwidth, and writes them to OUT, which
# `awari-solver plan --calibration OUT` reads instead of its defaults (the 16-core machine's).
#
# Levels 0..LEVEL-1 are built in memory first (not measured), then level LEVEL:
#   - in memory (`build --mode memory`);
#   - low-memory and two-bit (`build --mode low-memory|two-bit`, on hard links of 0..LEVEL-1),
#     each with --memory squeezed to the exit-pass structure that `plan` gives the largest level
#     it builds that way in the big plan (PLAN: by default level 43, low-memory with 4 exit
#     passes, and level 48, two-bit with 4 exit passes, on 64 GiB): the least memory with
#     which LEVEL has as few exit passes. Two-bit levels below 25 seeds cannot go under 5,
#     whatever the memory: an exit bucket holds at most 0.32 bytes per position less the
#     phase's fixed 24 MiB, or the states' 0.25 bytes per position, in whole chunks. Each
#     table is compared with the in-memory one (cmp);
#   - the depth pass (`depth`, compressed depth table as `build --depth` writes it above 20
#     seeds) and `verify --prove` (the depth pass with the proof) of the same level.
# Speeds and bytes per position come from the commands' own summary lines (`build --json`'s
# positions/s, peak anonymous memory per position, and bytes read and written per position);
# rates are divided by the threads used. The disk: dd writes a file of DD_GIB GiB and reads it
# back, both with direct I/O (oflag=direct, iflag=direct: no page cache); where the file
# system refuses direct I/O, the write ends with fdatasync and the file's cached pages are
# dropped (posix_fadvise) before it is read. The output says which. The script prints one line
# per measurement, then OUT, then the last lines of the big plan (its total and assumptions)
# planned with OUT.
#
# OUT is a JSON object (see `Calibration` in solver/src/report/plan.rs and docs/whole-game.md):
#   rate_per_thread {memory, low_memory, two_bit, depth, verify}: positions/s per thread
#   io_per_position {low_memory, two_bit}: bytes read + written per position of level LEVEL
#   exit_passes {low_memory, two_bit}: the passes over the lower levels those bytes include
#   level: LEVEL; disk_bandwidth {write, read}: bytes/s; plus threads, seconds, peak memory
#   per position and a description of the machine, which plan does not use.
#
# Usage: scripts/calibrate.sh [OUT=calibration.json]
#   LEVEL=22       the level measured (levels 0..LEVEL-1 are built first)
#   THREADS=nproc  threads for every command
#   PLAN="--max-stones 48 --memory 64G --threads 16"   the big plan whose structure is imitated
#   DD_GIB=4       size of the disk bandwidth test file (0: skip the disk test)
#   WORK=/path     where to build and test the disk (default: a temporary directory in
#                  $TMPDIR or /tmp, removed afterwards); put it on the database's disk
#   REUSE=/db      take levels 0..LEVEL-1 from this database (hard links) instead of building
#   SOLVER=/path   calibrate this awari-solver binary instead of building the checkout's
# How long it takes: docs/performance.md (about 14 minutes on 2 busy cores).
set -euo pipefail
OUT=${1:-calibration.json}
case $OUT in /*) ;; *) OUT=$PWD/$OUT ;; esac
# Paths given relative to where the script was started.
[ -n "${REUSE:-}" ] && REUSE=$(realpath "$REUSE")
[ -n "${WORK:-}" ] && WORK=$(realpath -m "$WORK")
cd "$(dirname "$0")/.."
. scripts/common.sh
solver_bin
L=${LEVEL:-22}
T=${THREADS:-$(nproc)}
read -r -a PLAN_ARGS <<< "${PLAN:---max-stones 48 --memory 64G --threads 16}"
DD_GIB=${DD_GIB:-4}
BASE=${WORK:-$(mktemp -d)}
mkdir -p "$BASE"
trap '[ -z "${WORK:-}" ] && rm -rf "$BASE"' EXIT
START=$(date +%s)
elapsed() { echo "$(($(date +%s) - START)) s"; }
SIZE=$(plan_level "$BIN" "$L" 1T "$T" | awk '{print $4}')
CPU=$(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo | tr -d '"\\')
MACHINE="$(nproc) cores ($CPU), $(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo), load average $(cut -d' ' -f1 /proc/loadavg) at the start"
echo "== machine: $MACHINE; $T threads; level $L ($SIZE positions)"

# The exit-pass structures of the big plan, imitated at level L.
declare -A PASSES MEM
while read -r mode passes level positions; do
  [ "$mode" = memory ] && continue
  read -r bytes got gotp <<< "$(squeeze_memory "$BIN" "$L" "$T" "$mode" "$passes")"
  PASSES[$mode]=$gotp
  MEM[$mode]=$bytes
  echo "== plan ${PLAN_ARGS[*]}: level $level in $mode mode, $passes exit pass(es); level $L: --memory $bytes ($(awk -v b="$bytes" -v s="$SIZE" 'BEGIN {printf "%.2f", b / s}') B/pos) gives $gotp"
done < <(big_plan "$BIN" "${PLAN_ARGS[@]}")
for mode in low-memory two-bit; do
  [ -n "${MEM[$mode]:-}" ] && continue
  # The big plan does not use this mode: its least memory at level L.
  read -r bytes got gotp <<< "$(squeeze_memory "$BIN" "$L" "$T" "$mode" 1000)"
  PASSES[$mode]=$gotp
  MEM[$mode]=$bytes
  echo "== the big plan has no $mode level; level $L: its least memory, $bytes bytes, $gotp exit passes"
done

echo "== levels 0..$((L - 1)) in memory ($(elapsed))"
if [ -n "${REUSE:-}" ]; then
  link_levels "$REUSE" "$BASE/memory" "$((L - 1))"
fi
run() { # run NAME ARGS...: the command's stdout to NAME.txt, its stderr to NAME.err (shown if it fails)
  local name=$1
  shift
  "$@" > "$BASE/$name.txt" 2> "$BASE/$name.err" || { cat "$BASE/$name.txt" "$BASE/$name.err"; echo "FAILED: $*"; exit 1; }
}
run base "$BIN" build --db "$BASE/memory" --max-stones "$((L - 1))" --threads "$T" --mode memory
grep '^total:' "$BASE/base.txt"

# One line per measurement: name seconds positions/s B/pos [io B/pos] [passes].
RESULTS=$BASE/results.txt
: > "$RESULTS"
TABLE=$(printf "level-%02d.values" "$L")
for mode in memory low-memory two-bit; do
  echo "== level $L, $mode ($(elapsed))"
  dir=$BASE/$mode
  [ "$mode" = memory ] || link_levels "$BASE/memory" "$dir" "$((L - 1))"
  args=(build --db "$dir" --max-stones "$L" --threads "$T" --mode "$mode" --json)
  [ "$mode" = memory ] || args+=(--memory "${MEM[$mode]}")
  run "$mode" "$BIN" "${args[@]}"
  level_line "$BASE/$mode.txt" "$L"
  read -r secs rate anon r w _ <<< "$(summary_row "$BASE/$mode.txt" "$L")"
  echo "$mode $secs $rate $anon $(awk -v r="$r" -v w="$w" 'BEGIN {print r + w}') ${PASSES[$mode]:-1}" >> "$RESULTS"
  if [ "$mode" != memory ]; then
    cmp "$BASE/memory/$TABLE" "$dir/$TABLE" || { echo "level $L: the $mode table DIFFERS from the in-memory one"; exit 1; }
  fi
done

echo "== level $L, depth pass ($(elapsed))"
run depth "$BIN" depth --db "$BASE/two-bit" --stones "$L" --threads "$T"
cat "$BASE/depth.txt"
secs=$(sed -n 's/.* positions in \([0-9.]*\) s .*/\1/p' "$BASE/depth.txt")
anon=$(grep -o 'peak anon [^(]*([0-9.]* B/pos)' "$BASE/depth.txt" | grep -o '[0-9.]* B/pos' | cut -d' ' -f1)
echo "depth $secs $(awk -v s="$SIZE" -v t="$secs" 'BEGIN {printf "%.0f", s / t}') ${anon:-–}" >> "$RESULTS"

echo "== level $L, verify --prove ($(elapsed))"
run verify "$BIN" verify --db "$BASE/memory" --stones "$L" --prove --threads "$T"
cat "$BASE/verify.txt"
grep -q "^level *$L: ok" "$BASE/verify.txt" || { echo "verify --prove of level $L failed"; exit 1; }
secs=$(grep -o '; [0-9.]* s, ' "$BASE/verify.txt" | head -1 | tr -dc '0-9.')
anon=$(grep -o 'peak anon [^(]*([0-9.]* B/pos)' "$BASE/verify.txt" | grep -o '[0-9.]* B/pos' | cut -d' ' -f1)
echo "verify $secs $(awk -v s="$SIZE" -v t="$secs" 'BEGIN {printf "%.0f", s / t}') ${anon:-–}" >> "$RESULTS"

WRITE=
READ=
if [ "$DD_GIB" != 0 ]; then
  echo "== disk: dd, $DD_GIB GiB in $BASE ($(elapsed))"
  rm -rf "$BASE"/memory "$BASE"/low-memory "$BASE"/two-bit
  f=$BASE/dd.tmp
  count=$((DD_GIB * 64))
  rate_of() { awk '/copied/ {printf "%.0f", $1 / $(NF - 3)}'; }
  if WRITE=$(dd if=/dev/zero of="$f" bs=16M count="$count" oflag=direct conv=fdatasync 2>&1 | rate_of) && [ -n "$WRITE" ]; then
    HOW="direct I/O (dd oflag=direct, then iflag=direct)"
    READ=$(dd if="$f" of=/dev/null bs=16M iflag=direct 2>&1 | rate_of)
  else
    HOW="buffered write ending with fdatasync, the cache dropped (posix_fadvise) before the read"
    WRITE=$(dd if=/dev/zero of="$f" bs=16M count="$count" conv=fdatasync 2>&1 | rate_of)
    evict_cache "$f"
    READ=$(dd if="$f" of=/dev/null bs=16M 2>&1 | rate_of)
  fi
  rm -f "$f"
  echo "disk: write $(awk -v b="$WRITE" 'BEGIN {printf "%.0f", b / 1e6}') MB/s, read $(awk -v b="$READ" 'BEGIN {printf "%.0f", b / 1e6}') MB/s, $HOW"
  MACHINE="$MACHINE; disk by $HOW"
fi

echo "== measured (level $L, $T threads; rates per thread are positions/s divided by $T)"
awk -v t="$T" '{
  printf "%-10s %8.2f s  %12.0f positions/s  %6.3f M/s per thread  peak anon %s B/pos", $1, $2, $3, $3 / t / 1e6, $4
  if (NF >= 6) printf "  I/O %.2f B/pos in %d exit pass(es)", $5, $6
  printf "\n"
}' "$RESULTS"
get() { awk -v m="$1" -v f="$2" '$1 == m {print $f}' "$RESULTS"; }
per_thread() { awk -v r="$(get "$1" 3)" -v t="$T" 'BEGIN {printf "%.6g", r / t}'; }
{
  echo "{"
  echo "  \"machine\": \"$MACHINE\","
  echo "  \"threads\": $T,"
  echo "  \"level\": $L,"
  echo "  \"rate_per_thread\": {\"memory\": $(per_thread memory), \"low_memory\": $(per_thread low-memory), \"two_bit\": $(per_thread two-bit), \"depth\": $(per_thread depth), \"verify\": $(per_thread verify)},"
  echo "  \"io_per_position\": {\"low_memory\": $(get low-memory 5), \"two_bit\": $(get two-bit 5)},"
  echo "  \"exit_passes\": {\"low_memory\": $(get low-memory 6), \"two_bit\": $(get two-bit 6)},"
  [ -n "$WRITE" ] && echo "  \"disk_bandwidth\": {\"write\": $WRITE, \"read\": $READ},"
  echo "  \"seconds\": {\"memory\": $(get memory 2), \"low_memory\": $(get low-memory 2), \"two_bit\": $(get two-bit 2), \"depth\": $(get depth 2), \"verify\": $(get verify 2)},"
  anon() { local a; a=$(get "$1" 4); [ "$a" = – ] && a=null; echo "$a"; }
  echo "  \"peak_bytes_per_position\": {\"memory\": $(anon memory), \"low_memory\": $(anon low-memory), \"two_bit\": $(anon two-bit), \"depth\": $(anon depth), \"verify\": $(anon verify)}"
  echo "}"
} > "$OUT"
echo "== wrote $OUT ($(elapsed))"
cat "$OUT"
echo "== plan ${PLAN_ARGS[*]} --calibration $OUT:"
"$BIN" plan "${PLAN_ARGS[@]}" --disk 1000T --db /nonexistent/awari-plan --calibration "$OUT" | tail -n 4
