#!/usr/bin/env bash
# A dress rehearsal of the whole game at small levels. `awari-solver plan` (PLAN, by default
# level 48 on 64 GiB and 16 threads) says which level algorithm each large level gets and with
# how many exit passes; the largest level of each algorithm is its tightest squeeze. Each of
# those algorithms then builds levels LEVELS on top of levels 0..FIRST-1 (built once in memory):
#   - memory: `build --mode memory`, the reference;
#   - low-memory, two-bit and one-bit (those the plan uses; one-bit where it plans for a
#     memory that two-bit does not fit, e.g. PLAN="--max-stones 48 --memory 32G --threads 16"):
#     `build --mode M --memory X`, level by level,
#     X the least memory with which the level has as few exit passes as the plan's tightest
#     level of that algorithm (two-bit levels below 25 seeds cannot go under 5 passes, the
#     plan's level 48 has 4), so the exits phase runs in buckets as it will there.
# Every table is compared byte for byte (cmp) with the in-memory one. Then each algorithm
# builds level FIRST once more and is killed (SIGKILL) partway, KILL_AT of its first run's time
# in; the build is run again (a two-bit or low-memory level resumes at its checkpoint, the
# in-memory one starts the level afresh) and its table compared again. Per algorithm the script prints the positions/s
# and the bytes read and written per position measured (`build --json`'s) beside what
# `plan` assumes for the same level, memory and threads (with CALIBRATION, a file of
# scripts/calibrate.sh; else plan's defaults, measured on the 16-core machine), and whether
# they agree: the rates within 20 %, the disk traffic within 10 %. Exits non-zero if any table differs or a resumed build fails; a
# disagreement with the plan is reported, not fatal.
# With CAP=1 (the default; needs root and a memory cgroup, else it says so and runs uncapped)
# every out-of-core build runs in a memory cgroup of its --memory plus CAP_MARGIN, the page
# cache counted and the tables it reads evicted first: at the plan's ratio of memory to level,
# as level 48 meets it, and not leaning on a page cache that holds the level (which a machine
# of 64 GB cannot do for a level of 200 GB). Last, `verify --prove` of level LAST (the proof
# docs/whole-game.md asks for) runs on the two-bit database, uncapped and then capped at
# PROVE_BPP bytes per position plus CAP_MARGIN; capped, it must finish within PROVE_SLACK times
# the uncapped time plus a minute.
#
# Usage: scripts/rehearse.sh [LEVELS=22..23]   (FIRST..LAST, or one level)
#   THREADS=nproc  threads for every build (and for the plan's assumptions)
#   PLAN="--max-stones 48 --memory 64G --threads 16"
#   CALIBRATION=/path  plan's rates and traffic from this calibration file
#   KILL_AT=0.5    when to kill, as a share of the level's first build time (at least 2 s)
#   WORK=/path     where to build (default: a temporary directory, removed afterwards)
#   REUSE=/db      take levels 0..FIRST-1 from this database (hard links) instead of building
#   SOLVER=/path   rehearse with this awari-solver binary instead of building the checkout's
#   CAP=1  CAP_MARGIN=67108864 (bytes)  PROVE_BPP=0.36  PROVE_SLACK=4
# How long it takes: docs/performance.md (about 22 minutes on 2 busy cores; LEVELS=16..17, 1).
set -euo pipefail
RANGE=${1:-22..23}
FIRST=${RANGE%%..*}
LAST=${RANGE##*..}
CALIBRATION=${CALIBRATION:-}
case $CALIBRATION in '' | /*) ;; *) CALIBRATION=$PWD/$CALIBRATION ;; esac
# Paths given relative to where the script was started.
[ -n "${REUSE:-}" ] && REUSE=$(realpath "$REUSE")
[ -n "${WORK:-}" ] && WORK=$(realpath -m "$WORK")
cd "$(dirname "$0")/.."
. scripts/common.sh
solver_bin
T=${THREADS:-$(nproc)}
KILL_AT=${KILL_AT:-0.5}
CAP=${CAP:-1}
CAP_MARGIN=${CAP_MARGIN:-67108864}
PROVE_BPP=${PROVE_BPP:-0.36}
PROVE_SLACK=${PROVE_SLACK:-4}
# in_cap MEMORY DIR CMD...: CMD in a cgroup of MEMORY + CAP_MARGIN bytes, the tables of DIR
# evicted from the page cache first (with CAP=1; else CMD as it is).
in_cap() {
  local mem=$1 dir=$2
  shift 2
  if [ "$CAP" != 1 ]; then
    bash -c '[ -n "${CAPPED_PIDFILE:-}" ] && echo $$ > "$CAPPED_PIDFILE"; exec "$@"' in_cap "$@"
    return
  fi
  evict_cache "$dir"/level-*.values
  capped $((mem + CAP_MARGIN)) "$@"
}
read -r -a PLAN_ARGS <<< "${PLAN:---max-stones 48 --memory 64G --threads 16}"
CAL_ARGS=()
[ -n "${CALIBRATION:-}" ] && CAL_ARGS=(--calibration "$CALIBRATION")
BASE=${WORK:-$(mktemp -d)}
mkdir -p "$BASE"
trap '[ -z "${WORK:-}" ] && rm -rf "$BASE"' EXIT
START=$(date +%s)
elapsed() { echo "$(($(date +%s) - START)) s"; }
LEVELS=()
for n in $(seq "$FIRST" "$LAST"); do [ "$n" != 47 ] && LEVELS+=("$n"); done
table() { printf "%s/level-%02d.values" "$1" "$2"; }
run() { # run NAME ARGS...: stdout to NAME.txt, stderr to NAME.err (shown if it fails)
  local name=$1
  shift
  "$@" > "$BASE/$name.txt" 2> "$BASE/$name.err" || { cat "$BASE/$name.txt" "$BASE/$name.err"; echo "FAILED: $*"; exit 1; }
}
echo "== machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo), load average $(cut -d' ' -f1 /proc/loadavg); $T threads; levels ${LEVELS[*]} on 0..$((FIRST - 1))"
echo "== plan ${PLAN_ARGS[*]}${CALIBRATION:+ --calibration $CALIBRATION}:"
"$BIN" plan "${PLAN_ARGS[@]}" "${CAL_ARGS[@]}" --disk 1000T --db /nonexistent/awari-plan > "$BASE/plan.txt"
# The plan's algorithms, by runs of levels.
awk '$1 ~ /^[0-9]+$/ {
    for (m = 3; m <= NF; m++) if ($m ~ /^(memory|low-memory|two-bit|one-bit|does)/) break
    label = $m; for (i = m + 1; i <= NF; i++) label = label " " $i
    if (label != last) { show(); from = $1; last = label }
    prev = $1
  }
  function show() {
    if (last != "") print "   " (from == prev ? "level " from : "levels " from ".." prev) ": " last
  }
  END { show() }' "$BASE/plan.txt"
grep -E '^(total|assumed):' "$BASE/plan.txt" | sed 's/^/   /'
declare -A TARGET
MODES=()
while read -r mode passes level positions; do
  TARGET[$mode]="$passes $level $positions"
  MODES+=("$mode")
done < <(big_plan "$BIN" "${PLAN_ARGS[@]}" "${CAL_ARGS[@]}")
[[ " ${MODES[*]} " == *" memory "* ]] || MODES=(memory "${MODES[@]}")
for mode in "${MODES[@]}"; do
  read -r passes level positions <<< "${TARGET[$mode]:-1 - -}"
  echo "   $mode: tightest at level $level, $passes exit pass(es)"
done
# What plan assumes per thread, by algorithm (M positions/s).
assumed_rate() {
  local key
  case $1 in memory) key="in memory" ;; *) key=$1 ;; esac
  grep '^assumed:' "$BASE/plan.txt" | sed -n "s/.*[:,] $key \([0-9.]*\)M.*/\1/p"
}
# A two-bit rate of the assumptions line (its exit passes and the time a pass adds) at
# `passes` exit passes.
two_bit_at_passes() {
  local line measured cost
  line=$(grep '^assumed:' "$BASE/plan.txt")
  measured=$(sed -n 's/.*two-bit [0-9.]*M (with \([0-9]*\) exit passes.*/\1/p' <<< "$line")
  cost=$(sed -n 's/.*exit passes; \([0-9.]*\)% more time a pass.*/\1/p' <<< "$line")
  awk -v r="$1" -v p="$2" -v m="$measured" -v c="$cost" \
    'BEGIN {c /= 100; print r * (1 + (m - 1) * c) / (1 + (p - 1) * c)}'
}

