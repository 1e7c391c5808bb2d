#!/usr/bin/env python3
"""Outcome-sampling MCCFR on Leduc with each baseline (none, static "always call", learned
history, learned infoset, predictive), under the two sampling schemes of Davis, Schmid & Bowling
(2019), Figure 1a/1b: `uniform` and `opponent-on-policy`; CFR+ regret zeroing, linear averaging,
alternating updates, as in the paper's Section 5. Runs target/release/armac-train once per
(scheme, baseline, seed), then writes one CSV with every evaluation and a PNG of the mean
exploitability (NashConv / 2) against iterations, log-log, one panel per scheme.

Figure 1c, Leduc with utilities shifted by +100 to player 1 (`leduc_poker(transfer=100)`, an
armac game option), is the third panel: opponent-on-policy sampling, static baseline omitted
(identical to panel 2, as in the paper).

Usage: python3 scripts/repro_baselines.py [--iterations N] [--seeds K] [--evals E] [--out DIR]
Defaults (100000 iterations, 3 seeds, 14 x 3 = 42 runs) take well under 3 minutes on two
busy cores; the paper's curves go to ~10^7 iterations and average 20 seeds
(--iterations 10000000 --seeds 20). Needs matplotlib for the PNG (the CSV is always written).
"""
import argparse
import csv
import os
import subprocess
import sys

BASELINES = ["none", "static", "learned-history", "learned-infoset", "predictive"]
# (panel title, sampling scheme, game, baselines)
PANELS = [
    ("uniform sampling", "uniform", "leduc_poker", BASELINES),
    ("opponent-on-policy sampling", "opponent-on-policy", "leduc_poker", BASELINES),
    ("shifted utilities (+100), opponent-on-policy", "opponent-on-policy",
     "leduc_poker(transfer=100)", [b for b in BASELINES if b != "static"]),
]


def run(binary, out_dir, panel, scheme, game, baseline, seed, iterations, every):
    run_dir = os.path.join(out_dir, "runs", f"p{panel}-{scheme}-{baseline}-s{seed}")
    cmd = [
        "nice", "-n", "10", binary,
        "--config", "configs/leduc_os_predictive.toml",
        "--out", run_dir, "--quiet",
        "--set", f"game={game}",
        "--set", f"solver.iterations={iterations}",
        "--set", f"solver.sampling={scheme}",
        "--set", f"solver.baseline={baseline}",
        "--set", f"seed={seed}",
        "--set", f"eval.every={every}",
    ]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(run_dir, "metrics.csv")) as f:
        return list(csv.DictReader(f))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--iterations", type=int, default=100_000)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--evals", type=int, default=40, help="evaluations per run (linear spacing)")
    ap.add_argument("--out", default="runs/repro_baselines")
    ap.add_argument("--binary", default="target/release/armac-train")
    args = ap.parse_args()
    if not os.path.exists(args.binary):
        sys.exit(f"{args.binary} not found: run `cargo build --release` first")
    every = max(1, args.iterations // args.evals)
    os.makedirs(args.out, exist_ok=True)
    rows = []
    for panel, (_, scheme, game, baselines) in enumerate(PANELS):
        for baseline in baselines:
            for seed in range(args.seeds):
                for r in run(args.binary, args.out, panel, scheme, game, baseline, seed,
                             args.iterations, every):
                    rows.append({
                        "panel": panel, "game": game, "scheme": scheme, "baseline": baseline,
                        "seed": seed,
                        "iteration": int(r["iteration"]),
                        "nodes_touched": int(r["nodes_touched"]),
                        "nash_conv": float(r["nash_conv"]),
                        "exploitability": float(r["nash_conv"]) / 2.0,
                    })
                print(f"{game:>26} {scheme:>18} {baseline:>15} seed {seed}: final NashConv "
                      f"{rows[-1]['nash_conv']:.4f}", flush=True)
    csv_path = os.path.join(args.out, "baselines.csv")
    with open(csv_path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)
    print(f"wrote {csv_path}")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib missing: no PNG (python3 -m pip install matplotlib)")
        return
    fig, axes = plt.subplots(1, len(PANELS), figsize=(16, 4.2), sharey=True)
    for panel, (ax, (title, _, _, baselines)) in enumerate(zip(axes, PANELS)):
        for baseline in baselines:
            by_iter = {}
            for r in rows:
                if r["panel"] == panel and r["baseline"] == baseline:
                    by_iter.setdefault(r["iteration"], []).append(r["exploitability"])
            its = sorted(by_iter)
            mean = [sum(by_iter[i]) / len(by_iter[i]) for i in its]
            ax.plot(its, mean, label=baseline, color=f"C{BASELINES.index(baseline)}")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(f"Leduc OS-MCCFR (CFR+), {title}", fontsize=9)
        ax.set_xlabel("iterations")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel(f"exploitability (mean of {args.seeds} seeds)")
    axes[1].legend()
    fig.tight_layout()
    png = os.path.join(args.out, "baselines.png")
    fig.savefig(png, dpi=120)
    print(f"wrote {png}")


if __name__ == "__main__":
    main()
