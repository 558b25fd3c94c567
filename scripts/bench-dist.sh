#!/usr/bin/env bash
# Distributed-training benchmark (figures, never pass/fail): 1 -> 2 worker scaling of every
# dist_* kvstore under mpirun, bytes per step, and the all-reduce path's bus bandwidth against
# a raw MPI_Allreduce of the same bytes (bench/comm_bench.c) measured in the same run.
# Output: stdout and a copy under out/bench-dist/.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
    cat <<EOF
usage: scripts/bench-dist.sh [options]

Builds mxbench and comm_bench (Release), then for each workload and kvstore mode trains on
synthetic data with 1 and with 2 workers (mpirun; each worker 1 device, 1 thread, its own
batch: lenet 64, resnet18 32, so the global batch doubles: weak scaling, as MXNet's per-device
batch). Parameter-server modes add as many server ranks as workers (or --servers S).
Every round runs each configuration once, the order rotating from round to round, plus, per
workload, comm_bench under mpirun -np 2: the mpi communicator's all-reduce and a raw
MPI_Allreduce of exactly the workload's dist_allreduce gradient buckets. It prints:
  - throughput (global samples/s, from the median step) of 1 and 2 workers, medians over the
    rounds; efficiency thr(2) / (2 x thr(1)), median of the per-round ratios;
  - net MB per step (worker 0's traffic, from the record);
  - dist_allreduce: busbw in training (nccl-tests definition), raw MPI_Allreduce busbw of the
    same bytes, their ratio (median of per-round ratios), and the comm-only ratio
    (mxbench's all-reduce / MPI_Allreduce, both isolated: the like-for-like figure).
All ranks run on this machine over TCP (--mca pml ob1 --mca btl self,tcp).

options:
  --rounds N        rounds (default $ROUNDS)
  --steps N         timed steps per lenet run (default $STEPS); resnet18 runs get N/5, at least 3
  --warmup N        untimed leading steps per run (default $WARMUP)
  --workloads LIST  comma list (default $WORKLOADS)
  --modes LIST      comma list of dist_sync, dist_device_sync, dist_async, dist_allreduce (default all)
  --servers S       server ranks of the parameter-server modes (default: as many as workers)
  --build DIR       CMake build directory (default $BUILD)
  --keep            keep the runs' records (printed at the end; default: removed)
  -h, --help        this text
EOF
}

ROUNDS=3 STEPS=100 WARMUP=3 WORKLOADS=lenet,resnet18 MODES=dist_sync,dist_device_sync,dist_async,dist_allreduce
BUILD=out/bench-dist/build SERVERS="" KEEP=0
# shellcheck source=scripts/bench-lib.sh
source scripts/bench-lib.sh
while (($#)); do
    case $1 in
    --rounds) need_int --rounds "${2-}" 1; ROUNDS=$2; shift ;;
    --steps) need_int --steps "${2-}" 1; STEPS=$2; shift ;;
    --warmup) need_int --warmup "${2-}" 0; WARMUP=$2; shift ;;
    --workloads) WORKLOADS=${2:?--workloads needs a list}; shift ;;
    --modes) MODES=${2:?--modes needs a list}; shift ;;
    --servers) need_int --servers "${2-}" 1; SERVERS=$2; shift ;;
    --build) BUILD=${2:?--build needs a directory}; shift ;;
    --keep) KEEP=1 ;;
    -h | --help) usage; exit 0 ;;
    *) echo "bench-dist.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    esac
    shift
