#!/usr/bin/env bash
# One call's worth of measurements on a lent GPU machine (the `device` tool: an NVIDIA H100/H200
# with 16 CPU cores, no Rust toolchain, no network). Everything it runs is built here first:
#
#   CARGO_TARGET_DIR=/work/tgt-wgpu cargo build --release --features wgpu --bin armac-bench
#   scripts/device_bench.sh --pack      # strips and packs the binaries into .devbin/ (ignored)
#
# and the call carries `.devbin` (plus `.gl`, the Vulkan/EGL loader packages of the device
# README, and optionally `.whl` with an open_spiel wheel) and runs `scripts/device_bench.sh`.
# Stages, each under its own time limit, each writing JSON lines / tables to $OUT (or /tmp):
#   1. ARMAC learner steps/s, wgpu (the GPU through Vulkan) against flex (all CPU cores), for the
#      shipped small-game, Hold'em feed-forward and Hold'em recurrent shapes and one large batch;
#   2. batched public-tree CFR+/POS element-iterations/s, wgpu against flex, B = 1 .. 16384;
#   3. sampled solvers (OS/ES/POS) on 1..16 threads: nodes/s and scaling on an idle many-core host,
#      and, when pyspiel imports, the single-thread ratio against OpenSpiel's C++ samplers;
#   4. ARMAC actors through Redis against in-process threads, 1..8 actors (scripts/bench_redis.sh).
set -uo pipefail
cd "$(dirname "$0")/.."

if [ "${1:-}" = "--pack" ]; then
  set -e
  mkdir -p .devbin/stage
  cp "${WGPU_BENCH:-/work/tgt-wgpu/release/armac-bench}" .devbin/stage/armac-bench
  cp target/release/armac-train target/release/armac-actor .devbin/stage/
  strip .devbin/stage/armac-*
  cp -L "$(command -v redis-server)" "$(command -v redis-cli)" .devbin/stage/
  mkdir -p .devbin/stage/lib
  for l in liblzf.so.1 libjemalloc.so.2 libatomic.so.1; do
    cp -L "/lib/x86_64-linux-gnu/$l" .devbin/stage/lib/
  done
  tar -C .devbin/stage -cJf .devbin/pack.tar.xz .
  rm -rf .devbin/stage
  ls -la .devbin
  exit 0
fi

OUT=${OUT:-/tmp/device_bench}
mkdir -p "$OUT"
T0=$(date +%s)
elapsed() { echo $(( $(date +%s) - T0 )); }
log() { echo "[$(elapsed) s] $*" | tee -a "$OUT/summary.txt"; }

