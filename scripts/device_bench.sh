#!/usr/bin/env bash
# One run's worth of measurements on a GPU machine (for example an NVIDIA H100/H200 with 16 CPU
# cores, no Rust toolchain and no network). Everything it runs is built here first:
#
#   CARGO_TARGET_DIR=/work/tgt-wgpu cargo build --release --features wgpu --bins
#   scripts/device_bench.sh --pack      # strips and packs the binaries into .devbin/ (ignored)
#
# (FUSION_BENCH=path packs beside it an armac-bench built with burn's kernel fusion and
# autotuning: `--features wgpu,burn/fusion,burn/autotune` in another target directory.)
#
# and the GPU machine gets `.devbin` (plus `.gl`, the Vulkan/EGL loader packages, and optionally
# `.whl` with an open_spiel wheel) and runs `scripts/device_bench.sh`.
# Stages, each under its own time limit, each writing JSON lines / tables to $OUT (or /tmp):
#   1. ARMAC learner steps/s, rows/s and achieved TFLOP/s with the transfers per step, wgpu (the
#      GPU through Vulkan) against flex (all CPU cores), PyTorch on CUDA (the same network and
#      losses, scripts/bench_learner_torch.py) and the fusion build when packed: the recurrent
#      FCPA shape with and without in-step targets, a feed-forward FCPA run's step (device
#      tables, in-step targets), and FCPA networks at 256, 2,048, 8,192 and 65,536 rows
#      (LEARNER_SHAPES), within LEARNER_SECONDS (240) of the start;
#   2. batched public-tree CFR+/POS element-iterations/s, wgpu against flex, B = 1 .. 16384;
#   3. sampled solvers (OS/ES/POS) on 1..16 threads: nodes/s and scaling on an idle many-core host
#      (the scaling stage), and, when pyspiel imports, the single-thread ratio against OpenSpiel's
#      C++ samplers;
#   4. ARMAC actors through Redis against in-process threads, 1..8 actors (scripts/bench_redis.sh).
# STAGES picks stages (default "learner batched sampled redis"); the other stages:
#   scaling  (also run by "sampled") sampled-solver thread scaling, the packed binary against an
#            earlier one packed as armac-bench-old (`OLD_BENCH=path scripts/device_bench.sh
#            --pack`) when present, same run;
#   search   Student of Games lock-step (B = 64) against one by one, CVPN and tensor engine on
#            wgpu against flex;
#   lbr      LBR-FC hands/s against a tiny recurrent FCPA network on two pinned idle cores;
#   ladder   the ARMAC Leduc ladder (scripts/armac_ladder.sh rungs, diagnostics on) on pinned
#            core pairs, LADDER_CPU CPU-seconds each, in the background while the others run;
#            LADDER_SPECS="name:cores[:key=value;...] ..." picks the runs (default: four rungs
#            and two critic probes).
#   openspiel  single-thread ratios against OpenSpiel (needs .whl), OS_ROUNDS rounds (3) on
#            the cores OS_CORES (0,1).
#   train    nlhe_fcpa_recurrent.toml with its learner on wgpu and 15 actor threads until
#            DEADLINE (560) seconds after the start (or for TRAIN_SECONDS); the exported model
#            (rec_model.tgz), TensorBoard log and summary come back in $OUT for the scorecard:
#            STAGES="learner train" DEADLINE=575 scripts/device_bench.sh
set -uo pipefail
cd "$(dirname "$0")/.."

if [ "${1:-}" = "--pack" ]; then
  set -e
  mkdir -p .devbin/stage
  T=${WGPU_TARGET:-/work/tgt-wgpu/release}
  cp "$T/armac-bench" "$T/armac-train" "$T/armac-eval" .devbin/stage/
  if [ -n "${FUSION_BENCH:-}" ]; then cp "$FUSION_BENCH" .devbin/stage/armac-bench-fusion; fi
  if [ -n "${OLD_BENCH:-}" ]; then cp "$OLD_BENCH" .devbin/stage/armac-bench-old; fi
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
  # SKIP_AFTER (seconds since the start): later runs are skipped, so a stage keeps its budget.
  if [ -n "${SKIP_AFTER:-}" ] && [ "$(elapsed)" -ge "$SKIP_AFTER" ]; then
    log "skipped (past ${SKIP_AFTER} s): $*"; return
  fi
  if line=$(timeout "$limit" "$@" 2>/tmp/last_err.txt); then
    echo "$line" >>"$file"
    echo "$line" | python3 -c 'import json,sys