done
IFS=, read -ra WLS <<<"$WORKLOADS"
IFS=, read -ra MDS <<<"$MODES"
for w in "${WLS[@]}"; do [[ $w =~ ^(lenet|resnet18|mlp)$ ]] || { echo "bench-dist.sh: workload '$w': expected lenet, resnet18 or mlp" >&2; exit 2; }; done
for m in "${MDS[@]}"; do [[ $m =~ ^dist_(sync|device_sync|async|allreduce)$ ]] || { echo "bench-dist.sh: mode '$m': expected a dist_* kvstore" >&2; exit 2; }; done
((${#WLS[@]} && ${#MDS[@]})) || { echo "bench-dist.sh: empty --workloads or --modes" >&2; exit 2; }
command -v mpirun >/dev/null || { echo "bench-dist.sh: mpirun not found (scripts/install-deps.sh installs Open MPI)" >&2; exit 1; }

OUT=out/bench-dist
mkdir -p "$OUT"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/bench-dist.XXXXXX")
((KEEP)) || trap 'rm -rf "$TMP"' EXIT
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
LOG=$OUT/bench-dist-$STAMP.txt ERR=$OUT/stderr-$STAMP.log
: >"$ERR"
exec > >(tee "$LOG") 2>&1
NCPU=$(nproc)
echo "uptime: $(uptime)"
high_load && echo "warning: load average $(load1) on $NCPU cores: other processes compete for the cores; rerun on a quiet machine"
if ! { cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release && cmake --build "$BUILD" -j"$NCPU" --target mxbench comm_bench; } >"$OUT/build.log" 2>&1; then
    echo "bench-dist.sh: building mxbench and comm_bench failed (comm_bench needs MPI); the log is $OUT/build.log:" >&2
    tail -20 "$OUT/build.log" >&2
    exit 1
fi
MX=$BUILD/harness/mxbench CB=$BUILD/bench/comm_bench
((EUID)) || export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# shellcheck disable=SC2054 # self,tcp is one argument
MPI=(mpirun --oversubscribe --mca pml ob1 --mca btl self,tcp)
echo "mxbench: $MX ($(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo ', with uncommitted changes'))"
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $NCPU cores; $(mpirun --version 2>&1 | head -1); $STAMP"
echo "transport: Open MPI pml ob1, btl self,tcp (mpirun ${MPI[*]:1}); every rank on this machine, so TCP through the kernel's network stack"
env | grep -E '^(OMP|GOMP|OPENBLAS|OMPI_MCA)_' | sed 's/^/environment: /' || true
RSTEPS=$((STEPS / 5 > 3 ? STEPS / 5 : 3))
echo "settings: --rounds $ROUNDS --steps $STEPS (resnet18 $RSTEPS) --warmup $WARMUP, 1 device x 1 thread per worker, lr 0.01"

batch_of() { [[ $1 == resnet18 ]] && echo 32 || echo 64; }
steps_of() { [[ $1 == resnet18 ]] && echo "$RSTEPS" || echo "$STEPS"; }
ranks_of() { # mode workers
    if [[ $1 == dist_allreduce ]]; then echo "$2"; else echo $(($2 + ${SERVERS:-$2})); fi
}
for m in "${MDS[@]}"; do
    r=$(ranks_of "$m" 2)
    if ((r > NCPU)); then
        echo "OVERSUBSCRIBED: $m with 2 workers runs $r ranks ($([[ $m == dist_allreduce ]] || echo "2 workers + ${SERVERS:-2} server(s)"))" \
            "on $NCPU cores: its figures carry server ranks competing with the workers for cores"
    fi
done

train_run() { # workload mode workers: appends "thr net_bytes busbw allreduce_time" to $TMP/<wl>-<mode>-<w>
    local wl=$1 m=$2 w=$3 key=$1-$2-$3 np
    np=$(ranks_of "$m" "$w")
    local extra=()
    [[ $m != dist_allreduce && -n $SERVERS ]] && extra=(--servers "$SERVERS")
    record_run --rows "$TMP/$key" --record "$TMP/$key-$ROUND.h5" \
        --label "$(printf '%-26s %d rank(s):' "$key" "$np")" \
        --fields "throughput net_bytes_per_step busbw allreduce_time status" -- \
        "${MPI[@]}" -np "$np" "$MX" train --kvstore "$m" --workload "$wl" --dataset synthetic \
        --batch "$(batch_of "$wl")" --gpus 1 --threads-per-device 1 --lr 0.01 --steps $(($(steps_of "$wl") + WARMUP)) \
        --warmup-steps "$WARMUP" "${extra[@]}"
}
comm_run() { # workload: appends "bytes calls mx_busbw mpi_busbw ratio" to $TMP/<wl>-comm
    local line
    if ! line=$("${MPI[@]}" -np 2 "$CB" 3 --workload "$1" 2>>"$ERR" | grep '^COMM_STEP'); then
        printf '  round %d %-26s failed; see %s\n' "$ROUND" "$1-comm_bench" "$ERR"
        echo "nan nan nan nan nan" >>"$TMP/$1-comm"
        return 0
    fi
    get() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$line"; }
    echo "$(get bytes) $(get calls) $(get mx_busbw) $(get mpi_busbw) $(get ratio)" >>"$TMP/$1-comm"
    printf '  round %d %-26s 2 rank(s): %s B in %s call(s), mx %.3f GB/s, MPI %.3f GB/s\n' "$ROUND" "$1-comm_bench" \
        "$(get bytes)" "$(get calls)" "$(awk -v x="$(get mx_busbw)" 'BEGIN {print x / 1e9}')" \
        "$(awk -v x="$(get mpi_busbw)" 'BEGIN {print x / 1e9}')"
}

CONFIGS=()
for wl in "${WLS[@]}"; do
    for m in "${MDS[@]}"; do CONFIGS+=("train $wl $m 1" "train $wl $m 2"); done
    [[ " ${MDS[*]} " == *" dist_allreduce "* ]] && CONFIGS+=("comm $wl")
done
N=${#CONFIGS[@]}
echo
echo "runs: $ROUNDS round(s) of $N; each round starts further along the list, odd rounds run it backwards"
run_one() { # one configuration of CONFIGS
    read -r kind args <<<"$1"
    # shellcheck disable=SC2086
    if [[ $kind == train ]]; then train_run $args; else comm_run $args; fi
}
interleave_rounds

echo
echo "results: medians over $ROUNDS round(s); efficiency = thr(2) / (2 x thr(1)); busbw in GB/s (2(n-1)/n x bytes / time);"
echo "train/raw = busbw of dist_allreduce in training over raw MPI_Allreduce of the same buckets; comm mx/raw: both isolated"
printf '%-9s %-17s %11s %11s %6s %8s %7s %8s %9s %8s %6s\n' workload mode "1w samp/s" "2w samp/s" effic "MB/step" \
    "busbw" "raw MPI" train/raw "comm/raw" ranks
for wl in "${WLS[@]}"; do
    for m in "${MDS[@]}"; do
        a=$TMP/$wl-$m-1 b=$TMP/$wl-$m-2 c=$TMP/$wl-comm
        bw=nan raw=nan tr=nan cr=nan
        if [[ $m == dist_allreduce ]]; then
            bw=$(med "$b" 3) raw=$(med "$c" 4) tr=$(med_ratio "$b" 3 "$c" 4 1) cr=$(med "$c" 5)
        fi
        np=$(ranks_of "$m" 2)
        printf '%-9s %-17s %11s %11s %6s %8s %7s %8s %9s %8s %6s\n' "$wl" "$m" "$(fmt %.1f "$(med "$a" 1)")" \
            "$(fmt %.1f "$(med "$b" 1)")" "$(fmt %.3f "$(med_ratio "$b" 1 "$a" 1 2)")" \
            "$(fmt %.3f "$(scale "$(med "$b" 2)" 1e-6)")" "$(fmt %.3f "$(scale "$bw" 1e-9)")" \
            "$(fmt %.3f "$(scale "$raw" 1e-9)")" "$(fmt %.3f "$tr")" "$(fmt %.3f "$cr")" "$np$( ((np > NCPU)) && echo '*')"
    done
done
echo "(* ranks > $NCPU cores: oversubscribed, --oversubscribe; server ranks compete with the workers for cores)"
if [[ " ${MDS[*]} " == *" dist_allreduce "* ]]; then
    for wl in "${WLS[@]}"; do
        awk '{print $3 * $4}' "$TMP/$wl-dist_allreduce-2" >"$TMP/bytes" # bus bytes per step = S x 2(n-1)/n, n = 2
        echo "$wl all-reduce bytes per step: training $(fmt %.6g "$(med "$TMP/bytes" 1)") (busbw x allreduce_time / (2(n-1)/n)," \
            "n = 2), comm_bench $(fmt %.0f "$(med "$TMP/$wl-comm" 1)") in $(fmt %.0f "$(med "$TMP/$wl-comm" 2)") call(s)"
    done
    echo "aim: train/raw >= 0.9. In training the all-reduce overlaps backward, which on $NCPU cores competes with it;"
    echo "comm/raw is the like-for-like figure of the communicator itself"
fi
bench_end "$KEEP"
