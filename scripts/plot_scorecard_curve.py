#!/usr/bin/env python3
"""The Hold'em scorecard over training: LBR-FC, LBR-FC12-FCPA34 and LBR-FCPA as ratios of what
each wins against uniform (lower is better; 0 is LBR winning nothing), and the matches against
uniform and always-call in mbb/hand, for the average policy and the current policy pi^t,
against CPU-hours of training. Reads scorecard JSON files (`armac-eval scorecard --json --out
FILE`, one per point, given as HOURS=FILE) and/or a CSV of points (columns cpu_hours, epoch,
policy, measure, value, ci95; `docs/data/hunl_curve.csv`), writes the merged CSV beside the PNG.

Usage:
  python3 scripts/plot_scorecard_curve.py --csv docs/data/hunl_curve.csv --out docs/hunl_curve.png
  python3 scripts/plot_scorecard_curve.py 1=curve/sc_h1.json 2=curve/sc_h2.json --out curve.png
Needs matplotlib for the PNG; the CSV is always written."""
import argparse
import csv
import json
import os

MEASURES = ["lbr_fc", "lbr_fc12_fcpa34", "lbr_fcpa", "vs_uniform", "vs_always_call"]
LBR_KEYS = {"lbr_fc": "fc", "lbr_fc12_fcpa34": "fc12-fcpa34", "lbr_fcpa": "fcpa"}


def points_of_json(hours, path):
    """The rows of one scorecard JSON file at `hours` CPU-hours."""
    with open(path) as f:
        card = json.load(f)
    if "policies" not in card:
        raise SystemExit(f"{path}: not a scorecard (no `policies`)")
    rows = []
    for policy, p in card["policies"].items():
        epoch = ""
        name = p.get("policy", "")
        if "epoch " in name:
            # `armac-average-policy(epoch 5023)` or `...(epoch 5023, threshold 0.2)`.
            epoch = name.split("epoch ")[1].split(",")[0].rstrip(")")
        for m in MEASURES:
            if m in LBR_KEYS:
                r = p["lbr"][LBR_KEYS[m]]
                rows.append((hours, epoch, policy, m, r["ratio"], r["ratio_ci95"]))
            else:
                r = p[m]
                rows.append((hours, epoch, policy, m, r["mean"], r["ci95"]))
    return rows


def points_of_csv(path):
    with open(path) as f:
        out = []
        for r in csv.DictReader(f):
            ci = float(r["ci95"]) if r["ci95"] else None
            out.append((float(r["cpu_hours"]), r["epoch"], r["policy"], r["measure"],
                        float(r["value"]), ci))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("points", nargs="*", help="HOURS=SCORECARD.json")
    ap.add_argument("--csv", action="append", default=[])
    ap.add_argument("--out", default="hunl_curve.png")
    args = ap.parse_args()
    rows = []
    for path in args.csv:
        rows += points_of_csv(path)
    for spec in args.points:
        hours, _, path = spec.partition("=")
        if not path:
            raise SystemExit(f"`{spec}`: expected HOURS=FILE")
        rows += points_of_json(float(hours), path)
    if not rows:
        raise SystemExit("no points: give --csv FILE or HOURS=FILE")
    rows.sort(key=lambda r: (r[2], r[3], r[0]))
    merged = os.path.splitext(args.out)[0] + ".csv"
    with open(merged, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["cpu_hours", "epoch", "policy", "measure", "value", "ci95"])
        for r in rows:
            w.writerow([f"{r[0]:g}", r[1], r[2], r[3], f"{r[4]:g}", "" if r[5] is None else f"{r[5]:g}"])
    print(f"wrote {merged}")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no PNG")
        return
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    styles = {"average": "-", "current": "--"}
    colours = {"lbr_fc": "C0", "lbr_fc12_fcpa34": "C1", "lbr_fcpa": "C2",
               "vs_uniform": "C3", "vs_always_call": "C4"}
    for policy in ("average", "current"):
        for m in MEASURES:
            pts = [r for r in rows if r[2] == policy and r[3] == m]
            if not pts:
                continue
            ax = axes[0] if m in LBR_KEYS else axes[1]
            x = [r[0] for r in pts]
            y = [r[4] for r in pts]
            err = [r[5] if r[5] is not None else 0.0 for r in pts]
            label = f"{'pi-bar' if policy == 'average' else 'pi^t'} {m.replace('_', '-')}"
            ax.errorbar(x, y, yerr=err, fmt="o" + styles[policy], color=colours[m], capsize=3,
                        label=label, alpha=1.0 if policy == "average" else 0.6)
    axes[0].axhline(0.15, color="grey", lw=0.8, ls=":")
    axes[0].axhline(0.25, color="grey", lw=0.8, ls=":")
    # Below 0 is LBR losing: the moonshot's side of the axis, so it is never clipped.
    axes[0].axhline(0.0, color="black", lw=0.8)
    axes[0].set_ylabel("LBR's winnings / its winnings against uniform")
    axes[0].set_title("Local best response (lower is better)")
    axes[1].axhline(5000, color="grey", lw=0.8, ls=":")
    axes[1].set_ylabel("mbb/hand")
    axes[1].set_title("Duplicate matches (higher is better)")
    for ax in axes:
        ax.set_xlabel("CPU-hours of training (2 cores)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(args.out, dpi=110)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
