#!/usr/bin/env bash
# Two rule sets side by side, in one run on one machine: the same levels built under each,
# alternately, and each level's positions per second compared.
#
# Usage: scripts/bench-rules.sh [LEVELS=18..20] [A=awari] [B=cross-wari]
#   LEVELS   FROM..TO: levels 0..FROM-1 are built once per rule set, then every level
#            FROM..TO is built RUNS times under each rule set, A and B alternately (each run
#            removes the level and builds it again on the same lower levels)
#   RUNS=3   runs of each rule set per level
#   THREADS=T worker threads (default: every core)
#   WORK=DIR where the databases go (default: a fresh temporary directory, removed afterwards)
#   SOLVER=path  an awari-solver binary (default: build the checkout's)
# Prints every run (seconds, positions/s, peak memory per position: anonymous memory, as the
# build summary counts it), then per level the median positions/s of each rule set and their
# ratio B/A.
set -euo pipefail
LEVELS=${1:-18..20}
A=${2:-awari}
B=${3:-cross-wari}
RUNS=${RUNS:-3}
FROM=${LEVELS%..*}
TO=${LEVELS#*..}
cd "$(dirname "$0")/.."
. scripts/common.sh
solver_bin
THREAD_FLAG=()
[ -z "${THREADS:-}" ] || THREAD_FLAG=(--threads "$THREADS")
if [ -n "${WORK:-}" ]; then
  mkdir -p "$WORK"
else
  WORK=$(mktemp -d)
  trap 'rm -rf "$WORK"' EXIT
fi
for r in "$A" "$B"; do
  "$BIN" build --db "$WORK/$r" --max-stones $((FROM - 1)) --rules "$r" "${THREAD_FLAG[@]}" >/dev/null 2>&1
done
echo "levels $FROM..$TO, $RUNS runs each, $A against $B, $(nproc) cores${THREADS:+, $THREADS threads}"
printf '%-11s %5s %4s %9s %12s %9s\n' rules level run seconds positions/s 'anon B/pos'
declare -A rates
for n in $(seq "$FROM" "$TO"); do
  [ "$n" = 47 ] && continue
  for k in $(seq 1 "$RUNS"); do
    for r in "$A" "$B"; do
      rm -f "$WORK/$r/$(printf 'level-%02d.values' "$n")"
      row=$("$BIN" build --db "$WORK/$r" --max-stones "$n" --rules "$r" "${THREAD_FLAG[@]}" --json 2>/dev/null |
        level_fields - "$n" seconds:.2f positions_per_second:.0f peak_anon_bytes_per_position:.2f)
      read -r secs rate anon <<<"$row"
      printf '%-11s %5s %4s %9s %12s %9s\n' "$r" "$n" "$k" "$secs" "$rate" "$anon"
      rates[$r.$n]="${rates[$r.$n]:-} $rate"
    done
  done
done
median() { tr ' ' '\n' | grep -v '^$' | sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
echo
printf '%5s %14s %14s %8s\n' level "$A pos/s" "$B pos/s" "$B/$A"
for n in $(seq "$FROM" "$TO"); do
  [ "$n" = 47 ] && continue
  a=$(median <<<"${rates[$A.$n]}")
  b=$(median <<<"${rates[$B.$n]}")
  awk -v n="$n" -v a="$a" -v b="$b" 'BEGIN { printf "%5d %14.0f %14.0f %8.2f\n", n, a, b, b / a }'
done
