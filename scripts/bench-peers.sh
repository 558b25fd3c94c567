#!/usr/bin/env bash
# mxbench against PyTorch and MXNet on the same training (figures, never pass/fail): lenet on
# Fashion-MNIST with one recipe (bench/peer_train.py says it in full), resnet18's steps on
# synthetic data (bench/torch_models.py, bench/mxnet_models.py), each in f32 and (--precisions
# f32,bf16) under bf16 AMP against PyTorch's CPU autocast, or a GPT workload's steps on
# text in f32 and bf16 against PyTorch (bench/torch_gpt.py, the same model, data and optimizer),
# or a GPT workload split over 2 CPU workers by --strategy layer (tensor parallelism; PyTorch's
# DTensor, bench/torch_gpt_tp.py) or --strategy model (a pipeline; torch.distributed.pipelining,
# bench/torch_gpt_pp.py), the same batch, epochs or steps and threads, every framework once per
# round, the order rotating. Prints every run, then per peer the median of the per-round
# throughput ratios mxbench/peer with their range, and the accuracies. A framework that is not
# installed is skipped with a message.
# Output: stdout and a copy under out/bench-peers/.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
    cat <<EOF2
usage: scripts/bench-peers.sh [options]

Trains with mxbench (one device, or GPUS with --strategy), PyTorch and MXNet 1.9.1, THREADS
threads each, ROUNDS rounds interleaved; the ratio mxbench/peer is taken within each round:
  lenet     Fashion-MNIST, EPOCHS epochs at batch BATCH (default 128); a run's throughput is
            its samples over its summed step times (evaluation left out; mxbench's aggregate
            figure), and its test accuracy is printed. Round r seeds every framework with r
            (initialisation and shuffling), so the accuracies compared are means over as many
            seeds as rounds, not one draw each;
  resnet18  synthetic data, STEPS timed steps after 3 untimed at batch BATCH (default 32), lr
            0.01; a run's throughput is the batch over its median step (mxbench's median
            figure, and the peers' scripts print the same).
  gpt-bench, gpt-mini
            the default text (/usr/share/games/fortunes/cookie) as bytes, STEPS timed steps
            after 3 untimed at batch BATCH (default 8), SGD (momentum 0.9, lr 0.05, cosine) from
            GPT-2's initialisation (PyTorch) and mxbench's; each of f32 and bf16 (mxbench --amp
            bf16, PyTorch's CPU autocast) against its like, in tokens/s: the batch's tokens
            over the median step. PyTorch only (MXNet has no such twin here).
  --strategy layer|model (gpt-* only)
            GPUS devices (CPU workers) of THREADS threads each (default 1): mxbench train
            --strategy S --gpus GPUS --threads-per-device THREADS against PyTorch's peer of that
            strategy in GPUS processes of THREADS threads (gloo), f32, in tokens/s (the batch's
            tokens over the median step, a step the slowest process's). Both start from the same
            weights: mxbench's initial weights of the run (one step with --save-init and
            --param-table before the rounds), which every peer run loads and checks its first
            loss against the single-process twin's on them (within 1e-4; a run that fails the
            check is left out, with a message).
            layer: Megatron-LM's split with DTensor (ColwiseParallel QKV by heads and first
              MLP linear, RowwiseParallel projection and second MLP linear; embedding, norms
              and the tied head replicated). GPUS must divide the heads.
            model: the blocks cut into GPUS stages with the embedding on the first and the
              final norm and head on the last (mxbench gets the same cut by --partition), each
              schedule of SCHEDULES (ScheduleGPipe, Schedule1F1B) over MICRO micro-batches
              (default mxbench's: 4 per stage, at most the batch; it must divide the batch);
              the tied head as a second copy on the last stage whose gradient is added to the
              embedding's, as mxbench does. mxbench-S is compared with torch-S.

The peers run from virtual environments under out/bench/: venv (torch) and venv-mxnet
(numpy 1.23.5, mxnet 1.9.1); --install creates what is missing from PyPI (minutes, GBs for
torch). A python3 on PATH that imports the framework is used otherwise.

options:
  --workload W      lenet, resnet18, gpt-bench or gpt-mini (default $WORKLOAD)
  --strategy S      gpt-*: one (one device, the default), layer or model
  --gpus N          --strategy layer|model: devices, processes of the peer (default 2)
  --schedules L     --strategy model: comma list of 1f1b, gpipe (default $SCHEDULES)
  --micro-batches M --strategy model: micro-batches per batch (default 4 per device, at most the batch)
  --rounds N        rounds (default $ROUNDS)
  --epochs N        lenet: epochs per run (default $EPOCHS)
  --steps N         resnet18, gpt-*: timed steps per run (default $STEPS)
  --batch N         batch (default 128 for lenet, 32 for resnet18, 8 for gpt-*)
  --threads N       threads of every framework (default $THREADS; per device with --strategy: 1)
  --frameworks L    comma list of torch, mxnet (default $FRAMEWORKS)
  --precisions L    lenet, resnet18: comma list of f32, bf16 (default $PRECISIONS); bf16 adds mxbench
                    --amp bf16 and PyTorch under CPU autocast (configs mxbench-bf16, torch-bf16),
                    compared with each other, and mxbench's bf16 over its f32 within each round
  --install         pip-install the missing frameworks into out/bench/
  --build DIR       CMake build directory (default $BUILD)
  -h, --help        this text
EOF2
}

