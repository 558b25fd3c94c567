#!/usr/bin/env bash
# Gradient compression end to end through `mxbench train`:
#  1. the record: each compressor's bytes on the wire against uncompressed f32, exactly what
#     its payload holds (fp16 1/2, 2bit 4 bytes per 16 values, topk 8 bytes per value sent,
#     none 1), a compress phase and time, a residual norm for the error-feedback ones;
#  2. accuracy: lenet on Fashion-MNIST, 2 devices (device kvstore), 1 epoch: fp16 within 0.3
#     points of none, topk (ratio $RATIO) and 2bit (threshold $THRESHOLD, trained without
#     momentum at lr 0.5) within 2 points (see the measurements below);
#  3. dist_sync (2 workers, 2 servers) with each compressor runs and records the compressed
#     push bytes (when this build has MPI).
# usage: test_compression.sh MXBENCH SOURCE_DIR BUILD_DIR
set -u

MX=${1:?usage: test_compression.sh MXBENCH SOURCE_DIR BUILD_DIR}
# shellcheck source=tests/e2e-lib.sh
. "${2:?usage: test_compression.sh MXBENCH SOURCE_DIR BUILD_DIR}/tests/e2e-lib.sh" test_compression "$MX"

FASHION_DIR=/usr/share/datasets/fashion-mnist
# The settings of the accuracy checks (thresholds are in units of the step's summed gradient,
# as MXNet's). Measured on lenet, 1 epoch, 2 devices, lr 0.05, momentum 0.9, cosine schedule
# (none: 0.8780, 0.8793, 0.8708, 0.8694, 0.8723 for seeds 1-5); fp16 0.8792, 0.8818, 0.8715
# for seeds 1-3, and in this test's run 0.8783 against none's 0.8789: -0.06 to +0.25 points
# (at a constant lr it was -0.29 to +0.16, and rounding chaos reached -0.34 once).
# 2bit sends at most +-threshold per value and step and keeps the rest in its residual: a
# value held back goes out later as a run of quanta, and momentum 0.9 carries each on for
# about ten steps. With momentum, 2bit at MXNet's threshold 0.5 diverges, and the best setting
# found (threshold 4, lr 0.02) ends 3.8 to 7.1 points below none (seeds 1-3; thresholds from
# 0.01 to 32 and lrs from 0.0025 to 0.1 tried). Without momentum, at lr 0.5 (= 0.05 / (1 -
# 0.9), the same step in the long run), 2bit at MXNet's threshold 0.5 reaches 0.8778, 0.8793,
# 0.8788, 0.8761, 0.8763 (seeds 1-5): within 0.02 points of none's default recipe or above it
# (none at lr 0.5 without momentum, seed 1: 0.8607). So 2bit is checked without momentum, at
# lr 0.5, within 2 points of none's default recipe.
# topk keeps the default recipe: at 5% it reaches 0.8621, 0.8646, 0.8614 (seeds 1-3, 0.9 to
# 1.6 points below none); at 1% 0.8429, diverged, 0.8417. Without momentum at lr 0.5 it
# diverges at 5% (seeds 1-3) and at 1% reaches 0.8392, 0.8724, diverged.
THRESHOLD=0.5
RECIPE_2BIT="--lr 0.5 --momentum 0"
POINTS_2BIT=2
RATIO=0.05

settings() { # the compressor's own option
    case $1 in 2bit) echo "--threshold $THRESHOLD" ;; topk) echo "--topk-ratio $RATIO" ;; esac
}
recipe_of() { # the compressor's optimizer settings in the accuracy check
    case $1 in 2bit) echo "$RECIPE_2BIT" ;; esac
}

# ---- 1. the record (synthetic data, a few steps)
for gc in none fp16 2bit topk; do
    # shellcheck disable=SC2046
    run "rec-$gc" "$MX" train --workload lenet --dataset synthetic --steps 6 --gpus 2 --compression $gc \
        $(settings $gc) --record "$T/rec-$gc.h5" || continue
    ratio=$(attr "$T/rec-$gc.h5" wire_ratio) wire=$(attr "$T/rec-$gc.h5" wire_bytes_per_step)
    gctime=$(attr "$T/rec-$gc.h5" compress_time) resid=$(attr "$T/rec-$gc.h5" residual_norm)
    rec=$(attr "$T/rec-$gc.h5" compression)
    # lenet's keys: a packed payload rounds each key up to whole words (2bit) or values (topk)
    case $gc in
        none) lo=1 hi=1 ;;
        fp16) lo=0.5 hi=0.5 ;;
        2bit) lo=0.0625 hi=0.0640 ;;
        topk) lo=$(awk -v r="$RATIO" 'BEGIN { print 2 * r }') hi=$(awk -v r="$RATIO" 'BEGIN { print 2 * r * 1.08 }') ;;
    esac
    awk -v r="$ratio" -v lo="$lo" -v hi="$hi" 'BEGIN { exit !(r >= lo - 1e-9 && r <= hi + 1e-9) }' &&
        pass "$gc: wire/raw $ratio (expected $lo..$hi), $wire bytes a step, recorded as '$rec'" ||
        fail "$gc: wire_ratio '$ratio', expected $lo..$hi (wire bytes '$wire')"
    case $gc in
        none) case $gctime in [Nn]a[Nn] | "") true ;; *) false ;; esac && pass "none: no compress time" ||
                  fail "none: compress_time '$gctime', expected none" ;;
        *) awk -v t="$gctime" 'BEGIN { exit !(t > 0) }' && pass "$gc: compress time $gctime s a step" ||
               fail "$gc: compress_time '$gctime', expected > 0" ;;
    esac
    case $gc in
        2bit | topk) awk -v n="$resid" 'BEGIN { exit !(n > 0) }' && pass "$gc: residual norm $resid" ||
                         fail "$gc: residual_norm '$resid', expected > 0 (error feedback keeps what was not sent)" ;;
    esac
    h5dump -a /runs/r0000/phase_time/phases "$T/rec-$gc.h5" 2>/dev/null | grep -q '"compress"' &&
        pass "$gc: the phase breakdown has a compress column" || fail "$gc: no compress phase in phase_time"
