#!/usr/bin/env bash
# The published-comparable results of a database, one line per level so that the files diff
# level by level:
#   - results/histograms-RULES.json: the value histogram of every level, as published tables
#     count them (all C(N+11,11) boards with N seeds), each line the output of
#     `awari-solver stats --stones N --all-configurations --json`;
#   - results/depth-RULES.json: the depths to conversion of every level that has a depth table
#     (the largest depth, the won and lost positions per depth, the draws, the first position
#     of the largest depth), each line `awari-solver stats --stones N --depth --json`.
#
# Usage: scripts/histograms.sh DB [MAX=every level present]   SOLVER=path: that binary
#   ONLY=values|depth   write one of the two files
#   Levels already in a results file are kept (a level's histogram never changes); the files
#   are rewritten in level order after each level computed, so a stopped run keeps its work.
#   CHECK=1   write nothing: recompute each level of DB that a results file holds and compare
#             (a rebuilt database against the committed results); exits 1 if one differs
set -euo pipefail
DB=${1:?usage: scripts/histograms.sh DB [MAX]}
MAX=${2:-48}
ONLY=${ONLY:-}
CHECK=${CHECK:-0}
DIFFERS=0
cd "$(dirname "$0")/.."
. scripts/common.sh
solver_bin
# The rule set is byte 12 of a plain or a compressed table; raw VU scores.N files are awari.
FIRST=$DB/level-00.values
[ -f "$FIRST" ] || FIRST=$DB/level-00.cvalues
if [ -f "$FIRST" ]; then
  RULES=$(od -An -tu1 -j12 -N1 "$FIRST" | tr -d ' ')
else
  RULES=0
fi
case "$RULES" in 0) RULES=awari ;; 1) RULES=abapa ;; 2) RULES=grand-slam ;; 3) RULES=cross-wari ;; *) echo "cannot read the rule set of $FIRST" >&2; exit 1 ;; esac
mkdir -p results

# collect OUT HEAD EXT1 EXT2 STATS-ARGS...: the levels of DB with a file level-NN.EXT1 or
# .EXT2, each line kept from OUT or computed by `stats --stones N STATS-ARGS`, written to OUT
# under the JSON head HEAD.
collect() {
  local out=$1 head=$2 ext1=$3 ext2=$4
  shift 4
  local -A have=()
  local line n first got same=()
  if [ -f "$out" ]; then
    while IFS= read -r line; do
      n=$(sed -n 's/^ *{"stones":\([0-9]*\),.*/\1/p' <<<"$line")
      [ -n "$n" ] && have[$n]=$(sed 's/^ *//; s/,$//' <<<"$line")
    done < "$out"
  fi
  # The file as it stands, rewritten after each level computed: a stopped run keeps those.
  write_out() {
    {
      echo "{\"rules\":\"$RULES\",$head,\"levels\":["
      first=1
      for n in $(printf '%s\n' "${!have[@]}" | sort -n); do
        [ $first = 1 ] || echo ","
        printf ' %s' "${have[$n]}"
        first=0
      done
      echo
      echo "]}"
    } > "$out.tmp"
    mv "$out.tmp" "$out"
  }
  for n in $(seq 0 "$MAX"); do
    [ "$n" = 47 ] && continue
    [ -f "$DB/$(printf "level-%02d.$ext1" "$n")" ] || [ -f "$DB/$(printf "level-%02d.$ext2" "$n")" ] || continue
    if [ "$CHECK" = 1 ]; then
      if [ -z "${have[$n]:-}" ]; then
        echo "$out: level $n not in the file, not checked" >&2
        continue
      fi
      got=$("$BIN" stats --db "$DB" --stones "$n" "$@" --json) # a failed stats stops the script
      if [ "$got" = "${have[$n]}" ]; then
        same+=("$n")
      else
        echo "$out: level $n DIFFERS"
        DIFFERS=1
      fi
    elif [ -z "${have[$n]:-}" ]; then
      echo "$out: level $n ..." >&2
      have[$n]=$("$BIN" stats --db "$DB" --stones "$n" "$@" --json)
      write_out
    fi
  done
  if [ "$CHECK" = 1 ]; then
    echo "$out: the same: levels ${same[*]:-none}"
    return
  fi
  if [ ${#have[@]} = 0 ]; then
    echo "$out: no level with a $ext1 or $ext2 table, not written" >&2
    return
  fi
  write_out
  echo "$out: levels $(printf '%s\n' "${!have[@]}" | sort -n | tr '\n' ' ')" >&2
}

if [ "$ONLY" != depth ]; then
  collect "results/histograms-$RULES.json" '"counted":"all configurations"' values cvalues \
    --all-configurations
fi
if [ "$ONLY" != values ]; then
  collect "results/depth-$RULES.json" \
    '"counted":"indexed positions","depth":"plies to conversion (a capture or the end of the game) with perfect play"' \
    depth cdepth --depth
fi
exit $DIFFERS
