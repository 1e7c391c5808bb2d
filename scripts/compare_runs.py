#!/usr/bin/env python3
"""Side-by-side learning curves of ARMAC runs, read from their metrics.csv (and summary.json).

Usage: scripts/compare_runs.py [--window 50] RUN_DIR [RUN_DIR ...]

Prints, per run: epochs reached, wall and CPU seconds, the last and best NashConv of the
average-policy head, the median of its last 10 evaluations and the share of evaluations after
epoch 50 above 1.5x the running minimum; then the median NashConv in each window of epochs,
so that runs of different speed compare per epoch too.
"""
import argparse
import csv
import json
import math
import os
import statistics


def evaluations(run):
    rows = list(csv.DictReader(open(os.path.join(run, "metrics.csv"))))
    ev = [(int(r["epoch"]), float(r["nash_conv"])) for r in rows
          if r["nash_conv"] not in ("", "NaN") and not math.isnan(float(r["nash_conv"]))]
    return rows, ev


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--window", type=int, default=50)
    ap.add_argument("runs", nargs="+")
    a = ap.parse_args()
    data = {}
    print(f"{'run':40} {'epochs':>6} {'wall s':>7} {'cpu s':>7} {'last':>7} {'best':>7} "
          f"{'med10':>7} {'>1.5min':>7}")
    for run in a.runs:
        rows, ev = evaluations(run)
        data[run] = ev
        cpu = float("nan")
        summary = os.path.join(run, "summary.json")
        if os.path.exists(summary):
            cpu = json.load(open(summary)).get("cpu_seconds") or float("nan")
        vals = [v for _, v in ev]
        running, spikes, later = math.inf, 0, 0
        for e, v in ev:
            if e > 50:
                later += 1
                spikes += v > 1.5 * running
            running = min(running, v)
        med = statistics.median(vals[-10:]) if vals else float("nan")
        print(f"{os.path.basename(run.rstrip('/')):40} {rows[-1]['epoch']:>6} "
              f"{float(rows[-1]['seconds']):7.0f} {cpu:7.0f} {vals[-1] if vals else math.nan:7.3f} "
              f"{min(vals, default=math.nan):7.3f} {med:7.3f} {spikes:>3}/{later:<3}")
    last = max(e for ev in data.values() for e, _ in ev) if data else 0
    print(f"\nmedian NashConv per {a.window}-epoch window")
    print(f"{'epochs':>12} " + " ".join(f"{os.path.basename(r.rstrip('/'))[:14]:>14}" for r in a.runs))
    for lo in range(0, last + 1, a.window):
        cells = []
        for run in a.runs:
            w = [v for e, v in data[run] if lo <= e < lo + a.window]
            cells.append(f"{statistics.median(w):14.3f}" if w else f"{'-':>14}")
        print(f"{lo:>5}-{lo + a.window - 1:<6} " + " ".join(cells))


if __name__ == "__main__":
    main()
