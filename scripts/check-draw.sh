#!/usr/bin/env bash
# See the 2002 result for yourself: build (or reuse) the database to MAX seeds with depth
# tables, verify every table, optionally compare it with the published VU release, print the
# value of every start position with k seeds per pit within reach together with a perfect
# line, and — below 48 — what the full solve would need. The last line says what was proven
# and what was only compared.
#
# Usage: scripts/check-draw.sh [MAX=24]        DB=dir (default ./awari-db), RULES=awari
#   DEPTH=0   values only (no depth tables, half the disk): verify --prove then computes each
#             level's depths in its check instead (0.25 bytes of RAM per position, the lower
#             levels streamed), so every level is still proven; but lines may stop short of
#             realising a win (they say so)
#   VU=dir    also compare every level with a directory of raw VU scores.N files (awari rules)
#   MEMORY=M  memory for the build's level in progress and verify's accumulators (e.g. 4.5G)
set -euo pipefail
MAX=${1:-24}
DB=${DB:-awari-db}
RULES=${RULES:-awari}
DEPTH=${DEPTH:-1}
cd "$(dirname "$0")/.."
. scripts/common.sh
cargo build --release -q -p awari-solver -p awari-probe
# Ask cargo where it puts binaries (CARGO_TARGET_DIR or a config may move them).
TARGET=$(target_dir)
SOLVER=$TARGET/release/awari-solver
PROBE=$TARGET/release/awari-probe
DEPTH_FLAG=()
[ "$DEPTH" = 0 ] || DEPTH_FLAG=(--depth)
MEMORY_FLAG=()
[ -z "${MEMORY:-}" ] || MEMORY_FLAG=(--memory "$MEMORY")

echo "== 1. build levels 0..$MAX of $DB$([ "$DEPTH" = 0 ] || echo " with depth tables") ($RULES rules)"
"$SOLVER" build --db "$DB" --max-stones "$MAX" --rules "$RULES" "${DEPTH_FLAG[@]}" "${MEMORY_FLAG[@]}" | tee /tmp/check-draw-build.$$
RATE=$(awk '/^total:/ { for (i = 1; i <= NF; i++) if ($i == "positions/s);") { gsub(/\(/, "", $(i-1)); print $(i-1) } }' /tmp/check-draw-build.$$)
rm -f /tmp/check-draw-build.$$

echo
echo "== 2. verify and prove every level (checksums, every entry from its children, every win and loss converting)"
"$SOLVER" verify --db "$DB" --prove "${MEMORY_FLAG[@]}" | tee /tmp/check-draw-verify.$$
PROVEN=$(grep -c '^level.*: ok' /tmp/check-draw-verify.$$ || true)
DEPTHS=$(grep -c '; proven:' /tmp/check-draw-verify.$$ || true)
rm -f /tmp/check-draw-verify.$$

COMPARED=
if [ -n "${VU:-}" ]; then
  echo
  echo "== 2b. compare with the VU release in $VU"
  VU_LEVELS=$(for n in $(seq 0 "$MAX"); do [ -f "$VU/scores.$n" ] && echo "$n"; done | tr '\n' ' ')
  if [ -z "$VU_LEVELS" ]; then
    echo "no scores.N files for levels 0..$MAX in $VU" >&2
    exit 1
  fi
  "$SOLVER" compare "$DB" "$VU" --stones $VU_LEVELS
  COMPARED=$(echo $VU_LEVELS | wc -w)
fi

echo
echo "== 3. start positions within reach"
STARTS=
for k in 1 2 3 4; do
  [ $((12 * k)) -le "$MAX" ] || break
  STARTS="$STARTS $k"
  board="$k $k $k $k $k $k $k $k $k $k $k $k"
  echo "-- $k seed(s) per pit: $board"
  "$PROBE" show --db "$DB" $board | grep -E '^(value|score):'
  "$PROBE" line --db "$DB" $board | tail -n +5
done

if [ "$MAX" -lt 48 ]; then
  echo
  echo "== 4. what building all 48 seeds would take on this machine"
  THREADS=$(nproc)
  if [ -n "$RATE" ] && awk -v r="$RATE" 'BEGIN { exit !(r > 0) }'; then
    PER_THREAD=$(awk -v r="$RATE" -v t="$THREADS" 'BEGIN { printf "%.0f", r / t }')
    echo "(speed measured by the build above: $RATE positions/s on $THREADS threads, with depth tables)"
  else
    PER_THREAD=4000000
    echo "(no level was built just now; assuming 4.0M positions/s per thread, plan's default: level 27 on the development machine)"
  fi
  echo "-- values only (levels that do not fit in memory use the low-memory builder):"
  "$SOLVER" plan --max-stones 48 --threads "$THREADS" --rate-per-thread "$PER_THREAD"
  echo "-- with depth tables (the depth pass after each level):"
  "$SOLVER" plan --max-stones 48 --depth --threads "$THREADS" --rate-per-thread "$PER_THREAD" | tail -n 2
  echo "Not started: levels marked 'does not fit' cannot be built in this machine's memory."
fi

echo
if [ "$DEPTHS" -eq "$PROVEN" ] && [ "$PROVEN" -gt 0 ]; then
  HOW="every value proven to be the game value (entries recomputed from their children, every win and loss converting)"
else
  HOW="every entry recomputed from its children and consistent ($DEPTHS of them proven; for the others wrong values on a cycle are not ruled out)"
fi
if [ -n "$COMPARED" ]; then
  VS="$COMPARED levels compared with the VU release: equal (compared, not proven by it)"
else
  VS="not compared with the VU release (VU=dir does)"
fi
echo "checked: levels 0..$MAX, $PROVEN tables: $HOW; starts with${STARTS:- no} seed(s) per pit valued; $VS"
