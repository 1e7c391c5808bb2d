#!/usr/bin/env bash
# Student of Games on a small game: trains configs/<game>_sog.toml, then prints the exact
# NashConv of the whole-game search policy (continual re-solving, GT-CFR) at several search
# budgets with three evaluators at the frontier: the initial CVPN (a run of one round without
# learner steps), the trained CVPN, and the exact subgame oracle.
# Usage: scripts/repro_sog.sh [ROUNDS=100] [GAME_PREFIX=leduc] [OUT=/tmp/repro_sog]
#        SIMS="20 50 200 800" to choose the budgets; ORACLE=0 skips the (slow) oracle column.
set -euo pipefail
ROUNDS=${1:-100}
PREFIX=${2:-leduc}
OUT=${3:-/tmp/repro_sog}
BIN=${BIN:-target/release}
SIMS=${SIMS:-20 50 200 800}
ORACLE=${ORACLE:-1}
mkdir -p "$OUT"
"$BIN/armac-train" --config "${PREFIX}_sog.toml" --quiet --overwrite --out "$OUT/initial" \
  --set sog.rounds=1 --set sog.selfplay.steps_per_round=0 --set sog.exact_eval=false
start=$(date +%s)
"$BIN/armac-train" --config "${PREFIX}_sog.toml" --quiet --overwrite --out "$OUT/trained" \
  --set "sog.rounds=$ROUNDS" --set eval.every=10
echo "trained $ROUNDS rounds in $(( $(date +%s) - start )) s (curve: $OUT/trained/metrics.csv)"
game=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['game'])" \
  "$OUT/trained/summary.json")
nc() { python3 -c "import json,sys; print('%.4f' % json.load(sys.stdin)['nash_conv'])"; }
printf '%8s %12s %12s %12s\n' s initial trained oracle
for s in $SIMS; do
  a=$("$BIN/armac-eval" search-nashconv --run "$OUT/initial" --simulations "$s" --json | nc)
  b=$("$BIN/armac-eval" search-nashconv --run "$OUT/trained" --simulations "$s" --json | nc)
  c=-
  if [ "$ORACLE" = 1 ]; then
    c=$("$BIN/armac-eval" search-nashconv --game "$game" --simulations "$s" --json | nc)
  fi
  printf '%8s %12s %12s %12s\n' "$s" "$a" "$b" "$c"
done
