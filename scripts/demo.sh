#!/usr/bin/env bash
# The main job: installs what is missing, builds, runs a scaling sweep of LeNet on
# Fashion-MNIST over 1 and 2 devices with both single-machine kvstores, draws the plots,
# and prints where the HDF5 file and the plots are.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
mx=build/harness/mxbench
out=${MXBENCH_DEMO_OUT:-out/demo}
mkdir -p "$out"
$mx info
echo
$mx sweep --strategies data --gpus 1,2 --kvstore local,device --batch-mode global --batch 128 \
          --workload lenet --epochs 1 --out "$out/sweep.h5" --force
echo
$mx plot "$out/sweep.h5" --out "$out/plots"
echo
echo "results: $out/sweep.h5   (h5dump -d /summary $out/sweep.h5; mxbench report $out/sweep.h5)"
echo "plots:   $out/plots/*.png and *.svg"