for l in sys.stdin:
    d=json.loads(l); keep=("backend","device","game","algorithm","batch","hidden","time","input","steps_per_second","element_iterations_per_second","iterations_per_second","setup_seconds","nodes_touched_per_second","threads")
    print("   ", {k: (round(v,4) if isinstance(v,float) else v) for k,v in d.items() if k in keep})' | tee -a "$OUT/summary.txt"
  else
    log "FAILED ($?): $*"; tail -5 /tmp/last_err.txt | tee -a "$OUT/summary.txt"
  fi
}

STAGES=${STAGES:-learner batched sampled redis}
has() { [[ " $STAGES " == *" $1 "* ]]; }
# pin CPUS CMD...: run CMD on those cores (a machine of fewer than 16 cores, e.g. a dry run
# here, runs it unpinned).
pin() { local c=$1; shift; if [ "$(nproc)" -ge 16 ]; then taskset -c "$c" "$@"; else "$@"; fi; }

# --- scaling: sampled solvers, this binary against the old one, 1..16 threads -----------------
if has scaling || has sampled; then
  log "scaling: nodes/s by threads, new (armac-bench) against old (armac-bench-old)"
  S="$OUT/scaling.jsonl"
  ncores=16
  for game in leduc_poker liars_dice; do
    for alg in os-mccfr pos-mccfr es-mccfr; do
      case $alg in os-mccfr) base=400000 ;; es-mccfr) base=20000 ;; *) base=40000 ;; esac
      [ $game = liars_dice ] && base=$((base / 4))
      extra=(); [ $alg = pos-mccfr ] && extra=(--set baseline=predictive)
      for v in new old; do
        bin="$B"; [ $v = old ] && bin="$D/armac-bench-old"
        [ -x "$bin" ] || continue
        ts="1 2 4 8 $ncores"; [ $v = old ] && ts="1 $ncores"
        for t in $ts; do
          # A quarter of the one-thread run's walks per thread (walks = 64 x threads).
          its=$base; [ $t -gt 1 ] && its=$(( base / 256 + 1 ))
          line=$(timeout 40 "$bin" solver --game $game --algorithm $alg --iterations $its --repeats 2 \
            --set threads=$t "${extra[@]}" 2>>/tmp/last_err.txt) || { log "FAILED $v $game $alg $t"; continue; }
          echo "$line" | python3 -c "import json,sys; d=json.loads(sys.stdin.read()); d.update(threads=$t, game='$game', algorithm='$alg', binary='$v', walks_per_thread=64); print(json.dumps(d))" >>"$S"
        done
        # Larger iterations (256 walks per thread): how much of the loss is per dispatch.
        if [ $v = new ]; then
          line=$(timeout 40 "$bin" solver --game $game --algorithm $alg --iterations $(( base / 1024 + 1 )) \
            --repeats 2 --set threads=$ncores --set walks=$((256 * ncores)) "${extra[@]}" 2>>/tmp/last_err.txt) &&
          echo "$line" | python3 -c "import json,sys; d=json.loads(sys.stdin.read()); d.update(threads=$ncores, game='$game', algorithm='$alg', binary='$v', walks_per_thread=256); print(json.dumps(d))" >>"$S"
        fi
      done
    done
  done
  python3 - "$S" <<'PY' | tee -a "$OUT/summary.txt"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
base = {(r["game"], r["algorithm"], r["binary"]): r["nodes_touched_per_second"] for r in rows if r["threads"] == 1}
for r in rows:
    b = base.get((r["game"], r["algorithm"], r["binary"]))
    print(f'    {r["binary"]:3} {r["game"]:12} {r["algorithm"]:10} threads {r["threads"]:2} walks/thread {r["walks_per_thread"]:3}  '
          f'{r["nodes_touched_per_second"]:10.4g} nodes/s  scaling {r["nodes_touched_per_second"] / b:5.2f}x')
PY
fi

