#!/usr/bin/env python3
"""From Python, in one process: armac's CFR+ (`armac.solve`) against OpenSpiel's C++
`pyspiel.CFRPlusSolver` on Leduc poker and Liar's Dice, and the per-call overhead of the
binding against a 1,000-iteration Leduc solve. Not run by CI (it takes about a minute).

    python3 -m pip install ./python open_spiel && python3 scripts/bench_python.py

armac's iterations/s come from the difference of two solves of different lengths (so the tree
compilation, done once per call, is left out); OpenSpiel's from timing its update loop. The
binding's overhead is bounded by a whole call that does almost no library work (`cfr`, one
iteration of Kuhn poker, whose tree has 58 histories): argument conversion, the worker thread
and its signal polling, and the conversion of the result.
"""

import statistics
import time

import pyspiel

import armac


def seconds(f, repeats=3):
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return min(times)


def armac_rate(game, short, long):
    t_short = seconds(lambda: armac.solve(game, "cfr+", short))
    t_long = seconds(lambda: armac.solve(game, "cfr+", long))
    return (long - short) / (t_long - t_short), t_long


def openspiel_rate(game, iterations):
    solver = pyspiel.CFRPlusSolver(pyspiel.load_game(game))
    solver.evaluate_and_update_policy()  # warm up
    t = time.perf_counter()
    for _ in range(iterations):
        solver.evaluate_and_update_policy()
    return iterations / (time.perf_counter() - t)


def main():
    print("game          armac it/s   OpenSpiel it/s   ratio")
    for game, (short, long), theirs_iterations in [
        ("leduc_poker", (1000, 3000), 50),
        ("liars_dice", (200, 1200), 3),
    ]:
        ours, _ = armac_rate(game, short, long)
        theirs = openspiel_rate(game, theirs_iterations)
        print(f"{game:12s} {ours:11.1f} {theirs:16.2f} {ours / theirs:8.1f}x")
    solve_1000 = seconds(lambda: armac.solve("leduc_poker", "cfr+", 1000), repeats=5)
    calls = [seconds(lambda: armac.solve("kuhn_poker", "cfr", 1), repeats=1) for _ in range(50)]
    overhead = statistics.median(calls)
    print(
        f"binding overhead per call (at most): {overhead * 1e3:.3f} ms = "
        f"{100 * overhead / solve_1000:.2f}% of a 1000-iteration Leduc solve ({solve_1000 * 1e3:.1f} ms)"
    )


if __name__ == "__main__":
    main()
