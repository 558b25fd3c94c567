#!/usr/bin/env bash
# Installs what is missing, builds with warnings as errors, and runs the whole CTest suite.
# Extra arguments go to ctest (e.g. -L unit, -R test_layers).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh -DMXBENCH_WERROR=ON
cd build
ctest --output-on-failure --timeout 900 "$@"