WORKLOAD=lenet ROUNDS=3 EPOCHS=3 STEPS=20 BATCH="" THREADS=2 FRAMEWORKS=torch,mxnet INSTALL=0 PRECISIONS=f32
BUILD=out/bench-peers/build
STRATEGY=one GPUS=2 SCHEDULES=1f1b,gpipe MICRO="" THREADS_SET=0
# shellcheck source=scripts/bench-lib.sh
source scripts/bench-lib.sh
while (($#)); do
    case $1 in
    --workload) WORKLOAD=${2-}; shift ;;
    --rounds) need_int --rounds "${2-}" 1; ROUNDS=$2; shift ;;
    --steps) need_int --steps "${2-}" 1; STEPS=$2; shift ;;
    --epochs) need_int --epochs "${2-}" 1; EPOCHS=$2; shift ;;
    --batch) need_int --batch "${2-}" 1; BATCH=$2; shift ;;
    --threads) need_int --threads "${2-}" 1; THREADS=$2 THREADS_SET=1; shift ;;
    --strategy) STRATEGY=${2-}; shift ;;
    --gpus) need_int --gpus "${2-}" 1; GPUS=$2; shift ;;
    --schedules) SCHEDULES=${2:?--schedules needs a list}; shift ;;
    --micro-batches) need_int --micro-batches "${2-}" 1; MICRO=$2; shift ;;
    --frameworks) FRAMEWORKS=${2:?--frameworks needs a list}; shift ;;
    --precisions) PRECISIONS=${2:?--precisions needs a list}; shift ;;
    --install) INSTALL=1 ;;
    --build) BUILD=${2:?--build needs a directory}; shift ;;
    -h | --help) usage; exit 0 ;;
    *) echo "bench-peers.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    esac
    shift
done
GPT=0
case $WORKLOAD in
lenet | resnet18) ;;
gpt-bench | gpt-mini) GPT=1 ;;
*) echo "bench-peers.sh: --workload: '$WORKLOAD' is not accepted; choose lenet, resnet18, gpt-bench or gpt-mini" >&2
    exit 2 ;;
esac
[[ -n $BATCH ]] || case $WORKLOAD in lenet) BATCH=128 ;; resnet18) BATCH=32 ;; *) BATCH=8 ;; esac
for f in ${FRAMEWORKS//,/ }; do
    [[ $f == torch || $f == mxnet ]] ||
        { echo "bench-peers.sh: --frameworks: '$f' is not accepted; choose from torch, mxnet" >&2; exit 2; }
done
case $STRATEGY in
one) ;;
layer | model)
    ((GPT)) || { echo "bench-peers.sh: --strategy $STRATEGY: accepted with gpt-bench or gpt-mini only" >&2; exit 2; }
    ((THREADS_SET)) || THREADS=1
    declare -A HEADS=([gpt-mini]=4 [gpt-bench]=6) BLOCKS=([gpt-mini]=4 [gpt-bench]=6) # workloads/gpt.c
    if ((GPUS < 2)); then
        echo "bench-peers.sh: --gpus $GPUS: --strategy $STRATEGY needs 2 or more devices" >&2
        exit 2
    elif [[ $STRATEGY == layer ]] && ((HEADS[$WORKLOAD] % GPUS)); then
        echo "bench-peers.sh: --gpus $GPUS: the layer strategy needs a count that divides $WORKLOAD's" \
            "${HEADS[$WORKLOAD]} heads" >&2
        exit 2
    elif [[ $STRATEGY == model ]] && ((GPUS > BLOCKS[$WORKLOAD])); then
        echo "bench-peers.sh: --gpus $GPUS: the model strategy's peer needs a block per stage; $WORKLOAD has" \
            "${BLOCKS[$WORKLOAD]}" >&2
        exit 2
    fi
    if [[ $STRATEGY == model ]]; then
        [[ -n $MICRO ]] || MICRO=$((4 * GPUS < BATCH ? 4 * GPUS : BATCH)) # mx_pipeline_default_micro_batches
        if ((MICRO > BATCH || BATCH % MICRO)); then
            echo "bench-peers.sh: --micro-batches $MICRO: accepted a divisor of the batch ($BATCH): PyTorch's" \
                "schedules split a batch into micro-batches of one shape" >&2
            exit 2
        fi
    fi
    ;;
