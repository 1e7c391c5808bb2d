#!/usr/bin/env bash
# ARMAC learning curves on the small games: trains each config for SECONDS of wall-clock time
# (CPU backend), then writes CSV + PNG of the exact NashConv of the average-policy head against
# epochs and against seconds, with the ARMAC paper's final values as reference lines.
# Usage: scripts/armac_curves.sh [SECONDS=1200] [OUT_DIR=runs/armac_curves] [GAMES...]
# GAMES default to: leduc liars_dice goofspiel5 (configs/<game>_armac.toml).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-1200}
out=${2:-runs/armac_curves}
shift $(( $# > 2 ? 2 : $# )) || true
games=("$@")
[ ${#games[@]} -eq 0 ] && games=(leduc liars_dice goofspiel5)
cargo build --release --quiet --bin armac-train
mkdir -p "$out"
declare -A paper=([leduc]=0.18 [liars_dice]=0.095 [goofspiel5]=0.5)
for g in "${games[@]}"; do
  dir="$out/${g}_armac"
  if [ -f "$dir/checkpoint/state.json" ]; then
    ./target/release/armac-train --resume --out "$dir" --max-seconds "$seconds" --quiet
  else
    ./target/release/armac-train --config "configs/${g}_armac.toml" --out "$dir" \
      --max-seconds "$seconds" --quiet
  fi
  python3 scripts/plot_metrics.py "$dir" --x epoch --out "$out/${g}_armac.png" \
    --reference "paper ${g}=${paper[$g]:-0}"
done
