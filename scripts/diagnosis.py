#!/usr/bin/env python3
"""Where an ARMAC run stops improving: a table (and a plot) of its exact diagnostics.

Reads the metrics.csv of runs trained with `--set armac.diagnostics=true` (and
`armac.exact_eval=true`): one setting, several seeds. For every evaluated epoch that is a
multiple of --every (and the last epoch every seed reached) it prints the median over the seeds,
with the lowest and highest seed in brackets, of

  NC avg head     NashConv of the average-policy head's policy (`nash_conv`)
  NC exact avg    NashConv of the exact reach-weighted average of the run's own policies
                  pi^0..pi^t (`diag_nash_conv_exact_avg`): what a perfect average head would give
  NC pi^t         NashConv of the current policy (`nash_conv_current`)
  NC exact RM     NashConv of regret matching on the exact accumulated regrets of the sequence
                  (`diag_nash_conv_exact_rm`): what a perfect W head would play
  W error         TV distance of the W head's policy from exact regret matching (`diag_w_error`)
  W data / fit    that error split into the data (regret matching on the memory's per-infoset
                  mean targets against exact RM) and the fit (head against those means)
  critic adv RMSE / wrong mass   the critic against pi^t's exact values
  policy change   TV distance pi^{t+1} vs pi^t

Reading the table: the gap `NC avg head - NC exact avg` is the average head's fit; a falling
`NC exact avg` with a flat head means the head is the limit; a flat `NC exact avg` means the
sequence itself (W head, data, critic) no longer improves, and the W columns say which part.

With --baseline RUN... (one per run, same seeds in the same order) it prints instead, per
epoch, the NashConv of each run's average head, its baseline's, and their paired differences
(negative: the runs are better than their baselines).

Usage:
  python3 scripts/diagnosis.py --every 1000 runs/long/le_s1 runs/long/le_s2 runs/long/le_s3 \
      [--markdown] [--plot docs/curves/leduc_diagnosis.png --title "ARMAC, Leduc"]
  python3 scripts/diagnosis.py --every 500 runs/long/le_all_s{1,2,3} \
      --baseline runs/long/le_s{1,2,3}
"""
import argparse
import csv
import math
import os
import statistics

COLUMNS = [
    ("NC avg head", "nash_conv"),
    ("NC exact avg", "diag_nash_conv_exact_avg"),
    ("NC pi^t", "nash_conv_current"),
    ("NC exact RM", "diag_nash_conv_exact_rm"),
    ("W error", "diag_w_error"),
    ("W data", "diag_w_sampling_error"),
    ("W fit", "diag_w_fit_error"),
    ("critic adv RMSE", "diag_critic_adv_rmse"),
    ("critic wrong mass", "diag_critic_wrong_mass"),
    ("policy change", "diag_policy_change"),
]


def number(text):
    try:
        x = float(text)
    except (TypeError, ValueError):
        return math.nan
    return x


def read(run):
    """{epoch: row} of the evaluated epochs of a run (rows with a NashConv)."""
    with open(os.path.join(run, "metrics.csv")) as f:
        rows = list(csv.DictReader(f))
    out = {}
    for r in rows:
        if not math.isnan(number(r.get("nash_conv"))):
            out[int(r["epoch"])] = r
    if not out:
        raise SystemExit(f"{run}: no evaluated epoch in metrics.csv")
    missing = [c for _, c in COLUMNS if c not in rows[0]]
    if missing:
        raise SystemExit(f"{run}: metrics.csv lacks {missing} (train with armac.diagnostics)")
    return out


def summary(values):
    v = [x for x in values if not math.isnan(x)]
    if not v:
        return "n/a"
    if len(v) == 1:
        return f"{v[0]:.3g}"
    return f"{statistics.median(v):.3g} [{min(v):.3g}, {max(v):.3g}]"


def table(runs, every, markdown):
    common = set.intersection(*(set(r) for r in runs))
    if not common:
        raise SystemExit("the runs share no evaluated epoch")
    last = max(common)
    epochs = sorted(e for e in common if e % every == 0 or e == last)
    head = ["epoch"] + [name for name, _ in COLUMNS]
    lines = []
    for e in epochs:
        lines.append([str(e)] + [summary([number(r[e][c]) for r in runs]) for _, c in COLUMNS])
    if markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for l in lines:
            print("| " + " | ".join(l) + " |")
    else:
        widths = [max(len(x) for x in col) for col in zip(head, *lines)]
        for l in [head] + lines:
            print("  ".join(x.rjust(w) for x, w in zip(l, widths)))


def paired(runs, bases, every, markdown):
    """Per epoch: the average head's NashConv of every run and its baseline, and the paired
    differences with their median."""
    common = set.intersection(*(set(r) for r in runs + bases))
    if not common:
        raise SystemExit("the runs and baselines share no evaluated epoch")
    last = max(common)
    head = ["epoch", "runs", "baselines", "differences", "median difference"]
    lines = []
    for e in sorted(x for x in common if x % every == 0 or x == last):
        a = [number(r[e]["nash_conv"]) for r in runs]
        b = [number(r[e]["nash_conv"]) for r in bases]
        d = [x - y for x, y in zip(a, b)]
        fmt = lambda v: " / ".join(f"{x:.3f}" for x in v)
        lines.append([str(e), fmt(a), fmt(b), " / ".join(f"{x:+.3f}" for x in d),
                      f"{statistics.median(d):+.3f}"])
    if markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for l in lines:
            print("| " + " | ".join(l) + " |")
    else:
        widths = [max(len(x) for x in col) for col in zip(head, *lines)]
        for l in [head] + lines:
            print("  ".join(x.rjust(w) for x, w in zip(l, widths)))


def plot(runs, out, title):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [
        ("NashConv", ["nash_conv", "diag_nash_conv_exact_avg", "diag_nash_conv_exact_rm",
                      "nash_conv_current"]),
        ("W head (TV distance)", ["diag_w_error", "diag_w_sampling_error", "diag_w_fit_error"]),
        ("critic", ["diag_critic_adv_rmse", "diag_critic_wrong_mass", "diag_critic_drift"]),
    ]
    common = sorted(set.intersection(*(set(r) for r in runs)))
    fig, axes = plt.subplots(1, len(panels), figsize=(6 * len(panels), 4.5))
    for ax, (name, cols) in zip(axes, panels):
        for c in cols:
            med = [statistics.median(number(r[e][c]) for r in runs) for e in common]
            lo = [min(number(r[e][c]) for r in runs) for e in common]
            hi = [max(number(r[e][c]) for r in runs) for e in common]
            (line,) = ax.plot(common, med, label=c)
            ax.fill_between(common, lo, hi, alpha=0.2, color=line.get_color())
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("epoch")
        ax.set_title(name)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(f"{title} (median and range over {len(runs)} seeds)")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    print(f"wrote {out}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("runs", nargs="+")
    ap.add_argument("--every", type=int, default=1000)
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--plot")
    ap.add_argument("--title", default="ARMAC diagnostics")
    ap.add_argument("--baseline", nargs="+", help="paired baseline runs, one per run")
    a = ap.parse_args()
    if a.every < 1:
        raise SystemExit("--every must be at least 1")
    runs = [read(r) for r in a.runs]
    if a.baseline:
        if len(a.baseline) != len(a.runs):
            raise SystemExit(f"{len(a.runs)} runs but {len(a.baseline)} baselines")
        paired(runs, [read(r) for r in a.baseline], a.every, a.markdown)
        return
    table(runs, a.every, a.markdown)
    if a.plot:
        plot(runs, a.plot, a.title)


if __name__ == "__main__":
    main()
