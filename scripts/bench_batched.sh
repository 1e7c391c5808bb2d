#!/usr/bin/env bash
# Throughput of the batched public-tree solvers (`armac-bench batched`, burn CPU backend) for
# B = 1, 16, 256, 4096 against the tabular CPU solvers of the same algorithm, measured in the
# same script run: full-width CFR+ against `armac-bench solver --algorithm cfr+`, batched POS
# against `armac-bench solver --algorithm pos-mccfr` (default keys on both sides: uniform
# sampling, CFR+ regrets, predictive baseline, linear averaging, alternating updates).
#
# Every timed block aims at TARGET_SECONDS (default 1.5): a one-iteration probe per (algorithm,
# B) sets the iteration count (ITERS, when given, is the count at B = 1 and ITERS / B above).
# Then ROUNDS rounds (default 3) run, per B, the batched solver and right after it its tabular
# peer, one timed block each; the table shows medians over the rounds, so load changes on a
# shared machine hit both sides alike. Columns: batched element-iterations/s (B x iterations/s
# of the batch), the tabular solver's iterations/s, their ratio, batched public-node updates/s
# and the same over the layout's node count ("eq-CFR it/s": full-width CFR iterations it is
# worth; equal to element-iterations/s for CFR), the tabular solver's nodes touched/s (histories,
# a different unit), and the batch's solver state. Every measurement is also written as a JSON line to
# $JSONL (default /tmp/bench_batched_GAME.jsonl), which scripts/h100_estimate.py reads.
#
# Usage: scripts/bench_batched.sh [GAME] [ITERS]
#   env: BATCHES="1 16 256 4096" ROUNDS=3 TARGET_SECONDS=1.5 ALGORITHMS="cfr+ pos"
#        PRECISION=f32 DEVICE=flex JSONL=path
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet --bin armac-bench
GAME="${1:-leduc_poker}" ITERS="${2:-auto}" python3 - <<'PY'
import json, os, statistics, subprocess, sys, time

game = os.environ["GAME"]
iters_arg = os.environ["ITERS"]
batches = [int(b) for b in os.environ.get("BATCHES", "1 16 256 4096").split()]
rounds = int(os.environ.get("ROUNDS", "3"))
target = float(os.environ.get("TARGET_SECONDS", "1.5"))
algorithms = os.environ.get("ALGORITHMS", "cfr+ pos").split()
precision = os.environ.get("PRECISION", "f32")
device = os.environ.get("DEVICE", "flex")
jsonl = os.environ.get("JSONL", f"/tmp/bench_batched_{game}.jsonl")
peer_of = {"cfr+": "cfr+", "cfr": "cfr", "pos": "pos-mccfr"}
BIN = "./target/release/armac-bench"
start = time.time()

def run(cmd):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    for line in out.stderr.splitlines():
        print(f"  [{cmd[1]} {cmd[5] if len(cmd) > 5 else ''}] {line}", file=sys.stderr, flush=True)
    return json.loads(out.stdout.strip().splitlines()[-1])

def batched(alg, b, n):
    return run([BIN, "batched", "--game", game, "--algorithm", alg, "--batch", str(b),
                "--iterations", str(n), "--repeats", "1", "--precision", precision,
                "--device", device])

def tabular(alg, n):
    return run([BIN, "solver", "--game", game, "--algorithm", peer_of[alg],
                "--iterations", str(n), "--repeats", "1"])

# Iteration counts per block.
counts, skipped = {}, {}
for alg in algorithms:
    probe = tabular(alg, 200)
    counts[(alg, "tab")] = max(200, round(target * probe["iterations_per_second"]))
    for b in batches:
        if iters_arg != "auto":
            counts[(alg, b)] = max(1, int(iters_arg) // b)
            continue
        p = batched(alg, b, 1)
        if "skipped" in p:
            skipped[(alg, b)] = p
            continue
        counts[(alg, b)] = max(1, round(target / p["block_seconds"]))
print(f"# {game}: block iteration counts " +
      ", ".join(f"{a}@{b}={n}" for (a, b), n in counts.items()), flush=True)

res = {}
with open(jsonl, "w") as f:
    for r in range(rounds):
        for b in batches:
            for alg in algorithms:
                if (alg, b) not in counts:
                    continue
                x = batched(alg, b, counts[(alg, b)])
                x["round"] = r
                f.write(json.dumps(x) + "\n")
                y = tabular(alg, counts[(alg, "tab")])
                y["round"], y["peer_of_batch"] = r, b
                f.write(json.dumps(y) + "\n")
                f.flush()
                res.setdefault((alg, b), []).append((x, y))
    for line in skipped.values():
        f.write(json.dumps(line) + "\n")

med = statistics.median
print(f"# {game}, {precision} on {device}; medians of {rounds} alternating rounds; "
      f"{time.time() - start:.0f} s in all; JSON lines in {jsonl}")
print(f"{'algorithm':9} {'B':>5} {'iters/blk':>9} {'blk s':>6} {'batched el-it/s':>15} "
      f"{'tabular it/s':>12} {'ratio':>7} {'batched node upd/s':>18} {'eq-CFR it/s':>11} "
      f"{'tabular nodes/s':>15} "
      f"{'state MB':>9}")
for alg in algorithms:
    for b in batches:
        if (alg, b) in skipped:
            print(f"{alg:9} {b:5}  skipped: {skipped[(alg, b)]['skipped']}")
            continue
        xs = res[(alg, b)]
        el = med([x["element_iterations_per_second"] for x, _ in xs])
        tab = med([y["iterations_per_second"] for _, y in xs])
        nodes = med([x["node_updates_per_second"] for x, _ in xs])
        eq = med([x["equivalent_cfr_iterations_per_second"] for x, _ in xs])
        tnodes = med([y["nodes_touched_per_second"] for _, y in xs])
        secs = med([x["block_seconds"] for x, _ in xs])
        mb = xs[0][0]["state_bytes_total"] / 1e6
        print(f"{alg:9} {b:5} {counts[(alg, b)]:9} {secs:6.2f} {el:15.4g} {tab:12.4g} "
              f"{el / tab:7.3f} {nodes:18.4g} {eq:11.4g} {tnodes:15.4g} {mb:9.2f}")
PY
