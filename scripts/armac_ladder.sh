#!/usr/bin/env bash
# ARMAC ablation ladder on a small game at an equal wall-clock budget per rung:
#   1. tabular exact: full-width CFR (configs/<game>_cfr.toml): what exact regrets and an exact
#      average reach;
#   2. ARMAC, exact advantages: `armac.exact_advantages = true` (the mean-regret targets are
#      q_{π^j}(h,a) − v_{π^j}(h) from the game tree, no critic error);
#   3. ARMAC as configured (learned critic).
# Rungs 2 and 3 run with `armac.diagnostics = true`; at their last evaluation the table reads
#   - exact avg : the exact reach-weighted average of the network's own π^j (a perfect π̄ head),
#   - exact RM  : regret matching on the exact regrets of that sequence (a perfect W head),
#   - W error   : mean TV distance between the head's π^{t+1} and exact RM, split into
#       W data : regret matching on the replay's per-infoset mean targets (a regression of
#                unlimited capacity, i.e. tabular W on the same samples) vs exact RM, and
#       W fit  : the head vs that tabular W.
# Usage: scripts/armac_ladder.sh [SECONDS=120] [GAME_PREFIX=leduc] [OUT=/tmp/armac_ladder]
#        (extra ARMAC keys in ARMAC_SET, e.g. ARMAC_SET="armac.hidden=64 armac.polyak=0.99")
set -euo pipefail
SECS=${1:-120}
PREFIX=${2:-leduc}
OUT=${3:-/tmp/armac_ladder}
BIN=${BIN:-target/release}
mkdir -p "$OUT"
SETS=()
for kv in ${ARMAC_SET:-}; do SETS+=(--set "$kv"); done
"$BIN/armac-train" --config "${PREFIX}_cfr.toml" --quiet --max-seconds "$SECS" \
  --out "$OUT/cfr" --overwrite > /dev/null
"$BIN/armac-train" --config "${PREFIX}_armac.toml" --quiet --max-seconds "$SECS" \
  --set armac.diagnostics=true --set armac.exact_advantages=true --set eval.every=5 \
  "${SETS[@]}" --out "$OUT/exact_adv" --overwrite > /dev/null
"$BIN/armac-train" --config "${PREFIX}_armac.toml" --quiet --max-seconds "$SECS" \
  --set armac.diagnostics=true --set eval.every=5 "${SETS[@]}" --out "$OUT/armac" \
  --overwrite > /dev/null
python3 - "$OUT" "$SECS" <<'PY'
import csv, json, math, sys
out, secs = sys.argv[1], sys.argv[2]
cfr = json.load(open(f"{out}/cfr/summary.json"))
print(f"| rung ({secs} s each) | epochs | head π̄ | head π^t | exact avg | exact RM | W error | W data | W fit |")
print("|---|---|---|---|---|---|---|---|---|")
print(f"| tabular exact CFR ({cfr['iterations']} it) | | {cfr['nash_conv']:.3f} | | | | | | |")
for name, label in [("exact_adv", "ARMAC, exact advantages"), ("armac", "ARMAC, learned critic")]:
    rows = [r for r in csv.DictReader(open(f"{out}/{name}/metrics.csv"))
            if not math.isnan(float(r["nash_conv"]))]
    r = rows[-1]
    f = lambda k: float(r[k])
    print(f"| {label} | {r['epoch']} | {f('nash_conv'):.3f} | {f('nash_conv_current'):.3f} "
          f"| {f('diag_nash_conv_exact_avg'):.3f} | {f('diag_nash_conv_exact_rm'):.3f} "
          f"| {f('diag_w_error'):.3f} | {f('diag_w_sampling_error'):.3f} | {f('diag_w_fit_error'):.3f} |")
PY
