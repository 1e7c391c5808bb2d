#!/usr/bin/env bash
# Acting speed of one ARMAC actor thread: for each config, `armac-bench actor` plays the same
# lock-step groups with each network computing only the outputs its games read and, as the
# peer, with every network computing all of its outputs (interleaved on the same seeds, the
# episodes checked equal), and this prints both steps/s and their ratio.
# Usage: scripts/bench_actor.sh [GROUPS] [REPEATS] [configs...]
set -euo pipefail
cd "$(dirname "$0")/.."
groups=${1:-8}
repeats=${2:-7}
shift 2 || shift $# || true
configs=("$@")
[ ${#configs[@]} -gt 0 ] || configs=(nlhe_fcpa_recurrent.toml nlhe_fcpa.toml leduc_armac.toml liars_dice_armac.toml)
cargo build --release --bins -q
printf '%-24s %10s %16s %16s %7s\n' config decisions "selected steps/s" "all-heads steps/s" ratio
for c in "${configs[@]}"; do
    ./target/release/armac-bench actor --config "$c" --groups "$groups" --repeats "$repeats" |
        python3 -c '
import json, sys
d = json.load(sys.stdin)
row = (d["config"], d["decisions_per_path"], d["steps_per_second_selected_heads"],
       d["steps_per_second_all_heads"], d["ratio"])
print("%-24s %10d %16.0f %16.0f %6.2fx" % row)'
done
