#!/usr/bin/env bash
# Installs what is missing, builds with warnings as errors, and runs the whole CTest suite;
# then the instruction-count regression gate (scripts/ci-regress.sh: a fixed study counted
# under cachegrind against results/baseline-counts.h5, and a deliberate regression caught),
# the sanitizer build (scripts/sanitize.sh: unit tests and CLI error cases under ASan
# and UBSan) and each fuzz target for MXBENCH_FUZZ_SECONDS (30) seconds (scripts/fuzz.sh).
# Extra arguments go to ctest (e.g. -L unit, -R test_layers) and then only the CTest suite
# runs: a narrowed run is for a developer, the whole one for CI.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh -DMXBENCH_WERROR=ON
(cd build && ctest --output-on-failure --timeout 900 "$@")
[ $# -eq 0 ] || exit 0
t=$(date +%s)
scripts/ci-regress.sh
echo "test.sh: instruction-count gate $(($(date +%s) - t)) s"
t=$(date +%s)
scripts/sanitize.sh
echo "test.sh: sanitizer step $(($(date +%s) - t)) s"
t=$(date +%s)
scripts/fuzz.sh "${MXBENCH_FUZZ_SECONDS:-30}"
echo "test.sh: fuzzing step $(($(date +%s) - t)) s"
