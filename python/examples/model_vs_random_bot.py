"""Play armac's shipped Hold'em model against pyspiel's uniform random bot in pyspiel's own
universal_poker game, then compare with armac's duplicate-deal match."""

import pathlib

import numpy as np
import pyspiel

import armac

HANDS = 200
root = pathlib.Path(__file__).resolve().parents[2]
model = armac.load_model(root / "models" / "hunl_fcpa_armac")
game = pyspiel.load_game(model.armac_game.load_string())
rng = np.random.default_rng(0)

winnings = []
for hand in range(HANDS):
    model_seat = hand % 2
    bot = pyspiel.make_uniform_random_bot(1 - model_seat, hand)
    state = game.new_initial_state()
    while not state.is_terminal():
        if state.is_chance_node():
            actions, probs = zip(*state.chance_outcomes())
            state.apply_action(int(rng.choice(actions, p=probs)))
        elif state.current_player() == model_seat:
            probs = model.action_probabilities(state)
            state.apply_action(int(rng.choice(list(probs), p=list(probs.values()))))
        else:
            state.apply_action(bot.step(state))
    winnings.append(state.returns()[model_seat])

big_blind = 100
mean = 1000 * np.mean(winnings) / big_blind
print(f"model vs pyspiel's random bot: {mean:+.0f} mbb/hand over {HANDS} hands")
duplicate = armac.match(model, "uniform", hands=HANDS, seed=0)
print(f"armac.match (duplicate deals): {duplicate['mean_mbb']:+.0f} ± {duplicate['ci95_mbb']:.0f} mbb/hand")
