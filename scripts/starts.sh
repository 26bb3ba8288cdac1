#!/usr/bin/env bash
# The starts with k seeds in every pit (12k seeds on the board) that a database holds: for
# each, its value for the side to move, the first moves of a perfect line (`awari-probe line`:
# each ply's pit, from the mover's left, and its captures), the plies to the line's end and
# how it ends. A won start's line is realised by the depth tables (`build --depth`, `depth`).
#
# Usage: scripts/starts.sh RULES DB [K...]   (default K: 1 2 3 4, those whose level is in DB)
#   PROBE=path: that awari-probe binary (default: the checkout's, built in release)
#   MOVES=N: plies of each line to print (default 12)
set -euo pipefail
RULES=${1:?usage: scripts/starts.sh RULES DB [K...]}
DB=${2:?usage: scripts/starts.sh RULES DB [K...]}
shift 2
cd "$(dirname "$0")/.."
if [ -z "${PROBE:-}" ]; then
  cargo build --release -q -p awari-probe
  PROBE=$(cargo metadata --format-version 1 --no-deps | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')/release/awari-probe
fi
MOVES=${MOVES:-12}
# The rule set is byte 12 of a plain or a compressed table: it must be the one asked for.
FIRST=$DB/level-00.values
[ -f "$FIRST" ] || FIRST=$DB/level-00.cvalues
code=$(od -An -tu1 -j12 -N1 "$FIRST" | tr -d ' ')
case "$code" in 0) have=awari ;; 1) have=abapa ;; 2) have=grand-slam ;; 3) have=cross-wari ;; *) echo "cannot read the rule set of $FIRST" >&2; exit 1 ;; esac
[ "$have" = "$RULES" ] || { echo "$DB holds $have tables, not $RULES" >&2; exit 1; }
KS=("$@")
[ ${#KS[@]} -gt 0 ] || KS=(1 2 3 4)
for k in "${KS[@]}"; do
  n=$((12 * k))
  level=$(printf '%s/level-%02d' "$DB" "$n")
  [ -f "$level.values" ] || [ -f "$level.cvalues" ] || continue
  board=$(printf "$k %.0s" $(seq 12))
  # shellcheck disable=SC2086
  "$PROBE" line --db "$DB" --json $board | python3 -c '
import json, sys
rules, k, moves = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
d = json.load(sys.stdin)
v = d["value"]
say = "a draw" if v == 0 else ("the side to move wins by %d" % v if v > 0 else "the side to move loses by %d" % -v)
plies = d["plies"]
line = " ".join("%d%s" % (p["pit"], "x%d" % p["captures"] if p["captures"] else "") for p in plies[:moves])
end = "%s after %d plies, %d-%d" % (d["end"], len(plies), d["result"][0], d["result"][1])
if not d.get("complete", True):
    end = "cut after %d plies" % len(plies)
print("%s, %d per pit (%d seeds): %+d, %s; perfect line %s%s; %s" % (
    rules, k, 12 * k, v, say, line, " ..." if len(plies) > moves else "", end))
' "$RULES" "$k" "$MOVES"
done
