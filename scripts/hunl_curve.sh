#!/usr/bin/env bash
# The scorecard of one Hold'em ARMAC run over training: resumes RUN_DIR one CPU-hour at a time
# (`armac-train --resume RUN_DIR --max-cpu-seconds 3600`) up to HOURS CPU-hours in all. After
# each hour it exports the checkpoint as a model (OUT_DIR/models/hN, so any hour can be scored
# again later, e.g. with another --play-threshold) and writes that model's scorecard
# (`armac-eval scorecard`, the same seed every hour, so every point plays the same deals) to
# OUT_DIR/sc_hN.json. Hours whose scorecard exists are skipped, so a stopped curve continues
# where it stopped (stop it with SIGTERM: the trainer checkpoints first). Then plots the
# points (scripts/plot_scorecard_curve.py, OUT_DIR/curve.png and curve.csv).
#
#   scripts/hunl_curve.sh RUN_DIR OUT_DIR [HOURS]
#   armac-train --config nlhe_fcpa.toml --out runs/long --max-cpu-seconds 3600 --set seed=2
#   scripts/hunl_curve.sh runs/long runs/long_curve 8
# Environment: BIN (directory of armac-train and armac-eval, default target/release), SEED
# (scorecard seed, default 0), HANDS and MATCH_HANDS (the scorecard's LBR and match hands,
# default 4000 and 20000), THREADS (default 2), LEG_SECONDS (CPU-seconds a leg, 3600),
# PLAY_THRESHOLD (score with --play-threshold T instead of the run's armac.play_threshold).
set -euo pipefail
run=${1:?usage: hunl_curve.sh RUN_DIR OUT_DIR [HOURS]}
out=${2:?usage: hunl_curve.sh RUN_DIR OUT_DIR [HOURS]}
hours=${3:-8}
bin=${BIN:-target/release}
seed=${SEED:-0}
threads=${THREADS:-2}
leg=${LEG_SECONDS:-3600}
hands=${HANDS:-4000}
match_hands=${MATCH_HANDS:-20000}
threshold=()
[ -n "${PLAY_THRESHOLD:-}" ] && threshold=(--play-threshold "$PLAY_THRESHOLD")
[ -f "$run/config.toml" ] || { echo "error: $run is not a run directory (no config.toml)" >&2; exit 2; }
case "$hours" in '' | *[!0-9]*) echo "error: HOURS must be a whole number, got '$hours'" >&2; exit 2 ;; esac
mkdir -p "$out/models"
trap 'rm -f "$out"/sc_h*.json.tmp' EXIT
points=()
for h in $(seq 1 "$hours"); do
  card="$out/sc_h$h.json"
  model="$out/models/h$h"
  if [ ! -f "$card" ]; then
    if [ ! -d "$model" ]; then
      # The run's first hour is its own training; every later hour is one resumed leg.
      if [ "$h" -gt 1 ]; then
        "$bin/armac-train" --resume "$run" --max-cpu-seconds "$leg" --quiet
      fi
      "$bin/armac-eval" export-model --checkpoint "$run" --out "$model" >/dev/null
    fi
    "$bin/armac-eval" scorecard --policy "$model" --seed "$seed" --threads "$threads" \
      --hands "$hands" --match-hands "$match_hands" "${threshold[@]}" --json \
      --out "$card.tmp" >/dev/null
    mv "$card.tmp" "$card"
    echo "hour $h: $card"
  fi
  points+=("$h=$card")
done
python3 "$(dirname "$0")/plot_scorecard_curve.py" "${points[@]}" --out "$out/curve.png"
