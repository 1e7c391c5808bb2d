#!/usr/bin/env python3
"""Paired comparison of two ARMAC settings on the same seeds, under the deterministic schedule.

Trains CONFIG once per seed with the A overrides and once with the B overrides (every run with
armac.schedule = "lockstep", so a (setting, seed) pair has one outcome and reruns are skipped:
a run directory with a summary at the requested epoch is reused), then prints per seed the
final exact NashConv (the last evaluated epoch) and the area under the curve (the mean of
log NashConv over the evaluations, reported as its exponential: a geometric mean), and the
paired difference B - A of each with its 95% t-interval over the seeds. A difference whose
interval excludes 0 ranks the settings; the spread of each setting over the seeds is printed
beside it for scale.

Usage:
  python3 scripts/paired.py --config leduc_armac.toml --seeds 1-5 \
      --set armac.epochs=300 --set eval.every=25 \
      --a armac.memory_policy_power=1 --b armac.memory_policy_power=2 \
      --out runs/paired/policy_power
Overrides are armac-train --set expressions (repeat --a/--b/--set for several).
"""
import argparse
import csv
import json
import math
import os
import statistics
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

# Two-sided 95% quantiles of Student's t by degrees of freedom (1-30), then the normal's.
T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
        2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
        2.060, 2.056, 2.052, 2.048, 2.045, 2.042]


def t975(df):
    return T975[df - 1] if df <= len(T975) else 1.960


def seeds(spec):
    out = []
    for part in spec.split(","):
        lo, _, hi = part.partition("-")
        out += list(range(int(lo), int(hi or lo) + 1))
    return out


def epochs_of(sets):
    for s in sets:
        if s.startswith("armac.epochs="):
            return int(s.split("=", 1)[1])
    return None


def train(binary, config, sets, seed, out):
    """Runs (or reuses) one lock-step run; returns its evaluated (epoch, NashConv) rows."""
    want = epochs_of(sets)
    summary = os.path.join(out, "summary.json")
    done = False
    if os.path.exists(summary):
        with open(summary) as f:
            done = want is not None and json.load(f).get("iterations") == want
    if not done:
        if os.path.exists(out):
            raise SystemExit(f"{out} exists but is not a finished run of this comparison; "
                             "remove it or choose another --out")
        cmd = [binary, "--config", config, "--out", out, "--quiet", "--set", f"seed={seed}",
               "--set", 'armac.schedule="lockstep"']
        for s in sets:
            cmd += ["--set", s]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            raise SystemExit(f"{' '.join(cmd)} failed:\n{r.stderr}")
    with open(os.path.join(out, "metrics.csv")) as f:
        rows = [(int(r["epoch"]), float(r["nash_conv"])) for r in csv.DictReader(f)
                if r["nash_conv"].lower() != "nan"]
    if not rows:
        raise SystemExit(f"{out}: no evaluated epoch (set eval.every)")
    return rows


def summary(name, values):
    n = len(values)
    mean = statistics.fmean(values)
    sd = statistics.stdev(values) if n > 1 else float("nan")
    half = t975(n - 1) * sd / math.sqrt(n) if n > 1 else float("nan")
    return f"{name}: mean {mean:+.4f}, 95% interval [{mean - half:+.4f}, {mean + half:+.4f}] " \
           f"over {n} seeds (sd {sd:.4f})"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--config", required=True)
    ap.add_argument("--seeds", default="1-5")
    ap.add_argument("--set", action="append", default=[], dest="sets")
    ap.add_argument("--a", action="append", default=[])
    ap.add_argument("--b", action="append", default=[])
    ap.add_argument("--out", required=True)
    ap.add_argument("--binary", default="target/release/armac-train")
    ap.add_argument("--jobs", type=int, default=1, help="runs at once (each is one process)")
    args = ap.parse_args()
    ss = seeds(args.seeds)
    jobs = []
    for tag, extra in (("a", args.a), ("b", args.b)):
        for s in ss:
            jobs.append((tag, s, os.path.join(args.out, f"{tag}_seed{s}"), args.sets + extra))
    os.makedirs(args.out, exist_ok=True)
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        results = list(pool.map(
            lambda j: train(args.binary, args.config, j[3], j[1], j[2]), jobs))
    curves = {(j[0], j[1]): r for j, r in zip(jobs, results)}
    print(f"config {args.config}, overrides {args.sets}")
    print(f"A: {args.a}\nB: {args.b}")
    print(f"{'seed':>5} {'final A':>9} {'final B':>9} {'B-A':>9} {'auc A':>9} {'auc B':>9} {'B-A':>9}")
    finals, aucs = [], []
    for s in ss:
        a, b = curves[("a", s)], curves[("b", s)]
        if [e for e, _ in a] != [e for e, _ in b]:
            sys.exit(f"seed {s}: A and B were evaluated at different epochs")
        fa, fb = a[-1][1], b[-1][1]
        ga = math.exp(statistics.fmean(math.log(v) for _, v in a))
        gb = math.exp(statistics.fmean(math.log(v) for _, v in b))
        finals.append(fb - fa)
        aucs.append(gb - ga)
        print(f"{s:>5} {fa:9.4f} {fb:9.4f} {fb - fa:+9.4f} {ga:9.4f} {gb:9.4f} {gb - ga:+9.4f}")
    for tag in ("a", "b"):
        vals = [curves[(tag, s)][-1][1] for s in ss]
        print(f"{tag.upper()} final NashConv over seeds: median {statistics.median(vals):.4f}, "
              f"range {min(vals):.4f}-{max(vals):.4f}")
    print(summary("final NashConv, B - A", finals))
    print(summary("area under the curve (geometric mean NashConv), B - A", aucs))


if __name__ == "__main__":
    main()
