#!/usr/bin/env bash
# A full disk loses nothing: each long writer is run on a small tmpfs that another file fills
# while it works, must exit 1 with one line naming the path (and, for a build, the space the
# level needs), must leave nothing under a final name, and, once the space is freed, must
# write the same bytes as on a roomy disk (the two-bit build resuming where it stopped).
#
# Writers: build in each mode (memory, low-memory, two-bit), depth, compress, verify --prove
# (its work files). Needs root (it mounts a tmpfs); .ci/run runs it.
#
# Usage: scripts/full-disk.sh [N=18]   SOLVER=path: that binary
set -euo pipefail
N=${1:-18}
cd "$(dirname "$0")/.."
. scripts/common.sh
solver_bin
if [ "$(id -u)" != 0 ]; then
  echo "full-disk.sh: needs root to mount a tmpfs" >&2
  exit 2
fi
WORK=$(mktemp -d)
MNT=$WORK/mnt
mkdir -p "$MNT"
cleanup() {
  umount "$MNT" 2> /dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT
REF=$WORK/ref
"$BIN" build --db "$REF" --max-stones "$N" --threads 2 --depth --depth-form plain > /dev/null
lower_bytes=$(du -cb "$REF"/level-*.values | tail -1 | cut -f1)
last=$(printf '%s/level-%02d' "$REF" "$N")
# Room for the lower levels and their depth tables, and twice what the writer needs.
SIZE=$(((lower_bytes * 3 + 64 * 1024 * 1024) / 1024 / 1024))
mount -t tmpfs -o size=${SIZE}m tmpfs "$MNT"
fails=0
fail() {
  echo "FAIL: $*" >&2
  fails=$((fails + 1))
}

# fill_while PATTERN CMD...: run CMD; once a file matching PATTERN appears under $MNT (the
# writer has begun), or, with PATTERN log:TEXT, once TEXT appears in its stderr (a progress
# line: the in-memory build writes nothing before its table, and that in a few milliseconds),
# fill the tmpfs to its last 64 KiB; return CMD's status, its stderr in $WORK/err.
fill_while() {
  local pattern=$1
  shift
  "$@" > /dev/null 2> "$WORK/err" &
  local pid=$!
  for _ in $(seq 1 2000); do
    if [ "${pattern#log:}" != "$pattern" ]; then
      grep -q "${pattern#log:}" "$WORK/err" && break
    elif compgen -G "$MNT/$pattern" > /dev/null; then
      break
    fi
    kill -0 "$pid" 2> /dev/null || break
    sleep 0.005
  done
  local free
  free=$(df -B1 --output=avail "$MNT" | tail -1)
  fallocate -l $((free > 65536 ? free - 65536 : 0)) "$MNT/filler" 2> /dev/null || true
  local rc=0
  wait "$pid" || rc=$?
  rm -f "$MNT/filler"
  return $rc
}

# check NAME RC FINAL: the writer NAME ended with RC, must be 1 with a one-line message
# naming the tmpfs, and FINAL (a final name) must not exist (progress lines, which start
# with a date, aside).
check() {
  local name=$1 rc=$2 final=$3
  local lines
  lines=$(grep -Ecv '^level [0-9]*: starting afresh|^[0-9]{4}-[0-9]{2}-[0-9]{2} ' "$WORK/err" || true)
  if [ "$rc" = 0 ]; then
    echo "$name: finished before the disk filled (nothing tested); make N larger" >&2
    fails=$((fails + 1))
    return
  fi
  [ "$rc" = 1 ] || fail "$name: exit $rc, expected 1: $(cat "$WORK/err")"
  grep -q "$MNT" "$WORK/err" || fail "$name: the message names no path: $(cat "$WORK/err")"
  grep -qi "no space\|disk is full" "$WORK/err" || fail "$name: the message does not say the disk is full: $(cat "$WORK/err")"
  [ "$lines" -le 2 ] || fail "$name: $lines lines of error: $(cat "$WORK/err")"
  [ ! -e "$final" ] || fail "$name: $final exists after a full disk"
  echo "$name: $(tail -1 "$WORK/err")"
}

fresh_db() {
  rm -rf "$MNT/db"
  mkdir -p "$MNT/db"
  for ((k = 0; k < N; k++)); do
    [ $k = 47 ] || cp "$(printf '%s/level-%02d.values' "$REF" $k)" "$MNT/db/"
  done
}

db_level=$(printf '%s/db/level-%02d' "$MNT" "$N")
# The memory of each mode's run: the out-of-core ones in several exit passes.
memory() { if [ "$1" = memory ]; then echo 1G; else echo 64M; fi; }
# The in-memory build is filled once its first progress line for level N is out.
started() { if [ "$1" = memory ]; then echo "log:level $N "; else echo "db/level-$(printf %02d "$N")*"; fi; }
for mode in memory low-memory two-bit; do
  fresh_db
  rc=0
  fill_while "$(started "$mode")" "$BIN" build --db "$MNT/db" --max-stones "$N" --threads 2 --mode "$mode" --memory "$(memory "$mode")" --log-every 0.05 || rc=$?
  check "build --mode $mode" "$rc" "$db_level.values"
  [ "$mode" != two-bit ] || grep -q "resumes the level" "$WORK/err" || fail "two-bit: the message does not say it resumes"
  "$BIN" build --db "$MNT/db" --max-stones "$N" --threads 2 --mode "$mode" --memory "$(memory "$mode")" > /dev/null 2> "$WORK/err2" \
    || fail "build --mode $mode after freeing space: $(cat "$WORK/err2")"
  cmp "$db_level.values" "$last.values" || fail "build --mode $mode: another table after a full disk"
done

# The depth pass, compress and the proof's work files, on the level just built.
rm -f "$db_level.depth"
rc=0
fill_while "db/level-$(printf %02d "$N").d*" "$BIN" depth --db "$MNT/db" --stones "$N" --threads 2 || rc=$?
check "depth" "$rc" "$db_level.depth"
"$BIN" depth --db "$MNT/db" --stones "$N" --threads 2 > /dev/null 2> "$WORK/err2" || fail "depth after freeing space: $(cat "$WORK/err2")"
cmp "$db_level.depth" "$last.depth" || fail "depth: another table after a full disk"

# Compress is fast: the disk is filled to its last MiB before it starts.
free=$(df -B1 --output=avail "$MNT" | tail -1)
fallocate -l $((free - 1024 * 1024)) "$MNT/filler"
rc=0
"$BIN" compress --db "$MNT/db" --out "$MNT/out" --stones "$N" > /dev/null 2> "$WORK/err" || rc=$?
rm -f "$MNT/filler"
check "compress" "$rc" "$(printf '%s/out/level-%02d.cvalues' "$MNT" "$N")"
"$BIN" compress --db "$MNT/db" --out "$MNT/out" --stones "$N" > /dev/null 2> "$WORK/err2" || fail "compress after freeing space: $(cat "$WORK/err2")"
rm -rf "$MNT/out"

rm -f "$db_level.depth"
rc=0
fill_while "db/level-$(printf %02d "$N").d*" "$BIN" verify --db "$MNT/db" --stones "$N" --prove --threads 2 || rc=$?
check "verify --prove" "$rc" "$db_level.depth"
"$BIN" verify --db "$MNT/db" --stones "$N" --prove --threads 2 > /dev/null 2> "$WORK/err2" || fail "verify --prove after freeing space: $(cat "$WORK/err2")"

if [ $fails -gt 0 ]; then
  echo "full-disk.sh: $fails failure(s)" >&2
  exit 1
fi
echo "full-disk.sh: every writer met a full disk cleanly and wrote the same bytes after"
