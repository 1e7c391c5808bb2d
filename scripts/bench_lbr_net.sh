#!/usr/bin/env bash
# LBR-FC against a recurrent ARMAC network: hands/s of the incremental range path against the
# replay-from-the-root reference path (`--replay-ranges`) on the same deals, and whether both
# give the same result. Usage: scripts/bench_lbr_net.sh [RUN_DIR] [HANDS]
# Without RUN_DIR a short FCPA run (configs/nlhe_fcpa.toml, 90 s) is trained first.
set -euo pipefail
cd "$(dirname "$0")/.."
run=${1:-}
hands=${2:-8}
cargo build --release --bins -q
if [ -z "$run" ]; then
    run=$(mktemp -d)/fcpa
    ./target/release/armac-train --config configs/nlhe_fcpa.toml --out "$run" --max-seconds 90 --quiet
fi
for mode in "" "--replay-ranges"; do
    ./target/release/armac-eval lbr --game hunl_fcpa --policy "$run" --variant fc \
        --hands "$hands" --threads 2 --json $mode 2>/dev/null |
        python3 -c "import json,sys; r=json.load(sys.stdin); print('${mode:-incremental}', 'hands/s %.3f' % r['hands_per_second'], 'mean %.1f ± %.1f mbb/hand' % (r['mean'], r['ci95']))"
done
