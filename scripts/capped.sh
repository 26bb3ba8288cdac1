#!/usr/bin/env bash
# Run one command at a given memory, the page cache counted: in a memory cgroup of LIMIT bytes
# (cgroup v2 or v1; needs root), after evicting the tables of DB from the page cache (pages
# cached before would not be charged to the cgroup). A level algorithm that stays within its
# --memory and reads its files in order runs about as fast capped as not; one that reads a
# table at random, relying on the page cache to hold it, slows down by orders of magnitude.
# Prints the wall time, the bytes read from storage (by /usr/bin/time, 512-byte blocks) and
# the exit status; TIMEOUT (seconds, default none) stops the command.
#
# Usage: scripts/capped.sh LIMIT DB CMD...     LIMIT in bytes or with a suffix (191M, 2G)
# e.g.   scripts/capped.sh 191M DB awari-solver verify --db DB --stones 24 --prove --memory 130M
set -euo pipefail
[ $# -ge 3 ] || { sed -n '2,14p' "$0"; exit 2; }
LIMIT=$(numfmt --from=iec "$1")
DB=$2
shift 2
cd "$(dirname "$0")/.."
. scripts/common.sh
cd - > /dev/null
shopt -s nullglob
tables=("$DB"/level-*.values "$DB"/level-*.cvalues "$DB"/level-*.depth "$DB"/level-*.cdepth)
[ ${#tables[@]} -gt 0 ] && evict_cache "${tables[@]}"
timing=$(mktemp)
trap 'rm -f "$timing"' EXIT
rc=0
capped "$LIMIT" /usr/bin/time -o "$timing" -f '%e %I %M' ${TIMEOUT:+timeout "$TIMEOUT"} "$@" || rc=$?
read -r secs blocks rss < <(tail -1 "$timing")
[ "$CAPPED" = 1 ] || echo "(not capped: needs root and a memory cgroup)"
awk -v s="$secs" -v b="$blocks" -v r="$rss" -v l="$LIMIT" -v rc="$rc" 'BEGIN {
  printf "capped at %.1f MiB: %s s, read %.2f GiB from storage, peak RSS %.1f MiB, exit %d\n",
    l / 1048576, s, b * 512 / 1073741824, r / 1024, rc }'
exit "$rc"