echo "== levels 0..$((FIRST - 1)) in memory ($(elapsed))"
[ -n "${REUSE:-}" ] && link_levels "$REUSE" "$BASE/base" "$((FIRST - 1))"
run base "$BIN" build --db "$BASE/base" --max-stones "$((FIRST - 1))" --threads "$T" --mode memory
grep '^total:' "$BASE/base.txt"

FAILED=0
RESULTS=$BASE/results.txt
: > "$RESULTS"
declare -A FIRST_SECS
for mode in "${MODES[@]}"; do
  dir=$BASE/$mode
  link_levels "$BASE/base" "$dir" "$((FIRST - 1))"
  read -r passes level positions <<< "${TARGET[$mode]:-1 - -}"
  for n in "${LEVELS[@]}"; do
    echo "== $mode, level $n ($(elapsed))"
    args=(build --db "$dir" --max-stones "$n" --threads "$T" --mode "$mode" --json)
    mem=
    if [ "$mode" != memory ]; then
      read -r mem got gotp <<< "$(squeeze_memory "$BIN" "$n" "$T" "$mode" "$passes")"
      args+=(--memory "$mem")
    fi
    if [ "$mode" = memory ]; then
      run "$mode-$n" "$BIN" "${args[@]}"
    else
      run "$mode-$n" in_cap "$mem" "$dir" "$BIN" "${args[@]}"
    fi
    level_line "$BASE/$mode-$n.txt" "$n"
    read -r secs rate anon r w _ <<< "$(summary_row "$BASE/$mode-$n.txt" "$n")"
    [ "$n" = "$FIRST" ] && FIRST_SECS[$mode]=$secs
    # What the plan assumes for this level, memory and threads.
    read -r pmode ppasses pio size <<< "$(plan_level "$BIN" "$n" "${mem:-1T}" "$T" --mode "$mode" "${CAL_ARGS[@]}")"
    prate=$(awk -v r="$(assumed_rate "$mode")" -v t="$T" 'BEGIN {print r * 1e6 * t}')
    # The plan's two-bit rate (and one-bit's, a share of it) holds for its exit passes; it
    # scales the time to this level's.
    case $mode in two-bit | one-bit) prate=$(two_bit_at_passes "$prate" "$ppasses") ;; esac
    echo "$mode $n ${mem:-–} $ppasses $rate $prate $(awk -v r="$r" -v w="$w" 'BEGIN {print r + w}') $(awk -v b="$pio" -v s="$size" 'BEGIN {printf "%.2f", b / s}') $size" >> "$RESULTS"
    if [ "$mode" != memory ]; then
      if cmp "$(table "$BASE/memory" "$n")" "$(table "$dir" "$n")"; then
        echo "level $n: $mode table identical to the in-memory one"
      else
        echo "level $n: $mode table DIFFERS from the in-memory one"
        FAILED=1
      fi
    fi
  done
