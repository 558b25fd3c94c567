#!/usr/bin/env bash
# Performance benchmarks (figures, never pass/fail): sgemm ceiling, mxbench training throughput
# against it and against PyTorch, data-parallel scaling over CPU workers, and the convolution
# comparison (mxbench's im2col+sgemm vs oneDNN). Output: stdout and a copy under out/bench/.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
    cat <<EOF
usage: scripts/bench.sh [options]

Builds what it needs (mxbench into out/bench/build, the programs in bench/ into out/bench/),
then measures, on synthetic data, lenet (batch 128) and resnet18 (batch 32):
  - the sgemm ceiling of this machine on --threads threads (the faster of OpenBLAS and the
    engine's own GEMM, best of repeats; both are printed);
  - mxbench training throughput on 1 device with --threads threads, its GFLOP/s and the
    fraction of the ceiling; with PyTorch, the same models in PyTorch and the ratio;
  - data-parallel scaling 1 -> 2 CPU workers (1 thread each), kvstores local and device:
    throughput, efficiency thr(2)/(2 thr(1)), comm-compute overlap, bytes per step;
  - bench/layer_profile: per layer, forward and backward time, FLOPs, bytes moved (a traffic
    model: inputs, weights, outputs, im2col buffers), GFLOP/s and its fraction of the sgemm
    ceiling measured in the same run;
  - bench/gemm_bench: OpenBLAS's sgemm against the own f32 and bf16 GEMM kernels on the
    shapes lenet and resnet18 run;
  - bench/conv_bench: mxbench's convolution kernels against oneDNN, per layer shape, in f32
    and under AMP bf16 (--bf16: oneDNN's bf16 primitives).
Configurations run in --rounds rounds in ABBA order, so drift hits all alike; a throughput
is the global batch over the median of all its timed steps. Figures are noisy when other
processes run: the load average is printed with every section.

options:
  --threads N     threads for the 1-device runs, the ceiling and conv_bench (default: cores, $(nproc))
  --steps N       timed steps per resnet18 configuration over all rounds (default 20);
                  lenet gets 5x as many (its steps are ~30x shorter)
  --warmup N      untimed leading steps of every run (default 2)
  --rounds N      rounds the timed steps are split into (default 2)
  --torch         compare with PyTorch: use out/bench/venv or python3 if one
                  has torch, else create out/bench/venv and pip-install torch (minutes, GBs)
  --no-torch      skip PyTorch even where it is installed (default: use it if present)
  --no-conv       skip the convolution comparison
  --build-dir D   CMake build directory for mxbench (default out/bench/build)
  -h, --help      this text
EOF
}

THREADS=$(nproc)
STEPS=20
WARMUP=2
ROUNDS=2
TORCH=auto
CONV=1
BUILD=out/bench/build
OUT=out/bench

# shellcheck source=scripts/bench-lib.sh
source scripts/bench-lib.sh
while (($#)); do
    case $1 in
    --threads) need_int --threads "${2-}" 1; THREADS=$2; shift ;;
    --steps) need_int --steps "${2-}" 1; STEPS=$2; shift ;;
    --warmup) need_int --warmup "${2-}" 0; WARMUP=$2; shift ;;
    --rounds) need_int --rounds "${2-}" 1; ROUNDS=$2; shift ;;
    --torch) TORCH=yes ;;
    --no-torch) TORCH=no ;;
    --no-conv) CONV=0 ;;
    --build-dir) [[ -n ${2-} ]] || { echo "bench.sh: --build-dir needs a directory" >&2; exit 2; }; BUILD=$2; shift ;;
    -h | --help) usage; exit 0 ;;
    *) echo "bench.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    esac
    shift
done

