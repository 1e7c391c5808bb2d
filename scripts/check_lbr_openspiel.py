#!/usr/bin/env python3
"""An independent Local Best Response against the uniform policy on OpenSpiel's FCPA
heads-up no-limit Hold'em, to cross-check `armac-eval lbr --policy uniform`.

Everything but the game engine is this script's own: the hands are dealt and played by
pyspiel, and LBR follows the rule of docs/evaluation.md (Lisy & Bowling 2017, Algorithm 1):
with `pot` the chips both players have in, `asked` what LBR must add to call and `wp` its
showdown win probability (ties one half) against the opponent's range when no more chips go
in,

    U(call)  = wp * pot - (1 - wp) * asked
    U(raise) = fp * pot + (1 - fp) * (wp * (pot + x) - (1 - wp) * (asked + x))

where a raise makes LBR's contribution R, x = R - c_opp, and fp is the range's fold
probability after the raise. LBR takes the best of call and its variant's raises (first of
call, pot, all-in on ties) if its value is positive, else folds (checks when it cannot fold);
a decision that can neither fold nor raise is a check. Against the uniform policy Bayes' rule
leaves the range uniform over the hands that share no card with LBR's and the board (every
hand takes each legal action with the same probability), and fp = 1 / (legal actions after
the raise). `wp` is a Monte-Carlo estimate (--samples pairs of opponent hand and board
completion per decision) with the script's own 7-card evaluator, which is first checked
against pyspiel's showdowns. LBR sits in seat `hand % 2`; the result is the mean of LBR's
winnings in mbb/hand with a 95% interval 1.96 sd / sqrt(hands).

`--game-check ARMAC_EVAL` instead compares a small no-limit game (the one of
tests/lbr_exact.rs) between pyspiel and armac: random histories' information-state
strings, legal actions and returns (through `armac-eval replay --json`), and the number of
information states per player (one C++ CFR iteration's policy table, about 10 s).

Usage: python3 scripts/check_lbr_openspiel.py [--hands 2000] [--variants fc,fcpa]
       [--samples 300] [--seed 1]
       python3 scripts/check_lbr_openspiel.py --game-check target/release/armac-eval
"""
import argparse
import json
import math
import random
import re
import subprocess
import time

import pyspiel

FOLD, CALL, POT, ALL_IN = 0, 1, 2, 3
RANKS = "23456789TJQKA"
SUITS = "cdhs"
SMALL = (
    "universal_poker(betting=nolimit,numPlayers=2,numRounds=2,blind=100 50,firstPlayer=2 1,"
    "numSuits=2,numRanks=4,numHoleCards=2,numBoardCards=0 3,stack=2000 2000,"
    "bettingAbstraction=fcpa)"
)


def parse_cards(text):
    return [RANKS.index(text[i]) * 4 + SUITS.index(text[i + 1]) for i in range(0, len(text), 2)]


def hand_value(cards):
    """A tuple that orders 5- to 7-card poker hands (larger is better)."""
    counts = [0] * 13
    suit_cards = [[], [], [], []]
    for c in cards:
        counts[c >> 2] += 1
        suit_cards[c & 3].append(c >> 2)

    def straight_top(mask):
        for top in range(12, 3, -1):
            if mask >> (top - 4) & 0x1F == 0x1F:
                return top
        if mask & 0x100F == 0x100F:  # A-2-3-4-5
            return 3
        return None

    for ranks in suit_cards:
        if len(ranks) >= 5:
            mask = sum(1 << r for r in set(ranks))
            top = straight_top(mask)
            if top is not None:
                return (8, top)
            flush = sorted(ranks, reverse=True)[:5]
            flush_value = (5, *flush)
            break
    else:
        flush_value = None
    by_count = sorted(((n, r) for r, n in enumerate(counts) if n), reverse=True)
    if by_count[0][0] == 4:
        kicker = max(r for r, n in enumerate(counts) if n and r != by_count[0][1])
        return (7, by_count[0][1], kicker)
    if by_count[0][0] == 3 and len(by_count) > 1 and by_count[1][0] >= 2:
        return (6, by_count[0][1], by_count[1][1])
    if flush_value:
        return flush_value
    top = straight_top(sum(1 << r for r, n in enumerate(counts) if n))
    if top is not None:
        return (4, top)
    singles = sorted((r for r, n in enumerate(counts) if n == 1), reverse=True)
    if by_count[0][0] == 3:
        return (3, by_count[0][1], *singles[:2])
    pairs = [r for n, r in by_count if n == 2]
    if len(pairs) >= 2:
        rest = max([r for r, n in enumerate(counts) if n and r not in pairs[:2]])
        return (2, pairs[0], pairs[1], rest)
    if pairs:
        return (1, pairs[0], *singles[:3])
    return (0, *singles[:5])


def win_probability(rng, hole, board, samples):
    """Monte-Carlo wp of `hole` on `board` against a uniform compatible range."""
    dead = set(hole) | set(board)
    alive = [c for c in range(52) if c not in dead]
    need = 2 + 5 - len(board)
    score = 0
    for _ in range(samples):
        drawn = rng.sample(alive, need)
        rest = board + drawn[2:]
        ours, theirs = hand_value(hole + rest), hand_value(drawn[:2] + rest)
        score += 2 if ours > theirs else (1 if ours == theirs else 0)
    return score / (2 * samples)


INFO = re.compile(r"\[Round (\d)\].*\[Money: (\d+) (\d+)\]\[Private: (\w*)\]\[Public: (\w*)\]")


