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