done

# Killed partway and resumed.
for mode in "${MODES[@]}"; do
  n=$FIRST
  dir=$BASE/kill-$mode
  link_levels "$BASE/base" "$dir" "$((n - 1))"
  args=(build --db "$dir" --max-stones "$n" --threads "$T" --mode "$mode")
  mem=$(awk -v m="$mode" -v n="$n" '$1 == m && $2 == n {print $3}' "$RESULTS")
  [ "$mode" != memory ] && args+=(--memory "$mem")
  wait_s=$(awk -v s="${FIRST_SECS[$mode]}" -v k="$KILL_AT" 'BEGIN {w = s * k; printf "%.1f", w < 2 ? 2 : w}')
  echo "== $mode, level $n killed after $wait_s s, then resumed ($(elapsed))"
  pidfile=$BASE/kill-$mode.pid
  rm -f "$pidfile"
  if [ "$mode" = memory ]; then
    CAP=0 CAPPED_PIDFILE=$pidfile in_cap 0 "$dir" "$BIN" "${args[@]}" > "$BASE/kill-$mode.txt" 2> "$BASE/kill-$mode.err" &
  else
    CAPPED_PIDFILE=$pidfile in_cap "$mem" "$dir" "$BIN" "${args[@]}" > "$BASE/kill-$mode.txt" 2> "$BASE/kill-$mode.err" &
  fi
  job=$!
  sleep "$wait_s"
  if [ -s "$pidfile" ] && kill -KILL "$(cat "$pidfile")" 2> /dev/null; then
    wait "$job" 2> /dev/null || true
    left=$(cd "$dir" && ls | grep -v -E '^level-[0-9]+\.values$' | tr '\n' ' ' || true)
    echo "killed (SIGKILL) after $wait_s s; left beside the tables: ${left:-nothing}"
  else
    wait "$job" || true
    echo "(the build ended before the kill: not a resume test; raise the level or lower KILL_AT)"
  fi
  if [ "$mode" = memory ]; then
    run "resume-$mode" "$BIN" "${args[@]}" --json
  else
    run "resume-$mode" in_cap "$mem" "$dir" "$BIN" "${args[@]}" --json
  fi
  level_line "$BASE/resume-$mode.txt" "$n"
  if cmp "$(table "$BASE/memory" "$n")" "$(table "$dir" "$n")"; then
    echo "level $n: $mode, resumed: identical to the in-memory table"
  else
    echo "level $n: $mode, resumed: DIFFERS from the in-memory table"
    FAILED=1
  fi