*) echo "bench-peers.sh: --strategy: '$STRATEGY' is not accepted; choose one, layer or model" >&2; exit 2 ;;
esac
for s in ${SCHEDULES//,/ }; do
    [[ $s == 1f1b || $s == gpipe ]] ||
        { echo "bench-peers.sh: --schedules: '$s' is not accepted; choose from 1f1b, gpipe" >&2; exit 2; }
done
BF16=0
for p in ${PRECISIONS//,/ }; do
    case $p in
    f32) ;;
    bf16) BF16=1 ;;
    *) echo "bench-peers.sh: --precisions: '$p' is not accepted; choose from f32, bf16" >&2; exit 2 ;;
    esac
done
[[ ,$PRECISIONS, == *,f32,* ]] ||
    { echo "bench-peers.sh: --precisions $PRECISIONS: f32 is needed (bf16 is compared with it)" >&2; exit 2; }
((BF16)) && ((GPT)) &&
    { echo "bench-peers.sh: --precisions: gpt-* runs f32 and bf16 always; the option is for lenet and resnet18" >&2
        exit 2; }

bench_start bench-peers 0

# ---- the peers' interpreters
declare -A PY=([torch]=out/bench/venv/bin/python [mxnet]=out/bench/venv-mxnet/bin/python)
declare -A MODULE=([torch]=torch [mxnet]=mxnet)
declare -A PIP_ARGS=([torch]="torch" [mxnet]="numpy==1.23.5 mxnet==1.9.1")
PEERS=()
for f in ${FRAMEWORKS//,/ }; do
    if ((GPT)) && [[ $f != torch ]]; then
        echo "$f: skipped, no twin of $WORKLOAD (bench/torch_gpt.py is PyTorch's)"
        continue
    fi
    py=${PY[$f]}
    if ! "$py" -c "import ${MODULE[$f]}" >/dev/null 2>&1; then
        if python3 -c "import ${MODULE[$f]}" >/dev/null 2>&1; then
            py=$(command -v python3)
        elif ((INSTALL)); then
            echo "installing $f into $(dirname "$(dirname "$py")") (PyPI; this can take minutes)"
            # shellcheck disable=SC2086 # the package list is a word list
            { python3 -m venv "$(dirname "$(dirname "$py")")" && "$(dirname "$py")/pip" install -q ${PIP_ARGS[$f]}; } \
                >>"$ERR" 2>&1 || true
        fi
    fi
    if "$py" -c "import ${MODULE[$f]}" >/dev/null 2>&1; then
        PY[$f]=$py
        PEERS+=("$f")
        echo "$f: $("$py" -c "import ${MODULE[$f]} as m; print(m.__version__)" 2>/dev/null) ($py)"
    else
        echo "$f: skipped, not installed (pip install ${PIP_ARGS[$f]}, or rerun with --install)"
    fi
done
if [[ $WORKLOAD == lenet ]]; then
    echo "lenet, Fashion-MNIST, $EPOCHS epoch(s), batch $BATCH, $THREADS thread(s), cosine lr from 0.05," \
        "${PRECISIONS//,/ and }; $ROUNDS round(s)"
elif [[ $STRATEGY != one ]]; then
    echo "$WORKLOAD, --strategy $STRATEGY on $GPUS CPU workers of $THREADS thread(s), text as bytes, $STEPS timed" \
        "steps after 3, batch $BATCH, f32$([[ $STRATEGY == model ]] && echo ", $MICRO micro-batches"); $ROUNDS round(s)"
elif ((GPT)); then
    echo "$WORKLOAD, text as bytes, $STEPS timed steps after 3, batch $BATCH, $THREADS thread(s), f32 and bf16;" \
        "$ROUNDS round(s)"
else
    echo "resnet18, synthetic, $STEPS timed steps after 3, batch $BATCH, $THREADS thread(s), lr 0.01," \
        "${PRECISIONS//,/ and }; $ROUNDS round(s)"
fi
declare -A PEER_SCRIPT=([torch]=bench/torch_models.py [mxnet]=bench/mxnet_models.py)

# ---- the runs: one line per run in $TMP/<framework>: throughput, accuracy, load before
run_one() { # config: a framework, -bf16 for its AMP (lenet, resnet18)
    local f=${1%-bf16} l line thr acc amp=off
    [[ $1 == *-bf16 ]] && amp=bf16
    l=$(load1)
    if [[ $STRATEGY != one ]]; then
        run_gpt_parallel "$1" "$l"
        return
    elif ((GPT)); then
        run_gpt "$1" "$l" # the config whole: run_gpt takes its -bf16 itself
        return
    elif [[ $WORKLOAD == resnet18 && $f == mxbench ]]; then
        thr=$(train_throughput "$MX" --workload resnet18 --dataset synthetic --batch "$BATCH" --steps "$STEPS" \
            --warmup-steps 3 --lr 0.01 --threads-per-device "$THREADS" --amp "$amp")
    elif [[ $WORKLOAD == resnet18 ]]; then
        line=$(OMP_NUM_THREADS=$THREADS "${PY[$f]}" -W ignore "${PEER_SCRIPT[$f]}" --model resnet18 --batch "$BATCH" \
            --threads "$THREADS" --steps "$STEPS" --warmup 3 --lr 0.01 --amp "$amp" 2>>"$ERR" |
            grep -E '^(TORCH|MXNET)') || line=""
        thr=$(sed -n 's/.*samples_per_s=\([0-9.]*\).*/\1/p' <<<"$line")
    elif [[ $f == mxbench ]]; then
        line=$("$MX" train --workload lenet --epochs "$EPOCHS" --batch "$BATCH" --threads-per-device "$THREADS" \
            --seed $((ROUND + 1)) --amp "$amp" --quiet 2>>"$ERR" | tail -1) || line=""
        thr=$(sed -n 's/.* \([0-9.]*\) aggregate.*/\1/p' <<<"$line")
        acc=$(sed -n 's/.*test acc \([0-9.]*\).*/\1/p' <<<"$line")
    else
        line=$(OMP_NUM_THREADS=$THREADS "${PY[$f]}" -W ignore bench/peer_train.py --framework "$f" --epochs "$EPOCHS" \
            --batch "$BATCH" --threads "$THREADS" --seed $((ROUND + 1)) --amp "$amp" 2>>"$ERR" | grep '^PEER') || line=""
        thr=$(sed -n 's/.*samples_per_s=\([0-9.]*\).*/\1/p' <<<"$line")
        acc=$(sed -n 's/.*test_acc=\([0-9.]*\).*/\1/p' <<<"$line")
    fi
    echo "${thr:-nan} ${acc:-nan} $l" >>"$TMP/$1"
    printf 'round %d  %-13s %10s samples/s  test acc %s  (load %s)\n' $((ROUND + 1)) "$1" \
        "$(fmt %.1f "${thr:-nan}")" "${acc:--}" "$l"
}
# ---- a GPT workload: one line per run in $TMP/<config>: tokens/s, load before; mxbench and
# torch each in f32 and bf16 (config mxbench-bf16, torch-bf16)
declare -A CONTEXTS=([gpt-mini]=64 [gpt-bench]=256) # tokens per sample (workloads/gpt.c)
CONTEXT=${CONTEXTS[$WORKLOAD]-}
run_gpt() { # config load
    local f=${1%-bf16} amp=off sps line
    [[ $1 == *-bf16 ]] && amp=bf16
    if [[ $f == mxbench ]]; then
        sps=$(train_throughput "$MX" --workload "$WORKLOAD" --batch "$BATCH" --steps $((STEPS + 3)) --warmup-steps 3 \
            --threads-per-device "$THREADS" --amp "$amp")
    else
        line=$(OMP_NUM_THREADS=$THREADS "${PY[$f]}" -W ignore bench/torch_gpt.py --measure --workload "$WORKLOAD" \
            --batch "$BATCH" --threads "$THREADS" --steps $((STEPS + 3)) --warmup 3 --amp "$amp" 2>>"$ERR" |
            grep '^GPTPEER') || line=""
        sps=$(sed -n 's/.*samples_per_s=\([0-9.]*\).*/\1/p' <<<"$line")
    fi
    local tps
    tps=$(scale "${sps:-nan}" "$CONTEXT")
    echo "$tps $2" >>"$TMP/$1"
    printf 'round %d  %-12s %10s tokens/s  (load %s)\n' $((ROUND + 1)) "$1" "$(fmt %.0f "$tps")" "$2"
}

# ---- a GPT workload over GPUS devices (--strategy layer|model): as run_gpt, f32; configs
# mxbench and torch (layer), mxbench-S and torch-S for each schedule S (model)
PEER_STRATEGY_SCRIPT=bench/torch_gpt_tp.py
[[ $STRATEGY == model ]] && PEER_STRATEGY_SCRIPT=bench/torch_gpt_pp.py
PARTITION=""
if [[ $STRATEGY != one ]]; then
    # the peer's cut (bench/torch_gpt_pp.py, mx_partition: L/k blocks a stage, the first L mod k
    # stages one more; the embedding on the first, the final norm and head on the last), given to
    # mxbench as top-level layers per stage so that both run the same stages
    if [[ $STRATEGY == model ]]; then
        for ((s = 0; s < GPUS; s++)); do
            n=$((BLOCKS[$WORKLOAD] / GPUS + (s < BLOCKS[$WORKLOAD] % GPUS ? 1 : 0)))
            ((s == 0)) && n=$((n + 1))
            ((s == GPUS - 1)) && n=$((n + 2))
            PARTITION+=${PARTITION:+,}$n
        done
    fi
    MX_PAR=(--workload "$WORKLOAD" --strategy "$STRATEGY" --gpus "$GPUS" --threads-per-device "$THREADS"
        --batch "$BATCH")
    [[ $STRATEGY == model ]] && MX_PAR+=(--partition "$PARTITION" --micro-batches "$MICRO")
    # mxbench's initial weights for this configuration, which every peer run starts from
    if ! "$MX" train "${MX_PAR[@]}" --steps 1 --save-init "$TMP/init" --param-table "$TMP/table" --quiet \
        >/dev/null 2>>"$ERR"; then
        echo "bench-peers.sh: mxbench train ${MX_PAR[*]} --steps 1 --save-init failed; see $ERR" >&2
        exit 1
    fi
    [[ $STRATEGY == model ]] && echo "stages: --partition $PARTITION (embedding with the first blocks, final norm" \
        "and head with the last)"
fi
run_gpt_parallel() { # config load
    local f=${1%%-*} sched="" sps line out
    [[ $1 == *-* ]] && sched=${1#*-}
    local sched_opt=()
    [[ -n $sched ]] && sched_opt=(--schedule "$sched")
    if [[ $f == mxbench ]]; then
        sps=$(train_throughput "$MX" "${MX_PAR[@]}" "${sched_opt[@]}" --steps $((STEPS + 3)) --warmup-steps 3)
    else
        local peer_opt=(--workload "$WORKLOAD" --procs "$GPUS" --threads "$THREADS" --batch "$BATCH")
        [[ $STRATEGY == model ]] && peer_opt+=(--micro-batches "$MICRO")
        out=$(OMP_NUM_THREADS=$THREADS "${PY[$f]}" -W ignore "$PEER_STRATEGY_SCRIPT" --measure "${peer_opt[@]}" \
            "${sched_opt[@]}" --steps $((STEPS + 3)) --warmup 3 --init "$TMP/init" --table "$TMP/table" 2>>"$ERR") ||
            true
        line=$(grep '^GPTPEER' <<<"$out") || line=""
        if ! grep -q '^CHECK ok' <<<"$out"; then
            echo "  round $((ROUND + 1)) $1: left out: $(grep '^CHECK' <<<"$out" || echo "the run failed; see $ERR")"
            line=""
        fi
        sps=$(sed -n 's/.*samples_per_s=\([0-9.]*\).*/\1/p' <<<"$line")
    fi
    local tps
    tps=$(scale "${sps:-nan}" "$CONTEXT")
    echo "$tps $2" >>"$TMP/$1"
    printf 'round %d  %-12s %10s tokens/s  (load %s)\n' $((ROUND + 1)) "$1" "$(fmt %.0f "$tps")" "$2"
}

CONFIGS=(mxbench "${PEERS[@]}")
# bf16: mxbench --amp bf16 and PyTorch's autocast (MXNet's bf16 AMP is not run here)
((BF16)) && [[ " ${PEERS[*]} " == *" torch "* ]] && CONFIGS+=(mxbench-bf16 torch-bf16)
((BF16)) && [[ " ${PEERS[*]} " != *" torch "* ]] && CONFIGS+=(mxbench-bf16)
((GPT)) && CONFIGS=(mxbench mxbench-bf16 "${PEERS[@]}" "${PEERS[@]/%/-bf16}")
if [[ $STRATEGY == model ]]; then
    CONFIGS=()
    for s in ${SCHEDULES//,/ }; do CONFIGS+=("mxbench-$s" "${PEERS[@]/%/-$s}"); done
elif [[ $STRATEGY == layer ]]; then
    CONFIGS=(mxbench "${PEERS[@]}")
fi
interleave_rounds
if ((GPT)); then
    echo
    printf '%-12s %12s | %-24s\n' config "tokens/s" "mxbench/config (range)"
    for f in "${CONFIGS[@]}"; do
        ratio=- range=
        mine=mxbench
        [[ $f == *-* ]] && mine=mxbench-${f#*-}
        if [[ $f != mxbench* ]]; then
            paste -d' ' "$TMP/$mine" "$TMP/$f" | awk '$1 != "nan" && $3 != "nan" && $3 > 0 {print $1 / $3}' >"$TMP/r-$f"
            ratio=$(fmt %.2f "$(med "$TMP/r-$f" 1)")
            range=$(sort -g "$TMP/r-$f" | awk 'NR == 1 {lo = $1} {hi = $1} END {if (NR) printf "[%.2f, %.2f]", lo, hi}')
        fi
        printf '%-12s %12s | %s %s\n' "$f" "$(fmt %.0f "$(med "$TMP/$f" 1)")" "$ratio" "$range"
    done
    if [[ $STRATEGY == one ]]; then
        echo "medians over the rounds; each ratio within a round, f32 against f32 and bf16 against bf16 (mxbench" \
            "--amp bf16: bf16 GEMMs, f32 master weights; PyTorch: CPU autocast)"
    else
        [[ $STRATEGY == model ]] && like=", a schedule against the same schedule" || like=""
        echo "medians over the rounds; each ratio within a round, $GPUS devices each side, f32$like"
    fi
    echo "uptime after: $(uptime)"
    exit 0
fi

# ---- summary
echo
# accuracy: the mean over the rounds (seeds) and its range
acc_stats() { awk '$2 != "nan" {s += $2; n++; lo = n == 1 || $2 < lo ? $2 : lo; hi = n == 1 || $2 > hi ? $2 : hi}
    END {if (n) printf "%.4f [%.4f, %.4f]", s / n, lo, hi; else printf "-"}' "$1"; }
# per-round ratios of config a over config b into $TMP/r-NAME; prints "median [lo, hi]"
round_ratio() { # a b name
    paste -d' ' "$TMP/$1" "$TMP/$2" | awk '$1 != "nan" && $4 != "nan" && $4 > 0 {print $1 / $4}' >"$TMP/r-$3"
    printf '%s %s' "$(fmt %.2f "$(med "$TMP/r-$3" 1)")" \
        "$(sort -g "$TMP/r-$3" | awk 'NR == 1 {lo = $1} {hi = $1} END {if (NR) printf "[%.2f, %.2f]", lo, hi}')"
}
printf '%-13s %12s %-26s | %-24s\n' config "samples/s" "test acc (mean, range)" "mxbench/config (range)"
for f in "${CONFIGS[@]}"; do
    ratio=-
    mine=mxbench
    [[ $f == *-bf16 ]] && mine=mxbench-bf16
    [[ $f != mxbench* ]] && ratio=$(round_ratio "$mine" "$f" "$f")
    printf '%-13s %12s %-26s | %s\n' "$f" "$(fmt %.1f "$(med "$TMP/$f" 1)")" "$(acc_stats "$TMP/$f")" "$ratio"
done
if ((BF16)); then
    echo "mxbench bf16 over its f32: $(round_ratio mxbench-bf16 mxbench bf16-f32); each ratio within a round, bf16" \
        "against bf16 (mxbench --amp bf16: bf16 GEMMs and convolutions, f32 master weights; PyTorch: CPU autocast)"
fi
if [[ $WORKLOAD == lenet ]]; then
    echo "throughput: medians over the rounds; accuracy after the last epoch, mean over the rounds' seeds 1..$ROUNDS" \
        "(each framework draws from its own generator, so one seed is not the same draw across frameworks)"
else
    echo "medians over the rounds (synthetic data: no accuracy)"
fi
echo "uptime after: $(uptime)"
