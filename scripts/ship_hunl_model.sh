#!/usr/bin/env bash
# Turns the last checkpoint of an ARMAC Hold'em run (FCPA) into a shipped model directory and
# scores it: duplicate matches against uniform and always-call, LBR-FCPA against the model and
# against uniform on the same deals (`--reference uniform`: the ratio of the two with a paired
# 95% interval), and the small seeded match that tests/models.rs
# replays; the same match against uniform and LBR-FCPA for the checkpoint's current policy pi^t
# (`current:`, feed-forward networks; set CURRENT=0 to skip); and the scorecard
# (`armac-eval scorecard`, all five rows for the average and the current policy, at
# SCORECARD_HANDS LBR hands and SCORECARD_MATCH_HANDS match hands, seed SCORECARD_SEED) with
# a small-sample scorecard beside it (`scorecard_check`, 16 LBR and 400 match hands) that
# tests/models.rs re-runs. Everything goes into <OUT>/score.json. PLAY_THRESHOLD=T writes
# `armac.play_threshold = T` into the model's config (`export-model --play-threshold`), so the
# model and every score of it play thresholded; unset, the model keeps its run's own key.
#
# A Student of Games run (its checkpoint holds a CVPN) ships as a search policy, scored as
# `sog:<OUT>` with SEARCH_ITERATIONS CFR+ iterations per search (default 10): no current
# policy, no separate LBR-FCPA row (the scorecard has it), and smaller default samples, since
# every decision runs a search.
#
#   scripts/ship_hunl_model.sh RUN_DIR [OUT_DIR] [MACHINE_TEXT]
#   HANDS=100000 LBR_HANDS=20000 LBR_SEED=13 scripts/ship_hunl_model.sh runs/hunl models/hunl_fcpa_armac
#   SCORE_ONLY=1 scripts/ship_hunl_model.sh models/hunl_fcpa_armac   # only (re)write the scorecard
#   scripts/ship_hunl_model.sh runs/sog models/hunl_fcpa_sog          # a Student of Games run
set -euo pipefail
run=${1:?usage: ship_hunl_model.sh RUN_DIR [OUT_DIR] [MACHINE_TEXT]}
sog=0
if [ -f "$run/checkpoint/cvpn/cvpn_meta.json" ]; then sog=1; fi
out=${2:-models/hunl_fcpa_armac}
machine=${3:-"2-core x86-64 VM, no GPU"}
eval=${EVAL:-target/release/armac-eval}
config_text=${CONFIG_TEXT:-"checkpoint/config.toml"}
sc_seed=${SCORECARD_SEED:-0}
if [ "$sog" = 1 ]; then
  iters=${SEARCH_ITERATIONS:-10}
  search=(--search-iterations "$iters")
  hands=${HANDS:-4000}
  lbr_hands=0
  check_hands=${CHECK_HANDS:-100}
  sc_hands=${SCORECARD_HANDS:-600}
  sc_match_hands=${SCORECARD_MATCH_HANDS:-3000}
  sc_check_hands=${SCORECARD_CHECK_HANDS:-8}
  sc_check_match_hands=${SCORECARD_CHECK_MATCH_HANDS:-40}
  CURRENT=0
else
  iters=0
  search=()
  hands=${HANDS:-100000}
  lbr_hands=${LBR_HANDS:-20000}
  check_hands=${CHECK_HANDS:-2000}
  sc_hands=${SCORECARD_HANDS:-4000}
  sc_match_hands=${SCORECARD_MATCH_HANDS:-20000}
  sc_check_hands=16
  sc_check_match_hands=400
fi
lbr_seed=${LBR_SEED:-13}
# How armac-eval names the model directory $1.
spec() { if [ "$sog" = 1 ]; then echo "sog:$1"; else echo "$1"; fi; }
scorecard() {
  "$eval" scorecard --policy "$(spec "$1")" "${search[@]}" --seed "$sc_seed" --json \
    --hands "$sc_hands" --match-hands "$sc_match_hands" >"$2/scorecard.json"
  "$eval" scorecard --policy "$(spec "$1")" "${search[@]}" --seed "$sc_seed" --json \
    --hands "$sc_check_hands" --match-hands "$sc_check_match_hands" >"$2/scorecard_check.json"
}
# Adds the scorecard and its small-sample check in directory $1 to the score.json $2.
merge_scorecard() {
  python3 - "$1" "$2" "$sc_check_hands" "$sc_check_match_hands" <<'EOF'
import json, sys, os
tmp, path, hands, match_hands = sys.argv[1:5]
score = json.load(open(path))
card = json.load(open(os.path.join(tmp, "scorecard.json")))
score["scorecard"] = card
score["scorecard_check"] = {"hands": int(hands), "match_hands": int(match_hands),
                            "seed": card["seed"],
                            "result": json.load(open(os.path.join(tmp, "scorecard_check.json")))}
json.dump(score, open(path + ".tmp", "w"), indent=2)
os.replace(path + ".tmp", path)
EOF
}

if [ "${SCORE_ONLY:-0}" = 1 ]; then
  # The scorecard of a shipped model; its other score.json keys stay as they are.
  [ -f "$run/score.json" ] || { echo "error: $run/score.json not found" >&2; exit 2; }
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  scorecard "$run" "$tmp"
  merge_scorecard "$tmp" "$run/score.json"
  "$eval" manifest --write "$run"
  echo "wrote the scorecard into $run/score.json"
  exit 0