# --- ladder (background): ARMAC Leduc rungs on pinned core pairs ------------------------------
if has ladder; then
  log "ladder: ${LADDER_CPU:=600} CPU-s (at most ${LADDER_WALL:-330} s) per rung, cores 4-15, in the background"
  mkdir -p /tmp/ladder
  # LADDER_SPECS: space-separated "name:cores[:key=value;key=value...]"; the default is the
  # four rungs and two probes of a more accurate critic. Known names need no keys.
  LADDER_SPECS=${LADDER_SPECS:-"tab_exact:6,7 tab_critic:8,9 exact_adv:10,11 armac:12,13 steps50:4,5 critic_w4:14,15"}
  for spec in $LADDER_SPECS; do
    rung=${spec%%:*} rest=${spec#*:}
    cores=${rest%%:*} extra=""
    [ "$rest" != "$cores" ] && extra=${rest#*:}
    case $rung in
      tab_exact) keys=(--set armac.tabular_w=true --set armac.exact_advantages=true) ;;
      tab_critic) keys=(--set armac.tabular_w=true --set armac.advantage_target=\"history\") ;;
      tab_corrected) keys=(--set armac.tabular_w=true --set armac.advantage_target=\"corrected\") ;;
      exact_adv) keys=(--set armac.exact_advantages=true) ;;
      steps50) keys=(--set armac.learning_steps_per_epoch=50) ;;
      critic_w4) keys=(--set "armac.loss_weights=[4.0, 1.0, 1.0, 1.0]") ;;
      *) keys=() ;;
    esac
    IFS=';' read -ra kvs <<<"$extra"
    for kv in "${kvs[@]}"; do [ -n "$kv" ] && keys+=(--set "$kv"); done
    pin $cores "$D/armac-train" --config leduc_armac.toml --quiet \
      --max-cpu-seconds "$LADDER_CPU" --max-seconds "${LADDER_WALL:-330}" --set armac.learner_threads=1 --set armac.diagnostics=true \
      --set eval.every=5 "${keys[@]}" --out /tmp/ladder/$rung --overwrite >/tmp/ladder/$rung.log 2>&1 &
  done
fi

# --- search, lbr, openspiel: side by side on their own cores -----------------------------------
if has search; then
  log "search: SoG lock-step vs one by one, wgpu vs flex (cores 0-1)"
  (
    for dev in ${SEARCH_DEVICES:-wgpu flex}; do
      pin 0,1 timeout 150 "$B" search --game leduc_poker --batch 64 --repeats 3 --games 0 \
        --solves 16 --steps 10 --engine-batch 16 --update-iterations 20 --device $dev \
        --engine-device $dev >>"$OUT/search.jsonl" 2>>/tmp/search_err.txt || echo "search $dev failed ($?)" >>/tmp/search_err.txt
    done
  ) &
  search_pid=$!
fi
if has lbr; then
  log "lbr: LBR-FC against a tiny recurrent FCPA net, 2 pinned cores (2-3)"
  (
    pin 2,3 "$D/armac-train" --config nlhe_fcpa_recurrent.toml --out /tmp/fcpa --quiet --overwrite \
      --set armac.epochs=1 --set armac.episodes_per_epoch=32 --set armac.learning_steps_per_epoch=2 \
      --set armac.batch_trajectories=8 >/dev/null 2>>/tmp/lbr_err.txt
    for peer in burn; do
      pin 2,3 timeout 200 "$B" lbr-net --policy /tmp/fcpa --variant fc --hands 100 --rounds 2 \
        --threads 2 --peer $peer >>"$OUT/lbr.jsonl" 2>>/tmp/lbr_err.txt
    done
  ) &
  lbr_pid=$!
fi
[ -n "${search_pid:-}" ] && wait "$search_pid"
[ -n "${lbr_pid:-}" ] && wait "$lbr_pid"
for f in /tmp/search_err.txt /tmp/lbr_err.txt; do
  [ -s $f ] && { echo "--- tail of $f"; tail -5 $f; } | tee -a "$OUT/summary.txt"
done
if [ -s "$OUT/search.jsonl" ]; then
  python3 - "$OUT/search.jsonl" <<'PY' | tee -a "$OUT/summary.txt"
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r.get("summary"):
        print(f'    CVPN {r["cvpn_device"]}, engine {r["tensor_engine"]}: B=1 {r["b1_searches_per_second"]:.1f}/s, '
              f'lock-step {r["lockstep_searches_per_second"]:.1f}/s, ratio {r["lockstep_over_b1"]:.2f}; '
              f'engines scalar/tensor B=1 {r["scalar_b1_searches_per_second"]:.1f}/{r["tensor_b1_searches_per_second"]:.2f}, '
              f'lock-step {r["scalar_lockstep_searches_per_second"]:.1f}/{r["tensor_lockstep_searches_per_second"]:.2f}, '
              f'same policies {r["engines_same_policies"]}')
    elif r.get("bench") == "grown_update":
        print(f'    grown update s/it: scalar {r["scalar_seconds_per_iteration"]:.3g} tensor {r["tensor_seconds_per_iteration"]:.3g} batched {r["batched_cfr_seconds_per_iteration"]:.3g}')
