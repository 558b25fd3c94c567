#!/usr/bin/env bash
# The three ways of splitting training, measured side by side (figures, never pass/fail):
# data, model (pipeline: gpipe and 1f1b, several micro-batch counts) and layer (tensor)
# parallelism on the same model and global batch over 2 devices: throughput relative to data
# in the same run, the pipeline's measured bubble against (k-1)/(m+k-1), peak and parameter
# memory per device against one device, and bytes moved per step.
# Output: stdout and a copy under out/bench-parallel/.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
    cat <<EOF
usage: scripts/bench-parallel.sh [options]

Builds mxbench (Release), then trains WORKLOAD on synthetic data with a global batch of
BATCH on one device (data, the memory baseline) and on 2 devices with: data (device
kvstore), model with gpipe and 1f1b at each micro-batch count of --micro-batches, and layer.
Every device is a CPU worker with 1 thread. Every round runs each configuration once, the
order rotating from round to round. It prints, as medians over the rounds:
  - samples/s (median step) and its ratio to data on 2 devices (median of per-round ratios);
  - model: the measured bubble (mean over stages of each stage's idle share of the step
    window) and the theory (k-1)/(m+k-1);
  - peak and parameter (with gradients) memory of the device holding most, as the allocator
    counted it, and their ratios to one device's;
  - MB moved per step (data: the kvstore; model: between stages; layer: collectives).

options:
  --rounds N              rounds (default $ROUNDS)
  --steps N               timed steps per run (default $STEPS)
  --warmup N              untimed leading steps per run (default $WARMUP)
  --workload NAME         mlp, lenet or resnet18 (default $WORKLOAD)
  --batch N               global batch (default $BATCH)
  --micro-batches LIST    comma list for the model rows (default $MBS)
  --build DIR             CMake build directory (default $BUILD)
  --keep                  keep the runs' records (default: removed)
  -h, --help              this text
EOF
}

ROUNDS=3 STEPS=6 WARMUP=2 WORKLOAD=resnet18 BATCH=64 MBS=1,2,4,8 BUILD=out/bench-parallel/build KEEP=0
# shellcheck source=scripts/bench-lib.sh
source scripts/bench-lib.sh
while (($#)); do
    case $1 in
    --rounds) need_int --rounds "${2-}" 1; ROUNDS=$2; shift ;;
    --steps) need_int --steps "${2-}" 1; STEPS=$2; shift ;;
    --warmup) need_int --warmup "${2-}" 0; WARMUP=$2; shift ;;
    --workload) WORKLOAD=${2:?--workload needs a name}; shift ;;
    --batch) need_int --batch "${2-}" 2; BATCH=$2; shift ;;
    --micro-batches) MBS=${2:?--micro-batches needs a list}; shift ;;
    --build) BUILD=${2:?--build needs a directory}; shift ;;
    --keep) KEEP=1 ;;
    -h | --help) usage; exit 0 ;;
    *) echo "bench-parallel.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    esac
    shift
done
[[ $WORKLOAD =~ ^(mlp|lenet|resnet18)$ ]] || { echo "bench-parallel.sh: workload '$WORKLOAD': expected mlp, lenet or resnet18" >&2; exit 2; }
IFS=, read -ra MB <<<"$MBS"
for m in "${MB[@]}"; do
    need_int --micro-batches "$m" 1
    ((m <= BATCH)) || { echo "bench-parallel.sh: $m micro-batches exceed the batch $BATCH" >&2; exit 2; }
done

bench_start bench-parallel "$KEEP"
env | grep -E '^(OMP|GOMP|OPENBLAS)_' | sed 's/^/environment: /' || true
echo "settings: $WORKLOAD, synthetic data, global batch $BATCH, --rounds $ROUNDS --steps $STEPS --warmup $WARMUP, 1 thread per device, lr 0.01"

# a configuration: "name strategy devices [train options...]"
CONFIGS=("data1 data 1" "data2 data 2")
for m in "${MB[@]}"; do CONFIGS+=("gpipe-m$m model 2 --micro-batches $m" "1f1b-m$m model 2 --micro-batches $m --schedule 1f1b"); done
CONFIGS+=("layer2 layer 2")
FIELDS="throughput bubble bubble_theory mem_peak mem_params bytes_per_step stage_bytes_per_step tp_bytes_per_step status"
run_one() { # appends the figures of FIELDS (status aside) to $TMP/<name>
    local name strategy devices opts
    read -r name strategy devices opts <<<"$1"
    # shellcheck disable=SC2086 # opts are words
    record_run --rows "$TMP/$name" --record "$TMP/$name-$ROUND.h5" --label "$(printf '%-12s' "$name")" \
        --fields "$FIELDS" -- "$MX" train --strategy "$strategy" --gpus "$devices" --threads-per-device 1 \
        --workload "$WORKLOAD" --dataset synthetic --batch "$BATCH" --lr 0.01 --steps $((STEPS + WARMUP)) \
        --warmup-steps "$WARMUP" $opts
}
echo
echo "runs: $ROUNDS round(s) of ${#CONFIGS[@]}; each round starts further along the list, odd rounds run it backwards"
interleave_rounds

# the bytes a row moved: the strategy's own (between stages, collectives) or the kvstore's
moved() { # file
    awk '{b = $6; if ($7 != "nan" && $7 > 0) b = $7; if ($8 != "nan" && $8 > 0) b = $8; print b}' "$1" >"$TMP/moved"
    med "$TMP/moved" 1
}
echo
echo "results: medians over $ROUNDS round(s); vs data = samples/s over data on 2 devices in the same round;"
echo "memory of the device holding most (allocator count); vs 1 = over data on 1 device in the same round"
printf '%-12s %10s %8s %8s %8s %9s %7s %9s %7s %9s\n' config samples/s "vs data" bubble theory "peak MB" "vs 1" \
    "param MB" "vs 1" "MB/step"
for c in "${CONFIGS[@]}"; do
    read -r name _ <<<"$c"
    f=$TMP/$name
    printf '%-12s %10s %8s %8s %8s %9s %7s %9s %7s %9s\n' "$name" "$(fmt %.1f "$(med "$f" 1)")" \
        "$(fmt %.3f "$(med_ratio "$f" 1 "$TMP/data2" 1 1)")" "$(fmt %.3f "$(med "$f" 2)")" "$(fmt %.3f "$(med "$f" 3)")" \
        "$(fmt %.1f "$(scale "$(med "$f" 4)" 1e-6)")" "$(fmt %.3f "$(med_ratio "$f" 4 "$TMP/data1" 4 1)")" \
        "$(fmt %.1f "$(scale "$(med "$f" 5)" 1e-6)")" "$(fmt %.3f "$(med_ratio "$f" 5 "$TMP/data1" 5 1)")" \
        "$(fmt %.3f "$(scale "$(moved "$f")" 1e-6)")"
done
echo "aims on 2 CPU workers: measured bubble within 0.05 of theory; layer's parameter memory per device at most 0.55 of one device's"
bench_end "$KEEP"
