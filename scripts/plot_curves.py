#!/usr/bin/env python3
"""Exact NashConv of runs against the budgets papers state theirs in, beside published curves.

Each --runs LABEL=DIR[,DIR...] is one setting over several seeds (run directories, shell globs
allowed). For every budget axis the runs record, a panel draws the median over the seeds and the
band from the lowest to the highest seed (each seed's curve interpolated in log space onto a
common grid inside the range every seed covers), on log-log axes:
  iterations      epochs (ARMAC), rounds (Student of Games), iterations (CFR solvers)
  learning steps  ARMAC `learning_steps`, Student of Games `learner_steps`
  episodes        ARMAC `episodes`, Student of Games `games`
  nodes touched   ARMAC `nodes_touched` (actors' decisions, chance nodes, terminals), CFR solvers
  CPU seconds     `cpu_seconds` (ARMAC: every thread of every process that trained the run)
  wall seconds    `seconds`
--published NAME draws a curve or a point of ../shared/reference/published_curves.md on the axis
whose units it is stated in: armac_a (ARMAC Figure 4, Leduc, version A, x in epochs), dream
(DREAM, Leduc, NashConv about 0.12 after about 4.5 million nodes touched); --final LABEL=VALUE a
horizontal line on every panel (e.g. the ARMAC caption's best final values).
A CSV of the plotted medians is written beside the PNG.

Usage:
  python3 scripts/plot_curves.py --title "ARMAC, Leduc" --out docs/curves/leduc_armac.png \
      --runs "armac (lockstep)=runs/curves/leduc_armac_s*" --published armac_a --published dream \
      --final "paper's best runs (final)=0.18"
Needs matplotlib (python3 -m pip install matplotlib).
"""
import argparse
import csv
import glob
import math
import os
import statistics

AXES = [
    ("iterations", ["epoch", "round", "iteration"]),
    ("learning steps", ["learning_steps", "learner_steps"]),
    ("episodes", ["episodes", "games"]),
    ("nodes touched", ["nodes_touched"]),
    ("CPU seconds", ["cpu_seconds"]),
    ("wall seconds", ["seconds"]),
]

# Published points (../shared/reference/published_curves.md), by name: (axis, label, points).
PUBLISHED = {
    "armac_a": ("iterations", "ARMAC paper, Fig. 4 (digitised A; x = epochs)",
                [(20, 4.67), (40, 3.27), (79, 1.22), (200, 1.00), (408, 0.592), (768, 0.312),
                 (1552, 0.198), (3608, 0.176), (8194, 0.158), (17757, 0.150), (30086, 0.148)]),
    "dream": ("nodes touched", "DREAM (about 0.12 after about 4.5e6 nodes)", [(4.5e6, 0.12)]),
}


def read_runs(spec):
    """(label, [rows per run]) of LABEL=DIR[,DIR...]: each run's metrics.csv rows with a NashConv."""
    label, dirs = spec.split("=", 1)
    runs = []
    for pattern in dirs.split(","):
        for d in sorted(glob.glob(pattern)) or [pattern]:
            with open(os.path.join(d, "metrics.csv")) as f:
                rows = [r for r in csv.DictReader(f)
                        if r.get("nash_conv", "nan").lower() not in ("nan", "")]
            if rows:
                runs.append(rows)
    if not runs:
        raise SystemExit(f"--runs {spec}: no run with NashConv rows")
    return label, runs


def column(rows, names):
    """The first of `names` that every row has a value for, else None."""
    for n in names:
        if all(r.get(n, "") not in ("", None) for r in rows):
            return n
    return None


def series(runs, names):
    """Per run: sorted (x, NashConv) pairs with x > 0 on the first column of `names` present."""
    out = []
    for rows in runs:
        c = column(rows, names)
        if c is None:
            return None, None
        pts = sorted((float(r[c]), float(r["nash_conv"])) for r in rows)
        out.append([(x, y) for x, y in pts if x > 0 and y > 0])
    return out, c


def interp(pts, x):
    """Log-log interpolation of the points at x (clamped into their range)."""
    x = min(max(x, pts[0][0]), pts[-1][0])
    if len(pts) == 1:
        return pts[0][1]
    for (x0, y0), (x1, y1) in zip(pts, pts[1:]):
        if x0 <= x <= x1:
            if x1 == x0:
                return y0
            t = (math.log(x) - math.log(x0)) / (math.log(x1) - math.log(x0))
            return math.exp(math.log(y0) + t * (math.log(y1) - math.log(y0)))
    return None


def band(per_run, n=60):
    """Grid, median, low and high over the runs, inside the x range every run covers."""
    lo = max(p[0][0] for p in per_run)
    hi = min(p[-1][0] for p in per_run)
    if hi <= lo:
        return [], [], [], []
    grid = [math.exp(math.log(lo) + i * (math.log(hi) - math.log(lo)) / (n - 1)) for i in range(n)]
    med, low, high = [], [], []
    for x in grid:
        ys = [interp(p, x) for p in per_run]
        ys = [y for y in ys if y is not None]
        med.append(statistics.median(ys))
        low.append(min(ys))
        high.append(max(ys))
    return grid, med, low, high


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", action="append", required=True, metavar="LABEL=DIRS")
    ap.add_argument("--published", action="append", default=[], choices=sorted(PUBLISHED))
    ap.add_argument("--final", action="append", default=[], metavar="LABEL=VALUE")
    ap.add_argument("--title", default="")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    settings = [read_runs(s) for s in args.runs]
    panels = []
    for axis, names in AXES:
        data = []
        for k, (label, runs) in enumerate(settings):
            per_run, col = series(runs, names)
            if per_run is not None and all(per_run):
                data.append((k, label, per_run))
        if data:
            panels.append((axis, data))
    ncols = min(3, len(panels))
    nrows = (len(panels) + ncols - 1) // ncols
    fig, axes = plt.subplots(nrows, ncols, figsize=(5.2 * ncols, 4.0 * nrows), squeeze=False)
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    rows = []
    flat = [ax for row in axes for ax in row]
    for ax in flat[len(panels):]:
        ax.axis("off")
    for ax, (axis, data) in zip(flat, panels):
        ax.set_xlabel(axis)
        for k, label, per_run in data:
            grid, med, low, high = band(per_run)
            if not grid:
                continue
            colour = colours[k % len(colours)]
            ax.plot(grid, med, color=colour, label=f"{label}: median of {len(per_run)}")
            ax.fill_between(grid, low, high, color=colour, alpha=0.2)
            rows += [(axis, label, x, m, l, h) for x, m, l, h in zip(grid, med, low, high)]
        for name in args.published:
            p_axis, p_label, pts = PUBLISHED[name]
            if p_axis == axis:
                xs, ys = zip(*pts)
                ax.plot(xs, ys, "k--" if len(pts) > 1 else "k*", markersize=10, label=p_label)
        for f in args.final:
            label, value = f.split("=", 1)
            ax.axhline(float(value), color="grey", linestyle=":", label=label)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.grid(True, which="both", alpha=0.3)
        ax.set_ylabel("NashConv of the average policy")
        ax.legend(fontsize=7)
    fig.suptitle(args.title)
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    fig.savefig(args.out, dpi=110)
    with open(os.path.splitext(args.out)[0] + ".csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["axis", "setting", "x", "median", "low", "high"])
        for r in rows:
            w.writerow([r[0], r[1]] + [f"{v:.6g}" for v in r[2:]])
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
