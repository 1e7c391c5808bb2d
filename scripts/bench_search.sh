#!/usr/bin/env bash
# Student of Games throughput (`armac-bench search`, CPU, scalar f64 regret engine; there is
# no tensor engine yet): GT-CFR searches per second at the game's root with an untrained CVPN
# at the frontier, B = 1 (the B searches one after the other, one forward per single update
# each) against B in lock-step (`search::run_lockstep`: one forward per single update for all
# B), repetitions interleaved (B = 1 block, then the lock-step block) so that load changes on a
# shared machine hit both alike; medians of wall-clock and CPU-time rates and their ratios;
# then query re-solves per second and CVPN learner steps per second. The JSON lines go to
# $JSONL (default /tmp/bench_search_GAME.jsonl); the load average is in the summary.
#
# Usage: scripts/bench_search.sh [GAME] [B] [S]
#   env: REPEATS=5 SOLVES=64 STEPS=50 JSONL=path
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet --bin armac-bench
GAME="${1:-leduc_poker}"
B="${2:-64}"
S="${3:-20}"
JSONL="${JSONL:-/tmp/bench_search_${GAME}.jsonl}"
./target/release/armac-bench search --game "$GAME" --batch "$B" --simulations "$S" \
    --repeats "${REPEATS:-5}" --solves "${SOLVES:-64}" --steps "${STEPS:-50}" | tee "$JSONL"
python3 - "$JSONL" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
s = [r for r in rows if r.get("summary")][0]
print(f"{s['game']}  s = {s['simulations']}  B = {s['batch']}  engine = {s['engine']}  "
      f"load average {s['load_average']}")
print(f"  searches/s   B = 1: {s['b1_searches_per_second']:.2f}   lock-step: "
      f"{s['lockstep_searches_per_second']:.2f}   ratio {s['lockstep_over_b1']:.2f} "
      f"(CPU time: {s['lockstep_over_b1_cpu']:.2f})")
print(f"  CVPN forwards per search   B = 1: {s['forwards_per_search_b1']:.1f}   "
      f"lock-step: {s['forwards_per_search_lockstep']:.2f}")
print(f"  queries solved/s: {s['queries_solved_per_second']:.2f} "
      f"(per CPU second: {s['queries_solved_per_cpu_second']:.2f})   "
      f"learner steps/s (batch {s['learner_batch']}): {s['learner_steps_per_second']:.1f} "
      f"(per CPU second: {s['learner_steps_per_cpu_second']:.1f})")
print("  (searches/s and CPU rates: wall-clock rates on a loaded machine are upper-bounded by "
      "the load; compare the ratios)")
PY
