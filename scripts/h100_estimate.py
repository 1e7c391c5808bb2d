#!/usr/bin/env python3
"""Estimates what one H100 would reach with the batched public-tree solvers
(`src/nn/public/{cfr,pos}.rs` on burn's `cuda` backend) from the layout sizes that
`armac-bench batched` prints, since no GPU is available here to measure.

Per iteration, for batch size B, three lower bounds on the time:
  (a) memory: bytes every tensor op reads and writes (counted op by op from the code, below),
      times B, over an achievable HBM bandwidth;
  (b) launches: tensor ops (kernels) per iteration times a per-op launch/dispatch overhead
      (burn's cuda backend without fusion runs one kernel per op; views such as reshape of a
      contiguous tensor, slice, expand and swap_dims launch nothing);
  (c) arithmetic: flops (about one per float written; the terminal matmul 2·T·P² per
      element) over the f32 peak;
and, for POS, (d) the host: drawing every element's sampled path on the CPU and uploading the
per-depth tables (burn queues GPU work asynchronously, so this can overlap the GPU's work of
the previous pass; it is shown as its own bound).
The estimate is time = max of the bounds; element-iterations/s = B / time.

Usage: scripts/h100_estimate.py [FILE.jsonl ...]   (default: stdin; lines that are not
`"bench": "batched"` JSON are ignored; repeated (game, algorithm, B) lines are merged, with the
median measured throughput shown beside the estimate).

`armac-bench search` output (`"bench": "search_profile"` lines and the `"summary"` line, e.g.
from `scripts/bench_search.sh`) gets a second estimate: Student of Games searches per second
with the CVPN's forward passes on the H100 (the regret engine, feature encoding, decoding and
simulations stay on the host as measured): per forward, max of launches (one per linear layer
product, bias and activation, plus an upload and a read-back), flops (2 per weight per query)
and bytes (weights plus activations) over the bounds above, B = 1 against lock-step.
"""
import json
import statistics
import sys

# ---- Assumptions (each printed) ----------------------------------------------------------
HBM_PEAK = 3.35e12          # H100 SXM HBM3 peak bytes/s
HBM_BW = 2.8e12             # achievable by streaming/gather kernels (~85% of peak)
LAUNCH_S = 7e-6             # per tensor op: burn cuda, no fusion (launch + Rust dispatch + pool)
LAUNCH_RANGE = (5e-6, 10e-6)
F32_PEAK = 67e12            # f32 non-tensor-core FMA peak (SXM); flops here are elementwise
HOST_PER_ELEMENT_DEPTH_S = 15e-9  # POS: host time per element and depth to draw the path
UPLOAD_S = 10e-6            # POS: per host->device upload (latency)
PCIE_BW = 25e9              # POS: host->device bytes/s (PCIe Gen5 x16 achievable)
INT_BYTES = 4               # burn cuda's default int element (i32): index tensors
L2_BYTES = 50e6             # H100 L2: a batch whose state fits may run above HBM bandwidth