PY
fi
if [ -s "$OUT/lbr.jsonl" ]; then
  python3 - "$OUT/lbr.jsonl" <<'PY' | tee -a "$OUT/summary.txt"
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r.get("summary"):
        print(f'    LBR-FC recurrent, 2 pinned idle cores: fast {r["fast_hands_per_second"]:.1f} hands/s '
              f'({r["fast_cpu_seconds_per_hand"]:.4f} CPU s/hand), peer {r["peer"]} {r["reference_hands_per_second"]:.1f} hands/s')
PY
fi

# --- 1. learner: wgpu (and wgpu with burn's fusion) against flex and PyTorch on CUDA -----------
has learner && {
log "stage 1: ARMAC learner steps/s, FCPA network (input 175, 4 actions)"
L="$OUT/learner.jsonl"
# GPU utilisation while the first wgpu runs go: proof that wgpu picked the NVIDIA adapter.
(timeout 40 nvidia-smi dmon -s u -d 2 >/tmp/dmon.txt 2>&1 &)
FUSED="$D/armac-bench-fusion"
fcpa=(--input 175 --actions 4)
# The stage ends its runs LEARNER_SECONDS after the script's start (later ones are skipped).
SKIP_AFTER=${LEARNER_SECONDS:-240}
# The recurrent network (nlhe_fcpa_recurrent.toml: 64 sequences x 32 steps, input 108), with
# the targets carried by the batch and computed in the step (episodes of up to 8 decisions).
for dev in wgpu flex; do
  for in_step in 8 0; do
    run 60 "$L" "$B" learner --device $dev --input 108 --actions 4 --hidden 128 --batch 64 --time 32 --steps 5 --repeats 3 --in-step $in_step
  done
done
# A feed-forward run's own step: 256 replay rows with in-step targets, 256 rows of each
# reservoir drawn from 2^18-row device tables (nlhe_fcpa.toml's shapes).
for dev in wgpu flex; do
  run 60 "$L" "$B" learner --device $dev "${fcpa[@]}" --hidden 128 --batch 256 --memory-rows 256 --device-memory 262144 --in-step 4 --steps 20 --repeats 3
done
# LEARNER_SHAPES: "hidden rows" pairs, comma-separated (a dry run without a GPU picks small ones).
IFS=',' read -ra shapes <<<"${LEARNER_SHAPES:-128 256,128 2048,128 8192,128 65536,256 65536}"
for shape in "${shapes[@]}"; do
  read -r hidden rows <<<"$shape"
  # About 16k rows a timed block on the GPU, 4k (at least 2 steps) on the CPU.
  gsteps=$(( rows >= 8192 ? 5 : 16384 / rows )) csteps=$(( rows >= 2048 ? 2 : 4096 / rows ))
  crep=$(( rows >= 65536 ? 1 : 3 ))
  run 60 "$L" "$B" learner --device wgpu "${fcpa[@]}" --hidden "$hidden" --batch "$rows" --steps "$gsteps" --repeats 3
  # flex at 65,536 rows of hidden 256 takes minutes a step: left out.
  [ "$hidden$rows" != 25665536 ] &&
    run 90 "$L" "$B" learner --device flex "${fcpa[@]}" --hidden "$hidden" --batch "$rows" --steps "$csteps" --repeats "$crep"
  run 60 "$L" python3 scripts/bench_learner_torch.py --device cuda "${fcpa[@]}" --hidden "$hidden" --head-hidden "$hidden" --batch "$rows" --steps $(( gsteps * 4 ))
  [ -x "$FUSED" ] && run 60 "$OUT/learner_fusion.jsonl" "$FUSED" learner --device wgpu "${fcpa[@]}" --hidden "$hidden" --batch "$rows" --steps "$gsteps" --repeats 3
done
SKIP_AFTER=
python3 - "$L" "$OUT/learner_fusion.jsonl" <<'PY' | tee -a "$OUT/summary.txt"
import json, os, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
if os.path.exists(sys.argv[2]):
    rows += [dict(json.loads(l), backend="wgpu+fusion") for l in open(sys.argv[2])]
rows.sort(key=lambda r: (r.get("time", 0), r.get("memory_rows", 0), r.get("in_step", 0), r.get("hidden", 0), r.get("batch", 0)))
print("    learner steps/s (rows/s, achieved matrix-product TFLOP/s; transfers per step):")
for r in rows:
    name = r.get("backend") or ("torch-" + r.get("device", "?"))
    extra = ""
    if "uploads_per_step" in r:
        extra = (f" uploads {r['uploads_per_step']:.2f} ({r['upload_bytes_per_step'] / 1e6:.2f} MB),"
                 f" read-backs {r['readbacks_per_step']:.3f}")
    tf = r.get("flops_per_second")
    if tf is None:  # PyTorch: the same network and losses as armac's plain rows of this shape
        peer = [x for x in rows if x.get("flops_per_step") and x.get("hidden") == r.get("hidden")
                and x.get("batch") == r.get("batch") and not x.get("memory_rows") and not x.get("time")]
        tf = peer[0]["flops_per_step"] * r["steps_per_second"] if peer else None
    tf = f" {tf / 1e12:6.3f} TFLOP/s" if tf else ""
    shape = f"hidden {r.get('hidden', '?')} rows {r.get('batch')}" + (f" x time {r['time']}" if r.get('time') else "")
    if r.get("memory_rows"): shape += f" + 2x{r['memory_rows']} memory rows"
    if r.get("in_step"): shape += f", in-step {r['in_step']}"
    print(f"    {name:11} {shape:40} {r['steps_per_second']:9.2f} steps/s {r['rows_per_second']:12.0f} rows/s{tf}{extra}")
PY
{ echo "--- nvidia-smi dmon (GPU utilisation) during the first wgpu runs"; head -25 /tmp/dmon.txt; } >>"$OUT/summary.txt"
}

