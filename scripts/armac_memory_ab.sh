#!/usr/bin/env bash
# Side-by-side A/B of ARMAC's target memories on one config: Algorithm 1's replay memory
# (`armac.memory = "replay"`, 512 episodes and 100 learning steps per epoch: the earlier Leduc
# default) against the reservoir memory (`armac.memory = "reservoir"`, EPISODES and STEPS per
# epoch). Both runs start together and share the machine, so their wall-clock budgets are
# comparable; the table gives epochs reached and the exact NashConv of the average-policy head
# (last evaluation and best), read from metrics.csv.
# Usage: scripts/armac_memory_ab.sh [SECONDS=600] [CONFIG=leduc_armac.toml] [EPISODES=1024]
#        [STEPS=25] [SEED=1] [OUT=runs/armac_memory_ab]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-600}
config=${2:-leduc_armac.toml}
episodes=${3:-1024}
steps=${4:-25}
seed=${5:-1}
out=${6:-runs/armac_memory_ab}
cargo build --release --quiet --bin armac-train
rm -rf "$out/replay" "$out/reservoir"
mkdir -p "$out"
common=(--config "$config" --max-seconds "$seconds" --quiet --set "seed=$seed"
  --set armac.epochs=1000000 --set eval.every=20 --set armac.diagnostics=false)
./target/release/armac-train "${common[@]}" --set 'armac.memory="replay"' \
  --set armac.episodes_per_epoch=512 --set armac.learning_steps_per_epoch=100 \
  --out "$out/replay" &
./target/release/armac-train "${common[@]}" --set 'armac.memory="reservoir"' \
  --set "armac.episodes_per_epoch=$episodes" --set "armac.learning_steps_per_epoch=$steps" \
  --out "$out/reservoir" &
wait
python3 - "$out" <<'PY'
import csv, math, sys
out = sys.argv[1]
print(f"{'memory':10} {'epochs':>7} {'seconds':>8} {'last NashConv':>14} {'best':>8}")
for name in ("replay", "reservoir"):
    rows = list(csv.DictReader(open(f"{out}/{name}/metrics.csv")))
    evals = [(int(r["epoch"]), float(r["nash_conv"])) for r in rows
             if not math.isnan(float(r["nash_conv"]))]
    last = evals[-1][1] if evals else float("nan")
    best = min((v for _, v in evals), default=float("nan"))
    print(f"{name:10} {rows[-1]['epoch']:>7} {float(rows[-1]['seconds']):8.0f} {last:14.3f} {best:8.3f}")
PY
