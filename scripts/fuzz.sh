#!/usr/bin/env bash
# Run the coverage-guided fuzz targets (fuzz/fuzz_targets/: every reader of untrusted bytes;
# docs/testing.md, "Fuzzing") with cargo-fuzz and libFuzzer, on the nightly toolchain.
#
#   scripts/fuzz.sh [TARGET|all] [SECONDS]   each target SECONDS (default 30), one at a time
#   scripts/fuzz.sh --cmin TARGET|all        fold what the runs found into the committed
#                                            corpus, minimised (cargo fuzz cmin)
#
# Each run starts from the committed seeds, fuzz/corpus/TARGET/ (read only), and keeps what it
# finds in fuzz/target/corpus/TARGET/ (not committed); limits: 2 GiB of memory (an allocation
# over it is a finding), 10 s per input. A finding (a crash, a panic, a failed assertion, a
# timeout, an out-of-memory) is saved under fuzz/artifacts/TARGET/ and makes the script exit
# non-zero after the other targets have run; reproduce it with
# `cargo +nightly fuzz run TARGET fuzz/artifacts/TARGET/FILE`. JOBS=N runs N targets at once
# (default 1: one core each). FUZZ_SANITIZER=address builds with AddressSanitizer (default
# none: the code under test is safe Rust but for its memory maps, and the runs go about
# twice as fast).
set -euo pipefail
cd "$(dirname "$0")/.."

CMIN=
if [ "${1:-}" = --cmin ]; then
  CMIN=1
  shift
fi
WHICH=${1:-all}
SECONDS_EACH=${2:-30}
JOBS=${JOBS:-1}
SANITIZER=${FUZZ_SANITIZER:-none}

# Nightly where it is (or can be installed); else the machine's stable toolchain with its
# unstable flags allowed (RUSTC_BOOTSTRAP=1), which builds the same targets.
TOOLCHAIN=+nightly
if ! rustup toolchain list | grep -q '^nightly'; then
  if ! rustup toolchain install nightly --profile minimal > /dev/null 2>&1; then
    echo "fuzz.sh: no nightly toolchain to be had: the stable one, with RUSTC_BOOTSTRAP=1" >&2
    TOOLCHAIN=
    export RUSTC_BOOTSTRAP=1
  fi
fi
if ! command -v cargo-fuzz > /dev/null 2>&1; then
  cargo install --locked cargo-fuzz
fi

ALL=()
for f in fuzz/fuzz_targets/*.rs; do
  ALL+=("$(basename "$f" .rs)")
done
if [ "$WHICH" = all ]; then
  TARGETS=("${ALL[@]}")
elif [ -f "fuzz/fuzz_targets/$WHICH.rs" ]; then
  TARGETS=("$WHICH")
else
  echo "scripts/fuzz.sh: no target '$WHICH' (targets: ${ALL[*]})" >&2
  exit 2
fi

FUZZ=(cargo ${TOOLCHAIN:+"$TOOLCHAIN"} fuzz)
# 16 codegen units (cargo-fuzz's default is 1): the build, most of what a short run costs,
# takes about half as long on 2 cores.
BUILD=(--sanitizer "$SANITIZER" --codegen-units "${FUZZ_CODEGEN_UNITS:-16}" --fuzz-dir fuzz)

if [ -n "$CMIN" ]; then
  for t in "${TARGETS[@]}"; do
    found=fuzz/target/corpus/$t
    if [ -d "$found" ]; then
      cp -n "$found"/* "fuzz/corpus/$t/" 2> /dev/null || true
    fi
    "${FUZZ[@]}" cmin "${BUILD[@]}" "$t" "fuzz/corpus/$t" -- -rss_limit_mb=2048 -timeout=10
  done
  exit 0
fi

# Every target at once (one compile), then each run.
"${FUZZ[@]}" build "${BUILD[@]}"

LOGS=fuzz/target/logs
mkdir -p "$LOGS"
run_one() {
  local t=$1 log=$LOGS/$1.log
  mkdir -p "fuzz/target/corpus/$t" "fuzz/corpus/$t"
  # -close_fd_mask=1: the targets' stdout (none expected) stays out of the log.
  if "${FUZZ[@]}" run "${BUILD[@]}" "$t" "fuzz/target/corpus/$t" "fuzz/corpus/$t" -- \
    -max_total_time="$SECONDS_EACH" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
    -close_fd_mask=1 > "$log" 2>&1; then
    # The last status line: executions, coverage (cov: edges, ft: features), corpus.
    local last runs
    last=$(grep -aE '^#[0-9]+' "$log" | tail -1)
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    echo "$t: ${runs:-?} executions in ${SECONDS_EACH} s; ${last#* }; no finding"
  else
    echo "$t: FINDING (log $log; input under fuzz/artifacts/$t/):"
    grep -aE 'panicked at|ERROR: libFuzzer|ERROR: AddressSanitizer|SUMMARY|Test unit written' "$log" | head -8 | sed 's/^/  /'
    return 1
  fi
}

FAILED=()
if [ "$JOBS" -le 1 ]; then
  for t in "${TARGETS[@]}"; do
    run_one "$t" || FAILED+=("$t")
  done
else
  # JOBS targets at a time, each on one core; their summaries in order at the end.
  for t in "${TARGETS[@]}"; do
    while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do
      wait -n || true
    done
    rm -f "$LOGS/$t.failed"
    (run_one "$t" > "$LOGS/$t.summary" || touch "$LOGS/$t.failed") &
  done
  wait
  for t in "${TARGETS[@]}"; do
    cat "$LOGS/$t.summary"
    if [ -e "$LOGS/$t.failed" ]; then
      FAILED+=("$t")
    fi
  done
fi

# The targets' scratch directories (databases built at their start), of runs that have ended.
for d in /dev/shm/awari-fuzz/* "${TMPDIR:-/tmp}"/awari-fuzz/*; do
  if [ -d "$d" ] && [ ! -d "/proc/${d##*-}" ]; then
    rm -rf "$d"
  fi
done

if [ ${#FAILED[@]} -gt 0 ]; then
  echo "scripts/fuzz.sh: findings in: ${FAILED[*]}" >&2
  exit 1
fi
