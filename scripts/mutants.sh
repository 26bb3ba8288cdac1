#!/usr/bin/env bash
# Mutation testing of the game core and the settling core with cargo-mutants: each mutant
# (an operator flipped, a function's body replaced by a default, ...) is built and the fast
# tier of its package is run against it (cargo-nextest, stopping at the first failure);
# a mutant no test fails is "missed". Writes OUT/<file>/{caught,missed,timeout,unviable}.txt
# and prints a summary table, one row per file (the one committed in results/mutants.md).
#
# Usage: scripts/mutants.sh [FILE...]        (default: the files below)
#   OUT=dir       where cargo-mutants writes (default: target/mutants)
#   JOBS=1        mutants built and tested at once (each takes a copy of the tree)
#   TIMEOUT=300   seconds a mutant's tests may take before it counts as "timeout"
#   SUMMARY_ONLY=1  only print the table of an earlier run in OUT
#   RE=regex      only the mutants whose name matches (e.g. 'sow|Sowing::|outcome': the rules)
#   ITERATE=        test every mutant again (by default those an earlier run in OUT caught
#                   are skipped, so a run stopped part way resumes)
# Needs cargo-mutants and cargo-nextest (`cargo install --locked cargo-mutants cargo-nextest`).
# Hours on 2 cores: about 20 s a mutant for the game core, more for the settling core.
set -euo pipefail
cd "$(dirname "$0")/.."
FILES=("$@")
if [ ${#FILES[@]} -eq 0 ]; then
  FILES=(db/src/rules.rs db/src/board.rs db/src/moves.rs db/src/index.rs solver/src/settle.rs)
fi
OUT=${OUT:-target/mutants}
mkdir -p "$OUT"
# A run stopped part way resumes: mutants already caught there are skipped (ITERATE= to redo).
ITERATE=${ITERATE---iterate}
if [ "${SUMMARY_ONLY:-}" != 1 ]; then
  for f in "${FILES[@]}"; do
    case $f in
      db/*) pkg=awari-db ;;
      solver/*) pkg=awari-solver ;;
      *) echo "no package for $f" >&2; exit 2 ;;
    esac
    dir=$OUT/$(echo "$f" | tr / _)
    # cargo-mutants exits 2 when some mutant is missed, 3 on timeouts: the summary says so.
    cargo mutants -p "$pkg" --file "$f" --test-tool nextest --jobs "${JOBS:-1}" \
      --timeout "${TIMEOUT:-300}" --output "$dir" --no-shuffle $ITERATE \
      ${RE:+--re "$RE"} || true
  done
fi
printf '| file | mutants | caught | missed | timeout | unviable |\n|---|---|---|---|---|---|\n'
for f in "${FILES[@]}"; do
  dir=$OUT/$(echo "$f" | tr / _)/mutants.out
  [ -d "$dir" ] || continue
  count() { [ -f "$dir/$1.txt" ] && wc -l < "$dir/$1.txt" || echo 0; }
  c=$(count caught); m=$(count missed); t=$(count timeout); u=$(count unviable)
  echo "| $f | $((c + m + t + u)) | $c | $m | $t | $u |"
done