# --- train: the recurrent Hold'em config with its learner on the GPU ----------------------------
if has train; then
  # TRAIN_SECONDS of wall time (default: what is left of DEADLINE seconds since the start), 15 actor threads on lock-step groups of 16 games (the config's
  # 256 episodes an epoch in 16 groups), learner on wgpu; the model and TensorBoard log come
  # back in $OUT.
  # An epoch is not cut short: the limit leaves one and the export before DEADLINE.
  left=$(( ${DEADLINE:-560} - $(elapsed) - 75 ))
  secs=${TRAIN_SECONDS:-$left}
  log "train: nlhe_fcpa_recurrent.toml, learner on wgpu, ${TRAIN_ACTORS:=15} actors, $secs s"
  if [ "$secs" -gt 30 ]; then
    "$D/armac-train" --config nlhe_fcpa_recurrent.toml --out /tmp/rec --overwrite --quiet \
      --set armac.device=\"wgpu\" --set armac.actors="$TRAIN_ACTORS" --set armac.games_per_group=16 \
      --set checkpoint.every_seconds=60.0 \
      --max-seconds "$secs" >"$OUT/train.log" 2>&1 || log "train exited with $?"
    tail -3 "$OUT/train.log" | tee -a "$OUT/summary.txt"
    cat /tmp/rec/summary.json >"$OUT/train_summary.json" 2>/dev/null
    "$D/armac-eval" export-model --checkpoint /tmp/rec --out /tmp/rec_model >>"$OUT/train.log" 2>&1 &&
      tar -C /tmp -czf "$OUT/rec_model.tgz" rec_model
    (cd /tmp/rec && tar -czf "$OUT/rec_tb.tgz" $(find . -name 'events.out.tfevents*' -o -name metrics.csv) 2>/dev/null)
    ls -la "$OUT" | tee -a "$OUT/summary.txt"
  fi
fi

# --- 2. batched public-tree solvers: wgpu against flex -------------------------------------------
has batched && {
log "stage 2: batched CFR+/POS element-iterations/s"
P="$OUT/batched.jsonl"
for dev in wgpu flex; do
  for b in 1 1024 16384; do
    run 60 "$P" "$B" batched --game leduc_poker --algorithm cfr+ --batch $b --iterations 20 --repeats 3 --device $dev
    run 60 "$P" "$B" batched --game leduc_poker --algorithm pos --batch $b --iterations 20 --repeats 3 --device $dev
  done
  run 90 "$P" "$B" batched --game liars_dice --algorithm cfr+ --batch 1024 --iterations 5 --repeats 3 --device $dev
done

}

