#!/usr/bin/env bash
# Build benchmark: builds levels 0..N into a fresh directory with every core, then levels
# 0..M with one thread, and prints per level: positions, seconds, positions/s, peak RSS and
# peak RSS per position (from the builder's own summary, `build --json`: a JSON object a level),
# the overall rate, and the speed-up.
#
# Usage: scripts/bench.sh [N=24] [M=N] [RULES=awari]
#   BENCH_DIR=/path  where to build (default: a fresh temporary directory, removed afterwards)
#   MEMORY=2G        memory budget for the all-cores build (levels that do not fit it take the
#                    low-memory algorithm); MODE=memory|low-memory forces one algorithm
#   REUSE=/db K      start the all-cores build from levels 0..K of an earlier database
#                    (hard links), so only K+1..N are built and timed
#   SQUEEZE=G        a helper process holds G GiB of RAM, resident and touched, for the whole
#                    all-cores build, so the page cache cannot keep the lower levels (e.g.
#                    SQUEEZE=19 on a 24 GB machine leaves about 4 GiB: level 28's 2.8 GiB of
#                    state and ~1/6 of its 3.7 GB of lower levels, as level 48's 379 GiB of
#                    state leaves ~1/6 of its lower levels cached on a 512 GB machine)
#   DROP_CACHES=1    drop the page cache before the all-cores build (needs root)
#   SOLVER=/path     benchmark this awari-solver binary instead of building the checkout's
# M=0 skips the one-thread comparison. The all-cores build also reports its major page faults
# and the bytes it read from storage (GNU time's %F and %I), besides the builder's own per-level
# figures (exits seconds, bytes read from the lower levels and their ratio to the lower levels).
set -euo pipefail
N=${1:-24}
M=${2:-$N}
RULES=${3:-awari}
cd "$(dirname "$0")/.."
. scripts/common.sh
solver_bin
BASE=${BENCH_DIR:-$(mktemp -d)}
mkdir -p "$BASE"
trap '[ -z "${BENCH_DIR:-}" ] && rm -rf "$BASE"' EXIT

echo "== machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo), $(date -u +%Y-%m-%dT%H:%MZ)"
echo "== levels 0..$N, $RULES rules, all cores"
rm -rf "$BASE/all"
mkdir -p "$BASE/all"
if [ -n "${REUSE:-}" ]; then
  set -- $REUSE
  for k in $(seq 0 "$2"); do
    f=$(printf "level-%02d.values" "$k")
    if [ -f "$1/$f" ]; then ln "$1/$f" "$BASE/all/$f" 2>/dev/null || cp "$1/$f" "$BASE/all/$f"; fi
  done
  echo "(levels 0..$2 reused from $1)"
fi
EXTRA=()
[ -n "${MEMORY:-}" ] && EXTRA+=(--memory "$MEMORY")
[ -n "${MODE:-}" ] && EXTRA+=(--mode "$MODE")
if [ -n "${SQUEEZE:-}" ]; then
  trap 'squeeze_stop; [ -z "${BENCH_DIR:-}" ] && rm -rf "$BASE"' EXIT
  squeeze_start "$SQUEEZE" "$BASE"
fi
if [ -n "${DROP_CACHES:-}" ]; then
  sync; echo 3 > /proc/sys/vm/drop_caches || echo "(could not drop the page cache)"
fi
/usr/bin/time -f "process peak RSS %M KiB, wall %e s, major faults %F, read from storage %I x 512 B" "$BIN" build --db "$BASE/all" --max-stones "$N" --rules "$RULES" "${EXTRA[@]}" --json | tee "$BASE/all.txt"
squeeze_stop
T_ALL=$(built_totals "$BASE/all.txt" 0 "$M" | cut -d' ' -f2)

[ "$M" -gt 0 ] || exit 0
echo "== levels 0..$M, $RULES rules, 1 thread"
rm -rf "$BASE/one"
"$BIN" build --db "$BASE/one" --max-stones "$M" --rules "$RULES" --threads 1 --json | tee "$BASE/one.txt"
T_ONE=$(built_totals "$BASE/one.txt" | cut -d' ' -f2)

for n in $(seq 0 "$M"); do
  [ "$n" = 47 ] && continue
  f=$(printf "level-%02d.values" "$n")
  cmp -s "$BASE/all/$f" "$BASE/one/$f" || { echo "MISMATCH: $f differs between thread counts"; exit 1; }
done
echo "== levels 0..$M: $(nproc) threads ${T_ALL} s, 1 thread ${T_ONE} s, speed-up $(awk -v a="$T_ONE" -v b="$T_ALL" 'BEGIN {printf "%.2f", a / b}')x; tables byte-identical"
