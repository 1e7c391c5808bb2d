#!/usr/bin/env python3
"""OpenSpiel's side of scripts/bench_vs_openspiel.sh: C++ CFR+ iterations per second and the
time of one pyspiel.nash_conv evaluation of a CFR+ average policy, as JSON lines.
Usage: python3 scripts/bench_openspiel.py GAME [ITERATIONS] [REPEATS]"""
import json
import statistics
import sys
import time

import pyspiel


def main():
    name = sys.argv[1]
    iterations = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    repeats = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    game = pyspiel.load_game(name)
    solver = pyspiel.CFRPlusSolver(game)
    rates = []
    for _ in range(repeats):
        t = time.perf_counter()
        for _ in range(iterations):
            solver.evaluate_and_update_policy()
        rates.append(iterations / (time.perf_counter() - t))
    print(json.dumps({"bench": "cfr", "game": name, "algorithm": "cfr+", "iterations_per_second": statistics.median(rates)}))
    fresh = pyspiel.CFRPlusSolver(game)
    for _ in range(10):
        fresh.evaluate_and_update_policy()
    avg = fresh.average_policy()
    times, value = [], None
    for _ in range(repeats):
        t = time.perf_counter()
        value = pyspiel.nash_conv(game, avg)
        times.append(time.perf_counter() - t)
    print(json.dumps({"bench": "nashconv", "game": name, "seconds": statistics.median(times), "nash_conv": value}))


if __name__ == "__main__":
    main()
