#!/usr/bin/env bash
# Sampled CFR throughput, armac vs OpenSpiel's C++ MCCFR solvers (through pyspiel), measured in
# one run on this machine: nodes touched per second of outcome sampling (OS), external sampling
# (ES) and public outcome sampling (POS, against OpenSpiel's OS: OpenSpiel has no POS) on Leduc
# and Liar's Dice, and the ratio.
#
# OpenSpiel's solvers do not report nodes touched, so their nodes/s is their iterations/s times
# armac's measured nodes per iteration of the same algorithm (same sampling scheme: OS with
# exploration 0.6 at the updating player and on-policy elsewhere, ES with simple averaging);
# both walk one trajectory per player per iteration (OS) or the same sampled subtree (ES).
# Needs: python3 -m pip install open_spiel. Usage: scripts/bench_sampled_vs_openspiel.sh
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet --bin armac-bench
bench() { ./target/release/armac-bench solver --repeats 5 "$@"; }
for game in leduc_poker liars_dice; do
  os=$(bench --game "$game" --algorithm os-mccfr --iterations 200000)
  es=$(bench --game "$game" --algorithm es-mccfr --iterations 20000)
  pos=$(bench --game "$game" --algorithm pos-mccfr --iterations 20000 --set baseline=predictive)
  python3 - "$game" "$os" "$es" "$pos" <<'PY'
import json, statistics, sys, time
import pyspiel
game_name, os_, es_, pos_ = sys.argv[1], *map(json.loads, sys.argv[2:])
game = pyspiel.load_game(game_name)

def rate(solver, n, repeats=5):
    rates = []
    for _ in range(repeats):
        t = time.perf_counter()
        for _ in range(n):
            solver.run_iteration()
        rates.append(n / (time.perf_counter() - t))
    return statistics.median(rates)

os_peer = rate(pyspiel.OutcomeSamplingMCCFRSolver(game), 20000)
es_peer = rate(pyspiel.ExternalSamplingMCCFRSolver(game), 2000 if game_name == "leduc_poker" else 200)
for name, ours, peer_its, peer_nodes_per_it in [
    ("OS", os_, os_peer, os_["nodes_per_iteration"]),
    ("ES", es_, es_peer, es_["nodes_per_iteration"]),
    ("POS (vs OpenSpiel OS)", pos_, os_peer, os_["nodes_per_iteration"]),
]:
    peer = peer_its * peer_nodes_per_it
    print(f"{game_name:12} {name:22} armac {ours['nodes_touched_per_second']:12.4g} nodes/s "
          f"({ours['iterations_per_second']:9.4g} it/s)  OpenSpiel {peer:10.4g} nodes/s "
          f"({peer_its:9.4g} it/s)  ratio {ours['nodes_touched_per_second'] / peer:7.1f}")
PY
done
