#!/usr/bin/env python3
"""Stochastic FTRL / OMD (dilated entropy) against MCCFR, on the paper's axes.

Farina, Kroer & Sandholm (2020), "Stochastic regret minimization in extensive-form games",
section 5: exploitability (here NashConv, the sum of both players' best-response gains, i.e.
twice the saddle-point gap) against the number of game-tree nodes touched, with external
sampling and balanced outcome sampling (100 samples per loss estimate).

Every run is one `armac-train` invocation on a generated config; its `metrics.csv` gives
NashConv, iterations and nodes touched. Results go to one CSV (all runs) and one PNG per game
(NashConv vs nodes touched, and vs iterations).

Algorithms are given by name; each name runs with each estimator it supports:
  ftrl, omd             -> ftrl-external, ftrl-balanced-outcome, ... (our keys)
  es-mccfr, os-mccfr    -> run with their defaults (no extra keys)
  anything else         -> passed through as `[solver] algorithm = NAME`
An algorithm the binary does not know (it exits naming the algorithm) is skipped with a note.

Example (default budget: < 3 minutes under nice on 2 shared cores):
  scripts/repro_sfo.py --out /tmp/sfo-repro
  scripts/repro_sfo.py --algorithms ftrl omd es-mccfr os-mccfr --games leduc13 goofspiel5 \
      --seconds 30 --out /tmp/sfo-repro
"""

import argparse
import csv
import os
import subprocess
import sys
import time

GAMES = {
    "leduc13": "leduc_poker(num_ranks=13)",
    "leduc": "leduc_poker",
    "goofspiel5": "goofspiel5",
    "kuhn": "kuhn_poker",
}

# Step sizes from a coarse sweep (factors of 10), per game and estimator; see the module
# docstring of src/sfo and the report. Override with --step-size.
STEP_SIZES = {
    ("leduc13", "external"): 1e4,
    ("leduc13", "balanced-outcome"): 1e5,
    ("leduc", "external"): 1e3,
    ("leduc", "balanced-outcome"): 1e3,
    ("goofspiel5", "external"): 1e2,
    ("goofspiel5", "balanced-outcome"): 1e2,  # untuned: taken from external sampling
    ("kuhn", "external"): 10.0,
    ("kuhn", "balanced-outcome"): 10.0,
}

OURS = ("ftrl", "omd")


def config_text(game, algorithm, iterations, seed, every, estimator=None, step=None):
    lines = [
        f'game = "{GAMES[game]}"',
        f"seed = {seed}",
        "",
        "[solver]",
        f'algorithm = "{algorithm}"',
        f"iterations = {iterations}",
    ]
    if algorithm in OURS:
        lines += [
            'updates = "simultaneous"',
            f'estimator = "{estimator}"',
            f"step_size = {step!r}",
        ]
    lines += ["", "[eval]", f"every = {every}", ""]
    return "\n".join(lines)


