#!/usr/bin/env bash
# Compressed tables against plain ones, in one run:
#   1. sizes: `awari-solver compress` of every level of DB into OUT: bits per position,
#      seconds and positions/s per level, the total, and the full game (0..48) extrapolated
#      from a straight-line fit of bits per position against the level over 24..max;
#   2. probe speed, warm page cache, the same N random boards of levels 0..PROBE_MAX through
#      `awari-probe batch`, Python's Database.values (when PYTHON has the awari package) and
#      `serve` (probe/examples/load), plain and compressed alternated, best of RUNS;
#   3. build time of level BUILD_LEVEL (in memory) on compressed lower levels against plain
#      ones, alternated, best of RUNS.
#
# Usage: scripts/bench-compress.sh DB OUT
#   SECTIONS="sizes probe build"   which sections to run
#   STONES="0 1 ... 34"            levels to compress (default: every level of DB)
#   DISCARD_FROM=27                delete compressed levels >= 27 once measured (a tight disk)
#   PROBE_FORM=1                   compress to the probe form (`compress --probe`); the build
#                                  section is then skipped (the builder needs self-contained
#                                  lower levels)
#   SEGMENT=128                    the probe form's entries per segment (`--segment`; default 256)
#   ESTIMATE=1                     sizes only estimated from a sample of each level
#                                  (`compress --estimate`, seconds a level): nothing written
#   N=1000000 PROBE_MAX=24 RUNS=3 BUILD_LEVEL=24 PYTHON=python3 SERVE_SECONDS=10
set -euo pipefail
DB=${1:?usage: scripts/bench-compress.sh DB OUT}
OUT=${2:?usage: scripts/bench-compress.sh DB OUT}
SECTIONS=${SECTIONS:-sizes probe build}
N=${N:-1000000}
PROBE_MAX=${PROBE_MAX:-24}
RUNS=${RUNS:-3}
BUILD_LEVEL=${BUILD_LEVEL:-24}
PYTHON=${PYTHON:-python3}
SERVE_SECONDS=${SERVE_SECONDS:-10}
FORM_FLAG=${PROBE_FORM:+--probe${SEGMENT:+ --segment $SEGMENT}}
cd "$(dirname "$0")/.."
. scripts/common.sh
solver_bin
cargo build --release -q -p awari-probe --example load
TARGET=$(target_dir)
PROBE=$TARGET/release/awari-probe
LOAD=$TARGET/release/examples/load
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
echo "== $(nproc) cores, $(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg)"

has() { case " $SECTIONS " in *" $1 "*) return 0 ;; esac; return 1; }

if has sizes; then
  echo "== sizes: $BIN compress --db $DB --out $OUT $FORM_FLAG"
  if [ -z "${STONES:-}" ]; then
    STONES=$(for f in "$DB"/level-*.values "$DB"/scores.*; do
      [ -e "$f" ] || continue; basename "$f" | sed 's/level-0*\([0-9][0-9]*\)\.values/\1/; s/level-00\.values/0/; s/scores\.//'
    done | sort -n | tr '\n' ' ')
  fi
  stones=$STONES
  : > "$WORK/sizes"
  for n in $stones; do
    if [ -n "${ESTIMATE:-}" ]; then WHERE=(--estimate); else WHERE=(--out "$OUT"); fi
    /usr/bin/time -f "%M" -o "$WORK/rss" "$BIN" compress --db "$DB" "${WHERE[@]}" --stones "$n" $FORM_FLAG | grep '^level' | tee -a "$WORK/sizes"
    echo "  (peak RSS $(( $(cat "$WORK/rss") / 1024 )) MiB)"
    if [ -n "${DISCARD_FROM:-}" ] && [ "$n" -ge "$DISCARD_FROM" ]; then
      rm -f "$OUT/level-$(printf %02d "$n").cvalues"
    fi
  done
  python3 - "$WORK/sizes" <<'PY'
import re, sys
rows = []
for line in open(sys.argv[1]):
    m = re.match(r"level\s+(\d+) (?:compressed|estimated): (\d+) positions, (\d+) bytes", line)
    if m:
        rows.append(tuple(int(x) for x in m.groups()))
