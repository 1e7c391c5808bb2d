"""Solve Leduc poker with armac's CFR+ and score the policy with armac's exact NashConv and,
when open_spiel is installed, with OpenSpiel's own."""

import time

import armac

try:  # optional: OpenSpiel's NashConv of the same policy
    import pyspiel
    from open_spiel.python.algorithms import exploitability
except ImportError:
    pyspiel = None

ITERATIONS = 500

start = time.perf_counter()
policy = armac.solve("leduc_poker", algorithm="cfr+", iterations=ITERATIONS)
seconds = time.perf_counter() - start
ours = armac.nash_conv("leduc_poker", policy)
print(f"armac CFR+ on Leduc: {ITERATIONS} iterations in {seconds:.2f} s")
# The table answers like an OpenSpiel policy: {action: probability} at a state.
root = armac.load_game("leduc_poker").new_initial_state().child(0).child(1)
print(f"first decision: {policy.action_probabilities(root)}")
if pyspiel is None:
    print(f"NashConv: armac {ours:.12f} (open_spiel is not installed)")
else:
    game = pyspiel.load_game("leduc_poker")
    openspiel_policy = policy.to_openspiel(game)  # an open_spiel.python.policy.TabularPolicy
    theirs = exploitability.nash_conv(game, openspiel_policy)
    print(f"NashConv: OpenSpiel {theirs:.12f}, armac {ours:.12f}")
    assert abs(theirs - ours) < 1e-9
