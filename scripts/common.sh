# Sourced by the benchmarks and the CI scripts (run from the repository root).
#
# AWARI_PROFILE: the cargo profile the CI scripts build with (default release; .ci/run sets test, so
# that they reuse what `cargo test` built instead of compiling everything again).
# profile_dir: where that profile's binaries land (cargo puts dev and test in `debug`).
AWARI_PROFILE=${AWARI_PROFILE:-release}
# target_dir: where cargo builds (asked of cargo: CARGO_TARGET_DIR or a config may move it).
target_dir() {
  cargo metadata --format-version 1 --no-deps | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p'
}
profile_dir() {
  case $AWARI_PROFILE in
    dev | test) echo "$(target_dir)/debug" ;;
    *) echo "$(target_dir)/$AWARI_PROFILE" ;;
  esac
}
#
# solver_bin: sets BIN to $SOLVER if given, else builds the checkout's awari-solver and
# points BIN at it (asking cargo where binaries go: CARGO_TARGET_DIR or a config may move them).
solver_bin() {
  if [ -n "${SOLVER:-}" ]; then
    BIN=$SOLVER
  else
    cargo build --release -q -p awari-solver
    BIN=$(target_dir)/release/awari-solver
  fi
}

# squeeze_start G DIR starts a helper that holds G GiB of RAM,
# resident and touched every 10 s, so the page cache cannot keep what the benchmark reads
# (waits until it is resident); squeeze_stop ends it. SQUEEZE_PID is the helper's pid.
SQUEEZE_PID=
squeeze_start() {
  local ready=$2/squeeze.ready
  rm -f "$ready"
  python3 - "$1" "$ready" <<'PY' &
import ctypes, mmap, sys, time
size = int(float(sys.argv[1]) * (1 << 30))
m = mmap.mmap(-1, size)  # anonymous, private
try:  # lock it in RAM where allowed (no swap here anyway); touching makes it resident
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mlockall(3)  # MCL_CURRENT | MCL_FUTURE
except Exception:
    pass
while True:
    for i in range(0, size, 4096):
        m[i] = (m[i] + 1) & 0xFF
    open(sys.argv[2], "w").close()
    time.sleep(10)
PY
  SQUEEZE_PID=$!
  while [ ! -e "$ready" ]; do sleep 1; done
  echo "(squeeze: a helper holds $1 GiB; $(awk '/MemAvailable/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo) available)"
}
squeeze_stop() {
  if [ -n "$SQUEEZE_PID" ]; then kill "$SQUEEZE_PID" 2>/dev/null || true; SQUEEZE_PID=; fi
}
# evict_cache FILE...: ask the kernel to drop the cached pages of these files
# (posix_fadvise DONTNEED; works without root, where drop_caches may not).
evict_cache() {
  python3 - "$@" <<'PY'
import os, sys
for path in sys.argv[1:]:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)
PY
}

