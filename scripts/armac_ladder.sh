#!/usr/bin/env bash
# ARMAC ablation ladder on a small game at an equal budget per rung:
#   1. tabular CFR: full-width CFR (configs/<game>_cfr.toml), exact regrets and an exact average;
#   2. tabular W, exact advantages: `armac.tabular_w = true` (π^t is regret matching on the
#      reservoir's per-infoset mean targets instead of the W̄ head) and
#      `armac.exact_advantages = true` (targets q_{π^j}(h,a) − v_{π^j}(h) from the game tree):
#      what sampling alone loses;
#   3. tabular W, learned critic: adds the critic's error (`advantage_target = "history"`, the
#      critic's own advantages; `tab_corrected` instead: the critic as a control variate of the
#      sampled return, `advantage_target = "corrected"`, what the shipped configs use);
#   4. neural W, exact advantages: adds the W̄ head's fit, no critic error;
#   5. ARMAC as configured: everything learned.
# The ARMAC rungs run with `armac.diagnostics = true`; the table reads, at the last evaluation:
#   - head π̄ : NashConv of the average-policy head (also the median of the last 5 evaluations),
#   - π^t    : NashConv of the policy the actors play (the table's in rungs 2-3, the head's in 4-5),
#   - exact avg : NashConv of the exact reach-weighted average of that π^j sequence (a perfect π̄
#                 head),
#   - exact RM  : NashConv of regret matching on the exact regrets of the sequence,
#   - W data : mean TV distance between regret matching on the reservoir's per-infoset means and
#              exact RM; W fit : the played π^t against the former (0 for the tabular rungs);
#   - critic RMSE, adv. RMSE, wrong sign (mass): the critic against the exact q of π^t (chips:
#              of q and of the advantages q − v; share of wrong-sign advantages, and that share
#              weighted by the advantages' magnitudes); drift: how far the exact q moves from π^t
#              to π^{t+1} (chips).
# Usage: scripts/armac_ladder.sh [BUDGET=120] [GAME_PREFIX=leduc] [OUT=/tmp/armac_ladder]
#   BUDGET_KIND=cpu: stop each rung after BUDGET CPU-seconds (`--max-cpu-seconds`, which the
#   machine's load does not change) instead of BUDGET wall seconds; JOBS=2 runs two rungs at a
#   time; RUNGS="cfr tab_exact tab_critic tab_corrected exact_adv armac" picks rungs; extra ARMAC keys in
#   ARMAC_SET, e.g. ARMAC_SET="armac.hidden=64" (the tabular rungs need
#   ARMAC_SET='armac.behaviour="uniform" armac.memory_weights="none"' where the config explores
#   with candidates, as small_fcpa_armac.toml does); DIAG=0 turns the diagnostics off (on games of
#   millions of histories they cost several seconds an epoch; the table then has only the two
#   NashConv columns), EVERY sets the epochs between evaluations (default 5).
set -euo pipefail
BUDGET=${1:-120}
PREFIX=${2:-leduc}
OUT=${3:-/tmp/armac_ladder}
BIN=${BIN:-target/release}
JOBS=${JOBS:-1}
RUNGS=${RUNGS:-cfr tab_exact tab_critic tab_corrected exact_adv armac}
STOP=(--max-seconds "$BUDGET")
[ "${BUDGET_KIND:-wall}" = cpu ] && STOP=(--max-cpu-seconds "$BUDGET")
DIAGNOSTICS=true
[ "${DIAG:-1}" = 0 ] && DIAGNOSTICS=false
mkdir -p "$OUT"
SETS=()
for kv in ${ARMAC_SET:-}; do SETS+=(--set "$kv"); done
run_rung() {
  local name=$1
  local keys=()
  case $name in
    cfr)
      "$BIN/armac-train" --config "${PREFIX}_cfr.toml" --quiet --max-seconds "$BUDGET" \
        --out "$OUT/cfr" --overwrite > /dev/null
      return ;;
    tab_exact) keys=(--set armac.tabular_w=true --set armac.exact_advantages=true) ;;
    tab_critic) keys=(--set armac.tabular_w=true --set armac.advantage_target=\"history\") ;;
    tab_corrected) keys=(--set armac.tabular_w=true --set armac.advantage_target=\"corrected\") ;;
    exact_adv) keys=(--set armac.exact_advantages=true) ;;
    armac) keys=() ;;
    *) echo "unknown rung $name" >&2; exit 2 ;;
  esac
  "$BIN/armac-train" --config "${PREFIX}_armac.toml" --quiet "${STOP[@]}" \
    --set armac.diagnostics="$DIAGNOSTICS" --set eval.every="${EVERY:-5}" "${keys[@]}" "${SETS[@]}" \
    --out "$OUT/$name" --overwrite > /dev/null
}
running=0
for r in $RUNGS; do
  run_rung "$r" &
  running=$((running + 1))
  if [ "$running" -ge "$JOBS" ]; then wait -n; running=$((running - 1)); fi
done
wait
python3 - "$OUT" "$BUDGET" "${BUDGET_KIND:-wall}" "$RUNGS" <<'PY'
import csv, json, math, os, statistics, sys
out, budget, kind, rungs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4].split()
labels = {
    "tab_exact": "tabular W, exact advantages",
    "tab_critic": "tabular W, learned critic",
    "tab_corrected": "tabular W, corrected targets",
    "exact_adv": "neural W, exact advantages",
    "armac": "ARMAC as configured (neural W, learned critic)",
}
print(f"| rung ({budget} {kind} s each) | epochs | head π̄ (median last 5) | π^t | exact avg | exact RM | W data | W fit | critic RMSE | adv. RMSE | drift | wrong sign (mass) |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|")
if "cfr" in rungs and os.path.exists(f"{out}/cfr/summary.json"):
    cfr = json.load(open(f"{out}/cfr/summary.json"))
    print(f"| tabular CFR ({cfr['iterations']} it, wall budget) | | {cfr['nash_conv']:.3f} | | | | | | | | | |")
for name in rungs:
    if name == "cfr":
        continue
    rows = [r for r in csv.DictReader(open(f"{out}/{name}/metrics.csv"))
            if not math.isnan(float(r["nash_conv"]))]
    r = rows[-1]
    f = lambda k: float(r.get(k, "nan"))
    med = statistics.median(float(x["nash_conv"]) for x in rows[-5:])
    print(f"| {labels[name]} | {r['epoch']} | {f('nash_conv'):.3f} ({med:.3f}) | {f('nash_conv_current'):.3f} "
          f"| {f('diag_nash_conv_exact_avg'):.3f} | {f('diag_nash_conv_exact_rm'):.3f} "
          f"| {f('diag_w_sampling_error'):.3f} | {f('diag_w_fit_error'):.3f} "
          f"| {f('diag_critic_rmse'):.3f} | {f('diag_critic_adv_rmse'):.3f} | {f('diag_critic_drift'):.3f} "
          f"| {f('diag_critic_wrong_sign'):.3f} ({f('diag_critic_wrong_mass'):.3f}) |")
PY
