"""Score your own policies with armac's Local Best Response on heads-up no-limit Hold'em: a
hand-written numpy policy over the information-state tensor (any PyTorch model fits the same
way) and, when open_spiel is installed, an OpenSpiel policy object. Python policies are asked
once per hand of the opponent range, so keep `hands` small or pass `threads`."""

import numpy as np

import armac

try:  # optional: the OpenSpiel part below runs only with open_spiel installed
    import pyspiel
    from open_spiel.python import policy as os_policy
except ImportError:
    pyspiel = None

HANDS = 40  # a smoke run; thousands of hands give a useful interval


def tight_policy(state):
    """Calls with a pair or an ace, otherwise checks or folds: probabilities of
    state.legal_actions() (fold 0, call 1, pot 2, all-in 3)."""
    legal = state.legal_actions()
    tensor = state.information_state_tensor()  # numpy float32, OpenSpiel's layout
    cards = np.flatnonzero(tensor[2:54])  # the player's hole cards (one-hot over 52)
    ranks = [c // 4 for c in cards]
    strong = len(ranks) == 2 and (ranks[0] == ranks[1] or 12 in ranks)
    probs = np.zeros(len(legal))
    probs[legal.index(1) if strong or 0 not in legal else legal.index(0)] = 1.0
    return probs


game = armac.load_game("hunl_fcpa")
result = armac.lbr(tight_policy, variant="fc", hands=HANDS, seed=0, preflop_samples=1000)
print(f"LBR-FC vs tight_policy: {result['mean_mbb']:.1f} ± {result['ci95_mbb']:.1f} mbb/hand")

if pyspiel is None:
    print("open_spiel is not installed: skipping the OpenSpiel policy")
else:
    uniform = os_policy.UniformRandomPolicy(pyspiel.load_game(game.load_string()))
    result = armac.lbr(uniform, variant="fc", hands=HANDS, seed=0, preflop_samples=1000)
    reference = armac.lbr("uniform", variant="fc", hands=HANDS, seed=0, preflop_samples=1000)
    print(f"LBR-FC vs OpenSpiel's UniformRandomPolicy: {result['mean_mbb']:.1f} mbb/hand "
          f"(armac's uniform: {reference['mean_mbb']:.1f})")
    assert abs(result["mean_mbb"] - reference["mean_mbb"]) < 1e-6
