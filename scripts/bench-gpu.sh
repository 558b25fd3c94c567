#!/usr/bin/env bash
# The CUDA backend's checks and measurements in one run, for a machine with a GPU (a bundle
# from scripts/bundle.sh --with-tests --with-mpi carries the build and Open MPI's launcher there;
# no package is installed):
#  1. the GPU, its driver, and `mxbench info`;
#  2. the gpu-labelled tests: test_cuda_ops (every op against the CPU backend), test_cuda_seq
#     (the transformer's ops, AdamW, sumsq, the language model's loss against the CPU's),
#     test_comm_nccl (the nccl communicators against threads; nccl_mpi under mpirun -np 1 where
#     the machine has mpirun) and test_cuda_train (20 steps against the CPU, logical devices,
#     AMP accuracy, gpt-mini, the sweep's device choice; under MXBENCH_GPU=preview the dist_*
#     kvstores with 2 ranks sharing the GPU, where mpirun is there: the bundle's with --with-mpi);
#  3. the large-GEMM ceiling through the backend (bench/gpu_gemm_ceiling: f32, TF32, bf16, fp16);
#  4. resnet18 on Fashion-MNIST, batch 256, lr 0.1, --epochs E: mxbench --device cuda next to
#     PyTorch eager (bench/torch_gpu_epoch.py, the same model, recipe and data) in f32, TF32,
#     bf16 and fp16 AMP, alternated in ROUNDS rounds (the order reversed every other round);
#  5. a sweep --gpus 1,2 --oversubscribe (lenet, one epoch), recorded as not a scaling result;
#  6. resnet18 for 40 steps with --record and --trace: the phases on the device's clock (OUT/phases.h5);
#  7. with --long-epochs N: resnet18 in f32 for N epochs, mxbench then PyTorch (accuracy after
#     a real training, seconds per epoch once warm);
#  8. gpt2-124m at context 1024 under --amp bf16, batch --gpt-batch B (default 8), --gpt-steps S
#     (default 30, the first 5 left out of the timing), AdamW with --clip-norm 1 on synthetic
#     tokens: mxbench train --device cuda next to bench/torch_gpt.py (the same model in PyTorch,
#     bf16 autocast, flash attention through SDPA) in ROUNDS interleaved rounds; tokens/s and
#     MFU for each: FLOPs per token as mxbench counts them (its GFLOP/s over its tokens/s), over
#     --peak-tflops P (default: the GPU's dense bf16 datasheet figure, 989 for H100 and H200,
#     312 for A100; other GPUs need the option). Needs PyTorch with CUDA for its half.
# --parts 1,2,... runs only those parts (default 1-6 and 8). With a few minutes of GPU time:
# --parts 2,8 --rounds 1 (the tests, then one round of the GPT comparison: about 6 minutes).
# Every command has a time limit so that one hang costs only its own step; the log is OUT/log.
# usage: scripts/bench-gpu.sh [--bundle DIR] [--data DIR] [--epochs E] [--rounds R] [--long-epochs N] [--parts LIST]
#                             [--gpt-batch B] [--gpt-steps S] [--peak-tflops P] OUT
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
B=$here/bundle data=/usr/share/datasets/fashion-mnist epochs=1 rounds=2 long=0 parts=1,2,3,4,5,6,8 out=
gpt_batch=8 gpt_steps=30 peak=
isnum() { [[ $2 =~ ^[0-9]+([.][0-9]+)?$ ]] && [ "$(awk -v v="$2" 'BEGIN { print (v > 0) }')" = 1 ] ||
    { echo "bench-gpu.sh: $1 '$2': accepted a number above 0" >&2; exit 2; }; }
while [ $# -gt 0 ]; do
    case $1 in
        --bundle) B=${2:?}; shift 2 ;;
        --data) data=${2:?}; shift 2 ;;
        --epochs) epochs=${2:?}; shift 2 ;;
        --rounds) rounds=${2:?}; shift 2 ;;
        --long-epochs) long=${2:?}; shift 2 ;;
        --parts) parts=${2:?}; shift 2 ;;
        --gpt-batch) gpt_batch=${2:?}; isnum "$1" "$2"; shift 2 ;;
        --gpt-steps) gpt_steps=${2:?}; isnum "$1" "$2"; [ "$gpt_steps" -gt 5 ] 2>/dev/null ||
            { echo "bench-gpu.sh: --gpt-steps '$gpt_steps': accepted a whole number above 5 (5 warm-up steps)" >&2; exit 2; }
            shift 2 ;;
        --peak-tflops) peak=${2:?}; isnum "$1" "$2"; shift 2 ;;
        -h|--help) sed -n '2,/^# usage/p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        -*) echo "bench-gpu.sh: unknown option '$1'" >&2; exit 2 ;;
        *) out=$1; shift ;;
    esac