def assumptions():
    return [
        f"HBM bandwidth achievable {HBM_BW / 1e12:.2f} TB/s of the {HBM_PEAK / 1e12:.2f} TB/s "
        f"peak (H100 SXM); every op streams its operands from HBM (no L2 reuse credited, so "
        f"batches whose state fits the {L2_BYTES / 1e6:.0f} MB L2 may run faster)",
        f"launch/dispatch overhead {LAUNCH_S * 1e6:.0f} us per tensor op "
        f"(range {LAUNCH_RANGE[0] * 1e6:.0f}-{LAUNCH_RANGE[1] * 1e6:.0f} us): burn's cuda backend "
        f"without the fusion feature, one kernel per op, ops issued serially from one host "
        f"thread; no CUDA graphs",
        "views launch nothing: reshape of a contiguous tensor, slice, expand, swap_dims; a "
        "reshape of a strided slice (the POS `fcol` columns, the CFR action-value block) copies",
        f"f32 peak {F32_PEAK / 1e12:.0f} TFLOP/s (no tensor cores: the ops are elementwise, "
        f"gathers and a [1 x P] x [P x P] batched matmul)",
        f"index tensors are shared by the batch ({INT_BYTES}-byte ints) and counted once per op, "
        f"not per element; boolean masks counted as one float",
        "scatter/select_assign on a tensor another handle still holds copies it first (measured "
        "on the CPU backend: scatter into a [4096, 30000] f32 tensor 0.66 ms when uniquely owned, "
        "315 ms when a clone is alive; burn's cuda backend has the same copy-on-shared rule): "
        "the first version of the solvers scattered into shared state ('pre-fix' columns count those copies); the current code moves the state out first and does not ('current' columns)",
        f"POS host side: {HOST_PER_ELEMENT_DEPTH_S * 1e9:.0f} ns per element and depth to draw "
        f"the path (SplitMix64 + table fill), {UPLOAD_S * 1e6:.0f} us per upload "
        f"(5 per pass) plus bytes at {PCIE_BW / 1e9:.0f} GB/s",
        "CFR: alternating updates (the benchmarked default); one element-iteration updates "
        "every node of the layout once",
    ]


class Cost:
    """Kernels per iteration, float traffic per element, shared bytes, flops per element."""

    def __init__(self):
        self.kernels = 0
        self.floats = 0.0       # per batch element
        self.shared = 0.0       # bytes per iteration independent of B (index tables, weights)
        self.flops = 0.0        # per batch element
        self.copy_floats = 0.0  # per element: copies of shared tensors (the 'as written' extra)

    def op(self, n=1, read=0.0, write=0.0, idx=0.0, flops=None, shared=0.0):
        """`n` kernels reading `read` and writing `write` floats per element, with `idx`
        shared index entries and `shared` shared bytes."""
        self.kernels += n
        self.floats += n * (read + write)
        self.shared += n * (idx * INT_BYTES + shared)
        self.flops += n * (write if flops is None else flops)