RUNS=$OUT/runs
mkdir -p "$OUT" "$RUNS"
rm -f "$RUNS"/*
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
LOG=$OUT/bench-$STAMP.txt
ERR=$OUT/stderr-$STAMP.log
: >"$ERR"
exec > >(tee "$LOG")
TEE_PID=$!
ln -sfn "$(basename "$LOG")" "$OUT/latest.txt"
T_START=$(date +%s)

LOAD_MAX=0
section() { # title; also tracks the highest 1-minute load average seen, a hint of competing processes
    local l
    read -r l _ </proc/loadavg
    LOAD_MAX=$(awk -v a="$l" -v b="$LOAD_MAX" 'BEGIN {print (a > b ? a : b)}')
    printf '\n== %s   [load average %s]\n' "$1" "$(cut -d' ' -f1-3 /proc/loadavg)"
}
per_round() { echo $((($1 + ROUNDS - 1) / ROUNDS)); } # timed steps of one run

# ---------------------------------------------------------------- build
section "build"
BENCHES=(mxbench sgemm_ceiling model_flops layer_profile gemm_bench)
build_fail() {
    echo "bench.sh: building failed; the log is $OUT/build.log:" >&2
    tail -20 "$OUT/build.log" >&2
    exit 1
}
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >"$OUT/build.log" 2>&1 || build_fail
# conv_bench exists where the build has oneDNN (bench/CMakeLists.txt)
if ((CONV)); then
    if cmake --build "$BUILD" --target help 2>/dev/null | grep -q conv_bench; then
        BENCHES+=(conv_bench)
    else
        echo "conv_bench skipped: this build has no oneDNN (apt-get install libdnnl-dev)"
        CONV=0
    fi
fi
cmake --build "$BUILD" -j"$(nproc)" --target "${BENCHES[@]}" >>"$OUT/build.log" 2>&1 || build_fail
MX=$BUILD/harness/mxbench
for b in "${BENCHES[@]:1}"; do cp "$BUILD/bench/$b" "$OUT/$b"; done
HAVE_CONV=$CONV
echo "mxbench: $MX ($(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo ', with uncommitted changes'))"
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) cores; $STAMP"
echo "settings: --threads $THREADS --steps $STEPS (lenet $((5 * STEPS))) --warmup $WARMUP --rounds $ROUNDS"
env | grep -E '^(OMP|GOMP|OPENBLAS|KMP|DNNL|ONEDNN)_' | sed 's/^/environment: /' || true
declare -A FPS
while read -r _ wl f; do FPS[${wl#workload=}]=${f#forward_flops_per_sample=}; done < <("$OUT/model_flops" lenet resnet18)

# ---------------------------------------------------------------- PyTorch
TORCH_PY=
TORCH_WHY=
find_torch() {
    local py
    for py in "$OUT/venv/bin/python" "$(command -v python3 || true)"; do
        if [[ -n $py && -x $py ]] && "$py" -c 'import torch' >/dev/null 2>&1; then
            TORCH_PY=$py
            return 0
        fi
    done
    return 1
}
install_torch() {
    echo "PyTorch not found: creating $OUT/venv and installing torch (CPU wheels; this can take minutes)"
    local log=$OUT/torch-install.log
    if ! python3 -m venv "$OUT/venv" >"$log" 2>&1; then
        TORCH_WHY="python3 -m venv failed ($(tail -1 "$log"))"
        return 1
    fi
    if ! "$OUT/venv/bin/pip" install --index-url https://download.pytorch.org/whl/cpu torch >>"$log" 2>&1 &&
        ! "$OUT/venv/bin/pip" install torch >>"$log" 2>&1; then
        TORCH_WHY="pip install torch failed ($(grep -m1 -E 'ERROR|error' "$log" || tail -1 "$log")); log: $log"
        return 1
    fi
    find_torch || { TORCH_WHY="torch installed but does not import; log: $log"; return 1; }
}
case $TORCH in
no) TORCH_WHY="--no-torch" ;;
auto) find_torch || TORCH_WHY="not installed (pass --torch to install it into $OUT/venv)" ;;
yes) find_torch || install_torch || true ;;
esac
if [[ -n $TORCH_PY ]]; then
    echo "PyTorch: $("$TORCH_PY" -c 'import torch; print(torch.__version__)' 2>/dev/null) ($TORCH_PY)"
else
    echo "PyTorch skipped: $TORCH_WHY"
fi

# ---------------------------------------------------------------- helpers
# Every run appends to $RUNS/<key>.steps (timed step times, s), .phases (data forward backward
# comm update, s), .comm (bytes_per_step comm_overlap) and keeps its summary line.
mx_run() { # key workload batch gpus threads_per_device kvstore timed_steps
    local key=$1 f=$RUNS/$1-$ROUND.h5 line
    rm -f "$f"
    # lr 0.01: on random labels resnet18 at the default 0.05 climbs until mxbench flags the run
    # diverged (exit 1); a step's cost does not depend on the lr
    if ! line=$("$MX" train --workload "$2" --dataset synthetic --batch "$3" --gpus "$4" --threads-per-device "$5" \
        --kvstore "$6" --lr 0.01 --steps $(($7 + WARMUP)) --warmup-steps "$WARMUP" --quiet --record "$f" 2>>"$ERR"); then
        echo "  $key: mxbench train failed; see $ERR"
        return 0
    fi
    printf '  %-22s round %d: %s\n' "$key" "$ROUND" "$(grep -o '[0-9.]* samples/s' <<<"$line")"
    h5dump -y -w 0 -m '%.9g' -o "$RUNS/tmp" -d /runs/r0000/step_time "$f" >/dev/null || : >"$RUNS/tmp"
    tr -s ', ' '\n\n' <"$RUNS/tmp" | grep . >>"$RUNS/$key.steps" || true # one value per line
    # one row per step, as many columns as the record has phases (results/metrics.def: data,
    # forward, backward, comm, update, then any added later)
    local ncol
    ncol=$(h5dump -H -d /runs/r0000/phase_time "$f" 2>/dev/null |
        sed -n 's/.*DATASPACE  SIMPLE { ( [0-9]*, \([0-9]*\) ).*/\1/p' | head -1)
    h5dump -y -w 0 -m '%.9g' -o "$RUNS/tmp" -d /runs/r0000/phase_time "$f" >/dev/null || : >"$RUNS/tmp"
    tr -s ', ' '\n\n' <"$RUNS/tmp" | grep . | awk -v n="${ncol:-5}" '{printf "%s%s", $1, NR % n ? " " : "\n"}' \
        >>"$RUNS/$key.phases" || true
    "$MX" report "$f" --format json 2>>"$ERR" |
        jq -r '.runs[0] | "\(.bytes_per_step // "nan") \(.comm_overlap // "nan")"' >>"$RUNS/$key.comm" ||
        echo "nan nan" >>"$RUNS/$key.comm"
}
torch_run() { # key model batch timed_steps
    local key=$1 line
    if ! line=$("$TORCH_PY" -W ignore "bench/torch_models.py" --model "$2" --batch "$3" --threads "$THREADS" \
        --steps "$4" --warmup "$WARMUP" 2>>"$ERR" | grep '^TORCH '); then
        echo "  $key: PyTorch run failed; see $ERR"
        return 0
    fi
    printf '  %-22s round %d: %s samples/s\n' "$key" "$ROUND" "$(sed 's/.*samples_per_s=\([^ ]*\).*/\1/' <<<"$line")"
    sed 's/.*step_times=//' <<<"$line" | tr ',' '\n' | grep . >>"$RUNS/$key.steps" || true
}
median_of() { # file -> median of its numbers, or nan
    [[ -s $1 ]] || { echo nan; return; }
    sort -g "$1" | awk '{v[NR] = $1} END {print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'
}
thr() { # key batch -> samples/s from the median step time
    local m
    m=$(median_of "$RUNS/$1.steps")
    awk -v m="$m" -v b="$2" 'BEGIN {print (m == "nan" || m <= 0) ? "nan" : b / m}'
}
phases_ms() { # key -> median ms of forward, backward, comm, update
    [[ -s $RUNS/$1.phases ]] || { echo "nan nan nan nan"; return; }
    local c out=""
    for c in 2 3 4 5; do
        out+="$(awk -v c=$c '{print $c}' "$RUNS/$1.phases" | sort -g |
            awk '{v[NR] = $1} END {printf "%.1f", 1e3 * (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2)}') "
    done
    echo "$out"
}
comm_mean() { # key column(1 bytes, 2 overlap) -> mean over rounds
    [[ -s $RUNS/$1.comm ]] || { echo nan; return; }
    awk -v c="$2" '$c != "nan" && $c != "null" {s += $c; n++} END {print n ? s / n : "nan"}' "$RUNS/$1.comm"
}
pct() { awk -v x="$1" 'BEGIN {print x == "nan" ? "nan" : 100 * x}'; }
fmt() { # printf format, value (nan stays as n/a)
    if [[ $2 == nan || $2 == -nan || -z $2 ]]; then printf "%s" "n/a"; else printf "$1" "$2"; fi
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {print (a == "nan" || b == "nan" || b == 0) ? "nan" : a / b}'; }

# ---------------------------------------------------------------- sgemm ceiling (first)
section "sgemm ceiling, $THREADS thread(s)"
"$OUT/sgemm_ceiling" "$THREADS" | tee "$RUNS/sgemm1.txt"
CEIL1=$(sed -n 's/^SGEMM_CEILING.*best_gflops=\([^ ]*\).*/\1/p' "$RUNS/sgemm1.txt")

# ---------------------------------------------------------------- training runs
# ABBA: the configurations of one workload run in order on even rounds, reversed on odd ones.
LENET_STEPS=$(per_round $((5 * STEPS)))
RESNET_STEPS=$(per_round "$STEPS")
configs() { # workload -> "kind key args..." lines
    local wl=$1 b s
    if [[ $wl == lenet ]]; then b=128 s=$LENET_STEPS; else b=32 s=$RESNET_STEPS; fi
    echo "mx $wl-mx-1dev $wl $b 1 $THREADS device $s"
    [[ -n $TORCH_PY ]] && echo "torch $wl-torch $wl $b $s"
    echo "mx $wl-g1t1 $wl $b 1 1 device $s"
    echo "mx $wl-g2-local $wl $b 2 1 local $s"
    echo "mx $wl-g2-device $wl $b 2 1 device $s"
}
section "training runs: $ROUNDS round(s) of $LENET_STEPS (lenet) / $RESNET_STEPS (resnet18) timed steps + $WARMUP warmup per run"
for ((ROUND = 0; ROUND < ROUNDS; ROUND++)); do
    for wl in lenet resnet18; do
        mapfile -t list < <(configs "$wl")
        if ((ROUND % 2)); then mapfile -t list < <(printf '%s\n' "${list[@]}" | tac); fi
        for c in "${list[@]}"; do
            read -r kind args <<<"$c"
            # shellcheck disable=SC2086
            if [[ $kind == mx ]]; then mx_run $args; else torch_run $args; fi
        done
    done
done

# ---------------------------------------------------------------- sgemm ceiling (again) and conv
section "sgemm ceiling again, $THREADS thread(s)"
"$OUT/sgemm_ceiling" "$THREADS" | tee "$RUNS/sgemm2.txt"
CEIL2=$(sed -n 's/^SGEMM_CEILING.*best_gflops=\([^ ]*\).*/\1/p' "$RUNS/sgemm2.txt")
CEIL=$(awk -v a="${CEIL1:-0}" -v b="${CEIL2:-0}" 'BEGIN {print (a > b ? a : b)}')

# the GEMMs themselves: OpenBLAS against the own kernels on the shapes the workloads run
section "GEMM kernels, $THREADS thread(s)"
"$OUT/gemm_bench" --threads "$THREADS" | tee "$RUNS/gemm.txt"

# where the time goes, per layer (the engine's own timeline events; ceiling measured inside)
section "per layer: lenet batch 128 and resnet18 batch 32, $THREADS thread(s)"
"$OUT/layer_profile" --workload lenet --batch 128 --threads "$THREADS" --steps $((5 * STEPS)) | tee "$RUNS/layers-lenet.txt"
echo
"$OUT/layer_profile" --workload resnet18 --batch 32 --threads "$THREADS" --steps "$STEPS" | tee "$RUNS/layers-resnet18.txt"

if ((HAVE_CONV)); then
    section "convolutions: mxbench's kernels vs oneDNN, $THREADS thread(s)"
    "$OUT/conv_bench" --threads "$THREADS" --reps 5 | tee "$RUNS/conv.txt" || echo "conv_bench failed"
    # mxbench's own kernels (MXBENCH_CONV=nodnnl): the engine itself takes oneDNN for the 3x3
    # shapes under AMP bf16, by this very comparison
    section "convolutions under AMP bf16: mxbench's own kernels vs oneDNN's bf16 primitives, $THREADS thread(s)"
    MXBENCH_CONV=nodnnl "$OUT/conv_bench" --threads "$THREADS" --reps 5 --bf16 | tee "$RUNS/conv-bf16.txt" ||
        echo "conv_bench --bf16 failed"
fi

# ---------------------------------------------------------------- tables
rm -f "$RUNS/tmp"
section "results"
echo "sgemm ceiling ($THREADS threads, best of 2 measurements): $CEIL GFLOP/s (before runs $CEIL1, after $CEIL2)"
echo
echo "1 device, $THREADS thread(s); throughput = batch / median step time; GFLOP/s = 3 x forward FLOPs x samples/s"
printf '%-9s %5s | %-10s %10s %8s %8s | %-26s | %10s %8s %9s\n' workload batch system samples/s GFLOP/s "%ceil" \
    "phases ms fwd/bwd/upd" "PyTorch/s" "mx/torch" "aim"
declare -A R
for wl in lenet resnet18; do
    if [[ $wl == lenet ]]; then b=128 aim=0.25; else b=32 aim=0.60; fi
    R[$wl-mx]=$(thr "$wl-mx-1dev" $b)
    R[$wl-torch]=$( [[ -n $TORCH_PY ]] && thr "$wl-torch" $b || echo nan)
    g=$(awk -v t="${R[$wl-mx]}" -v f="${FPS[$wl]}" 'BEGIN {print t == "nan" ? "nan" : 3 * f * t * 1e-9}')
    R[$wl-frac]=$(ratio "$g" "$CEIL")
    R[$wl-vs]=$(ratio "${R[$wl-mx]}" "${R[$wl-torch]}")
    read -r pf pb _ pu <<<"$(phases_ms "$wl-mx-1dev")"
    printf '%-9s %5d | %-10s %10s %8s %8s | %-26s | %10s %8s %9s\n' "$wl" $b mxbench "$(fmt %.1f "${R[$wl-mx]}")" \
        "$(fmt %.1f "$g")" "$(fmt %.1f%% "$(pct "${R[$wl-frac]}")")" "$pf / $pb / $pu" \
        "$(fmt %.1f "${R[$wl-torch]}")" "$(fmt %.2f "${R[$wl-vs]}")" ">$(pct $aim)% ceil"
    if [[ -n $TORCH_PY ]]; then
        gt=$(awk -v t="${R[$wl-torch]}" -v f="${FPS[$wl]}" 'BEGIN {print t == "nan" ? "nan" : 3 * f * t * 1e-9}')
        printf '%-9s %5d | %-10s %10s %8s %8s | %-26s | %10s %8s %9s\n' "$wl" $b PyTorch "$(fmt %.1f "${R[$wl-torch]}")" \
            "$(fmt %.1f "$gt")" "$(fmt %.1f%% "$(pct "$(ratio "$gt" "$CEIL")")")" "-" "" "" "mx/torch>=1"
    fi
done

echo
echo "data parallel, CPU workers with 1 thread each, same global batch; efficiency = thr(2) / (2 x thr(1))"
printf '%-9s %5s %-8s | %10s %10s %6s | %8s %12s | %-22s\n' workload batch kvstore "1w samp/s" "2w samp/s" effic \
    overlap "MB/step" "2w phases ms f/b/comm"
for wl in lenet resnet18; do
    if [[ $wl == lenet ]]; then b=128; else b=32; fi
    t1=$(thr "$wl-g1t1" $b)
    for kv in local device; do
        t2=$(thr "$wl-g2-$kv" $b)
        e=$(awk -v a="$t2" -v b="$t1" 'BEGIN {print (a == "nan" || b == "nan" || b == 0) ? "nan" : a / (2 * b)}')
        R[$wl-eff-$kv]=$e
        R[$wl-ovl-$kv]=$(comm_mean "$wl-g2-$kv" 2)
        mb=$(awk -v x="$(comm_mean "$wl-g2-$kv" 1)" 'BEGIN {print x == "nan" ? "nan" : x / 1e6}')
        read -r pf pb pc _ <<<"$(phases_ms "$wl-g2-$kv")"
        printf '%-9s %5d %-8s | %10s %10s %6s | %8s %12s | %-22s\n' "$wl" $b "$kv" "$(fmt %.1f "$t1")" "$(fmt %.1f "$t2")" \
            "$(fmt %.3f "$e")" "$(fmt %.3f "${R[$wl-ovl-$kv]}")" "$(fmt %.2f "$mb")" "$pf / $pb / $pc"
    done
done

if ((HAVE_CONV)) && [[ -s $RUNS/conv.txt ]]; then
    echo
    echo "convolutions of one training step (from conv_bench above; speed relative to mxbench)"
    printf '%-9s | %10s %10s %10s %10s | %8s %8s %8s\n' workload "mx GF/s" "onednn" "core" "nchw" "onednn x" "core x" "nchw x"
    while read -r line; do
        get() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$line"; }
        m=$(get mxbench_ms) d=$(get onednn_ms) c=$(get onednn-core_ms) n=$(get onednn-nchw_ms)
        wl=$(get model)
        R[$wl-conv]=$(ratio "$m" "$d")
        printf '%-9s | %10s %10s %10s %10s | %7.2fx %7.2fx %7.2fx\n' "$wl" "$(get mxbench_gflops)" "$(get onednn_gflops)" \
            "$(get onednn-core_gflops)" "$(get onednn-nchw_gflops)" "$(ratio "$m" "$d")" "$(ratio "$m" "$c")" "$(ratio "$m" "$n")"
    done < <(grep '^CONV_TOTAL' "$RUNS/conv.txt")
fi

echo
echo "summary against the aims (figures, not a verdict: rerun on a quiet machine before concluding)"
printf '%-44s %10s %10s   %s\n' "figure" lenet resnet18 aim
row() { printf '%-44s %10s %10s   %s\n' "$1" "$(fmt "$2" "${R[lenet-$3]:-nan}")" "$(fmt "$2" "${R[resnet18-$3]:-nan}")" "$4"; }
row "mxbench 1 device, samples/s" %.1f mx ""
row "fraction of sgemm ceiling" %.3f frac "lenet > 0.25, resnet18 > 0.60"
row "mxbench / PyTorch throughput" %.2f vs ">= 1.0"
row "DP efficiency, 2 workers, kvstore local" %.3f eff-local "resnet18 >= 0.85"
row "DP efficiency, 2 workers, kvstore device" %.3f eff-device "resnet18 >= 0.85"
row "comm-compute overlap, local" %.3f ovl-local ""
row "comm-compute overlap, device" %.3f ovl-device ""
((HAVE_CONV)) && row "conv step time mxbench / oneDNN (>1: oneDNN faster)" %.2f conv ""
echo
echo "total time $(($(date +%s) - T_START)) s; load average now $(cut -d' ' -f1-3 /proc/loadavg), highest seen $LOAD_MAX"
if awk -v l="$LOAD_MAX" -v n="$(nproc)" 'BEGIN {exit !(l > n + 0.5)}'; then
    echo "warning: the load average exceeded the $(nproc) cores: other processes competed for them, and multi-thread"
    echo "         figures (ceiling, 2-thread runs, scaling) are then far below what this machine does when quiet"
fi
echo "this output: $LOG (also $OUT/latest.txt); runs (HDF5, step times): $RUNS/; stderr of the runs: $ERR"
exec >&-
wait "$TEE_PID" 2>/dev/null || true
