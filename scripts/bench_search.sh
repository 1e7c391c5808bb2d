#!/usr/bin/env bash
# Student of Games throughput (`armac-bench search`, CPU, scalar f64 regret engine, and the
# scalar/tensor engine ratio: the same searches on the tensor engine, flex f64, B = 1 and
# lock-step, interleaved, medians): GT-CFR searches per second at the game's root with an untrained CVPN
# (inference snapshot, as self-play actors use) at the frontier, B = 1 (the B searches one
# after the other, one forward per single update each) against B in lock-step
# (`search::run_lockstep`: one forward per single update for all B), repetitions interleaved
# (B = 1 block, then the lock-step block) so that load changes on a shared machine hit both
# alike; medians of wall-clock and CPU-time rates (CPU: all threads, ns resolution) and their
# ratios; where the time went on each side (layout, CFR updates, query gathering, feature
# encoding, CVPN forward, decoding, simulations; microseconds per search); self-play games
# one by one against groups of B (`[sog.search] batch`); then query re-solves per second and
# CVPN learner steps per second. The JSON lines go to $JSONL (default
# /tmp/bench_search_GAME.jsonl); the load average is in the summary.
#
# Usage: scripts/bench_search.sh [GAME] [B] [S]
#   env: REPEATS=5 SOLVES=64 STEPS=50 GAMES=32 ENGINE_B=64 JSONL=path
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet --bin armac-bench
GAME="${1:-leduc_poker}"
B="${2:-64}"
S="${3:-20}"
JSONL="${JSONL:-/tmp/bench_search_${GAME}.jsonl}"
./target/release/armac-bench search --game "$GAME" --batch "$B" --simulations "$S" \
    --repeats "${REPEATS:-5}" --solves "${SOLVES:-64}" --steps "${STEPS:-50}" \
    --games "${GAMES:-32}" --engine-batch "${ENGINE_B:-64}" | tee "$JSONL"
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
for p in [r for r in rows if r.get("bench") == "search_profile"]:
    parts = "  ".join(f"{k} {v:.0f}" for k, v in p["us_per_search"].items())
    print(f"  {p['side']:>8}: {p['us_per_search_total']:.0f} us/search = {parts}")
    print(f"            {p['mean_queries_per_forward']:.1f} queries/forward, "
          f"{p['us_per_forward']:.0f} us/forward")
if s.get("engine_searches"):
    print(f"  engines, {s['engine_searches']} searches per block (searches/s, medians):")
    print(f"    B = 1      scalar {s['scalar_b1_searches_per_second']:.2f}   tensor "
          f"{s['tensor_b1_searches_per_second']:.2f}   tensor/scalar {s['tensor_over_scalar_b1']:.3f}")
    print(f"    lock-step  scalar {s['scalar_lockstep_searches_per_second']:.2f}   tensor "
          f"{s['tensor_lockstep_searches_per_second']:.2f}   tensor/scalar "
          f"{s['tensor_over_scalar_lockstep']:.3f}   same policies (to {s['engine_policy_tolerance']}): {s['engines_same_policies']}")
if s.get("selfplay_games"):
    print(f"  self-play games/s   one by one: {s['selfplay_b1_games_per_second']:.2f}   "
          f"groups of {s['batch']}: {s['selfplay_group_games_per_second']:.2f}   ratio "
          f"{s['selfplay_group_over_b1']:.2f} (CPU time: {s['selfplay_group_over_b1_cpu']:.2f}; "
          f"{s['selfplay_searches_per_game']:.1f} searches/game)")
print(f"  queries solved/s: {s['queries_solved_per_second']:.2f} "
      f"(per CPU second: {s['queries_solved_per_cpu_second']:.2f})   "
      f"learner steps/s (batch {s['learner_batch']}): {s['learner_steps_per_second']:.1f} "
      f"(per CPU second: {s['learner_steps_per_cpu_second']:.1f})")
print("  (searches/s and CPU rates: wall-clock rates on a loaded machine are upper-bounded by "
      "the load; compare the ratios)")
PY
