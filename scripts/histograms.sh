#!/usr/bin/env bash
# Value histograms of every level of a database, as published tables count them (all
# C(N+11,11) boards with N seeds), into results/histograms-RULES.json: one line per level,
# each the output of `awari-solver stats --stones N --all-configurations --json`, so the file
# diffs level by level and anyone can compare it with the published tables.
#
# Usage: scripts/histograms.sh DB [MAX=every level present]   SOLVER=path: that binary
#   Levels already in the results file are kept (a level's histogram never changes); the
#   file is rewritten in level order.
set -euo pipefail
DB=${1:?usage: scripts/histograms.sh DB [MAX]}
cd "$(dirname "$0")/.."
. scripts/common.sh
solver_bin
SOLVER=$BIN
# The rule set is byte 12 of a plain or a compressed table.
FIRST=$DB/level-00.values
[ -f "$FIRST" ] || FIRST=$DB/level-00.cvalues
RULES=$(od -An -tu1 -j12 -N1 "$FIRST" | tr -d ' ')
case "$RULES" in 0) RULES=awari ;; 1) RULES=abapa ;; 2) RULES=grand-slam ;; 3) RULES=cross-wari ;; *) echo "cannot read the rule set of $FIRST" >&2; exit 1 ;; esac
OUT=results/histograms-$RULES.json
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
  [ -f "$DB/$(printf 'level-%02d.values' "$n")" ] || [ -f "$DB/$(printf 'level-%02d.cvalues' "$n")" ] || continue
  if [ -z "${have[$n]:-}" ]; then
    echo "level $n ..." >&2
    have[$n]=$("$SOLVER" stats --db "$DB" --stones "$n" --all-configurations --json)
  fi
done
{
  echo "{\"rules\":\"$RULES\",\"counted\":\"all configurations\",\"levels\":["
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
