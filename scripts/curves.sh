#!/usr/bin/env bash
# Learning curves on the small games beside the published ones (docs/curves/*.png): trains, on
# seeds 1..SEEDS, ARMAC on Leduc, Liar's Dice and Goofspiel 5 for EPOCHS epochs each under the
# deterministic schedule (armac.schedule = "lockstep": each run is reproducible from its seed),
# Student of Games on Leduc for its config's rounds and outcome-sampling MCCFR on Leduc for 10^8
# iterations, then draws exact NashConv against iterations, learning steps, episodes,
# nodes touched and CPU seconds (median and range of the seeds) with scripts/plot_curves.py.
# A finished run is reused; an interrupted one is resumed.
# Usage: scripts/curves.sh [EPOCHS=500] [SEEDS=3] [OUT=runs/curves] [PLOTS=docs/curves]
set -euo pipefail
cd "$(dirname "$0")/.."
epochs=${1:-500}
seeds=${2:-3}
out=${3:-runs/curves}
plots=${4:-docs/curves}
cargo build --release --quiet --bin armac-train
mkdir -p "$out" "$plots"
train() { # CONFIG DIR SEED [--set ...]
  local config=$1 dir=$2 seed=$3
  shift 3
  if [ -f "$dir/summary.json" ]; then return; fi
  if [ -d "$dir/checkpoints" ]; then
    ./target/release/armac-train --resume "$dir" --quiet "$@" >/dev/null
  else
    rm -rf "$dir"
    ./target/release/armac-train --config "$config" --out "$dir" --quiet --set "seed=$seed" "$@" >/dev/null
  fi
}
for s in $(seq 1 "$seeds"); do
  for g in leduc liars_dice goofspiel5; do
    train "${g}_armac.toml" "$out/${g}_armac_s$s" "$s" --set "armac.epochs=$epochs" \
      --set 'armac.schedule="lockstep"' --set eval.every=25
  done
  train leduc_sog.toml "$out/leduc_sog_s$s" "$s"
  train leduc_os_mccfr.toml "$out/leduc_os_mccfr_s$s" "$s" --set solver.iterations=100000000
done
p() { python3 scripts/plot_curves.py "$@"; }
p --title "ARMAC on Leduc poker (exact NashConv, $seeds seeds)" --out "$plots/leduc_armac.png" \
  --runs "armac (leduc_armac.toml, lockstep)=$out/leduc_armac_s*" \
  --published armac_a --published dream --final "ARMAC paper, best runs' final value=0.18"
p --title "ARMAC on Liar's Dice (exact NashConv, $seeds seeds)" --out "$plots/liars_dice_armac.png" \
  --runs "armac (liars_dice_armac.toml, lockstep)=$out/liars_dice_armac_s*" \
  --final "ARMAC paper, best runs' final value=0.095"
p --title "ARMAC on II-Goofspiel 5 (exact NashConv, $seeds seeds)" --out "$plots/goofspiel5_armac.png" \
  --runs "armac (goofspiel5_armac.toml, lockstep)=$out/goofspiel5_armac_s*" \
  --final "ARMAC paper, best runs' final value=0.5"
p --title "Leduc poker: Student of Games, outcome-sampling MCCFR, ARMAC ($seeds seeds)" \
  --out "$plots/leduc_all.png" \
  --runs "Student of Games (leduc_sog.toml)=$out/leduc_sog_s*" \
  --runs "OS-MCCFR (leduc_os_mccfr.toml)=$out/leduc_os_mccfr_s*" \
  --runs "ARMAC (leduc_armac.toml, lockstep)=$out/leduc_armac_s*" \
  --published dream