def cfr_cost(lay, fixed):
    """Full-width batched CFR, alternating updates (`src/nn/public/cfr.rs`)."""
    n, p, a = lay["nodes"], lay["p"], lay["a"]
    t = lay["terminals"]
    d0, d1 = lay["decisions"]
    x = [max(d0, 1) * p * a, max(d1, 1) * p * a]
    xs = x[0] + x[1]
    child_slots = [c * p for c in lay["level_nodes"][1:]]
    c = Cost()

    def strategy_vector():
        # `strategy_vector`: ones [B, 1] and cat of both blocks.
        c.op(read=0, write=1)
        c.op(read=xs + 1, write=xs + 1)

    def reaches(players):
        # `reaches`: per player zeros [B, N·P+1], root slice_assign, then per level
        # select(src), select(sig) of the strategy vector, mul, slice_assign.
        strategy_vector()
        for _ in players:
            c.op(write=n * p + 1)
            c.op(read=p, write=p)
            for s in child_slots:
                c.op(read=s, write=s, idx=s)       # select parent reaches
                c.op(read=s, write=s, idx=s)       # select strategy entries
                c.op(read=2 * s, write=s)          # mul
                c.op(read=s, write=s)              # slice_assign (in place)

    def values():
        # `values`: strategy vector again, zeros [B, N·P+2], terminal select → matmul →
        # select_assign(Add), then per level (bottom-up) select(sig), mul, select_assign(Add).
        strategy_vector()
        c.op(write=n * p + 2)
        tp = t * p
        c.op(read=tp, write=tp, idx=tp)
        c.op(read=tp, write=tp, flops=2 * t * p * p, shared=t * p * p * 4)  # matmul
        c.op(read=2 * tp, write=tp, idx=tp)
        for s in child_slots:
            c.op(read=s, write=s, idx=s)
            c.op(read=2 * s, write=s)
            c.op(read=2 * s, write=s, idx=s)

    def update(xp, dp):
        # `update`: zeros, select(q_src), select_assign(q_dst), contiguous copy of the slice;
        # instant_regrets (12 ops), own reach select + 3 ops for the cumulative strategy,
        # regrets add + clamp, regret_match (6 ops). All on [B, D·P, A] blocks (xp floats).
        r = xp / a  # rows D·P
        c.op(write=xp + 1)
        c.op(read=xp, write=xp, idx=xp)
        c.op(read=2 * xp, write=xp, idx=xp)
        c.op(read=xp, write=xp)
        # instant_regrets
        c.op(read=2 * xp, write=xp)            # sigma * q
        c.op(read=xp, write=r)                 # sum_dim
        c.op(read=xp, write=xp)                # q.abs
        c.op(read=xp, write=r)                 # max_dim
        c.op(read=r, write=r)                  # v.abs
        c.op(read=2 * r, write=r)              # max_pair
        c.op(read=xp + r, write=xp)            # q - v
        c.op(read=xp, write=xp)                # d.abs
        c.op(read=r, write=r)                  # scale * noise
        c.op(read=xp + r, write=xp)            # lower_equal
        c.op(read=2 * xp, write=xp)            # mask_fill
        c.op(read=xp, write=xp, shared=xp * 4)  # * mask (shared [1, D·P, A])
        # cumulative strategy
        c.op(read=dp, write=dp, idx=dp)        # own reach select
        c.op(read=dp, write=dp)                # mul_scalar(weight)
        c.op(read=xp + dp, write=xp)           # * sigma
        c.op(read=2 * xp, write=xp)            # cumulative + ...
        # regrets
        c.op(read=2 * xp, write=xp)
        c.op(read=xp, write=xp)                # clamp_min (CFR+)
        # regret_match
        c.op(read=xp, write=xp)                # clamp_min
        c.op(read=xp, write=r)                 # sum_dim
        c.op(read=r, write=r)                  # lower_equal_elem
        c.op(read=r, write=r)                  # mask_fill
        c.op(read=xp + r, write=xp)            # div
        c.op(read=xp + r, write=xp, shared=xp * 4)  # mask_where(uniform)

    for i in range(2):
        if fixed:
            # Only the player updated last changed its strategy: one reach sweep per half.
            reaches([i])
        else:
            reaches([0, 1])
        values()
        update(x[i], max(lay["decisions"][i], 1) * p)
    return c


