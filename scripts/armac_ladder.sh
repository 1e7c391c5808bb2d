#!/usr/bin/env bash
# ARMAC diagnostics ladder on a small game at an equal wall-clock budget per rung:
#   1. tabular exact: full-width CFR (configs/leduc_cfr.toml) — what exact regrets and an exact
#      average reach;
#   2. ARMAC with `armac.diagnostics = true`, read at its last evaluation:
#      - exact RM  : regret matching on the exact regrets of the network's own π^j sequence
#                    (what a perfect W head would play),
#      - exact avg : the exact reach-weighted average of π^j (what a perfect π̄ head would give),
#      - head π̄   : the network's average-policy head,
#      - W error   : mean TV distance between the W head's π and exact RM.
# Usage: scripts/armac_ladder.sh [SECONDS=120] [GAME_PREFIX=leduc] [OUT=/tmp/armac_ladder]
set -euo pipefail
SECS=${1:-120}
PREFIX=${2:-leduc}
OUT=${3:-/tmp/armac_ladder}
BIN=${BIN:-target/release}
mkdir -p "$OUT"
"$BIN/armac-train" --config "${PREFIX}_cfr.toml" --quiet --max-seconds "$SECS" \
  --out "$OUT/cfr" --overwrite > /dev/null
"$BIN/armac-train" --config "${PREFIX}_armac.toml" --quiet --max-seconds "$SECS" \
  --set armac.diagnostics=true --set eval.every=5 --out "$OUT/armac" --overwrite > /dev/null
python3 - "$OUT" "$SECS" <<'PY'
import csv, json, math, sys
out, secs = sys.argv[1], sys.argv[2]
cfr = json.load(open(f"{out}/cfr/summary.json"))
rows = [r for r in csv.DictReader(open(f"{out}/armac/metrics.csv"))
        if not math.isnan(float(r["nash_conv"]))]
last = rows[-1]
w = [float(r["diag_w_error"]) for r in csv.DictReader(open(f"{out}/armac/metrics.csv"))]
print(f"| rung ({secs}s each) | NashConv |")
print("|---|---|")
print(f"| tabular exact CFR ({cfr['iterations']} it) | {cfr['nash_conv']:.4f} |")
print(f"| ARMAC exact RM of own π^j (epoch {last['epoch']}) | {float(last['diag_nash_conv_exact_rm']):.4f} |")
print(f"| ARMAC exact average of π^j | {float(last['diag_nash_conv_exact_avg']):.4f} |")
print(f"| ARMAC head π̄ | {float(last['nash_conv']):.4f} |")
print(f"| ARMAC head π^t | {float(last['nash_conv_current']):.4f} |")
print(f"| W error (mean TV), last / mean | {w[-1]:.4f} / {sum(w)/len(w):.4f} |")
PY