if not rows:
    sys.exit(0)
pos = sum(r[1] for r in rows); size = sum(r[2] for r in rows)
print(f"total: levels {rows[0][0]}..{rows[-1][0]}: {size / 2**30:.2f} GiB for {pos} positions, "
      f"{8 * size / pos:.3f} bits per position ({pos / 2**30:.2f} GiB plain)")
fit = [(n, 8 * b / p) for n, p, b in rows if n >= 24]
if len(fit) >= 2:
    span = [r for r in rows if r[0] >= 24]
    pos24 = sum(r[1] for r in span); size24 = sum(r[2] for r in span)
    print(f"levels 24..{rows[-1][0]}: {8 * size24 / pos24:.3f} bits per position")
    k = len(fit); mx = sum(n for n, _ in fit) / k; my = sum(b for _, b in fit) / k
    slope = sum((n - mx) * (b - my) for n, b in fit) / sum((n - mx) ** 2 for n, _ in fit)
    from math import comb
    # Level sizes: boards of n seeds with an empty opponent pit (the Romein & Bal index):
    # all boards less those whose opponent row has a seed in every pit.
    def level_size(n):
        full = comb(n - 6 + 11, 11) if n >= 6 else 0
        return comb(n + 11, 11) - full
    total = 0.0; total_pos = 0
    for n in range(49):
        if n == 47:
            continue
        measured = {r[0]: 8 * r[2] / r[1] for r in rows}
        bits = measured.get(n, my + slope * (n - mx))
        total += bits * level_size(n) / 8; total_pos += level_size(n)
    print(f"trend over 24..{rows[-1][0]}: {slope:+.4f} bits per position per level; "
          f"levels 0..48 (measured where present, the trend above): {total / 1e9:.0f} GB, "
          f"{8 * total / total_pos:.2f} bits per position ({total_pos / 1e9:.0f} GB plain)")
PY
fi

if has probe; then
  echo "== probe: $N random boards of levels 0..$PROBE_MAX, plain $DB against compressed $OUT"
  "$PYTHON" - "$N" "$PROBE_MAX" "$WORK/boards.txt" <<'PY' 2>/dev/null || python3 - "$N" "$PROBE_MAX" "$WORK/boards.txt" <<'PY2'
