#!/usr/bin/env bash
# How compressible each level's values are: their entropy in bits per position under the
# contexts a table coder could use, and under capture don't-cares (db/examples/value_entropy.rs
# says what each line means). The measurements behind the compressed format and its next step.
# Where a level has a depth table, the same for its depths under the contexts a depth coder
# could use (db/examples/depth_entropy.rs: what coder 5's contexts were chosen by).
#
# Usage: scripts/entropy.sh DB "LEVELS"      e.g. scripts/entropy.sh awari-db "16 20 24"
#   DEPTH_ONLY=1   only the depths
set -euo pipefail
DB=${1:?usage: scripts/entropy.sh DB "LEVELS"}
LEVELS=${2:?usage: scripts/entropy.sh DB "LEVELS"}
cd "$(dirname "$0")/.."
. scripts/common.sh
cargo build --release -q -p awari-db --example value_entropy --example depth_entropy
TARGET=$(target_dir)
for n in $LEVELS; do
  if [ "${DEPTH_ONLY:-}" != 1 ]; then
    /usr/bin/time -f "  (%e s, peak RSS %M KiB)" "$TARGET/release/examples/value_entropy" "$DB" "$n"
  fi
  nn=$(printf %02d "$n")
  if [ -e "$DB/level-$nn.depth" ] || [ -e "$DB/level-$nn.cdepth" ]; then
    /usr/bin/time -f "  (%e s, peak RSS %M KiB)" "$TARGET/release/examples/depth_entropy" "$DB" "$n"
  fi
done
