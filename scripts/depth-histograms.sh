#!/usr/bin/env bash
# The depths to conversion of every level of a database that has depth tables, into
# results/depth-RULES.json: one line per level, each the output of `awari-solver stats
# --stones N --depth --json` (the largest depth, the won and lost positions per depth, the
# draws, and the first position of the largest depth), so the file diffs level by level.
#
# Usage: scripts/depth-histograms.sh DB [MAX=every level with a depth table]
#   Levels already in the results file are kept (a level's depths never change); the file
#   is rewritten in level order.
set -euo pipefail
DB=${1:?usage: scripts/depth-histograms.sh DB [MAX]}
cd "$(dirname "$0")/.."
. scripts/common.sh
solver_bin
FIRST=$DB/level-00.values
[ -f "$FIRST" ] || FIRST=$DB/level-00.cvalues
if [ -f "$FIRST" ]; then
  RULES=$(od -An -tu1 -j12 -N1 "$FIRST" | tr -d ' ')
else
  RULES=0 # raw VU scores.N files: awari rules
fi
case "$RULES" in 0) RULES=awari ;; 1) RULES=abapa ;; 2) RULES=grand-slam ;; 3) RULES=cross-wari ;; *) echo "cannot read the rule set of $FIRST" >&2; exit 1 ;; esac
OUT=results/depth-$RULES.json
mkdir -p results
MAX=${2:-48}
declare -A have
if [ -f "$OUT" ]; then
  while IFS= read -r line; do
    n=$(sed -n 's/^ *{"stones":\([0-9]*\),.*/\1/p' <<<"$line")
    [ -n "$n" ] && have[$n]=$(sed 's/^ *//; s/,$//' <<<"$line")
  done < "$OUT"
fi
for n in $(seq 0 "$MAX"); do
  [ "$n" = 47 ] && continue
  [ -f "$DB/$(printf 'level-%02d.depth' "$n")" ] || [ -f "$DB/$(printf 'level-%02d.cdepth' "$n")" ] || continue
  if [ -z "${have[$n]:-}" ]; then
    echo "level $n ..." >&2
    have[$n]=$("$BIN" stats --db "$DB" --stones "$n" --depth --json)
  fi
done
{
  echo "{\"rules\":\"$RULES\",\"counted\":\"indexed positions\",\"depth\":\"plies to conversion (a capture or the end of the game) with perfect play\",\"levels\":["
  first=1
  for n in $(printf '%s\n' "${!have[@]}" | sort -n); do
    [ $first = 1 ] || echo ","
    printf ' %s' "${have[$n]}"
    first=0
  done
  echo
  echo "]}"
} > "$OUT.tmp"
mv "$OUT.tmp" "$OUT"
echo "$OUT: levels $(printf '%s\n' "${!have[@]}" | sort -n | tr '\n' ' ')" >&2
