#!/usr/bin/env bash
# Installs the Debian 12 packages mxbench builds, tests and runs with (only those missing).
# As root it runs apt-get; otherwise it prints the exact command to run and fails.
# --browser adds Chromium, for tests/test_browser.sh (the HTML report rendered headless; the
# test is skipped without it, so neither CI nor the demo installs it).
# --slurm adds Slurm's controller, node daemon and client, for tests/test_sweep_slurm.sh (the
# sweep inside an allocation of a one-node Slurm the test starts with a configuration of its
# own); scripts/test.sh passes it, the demo does not. Where systemd runs services, Debian's
# packages enable slurmd, slurmctld and munge, which start idle without a cluster's
# configuration: `systemctl disable --now slurmd slurmctld` if that is unwanted.
# usage: install-deps.sh [--browser] [--slurm]
set -euo pipefail
browser=0 slurm=0
for arg in "$@"; do
  case $arg in
    --browser) browser=1 ;;
    --slurm) slurm=1 ;;
    *) echo "install-deps.sh: unknown argument '$arg'; accepted: --browser, --slurm" >&2; exit 2 ;;
  esac
done

PACKAGES=(
  build-essential cmake pkg-config git
  libopenblas-openmp-dev   # BLAS (OpenMP build: one thread pool with mxbench's kernels)
  libdnnl-dev              # oneDNN: 3x3 convolutions under AMP bf16 (OpenMP build, as above)
  zlib1g-dev               # gzip'd IDX files
  libhdf5-dev hdf5-tools   # results store; h5dump
  gnuplot-nox              # plots (pngcairo, svg)
  libopenmpi-dev openmpi-bin   # dist_* kvstores and MPI tests
  dataset-fashion-mnist    # the default dataset
  fortunes                 # English text: the language models' default data
  valgrind                 # mxbench count (cachegrind): the CI's instruction-count gate
  # scripts/fuzz.sh: clang, libFuzzer and the sanitizer runtimes (libclang-rt), clang's
  # OpenMP (libomp), llvm-symbolizer for readable stacks (llvm). gcc's ASan/UBSan runtimes
  # for scripts/sanitize.sh come with build-essential (libasan8, libubsan1).
  clang-14 libclang-rt-14-dev libomp-14-dev llvm-14
)
((browser)) && PACKAGES+=(chromium) # headless rendering of the HTML report (tests/test_browser.sh)
((slurm)) && PACKAGES+=(slurmctld slurmd slurm-client) # a one-node Slurm (tests/test_sweep_slurm.sh)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
  echo "mxbench needs these Debian packages; run as root:" >&2
  echo "  apt-get update && apt-get install -y ${missing[*]}" >&2
  exit 1
fi
echo "installing: ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