def read_metrics(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--algorithms", nargs="+", default=["ftrl", "omd", "es-mccfr", "os-mccfr"])
    ap.add_argument("--estimators", nargs="+", default=["external", "balanced-outcome"])
    ap.add_argument("--games", nargs="+", default=["leduc13", "goofspiel5"], choices=sorted(GAMES))
    ap.add_argument("--seconds", type=float, default=12.0, help="wall-clock cap per run")
    ap.add_argument("--iterations", type=int, default=100000, help="iteration cap per run")
    ap.add_argument("--every", type=int, default=0, help="evaluation period (0: per game default)")
    ap.add_argument("--seeds", type=int, nargs="+", default=[1])
    ap.add_argument("--step-size", type=float, default=None, help="override every FTRL/OMD step size")
    ap.add_argument("--binary", default="target/release/armac-train")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()

    os.makedirs(args.out, exist_ok=True)
    rows, skipped = [], []
    t0 = time.time()
    default_every = {"leduc13": 20, "goofspiel5": 20, "leduc": 20, "kuhn": 20}
    for game in args.games:
        for algorithm in args.algorithms:
            variants = [(e, f"{algorithm}-{e}") for e in args.estimators] if algorithm in OURS else [(None, algorithm)]
            for estimator, label in variants:
                for seed in args.seeds:
                    step = None
                    if algorithm in OURS:
                        step = args.step_size or STEP_SIZES.get((game, estimator), 1e3)
                    run_dir = os.path.join(args.out, f"{game}-{label}-s{seed}")
                    cfg = run_dir + ".toml"
                    with open(cfg, "w") as f:
                        f.write(config_text(game, algorithm, args.iterations, seed,
                                            args.every or default_every[game], estimator, step))
                    cmd = ["nice", "-n", "10", args.binary, "--config", cfg, "--out", run_dir,
                           "--max-seconds", str(args.seconds), "--quiet"]
                    print(f"[{time.time() - t0:6.1f}s] {game} {label} seed {seed}", flush=True)
                    proc = subprocess.run(cmd, capture_output=True, text=True)
                    if proc.returncode != 0:
                        msg = (proc.stderr or proc.stdout).strip().splitlines()
                        msg = msg[-1] if msg else f"exit {proc.returncode}"
                        if "unknown algorithm" in (proc.stderr + proc.stdout):
                            print(f"  skipped: {msg}", flush=True)
                            skipped.append(label)
                            break
                        print(f"  failed: {msg}", flush=True)
                        continue
                    for r in read_metrics(os.path.join(run_dir, "metrics.csv")):
                        rows.append({
                            "game": game, "algorithm": label, "seed": seed,
                            "step_size": step if step is not None else "",
                            "iteration": int(r["iteration"]),
                            "nodes_touched": int(float(r["nodes_touched"])),
                            "nash_conv": float(r["nash_conv"]),
                            "seconds": float(r["seconds"]),
                        })
                    last = [r for r in rows if r["game"] == game and r["algorithm"] == label and r["seed"] == seed]
                    if last:
                        print(f"  {last[-1]['iteration']} iterations, {last[-1]['nodes_touched']:.3g} nodes, "
                              f"NashConv {last[-1]['nash_conv']:.4g}", flush=True)

    out_csv = os.path.join(args.out, "sfo_vs_mccfr.csv")
    with open(out_csv, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["game", "algorithm", "seed", "step_size", "iteration",
                                          "nodes_touched", "nash_conv", "seconds"])
        w.writeheader()
        w.writerows(rows)
    print(f"wrote {out_csv} ({len(rows)} rows)")
    if skipped:
        print("skipped (unknown to this binary): " + ", ".join(sorted(set(skipped))))

    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed: no PNG (pip install matplotlib)")
        return 0
    for game in args.games:
        runs = sorted({(r["algorithm"], r["seed"]) for r in rows if r["game"] == game})
        if not runs:
            continue
        fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
        for algorithm, seed in runs:
            pts = [r for r in rows if r["game"] == game and r["algorithm"] == algorithm and r["seed"] == seed]
            label = algorithm if len(args.seeds) == 1 else f"{algorithm} s{seed}"
            axes[0].plot([p["nodes_touched"] for p in pts], [p["nash_conv"] for p in pts], label=label)
            axes[1].plot([p["iteration"] for p in pts], [p["nash_conv"] for p in pts], label=label)
        for ax, xl in zip(axes, ["nodes touched", "iterations"]):
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlabel(xl)
            ax.set_ylabel("NashConv of the average strategy")
            ax.grid(True, which="both", alpha=0.3)
        axes[0].legend(fontsize=8)
        fig.suptitle(f"{GAMES[game]}: stochastic FTRL/OMD vs MCCFR")
        fig.tight_layout()
        png = os.path.join(args.out, f"sfo_vs_mccfr_{game}.png")
        fig.savefig(png, dpi=110)
        print(f"wrote {png}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
