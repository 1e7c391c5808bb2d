#!/usr/bin/env bash
# LBR against an ARMAC network: hands/s of the fast range path (each public state computed once
# for all 1326 hands and kept, forward passes on the plain kernels of nn::armac::PlainRangeNet)
# against a peer on the same deals, interleaved in one process (armac-bench lbr-net), with wall
# and CPU time, the ratio, the load average and whether both paths gave the same results.
# PEER `replay` (default): the replay-every-hand reference path; `burn`: the same cached range
# path with its forward passes run by burn's tensors (the path before the plain kernels);
# `eager`: the same path with the opponent's range updated at every one of its decisions (the
# path before deferred updates; same hands, same results).
# Usage: scripts/bench_lbr_net.sh [RUN_DIR] [HANDS_PER_ROUND] [ROUNDS] [VARIANT] [PEER] [THREADS]
# Without RUN_DIR a tiny recurrent FCPA run (configs/nlhe_fcpa_recurrent.toml, default widths, one short
# epoch) is trained first: the cost of a range query depends on the widths, not on training.
set -euo pipefail
cd "$(dirname "$0")/.."
run=${1:-}
hands=${2:-32}
rounds=${3:-3}
variant=${4:-fc}
peer=${5:-replay}
threads=${6:-2}
cargo build --release --bins -q
if [ -z "$run" ]; then
    run=$(mktemp -d)/fcpa
    ./target/release/armac-train --config configs/nlhe_fcpa_recurrent.toml --out "$run" --quiet \
        --set armac.epochs=1 --set armac.episodes_per_epoch=32 \
        --set armac.learning_steps_per_epoch=2 --set armac.batch_trajectories=8
fi
./target/release/armac-bench lbr-net --policy "$run" --variant "$variant" --hands "$hands" \
    --rounds "$rounds" --threads "$threads" --peer "$peer" |
    python3 -c "
import json, sys
for line in sys.stdin:
    r = json.loads(line)
    if r.get('summary'):
        print(json.dumps(r))
        print('fast %.2f hands/s, %s peer %.3f hands/s, ratio %.2fx (CPU s/hand %.4f vs %.4f), '
              'load %.1f -> %.1f, max |mean difference| %.3g mbb/hand' % (
            r['fast_hands_per_second'], r['peer'], r['reference_hands_per_second'], r['ratio'],
            r['fast_cpu_seconds_per_hand'], r['reference_cpu_seconds_per_hand'],
            r['load_average_before'] or -1, r['load_average_after'] or -1,
            r['max_mean_mbb_difference']))
    else:
        print(json.dumps(r))
"