done

# ---- 2. accuracy after one epoch of Fashion-MNIST
if [ ! -d "$FASHION_DIR" ]; then
    echo "skip: accuracy checks: Fashion-MNIST not installed in $FASHION_DIR (apt-get install dataset-fashion-mnist)"
else
    declare -A acc
    for gc in none fp16 2bit topk; do
        start=$(date +%s)
        # shellcheck disable=SC2046
        run "acc-$gc" "$MX" train --workload lenet --epochs 1 --gpus 2 --compression $gc $(settings $gc) \
            $(recipe_of $gc) --record "$T/acc-$gc.h5" || continue
        acc[$gc]=$(attr "$T/acc-$gc.h5" final_test_acc)
        echo "lenet, 2 devices, compression $gc: test accuracy ${acc[$gc]} ($(($(date +%s) - start)) s)"
    done
    within() { # within GC POINTS
        local a=${acc[$1]:-} b=${acc[none]:-}
        [ -n "$a" ] && [ -n "$b" ] && awk -v a="$a" -v b="$b" -v p="$2" 'BEGIN { d = (a - b) * 100; exit !(d >= -p) }'
    }
    within fp16 0.3 && pass "fp16: accuracy ${acc[fp16]:-} within 0.3 points of none (${acc[none]:-})" ||
        fail "fp16: accuracy ${acc[fp16]:-?} more than 0.3 points below none (${acc[none]:-?})"
    within 2bit $POINTS_2BIT && pass "2bit (threshold $THRESHOLD, $RECIPE_2BIT): accuracy ${acc[2bit]:-} within" \
        "$POINTS_2BIT points of none (${acc[none]:-})" ||
        fail "2bit: accuracy ${acc[2bit]:-?} more than $POINTS_2BIT points below none (${acc[none]:-?})"
    within topk 2 && pass "topk (ratio $RATIO): accuracy ${acc[topk]:-} within 2 points of none" ||
        fail "topk: accuracy ${acc[topk]:-?} more than 2 points below none (${acc[none]:-?})"
fi

# ---- 3. dist_sync: compressed pushes to the servers
if "$MX" info 2>/dev/null | grep -q dist_sync && command -v mpirun >/dev/null 2>&1; then
    MPI=(mpirun --oversubscribe --mca btl self,tcp)
    for gc in none fp16 2bit topk; do
        # shellcheck disable=SC2046
        run "dist-$gc" "${MPI[@]}" -np 4 "$MX" train --workload lenet --dataset synthetic --steps 6 --batch 16 \
            --kvstore dist_sync --compression $gc $(settings $gc) --record "$T/dist-$gc.h5" || continue
        eval "wire_$gc=\$(attr \"$T/dist-$gc.h5\" wire_bytes_per_step)"
        eval "net_$gc=\$(attr \"$T/dist-$gc.h5\" net_bytes_per_step)"
    done
    for gc in fp16 2bit; do # dist_allreduce: fp16 as a half all-reduce, 2bit as an all-gather of payloads
        # shellcheck disable=SC2046
        run "ar-$gc" "${MPI[@]}" -np 2 "$MX" train --workload lenet --dataset synthetic --steps 6 --batch 32 \
            --kvstore dist_allreduce --compression $gc $(settings $gc) --record "$T/ar-$gc.h5" || continue
        r=$(attr "$T/ar-$gc.h5" wire_ratio)
        case $gc in fp16) want=0.5 ;; 2bit) want=0.0625 ;; esac
        awk -v r="$r" -v w="$want" 'BEGIN { exit !(r >= w && r < w * 1.03) }' &&
            pass "dist_allreduce $gc: wire/raw $r" || fail "dist_allreduce $gc: wire_ratio '$r', expected about $want"
    done
    for gc in fp16 2bit topk; do
        eval "w=\${wire_$gc:-} n=\${net_$gc:-}"
        awk -v w="$w" -v b="${wire_none:-}" -v n="$n" -v nb="${net_none:-}" \
            'BEGIN { exit !(w > 0 && b > 0 && w < 0.6 * b && n < nb) }' &&
            pass "dist_sync $gc: pushes $w bytes a step (none: $wire_none), worker 0's traffic $n (none: $net_none)" ||
            fail "dist_sync $gc: wire bytes '$w' against none '${wire_none:-}', net '$n' against '${net_none:-}'"
    done
else
    echo "skip: dist_sync checks: this build has no MPI"
fi

echo "test_compression: $npass passed, $nfail failed"
[ "$nfail" -eq 0 ]
