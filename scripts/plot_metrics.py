#!/usr/bin/env python3
"""Learning curves from run directories: reads each RUN_DIR/metrics.csv and writes a PNG of
NashConv against iterations (log-log) and against wall-clock seconds, plus a merged CSV.
Usage: python3 scripts/plot_metrics.py RUN_DIR [RUN_DIR ...] --out curves.png
Needs matplotlib (python3 -m pip install matplotlib) for the PNG; the CSV is always written."""
import argparse
import csv
import os


def read(run_dir):
    """Rows of RUN_DIR/metrics.csv that carry a NashConv (ARMAC evaluates every few epochs)."""
    with open(os.path.join(run_dir, "metrics.csv")) as f:
        return [r for r in csv.DictReader(f) if r["nash_conv"].lower() != "nan"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("runs", nargs="+")
    ap.add_argument("--out", default="curves.png")
    ap.add_argument("--x", default="iteration", help="x column for the first panel (iteration or epoch)")
    ap.add_argument("--reference", action="append", default=[], metavar="LABEL=VALUE",
                    help="horizontal reference line, e.g. 'paper Leduc=0.18' (repeatable)")
    args = ap.parse_args()
    series = {os.path.basename(os.path.normpath(r)): read(r) for r in args.runs}
    merged = os.path.splitext(args.out)[0] + ".csv"
    with open(merged, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["run", args.x, "seconds", "nash_conv"])
        for name, rows in series.items():
            for r in rows:
                w.writerow([name, r[args.x], r["seconds"], r["nash_conv"]])
    print(f"wrote {merged}")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed: no PNG (python3 -m pip install matplotlib)")
        return
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for name, rows in series.items():
        xs = [float(r[args.x]) for r in rows]
        ts = [float(r["seconds"]) for r in rows]
        ys = [float(r["nash_conv"]) for r in rows]
        axes[0].loglog(xs, ys, label=name)
        axes[1].loglog([max(t, 1e-3) for t in ts], ys, label=name)
    for ref in args.reference:
        label, value = ref.rsplit("=", 1)
        for ax in axes:
            ax.axhline(float(value), linestyle="--", color="gray", linewidth=1)
            ax.annotate(label, (0.01, float(value)), xycoords=("axes fraction", "data"),
                        fontsize=8, color="gray", va="bottom")
    axes[0].set_xlabel(args.x)
    axes[1].set_xlabel("seconds")
    for ax in axes:
        ax.set_ylabel("NashConv")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(args.out, dpi=120)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
