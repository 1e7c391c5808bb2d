#!/usr/bin/env bash
# ARMAC learner step throughput, in one of two modes.
#
# Against PyTorch (default): armac (burn, flex CPU backend) vs the same network, losses and
# optimizer in PyTorch (scripts/bench_learner_torch.py), interleaved in one run on this machine;
# prints both and the ratio (armac / torch; > 1 means armac is faster) per batch size.
# Needs torch (python3 -m pip install torch --index-url https://download.pytorch.org/whl/cpu).
#   scripts/bench_learner.sh [THREADS]          (threads for both sides; default: all cores)
#
# On an accelerator: the learner on `--device wgpu|cuda` beside flex on all cores, built with
# that feature, at 256, 2,048, 8,192 and 65,536 rows (or --batches "..."); prints steps/s,
# rows/s, achieved matrix-product FLOP/s (armac::nn::armac::train_step_flops) and the
# learner's uploads, upload bytes and read-backs per step for both, and the ratio.
#   scripts/bench_learner.sh --device wgpu [--batches "256 2048"] [--threads N]
#       [--profile release] [-- ARGS]
# ARGS go to both `armac-bench learner` runs (e.g. `-- --input 175 --hidden 256`); --profile
# picks the cargo profile of the build (`ci-gpu` reuses the CI's wgpu test build, unoptimised
# host code: for the accounting, not for timings).
set -euo pipefail
cd "$(dirname "$0")/.."
device="" profile=release threads=$(nproc) batches="256 2048 8192 65536" extra=()
while (($#)); do
  case $1 in
    --device) device=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --batches) batches=$2; shift 2 ;;
    --profile) profile=$2; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    *) threads=$1; shift ;;
  esac
done
export OMP_WAIT_POLICY=PASSIVE RAYON_NUM_THREADS=$threads XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp}

if [[ -n $device ]]; then
  case $device in
    wgpu|cuda) ;;
    *) echo "--device must be wgpu or cuda, not $device" >&2; exit 2 ;;
  esac
  cargo build --profile "$profile" --quiet --features "$device" --bin armac-bench
  bench=./target/$profile/armac-bench
  for batch in $batches; do
    # Blocks of at least two steps and about 16k rows.
    steps=$(( batch >= 8192 ? 2 : 16384 / batch ))
    cpu=$("$bench" learner --device flex --batch "$batch" --steps "$steps" \
      --repeats 3 ${extra[@]+"${extra[@]}"})
    acc=$("$bench" learner --device "$device" --batch "$batch" \
      --steps "$((steps * 4))" --repeats 3 ${extra[@]+"${extra[@]}"})
    python3 - "$batch" "$threads" "$device" "$cpu" "$acc" <<'PY'
import json, sys
batch, threads, device = sys.argv[1], sys.argv[2], sys.argv[3]
cpu, acc = json.loads(sys.argv[4]), json.loads(sys.argv[5])
def show(name, r):
    return (f"{name} {r['steps_per_second']:9.2f} steps/s {r['rows_per_second']:11.0f} rows/s "
            f"{r['flops_per_second'] / 1e9:8.2f} GFLOP/s (uploads/step {r['uploads_per_step']:.2f}, "
            f"{r['upload_bytes_per_step'] / 1e6:.2f} MB, read-backs/step {r['readbacks_per_step']:.3f})")
print(f"rows {int(batch):>6}: {show(f'flex x{threads}', cpu)}")
print(f"{'':13}{show(device, acc)}  ratio {acc['steps_per_second'] / cpu['steps_per_second']:.2f}")
PY
  done
  exit 0
fi

cargo build --release --quiet --bin armac-bench
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
