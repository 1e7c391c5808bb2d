#!/usr/bin/env python3
"""Reproduces the shape of Fig. 2 of Davis, Schmid & Bowling (2019), "Low-Variance and
Zero-Variance Baselines for Extensive-Form Games": Public Outcome Sampling MCCFR on Leduc with
each baseline (none, learned-history, learned-infoset, predictive), a few seeds each.

Runs `target/release/armac-train` on configs/leduc_pos_predictive.toml with overrides (by
default the paper's POS setting: uniform sampling, simultaneous updates, CFR+ regrets with
linear averaging, exponential baseline averaging with alpha = 0.5, variance measured), then
reads NashConv from each run's metrics.csv and the counterfactual-value variance
(`cfv_variance_ema`, an exponential moving average of the per-iteration mean squared error of
the sampled counterfactual values) from its TensorBoard events.

Writes OUT.csv (baseline, seed, iteration, nash_conv, cfv_variance, cfv_variance_ema) and
OUT.png (mean over seeds: exploitability and cfv variance against iterations, log-log).
Usage: python3 scripts/repro_pos.py [--iterations 20000] [--seeds 3] [--out pos_baselines]
Build first: cargo build --release. Needs matplotlib and tensorboard (pip) for the PNG/events.
"""
import argparse
import csv
import os
import subprocess
import tempfile

BASELINES = ["none", "learned-history", "learned-infoset", "predictive"]


def scalars(run_dir, tags):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(run_dir, size_guidance={"scalars": 0})
    acc.Reload()
    have = set(acc.Tags().get("scalars", []))
    return {t: {e.step: e.value for e in acc.Scalars(t)} for t in tags if t in have}


def run(binary, baseline, seed, args, out_dir):
    sets = [
        f"solver.baseline=\"{baseline}\"",
        f"solver.iterations={args.iterations}",
        f"solver.updates=\"{args.updates}\"",
        f"solver.sampling=\"{args.sampling}\"",
        "solver.measure_variance=true",
        f"seed={seed}",
        f"eval.every={args.every}",
    ]
    cmd = ["nice", "-n", "10", binary, "--config", "configs/leduc_pos_predictive.toml",
           "--out", out_dir, "--quiet"]
    for s in sets:
        cmd += ["--set", s]
    subprocess.run(cmd, check=True)
    with open(os.path.join(out_dir, "metrics.csv")) as f:
        metrics = list(csv.DictReader(f))
    tb = scalars(out_dir, ["cfv_variance", "cfv_variance_ema"])
    rows = []
    for m in metrics:
        it = int(m["iteration"])
        rows.append([baseline, seed, it, float(m["nash_conv"]),
                     tb.get("cfv_variance", {}).get(it, float("nan")),
                     tb.get("cfv_variance_ema", {}).get(it, float("nan"))])
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iterations", type=int, default=20000)
    ap.add_argument("--every", type=int, default=500)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--updates", default="simultaneous")
    ap.add_argument("--sampling", default="uniform")
    ap.add_argument("--out", default="pos_baselines")
    ap.add_argument("--binary", default="target/release/armac-train")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for b in BASELINES:
            for seed in range(1, args.seeds + 1):
                rows += run(args.binary, b, seed, args, os.path.join(tmp, f"{b}-{seed}"))
                print(f"{b} seed {seed}: final NashConv {rows[-1][3]:.4g}, "
                      f"cfv variance (ema) {rows[-1][5]:.3g}")
    with open(args.out + ".csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["baseline", "seed", "iteration", "nash_conv", "cfv_variance",
                    "cfv_variance_ema"])
        w.writerows(rows)
    print(f"wrote {args.out}.csv")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib missing: no PNG")
        return
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    for b in BASELINES:
        its = sorted({r[2] for r in rows if r[0] == b})
        mean = lambda k, it: sum(r[k] for r in rows if r[0] == b and r[2] == it) / args.seeds
        ax1.plot(its, [mean(3, it) / 2 for it in its], label=b)
        # Zero variance (predictive after covering the outcomes) is drawn at 1e-30.
        ax2.plot(its, [max(mean(5, it), 1e-30) for it in its], label=b)
    for ax, title in [(ax1, "exploitability (NashConv / 2)"),
                      (ax2, "counterfactual value variance (EMA)")]:
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("iterations")
        ax.set_title(title)
        ax.legend()
    fig.suptitle(f"POS MCCFR on Leduc ({args.sampling} sampling, {args.updates} updates, "
                 f"mean of {args.seeds} seeds)")
    fig.tight_layout()
    fig.savefig(args.out + ".png", dpi=120)
    print(f"wrote {args.out}.png")


if __name__ == "__main__":
    main()
