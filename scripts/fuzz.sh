#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz/) with clang into build-fuzz/ and runs them under
# ASan and UBSan, each starting from its seed corpus, for SECONDS in all (default 90), shared
# evenly: each target gets SECONDS / (number of targets), at least 1 s, so that adding a
# target does not lengthen the step. Prints per target the executions and coverage reached;
# exits 1 when a target crashed, with the crashing input saved under
# build-fuzz/crashes/<target>/ (copy it to tests/fuzz/regress/<target>/ to keep it as a
# regression test once understood).
# usage: scripts/fuzz.sh [SECONDS] [TARGET...]  (targets: fuzz_idx fuzz_tokens fuzz_results fuzz_opts)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
secs=${1:-90}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(fuzz_idx fuzz_tokens fuzz_results fuzz_opts)
per=$((secs / ${#targets[@]}))
[ "$per" -ge 1 ] || per=1
bdir=build-fuzz

cc=$(command -v clang-14 || command -v clang || true)
probe='int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { return d && n; }'
if [ -z "$cc" ] || ! printf '%s\n' "$probe" | "$cc" -x c -fsanitize=fuzzer - -o /dev/null 2>/dev/null; then
    echo "fuzz.sh: clang with libFuzzer is missing: apt-get install clang-14 libclang-rt-14-dev libomp-14-dev" >&2
    exit 1
fi

# Everything the targets link is instrumented for coverage (fuzzer-no-link) and checked by
# the sanitizers; only the target executables get libFuzzer's main (tests/fuzz/CMakeLists.txt).
# MPI, CUDA and oneDNN are left out: no target reaches them (and oneDNN's OpenMP runtime,
# gcc's, is not clang's).
t0=$(date +%s)
CC=$cc cmake -S . -B "$bdir" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS_DEBUG="-O1 -g" \
      -DMXBENCH_SANITIZE=fuzzer-no-link,address,undefined -DMXBENCH_MPI=OFF -DMXBENCH_CUDA=OFF -DMXBENCH_DNNL=OFF \
      -DMXBENCH_NATIVE=ON >/dev/null
cmake --build "$bdir" -j"$(nproc)" --target "${targets[@]}" >"$bdir/build.log" 2>&1 ||
    { tail -40 "$bdir/build.log"; echo "fuzz.sh: build failed" >&2; exit 1; }
echo "fuzz.sh: built ${targets[*]} in $(($(date +%s) - t0)) s"

sym=$(command -v llvm-symbolizer-14 || command -v llvm-symbolizer || true)
[ -n "$sym" ] && export ASAN_SYMBOLIZER_PATH=$sym
# leaks in our code fail (libFuzzer's -detect_leaks); see tests/fuzz/lsan.supp
export LSAN_OPTIONS="suppressions=$root/tests/fuzz/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"

# the targets' files; a crashed target cannot remove its own
shm=/dev/shm
[ -w "$shm" ] || shm=${TMPDIR:-/tmp}
MX_FUZZ_TMPDIR=$(mktemp -d "$shm/mxbench-fuzz.XXXXXX")
export MX_FUZZ_TMPDIR
trap 'rm -rf "$MX_FUZZ_TMPDIR"' EXIT

status=0
printf '%-14s %8s %12s %10s %8s %8s %s\n' target seconds executions exec/s cov corpus result
for t in "${targets[@]}"; do
    work=$bdir/work/$t crashes=$bdir/crashes/$t log=$bdir/$t.log
    mkdir -p "$work" "$crashes"
    dict=()
    [ -f "tests/fuzz/$t.dict" ] && dict=(-dict="tests/fuzz/$t.dict")
    # New inputs go to build-fuzz/work/<t> (the first corpus directory); the committed seeds
    # are only read. -close_fd_mask=3: the code under test prints its error messages and
    # tables; libFuzzer keeps its own output and the sanitizer reports on a copy of stderr.
    # -timeout: an input taking 10 s is a hang. -rss_limit_mb (and the malloc limit it
    # implies): a small input that makes the code allocate 2 GiB is a bug.
    # In CI (CI=true) a fixed seed: a submission is judged on the same exploration every
    # time; by hand, a fresh seed each run explores further.
    seed=()
    [ "${CI:-}" = true ] && seed=(-seed=1)
    rc=0
    "$bdir/tests/fuzz/$t" "${seed[@]}" -max_total_time="$per" -timeout=10 -rss_limit_mb=2048 -close_fd_mask=3 \
        -print_final_stats=1 -artifact_prefix="$crashes/" "${dict[@]}" "$work" "tests/fuzz/corpus/$t" \
        >"$log" 2>&1 || rc=$?
    last=$(grep -E '^#[0-9]+' "$log" | tail -1)
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
    cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
    corp=$(sed -n 's/.* corp: \([0-9]*\)\/.*/\1/p' <<<"$last")
    if [ $rc -eq 0 ]; then
        res=ok
    else
        res="CRASH (exit $rc): $(ls -t "$crashes" | head -1 | sed "s|^|$crashes/|")"
        status=1
    fi
    printf '%-14s %8s %12s %10s %8s %8s %s\n' "$t" "$per" "${execs:-?}" "${rate:-?}" "${cov:-?}" "${corp:-?}" "$res"
    # libomp registers each process in /dev/shm and a killed one leaves its entry behind
    pid=$(sed -n 's/^==\([0-9]*\)==.*/\1/p' "$log" | head -1)
    [ -n "$pid" ] && rm -f "/dev/shm/__KMP_REGISTERED_LIB_${pid}_0"
    if [ $rc -ne 0 ]; then
        grep -E -A30 'ERROR:|runtime error:|check failed|deadly signal' "$log" | head -60 | sed 's/^/    /'
        echo "    full log: $log"
    fi
done
echo "fuzz.sh: $(($(date +%s) - t0)) s"
exit $status
