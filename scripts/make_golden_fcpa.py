#!/usr/bin/env python3
"""Writes tests/data/golden_fcpa.json from OpenSpiel (pip install open_spiel==2.0.2).

Golden data for `universal_poker`, above all the FCPA heads-up no-limit Hold'em game
(pyspiel.hunl_game_string("fcpa")):

* the game's static facts;
* seeded playouts, half with uniform players and half with call/raise-heavy players (chance
  always samples its exact distribution), recording for every prefix: the current player,
  legal actions and their strings, the chance distribution, the state string, both players'
  information-state and observation strings and tensors, and the returns at terminals;
* the hand-built scenarios of /work/shared/reference/hunl_fcpa.json (if present), replayed
  and recorded the same way;
* a few playouts of other configurations (fc, limit, fullgame, a smaller deck) to pin the
  general engine.

To keep the file small, tensors are stored sparsely as [index, value] pairs, a chance node
stores its outcome list, the (uniform) probability and the dealt card names instead of 52
action strings, and the taken action's full string is stored at every step.

Usage: python3 scripts/make_golden_fcpa.py [--uniform N] [--weighted N] [--seed S]
"""
import argparse
import json
import os
import random

import pyspiel

FCPA = pyspiel.hunl_game_string("fcpa")
REFERENCE = "/work/shared/reference/hunl_fcpa.json"
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "golden_fcpa.json")

# Player policies as weights over actions 0 fold, 1 call, 2 pot, 3 all-in (renormalised over
# the legal ones); fullgame raises share the weight of action 2.
POLICIES = {
    "uniform": None,
    "call_heavy": {0: 0.05, 1: 0.65, 2: 0.25, 3: 0.05},
    "raise_heavy": {0: 0.05, 1: 0.35, 2: 0.5, 3: 0.1},
}

VARIANTS = {
    "fc": "universal_poker(betting=nolimit,numPlayers=2,numRounds=4,blind=100 50,firstPlayer=2 1 1 1,"
    "numSuits=4,numRanks=13,numHoleCards=2,numBoardCards=0 3 1 1,stack=20000 20000,bettingAbstraction=fc)",
    "limit_fcpa": "universal_poker(betting=limit,numPlayers=2,numRounds=4,blind=10 5,raiseSize=10 10 20 20,"
    "firstPlayer=2 1 1 1,maxRaises=3 4 4 4,numSuits=4,numRanks=13,numHoleCards=2,numBoardCards=0 3 1 1,"
    "bettingAbstraction=fcpa)",
    "fullgame_small": "universal_poker(betting=nolimit,numPlayers=2,numRounds=3,blind=20 10,firstPlayer=2 1 1,"
    "numSuits=3,numRanks=8,numHoleCards=2,numBoardCards=0 2 1,stack=200 150,bettingAbstraction=fullgame)",
    "fcpa_uneven": "universal_poker(betting=nolimit,numPlayers=2,numRounds=2,blind=2 1,firstPlayer=1 2,"
    "numSuits=4,numRanks=6,numHoleCards=3,numBoardCards=1 2,stack=60 45,bettingAbstraction=fcpa)",
}


def sparse(values):
    out = []
    for i, v in enumerate(values):
        if v != 0:
            out.append([i, int(v) if float(v).is_integer() else v])
    return out


def step_record(game, state):
    rec = {
        "current_player": state.current_player(),
        "state_string": str(state),
        "information_state_string": [state.information_state_string(p) for p in range(2)],
        "observation_string": [state.observation_string(p) for p in range(2)],
        "information_state_tensor": [sparse(state.information_state_tensor(p)) for p in range(2)],
        "observation_tensor": [sparse(state.observation_tensor(p)) for p in range(2)],
    }
    if state.is_terminal():
        rec["returns"] = list(state.returns())
        rec["legal_actions"] = []
    elif state.is_chance_node():
        outcomes = state.chance_outcomes()
        probs = {p for _, p in outcomes}
        assert len(probs) == 1, "chance is uniform over the deck"
        rec["legal_actions"] = list(state.legal_actions())
        assert rec["legal_actions"] == [a for a, _ in outcomes]
        rec["chance_prob"] = outcomes[0][1]
        prefix = "player=-1 move=Deal "
        cards = []
        for a in rec["legal_actions"]:
            s = state.action_to_string(-1, a)
            assert s.startswith(prefix)
            cards.append(s[len(prefix):])
        rec["deal_cards"] = "".join(cards)
    else:
        p = state.current_player()
        rec["legal_actions"] = list(state.legal_actions())
        rec["action_strings"] = [state.action_to_string(p, a) for a in rec["legal_actions"]]
    return rec


