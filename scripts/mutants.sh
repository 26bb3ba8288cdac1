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
#   EXCLUDE_RE=regex  leave out the mutants whose name matches (e.g. a part run before)
#   ITERATE=        test every mutant again (by default those an earlier run in OUT caught
#                   are skipped, so a run stopped part way resumes)
#   FILTER=expr   a nextest filter expression: only these tests run against each mutant
#                 (default: all, but for settle.rs the quick checks that a wrong settled value
#                 cannot pass, for moves.rs and unmoves.rs the rules' and un-moves' checks, and for
#                 parent_range.rs its own and the ranked generators' range checks, see below; run
#                 their missed mutants again with FILTER='all()')
# Mutants are built with the `mutants` profile (Cargo.toml: the test profile's optimisation,
# but incremental with 256 codegen units), so a mutant rebuilds in about 5 s instead of 36,
# and the tests stop at the first failure, the running ones killed (`--max-fail=1:immediate`).
# Needs cargo-mutants and cargo-nextest (`cargo install --locked cargo-mutants cargo-nextest`).
# Hours on 2 cores: about 20 s a mutant for the game core, more for the settling core.
set -euo pipefail
cd "$(dirname "$0")/.."
FILES=("$@")
if [ ${#FILES[@]} -eq 0 ]; then
  FILES=(db/src/rules.rs db/src/board.rs db/src/moves.rs db/src/unmoves.rs db/src/index.rs db/src/parent_range.rs solver/src/settle.rs)
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
    filter=${FILTER:-}
    if [ -z "$filter" ] && [ "$f" = solver/src/settle.rs ]; then
      # The checks a wrong settled value cannot pass, the quick ones: the builder against value
      # iteration and the published histograms, the level algorithms against each other (for
      # code only some of them use), verify's recomputation and the depth pass. The mutants
      # this misses are then run again against the whole fast tier (FILTER='all()').
      filter='binary(it) & (test(builder_agrees_with_value_iteration) | test(lincke_histograms)'
      filter+=' | test(/^determinism::/) | test(verify_passes_and_catches_corruption)'
      filter+=' | test(compact_depths_equal_the_in_memory_waves)) | (kind(lib) & test(/^(level|settle)::/))'
    fi
    if [ -z "$filter" ] && { [ "$f" = db/src/moves.rs ] || [ "$f" = db/src/unmoves.rs ]; }; then
      # The rules' cases, the OpenSpiel vectors, and the exhaustive and random un-move and
      # un-capture checks: about 26 s, against the db tier's 60-90.
      filter='test(/^(moves|unmoves|uncaptures)::/) | test(properties::unmoves_invert_moves)'
    fi
    if [ -z "$filter" ] && [ "$f" = db/src/parent_range.rs ]; then
      # Its own checks and the ranked generators' exhaustive range bounds: about 16 s.
      filter='test(parent_range) | test(ranked_)'
    fi
    cargo mutants -p "$pkg" --file "$f" --test-tool nextest --profile mutants \
      --jobs "${JOBS:-1}" --timeout "${TIMEOUT:-300}" --output "$dir" --no-shuffle $ITERATE \
      ${RE:+--re "$RE"} ${EXCLUDE_RE:+--exclude-re "$EXCLUDE_RE"} -- --max-fail=1:immediate ${filter:+-E "$filter"} || true
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