done
[ -n "$out" ] || { sed -n 's/^# usage: //p' "$0" >&2; exit 2; }
[ -x "$B/mxbench" ] || { echo "bench-gpu.sh: no bundle at $B (scripts/bundle.sh --with-tests --with-mpi DIR)" >&2; exit 2; }
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
timeout 120 "$B/bin/test_cuda_seq"
echo "test_cuda_seq: exit $?"
timeout 120 "$B/bin/test_comm_nccl"
echo "test_comm_nccl: exit $?"
if command -v mpirun >/dev/null 2>&1; then # kind nccl_mpi, as the one rank of an MPI job
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout 120 mpirun -np 1 "$B/bin/test_comm_nccl"
    echo "test_comm_nccl_mpi: exit $?"
else
    echo "test_comm_nccl_mpi: not run (no mpirun on this machine)"
fi
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
if part 8; then
step "8. gpt2-124m, context 1024, bf16, batch $gpt_batch, $gpt_steps steps, $rounds round(s)"
if [ -z "$peak" ]; then
    case $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1) in
        *H100* | *H200* | *GH200*) peak=989 ;;
        *A100*) peak=312 ;;
        *) echo "part 8: no datasheet peak for this GPU: MFU needs --peak-tflops" ;;
    esac
fi
fpt= # FLOPs per token, mxbench's count, from its first run
gpt_one() { # gpt_one FRAMEWORK ROUND
    local line tps
    if [ "$1" = mxbench ]; then
        line=$(timeout 300 "$MX" train --device cuda --workload gpt2-124m --dataset synthetic --amp bf16 \
            --batch "$gpt_batch" --steps "$gpt_steps" --warmup-steps 5 --optimizer adamw --lr 3e-4 --clip-norm 1 \
            2>&1 | grep -v '^mxbench: ' | tail -1)
        echo "MX gpt2-124m r$2: $line"
        tps=$(sed -n 's/.* \([0-9.]*\) tokens\/s.*/\1/p' <<<"$line")
        local gf
        gf=$(sed -n 's/.* tokens\/s, \([0-9.]*\) GFLOP\/s.*/\1/p' <<<"$line")
        [ -z "$fpt" ] && [ -n "$tps" ] && [ -n "$gf" ] && fpt=$(awk -v g="$gf" -v t="$tps" 'BEGIN { print g * 1e9 / t }')
    else
        line=$(timeout 300 python3 "$here/bench/torch_gpt.py" --device cuda --workload gpt2-124m --data synthetic \
            --amp bf16 --sdpa flash --batch "$gpt_batch" --steps "$gpt_steps" --warmup 5 --optimizer adamw --lr 3e-4 \
            --clip-norm 1 --measure 2>&1 | tail -2 | grep '^GPTPEER')
        echo "TORCH gpt2-124m r$2: ${line:-no GPTPEER line (PyTorch with CUDA missing, or the run failed)}"
        tps=$(sed -n 's/.*tokens_per_s=\([0-9.]*\).*/\1/p' <<<"$line")
    fi
    [ -n "$tps" ] && [ -n "$fpt" ] && [ -n "$peak" ] &&
        awk -v f="$1" -v t="$tps" -v p="$fpt" -v k="$peak" -v r="$2" \
            'BEGIN { printf "GPT %s r%s: %.0f tokens/s, MFU %.1f%% (%.3g FLOPs/token of %g TFLOP/s bf16)\n", f, r, t, 100 * t * p / (k * 1e12), p, k }'
}
for ((r = 0; r < rounds; r++)); do
    if ((r % 2)); then gpt_one torch "$r"; gpt_one mxbench "$r"; else gpt_one mxbench "$r"; gpt_one torch "$r"; fi
done
fi
step "done"
