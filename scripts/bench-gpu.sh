#!/usr/bin/env bash
# The CUDA backend's checks and measurements in one run, for a machine with a GPU (a bundle
# from scripts/bundle.sh --with-tests carries the build there; no package is installed):
#  1. the GPU, its driver, and `mxbench info`;
#  2. the gpu-labelled tests: test_cuda_ops (every op against the CPU backend) and
#     test_cuda_train (20 steps against the CPU, logical devices, AMP accuracy);
#  3. the large-GEMM ceiling through the backend (bench/gpu_gemm_ceiling: f32, TF32, bf16, fp16);
#  4. resnet18 on Fashion-MNIST, batch 256, lr 0.1, --epochs E: mxbench --device cuda next to
#     PyTorch eager (bench/torch_gpu_epoch.py, the same model, recipe and data) in f32, TF32,
#     bf16 and fp16 AMP, alternated in ROUNDS rounds (the order reversed every other round);
#  5. a sweep --gpus 1,2 --oversubscribe (lenet, one epoch), recorded as not a scaling result;
#  6. resnet18 for 40 steps with --record and --trace: the phases on the device's clock (OUT/phases.h5);
#  7. with --long-epochs N: resnet18 in f32 for N epochs, mxbench then PyTorch (accuracy after
#     a real training, seconds per epoch once warm).
# --parts 1,2,... runs only those parts (default 1-6).
# Every command has a time limit so that one hang costs only its own step; the log is OUT/log.
# usage: scripts/bench-gpu.sh [--bundle DIR] [--data DIR] [--epochs E] [--rounds R] [--long-epochs N] [--parts LIST] OUT
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
B=$here/bundle data=/usr/share/datasets/fashion-mnist epochs=1 rounds=2 long=0 parts=1,2,3,4,5,6 out=
while [ $# -gt 0 ]; do
    case $1 in
        --bundle) B=${2:?}; shift 2 ;;
        --data) data=${2:?}; shift 2 ;;
        --epochs) epochs=${2:?}; shift 2 ;;
        --rounds) rounds=${2:?}; shift 2 ;;
        --long-epochs) long=${2:?}; shift 2 ;;
        --parts) parts=${2:?}; shift 2 ;;
        -h|--help) sed -n '2,/^# usage/p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        -*) echo "bench-gpu.sh: unknown option '$1'" >&2; exit 2 ;;
        *) out=$1; shift ;;
    esac
done
[ -n "$out" ] || { sed -n 's/^# usage: //p' "$0" >&2; exit 2; }
[ -x "$B/mxbench" ] || { echo "bench-gpu.sh: no bundle at $B (scripts/bundle.sh --with-tests DIR)" >&2; exit 2; }
[ -d "$data" ] || { echo "bench-gpu.sh: no Fashion-MNIST directory at $data" >&2; exit 2; }
data=$(cd "$data" && pwd)
mkdir -p "$out"
exec > >(tee "$out/log") 2>&1
MX=$B/mxbench
# shellcheck source=/dev/null
. "$B/env.sh"
step() { echo; echo "==== $* ($(date +%T))"; }
part() { [[ ,$parts, == *",$1,"* ]] || { [ "$1" = 7 ] && [ "$long" -gt 0 ]; }; }

if part 1; then
step "1. the machine"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
"$MX" info | sed -n '/^libraries/,/^built/p'
lscpu | grep -m1 'Model name'
fi

if part 2; then
step "2. tests"
timeout 180 "$B/bin/test_cuda_ops"
echo "test_cuda_ops: exit $?"
MXBENCH_DATA=$data timeout 300 bash "$B/bin/test_cuda_train.sh" "$MX" "$here" "$B/bin"
echo "test_cuda_train: exit $?"
fi

if part 3; then
step "3. the GEMM ceiling"
timeout 60 "$B/bin/gpu_gemm_ceiling" 8192
fi

part 4 && step "4. resnet18 on Fashion-MNIST, batch 256, lr 0.1, $epochs epoch(s), $rounds round(s)"
configs=("f32" "tf32" "bf16" "fp16")
flags() { case $1 in f32) ;; tf32) echo --tf32 ;; bf16) echo --amp bf16 ;; fp16) echo --amp fp16 ;; esac; }
one() { # one FRAMEWORK CONFIG ROUND
    local f
    f=$(flags "$2")
    if [ "$1" = mxbench ]; then
        # shellcheck disable=SC2086
        timeout 150 "$MX" train --device cuda --workload resnet18 --data "$data" --batch 256 --lr 0.1 \
            --epochs "$epochs" $f 2>&1 | grep -v '^mxbench: ' | sed "s/^/MX $2 r$3: /"
    else
        # shellcheck disable=SC2086
        timeout 150 python3 "$here/bench/torch_gpu_epoch.py" --data "$data" --batch 256 --lr 0.1 \
            --epochs "$epochs" $f 2>&1 | sed "s/^/TORCH $2 r$3: /"
    fi
}
part 4 && for ((r = 0; r < rounds; r++)); do
    for i in 0 1 2 3; do
        c=${configs[$(( r % 2 ? 3 - i : i ))]}
        if ((r % 2)); then one torch "$c" "$r"; one mxbench "$c" "$r"; else one mxbench "$c" "$r"; one torch "$c" "$r"; fi
    done
done

if part 5; then
step "5. sweep --gpus 1,2 --oversubscribe"
timeout 240 "$MX" sweep --workload lenet --data "$data" --epochs 1 --gpus 1,2 --oversubscribe --out "$out/sweep.h5" --force
echo "sweep: exit $?"
timeout 30 "$MX" report "$out/sweep.h5" | head -6
fi
if part 6; then
step "6. phases on the device clock: resnet18, batch 256, 40 steps"
timeout 120 "$MX" train --device cuda --workload resnet18 --data "$data" --batch 256 --lr 0.1 --steps 40 \
    --warmup-steps 5 --record "$out/phases.h5" --force --trace "$out/trace.json"
echo "phases: exit $?"
fi
if part 7; then
step "7. resnet18, f32, $long epochs: mxbench, then PyTorch"
timeout 400 "$MX" train --device cuda --workload resnet18 --data "$data" --batch 256 --lr 0.1 --epochs "$long" 2>&1 |
    grep -v '^mxbench: ' | sed 's/^/MX f32 long: /'
timeout 400 python3 "$here/bench/torch_gpu_epoch.py" --data "$data" --batch 256 --lr 0.1 --epochs "$long" 2>&1 |
    sed 's/^/TORCH f32 long: /'
fi
step "done"
