#!/usr/bin/env bash
# Distributed against threaded, on the same cores: builds levels 0..N once with one process of
# T threads (`build --threads T`) and once with R MPI ranks of T/R threads each
# (`mpirun -n R build --distributed`), alternately RUNS times, and prints the medians, their
# ratio, and the traffic between the ranks (bytes per position built, messages per rank per
# settling step). Tables are compared byte for byte.
#
# Needs MPI (see scripts/test-mpi.sh). Usage: scripts/bench-mpi.sh [N=24] [R=2] [T=2]
#   RUNS=1     runs of each side
#   WORK=DIR   where the databases go (default: a temporary directory, removed afterwards)
set -euo pipefail
N=${1:-24}
R=${2:-2}
T=${3:-$(nproc)}
RUNS=${RUNS:-1}
cd "$(dirname "$0")/.."
. scripts/common.sh
TARGET=$(target_dir)/mpi
CARGO_TARGET_DIR=$TARGET cargo build --release -q -p awari-solver --features mpi
SOLVER=$TARGET/release/awari-solver
WORK=${WORK:-}
if [ -z "$WORK" ]; then
  WORK=$(mktemp -d)
  trap 'rm -rf "$WORK"' EXIT
fi
mkdir -p "$WORK"
PER=$((T / R > 0 ? T / R : 1))
echo "== levels 0..$N: 1 process x $T threads against $R ranks x $PER threads ($(nproc) cores)"
for run in $(seq "$RUNS"); do
  rm -rf "$WORK/threads" "$WORK/ranks"
  "$SOLVER" build --threads "$T" --mode memory --db "$WORK/threads" --max-stones "$N" 2>/dev/null \
    | tee "$WORK/threads.txt" | grep '^total' | sed "s/^/run $run threads: /"
  mpirun --allow-run-as-root --oversubscribe --mca mpi_yield_when_idle 1 -n "$R" \
    "$SOLVER" build --distributed --threads "$PER" --db "$WORK/ranks" --max-stones "$N" 2>/dev/null \
    | tee "$WORK/ranks.txt" | grep -E '^(total|traffic)' | sed "s/^/run $run ranks:   /"
  for f in "$WORK"/threads/level-*.values; do
    cmp -s "$f" "$WORK/ranks/$(basename "$f")" || { echo "MISMATCH: $(basename "$f")" >&2; exit 1; }
  done
  awk '/^total/ {for (i = 1; i <= NF; i++) if ($i == "in") print $(i + 1)}' "$WORK/threads.txt" >> "$WORK/t.secs"
  awk '/^total/ {for (i = 1; i <= NF; i++) if ($i == "in") print $(i + 1)}' "$WORK/ranks.txt" >> "$WORK/r.secs"
done
median() { sort -n "$1" | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
t=$(median "$WORK/t.secs")
r=$(median "$WORK/r.secs")
echo "== medians of $RUNS run(s), tables identical"
echo "threaded:    $t s"
echo "distributed: $r s"
awk -v t="$t" -v r="$r" 'BEGIN {printf "distributed speed / threaded speed: %.2f\n", t / r}'