def pos_cost(lay, fixed):
    """Batched POS with the predictive baseline, alternating (`src/nn/public/pos.rs`)."""
    n, p, a, k = lay["nodes"], lay["p"], lay["a"], lay["k"]
    d0, d1 = lay["decisions"]
    depth = lay["levels"]
    s = p * p
    pa = p * a
    ks = k * s
    w = (d0 + d1 + 1) * pa          # regrets / cumulative / strategy width
    nb = n * s + 2                  # baselines width
    c = Cost()
    for _ in range(2):  # passes
        # setup: root reaches upload + repeat, zeros u_next, nv_next (uploads counted as host)
        c.op(n=2, write=s)
        c.op(n=2, write=s)
        # top-down, depth-1 transitions: child_up rows, zeros [B,1], per player cat, child_sig
        # rows, gather parent reaches, gather strategy entries, mul
        for _ in range(depth - 1):
            c.op(read=s, write=s, idx=1)
            c.op(write=1)
            for _ in range(2):
                c.op(read=s, write=s + 1)
                c.op(read=s, write=s, idx=1)
                c.op(read=s, write=s)
                c.op(read=s, write=s)
                c.op(read=2 * s, write=s)
        # deepest level: fcol(term) + utility rows
        c.op(read=2, write=1)
        c.op(read=s, write=s)
        for _ in range(depth - 1):
            c.op(n=6, read=2, write=1)                 # fcol copies (term, invq, a0, a1, sign, wpiq)
            c.op(read=s, write=s)                      # utility rows
            # 1. baseline-corrected action values [B, K, S]
            c.op(read=ks, write=ks)                    # select base_read rows (ints)
            c.op(read=2 * ks, write=ks)                # gather baselines
            c.op(read=ks + s, write=ks)                # u - b
            c.op(read=ks + k, write=ks)                # * onehot
            c.op(read=ks + 1, write=ks)                # * 1/q
            c.op(read=2 * ks, write=ks)                # b + ...
            # 2. node values
            c.op(n=3, read=ks, write=ks)               # sig, edge, up_local rows
            c.op(read=2 * ks, write=ks)                # gather strategy
            c.op(read=2 * ks, write=ks)                # edge * sigma
            c.op(write=s + 1)                          # zeros
            c.op(read=2 * ks, write=ks)                # w * q
            c.op(read=2 * ks + s, write=s)             # scatter(Add) into a fresh tensor
            # 3. counterfactual action values and the block update
            c.op(read=s, write=s)                      # chance rows
            c.op(n=2, read=s + 1, write=s)             # r1*a0, r0*a1
            c.op(n=2, read=2 * s, write=s)             # add, * chance
            c.op(read=ks + s, write=ks)                # q * opp
            c.op(n=2, read=ks, write=k * p)            # sum_dim(3), sum_dim(2)
            c.op(n=2, read=k * p + 1, write=k * p)     # * a0, * a1
            c.op(read=2 * k * p, write=k * p)          # add
            c.op(read=k, write=k)                      # child_action rows
            c.op(write=p * (a + 1))                    # zeros cfq
            c.op(read=k * p, write=k * p)              # swap_dims made contiguous
            c.op(read=2 * k * p + p * (a + 1), write=p * (a + 1))  # scatter(Add)
            c.op(n=3, read=pa, write=pa)               # block, mask, uniform rows
            c.op(read=2 * pa, write=pa)                # gather sigma_old
            c.op(n=12, read=1.6 * pa, write=pa)        # instant_regrets (12 ops on [P, A])
            c.op(read=2 * pa, write=pa)                # gather r_old
            c.op(n=2, read=2 * pa, write=pa)           # inst * sign, r_old + ...
            c.op(read=pa, write=pa)                    # clamp_min
            c.op(n=3, read=2 * s, write=s)             # own_joint
            c.op(n=2, read=s, write=p)                 # max_dim
            c.op(n=3, read=2 * p, write=p)             # * a0, * a1, add
            c.op(n=2, read=2 * pa, write=pa)           # cum_delta
            c.op(n=6, read=1.5 * pa, write=pa)         # regret_match
            c.op(n=2, read=2 * pa, write=pa)           # r_new - r_old, sigma_new - sigma_old
            c.op(n=3, read=2 * pa, write=pa)           # scatter regrets, cumulative, sigma
            if not fixed:
                # each of those scatters first copies the whole [B, W] (+1) state tensor
                c.copy_floats += 3 * 2 * w
            # 4. predictive baseline
            c.op(read=s, write=s)                      # base_write rows
            c.op(read=2 * s, write=s)                  # gather old
            c.op(read=2 * s, write=s)                  # sub
            c.op(read=2 * s, write=s)                  # scatter baselines
            if not fixed:
                c.copy_floats += 2 * nb
            c.op(read=ks, write=ks)                    # base_read rows
            c.op(n=2, read=2 * ks, write=ks)           # gather baselines, gather strategy
            c.op(read=2 * ks, write=ks)                # edge * sigma
            c.op(write=s + 1)                          # zeros
            c.op(read=2 * ks, write=ks)                # w * b
            c.op(read=2 * ks + s, write=s)             # scatter(Add)
            # tail: live mask and the two carried value vectors
            c.op(n=8, read=2 * s, write=s)
    return c


def host_seconds(lay, b):
    depth, k = lay["levels"], lay["k"]
    per_pass_bytes = depth * b * (3 * INT_BYTES + 4 * (6 + k))
    return 2 * (b * depth * HOST_PER_ELEMENT_DEPTH_S + 5 * UPLOAD_S + per_pass_bytes / PCIE_BW)