# The plan's view of one level, for scripts/calibrate.sh and scripts/rehearse.sh.
# plan_level BIN N MEMORY THREADS [PLAN OPTIONS...]: "MODE PASSES IO_BYTES POSITIONS" of level
# N in `plan --memory MEMORY --threads THREADS`: MODE memory, low-memory, two-bit, one-bit or none (does
# not fit), PASSES its exit passes, IO_BYTES its I/O column in bytes.
plan_level() {
  local bin=$1 n=$2 mem=$3 t=$4
  shift 4
  "$bin" plan --max-stones "$n" --memory "$mem" --threads "$t" --disk 1000T \
    --db /nonexistent/awari-plan "$@" | awk -v n="$n" '
    function bytes(x, u) {
      return x * (u == "KiB" ? 1024 : u == "MiB" ? 1048576 : u == "GiB" ? 1073741824 : u == "TiB" ? 1099511627776 : 1)
    }
    $1 == n {
      for (m = 3; m <= NF; m++) if ($m ~ /^(memory|low-memory|two-bit|one-bit|does)/) break
      mode = $m; sub(/,$/, "", mode); if (mode == "does") mode = "none"
      passes = 1
      for (i = m + 1; i < NF; i++) if ($(i + 1) == "exit") passes = $i
      printf "%s %d %.0f %s\n", mode, passes, bytes($9, $10), $2
    }'
}
# roomier MODE PASSES TMODE TPASSES: whether a level built as MODE with PASSES exit passes has
# at least the memory of TMODE with TPASSES (none < one-bit < two-bit < low-memory < memory;
# within a mode, fewer passes is roomier).
roomier() {
  local rank=(none one-bit two-bit low-memory memory) a=0 b=0 i
  for i in 0 1 2 3 4; do
    [ "${rank[$i]}" = "$1" ] && a=$i
    [ "${rank[$i]}" = "$3" ] && b=$i
  done
  [ "$a" -gt "$b" ] || { [ "$a" -eq "$b" ] && [ "$2" -le "$4" ]; }
}
# squeeze_memory BIN N THREADS MODE PASSES: the least --memory, in bytes (to 1 MiB), with which
# `plan --mode MODE` builds level N on THREADS threads with at most PASSES exit passes (`build
# --mode MODE --memory` computes its exit buckets with the same functions). Prints "BYTES MODE
# PASSES" as planned there: more passes where the level cannot have as few as PASSES (the
# fewest it can have).
squeeze_memory() {
  local bin=$1 n=$2 t=$3 mode=$4 passes=$5 lo=0 hi mid got fewest
  # In memory, or any algorithm's fixed parts, fit in 4 bytes per position and 256 MiB.
  hi=$(($(plan_level "$bin" "$n" 1T "$t" | awk '{print $4}') * 4 + (256 << 20)))
  fewest=$(plan_level "$bin" "$n" "$hi" "$t" --mode "$mode" | awk '{print $2}')
  [ "$fewest" -gt "$passes" ] && passes=$fewest
  while [ $((hi - lo)) -gt 1048576 ]; do
    mid=$(((lo + hi) / 2))
    got=$(plan_level "$bin" "$n" "$mid" "$t" --mode "$mode" | awk '{print $1, $2}')
    if roomier $got "$mode" "$passes"; then hi=$mid; else lo=$mid; fi
  done
  echo "$hi $(plan_level "$bin" "$n" "$hi" "$t" --mode "$mode" | awk '{print $1, $2}')"
}
# big_plan BIN PLAN_OPTIONS...: per mode the plan chooses, the largest (tightest) level built
# that way: lines "MODE PASSES LEVEL POSITIONS" (memory, low-memory, two-bit, one-bit).
big_plan() {
  local bin=$1
  shift
  "$bin" plan --disk 1000T --db /nonexistent/awari-plan "$@" | awk '
    $1 ~ /^[0-9]+$/ && NF >= 14 {
      for (m = 3; m <= NF; m++) if ($m ~ /^(memory|low-memory|two-bit|one-bit|does)/) break
      mode = $m; sub(/,$/, "", mode)
      if (mode == "does") next
      passes = 1
      for (i = m + 1; i < NF; i++) if ($(i + 1) == "exit") passes = $i
      last[mode] = passes " " $1 " " $2
    }
    END { for (m in last) print m, last[m] }' | sort -k3,3n
}
# The build summary of `awari-solver build --json`: a JSON object a line, one a level, with its
# keys in a fixed order, "seeds" first (docs/cli.md).
# level_fields FILE N KEY[:FORMAT]...: level N's figures in FILE (- for stdin), where this run
# built it (its "seconds" not null): tab-separated, "–" for null; FORMAT is a Python format
# spec (.2f) or `human` (bytes as the summary table prints them: 47.7 MiB). Nothing when FILE
# has no such line.
level_fields() {
  python3 -c '
import json, sys
sys.stdout.reconfigure(encoding="utf-8")
def human(b):
    for shift, digits, unit in ((40, 1, "TiB"), (30, 2, "GiB"), (20, 1, "MiB"), (10, 1, "KiB")):
        if b >= 1 << shift:
            return f"{b / (1 << shift):.{digits}f} {unit}"
    return f"{b} B"
path, n, keys = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
for line in sys.stdin if path == "-" else open(path):
    if not line.startswith("{"):
        continue
    r = json.loads(line)
    if r["seeds"] != n or r["seconds"] is None:
        continue
    cells = []
    for key in keys:
        key, _, how = key.partition(":")
        v = r[key]
        cells.append("–" if v is None else human(v) if how == "human" else format(v, how))
    print("\t".join(cells))
' "$@"
}
# level_line FILE N: level N's JSON line in FILE (nothing, and success, if there is none).
level_line() {
  grep "^{\"seeds\":$2," "$1" || true
}
# built_totals FILE [FROM [TO]]: "POSITIONS SECONDS" of levels FROM..TO that the run of FILE
# built (its "seconds" not null), each level's seconds to 0.01 s as the summary table gives
# them; the sum to 0.001 s.
built_totals() {
  python3 -c '
import json, sys
path, lo, hi = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
p, s = 0, 0.0
for line in open(path):
    if line.startswith("{"):
        r = json.loads(line)
        if lo <= r["seeds"] <= hi and r["seconds"] is not None:
            sec = r["seconds"]
            p += r["positions"]
            s += float(f"{sec:.2f}")
print(f"{p} {s:.3f}")
' "$1" "${2:-0}" "${3:-48}"
}
# summary_row FILE N: level N's figures in FILE, the output of `build --json`, if this run
# built it, as "SECONDS POS_PER_S ANON_B_PER_POS READ_PER_POS WRITTEN_PER_POS MODE" (as the
# summary table prints them; "–" where unknown).
summary_row() {
  level_fields "$1" "$2" seconds:.2f positions_per_second:.0f peak_anon_bytes_per_position:.2f \
    read_bytes_per_position:.2f written_bytes_per_position:.2f mode | tr '\t' ' '
}
# link_levels FROM TO K: levels 0..K of FROM into TO (hard links, else copies).
link_levels() {
  local k f
  mkdir -p "$2"
  for k in $(seq 0 "$3"); do
    f=$(printf "level-%02d.values" "$k")
    if [ -f "$1/$f" ]; then ln "$1/$f" "$2/$f" 2>/dev/null || cp "$1/$f" "$2/$f"; fi
  done
}