import sys, awari, numpy as np
n, top, path = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
levels = [k for k in range(top + 1)]
per = -(-n // len(levels))
b = np.concatenate([awari.random_boards(k, per, seed=k) for k in levels])[:n]
np.random.default_rng(1).shuffle(b)
open(path, "w").write("".join(" ".join(map(str, r)) + "\n" for r in b.tolist()))
PY
# Without the Python package: uniform random boards by rejection (any seed count 0..top).
import random, sys
n, top, path = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
rng = random.Random(1)
with open(path, "w") as f:
    for i in range(n):
        s = i % (top + 1)
        while True:
            cuts = sorted(rng.randint(0, s) for _ in range(11))
            pits = [b - a for a, b in zip([0] + cuts, cuts + [s])]
            if 0 in pits[6:]:
                break
        f.write(" ".join(map(str, pits)) + "\n")
PY2
  best() { sort -n | head -1; }
  for d in "$DB" "$OUT"; do "$PROBE" batch --db "$d" < "$WORK/boards.txt" > /dev/null; done  # warm
  : > "$WORK/plain.t"; : > "$WORK/comp.t"
  for _ in $(seq "$RUNS"); do
    for pair in "$DB plain" "$OUT comp"; do
      set -- $pair
      s=$(date +%s.%N); "$PROBE" batch --db "$1" < "$WORK/boards.txt" > "$WORK/$2.out"; e=$(date +%s.%N)
      echo "$e - $s" | bc >> "$WORK/$2.t"
    done
  done
  cmp -s "$WORK/plain.out" "$WORK/comp.out" || { echo "batch answers differ!"; exit 1; }
  tp=$(best < "$WORK/plain.t"); tc=$(best < "$WORK/comp.t")
  python3 -c "n=$N; p=$tp; c=$tc; print(f'awari-probe batch: plain {n/p/1e6:.2f} M boards/s, compressed {n/c/1e6:.2f} M boards/s: {p/c:.2f}x (same answers)')"
  if "$PYTHON" -c "import awari" 2>/dev/null; then
    "$PYTHON" - "$DB" "$OUT" "$WORK/boards.txt" "$RUNS" <<'PY'
import sys, time, numpy as np, awari
plain, comp, path, runs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
boards = np.loadtxt(path, dtype=np.uint8)
dbs = {"plain": awari.Database(plain), "compressed": awari.Database(comp)}
got = {k: d.values(boards) for k, d in dbs.items()}
assert (got["plain"] == got["compressed"]).all(), "Database.values differ"
best = {k: float("inf") for k in dbs}
for _ in range(runs):
    for k, d in dbs.items():
        t = time.perf_counter(); d.values(boards); best[k] = min(best[k], time.perf_counter() - t)
n = len(boards)
print(f"Database.values: plain {n / best['plain'] / 1e6:.2f} M boards/s, compressed "
      f"{n / best['compressed'] / 1e6:.2f} M boards/s: {best['plain'] / best['compressed']:.2f}x (same answers)")
PY
  else
    echo "Database.values: skipped ($PYTHON has no awari package)"
  fi
  for pair in "$DB plain" "$OUT compressed"; do
    set -- $pair
    "$PROBE" serve --db "$1" --addr 127.0.0.1:0 2> "$WORK/serve.log" &
    server=$!
    for _ in $(seq 100); do grep -q "http://" "$WORK/serve.log" && break; sleep 0.1; done
    addr=$(grep -o 'http://[0-9.:]*' "$WORK/serve.log" | sed 's|http://||')
    "$LOAD" "$addr" 100000 "$SERVE_SECONDS" 4 "$PROBE_MAX" > /dev/null  # warm
    echo "serve $2: $("$LOAD" "$addr" 1000000 "$SERVE_SECONDS" 4 "$PROBE_MAX" | tr '\n' ' ')"
    kill "$server"; wait "$server" 2>/dev/null || true
  done
fi

if has build && [ -n "${PROBE_FORM:-}" ]; then
  echo "== build: skipped (the probe form cannot be streamed by the builder)"
elif has build; then
  L=$BUILD_LEVEL
  echo "== build: level $L in memory on plain lower levels ($DB) against compressed ones ($OUT)"
  mkdir -p "$WORK/plain" "$WORK/comp"
  for n in $(seq 0 $((L - 1))); do
    f=$(printf "level-%02d" "$n")
    [ -e "$DB/$f.values" ] && ln -s "$(realpath "$DB/$f.values")" "$WORK/plain/$f.values"
    [ -e "$OUT/$f.cvalues" ] && ln -s "$(realpath "$OUT/$f.cvalues")" "$WORK/comp/$f.cvalues"
  done
  for _ in $(seq "$RUNS"); do
    for d in plain comp; do
      rm -f "$WORK/$d/level-$L.values" "$WORK/$d/level-$(printf %02d "$L").values"
      "$BIN" build --db "$WORK/$d" --max-stones "$L" --mode memory --json 2> /dev/null \
        | level_fields - "$L" seconds:.2f | awk -v d="$d" '{ print d, $1 }' >> "$WORK/build.t"
    done
  done
  cmp "$WORK/plain/level-$(printf %02d "$L").values" "$WORK/comp/level-$(printf %02d "$L").values" \
    || { echo "level $L differs!"; exit 1; }
  tp=$(awk '$1 == "plain" { print $2 }' "$WORK/build.t" | sort -n | head -1)
  tc=$(awk '$1 == "comp" { print $2 }' "$WORK/build.t" | sort -n | head -1)
  python3 -c "p=$tp; c=$tc; print(f'level $L: plain lower levels {p:.2f} s, compressed {c:.2f} s: {c/p:.3f}x the time (identical tables)')"
fi