def estimate(line, fixed):
    lay = line["layout"]
    b = line["batch"]
    fb = 8 if line.get("precision") == "f64" else 4
    is_pos = line["algorithm"] == "pos"
    c = pos_cost(lay, fixed) if is_pos else cfr_cost(lay, fixed)
    bytes_it = b * (c.floats + c.copy_floats) * fb + c.shared
    bounds = {
        "memory": bytes_it / HBM_BW,
        "launches": c.kernels * LAUNCH_S,
        "flops": b * c.flops / F32_PEAK,
    }
    if is_pos:
        bounds["host"] = host_seconds(lay, b)
    t = max(bounds.values())
    bind = max(bounds, key=bounds.get)
    return c, bytes_it, bounds, b / t, bind


def forward_seconds(summary, queries):
    """One CVPN value forward of `queries` rows on the H100: (seconds, bound)."""
    i, h, k = summary["cvpn_input_size"], summary["cvpn_hidden"], summary["cvpn_layers"]
    out = summary["cvpn_value_outputs"]
    # (Linear(h) -> DoubleReLU (width 2h)) x k, then the value head.
    dims = [(i, h)] + [(2 * h, h)] * (k - 1) + [(2 * h, out)]
    weights = sum(a * b + b for a, b in dims)
    acts = i + sum(2 * b for _, b in dims[:-1]) + out
    bounds = {
        "launches": (3 * k + 2) * LAUNCH_S + 2 * UPLOAD_S,
        "flops": 2 * weights * queries / F32_PEAK,
        "memory": 4 * (weights + queries * acts) / HBM_BW,
    }
    bind = max(bounds, key=bounds.get)
    return bounds[bind], bind


def search_estimate(profiles, summary):
    print("\n# H100 estimate for Student of Games searches (CVPN forwards on the device, the "
          "rest on the host as measured)")
    print(f"# CVPN: input {summary['cvpn_input_size']}, hidden {summary['cvpn_hidden']} x "
          f"{summary['cvpn_layers']}, {summary['cvpn_value_outputs']} value outputs; "
          f"{summary['game']}, s = {summary['simulations']}, B = {summary['batch']}")
    print(f"{'side':>9} {'host us':>9} {'fwd/search':>10} {'q/fwd':>7} {'fwd us':>8} "
          f"{'bound':>8} {'H100 us/search':>14} {'searches/s':>11} {'measured/s':>11}")
    rates = {}
    for side in ("b1", "lockstep"):
        ps = [p for p in profiles if p["side"] == side]
        if not ps:
            continue
        p = ps[-1]
        per = p["us_per_search"]
        host = p["us_per_search_total"] - per["cvpn_forward"]
        fwd_per_search = p["forwards"] / summary["batch"]
        q = p["mean_queries_per_forward"]
        t, bind = forward_seconds(summary, q)
        us = host + fwd_per_search * t * 1e6
        rates[side] = 1e6 / us
        measured = 1e6 / p["us_per_search_total"]
        print(f"{side:>9} {host:9.0f} {fwd_per_search:10.2f} {q:7.0f} {t * 1e6:8.1f} "
              f"{bind:>8} {us:14.0f} {rates[side]:11.0f} {measured:11.0f}")
    if len(rates) == 2:
        print(f"# lock-step over B = 1 on the H100 (estimate): {rates['lockstep'] / rates['b1']:.2f}x "
              "(the host's regret engine and encoding bound it once the forwards are cheap)")