# --- setup -----------------------------------------------------------------------------------
D=/tmp/devbin
mkdir -p "$D" && tar -C "$D" -xJf .devbin/pack.tar.xz
export PATH="$D:$PATH"
for f in .gl/*.deb; do [ -e "$f" ] && dpkg -x "$f" /; done
ldconfig
if [ -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ]; then
  export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
fi
export XDG_RUNTIME_DIR=/tmp
B="$D/armac-bench"
{
  nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.mem --format=csv 2>&1
  echo "cpus: $(nproc); load: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee -a "$OUT/summary.txt"

run() { # run LIMIT FILE CMD...: one JSON line appended to FILE, errors to the summary
  local limit=$1 file=$2; shift 2
  local line
  if line=$(timeout "$limit" "$@" 2>"$OUT/last_err.txt"); then
    echo "$line" >>"$file"
    echo "$line" | python3 -c 'import json,sys
for l in sys.stdin:
    d=json.loads(l); keep=("backend","device","game","algorithm","batch","hidden","time","input","steps_per_second","element_iterations_per_second","iterations_per_second","setup_seconds","nodes_touched_per_second","threads")
    print("   ", {k: (round(v,4) if isinstance(v,float) else v) for k,v in d.items() if k in keep})' | tee -a "$OUT/summary.txt"
  else
    log "FAILED ($?): $*"; tail -5 "$OUT/last_err.txt" | tee -a "$OUT/summary.txt"
  fi
}

# --- 1. learner: wgpu against flex -------------------------------------------------------------
log "stage 1: ARMAC learner steps/s"
L="$OUT/learner.jsonl"
# GPU utilisation while the first wgpu runs go: proof that wgpu picked the NVIDIA adapter.
(timeout 40 nvidia-smi dmon -s u -d 2 >"$OUT/dmon.txt" 2>&1 &)
for dev in wgpu flex; do
  run 60 "$L" "$B" learner --device $dev --input 30 --actions 3 --hidden 128 --batch 2048 --steps 20 --repeats 3
  run 60 "$L" "$B" learner --device $dev --input 175 --actions 4 --hidden 128 --batch 8192 --memory-rows 256 --steps 10 --repeats 3
  run 90 "$L" "$B" learner --device $dev --input 108 --actions 4 --hidden 128 --batch 64 --time 32 --steps 5 --repeats 3
  run 90 "$L" "$B" learner --device $dev --input 175 --actions 4 --hidden 256 --batch 65536 --steps 5 --repeats 3
done

# --- 2. batched public-tree solvers: wgpu against flex -------------------------------------------
log "stage 2: batched CFR+/POS element-iterations/s"
P="$OUT/batched.jsonl"
for dev in wgpu flex; do
  for b in 1 1024 16384; do
    run 60 "$P" "$B" batched --game leduc_poker --algorithm cfr+ --batch $b --iterations 20 --repeats 3 --device $dev
    run 60 "$P" "$B" batched --game leduc_poker --algorithm pos --batch $b --iterations 20 --repeats 3 --device $dev
  done
  run 90 "$P" "$B" batched --game liars_dice --algorithm cfr+ --batch 1024 --iterations 5 --repeats 3 --device $dev
done

# --- 3. sampled solvers on 1..16 threads -----------------------------------------------------------
log "stage 3: sampled solvers, thread scaling (nodes/s)"
S="$OUT/sampled.jsonl"
for game in leduc_poker liars_dice; do
  for alg in os-mccfr es-mccfr pos-mccfr; do
    case $alg in os-mccfr) base=400000 ;; es-mccfr) base=20000 ;; *) base=40000 ;; esac
    [ $game = liars_dice ] && base=$((base / 4))
    extra=(); [ $alg = pos-mccfr ] && extra=(--set baseline=predictive)
    for t in 1 2 4 8 16; do
      its=$base; [ $t -gt 1 ] && its=$(( base / (64 * t) + 1 ))
      line=$(timeout 60 "$B" solver --game $game --algorithm $alg --iterations $its --repeats 1 \
        --set threads=$t "${extra[@]}" 2>>"$OUT/last_err.txt") || { log "FAILED $game $alg $t"; continue; }
      echo "$line" | python3 -c "import json,sys; d=json.loads(sys.stdin.read()); d['threads']=$t; d['game']='$game'; d['algorithm']='$alg'; print(json.dumps(d))" >>"$S"
    done
  done
done
python3 - "$S" <<'PY' | tee -a "$OUT/summary.txt"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
base = {}
for r in rows:
    if r["threads"] == 1:
        base[(r["game"], r["algorithm"])] = r["nodes_touched_per_second"]
for r in rows:
    b = base.get((r["game"], r["algorithm"]))
    s = r["nodes_touched_per_second"] / b if b else float("nan")
    print(f'    {r["game"]:12} {r["algorithm"]:10} threads {r["threads"]:2}  {r["nodes_touched_per_second"]:10.4g} nodes/s  scaling {s:5.2f}x')
PY
if [ -d .whl ] && python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null; then
  log "stage 3b: single thread against OpenSpiel's C++ outcome/external sampling (idle host)"
  PYTHONPATH=/tmp/site timeout 120 python3 - "$B" <<'PY' | tee -a "$OUT/summary.txt"
import json, statistics, subprocess, sys, time
import pyspiel
B = sys.argv[1]
def ours(game, alg, its, *sets):
    cmd = [B, "solver", "--game", game, "--algorithm", alg, "--iterations", str(its), "--repeats", "1", "--set", "threads=1"]
    for s in sets: cmd += ["--set", s]
    return json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
def theirs(solver, n):
    t = time.perf_counter()
    for _ in range(n): solver.run_iteration()
    return n / (time.perf_counter() - t)
for g in ["leduc_poker", "liars_dice"]:
    game = pyspiel.load_game(g)
    os_s, es_s = pyspiel.OutcomeSamplingMCCFRSolver(game), pyspiel.ExternalSamplingMCCFRSolver(game)
    res = {k: [] for k in ["os", "es", "pos", "os_p", "es_p"]}
    for _ in range(3):
        res["os"].append(ours(g, "os-mccfr", 400000)); res["os_p"].append(theirs(os_s, 20000))
        res["es"].append(ours(g, "es-mccfr", 40000)); res["es_p"].append(theirs(es_s, 2000 if g == "leduc_poker" else 200))
        res["pos"].append(ours(g, "pos-mccfr", 40000, "baseline=predictive"))
    med = statistics.median
    npi = {k: med([r["nodes_per_iteration"] for r in res[k]]) for k in ["os", "es"]}
    for name, k, peer, pk in [("OS", "os", "os_p", "os"), ("ES", "es", "es_p", "es"), ("POS", "pos", "os_p", "os")]:
        ours_n = med([r["nodes_touched_per_second"] for r in res[k]])
        peer_n = med(res[peer]) * npi[pk]
        print(f"    {g:12} {name:4} armac {ours_n:10.4g} nodes/s  OpenSpiel {peer_n:10.4g}  ratio {ours_n / peer_n:5.1f}x (3 rounds, medians, wall time)", flush=True)
PY
fi

# --- 4. Redis actors against in-process threads --------------------------------------------------
if command -v redis-server >/dev/null; then
  log "stage 4: trajectories/s through Redis vs in-process, 1..8 actors"
  LD_LIBRARY_PATH="$D/lib" BIN="$D" ACTORS="1 2 4 8" timeout 150 bash scripts/bench_redis.sh 2>&1 \
    | tee -a "$OUT/summary.txt"
fi
log "done"
