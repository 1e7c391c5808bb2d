#!/usr/bin/env python3
"""Writes tests/data/golden_holdem.json: OpenSpiel 2.0.2 facts about two tiny universal_poker
Hold'em games (2 suits, 4 or 5 ranks), used by tests/holdem_tree.rs.

Per game: the number of information-state strings of each player (keys of a C++ CFR policy
table; the player is the one in the string's `[Player: p]`). For the small CROSS game,
NashConv of the uniform and first-legal-action policies. For TINY (5.6 million histories),
pyspiel.nash_conv needs more than 22 GB, so instead the C++ CFR and CFR+ average policies and
CFR's current policy after 2 and 3 iterations (the bindings give CFR+ no tabular current
policy), as a checksum over all labels plus the rows of a hashed sample. Everything runs in
C++ (too many histories for a Python walk): about two minutes of one core and 3 GB.

Usage: python3 scripts/make_golden_holdem.py
"""
import json
import os
import re
import time

import pyspiel

# The tiny Hold'em of the tests: 2 suits x 5 ranks, 2 hole cards, a 3-card flop,
# limit betting (no preflop raise, one flop raise). Blinds 5/2 and raise 7: with 2/1 and 4,
# some action values tie exactly after one CFR iteration (a pair's fold and call are both
# worth -1), and OpenSpiel's rounding residue there makes its curve rounding-driven (see
# ROUNDING_NOISE in src/cfr/mod.rs); with these sizes every row agrees to 1e-13.
TINY = (
    "universal_poker(betting=limit,numPlayers=2,numRounds=2,blind=5 2,raiseSize=4 7,"
    "firstPlayer=2 1,maxRaises=0 1,numSuits=2,numRanks=5,numHoleCards=2,numBoardCards=0 3,"
    "bettingAbstraction=fcpa)"
)
# Board cards in two rounds (2 + 2): OpenSpiel's strings print the board as one set, so
# histories whose boards split differently between the rounds share infostate strings.
CROSS = (
    "universal_poker(betting=limit,numPlayers=2,numRounds=2,blind=2 1,raiseSize=2 4,"
    "firstPlayer=2 1,maxRaises=1 1,numSuits=2,numRanks=4,numHoleCards=1,numBoardCards=2 2,"
    "bettingAbstraction=fcpa)"
)
ITERATIONS = 3  # C++ CFR / CFR+ iterations on TINY (about 13 s each here)
SAMPLE = 50  # keep the full rows of labels whose FNV-1a hash is 0 modulo this


def fnv1a(text):
    h = 0xCBF29CE484222325
    for b in text.encode():
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def player_of(label):
    return int(re.search(r"\[Player: (\d)\]", label).group(1))


def summary(table):
    """Per player: the number of labels and a checksum sum_I w(I) sum_a (a + 1) p(a | I) with
    w(I) = (fnv1a(I) mod 10^6) / 10^6; plus the rows of a hashed sample of labels."""
    counts, sums, rows = [0, 0], [0.0, 0.0], {}
    for label, row in table.items():
        p = player_of(label)
        counts[p] += 1
        h = fnv1a(label)
        sums[p] += (h % 1_000_000) / 1e6 * sum((a + 1) * q for a, q in row)
        if h % SAMPLE == 0:
            rows[label] = [[a, q] for a, q in row]
    return counts, sums, rows


def tiny_entry():
    game = pyspiel.load_game(TINY)
    entry = {}
    t0 = time.time()
    for key, ctor in [("cfr", pyspiel.CFRSolver), ("cfr_plus", pyspiel.CFRPlusSolver)]:
        solver = ctor(game)
        points = []
        for it in range(1, ITERATIONS + 1):
            solver.evaluate_and_update_policy()
            if it == 1:
                continue
            counts, avg_sums, avg_rows = summary(solver.tabular_average_policy().policy_table())
            entry["infostates_per_player"] = counts
            point = {"iteration": it, "average_checksum": avg_sums, "average_rows": avg_rows}
            # CFRPlusSolver has no tabular current policy in the Python bindings.
            if hasattr(solver, "tabular_current_policy"):
                _, cur_sums, cur_rows = summary(solver.tabular_current_policy().policy_table())
                point["current_checksum"] = cur_sums
                point["current_rows"] = cur_rows
            points.append(point)
            print(key, it, counts, avg_sums, f"{time.time() - t0:.1f}s", flush=True)
        entry[key] = points
    return entry


def cross_entry():
    game = pyspiel.load_game(CROSS)
    solver = pyspiel.CFRSolver(game)
    solver.evaluate_and_update_policy()
    table = solver.tabular_average_policy().policy_table()
    counts, _, _ = summary(table)
    first_legal = {
        label: [(a, 1.0 if i == 0 else 0.0) for i, (a, _) in enumerate(row)]
        for label, row in table.items()
    }
    entry = {
        "infostates_per_player": counts,
        "uniform_nash_conv": pyspiel.nash_conv(game, pyspiel.UniformRandomPolicy(game)),
        "first_legal_nash_conv": pyspiel.nash_conv(game, pyspiel.TabularPolicy(first_legal)),
    }
    print(CROSS, entry, flush=True)
    return entry


def main():
    out = {
        "generator": "open_spiel 2.0.2: C++ CFRSolver / CFRPlusSolver policy tables; "
        "pyspiel.nash_conv of UniformRandomPolicy and of the first-legal-action policy "
        "(a TabularPolicy over the CFR table's labels)",
        "checksum": "per player sum over labels I of w(I) * sum_a (a + 1) p(a | I), "
        "w(I) = (fnv1a64(I) mod 10^6) / 10^6",
        "games": {CROSS: cross_entry(), TINY: tiny_entry()},
    }
    path = os.path.join(os.path.dirname(__file__), "..", "tests", "data", "golden_holdem.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
