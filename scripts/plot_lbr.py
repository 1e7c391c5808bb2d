#!/usr/bin/env python3
"""LBR over training: plots RUN_DIR/lbr_<variant>.csv (written by `armac-eval lbr --watch RUN`)
for one or more runs, mean mbb/hand with its 95% confidence band against the epoch, and writes
the merged CSV beside the PNG.
Usage: python3 scripts/plot_lbr.py RUN_DIR [RUN_DIR ...] [--variant fc] [--out lbr.png]
Needs matplotlib for the PNG; the CSV is always written."""
import argparse
import csv
import math
import os


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("runs", nargs="+")
    ap.add_argument("--variant", default="fc")
    ap.add_argument("--out", default="lbr.png")
    args = ap.parse_args()
    series = {}
    for run in args.runs:
        path = os.path.join(run, f"lbr_{args.variant}.csv")
        if not os.path.exists(path):
            raise SystemExit(f"{path} does not exist: run `armac-eval lbr --watch {run} --variant {args.variant}` first")
        with open(path) as f:
            series[os.path.basename(os.path.normpath(run))] = [
                (int(r["step"]), float(r["mean_mbb"]), float(r["ci95_mbb"])) for r in csv.DictReader(f)]
    merged = os.path.splitext(args.out)[0] + ".csv"
    with open(merged, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["run", "epoch", "mean_mbb", "ci95_mbb"])
        for name, rows in series.items():
            for step, mean, ci in rows:
                w.writerow([name, step, mean, ci])
    print(f"wrote {merged}")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no PNG")
        return
    fig, ax = plt.subplots(figsize=(7, 4))
    for name, rows in series.items():
        xs = [r[0] for r in rows]
        ys = [r[1] for r in rows]
        ax.plot(xs, ys, marker="o", label=name)
        lo = [r[1] - (r[2] if math.isfinite(r[2]) else 0) for r in rows]
        hi = [r[1] + (r[2] if math.isfinite(r[2]) else 0) for r in rows]
        ax.fill_between(xs, lo, hi, alpha=0.2)
    ax.set_xlabel("epoch")
    ax.set_ylabel(f"LBR-{args.variant.upper()} winnings (mbb/hand)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(args.out, dpi=120)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
