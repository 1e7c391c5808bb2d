#!/usr/bin/env python3
"""Average strategy sampling against chance, external and outcome sampling MCCFR
(Gibson, Burch, Lanctot & Szafron 2012, the Bluff experiments): NashConv of the average
strategy against nodes touched and against seconds on Liar's Dice (Bluff(1,1), 6-sided die,
13 actions per decision), same time budget per algorithm, a few seeds.

Each run is one `armac-train` invocation on a generated config (AS with the paper's epsilon =
0.05, tau = 1000, beta = 1e6; OS with OpenSpiel's epsilon = 0.6 scheme; CS and ES plain).
Writes DIR/as_vs_mccfr.csv (every evaluation of every run) and DIR/as_vs_mccfr.png.

Usage: python3 scripts/repro_as.py [--game liars_dice] [--seconds 30] [--seeds 1 2]
       [--every 2000] [--out DIR]
"""
import argparse
import csv
import os
import subprocess
import sys

ALGORITHMS = ["as-mccfr", "cs-mccfr", "es-mccfr", "os-mccfr"]


def run(binary, out, game, algorithm, seed, seconds, every):
    run_dir = os.path.join(out, "runs", f"{algorithm}-s{seed}")
    os.makedirs(os.path.dirname(run_dir), exist_ok=True)
    cfg = os.path.join(out, "runs", f"{algorithm}-s{seed}.toml")
    with open(cfg, "w") as f:
        f.write(f'game = "{game}"\nseed = {seed}\n[solver]\nalgorithm = "{algorithm}"\n'
                f"iterations = 100000000\n[eval]\nevery = {every}\n")
    subprocess.run([binary, "--config", cfg, "--out", run_dir, "--max-seconds", str(seconds),
                    "--quiet"], check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(run_dir, "metrics.csv")) as f:
        return list(csv.DictReader(f))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--game", default="liars_dice")
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--every", type=int, default=2000, help="evaluation period (iterations)")
    ap.add_argument("--binary", default="target/release/armac-train")
    ap.add_argument("--out", default="runs/repro_as")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    rows = []
    for algorithm in ALGORITHMS:
        for seed in args.seeds:
            metrics = run(args.binary, args.out, args.game, algorithm, seed, args.seconds,
                          args.every)
            for r in metrics:
                rows.append({"algorithm": algorithm, "seed": seed, **r})
            last = metrics[-1]
            print(f"{algorithm:9} seed {seed}: {last['iteration']:>9} iterations, "
                  f"{float(last['nodes_touched']):.3g} nodes, NashConv {float(last['nash_conv']):.4f}",
                  flush=True)
    path = os.path.join(args.out, "as_vs_mccfr.csv")
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)
    print(f"wrote {path}")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed: no PNG", file=sys.stderr)
        return
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    colors = dict(zip(ALGORITHMS, ["C0", "C1", "C2", "C3"]))
    for algorithm in ALGORITHMS:
        for seed in args.seeds:
            rs = [r for r in rows if r["algorithm"] == algorithm and r["seed"] == seed]
            label = algorithm if seed == args.seeds[0] else None
            ys = [float(r["nash_conv"]) for r in rs]
            axes[0].loglog([float(r["nodes_touched"]) for r in rs], ys, color=colors[algorithm],
                           label=label, alpha=0.8)
            axes[1].loglog([max(float(r["seconds"]), 1e-3) for r in rs], ys,
                           color=colors[algorithm], label=label, alpha=0.8)
    axes[0].set_xlabel("nodes touched")
    axes[1].set_xlabel("seconds")
    for ax in axes:
        ax.set_ylabel("NashConv")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    fig.suptitle(f"{args.game}: AS vs CS / ES / OS MCCFR ({len(args.seeds)} seeds)")
    fig.tight_layout()
    png = os.path.join(args.out, "as_vs_mccfr.png")
    fig.savefig(png, dpi=120)
    print(f"wrote {png}")


if __name__ == "__main__":
    main()
