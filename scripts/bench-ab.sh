#!/usr/bin/env bash
# A/B benchmark of the engine (figures, never pass/fail): builds a base revision and the
# working tree, then trains the same configurations with both binaries alternately, round
# after round (ABBA order), and prints the after/before throughput ratio of each with its
# spread over the rounds. Output: stdout and a copy under out/ab/.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
    cat <<EOF
usage: scripts/bench-ab.sh [options]

Builds --base (a git revision) into out/ab/base and the working tree into out/ab/new, then
measures on synthetic data, one binary after the other in every round:
  lenet (batch 128) and resnet18 (batch 32), on 1 device and on 2 CPU workers with the local
  and the device kvstore, one thread per device (so that the data-parallel efficiency
  thr(2) / (2 thr(1)) of each binary comes from the same runs).
A throughput is the global batch over the median timed step of a run (mxbench's own figure);
the ratio of a round is new/base; the table gives the median ratio over the rounds and its
range. Run it on a quiet machine: the load average is printed before and after.

options:
  --base REV      the revision to compare against (default HEAD)
  --rounds N      rounds (default 5)
  --lenet-steps N timed steps per lenet run (default 300; resnet18 gets N/20)
  --warmup N      untimed leading steps per run (default 3)
  --only LIST     comma list of configurations to run (names as in the table)
  -h, --help      this text
EOF
}

BASE=HEAD ROUNDS=5 LSTEPS=300 WARMUP=3 ONLY=""
# shellcheck source=scripts/bench-lib.sh
source scripts/bench-lib.sh
while (($#)); do
    case $1 in
    --base) BASE=${2:?--base needs a revision}; shift ;;
    --rounds) need_int --rounds "${2-}" 1; ROUNDS=$2; shift ;;
    --lenet-steps) need_int --lenet-steps "${2-}" 20; LSTEPS=$2; shift ;;
    --warmup) need_int --warmup "${2-}" 0; WARMUP=$2; shift ;;
    --only) ONLY=${2:?--only needs a list}; shift ;;
    -h | --help) usage; exit 0 ;;
    *) echo "bench-ab.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    esac
    shift
done
git rev-parse --verify -q "$BASE^{commit}" >/dev/null || { echo "bench-ab.sh: --base '$BASE' is not a revision" >&2; exit 2; }

OUT=out/ab
mkdir -p "$OUT"
LOG=$OUT/bench-ab.txt
exec > >(tee "$LOG") 2>&1
scripts/install-deps.sh

# ---- the two builds (Release, as users build; -march=native on both)
SRC=$OUT/base-src
rm -rf "$SRC"
git worktree prune
git worktree add -q --detach "$SRC" "$BASE"
trap 'git worktree remove --force "$SRC" 2>/dev/null || true' EXIT
echo "base: $(git -C "$SRC" log -1 --format='%h %s' | cut -c1-100)"
echo "new:  working tree on $(git log -1 --format='%h')$(git diff --quiet HEAD || echo ' (with uncommitted changes)')"
cmake -S "$SRC" -B "$OUT/base" -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF >/dev/null
cmake --build "$OUT/base" -j"$(nproc)" --target mxbench >/dev/null
cmake -S . -B "$OUT/new" -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF >/dev/null
cmake --build "$OUT/new" -j"$(nproc)" --target mxbench >/dev/null
BIN_base=$OUT/base/harness/mxbench BIN_new=$OUT/new/harness/mxbench

# name workload batch gpus threads kvstore steps
RSTEPS=$((LSTEPS / 20 > 5 ? LSTEPS / 20 : 5))
CONFIGS=(
    "lenet-1 lenet 128 1 1 device $LSTEPS"
    "lenet-2-local lenet 128 2 1 local $LSTEPS"
    "lenet-2-device lenet 128 2 1 device $LSTEPS"
    "resnet18-1 resnet18 32 1 1 device $RSTEPS"
    "resnet18-2-local resnet18 32 2 1 local $RSTEPS"
    "resnet18-2-device resnet18 32 2 1 device $RSTEPS"
)

# run BIN name workload batch gpus threads kvstore steps: prints the median samples/s
run() {
    local bin=$1
    shift
    # lr 0.01: resnet18 at 0.05 on random labels climbs until it is flagged diverged;
    # a step's cost does not depend on the lr
    train_throughput "$bin" --workload "$2" --dataset synthetic --batch "$3" --gpus "$4" --threads-per-device "$5" \
        --kvstore "$6" --steps $(($7 + WARMUP)) --warmup-steps "$WARMUP" --lr 0.01
}

declare -A RATIOS BASEV NEWV
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for ((r = 1; r <= ROUNDS; r++)); do
    for c in "${CONFIGS[@]}"; do
        read -r name rest <<<"$c"
        [ -n "$ONLY" ] && [[ ",$ONLY," != *",$name,"* ]] && continue
        # ABBA: the binary that goes first alternates from round to round
        if ((r % 2)); then order=(base new); else order=(new base); fi
        declare -A got=()
        for which in "${order[@]}"; do
            bin=BIN_$which
            # shellcheck disable=SC2086
            got[$which]=$(run "${!bin}" $name $rest)
        done
        ratio=$(awk -v a="${got[new]}" -v b="${got[base]}" 'BEGIN { if (b > 0 && a > 0) printf "%.4f", a / b; else print "nan" }')
        RATIOS[$name]+="$ratio "
        BASEV[$name]+="${got[base]} "
        NEWV[$name]+="${got[new]} "
        printf 'round %d  %-18s base %10s  new %10s  new/base %s\n' "$r" "$name" "${got[base]}" "${got[new]}" "$ratio"
    done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"

median() { tr ' ' '\n' | grep -v '^$' | grep -v nan | sort -g | awk '{v[NR]=$1} END {if (!NR) print "nan"; else if (NR%2) print v[(NR+1)/2]; else printf "%.4f\n", (v[NR/2]+v[NR/2+1])/2}'; }
range() { tr ' ' '\n' | grep -v '^$' | grep -v nan | sort -g | awk 'NR==1{lo=$1} {hi=$1} END {if (!NR) print "nan"; else printf "%s-%s\n", lo, hi}'; }
echo
printf '%-18s %12s %12s %10s %16s\n' configuration "base samp/s" "new samp/s" "new/base" "range (rounds)"
for c in "${CONFIGS[@]}"; do
    read -r name _ <<<"$c"
    [ -n "${RATIOS[$name]+x}" ] || continue
    printf '%-18s %12s %12s %10s %16s\n' "$name" "$(median <<<"${BASEV[$name]}")" "$(median <<<"${NEWV[$name]}")" \
        "$(median <<<"${RATIOS[$name]}")" "$(range <<<"${RATIOS[$name]}")"
done
# data-parallel efficiency 1 -> 2 devices, each binary: thr(2) / (2 thr(1)) from the medians
echo
for wl in lenet resnet18; do
    for kv in local device; do
        [ -n "${BASEV[$wl-1]+x}" ] && [ -n "${BASEV[$wl-2-$kv]+x}" ] || continue
        printf 'efficiency %-8s %-6s base %s  new %s\n' "$wl" "$kv" \
            "$(awk -v a="$(median <<<"${BASEV[$wl-2-$kv]}")" -v b="$(median <<<"${BASEV[$wl-1]}")" 'BEGIN{printf "%.3f", a/(2*b)}')" \
            "$(awk -v a="$(median <<<"${NEWV[$wl-2-$kv]}")" -v b="$(median <<<"${NEWV[$wl-1]}")" 'BEGIN{printf "%.3f", a/(2*b)}')"
    done
done
echo "(output also in $LOG)"
