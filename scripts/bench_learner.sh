#!/usr/bin/env bash
# ARMAC learner step throughput, armac (burn, flex CPU backend) vs the same network, losses and
# optimizer in PyTorch (scripts/bench_learner_torch.py), interleaved in one run on this machine;
# prints both and the ratio (armac / torch; > 1 means armac is faster) per batch size.
# Needs torch (python3 -m pip install torch --index-url https://download.pytorch.org/whl/cpu).
# Usage: scripts/bench_learner.sh [THREADS]   (threads for both sides; default: all cores)
set -euo pipefail
cd "$(dirname "$0")/.."
threads=${1:-$(nproc)}
cargo build --release --quiet --bin armac-bench
export OMP_WAIT_POLICY=PASSIVE RAYON_NUM_THREADS=$threads
for batch in 64 2048; do
  steps=$(( batch >= 1024 ? 20 : 200 ))
  ours=() theirs=()
  for rep in 1 2 3; do
    ours+=("$(./target/release/armac-bench learner --batch "$batch" --steps "$steps" --repeats 1 |
      python3 -c 'import json,sys; print(json.load(sys.stdin)["steps_per_second"])')")
    theirs+=("$(python3 scripts/bench_learner_torch.py --batch "$batch" --steps "$steps" \
      --threads "$threads" | python3 -c 'import json,sys; print(json.load(sys.stdin)["steps_per_second"])')")
  done
  python3 - "$batch" "${ours[*]}" "${theirs[*]}" <<'PY'
import statistics, sys
batch, ours, theirs = sys.argv[1], sys.argv[2].split(), sys.argv[3].split()
o = statistics.median(map(float, ours)); t = statistics.median(map(float, theirs))
print(f"batch {batch:>5}: armac {o:8.2f} steps/s  torch {t:8.2f} steps/s  ratio {o / t:5.2f}"
      f"   (medians of 3; armac {ours}, torch {theirs})")
PY
done
