#!/usr/bin/env bash
# How well `mxbench ab` decides on this machine (a benchmark, not a test: figures, never
# pass/fail): TRIALS A/A trials (the same binary on both sides) and TRIALS trials with a
# calibrated slowdown on the new side (MXBENCH_TEST_SLOWDOWN, by default 0.1: every step takes
# 1/0.9 as long, throughput x 0.9; read by mxbench_hooked, mxbench with the test hooks of
# tests/hooks.c, which the build's tests folder holds), alternating, each `mxbench ab --rounds ROUNDS` at the
# threshold. Prints each trial's estimate, interval and verdict, and how often A/A was called
# "same" and the slowdown "regression". Run it on a quiet machine (uptime before and after).
# Output: stdout and out/ab-gate/bench-ab-gate.txt.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
    cat <<EOF2
usage: scripts/bench-ab-gate.sh [options] [-- TRAIN OPTIONS]
  --trials N      trials of each kind (default 20)
  --rounds N      rounds per trial (default 10)
  --slowdown F    the injected slowdown (default 0.1)
  --threshold T   ab's threshold (default 5%)
  --mxbench PATH  the binary (default build/harness/mxbench, built by scripts/build.sh)
  --hooked PATH   the same with the test hooks, run slowed on the new side (default
                  build/tests/mxbench_hooked, built with it)
TRAIN OPTIONS default to: --workload lenet --dataset synthetic --batch 64 --steps 80
--warmup-steps 5 --threads-per-device 1
EOF2
}
TRIALS=20 ROUNDS=10 SLOW=0.1 THRESHOLD=5% MX=build/harness/mxbench HOOKED=build/tests/mxbench_hooked
while (($#)); do
    case $1 in
    --trials) TRIALS=$2; shift ;;
    --rounds) ROUNDS=$2; shift ;;
    --slowdown) SLOW=$2; shift ;;
    --threshold) THRESHOLD=$2; shift ;;
    --mxbench) MX=$2; shift ;;
    --hooked) HOOKED=$2; shift ;;
    --) shift; break ;;
    -h | --help) usage; exit 0 ;;
    *) echo "bench-ab-gate.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    esac
    shift
done
CFG=("$@")
((${#CFG[@]})) || CFG=(--workload lenet --dataset synthetic --batch 64 --steps 80 --warmup-steps 5 --threads-per-device 1)
[ -x "$MX" ] || { echo "bench-ab-gate.sh: $MX is not built (scripts/build.sh)" >&2; exit 2; }
[ -x "$HOOKED" ] || { echo "bench-ab-gate.sh: $HOOKED is not built (scripts/build.sh builds it with the tests)" >&2; exit 2; }
MX=$(cd "$(dirname "$MX")" && pwd)/$(basename "$MX")
HOOKED=$(cd "$(dirname "$HOOKED")" && pwd)/$(basename "$HOOKED")

OUT=out/ab-gate
mkdir -p "$OUT"
exec > >(tee "$OUT/bench-ab-gate.txt") 2>&1
printf '#!/bin/sh\nMXBENCH_TEST_SLOWDOWN=%s exec "%s" "$@"\n' "$SLOW" "$HOOKED" >"$OUT/slow.sh"
chmod +x "$OUT/slow.sh"
echo "mxbench ab gate: $TRIALS A/A and $TRIALS slowdown-$SLOW trials, $ROUNDS rounds each, threshold $THRESHOLD"
echo "train ${CFG[*]}"
echo "before: $(uptime)"
same=0 flagged=0 aa_reg=0
printf '%-6s %-5s %-9s %-18s %s\n' trial kind estimate interval verdict
for ((t = 1; t <= TRIALS; t++)); do
    for kind in A/A slow; do
        new=$MX
        [ $kind = slow ] && new=$OUT/slow.sh
        rc=0
        "$MX" ab "$MX" "$new" --rounds "$ROUNDS" --threshold "$THRESHOLD" --quiet -- "${CFG[@]}" >"$OUT/trial.txt" 2>/dev/null || rc=$?
        line=$(grep '^new/base throughput' "$OUT/trial.txt" || echo "new/base throughput ? (exit $rc)")
        est=$(sed -n 's/^new\/base throughput \([0-9.]*\),.*/\1/p' <<<"$line")
        ci=$(sed -n 's/.*interval \(\[[^]]*\]\).*/\1/p' <<<"$line")
        verdict=$(sed -n 's/.*\]: \([^ ]*\) (threshold.*/\1/p' <<<"$line")
        printf '%-6s %-5s %-9s %-18s %s\n' "$t" "$kind" "${est:-?}" "${ci:-?}" "${verdict:-exit $rc}"
        if [ $kind = A/A ]; then
            [ "$verdict" = same ] && same=$((same + 1))
            [ "$verdict" = regression ] && aa_reg=$((aa_reg + 1))
        else
            [ "$verdict" = regression ] && flagged=$((flagged + 1))
        fi
    done
done
echo "after: $(uptime)"
echo "A/A called same: $same of $TRIALS (called a regression: $aa_reg); slowdown $SLOW called a regression: $flagged of $TRIALS"