def main():
    files = sys.argv[1:]
    lines = []
    profiles, summaries = [], []
    srcs = [open(f) for f in files] if files else [sys.stdin]
    for src in srcs:
        for raw in src:
            raw = raw.strip()
            if not raw.startswith("{"):
                continue
            d = json.loads(raw)
            if d.get("bench") == "batched":
                lines.append(d)
            elif d.get("bench") == "search_profile":
                profiles.append(d)
            elif d.get("bench") == "search" and d.get("summary") and "cvpn_hidden" in d:
                summaries.append(d)
    if profiles and summaries:
        search_estimate(profiles, summaries[-1])
        if not lines:
            return
    groups = {}
    for d in lines:
        key = (d["game"], d["algorithm"], d["batch"], d.get("precision", "f32"))
        groups.setdefault(key, []).append(d)
    print("# H100 estimate for the batched public-tree solvers; assumptions:")
    for a in assumptions():
        print(f"#  - {a}")
    last = None
    for key in sorted(groups, key=lambda k: (k[0], k[1], k[2])):
        ds = groups[key]
        d = ds[0]
        game, alg, b, prec = key
        if (game, alg) != last:
            last = (game, alg)
            lay = d["layout"]
            c_w = pos_cost(lay, False) if alg == "pos" else cfr_cost(lay, False)
            c_f = pos_cost(lay, True) if alg == "pos" else cfr_cost(lay, True)
            fb = 8 if prec == "f64" else 4
            print(f"\n## {game} {alg} ({prec}): layout N={lay['nodes']} P={lay['p']} "
                  f"A={lay['a']} K={lay['k']} levels={lay['levels']} "
                  f"decisions={lay['decisions']} terminals={lay['terminals']}")
            print(f"#  per iteration: pre-fix {c_w.kernels} ops, "
                  f"{(c_w.floats + c_w.copy_floats) * fb / 1e3:.1f} kB/element "
                  f"({c_w.copy_floats * fb / 1e3:.1f} kB of it copies of shared state), "
                  f"{c_w.flops:.0f} flop/element; current {c_f.kernels} ops, "
                  f"{c_f.floats * fb / 1e3:.1f} kB/element; "
                  f"arithmetic intensity {c_w.flops / ((c_w.floats + c_w.copy_floats) * fb):.3f} "
                  f"flop/byte (H100 ridge ~{F32_PEAK / HBM_BW:.0f})")
            per_el = (c_w.floats + c_w.copy_floats) * fb
            cross = c_w.kernels * LAUNCH_S * HBM_BW / per_el
            print(f"#  pre-fix: memory bound overtakes launches from B ~ {cross:.0f}; "
                  f"memory-bound ceiling {HBM_BW / per_el:.4g} element-it/s "
                  f"(current: {HBM_BW / (c_f.floats * fb):.4g})")
            print("#  CPU diagnostics: 'us/op' = measured time per iteration / ops (dispatch "
                  "cost when small), 'GB/s' = measured element-it/s x modelled bytes/element")
            print(f"{'B':>5} {'measured CPU':>13} {'us/op':>6} {'GB/s':>6} {'mem ms':>8} {'launch ms':>9} "
                  f"{'flop ms':>8} {'host ms':>8} {'pre-fix H100':>13} {'bound':>8} "
                  f"{'H100 el-it/s':>13} {'bound':>8}")
        if any("skipped" in x for x in ds):
            print(f"{b:5}  skipped on CPU: {ds[0]['skipped']}")
        measured = [x["element_iterations_per_second"] for x in ds if "skipped" not in x]
        c, bytes_it, bw, est_w, bind_w = estimate(d, False)
        if measured:
            el = statistics.median(measured)
            us_op = b / el / c.kernels * 1e6
            gbs = el * (bytes_it - c.shared) / b / 1e9
            m = f"{el:13.4g} {us_op:6.2f} {gbs:6.2f}"
        else:
            m = f"{'-':>13} {'-':>6} {'-':>6}"

        _, _, _, est_f, bind_f = estimate(d, True)
        host = f"{bw['host'] * 1e3:8.3f}" if "host" in bw else f"{'-':>8}"
        print(f"{b:5} {m} {bw['memory'] * 1e3:8.3f} {bw['launches'] * 1e3:9.3f} "
              f"{bw['flops'] * 1e3:8.4f} {host} {est_w:13.4g} {bind_w:>8} "
              f"{est_f:13.4g} {bind_f:>8}")
    lo, hi = LAUNCH_RANGE
    print(f"\n# launch-bound rows scale with the overhead: x{LAUNCH_S / hi:.2f} at "
          f"{hi * 1e6:.0f} us, x{LAUNCH_S / lo:.2f} at {lo * 1e6:.0f} us per op")


if __name__ == "__main__":
    main()
