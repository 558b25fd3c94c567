#!/usr/bin/env bash
# What trading precision buys and costs, measured side by side (figures, never pass/fail):
# data parallelism on 2 devices (device kvstore) with each compressor and each mixed
# precision against none (f32, uncompressed) in the same round: bytes pushed per step as
# sent and their ratio to none's, the compress and decompress work per step, the step time's
# ratio to none's, and the saved activations and peak memory per device against none's.
# Output: stdout and a copy under out/bench-compression/.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
    cat <<EOF2
usage: scripts/bench-compression.sh [options]

Builds mxbench (Release), then trains WORKLOAD on synthetic data with a global batch of
BATCH on 2 devices (CPU workers, 1 thread each, device kvstore) with --compression none,
fp16, 2bit and topk, and with --amp fp16 and bf16 (uncompressed). Every round runs each
configuration once, the order rotating from round to round. It prints, as medians over the
rounds:
  - samples/s (median step) and the step time's ratio to none's in the same round;
  - wire MB per step (pushes as sent) and their ratio to none's;
  - compress and decompress thread-seconds per step, and the compress phase (the part after
    backward, which lengthens the step);
  - AMP: saved activations (MB per device) and the peak a device held, against none's.

options:
  --rounds N        rounds (default $ROUNDS)
  --steps N         timed steps per run (default $STEPS)
  --warmup N        untimed leading steps per run (default $WARMUP)
  --workload NAME   mlp, lenet or resnet18 (default $WORKLOAD)
  --batch N         global batch (default $BATCH)
  --threshold X     2bit's threshold (default $THRESHOLD)
  --topk-ratio X    topk's ratio (default $RATIO)
  --build DIR       CMake build directory (default $BUILD)
  -h, --help        this text
EOF2
}

ROUNDS=3 STEPS=6 WARMUP=2 WORKLOAD=resnet18 BATCH=64 THRESHOLD=0.5 RATIO=0.01 BUILD=out/bench-compression/build
# shellcheck source=scripts/bench-lib.sh
source scripts/bench-lib.sh
while (($#)); do
    case $1 in
    --rounds) need_int --rounds "${2-}" 1; ROUNDS=$2; shift ;;
    --steps) need_int --steps "${2-}" 1; STEPS=$2; shift ;;
    --warmup) need_int --warmup "${2-}" 0; WARMUP=$2; shift ;;
    --workload) WORKLOAD=${2:?--workload needs a name}; shift ;;
    --batch) need_int --batch "${2-}" 2; BATCH=$2; shift ;;
    --threshold) THRESHOLD=${2:?--threshold needs a value}; shift ;;
    --topk-ratio) RATIO=${2:?--topk-ratio needs a value}; shift ;;
    --build) BUILD=${2:?--build needs a directory}; shift ;;
    -h | --help) usage; exit 0 ;;
    *) echo "bench-compression.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    esac
    shift
done
[[ $WORKLOAD =~ ^(mlp|lenet|resnet18)$ ]] || { echo "bench-compression.sh: workload '$WORKLOAD': expected mlp, lenet or resnet18" >&2; exit 2; }

bench_start bench-compression 0
echo "settings: $WORKLOAD, synthetic data, global batch $BATCH on 2 devices (device kvstore), --rounds $ROUNDS --steps $STEPS --warmup $WARMUP, 1 thread per device, lr 0.01; 2bit threshold $THRESHOLD, topk ratio $RATIO"

CONFIGS=("none --compression none" "fp16 --compression fp16" "2bit --compression 2bit --threshold $THRESHOLD"
    "topk --compression topk --topk-ratio $RATIO" "amp-fp16 --amp fp16" "amp-bf16 --amp bf16")
FIELDS="throughput step_time_median wire_bytes_per_step compress_time mem_act mem_peak status"
compress_phase() { # record: the median over the timed steps of its phase_time's compress column
    local phase
    phase=$(h5dump -d /runs/r0000/phase_time "$1" 2>/dev/null | awk -v w="$WARMUP" '
        /\([0-9]+,0\):/ { gsub(/[(),:]/, " "); if ($1 >= w) print $NF }' | sort -g |
        awk '{v[NR] = $1} END {if (!NR) print "nan"; else print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}')
    echo "${phase:-nan}"
}
run_one() { # appends the figures of FIELDS (status aside), then the compress phase, to $TMP/<name>
    local name opts
    read -r name opts <<<"$1"
    # shellcheck disable=SC2086 # opts are words
    record_run --rows "$TMP/$name" --record "$TMP/$name-$ROUND.h5" --label "$(printf '%-6s' "$name")" \
        --ok-label "$(printf '%-8s' "$name")" --fields "$FIELDS" --extra compress_phase 1 -- \
        "$MX" train --gpus 2 --threads-per-device 1 --kvstore device $opts --workload "$WORKLOAD" \
        --dataset synthetic --batch "$BATCH" --lr 0.01 --steps $((STEPS + WARMUP)) --warmup-steps "$WARMUP"
}
echo
echo "runs: $ROUNDS round(s) of ${#CONFIGS[@]}; each round starts further along the list, odd rounds run it backwards"
interleave_rounds

echo
echo "results: medians over $ROUNDS round(s); ratios are per round, against none in the same round"
# columns of $TMP/<name>: 1 samples/s, 2 step s, 3 wire bytes, 4 gc s, 5 act bytes, 6 peak bytes, 7 phase s
printf '%-8s %10s %8s %8s %9s %8s %7s %8s %8s %7s %8s %7s\n' config samples/s "step ms" "vs none" "wire MB" \
    "vs none" "gc ms" "phase ms" "act MB" "vs none" "peak MB" "vs none"
for c in "${CONFIGS[@]}"; do
    read -r name _ <<<"$c"
    f=$TMP/$name
    printf '%-8s %10s %8s %8s %9s %8s %7s %8s %8s %7s %8s %7s\n' "$name" "$(fmt %.1f "$(med "$f" 1)")" \
        "$(fmt %.1f "$(scale "$(med "$f" 2)" 1e3)")" "$(fmt %.3f "$(med_ratio "$f" 2 "$TMP/none" 2 1)")" \
        "$(fmt %.3f "$(scale "$(med "$f" 3)" 1e-6)")" "$(fmt %.4f "$(med_ratio "$f" 3 "$TMP/none" 3 1)")" \
        "$(fmt %.1f "$(scale "$(med "$f" 4)" 1e3)")" "$(fmt %.1f "$(scale "$(med "$f" 7)" 1e3)")" \
        "$(fmt %.2f "$(scale "$(med "$f" 5)" 1e-6)")" "$(fmt %.3f "$(med_ratio "$f" 5 "$TMP/none" 5 1)")" \
        "$(fmt %.1f "$(scale "$(med "$f" 6)" 1e-6)")" "$(fmt %.3f "$(med_ratio "$f" 6 "$TMP/none" 6 1)")"
done
echo "expected bytes: fp16 1/2, 2bit about 1/16, topk at 1% about 1/50 (8 bytes per value sent);"
echo "AMP: saved activations about 1/2 (16-bit outputs); on the CPU the kernels compute in f32, so AMP's casts add time"
bench_end 0
