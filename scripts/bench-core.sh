#!/usr/bin/env bash
# Micro-benchmarks of move generation, ranking, iteration and un-moves (ns per position).
# Usage: scripts/bench-core.sh
set -euo pipefail
cd "$(dirname "$0")/.."
cargo bench -q -p awari-db --bench core 2>/dev/null
