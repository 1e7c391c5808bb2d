#!/usr/bin/env python3
"""Evaluates an armac policy.json inside OpenSpiel: loads the game named in the file, builds an
OpenSpiel TabularPolicy from the entries and prints {"nash_conv": ..., "missing": N} as JSON.
Proves that our exported policies are usable in OpenSpiel and that both NashConv computations
agree. Usage: python3 scripts/check_policy_openspiel.py POLICY_JSON"""
import json
import sys

import pyspiel
from open_spiel.python import policy as policy_lib


def main(path):
    with open(path) as f:
        data = json.load(f)
    game = pyspiel.load_game(data["game"])
    tab = policy_lib.TabularPolicy(game)
    missing = 0
    for key, idx in tab.state_lookup.items():
        entry = data["policy"].get(key)
        if entry is None:
            missing += 1
            continue
        row = tab.action_probability_array[idx]
        row[:] = 0.0
        for action, prob in entry:
            row[action] = prob
    print(json.dumps({"nash_conv": pyspiel.nash_conv(game, policy_lib.python_policy_to_pyspiel_policy(tab)),
                      "missing": missing, "infostates": len(tab.state_lookup)}))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
