#!/usr/bin/env bash
# Memory, disk and acting speed of a long Hold'em ARMAC run with a full reservoir of past networks.
# Resumes configs/nlhe_fcpa_recurrent.toml from a synthetic reservoir of 1,024 past networks (copies of
# θ^0, written in seconds) and, as the peer, from a reservoir of 8, trains each for SECONDS
# and prints peak RSS, disk use and acting steps/s with their ratios.
# Usage: scripts/bench_reservoir.sh [SECONDS] [extra --set overrides...]
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-90}
shift || true
sets=()
for s in "$@"; do sets+=(--set "$s"); done
cargo build --release --bins -q
out=$(mktemp -d)
for n in 1024 8; do
    ./target/release/armac-bench reservoir --config configs/nlhe_fcpa_recurrent.toml --snapshots "$n" \
        --seconds "$secs" "${sets[@]}" | tee "$out/$n.json"
done
python3 - "$out" <<'PY'
import json, sys
d = sys.argv[1]
big, small = (json.load(open(f"{d}/{n}.json")) for n in (1024, 8))
print(f"peak RSS: {big['peak_rss_mb']:.0f} MiB with 1,024 snapshots, {small['peak_rss_mb']:.0f} MiB with 8 "
      f"(goal <= 4096 MiB: {'met' if big['peak_rss_mb'] <= 4096 else 'NOT met'})")
print(f"disk: {big['disk_mb_at_end']:.0f} MiB with 1,024 snapshots, {small['disk_mb_at_end']:.0f} MiB with 8")
r = big['acting_steps_per_second'] / small['acting_steps_per_second']
print(f"acting steps/s: {big['acting_steps_per_second']:.0f} vs {small['acting_steps_per_second']:.0f}, "
      f"ratio {r:.2f} (goal >= 0.80: {'met' if r >= 0.8 else 'NOT met'})")
PY
