#!/usr/bin/env bash
# Poker throughput, armac vs peers measured in the same run on the same machine:
# * 7-card evaluation/s (enumeration of all hands, random hands) vs phevaluator (PyPI),
# * random FCPA playouts/s vs OpenSpiel's universal_poker through pyspiel,
# * LBR hands/s per variant against uniform random (no peer; printed as is).
# Needs: python3 -m pip install open_spiel phevaluator. Usage: scripts/bench_poker.sh
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet --bin armac-bench
ours_eval=$(./target/release/armac-bench eval7)
ours_fcpa=$(./target/release/armac-bench fcpa-playouts)
ours_lbr=$(./target/release/armac-bench lbr --hands 400)
peers=$(python3 - <<'PY'
import json, random, time
from phevaluator import evaluate_cards
import pyspiel
rng = random.Random(1)
hands = [rng.sample(range(52), 7) for _ in range(300000)]
t = time.perf_counter()
for h in hands:
    evaluate_cards(*h)
ph = len(hands) / (time.perf_counter() - t)
game = pyspiel.load_game(pyspiel.hunl_game_string("fcpa"))
n = 3000
t = time.perf_counter()
for _ in range(n):
    s = game.new_initial_state()
    while not s.is_terminal():
        if s.is_chance_node():
            outcomes = s.chance_outcomes()
            s.apply_action(rng.choice(outcomes)[0])
        else:
            s.apply_action(rng.choice(s.legal_actions()))
os_rate = n / (time.perf_counter() - t)
print(json.dumps({"phevaluator_random_per_second": ph, "pyspiel_fcpa_playouts_per_second": os_rate}))
PY
)
python3 - "$ours_eval" "$ours_fcpa" "$peers" <<'PY'
import json, sys
e, f, p = (json.loads(x) for x in sys.argv[1:4])
print(f"{'metric':<44} {'armac':>14} {'peer':>14} {'ratio':>8}")
print(f"{'7-card eval/s, enumeration (peer: random)':<44} {e['enumerate_per_second']:>14.3e} {p['phevaluator_random_per_second']:>14.3e} {e['enumerate_per_second']/p['phevaluator_random_per_second']:>7.0f}x")
print(f"{'7-card eval/s, random hands':<44} {e['random_per_second']:>14.3e} {p['phevaluator_random_per_second']:>14.3e} {e['random_per_second']/p['phevaluator_random_per_second']:>7.0f}x")
print(f"{'FCPA random playouts/s (concrete state)':<44} {f['concrete_per_second']:>14.3e} {p['pyspiel_fcpa_playouts_per_second']:>14.3e} {f['concrete_per_second']/p['pyspiel_fcpa_playouts_per_second']:>7.0f}x")
print(f"{'FCPA random playouts/s (Box<dyn State>)':<44} {f['dyn_state_per_second']:>14.3e} {p['pyspiel_fcpa_playouts_per_second']:>14.3e} {f['dyn_state_per_second']/p['pyspiel_fcpa_playouts_per_second']:>7.0f}x")
PY
echo "LBR vs uniform random:"
echo "$ours_lbr"