done

# The proof, at the plan's ratio.
if [[ " ${MODES[*]} " == *" two-bit "* ]]; then
  dir=$BASE/two-bit
  n=$LAST
  positions=$(plan_level "$BIN" "$n" 1T "$T" | awk '{print $4}')
  pmem=$(awk -v p="$positions" -v b="$PROVE_BPP" 'BEGIN {printf "%d", p * b + 33554432}')
  prove=(verify --db "$dir" --stones "$n" --prove --threads "$T" --memory "$pmem")
  echo "== verify --prove of level $n, --memory $pmem ($(elapsed))"
  t0=$(date +%s.%N)
  run prove "$BIN" "${prove[@]}"
  free_s=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}')
  grep "^level $n" "$BASE/prove.txt"
  limit=$(awk -v s="$free_s" -v k="$PROVE_SLACK" 'BEGIN {printf "%d", s * k + 60}')
  t0=$(date +%s.%N)
  rc=0
  in_cap "$pmem" "$dir" timeout "$limit" "$BIN" "${prove[@]}" > "$BASE/prove-capped.txt" 2> "$BASE/prove-capped.err" || rc=$?
  capped_s=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}')
  if [ "$rc" = 0 ]; then
    echo "verify --prove: $free_s s uncapped, $capped_s s capped at $pmem + $CAP_MARGIN bytes (capped: $CAPPED)"
  else
    echo "verify --prove: $free_s s uncapped; capped at $pmem + $CAP_MARGIN bytes it did not finish in $limit s (exit $rc): the proof leans on the page cache"
    tail -2 "$BASE/prove-capped.err"
    FAILED=1
  fi
fi

echo "== measured against plan (${CALIBRATION:-the plan defaults}; $T threads; agree: rates within 20 %, disk traffic within 10 %)"
printf "%-10s %5s %11s %6s %15s %15s %8s %10s %10s %8s\n" mode level "--memory" passes "positions/s" "plan" agree "I/O B/pos" plan agree
awk '
  function agree(a, b, within) { return (b > 0 && a / b >= 1 - within && a / b <= 1 + within) ? "yes" : sprintf("no, %.2fx", a / b) }
  {
    mem = $3 == "–" ? "–" : sprintf("%.2f B/pos", $3 / $9)
    printf "%-10s %5s %11s %6s %15.0f %15.0f %8s %10.2f %10.2f %8s\n", $1, $2, mem, $4, $5, $6, agree($5, $6, 0.2), $7, $8, agree($7, $8, 0.1)
  }' "$RESULTS"
echo "== done ($(elapsed))"
if [ "$FAILED" != 0 ]; then
  echo "REHEARSAL FAILED: a table differs, or the proof did not finish in its memory"
  exit 1
fi
echo "every table identical to the in-memory build, killed and resumed ones too; the proof finished in its memory"