def choose(state, rng, policy):
    if state.is_chance_node():
        outcomes = state.chance_outcomes()
        x, acc = rng.random(), 0.0
        for a, p in outcomes:
            acc += p
            if x < acc:
                return a
        return outcomes[-1][0]
    legal = state.legal_actions()
    weights = POLICIES[policy]
    if weights is None:
        return rng.choice(legal)
    w = [weights.get(min(a, 2) if a < 4 else 2, 0.0) for a in legal]
    if len(legal) > 4:  # fullgame: spread the raise weight over the raise sizes
        n_raise = sum(1 for a in legal if a >= 2)
        w = [weights[min(a, 1)] if a < 2 else weights[2] / n_raise for a in legal]
    return rng.choices(legal, weights=w)[0]


def record_actions(game, actions):
    state = game.new_initial_state()
    steps = []
    for a in actions:
        rec = step_record(game, state)
        rec["action_taken_string"] = state.action_to_string(state.current_player(), a)
        steps.append(rec)
        state.apply_action(a)
    steps.append(step_record(game, state))
    assert state.is_terminal()
    return {"actions": list(actions), "returns": list(state.returns()), "steps": steps}


def playout(game, rng, policy):
    state = game.new_initial_state()
    actions = []
    while not state.is_terminal():
        a = choose(state, rng, policy)
        actions.append(a)
        state.apply_action(a)
    rec = record_actions(game, actions)
    rec["policy"] = policy
    return rec


def facts(game):
    return {
        "num_distinct_actions": game.num_distinct_actions(),
        "max_chance_outcomes": game.max_chance_outcomes(),
        "max_game_length": game.max_game_length(),
        "min_utility": game.min_utility(),
        "max_utility": game.max_utility(),
        "information_state_tensor_size": game.information_state_tensor_shape()[0],
        "observation_tensor_size": game.observation_tensor_shape()[0],
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--uniform", type=int, default=120)
    ap.add_argument("--weighted", type=int, default=120)
    ap.add_argument("--variant-playouts", type=int, default=6)
    ap.add_argument("--seed", type=int, default=20261122)
    args = ap.parse_args()

    game = pyspiel.load_game(FCPA)
    rng = random.Random(args.seed)
    playouts = [playout(game, rng, "uniform") for _ in range(args.uniform)]
    for i in range(args.weighted):
        playouts.append(playout(game, rng, "call_heavy" if i % 2 == 0 else "raise_heavy"))

    scenarios = []
    if os.path.exists(REFERENCE):
        with open(REFERENCE) as f:
            ref = json.load(f)
        for sc in ref["scenarios"]:
            rec = record_actions(game, sc["actions"])
            rec["name"] = sc["name"]
            scenarios.append(rec)

    variants = []
    for key, text in VARIANTS.items():
        g = pyspiel.load_game(text)
        vr = random.Random(f"{args.seed}-{key}")
        pos = [playout(g, vr, ["uniform", "call_heavy", "raise_heavy"][i % 3]) for i in range(args.variant_playouts)]
        variants.append({"key": key, "load_game_string": text, "game_string": str(g), "game": facts(g), "playouts": pos})

    data = {
        "generated_by": "scripts/make_golden_fcpa.py",
        "open_spiel_version": getattr(pyspiel, "__version__", "2.0.2"),
        "seed": args.seed,
        "load_game_string": FCPA,
        "game_string": str(game),
        "game": facts(game),
        "playouts": playouts,
        "scenarios": scenarios,
        "variants": variants,
    }
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as f:
        json.dump(data, f, separators=(",", ":"))
    n_steps = sum(len(p["steps"]) for p in playouts)
    print(f"wrote {OUT}: {len(playouts)} playouts, {n_steps} steps, {len(scenarios)} scenarios, "
          f"{len(variants)} variants, {os.path.getsize(OUT) / 1e6:.2f} MB")


if __name__ == "__main__":
    main()