# capped LIMIT CMD...: run CMD in a memory cgroup of LIMIT bytes, the page cache it fills
# counted (cgroup v2 memory.max or v1 memory.limit_in_bytes), so that a level algorithm that
# leans on the page cache instead of its --memory shows it (it slows down by orders of
# magnitude instead of finishing). Needs root and a memory controller; without them CMD runs
# uncapped and CAPPED is set to 0 (else 1). Evict the files CMD reads first (evict_cache):
# pages cached before are not charged to the cgroup. CAPPED_PIDFILE: see below.
CAPPED=0
capped() {
  local limit=$1 g=
  shift
  CAPPED=0
  if [ "$(id -u)" = 0 ]; then
    if [ -f /sys/fs/cgroup/cgroup.controllers ] && grep -qw memory /sys/fs/cgroup/cgroup.controllers; then
      g=/sys/fs/cgroup/awari-capped-$$
      mkdir -p "$g" && echo "$limit" > "$g/memory.max" && echo 0 > "$g/memory.swap.max" 2>/dev/null || true
    elif [ -d /sys/fs/cgroup/memory ]; then
      g=/sys/fs/cgroup/memory/awari-capped-$$
      mkdir -p "$g" && echo "$limit" > "$g/memory.limit_in_bytes" || g=
    fi
  fi
  # The command's pid (the shell execs it) goes to CAPPED_PIDFILE if set: what a kill test kills.
  local rc=0
  if [ -z "$g" ]; then
    bash -c '[ -n "${CAPPED_PIDFILE:-}" ] && echo $$ > "$CAPPED_PIDFILE"; exec "$@"' capped "$@" || rc=$?
    return "$rc"
  fi
  CAPPED=1
  bash -c 'echo $$ > "$1/cgroup.procs"; [ -n "${CAPPED_PIDFILE:-}" ] && echo $$ > "$CAPPED_PIDFILE"; shift; exec "$@"' capped "$g" "$@" || rc=$?
  rmdir "$g" 2>/dev/null || true
  return "$rc"
}

# link_lower_levels DB DIR N: DIR emptied and given levels 0..N-1 of DB's plain tables, hard
# linked where the file system allows (else copied).
link_lower_levels() {
  local db=$1 dir=$2 n=$3 k f
  rm -rf "$dir"
  mkdir -p "$dir"
  for k in $(seq 0 $((n - 1))); do
    f=$(printf "level-%02d.values" "$k")
    if [ -f "$db/$f" ]; then ln "$db/$f" "$dir/$f" 2>/dev/null || cp "$db/$f" "$dir/$f"; fi
  done
}
