#!/usr/bin/env python3
"""Writes tests/data/golden_dcfr.json: NashConv curves of OpenSpiel's Linear CFR and Discounted
CFR (open_spiel.python.algorithms.discounted_cfr, alternating updates) for the golden tests of
our LCFR/DCFR. Usage: python3 scripts/make_golden_dcfr.py"""
import json
import os

import pyspiel
from open_spiel.python.algorithms import discounted_cfr
from open_spiel.python.algorithms import exploitability

CHECKPOINTS = {"kuhn_poker": [1, 2, 5, 10, 20, 50, 100, 200], "leduc_poker": [1, 2, 5, 10, 20, 30]}
RUNS = {
    "lcfr": lambda g: discounted_cfr.LCFRSolver(g),
    "dcfr_default": lambda g: discounted_cfr.DCFRSolver(g),
    "dcfr_a2_b05_g1": lambda g: discounted_cfr.DCFRSolver(g, alpha=2.0, beta=0.5, gamma=1.0),
}


def main():
    out = {"generator": "open_spiel.python.algorithms.discounted_cfr (open_spiel 2.0.2)",
           "params": {"lcfr": [1, 1, 1], "dcfr_default": [1.5, 0, 2], "dcfr_a2_b05_g1": [2.0, 0.5, 1.0]},
           "curves": {}}
    for game_name, checkpoints in CHECKPOINTS.items():
        game = pyspiel.load_game(game_name)
        out["curves"][game_name] = {}
        for run, make in RUNS.items():
            solver = make(game)
            points = []
            for it in range(1, checkpoints[-1] + 1):
                solver.evaluate_and_update_policy()
                if it in checkpoints:
                    points.append({"iteration": it,
                                   "nash_conv_average": exploitability.nash_conv(game, solver.average_policy()),
                                   "nash_conv_current": exploitability.nash_conv(game, solver.current_policy())})
            out["curves"][game_name][run] = points
            print(game_name, run, points[-1], flush=True)
    path = os.path.join(os.path.dirname(__file__), "..", "tests", "data", "golden_dcfr.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
