#!/usr/bin/env bash
# Cost of the deterministic schedule: trains CONFIG for EPOCHS epochs with
# armac.schedule = "concurrent" (the peer) and "lockstep", on SEEDS seeds, alternating, and
# prints each run's epochs per CPU-second and per wall-second with the median ratio
# lockstep / concurrent (above 1: the lock-step schedule is faster).
# Usage: scripts/bench_schedule.sh [CONFIG] [EPOCHS] [SEEDS] [extra --set overrides...]
set -euo pipefail
cd "$(dirname "$0")/.."
config=${1:-leduc_armac.toml}
epochs=${2:-200}
seeds=${3:-3}
shift 3 || shift $#
sets=()
for s in "$@"; do sets+=(--set "$s"); done
cargo build --release --bins -q
out=$(mktemp -d)
for seed in $(seq 1 "$seeds"); do
    for schedule in concurrent lockstep; do
        ./target/release/armac-train --config "$config" --out "$out/${schedule}_$seed" --quiet \
            --set "seed=$seed" --set "armac.epochs=$epochs" --set "armac.schedule=\"$schedule\"" \
            "${sets[@]}" >/dev/null
    done
done
python3 - "$out" "$seeds" <<'PY'
import json, statistics, sys
d, n = sys.argv[1], int(sys.argv[2])
ratio_cpu, ratio_wall = [], []
print(f"{'seed':>4} {'schedule':>10} {'epochs':>6} {'CPU-s':>8} {'wall-s':>8} {'epochs/CPU-s':>12} {'epochs/wall-s':>13} {'NashConv':>9}")
for seed in range(1, n + 1):
    per = {}
    for sch in ("concurrent", "lockstep"):
        s = json.load(open(f"{d}/{sch}_{seed}/summary.json"))
        cpu, wall, ep = s["budget"]["cpu_seconds"], s["seconds"], s["iterations"]
        per[sch] = (ep / cpu, ep / wall)
        print(f"{seed:>4} {sch:>10} {ep:>6} {cpu:8.1f} {wall:8.1f} {ep / cpu:12.3f} {ep / wall:13.3f} {s['nash_conv']:9.4f}")
    ratio_cpu.append(per["lockstep"][0] / per["concurrent"][0])
    ratio_wall.append(per["lockstep"][1] / per["concurrent"][1])
print(f"lockstep / concurrent, median over {n} seeds: epochs per CPU-second {statistics.median(ratio_cpu):.2f}, "
      f"epochs per wall-second {statistics.median(ratio_wall):.2f}")
PY
rm -rf "$out"
