#!/usr/bin/env python3
"""Writes tests/data/golden_variants.json: for game variants beyond the shared reference
(more dice, fewer sides, other bidding rule, Goofspiel with 4 cards and random point order),
OpenSpiel's NashConv of the uniform and first-legal policies and of C++ CFR+ average policies
after a few iterations. Usage: python3 scripts/make_golden_variants.py"""
import json
import os

import pyspiel
from open_spiel.python import policy as policy_lib

VARIANTS = [
    "liars_dice(numdice=2,dice_sides=3)",
    "liars_dice(dice_sides=4)",
    "liars_dice(bidding_rule=reset-quantity,dice_sides=4)",
    "turn_based_simultaneous_game(game=goofspiel(imp_info=True,num_cards=4,points_order=descending))",
    "turn_based_simultaneous_game(game=goofspiel(imp_info=True,num_cards=4,points_order=random))",
    "turn_based_simultaneous_game(game=goofspiel(imp_info=True,num_cards=4,points_order=ascending,returns_type=point_difference))",
]
CHECKPOINTS = [1, 2, 5, 10, 20]


def fixed(game, first):
    tab = policy_lib.TabularPolicy(game)
    if first:
        for key, idx in tab.state_lookup.items():
            row = tab.action_probability_array[idx]
            legal = [a for a in range(len(row)) if tab.legal_actions_mask[idx][a]]
            row[:] = 0.0
            row[legal[0]] = 1.0
    return policy_lib.python_policy_to_pyspiel_policy(tab)


def main():
    out = {"generator": "open_spiel 2.0.2 (pyspiel.nash_conv, pyspiel.CFRPlusSolver)", "variants": {}}
    for name in VARIANTS:
        game = pyspiel.load_game(name)
        entry = {
            "uniform_nash_conv": pyspiel.nash_conv(game, fixed(game, False)),
            "first_legal_nash_conv": pyspiel.nash_conv(game, fixed(game, True)),
            "cfr_plus": [],
        }
        solver = pyspiel.CFRPlusSolver(game)
        for it in range(1, CHECKPOINTS[-1] + 1):
            solver.evaluate_and_update_policy()
            if it in CHECKPOINTS:
                entry["cfr_plus"].append([it, pyspiel.nash_conv(game, solver.average_policy())])
        out["variants"][name] = entry
        print(name, entry["uniform_nash_conv"], entry["cfr_plus"][-1], flush=True)
    path = os.path.join(os.path.dirname(__file__), "..", "tests", "data", "golden_variants.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
