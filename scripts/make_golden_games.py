#!/usr/bin/env python3
"""Writes tests/data/golden_<key>.json from OpenSpiel (pip install open_spiel).

For each game: its static facts, seeded random playouts with every field of every prefix
(current player, legal actions and their strings, chance outcomes, state string, information
state and observation strings and tensors of both players, returns), and, where the tree is
small enough to walk, the sorted list of every information-state string of each player
(decision nodes only) with the number of histories of each kind.

Usage: python3 scripts/make_golden_games.py [--playouts N] [--only KEY]
"""
import argparse
import json
import os
import random

import pyspiel

GAMES = {
    "kuhn_poker": ("kuhn_poker", True),
    "leduc_poker": ("leduc_poker", True),
    "liars_dice": ("liars_dice", True),
    "liars_dice_2dice": ("liars_dice(numdice=2)", False),
    "liars_dice_4sides": ("liars_dice(dice_sides=4)", True),
    "goofspiel5": (
        "turn_based_simultaneous_game(game=goofspiel(imp_info=True,num_cards=5,points_order=descending))",
        True,
    ),
    "goofspiel4": (
        "turn_based_simultaneous_game(game=goofspiel(imp_info=True,num_cards=4,points_order=descending))",
        True,
    ),
}


def step_record(game, state):
    rec = {
        "current_player": state.current_player(),
        "state_string": str(state),
        "information_state_string": [state.information_state_string(p) for p in range(2)],
        "information_state_tensor": [list(state.information_state_tensor(p)) for p in range(2)],
        "observation_tensor": [list(state.observation_tensor(p)) for p in range(2)],
    }
    if game.get_type().provides_observation_string:
        rec["observation_string"] = [state.observation_string(p) for p in range(2)]
    if state.is_terminal():
        rec["returns"] = list(state.returns())
        rec["legal_actions"] = []
    elif state.is_chance_node():
        outcomes = state.chance_outcomes()
        rec["chance_outcomes"] = [[a, p] for a, p in outcomes]
        rec["legal_actions"] = list(state.legal_actions())
        rec["action_strings"] = [state.action_to_string(-1, a) for a in rec["legal_actions"]]
    else:
        p = state.current_player()
        rec["legal_actions"] = list(state.legal_actions())
        rec["action_strings"] = [state.action_to_string(p, a) for a in rec["legal_actions"]]
    return rec


def playout(game, rng):
    state = game.new_initial_state()
    steps, actions = [], []
    while True:
        steps.append(step_record(game, state))
        if state.is_terminal():
            break
        if state.is_chance_node():
            outcomes = state.chance_outcomes()
            x, acc, action = rng.random(), 0.0, outcomes[-1][0]
            for a, p in outcomes:
                acc += p
                if x < acc:
                    action = a
                    break
        else:
            action = rng.choice(state.legal_actions())
        actions.append(action)
        state.apply_action(action)
    return {"actions": actions, "returns": list(state.returns()), "steps": steps}


def walk(game):
    infos = [set(), set()]
    counts = {"histories": 0, "terminal": 0, "chance": 0, "decision": 0}
    stack = [game.new_initial_state()]
    while stack:
        s = stack.pop()
        counts["histories"] += 1
        if s.is_terminal():
            counts["terminal"] += 1
            continue
        if s.is_chance_node():
            counts["chance"] += 1
        else:
            counts["decision"] += 1
            infos[s.current_player()].add(s.information_state_string())
        for a in s.legal_actions():
            stack.append(s.child(a))
    return counts, [sorted(i) for i in infos]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--playouts", type=int, default=100)
    ap.add_argument("--only", default=None)
    args = ap.parse_args()
    out_dir = os.path.join(os.path.dirname(__file__), "..", "tests", "data")
    os.makedirs(out_dir, exist_ok=True)
    for key, (load, full) in GAMES.items():
        if args.only and key != args.only:
            continue
        game = pyspiel.load_game(load)
        gt = game.get_type()
        data = {
            "key": key,
            "load_game_string": load,
            "openspiel_version": "2.0.2",
            "game": {
                "num_distinct_actions": game.num_distinct_actions(),
                "max_chance_outcomes": game.max_chance_outcomes(),
                "max_game_length": game.max_game_length(),
                "min_utility": game.min_utility(),
                "max_utility": game.max_utility(),
                "information_state_tensor_size": game.information_state_tensor_size(),
                "observation_tensor_size": game.observation_tensor_size(),
                "provides_observation_string": gt.provides_observation_string,
            },
            "seed_rule": "playout i uses random.Random(7000 + i)",
            "playouts": [playout(game, random.Random(7000 + i)) for i in range(args.playouts)],
        }
        if full:
            counts, infos = walk(game)
            data["tree_counts"] = counts
            data["infostates"] = infos
        path = os.path.join(out_dir, f"golden_{key}.json")
        with open(path, "w") as f:
            json.dump(data, f, separators=(",", ":"))
        print(f"wrote {path} ({os.path.getsize(path) // 1024} KiB)")


if __name__ == "__main__":
    main()
