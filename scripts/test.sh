#!/usr/bin/env bash
# Installs what is missing, builds with warnings as errors, checks the sources' layout first
# (scripts/check-format.sh: lines over 120 columns, tabs, trailing whitespace; it takes a
# moment), and runs the whole CTest suite; then the instruction-count regression gate
# (scripts/ci-regress.sh: a fixed study counted under cachegrind against
# results/baseline-counts.h5, and a deliberate regression caught), the sanitizer build
# (scripts/sanitize.sh: unit tests and CLI error cases under ASan and UBSan) and the fuzz
# targets for MXBENCH_FUZZ_SECONDS (90) seconds in all, shared among them (scripts/fuzz.sh).
# Every step runs even when one before it failed, and the summary at the end names each
# failure, so one broken test does not hide what the others would have found; the exit status
# is 1 when any step failed (only a failed install or build stops the script early: nothing
# after it could run).
# Extra arguments go to ctest (e.g. -L unit, -R test_layers) and then only the CTest suite
# runs: a narrowed run is for a developer, the whole one for CI.
set -uo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --slurm || exit 1 # the Slurm test's daemons too
scripts/build.sh -DMXBENCH_WERROR=ON || { echo "test.sh: the build failed: nothing was tested" >&2; exit 1; }

failed=()
step() { # NAME COMMAND...: runs one step, timed, and notes a failure without stopping
    local name=$1 t rc=0
    shift
    t=$(date +%s)
    "$@" || rc=$?
    if ((rc == 0)); then
        echo "test.sh: $name: ok ($(($(date +%s) - t)) s)"
    else
        echo "test.sh: $name: FAILED (exit $rc, $(($(date +%s) - t)) s)" >&2
        failed+=("$name (exit $rc)")
    fi
}
ctest_suite() { (cd build && ctest --output-on-failure --timeout 900 "$@"); }

if [ $# -eq 0 ]; then
    step "format check" scripts/check-format.sh
fi
step "CTest suite" ctest_suite "$@"
if [ $# -eq 0 ]; then
    step "instruction-count gate" scripts/ci-regress.sh
    step "sanitizer step" scripts/sanitize.sh
    step "fuzzing step" scripts/fuzz.sh "${MXBENCH_FUZZ_SECONDS:-90}"
fi

if [ ${#failed[@]} -gt 0 ]; then
    echo "test.sh: ${#failed[@]} step(s) failed:" >&2
    printf '  %s\n' "${failed[@]}" >&2
    exit 1
fi
echo "test.sh: every step passed"
