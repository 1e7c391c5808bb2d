#!/usr/bin/env bash
# Side-by-side throughput of armac and OpenSpiel (C++ solvers through pyspiel) in one run on the
# same machine: CFR+ iterations/s and exact NashConv evaluation time on Leduc and Liar's Dice
# (and Kuhn, Goofspiel 5). Prints each measurement and the ratio armac / OpenSpiel.
# Needs: pip install open_spiel. Usage: scripts/bench_vs_openspiel.sh [games...]
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet --bin armac-bench
games=("$@")
[ ${#games[@]} -gt 0 ] || games=(leduc_poker liars_dice goofspiel5 kuhn_poker)
declare -A os_iters=([kuhn_poker]=2000 [leduc_poker]=100 [liars_dice]=10 [goofspiel5]=20)
declare -A our_iters=([kuhn_poker]=20000 [leduc_poker]=2000 [liars_dice]=200 [goofspiel5]=500)
tmp=$(mktemp)
for g in "${games[@]}"; do
  os_name=$g
  [ "$g" = goofspiel5 ] && os_name='turn_based_simultaneous_game(game=goofspiel(imp_info=True,num_cards=5,points_order=descending))'
  ./target/release/armac-bench cfr --game "$g" --iterations "${our_iters[$g]}" --repeats 5 | sed "s/^/armac /" >> "$tmp"
  ./target/release/armac-bench nashconv --game "$g" --repeats 20 | sed "s/^/armac /" >> "$tmp"
  python3 scripts/bench_openspiel.py "$os_name" "${os_iters[$g]}" 3 | sed "s/\"game\": \"[^\"]*\"/\"game\": \"$g\"/" | sed "s/^/openspiel /" >> "$tmp"
done
python3 - "$tmp" <<'PY'
import json, sys
rows = {}
for line in open(sys.argv[1]):
    who, js = line.split(" ", 1)
    d = json.loads(js)
    rows[(who, d["bench"], d["game"])] = d
games = sorted({k[2] for k in rows})
print(f"{'game':<14} {'metric':<28} {'armac':>14} {'OpenSpiel':>14} {'ratio':>8}")
for g in games:
    a, o = rows.get(("armac", "cfr", g)), rows.get(("openspiel", "cfr", g))
    if a and o:
        print(f"{g:<14} {'CFR+ iterations/s':<28} {a['iterations_per_second']:>14.1f} {o['iterations_per_second']:>14.2f} {a['iterations_per_second']/o['iterations_per_second']:>7.1f}x")
    a, o = rows.get(("armac", "nashconv", g)), rows.get(("openspiel", "nashconv", g))
    if a and o:
        print(f"{g:<14} {'NashConv eval ms':<28} {a['seconds']*1e3:>14.3f} {o['seconds']*1e3:>14.3f} {o['seconds']/a['seconds']:>7.1f}x")
        print(f"{g:<14} {'NashConv eval ms + compile':<28} {(a['seconds']+a['tree_build_seconds'])*1e3:>14.3f} {o['seconds']*1e3:>14.3f} {o['seconds']/(a['seconds']+a['tree_build_seconds']):>7.1f}x")
PY
rm -f "$tmp"
