#!/usr/bin/env bash
# The Python package's speed against the command line, in one run, warm page cache:
#   - Database.values on N random boards of 0..MAX seeds (equal numbers per level) against
#     `awari-probe batch` on the same boards (values only), best of RUNS each;
#   - Database.values on the same boards in every integer dtype, and as strided and
#     Fortran-ordered arrays, against uint8 (each read in place, no converted copy);
#   - Database.value called in a Python loop, calls per second (200,000 boards).
# Both read the same database directory DB (built to at least MAX seeds).
#
# Usage: scripts/bench-python.sh DB [N=1000000] [MAX=24]
#   PYTHON=/path/to/python   a Python with the awari package installed (default: python3)
#   RUNS=3
set -euo pipefail
DB=${1:?usage: scripts/bench-python.sh DB [N] [MAX]}
N=${2:-1000000}
MAX=${3:-24}
RUNS=${RUNS:-3}
PYTHON=${PYTHON:-python3}
cd "$(dirname "$0")/.."
. scripts/common.sh
cargo build --release -q -p awari-probe
TARGET=$(target_dir)
PROBE=$TARGET/release/awari-probe
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
"$PYTHON" - "$DB" "$N" "$MAX" "$WORK" "$PROBE" "$RUNS" <<'PY'
import subprocess, sys, time
import numpy as np
import awari

db_dir, n, top, work, probe, runs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5], int(sys.argv[6])
levels = [k for k in range(top + 1) if k != 47]
per = -(-n // len(levels))
boards = np.concatenate([awari.random_boards(k, per, seed=k) for k in levels])[:n]
np.random.default_rng(1).shuffle(boards)
text = "".join(" ".join(map(str, row)) + "\n" for row in boards.tolist())
with open(f"{work}/boards.txt", "w") as f:
    f.write(text)
db = awari.Database(db_dir)

def batch():
    with open(f"{work}/boards.txt") as f, open(f"{work}/out.txt", "w") as out:
        subprocess.run([probe, "batch", "--db", db_dir], stdin=f, stdout=out, check=True)

def timed(f):
    best = float("inf")
    for _ in range(runs):
        t = time.perf_counter()
        f()
        best = min(best, time.perf_counter() - t)
    return best

batch()  # warm the page cache
values = db.values(boards)
expected = np.loadtxt(f"{work}/out.txt", dtype=np.int64)
assert (values == expected).all(), "values differ from awari-probe batch"
t_batch = timed(batch)
t_values = timed(lambda: db.values(boards))
print(f"boards: {n} random, levels 0..{top}, {db_dir}")
print(f"awari-probe batch:  {t_batch:.3f} s  {n / t_batch / 1e6:.2f} M boards/s")
print(f"Database.values:    {t_values:.3f} s  {n / t_values / 1e6:.2f} M boards/s  ({t_batch / t_values:.1f}x the CLI)")
rates = {}
wide = np.zeros((len(boards), 24), dtype=np.int64)
wide[:, ::2] = boards
inputs = [(str(np.dtype(t)), boards.astype(t)) for t in
          (np.uint8, np.int8, np.int16, np.int32, np.int64, np.uint16, np.uint32, np.uint64)]
inputs += [("int64, every other column", wide[:, ::2]), ("int64, Fortran order", np.asfortranarray(boards.astype(np.int64)))]
for name, a in inputs:
    assert (db.values(a) == values).all(), name
for name, a in inputs:
    rates[name] = n / timed(lambda: db.values(a)) / 1e6
print("Database.values by input (M boards/s, and against uint8):")
for name, r in rates.items():
    print(f"  {name:<26} {r:6.2f}  {r / rates['uint8']:.2f}x")
loop = [list(map(int, row)) for row in boards[:200_000]]
value = db.value
def calls():
    for b in loop:
        value(b)
t_loop = timed(calls)
print(f"Database.value loop: {len(loop) / t_loop / 1e3:.0f} k calls/s (boards as lists of ints)")
PY