fi

[ -f "$run/checkpoint/state.json" ] || { echo "error: $run/checkpoint/state.json not found" >&2; exit 2; }
if [ "$sog" = 0 ]; then
  epoch=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["epoch"])' "$run/checkpoint/state.json")
  net=$(printf 'net_%06d.bpk' "$epoch")
  [ -f "$run/reservoir/$net" ] || { echo "error: $run/reservoir/$net not found" >&2; exit 2; }
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The checkpoint's files, verified against the run's manifest, and a model manifest.
"$eval" export-model --checkpoint "$run" --out "$tmp/model" \
  ${PLAY_THRESHOLD:+--play-threshold "$PLAY_THRESHOLD"}

m="$tmp/model"
a=$(spec "$m")
# The matches run beside the LBR rows and the scorecard (each result has its own seed).
(
  "$eval" match --a "$a" "${search[@]}" --b uniform --hands "$hands" --seed 11 --json >"$tmp/vs_uniform.json"
  "$eval" match --a "$a" "${search[@]}" --b always-call --hands "$hands" --seed 12 --json >"$tmp/vs_always_call.json"
  "$eval" match --a always-call --b uniform --hands "$hands" --seed 11 --json >"$tmp/call_vs_uniform.json"
  "$eval" match --a "$a" "${search[@]}" --b uniform --hands "$check_hands" --seed 1 --json >"$tmp/check.json"
) &
matches=$!
if [ "$lbr_hands" -gt 0 ]; then
  lbr=(lbr --variant fcpa --reference uniform --hands "$lbr_hands" --seed "$lbr_seed" --json)
  "$eval" "${lbr[@]}" --policy "$m" >"$tmp/lbr_model.json"
fi
scorecard "$m" "$tmp"
wait "$matches"
if [ "${CURRENT:-1}" = 1 ]; then
  "$eval" match --a "current:$m" --b uniform --hands "$hands" --seed 11 --json >"$tmp/current_vs_uniform.json"
  "$eval" "${lbr[@]}" --policy "current:$m" >"$tmp/lbr_current.json"
fi

python3 - "$tmp" "$run" "$machine" "$check_hands" "$config_text" "$iters" <<'EOF'
import json, sys, os
tmp, run, machine, check_hands, config, iters = sys.argv[1:7]
rd = lambda n: json.load(open(os.path.join(tmp, n)))
summary = {}
p = os.path.join(run, "summary.json")
if os.path.exists(p):
    summary = json.load(open(p))
state = json.load(open(os.path.join(run, "checkpoint", "state.json")))
pick = lambda d, *ks: {k: d[k] for k in ks if k in d}
score = {
    "game": "hunl_fcpa",
    "metric": "match_mbb",
    "value": rd("check.json")["mean_mbb"],
    "check": {"opponent": "uniform", "hands": int(check_hands), "seed": 1},
    "vs_uniform": pick(rd("vs_uniform.json"), "mean_mbb", "ci95_mbb", "hands", "seed"),
    "vs_always_call": pick(rd("vs_always_call.json"), "mean_mbb", "ci95_mbb", "hands", "seed"),
    "always_call_vs_uniform": pick(rd("call_vs_uniform.json"), "mean_mbb", "ci95_mbb", "hands", "seed"),
    "config": config,
    "elapsed_seconds": state.get("elapsed_seconds"),
    "cpu_seconds": summary.get("cpu_seconds"),
    "machine": machine,
    "policy_name": rd("vs_uniform.json")["a"],
}
if os.path.exists(os.path.join(tmp, "lbr_model.json")):
    lbr = rd("lbr_model.json")
    score["lbr_fcpa"] = pick(lbr, "mean", "ci95", "hands", "seed")
    score["lbr_fcpa_uniform"] = dict(pick(lbr["reference"], "mean", "ci95"),
                                     **pick(lbr, "hands", "seed"))
    score["lbr_fcpa_ratio"] = pick(lbr["reference"], "ratio", "ratio_ci95")
if int(iters) > 0:
    # A Student of Games search policy: scored as sog:DIR with this many CFR+ iterations.
    score["policy"] = "sog"
    score["search_iterations"] = int(iters)
    score["rounds"] = state["round"]
else:
    score["epoch"] = state["epoch"]
if os.path.exists(os.path.join(tmp, "lbr_current.json")):
    score["current_policy"] = {
        "vs_uniform": pick(rd("current_vs_uniform.json"), "mean_mbb", "ci95_mbb", "hands", "seed"),
        "lbr_fcpa": pick(rd("lbr_current.json"), "mean", "ci95", "hands", "seed"),
        "lbr_fcpa_ratio": pick(rd("lbr_current.json")["reference"], "ratio", "ratio_ci95"),
    }
json.dump(score, open(os.path.join(tmp, "model", "score.json"), "w"), indent=2)
print(json.dumps(score, indent=2))
EOF
merge_scorecard "$tmp" "$tmp/model/score.json"
"$eval" manifest --write "$tmp/model"
rm -rf "$out"
mkdir -p "$(dirname "$out")"
cp -r "$tmp/model" "$out"
echo "wrote $out"