def lbr_action(rng, state, me, variant, stack, samples):
    legal = state.legal_actions()
    rnd, m0, m1, private, public = INFO.search(state.information_state_string(me)).groups()
    contrib = [stack - int(m0), stack - int(m1)]
    raises = [a for a in (POT, ALL_IN) if a in legal] if variant == "fcpa" else []
    if FOLD not in legal and not raises:
        return CALL
    c_me, c_opp = contrib[me], contrib[1 - me]
    pot, asked = c_me + c_opp, c_opp - c_me
    wp = win_probability(rng, parse_cards(private), parse_cards(public), samples)
    best, best_u = CALL, wp * pot - (1 - wp) * asked
    for a in raises:
        child = state.child(a)
        r = stack - int(INFO.search(child.information_state_string(me)).group(2 + me))
        x = r - c_opp
        fp = 1.0 / len(child.legal_actions())
        u = fp * pot + (1 - fp) * (wp * (pot + x) - (1 - wp) * (asked + x))
        if u > best_u:
            best, best_u = a, u
    return best if best_u > 0 or FOLD not in legal else FOLD


def play_hand(game, rng, me, variant, stack, samples):
    state = game.new_initial_state()
    while not state.is_terminal():
        if state.is_chance_node():
            outcomes = [o for o, _ in state.chance_outcomes()]
            state.apply_action(rng.choice(outcomes))
        elif state.current_player() == me:
            state.apply_action(lbr_action(rng, state, me, variant, stack, samples))
        else:
            state.apply_action(rng.choice(state.legal_actions()))
    return state.returns()[me]


def check_evaluator(game, rng, hands):
    """Checked-down hands: the evaluator's winner must be pyspiel's."""
    for _ in range(hands):
        state = game.new_initial_state()
        while not state.is_terminal():
            if state.is_chance_node():
                state.apply_action(rng.choice([o for o, _ in state.chance_outcomes()]))
            else:
                state.apply_action(CALL)
        text = str(state)
        p0 = parse_cards(re.search(r"P0 Cards: (\w+)", text).group(1))
        p1 = parse_cards(re.search(r"P1 Cards: (\w+)", text).group(1))
        board = parse_cards(re.search(r"BoardCards (\w+)", text).group(1))
        a, b = hand_value(p0 + board), hand_value(p1 + board)
        want = (a > b) - (a < b)
        got = (state.returns()[0] > 0) - (state.returns()[0] < 0)
        assert want == got, f"evaluator disagrees with pyspiel on {text}"


def game_check(armac_eval, histories, seed):
    game = pyspiel.load_game(SMALL)
    rng = random.Random(seed)
    print(f"{SMALL}: {game.num_distinct_actions()} distinct actions, max length "
          f"{game.max_game_length()}, utilities {game.min_utility()} .. {game.max_utility()}")
    steps = 0
    for _ in range(histories):
        state, history, seen = game.new_initial_state(), [], []
        while not state.is_terminal():
            seen.append(([state.information_state_string(p) for p in range(2)],
                         state.legal_actions(), state.current_player()))
            options = ([o for o, _ in state.chance_outcomes()] if state.is_chance_node()
                       else state.legal_actions())
            history.append(rng.choice(options))
            state.apply_action(history[-1])
        out = json.loads(subprocess.check_output(
            [armac_eval, "replay", "--game", SMALL, "--actions",
             ",".join(map(str, history)), "--json"]))
        for (strings, legal, player), ours in zip(seen, out["steps"]):
            assert ours["information_state_string"] == strings, (history, ours, strings)
            assert ours["legal_actions"] == legal and ours["current_player"] == player
            steps += 1
        assert list(out["returns"]) == list(state.returns()), (history, out["returns"])
    print(f"{histories} random histories ({steps} states) agree with armac-eval replay")
    t = time.time()
    solver = pyspiel.CFRSolver(game)
    solver.evaluate_and_update_policy()
    counts = [0, 0]
    for label in solver.tabular_average_policy().policy_table():
        counts[int(re.search(r"\[Player: (\d)\]", label).group(1))] += 1
    print(f"information states per player: {counts} ({time.time() - t:.1f} s)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hands", type=int, default=2000)
    ap.add_argument("--variants", default="fc,fcpa")
    ap.add_argument("--samples", type=int, default=300)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--game-check", metavar="ARMAC_EVAL")
    ap.add_argument("--histories", type=int, default=200)
    args = ap.parse_args()
    if args.game_check:
        game_check(args.game_check, args.histories, args.seed)
        return
    game = pyspiel.load_game(pyspiel.hunl_game_string("fcpa"))
    stack, big_blind = 20000, 100
    check_evaluator(game, random.Random(args.seed), 300)
    for variant in args.variants.split(","):
        if variant not in ("fc", "fcpa"):
            raise SystemExit(f"--variants: `{variant}` is not fc or fcpa")
        rng = random.Random(f"{args.seed}-{variant}")
        t = time.time()
        wins = [play_hand(game, rng, h % 2, variant, stack, args.samples)
                for h in range(args.hands)]
        n = len(wins)
        mean = sum(wins) / n
        sd = math.sqrt(sum((w - mean) ** 2 for w in wins) / (n - 1))
        to_mbb = 1000 / big_blind
        print(json.dumps({
            "variant": variant, "policy": "uniform", "hands": n, "samples": args.samples,
            "mean_mbb": mean * to_mbb, "ci95_mbb": 1.96 * sd / math.sqrt(n) * to_mbb,
            "seat_mean_mbb": [sum(wins[s::2]) / len(wins[s::2]) * to_mbb for s in range(2)],
            "seconds": round(time.time() - t, 1),
        }))


if __name__ == "__main__":
    main()
