#!/usr/bin/env bash
# Sampled CFR throughput, armac vs OpenSpiel's C++ MCCFR solvers (through pyspiel), on this
# machine: nodes touched per second of outcome sampling (OS), external sampling (ES) and public
# outcome sampling (POS, compared with OpenSpiel's OS: OpenSpiel has no POS) on Leduc and Liar's
# Dice. The two sides alternate in ROUNDS rounds (one timed block each per round) and the
# medians are compared, so load changes on a shared machine hit both alike.
#
# OpenSpiel's solvers do not report nodes touched, so their nodes/s is their iterations/s times
# armac's measured nodes per iteration of the same algorithm (same sampling scheme: OS with
# exploration 0.6 at the updating player and on-policy elsewhere, one trajectory per player per
# iteration; ES with one traversal per player).
# Every row is printed twice: single-thread (armac `threads = 1`, the sequential algorithm) and
# all cores (`threads = THREADS`, default every core, with the default `walks = 64 x THREADS`
# mini-batched walks; POS likewise with `walks = 64 x THREADS` public-state passes per turn). OpenSpiel's
# solvers are single-threaded, so the all-core ratio is armac on THREADS cores against OpenSpiel
# on one; the line also prints armac's own all-core / single-thread scaling.
# Single-thread rows also compare nodes per CPU-second of the solving thread (armac:
# /proc/thread-self/schedstat; OpenSpiel: the Python process's CPU time), which other jobs on a
# shared machine disturb far less than wall time; wall-time ratios need an idle machine.
# Parallel efficiency, which load on a shared machine disturbs far less than wall time: nodes per
# CPU-second of the whole armac process (getrusage of the child: all threads, with their
# spinning and waiting; tree building subtracted through a 1-iteration run) with THREADS threads
# against one thread running the same `walks = 64 x THREADS`. 1 means the second core's time is
# all useful work. The same line prints the wall ratio of those two runs and the cost of the
# mini-batch itself (one thread, walks 64 x THREADS against walks 1).
# Needs: python3 -m pip install open_spiel.
# Usage: scripts/bench_sampled_vs_openspiel.sh [ROUNDS] [THREADS]
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet --bin armac-bench
python3 - "${1:-5}" "${2:-$(nproc)}" <<'PY'
import json, resource, statistics, subprocess, sys, time
import pyspiel

rounds = int(sys.argv[1])
threads = int(sys.argv[2])

def ours(game, algorithm, iterations, *opts):
    cmd = ["./target/release/armac-bench", "solver", "--game", game, "--algorithm", algorithm,
           "--iterations", str(iterations), "--repeats", "1"]
    for o in opts:
        cmd += ["--set", o]
    return json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)

def cpu_run(game, algorithm, iterations, *opts):
    """armac's run plus the whole child process's CPU seconds (getrusage: every thread,
    spinning and waiting included) and nodes touched."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = ours(game, algorithm, iterations, *opts)
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    return out, cpu, out["nodes_per_iteration"] * iterations

def per_cpu(game, algorithm, iterations, *opts):
    """Nodes per process CPU-second of the solving only: a 1-iteration run of the same
    configuration measures the setup (tree building), which is subtracted."""
    out, cpu, nodes = cpu_run(game, algorithm, iterations, *opts)
    _, cpu1, nodes1 = cpu_run(game, algorithm, 1, *opts)
    out["nodes_per_process_cpu_second"] = (nodes - nodes1) / max(cpu - cpu1, 1e-3)
    return out

def theirs(solver, n):
    """OpenSpiel's iterations per wall second and per CPU second of this (single-threaded) process."""
    t, c = time.perf_counter(), time.process_time()
    for _ in range(n):
        solver.run_iteration()
    return n / (time.perf_counter() - t), n / (time.process_time() - c)

