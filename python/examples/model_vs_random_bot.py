"""Play armac's shipped Hold'em model against a uniform random player in pyspiel's own
universal_poker game (armac's own game, which has pyspiel's method names, when open_spiel is
not installed), then compare with armac's duplicate-deal match."""

import pathlib

import numpy as np

import armac

try:  # optional: play in pyspiel's game when open_spiel is installed
    import pyspiel
except ImportError:
    pyspiel = None

HANDS = 200
root = pathlib.Path(__file__).resolve().parents[2]
model = armac.load_model(root / "models" / "hunl_fcpa_armac")
if pyspiel is not None:
    game = pyspiel.load_game(model.armac_game.load_string())
else:
    game = model.armac_game
print(f"playing in {'pyspiel' if pyspiel is not None else 'armac'}'s universal_poker")
rng = np.random.default_rng(0)

winnings = []
for hand in range(HANDS):
    model_seat = hand % 2
    state = game.new_initial_state()
    while not state.is_terminal():
        if state.is_chance_node():
            actions, probs = zip(*state.chance_outcomes())
            state.apply_action(int(rng.choice(actions, p=probs)))
        elif state.current_player() == model_seat:
            probs = model.action_probabilities(state)
            state.apply_action(int(rng.choice(list(probs), p=list(probs.values()))))
        else:
            state.apply_action(int(rng.choice(state.legal_actions())))
    winnings.append(state.returns()[model_seat])

big_blind = 100
mean = 1000 * np.mean(winnings) / big_blind
print(f"model vs a uniform random player: {mean:+.0f} mbb/hand over {HANDS} hands")
duplicate = armac.match(model, "uniform", hands=HANDS, seed=0)
print(f"armac.match (duplicate deals): {duplicate['mean_mbb']:+.0f} ± {duplicate['ci95_mbb']:.0f} mbb/hand")