# --- 3. sampled solvers: the scaling stage above ("sampled" runs it too) and OpenSpiel ----------
if { has sampled || has openspiel; } && [ -d .whl ] && python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null; then
  log "stage 3b: single thread against OpenSpiel's C++ outcome/external sampling (idle host)"
  PYTHONPATH=/tmp/site OS_ROUNDS=${OS_ROUNDS:-3} pin "${OS_CORES:-0,1}" timeout 300 python3 - "$B" <<'PY' | tee -a "$OUT/summary.txt"
import json, os, statistics, subprocess, sys, time
import pyspiel
B = sys.argv[1]
rounds = int(os.environ["OS_ROUNDS"])
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
    for _ in range(rounds):
        res["os"].append(ours(g, "os-mccfr", 400000)); res["os_p"].append(theirs(os_s, 20000))
        res["es"].append(ours(g, "es-mccfr", 40000)); res["es_p"].append(theirs(es_s, 2000 if g == "leduc_poker" else 200))
        res["pos"].append(ours(g, "pos-mccfr", 40000, "baseline=predictive"))
    med = statistics.median
    npi = {k: med([r["nodes_per_iteration"] for r in res[k]]) for k in ["os", "es"]}
    for name, k, peer, pk in [("OS", "os", "os_p", "os"), ("ES", "es", "es_p", "es"), ("POS", "pos", "os_p", "os")]:
        ours_n = med([r["nodes_touched_per_second"] for r in res[k]])
        peer_n = med(res[peer]) * npi[pk]
        print(f"    {g:12} {name:4} armac {ours_n:10.4g} nodes/s  OpenSpiel {peer_n:10.4g}  ratio {ours_n / peer_n:5.1f}x ({rounds} rounds, medians, wall time)", flush=True)
PY
fi

# --- 4. Redis actors against in-process threads --------------------------------------------------
if has redis && command -v redis-server >/dev/null; then
  log "stage 4: trajectories/s through Redis vs in-process, 1..8 actors"
  LD_LIBRARY_PATH="$D/lib" BIN="$D" ACTORS="1 2 4 8" timeout 150 bash scripts/bench_redis.sh 2>&1 \
    | tee -a "$OUT/summary.txt"
fi
if has ladder; then
  log "ladder: waiting for the rungs"
  wait
  python3 - <<'PY' | tee -a "$OUT/summary.txt"
import csv, math, os, statistics
for rung in sorted(os.listdir("/tmp/ladder")):
    if not os.path.isdir(f"/tmp/ladder/{rung}"):
        continue
    p = f"/tmp/ladder/{rung}/metrics.csv"
    if not os.path.exists(p):
        print(f"    {rung}: no metrics"); continue
    rows = [r for r in csv.DictReader(open(p)) if not math.isnan(float(r["nash_conv"]))]
    if not rows:
        print(f"    {rung}: no evaluation yet"); continue
    def med(col, lo, hi):
        v = [float(r[col]) for r in rows if lo <= int(r["epoch"]) < hi and not math.isnan(float(r[col]))]
        return statistics.median(v) if v else float("nan")
    last = rows[-1]
    wins = " ".join(f"{lo}-{lo+99}: {med('nash_conv', lo, lo+100):.3f}" for lo in range(0, int(last["epoch"]), 100))
    def mcol(col):
        v = [float(r.get(col) or "nan") for r in rows[-10:]]
        v = [x for x in v if not math.isnan(x)]
        return statistics.median(v) if v else float("nan")
    print(f"    {rung:10} epochs {last['epoch']:>5} NashConv {float(last['nash_conv']):.3f} (median of last 5 evals {statistics.median(float(r['nash_conv']) for r in rows[-5:]):.3f})  windows {wins}  "
          f"last 10 evals, medians: critic rmse {mcol('diag_critic_rmse'):.3f} adv rmse {mcol('diag_critic_adv_rmse'):.3f} "
          f"wrong-mass {mcol('diag_critic_wrong_mass'):.3f} drift {mcol('diag_critic_drift'):.3f} policy change {mcol('diag_policy_change'):.3f}")
PY
  (cd /tmp/ladder && tar -czf "$OUT/ladder.tgz" */metrics.csv */summary.json *.log)
fi
log "done"
