#!/usr/bin/env bash
# ARMAC epochs per CPU-second on Leduc for two armac-train binaries (e.g. one built from an older
# commit and the current build), runs interleaved on this machine: configs/leduc_armac.toml on
# the lock-step schedule with exact evaluation every 50 epochs.
#   - early: fresh runs of --short epochs (default 150): epochs / CPU-seconds at that epoch;
#   - late: runs resumed from one --late-from checkpoint (default 300, written once by BASE, or
#     --prepared DIR) to --late-to (default 400): epochs / CPU-seconds between the two, where
#     the reservoirs hold more samples.
# CPU-seconds are the run's own (`cpu_seconds` of metrics.csv), so other load on a shared
# machine slows the wall clock but hardly the figures. Prints each run, the medians and the
# ratio NEW / BASE (> 1: NEW runs more epochs per CPU-second), and whether the two binaries
# wrote the same outputs (metrics without the clock columns, past networks, the last
# checkpoint, as tests/determinism.rs compares them).
#   scripts/bench_epochs.sh BASE NEW [--repeats 3] [--short 150] [--late-from 300]
#       [--late-to 400] [--prepared DIR] [--work DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
if (($# < 2)); then
  sed -n '2,16p' "$0"
  exit 2
fi
base=$(realpath "$1") new=$(realpath "$2")
shift 2
repeats=3 short=150 late_from=300 late_to=400 prepared="" work=""
while (($#)); do
  case $1 in
    --repeats) repeats=$2; shift 2 ;;
    --short) short=$2; shift 2 ;;
    --late-from) late_from=$2; shift 2 ;;
    --late-to) late_to=$2; shift 2 ;;
    --prepared) prepared=$(realpath "$2"); shift 2 ;;
    --work) work=$2; shift 2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
work=${work:-$(mktemp -d /tmp/bench_epochs.XXXXXX)}
mkdir -p "$work"
config=$PWD/configs/leduc_armac.toml
sets=(--set 'armac.schedule="lockstep"' --set eval.every=50)

# cpu_seconds of metrics.csv at epoch $2 of run dir $1.
cpu_at() {
  awk -F, -v e="$2" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "cpu_seconds") c = i }
    NR > 1 && $1 == e { print $c }' "$1/metrics.csv"
}

same() {
  python3 - "$1" "$2" <<'EOF'
import csv, json, os, sys
a, b = sys.argv[1], sys.argv[2]
def metrics(d):
    rows = list(csv.reader(open(os.path.join(d, "metrics.csv"))))
    drop = {i for i, c in enumerate(rows[0]) if c in ("seconds", "cpu_seconds")}
    return [[c for i, c in enumerate(r) if i not in drop] for r in rows]
def files(d):
    out = {}
    for sub in ("reservoir", "checkpoint/"):
        root = os.path.realpath(os.path.join(d, sub))
        for r, _, fs in os.walk(root):
            for f in fs:
                p = os.path.join(r, f)
                data = open(p, "rb").read()
                if f in ("state.json", "manifest.json"):
                    j = json.loads(data)
                    for k in ("elapsed_seconds", "cpu_seconds"):
                        j.pop(k, None)
                    j.get("files", {}).pop("state.json", None)
                    data = json.dumps(j, sort_keys=True).encode()
                out[os.path.relpath(p, root) + "@" + sub] = data
    return out
print("yes" if metrics(a) == metrics(b) and files(a) == files(b) else "NO")
EOF
}

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

declare -A early late
for r in $(seq "$repeats"); do
  for which in base new; do
    bin=${!which} dir=$work/early_${which}_$r
    rm -rf "$dir"
    "$bin" --config "$config" --out "$dir" --quiet "${sets[@]}" --set armac.epochs="$short" >/dev/null
    rate=$(awk -v n="$short" -v c="$(cpu_at "$dir" "$short")" 'BEGIN { printf "%.4f", n / c }')
    early[$which]+="$rate "
    echo "early $which run $r: $short epochs, $(cpu_at "$dir" "$short") CPU-s, $rate epochs/CPU-s"
  done
done
echo "early outputs identical: $(same "$work/early_base_1" "$work/early_new_1")"

if [[ -z $prepared ]]; then
  prepared=$work/prepared
  rm -rf "$prepared"
  echo "preparing $late_from epochs with BASE in $prepared"
  "$base" --config "$config" --out "$prepared" --quiet "${sets[@]}" --set armac.epochs="$late_from" >/dev/null
fi
for r in $(seq "$repeats"); do
  for which in base new; do
    bin=${!which} dir=$work/late_${which}_$r
    rm -rf "$dir"
    cp -r "$prepared" "$dir"
    "$bin" --resume "$dir" --quiet --set armac.epochs="$late_to" >/dev/null
    c0=$(cpu_at "$dir" "$late_from") c1=$(cpu_at "$dir" "$late_to")
    rate=$(awk -v n=$((late_to - late_from)) -v a="$c0" -v b="$c1" 'BEGIN { printf "%.4f", n / (b - a) }')
    late[$which]+="$rate "
    echo "late $which run $r: epochs $late_from-$late_to, $(awk -v a="$c0" -v b="$c1" 'BEGIN { printf "%.2f", b - a }') CPU-s, $rate epochs/CPU-s"
  done
done
echo "late outputs identical: $(same "$work/late_base_1" "$work/late_new_1")"

for phase in early late; do
  declare -n rates=$phase
  mb=$(tr ' ' '\n' <<<"${rates[base]}" | grep . | median)
  mn=$(tr ' ' '\n' <<<"${rates[new]}" | grep . | median)
  awk -v p="$phase" -v b="$mb" -v n="$mn" \
    'BEGIN { printf "%s: median epochs/CPU-s base %.4f, new %.4f, ratio new/base %.3f\n", p, b, n, n / b }'
done
echo "runs kept in $work"
