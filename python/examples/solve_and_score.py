"""Solve Leduc poker with armac's CFR+ and score the policy with OpenSpiel's own NashConv."""

import time

import pyspiel
from open_spiel.python.algorithms import exploitability

import armac

ITERATIONS = 500

game = pyspiel.load_game("leduc_poker")
start = time.perf_counter()
policy = armac.solve("leduc_poker", algorithm="cfr+", iterations=ITERATIONS)
seconds = time.perf_counter() - start
openspiel_policy = policy.to_openspiel(game)  # an open_spiel.python.policy.TabularPolicy
theirs = exploitability.nash_conv(game, openspiel_policy)
ours = armac.nash_conv("leduc_poker", policy)
print(f"armac CFR+ on Leduc: {ITERATIONS} iterations in {seconds:.2f} s")
print(f"NashConv: OpenSpiel {theirs:.12f}, armac {ours:.12f}")
assert abs(theirs - ours) < 1e-9
