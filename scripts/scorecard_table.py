#!/usr/bin/env python3
"""One table of several Hold'em scorecards (`armac-eval scorecard --json` files), for seeds of
one config: per file the epoch, the average policy's LBR-FC / LBR-FC12-FCPA34 / LBR-FCPA ratios
and their mean, its matches against uniform and always-call, and the current policy's ratios;
then the median of each column and the median file by the mean of the average policy's three
ratios (how `models/README.md` picks a shipped Hold'em model).

Usage: scripts/scorecard_table.py [--label NAME] SCORECARD.json [SCORECARD.json ...]
"""
import argparse
import json
import re
import statistics
import sys

VARIANTS = ("fc", "fc12-fcpa34", "fcpa")


def load(path):
    try:
        with open(path) as f:
            card = json.load(f)
    except (OSError, ValueError) as e:
        sys.exit(f"error: {path}: not a readable scorecard JSON ({e})")
    if "policies" not in card or "average" not in card["policies"]:
        sys.exit(f"error: {path}: no average policy in this scorecard")
    return card


def row(path, card):
    avg = card["policies"]["average"]
    cur = card["policies"].get("current")
    ratios = [avg["lbr"][v]["ratio"] for v in VARIANTS]
    epoch = re.search(r"epoch (\d+)", avg.get("policy", ""))
    return {
        "file": path,
        "epoch": int(epoch.group(1)) if epoch else None,
        "avg": ratios,
        "mean": sum(ratios) / len(ratios),
        "uniform": avg["vs_uniform"]["mean"],
        "call": avg["vs_always_call"]["mean"],
        "cur": [cur["lbr"][v]["ratio"] for v in VARIANTS] if cur else None,
    }


def fmt(x, digits=2):
    return "—" if x is None else f"{x:.{digits}f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--label", default="")
    ap.add_argument("cards", nargs="+")
    a = ap.parse_args()
    cards = [(p, load(p)) for p in a.cards]
    rows = [row(p, c) for p, c in cards]
    seeds = {c["seed"] for _, c in cards}
    if len(seeds) > 1:
        print(f"note: the scorecards use different seeds {sorted(seeds)}: other deals", file=sys.stderr)
    print(f"| {a.label or 'run'} | epoch | π̄ LBR-FC / FC12-FCPA34 / FCPA ratio (mean) "
          "| π̄ vs uniform / always-call | π^t LBR-FC / FC12-FCPA34 / FCPA ratio |")
    print("|---|---|---|---|---|")
    for r in rows:
        cur = " / ".join(fmt(x) for x in r["cur"]) if r["cur"] else "—"
        print(f"| {r['file']} | {r['epoch'] or '—'} | {' / '.join(fmt(x) for x in r['avg'])} "
              f"({fmt(r['mean'])}) | {r['uniform']:+,.0f} / {r['call']:+,.0f} | {cur} |")
    med = lambda xs: statistics.median(xs)
    avg_med = [med([r["avg"][i] for r in rows]) for i in range(3)]
    print(f"| median | | {' / '.join(fmt(x) for x in avg_med)} ({fmt(med([r['mean'] for r in rows]))}) "
          f"| {med([r['uniform'] for r in rows]):+,.0f} / {med([r['call'] for r in rows]):+,.0f} | |")
    ranked = sorted(rows, key=lambda r: r["mean"])
    print(f"\nmedian run by the mean of π̄'s ratios: {ranked[(len(ranked) - 1) // 2]['file']}")


if __name__ == "__main__":
    main()
