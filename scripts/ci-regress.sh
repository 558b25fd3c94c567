#!/usr/bin/env bash
# Regression tracking in CI by counted work, not time: a shared CI runner moves timings by
# 30% from one job to the next, while an instruction count under valgrind's cachegrind is the
# same on every run of the same binary and inputs. This script
#   1. builds mxbench without AVX-512 (valgrind 3.19 cannot run it) into build-count/,
#   2. counts the instructions per training step of a fixed short study (STUDY below) with
#      `mxbench count`, into out/ci-regress/counts.h5,
#   3. compares them with the committed baseline results/baseline-counts.h5 at a 1% threshold
#      (`mxbench compare --metrics instructions`): exit 1 on a regression,
#   4. checks the gate itself: the same study with a deliberate 10% regression in the GEMM
#      kernel (MXBENCH_TEST_SLOW_GEMM=0.1: every GEMM redoes a tenth of its rows; a variable
#      only mxbench_hooked reads, mxbench with the test hooks of tests/hooks.c, built beside
#      it) must be flagged, or the script fails.
# A change that makes a step cheaper passes; one meant to cost more updates the baseline:
#   scripts/ci-regress.sh --update     (then commit results/baseline-counts.h5)
# usage: scripts/ci-regress.sh [--update] [--no-self-check]
set -euo pipefail
cd "$(dirname "$0")/.."

UPDATE=0 SELF_CHECK=1
for a in "$@"; do
    case $a in
    --update) UPDATE=1 ;;
    --no-self-check) SELF_CHECK=0 ;;
    -h | --help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "ci-regress.sh: unknown option '$a' (--update, --no-self-check)" >&2; exit 2 ;;
    esac
done

BASELINE=results/baseline-counts.h5
OUT=out/ci-regress
BUILD=build-count
# The study: one device and one thread (threads that wait for each other spin for as long as
# the host decides, which no count can repeat), synthetic data, batch 32; each configuration
# costs 10-40 s under cachegrind.
STUDY=(
    "--workload mlp --dataset synthetic --batch 32"
    "--workload lenet --dataset synthetic --batch 32"
)

t0=$(date +%s)
# Compiled for Haswell (AVX2, FMA), as OpenBLAS is held to its Haswell kernels: valgrind 3.19
# cannot run AVX-512, and a build for generic x86-64 would count mxbench's own vector kernels
# as SSE2 pairs against OpenBLAS's AVX2, which is no machine anyone trains on.
# The tests' folder is configured for mxbench_hooked alone; no test is built.
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DMXBENCH_NATIVE=OFF -DBUILD_TESTING=ON \
    -DCMAKE_C_FLAGS="-march=haswell" >/dev/null
cmake --build "$BUILD" -j"$(nproc)" --target mxbench mxbench_hooked >/dev/null
MX=$BUILD/harness/mxbench HOOKED=$BUILD/tests/mxbench_hooked
echo "ci-regress: built $MX for Haswell (AVX2, no AVX-512) ($(($(date +%s) - t0)) s)"

count_study() { # FILE BINARY [env assignments]: counts every configuration of the study into FILE
    local file=$1 bin=$2
    shift 2
    rm -f "$file"
    for cfg in "${STUDY[@]:0:${NCONFIGS:-${#STUDY[@]}}}"; do
        # shellcheck disable=SC2086 # the configuration is a word list
        env "$@" "$bin" count --record "$file" -- $cfg
    done
}

mkdir -p "$OUT"
t0=$(date +%s)
count_study "$OUT/counts.h5" "$MX"
echo "ci-regress: counted the study in $(($(date +%s) - t0)) s"
if ((UPDATE)); then
    cp "$OUT/counts.h5" "$BASELINE"
    echo "ci-regress: $BASELINE updated; commit it"
    exit 0
fi
[ -f "$BASELINE" ] || { echo "ci-regress: no baseline $BASELINE: run scripts/ci-regress.sh --update and commit it" >&2; exit 2; }

# Counts do not depend on the host's vendor: under valgrind the program's cpuid is valgrind's
# own model of a Haswell (an Intel Core i7-4910MQ, with its caches) on every host with AVX2,
# an AMD EPYC as much as an Intel Xeon, so the C library picks the same memset and memcpy
# variants and thresholds, and OpenBLAS is pinned to its Haswell kernels. The baseline names
# the host it was counted on; a different host is said, as a note, not a failure.
cpu_of() { "$MX" report "$1" --format json | python3 -c 'import json,sys; print(json.load(sys.stdin)["meta"]["cpu_model"])'; }
base_cpu=$(cpu_of "$BASELINE") new_cpu=$(cpu_of "$OUT/counts.h5")
[ "$base_cpu" = "$new_cpu" ] ||
    echo "ci-regress: note: the baseline was counted on '$base_cpu', this run on '$new_cpu'; both ran as valgrind's Haswell, so the counts compare"
rc=0
"$MX" compare "$BASELINE" "$OUT/counts.h5" --metrics instructions --count-threshold 1% || rc=$?
if ((rc == 1)); then
    echo "ci-regress: FAILED: instructions per step grew beyond 1% of $BASELINE; if the change is meant," >&2
    echo "  run scripts/ci-regress.sh --update and commit $BASELINE" >&2
elif ((rc != 0)); then
    # compare's exit 2: no configuration matched, e.g. a record field added to the key
    echo "ci-regress: FAILED: mxbench compare could not match the counted runs with $BASELINE (exit $rc): their" >&2
    echo "  configuration keys differ (see above); if the change is meant, run scripts/ci-regress.sh --update" >&2
    echo "  and commit $BASELINE" >&2
    exit "$rc"
fi
"$MX" compare "$BASELINE" "$OUT/counts.h5" --metrics instructions --format md >"$OUT/compare.md"
"$MX" compare "$BASELINE" "$OUT/counts.h5" --metrics instructions --format json >"$OUT/compare.json"

if ((SELF_CHECK)); then
    t0=$(date +%s)
    # the first configuration is enough to show the gate catches a regression (the other's
    # count took 40 of the self-check's 81 s); compare lists the one not counted again
    NCONFIGS=1 count_study "$OUT/slow-gemm.h5" "$HOOKED" MXBENCH_TEST_SLOW_GEMM=0.1 >/dev/null
    src=0
    "$MX" compare "$BASELINE" "$OUT/slow-gemm.h5" --metrics instructions --count-threshold 1% >"$OUT/slow-gemm.txt" || src=$?
    sed 's/^/    | /' "$OUT/slow-gemm.txt"
    if ((src != 1)); then
        echo "ci-regress: FAILED: the gate let a deliberate 10% GEMM regression through (compare exit $src)" >&2
        exit 1
    fi
    echo "ci-regress: a deliberate 10% GEMM regression is caught ($(($(date +%s) - t0)) s)"
fi
echo "ci-regress: ok"
