#!/usr/bin/env bash
# Trajectories per second through a Redis broker against the in-process channel, measured in
# one invocation on this machine: the same Kuhn config (acting-bound: one learning step per
# epoch) once with actor threads inside armac-train, then as `--role learner` with `armac-actor`
# processes, for 1..MAX_ACTORS processes of one thread each. Prints a table and the ratios.
#   EPOCHS=40 EPISODES=1024 MAX_ACTORS=4 scripts/bench_redis.sh
#   ACTORS="1 2 4 8" (instead of 1..MAX_ACTORS); BIN=dir (prebuilt armac-train/armac-actor, no build)
set -euo pipefail
cd "$(dirname "$0")/.."
EPOCHS=${EPOCHS:-40}
EPISODES=${EPISODES:-1024}
MAX_ACTORS=${MAX_ACTORS:-4}
ACTORS=${ACTORS:-$(seq 1 "$MAX_ACTORS")}
command -v redis-server >/dev/null || { echo "redis-server is not installed"; exit 1; }
if [ -z "${BIN:-}" ]; then
  cargo build --release --bins -q
fi
bin=${BIN:-target/release}
tmp=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$tmp" >/dev/null &
redis_pid=$!
trap 'kill $redis_pid 2>/dev/null; rm -rf "$tmp"' EXIT
url="redis://127.0.0.1:$port/0"
for _ in $(seq 50); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
common=(--config kuhn_armac.toml --quiet --set "armac.epochs=$EPOCHS"
  --set "armac.episodes_per_epoch=$EPISODES" --set armac.learning_steps_per_epoch=1
  --set eval.every=1000000)
now() { date +%s.%N; }
rate() { python3 -c "print(f'{$EPOCHS * $EPISODES / ($2 - $1):.0f}')"; }

printf "%-28s %14s %8s\n" "transport" "trajectories/s" "ratio"
for n in $ACTORS; do
  t0=$(now)
  $bin/armac-train "${common[@]}" --set "armac.actors=$n" --out "$tmp/local$n" >/dev/null
  t1=$(now)
  local_rate=$(rate "$t0" "$t1")
  t0=$(now)
  $bin/armac-train "${common[@]}" --role learner --broker "$url" \
    --set "cluster.run=\"bench$n\"" --set "cluster.stream_cap=$((8 * EPISODES))" \
    --out "$tmp/redis$n" >/dev/null &
  learner=$!
  # Actors need the run registered on the broker (else "run does not exist").
  until [ "$(redis-cli -p "$port" exists "armac:bench$n:epoch")" = 1 ]; do sleep 0.05; done
  actors=()
  for a in $(seq 1 "$n"); do
    $bin/armac-actor --run "bench$n" --broker "$url" --threads 1 >/dev/null &
    actors+=($!)
  done
  wait $learner
  for a in "${actors[@]}"; do wait "$a"; done
  t1=$(now)
  redis_rate=$(rate "$t0" "$t1")
  printf "%-28s %14s %8s\n" "in-process, $n thread(s)" "$local_rate" "1.00"
  printf "%-28s %14s %8s\n" "redis, $n actor process(es)" "$redis_rate" \
    "$(python3 -c "print(f'{$redis_rate / $local_rate:.2f}')")"
done