for game_name in ["leduc_poker", "liars_dice"]:
    game = pyspiel.load_game(game_name)
    os_solver = pyspiel.OutcomeSamplingMCCFRSolver(game)
    es_solver = pyspiel.ExternalSamplingMCCFRSolver(game)
    es_n = 2000 if game_name == "leduc_poker" else 200
    res = {k: [] for k in ["os", "es", "pos", "os_n", "es_n", "pos_n", "os_peer", "es_peer",
                           "os_1w", "es_1w", "pos_1w"]}
    # With THREADS threads an iteration runs 64 x THREADS walks per player: fewer iterations
    # keep the timed blocks about as long as the single-thread ones.
    walks = 64 * threads
    for _ in range(rounds):
        res["os"].append(ours(game_name, "os-mccfr", 400000, "threads=1"))
        res["os_n"].append(per_cpu(game_name, "os-mccfr", max(1, 400000 // walks),
                                f"threads={threads}"))
        res["os_1w"].append(per_cpu(game_name, "os-mccfr", max(1, 400000 // walks),
                                "threads=1", f"walks={walks}"))
        res["os_peer"].append(theirs(os_solver, 20000))
        res["es"].append(ours(game_name, "es-mccfr", 40000, "threads=1"))
        res["es_n"].append(per_cpu(game_name, "es-mccfr", max(1, 40000 // walks),
                                f"threads={threads}"))
        res["es_1w"].append(per_cpu(game_name, "es-mccfr", max(1, 40000 // walks),
                                "threads=1", f"walks={walks}"))
        res["es_peer"].append(theirs(es_solver, es_n))
        res["pos"].append(ours(game_name, "pos-mccfr", 40000, "baseline=predictive", "threads=1"))
        res["pos_n"].append(per_cpu(game_name, "pos-mccfr", max(1, 40000 // walks),
                                 "baseline=predictive", f"threads={threads}"))
        res["pos_1w"].append(per_cpu(game_name, "pos-mccfr", max(1, 40000 // walks),
                                 "baseline=predictive", "threads=1", f"walks={walks}"))
    med = lambda xs: statistics.median(xs)
    os_npi = med([r["nodes_per_iteration"] for r in res["os"]])
    es_npi = med([r["nodes_per_iteration"] for r in res["es"]])
    rows = [("OS", "os", "os_n", "os_peer", os_npi), ("ES", "es", "es_n", "es_peer", es_npi),
            ("POS (vs OpenSpiel OS)", "pos", "pos_n", "os_peer", os_npi)]
    for name, key, key_n, peer_key, npi in rows:
        peer_its = med([r[0] for r in res[peer_key]])
        peer = peer_its * npi
        peer_cpu = med([r[1] for r in res[peer_key]]) * npi
        nodes = med([r["nodes_touched_per_second"] for r in res[key]])
        its = med([r["iterations_per_second"] for r in res[key]])
        cpu = [r.get("nodes_touched_per_thread_cpu_second") for r in res[key]]
        cpu_ratio = (f"  per CPU-second: armac {med(cpu):10.4g} OpenSpiel {peer_cpu:10.4g} "
                     f"ratio {med(cpu) / peer_cpu:6.1f}") if None not in cpu else ""
        print(f"{game_name:12} {name:22} 1 thread   armac {nodes:10.4g} nodes/s ({its:9.4g} it/s)  "
              f"OpenSpiel {peer:10.4g} nodes/s ({peer_its:9.4g} it/s)  ratio {nodes / peer:6.1f}"
              f"{cpu_ratio}", flush=True)
        nodes_n = med([r["nodes_touched_per_second"] for r in res[key_n]])
        print(f"{game_name:12} {name:22} {threads} threads  armac {nodes_n:10.4g} nodes/s "
              f"(walks {walks}){' ' * 13}OpenSpiel {peer:10.4g} nodes/s (1 thread){' ' * 7}"
              f"ratio {nodes_n / peer:6.1f}  scaling {nodes_n / nodes:4.2f}x", flush=True)
        cpu_n = med([r["nodes_per_process_cpu_second"] for r in res[key_n]])
        cpu_1w = med([r["nodes_per_process_cpu_second"] for r in res[key + "_1w"]])
        wall_1w = med([r["nodes_touched_per_second"] for r in res[key + "_1w"]])
        print(f"{game_name:12} {name:22} walks {walks}: nodes per process CPU-second 1 thread "
              f"{cpu_1w:10.4g}, {threads} threads {cpu_n:10.4g}: parallel efficiency "
              f"{cpu_n / cpu_1w:4.2f}; wall {threads} threads / 1 thread {nodes_n / wall_1w:4.2f}x; "
              f"1 thread walks {walks} / walks 1 (wall) {wall_1w / nodes:4.2f}x", flush=True)
    print(f"(medians of {rounds} alternating rounds; load average {open('/proc/loadavg').read().split()[0]})", flush=True)
PY
