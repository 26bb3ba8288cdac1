#!/usr/bin/env bash
# The measurements `plan`'s defaults rest on, for a machine of many cores (the 16-core one that
# the defaults come from, or yours), in one run that keeps within a time budget:
#   1. levels 0..LEVEL-1 built in memory (not measured);
#   2. scripts/calibrate.sh on them (REUSE): level LEVEL in memory, low-memory and two-bit (the
#      out-of-core ones squeezed to the big plan's exit passes), the depth pass, `verify
#      --prove`, the disk; it writes OUT/calibration.json, which `plan --calibration` reads;
#   3. level LEVEL in two-bit mode again with one exit pass (no --memory): with step 2's
#      squeezed build, the time an exit pass adds on this machine (plan's TWO_BIT_PASS_COST).
# A step is not started once BUDGET seconds have passed since the start (what ran is kept); each
# step's output is in OUT (NAME.txt, NAME.err), and OUT/summary.txt has one line a measurement.
# The database is built in WORK (default: a temporary directory, removed afterwards), not OUT.
#
# Usage: SOLVER=path/to/awari-solver scripts/scale.sh OUT
#   LEVEL=26      the level measured
#   THREADS=nproc threads for every command
#   BUDGET=420    seconds after which no step starts
#   WORK=/path    where the levels are built (on the disk to measure)
# On a lent 16-core machine, levels to 26 take about 5 minutes in all (estimated from the
# 16-core logs: levels 0..26 in 58 s, level 28 in two-bit mode in 90 s).
set -euo pipefail
OUT=${1:?usage: SOLVER=... scripts/scale.sh OUT}
mkdir -p "$OUT"
OUT=$(realpath "$OUT")
[ -n "${WORK:-}" ] && WORK=$(realpath -m "$WORK")
cd "$(dirname "$0")/.."
. scripts/common.sh
solver_bin
L=${LEVEL:-26}
T=${THREADS:-$(nproc)}
BUDGET=${BUDGET:-420}
BASE=${WORK:-$(mktemp -d)}
mkdir -p "$BASE"
trap '[ -z "${WORK:-}" ] && rm -rf "$BASE"' EXIT
START=$(date +%s)
SUMMARY=$OUT/summary.txt
: > "$SUMMARY"
note() { echo "$*" | tee -a "$SUMMARY"; }
elapsed() { echo $(($(date +%s) - START)); }
in_budget() { # in_budget STEP: whether STEP may start
  if [ "$(elapsed)" -ge "$BUDGET" ]; then
    note "skipped (budget of $BUDGET s spent): $1"
    return 1
  fi
}
run() { # run NAME CMD...: stdout to OUT/NAME.txt, stderr to OUT/NAME.err; false if it failed
  local name=$1
  shift
  "$@" > "$OUT/$name.txt" 2> "$OUT/$name.err" || { note "FAILED: $name: $(tail -n 1 "$OUT/$name.err")"; return 1; }
}
table() { printf "%s/level-%02d.values" "$1" "$2"; }

note "machine: $(nproc) cores ($(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)), $(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo); $T threads; level $L; $("$BIN" --version)"

# 1. The lower levels.
run base "$BIN" build --db "$BASE/db" --max-stones "$((L - 1))" --threads "$T" --mode memory
note "levels 0..$((L - 1)) in memory: $(grep '^total:' "$OUT/base.txt") ($(elapsed) s)"

# 2. calibrate.sh.
if in_budget calibrate; then
  if LEVEL=$L THREADS=$T REUSE=$BASE/db WORK=$BASE/cal SOLVER=$BIN DD_GIB=${DD_GIB:-4} \
    scripts/calibrate.sh "$OUT/calibration.json" > "$OUT/calibrate.txt" 2>&1; then
    sed -n '/^== measured/,/^== wrote/p' "$OUT/calibrate.txt" | tee -a "$SUMMARY"
  else
    note "FAILED: calibrate.sh: $(tail -n 1 "$OUT/calibrate.txt")"
  fi
fi

# 3. Two-bit with one exit pass, against calibrate's squeezed build.
if in_budget "two-bit, one exit pass"; then
  dir=$BASE/two-bit-1
  link_levels "$BASE/db" "$dir" "$((L - 1))"
  if run two-bit-1 "$BIN" build --db "$dir" --max-stones "$L" --threads "$T" --mode two-bit --json; then
    read -r secs rate _ <<< "$(summary_row "$OUT/two-bit-1.txt" "$L")"
    squeezed=$(awk '/^two-bit/ {print $2}' "$OUT/calibrate.txt" | tail -n 1)
    passes=$(sed -n 's/.*"two_bit": \([0-9]*\)}.*/\1/p' "$OUT/calibration.json" 2> /dev/null | head -n 1)
    note "two-bit level $L, one exit pass: $secs s ($rate positions/s); squeezed: ${squeezed:-?} s with ${passes:-?} passes$(
      [ -n "${squeezed:-}" ] && [ -n "${passes:-}" ] && [ "${passes:-1}" -gt 1 ] &&
        awk -v a="$secs" -v b="$squeezed" -v p="$passes" 'BEGIN {printf "; a pass adds %.1f%% of the one-pass time", 100 * (b / a - 1) / (p - 1)}')"
  fi
  rm -rf "$dir"
fi

note "done ($(elapsed) s)"
