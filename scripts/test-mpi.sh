#!/usr/bin/env bash
# The distributed build under a real MPI: `mpirun` with 1, 2, 3 and 4 ranks (oversubscribed)
# under awari and 3 ranks under abapa, grand slam and cross-wari, levels 0..MAX, compared byte for byte
# with the single-machine build; then one rank killed mid-level and the build rerun, to the
# same bytes.
#
# Needs MPI and libclang (Debian: apt-get install libopenmpi-dev openmpi-bin libclang-dev);
# .ci/run installs them. Builds the `mpi` feature into target/mpi.
#
# Usage: scripts/test-mpi.sh [MAX=16]
#   AWARI_PROFILE=release  the cargo profile to build with
#   MPI_TARGET_DIR=dir   where to build (default: target/mpi, apart from the plain build; .ci/run
#                        builds in target itself, with AWARI_PROFILE=test, reusing the tests' crates)
#   RANKS_ALL=1          1..4 ranks under every rule set
set -euo pipefail
trap 'echo "FAIL: scripts/test-mpi.sh line $LINENO: $BASH_COMMAND" >&2' ERR
MAX=${1:-16}
cd "$(dirname "$0")/.."
. scripts/common.sh
export CARGO_TARGET_DIR=${MPI_TARGET_DIR:-$(target_dir)/mpi}
cargo build --profile "$AWARI_PROFILE" -q -p awari-solver --features mpi
SOLVER=$(profile_dir)/awari-solver
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
# Root in CI; ranks yield while they wait, as they share the cores.
MPIRUN=(mpirun --allow-run-as-root --oversubscribe --mca mpi_yield_when_idle 1)
export OMPI_MCA_rmaps_base_oversubscribe=1

same() { # same DIR_A DIR_B: every level file of A equals B's
  local a=$1 b=$2 f
  for f in "$a"/level-*.values; do
    cmp -s "$f" "$b/$(basename "$f")" || { echo "FAIL: $(basename "$f") differs: $a $b" >&2; return 1; }
  done
}

# Awari with 1..4 ranks; the other rule sets with 3 (the rule set changes which moves there
# are, not how levels are cut among ranks: the solver's `distributed` tests build those rule
# sets over simulated ranks too). RANKS_ALL=1 runs every count under every rule set.
for rules in awari abapa grand-slam cross-wari; do
  "$SOLVER" build --db "$WORK/local-$rules" --max-stones "$MAX" --rules "$rules" > /dev/null 2>&1
  counts="1 2 3 4"
  [ "$rules" = awari ] || [ "${RANKS_ALL:-}" = 1 ] || counts=3
  for ranks in $counts; do
    # Granules of 2^12 positions, so that every level above 4 is cut among the ranks.
    d=$WORK/r$ranks-$rules
    "${MPIRUN[@]}" -n "$ranks" "$SOLVER" build --distributed --granule-shift 12 --threads 1 \
      --db "$d" --max-stones "$MAX" --rules "$rules" > "$WORK/log" 2>&1 \
      || { cat "$WORK/log" >&2; exit 1; }
    same "$WORK/local-$rules" "$d"
    echo "ok: $rules, $ranks ranks: levels 0..$MAX identical to the single-machine build"
    rm -rf "$d"
  done
done

# Each rank in low-memory mode (its slice's exits and values in a work file), 3 ranks.
d=$WORK/low
"${MPIRUN[@]}" -n 3 "$SOLVER" build --distributed --granule-shift 12 --threads 1 --mode low-memory \
  --memory 7M --db "$d" --max-stones "$MAX" > "$WORK/log" 2>&1 || { cat "$WORK/log" >&2; exit 1; }
same "$WORK/local-awari" "$d"
grep -q "low-memory" "$WORK/log" || { echo "FAIL: no level was built in low-memory mode" >&2; exit 1; }
echo "ok: awari, 3 ranks in low-memory mode: levels 0..$MAX identical"
rm -rf "$d"

# Kill one of 3 ranks while it builds level MAX+2, rerun, and compare.
TOP=$((MAX + 2))
"$SOLVER" build --db "$WORK/local-awari" --max-stones "$TOP" > /dev/null 2>&1
d=$WORK/killed
"${MPIRUN[@]}" -n 3 "$SOLVER" build --distributed --granule-shift 12 --threads 1 \
  --db "$d" --max-stones "$TOP" > "$WORK/log" 2>&1 &
RUN=$!
# Level TOP starts once level TOP-1 is in place; it takes seconds (its .tmp only appears when
# it is written, at its end), so kill a rank one second into it.
for _ in $(seq 1200); do
  [ -e "$d/level-$(printf %02d "$((TOP - 1))").values" ] && break
  sleep 0.1
done
sleep 1
# A rank's command line starts with the binary (mpirun's does not).
victim=$(pgrep -f "^$SOLVER build --distributed --granule-shift 12 --threads 1 --db $d " | tail -1 || true)
[ -n "$victim" ] || { echo "FAIL: no rank to kill (the job ended before level $TOP was under way)" >&2; exit 1; }
kill -9 "$victim"
if wait "$RUN"; then echo "FAIL: the job survived a killed rank" >&2; exit 1; fi
[ ! -e "$d/level-$(printf %02d "$TOP").values" ] || { echo "FAIL: level $TOP was finished" >&2; exit 1; }
"${MPIRUN[@]}" -n 3 "$SOLVER" build --distributed --granule-shift 12 --threads 1 \
  --db "$d" --max-stones "$TOP" > "$WORK/log" 2>&1 || { cat "$WORK/log" >&2; exit 1; }
same "$WORK/local-awari" "$d"
ls "$d" | grep -q '\.tmp$' && { echo "FAIL: temporary files left" >&2; exit 1; }
echo "ok: a rank killed during level $TOP; the rerun resumed to identical levels 0..$TOP"
