#!/usr/bin/env bash
# Builds mxbench with AddressSanitizer and UndefinedBehaviorSanitizer (gcc) into build-asan/
# and runs under them: the unit tests (ctest -L unit, which includes the fuzz regression
# replays) and the CLI error cases (tests/test_cli.sh, tests/test_bad_data.sh when present,
# tests/test_bad_input.sh, tests/fuzz/cli_bad_inputs.sh). Any sanitizer report fails the step.
# Extra arguments go to the unit-test ctest (e.g. -R test_results).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
bdir=build-asan
t0=$(date +%s)

# -O1: the unit tests stay fast (test_strategies ~30 s) and stacks stay readable.
cmake -S . -B "$bdir" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS_DEBUG="-O1 -g" \
      -DMXBENCH_SANITIZE=address,undefined -DMXBENCH_WERROR=ON >/dev/null
cmake --build "$bdir" -j"$(nproc)"

# Options (docs/building-and-testing.md, "Sanitizers and fuzzing"):
# - exitcode=86: a sanitizer report gets its own exit status, so a CLI case that must exit 1
#   or 2 cannot mistake one for the expected refusal.
# - detect_leaks=1 with tests/fuzz/lsan.supp: leaks in our code fail; the suppressions list
#   only allocations made inside the uninstrumented libraries (OpenMP, OpenBLAS, HDF5, MPI).
# - max_allocation_size_mb=4096 with allocator_may_return_null=0: one allocation beyond 4 GiB
#   (a count nobody bounded, a file header believed) is a report with its stack, not a
#   machine swapping; no test needs that much.
# - detect_stack_use_after_return stays off: it costs time, and OpenMP's outlined regions
#   with gcc's libgomp give no false positives without it.
# - UBSan: print_stacktrace; halt_on_error (with -fno-sanitize-recover) ends the process at
#   the first report.
# The long equivalence runs of the unit tests take 3 steps here instead of 20
# (tests/check.h, check_long_steps): the sanitizers see every step's code in those.
export MXBENCH_TEST_SANITIZED=1
export ASAN_OPTIONS="exitcode=86:detect_leaks=1:max_allocation_size_mb=4096:allocator_may_return_null=0"
export UBSAN_OPTIONS="exitcode=86:print_stacktrace=1:halt_on_error=1"
export LSAN_OPTIONS="suppressions=$root/tests/fuzz/lsan.supp:print_suppressions=0"

status=0
cd "$bdir"
ctest -L unit --output-on-failure --timeout 900 "$@" || status=1
cd "$root"

mx=$root/$bdir/harness/mxbench
# The CLI scripts keep only the head of a command's stderr: reports go to files instead
# (log_path), one per process, printed here in full.
logs=$(mktemp -d "${TMPDIR:-/tmp}/mxbench-sanitize.XXXXXX")
trap 'rm -rf "$logs"' EXIT
export ASAN_OPTIONS="$ASAN_OPTIONS:log_path=$logs/report"
export UBSAN_OPTIONS="$UBSAN_OPTIONS:log_path=$logs/report"
# reports FROM: prints the sanitizer reports written since the last call, failing the step
reports() {
    for r in "$logs"/report*; do
        [ -e "$r" ] || continue
        cat "$r"
        echo "sanitize.sh: sanitizer report above, from $1"
        rm -f "$r"
        status=1
    done
}
for t in tests/test_cli.sh tests/test_bad_data.sh tests/test_bad_input.sh tests/fuzz/cli_bad_inputs.sh; do
    [ -f "$t" ] || continue
    echo "== sanitized: $t"
    rc=0
    bash "$t" "$mx" "$root" "$root/$bdir/tests" >"$logs/out" 2>&1 || rc=$?
    if [ $rc -eq 0 ] || [ $rc -eq 77 ]; then # 77: the script cannot run here
        tail -n 1 "$logs/out"
    else
        cat "$logs/out"
        echo "sanitize.sh: $t failed under the sanitizers (exit $rc)"
        status=1
    fi
    reports "$t"
done
# The dist_* kvstores as MPI jobs (every mode, several sessions, keys split over servers).
# Leaks are not checked here: Open MPI's components, unloaded at MPI_Finalize, leave
# allocations that LeakSanitizer can only attribute to an unknown module (none has a frame in
# mxbench's code); memory errors and undefined behaviour are.
if command -v mpirun >/dev/null 2>&1; then
    echo "== sanitized: dist_* jobs under mpirun"
    [ "$(id -u)" = 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    mpi=(mpirun --oversubscribe --mca btl self,tcp -x ASAN_OPTIONS -x UBSAN_OPTIONS)
    a=(train --workload mlp --dataset synthetic --steps 6 --quiet --repeat 2 --batch 16)
    saved=$ASAN_OPTIONS
    export ASAN_OPTIONS="${ASAN_OPTIONS/detect_leaks=1/detect_leaks=0}"
    for job in "-np 4 -- --kvstore dist_sync" "-np 3 -- --kvstore dist_async --servers 1" \
               "-np 4 -- --kvstore dist_device_sync --gpus 2" "-np 2 -- --kvstore dist_allreduce --bucket-mb 0.1" \
               "-np 5 -x MXNET_KVSTORE_BIGARRAY_BOUND=100 -- --kvstore dist_sync --servers 3"; do
        read -r -a launch <<<"${job%% -- *}"
        read -r -a opts <<<"${job##* -- }"
        rc=0
        "${mpi[@]}" "${launch[@]}" "$mx" "${a[@]}" "${opts[@]}" >"$logs/out" 2>&1 || rc=$?
        if [ $rc -ne 0 ]; then cat "$logs/out"; echo "sanitize.sh: mpirun ${job} failed (exit $rc)"; status=1; fi
        reports "mpirun ${job}"
    done
    echo "dist_* jobs: done"
    export ASAN_OPTIONS=$saved
fi
echo "sanitize.sh: $(($(date +%s) - t0)) s"
exit $status
