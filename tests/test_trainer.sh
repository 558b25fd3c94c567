#!/usr/bin/env bash
# What `mxbench train` tells its user during and after training: Speedometer lines
# (--log-interval), progress against the --steps asked for, the aggregate throughput beside
# the median, and divergence (NaN and growing losses) reported, recorded and exit 1.
# usage: test_trainer.sh MXBENCH SOURCE_DIR BUILD_DIR
set -u

MX=${1:?usage: test_trainer.sh MXBENCH SOURCE_DIR BUILD_DIR}
case $MX in /*) ;; *) MX=$PWD/$MX ;; esac
[ -x "$MX" ] || { echo "test_trainer: mxbench binary '$MX' is missing or not executable"; exit 1; }
T=$(mktemp -d "${TMPDIR:-/tmp}/mxbench-test_trainer.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
command -v h5dump >/dev/null 2>&1 || { echo "test_trainer: h5dump not found (apt-get install hdf5-tools)"; exit 1; }

FASHION_DIR=/usr/share/datasets/fashion-mnist
npass=0 nfail=0
pass() { npass=$((npass + 1)); echo "ok: $*"; }
fail() { nfail=$((nfail + 1)); echo "FAIL: $*"; }
show() { sed -e 's/^/    stdout: /' "$T/out" | tail -8; sed -e 's/^/    stderr: /' "$T/err" | tail -8; }

# train ARGS...: fast, deterministic runs (one thread); output in $T/out, $T/err, status in $rc
train() {
    "$MX" train --threads-per-device 1 "$@" >"$T/out" 2>"$T/err"
    rc=$?
}
# attr FILE NAME: a scalar attribute of run r0000 as text (strings without quotes)
attr() { h5dump -m '%.17g' -a "/runs/r0000/$2" "$1" 2>/dev/null | sed -n 's/^ *(0): *//p' | tr -d '"'; }
# series_sum FILE NAME / series_len FILE NAME: of a dataset of run r0000
series_sum() {
    h5dump -m '%.17g' -d "/runs/r0000/$2" "$1" | sed -n '/DATA {/,/}/p' | sed 's/([0-9,]*)://g; s/DATA {//; s/}//' |
        tr ', ' '\n\n' | awk 'NF { s += $1 } END { printf "%.17g\n", s }'
}
series_len() { h5dump -H -d "/runs/r0000/$2" "$1" | sed -n 's/.*DATASPACE  SIMPLE { ( \([0-9]*\) ).*/\1/p'; }
in01() { awk -v x="$1" 'BEGIN { exit !(x != "" && x >= 0 && x <= 1) }'; }

# ---- 1. --log-interval: Speedometer lines with the right batch ranges and an accuracy in [0,1]
train --workload mlp --dataset synthetic --steps 70 --batch 32 --log-interval 20
ranges=$(sed -n 's/^Epoch\[0\] Batch \[\([0-9]*-[0-9]*\)\]  Speed: [0-9.]* samples\/sec  accuracy=\([0-9.]*\)  loss=[0-9.]*$/\1/p' "$T/out" | tr '\n' ' ')
accs=$(sed -n 's/^Epoch\[0\] Batch .*accuracy=\([0-9.]*\) .*/\1/p' "$T/out")
tacc=$(sed -n 's/^Epoch\[0\] Train-accuracy=\([0-9.]*\)$/\1/p' "$T/out")
bad_acc=""
for a in $accs $tacc; do in01 "$a" || bad_acc+=" $a"; done
if [ $rc -eq 0 ] && [ "$ranges" = "0-20 20-40 40-60 " ] && [ -z "$bad_acc" ] && [ -n "$tacc" ]; then
    pass "--log-interval 20 over 70 steps: batches [0-20] [20-40] [40-60], accuracies in [0,1], Train-accuracy $tacc"
else
    fail "--log-interval 20 over 70 steps: expected exit 0, ranges '0-20 20-40 40-60 ', accuracies in [0,1] and a" \
        "Train-accuracy line; saw exit $rc, ranges '$ranges', bad accuracies '$bad_acc', Train-accuracy '$tacc'"
    show
fi

# per epoch: the batch count restarts, epochs count from 0 (as MXNet), each ends with Train-accuracy
train --workload mlp --dataset synthetic --epochs 2 --batch 1000 --log-interval 2
got=$(grep -E '^Epoch\[[0-9]+\] (Batch \[[0-9]+-[0-9]+\]|Train-accuracy)|^epoch [0-9]/2 ' "$T/out" |
    sed 's/\(Batch \[[0-9-]*\]\).*/\1/; s/\(Train-accuracy\)=.*/\1/; s/^\(epoch [0-9]\/2\) .*/\1/' | tr '\n' ';')
want="Epoch[0] Batch [0-2];Epoch[0] Batch [2-4];Epoch[0] Train-accuracy;epoch 1/2;Epoch[1] Batch [0-2];Epoch[1] Batch [2-4];Epoch[1] Train-accuracy;epoch 2/2;"
if [ $rc -eq 0 ] && [ "$got" = "$want" ]; then
    pass "--log-interval 2 over 2 epochs of 5 batches: two intervals and a Train-accuracy line per epoch"
else
    fail "--log-interval 2 over 2 epochs: expected the lines '$want', saw (exit $rc) '$got'"
    show
fi

train --workload mlp --dataset synthetic --steps 30 --batch 32
if [ $rc -eq 0 ] && ! grep -q '^Epoch\[' "$T/out"; then
    pass "without --log-interval no Speedometer lines (today's output stays)"
else
    fail "without --log-interval: expected exit 0 and no 'Epoch[' line, saw exit $rc"
    show
fi

# The accuracy counts real hits: on Fashion-MNIST mlp learns, so the last interval is well above
# chance (0.1); a miscounted accuracy (0, or a sum instead of a fraction) fails here. It is also
# a normal run at the default lr: it must not be flagged as diverged.
if [ -d "$FASHION_DIR" ]; then
    train --workload mlp --epochs 1 --batch 128 --log-interval 100 --record "$T/fm.h5"
    last=$(sed -n 's/^Epoch\[0\] Batch \[300-400\] .*accuracy=\([0-9.]*\) .*/\1/p' "$T/out")
    st=$(attr "$T/fm.h5" status)
    if [ $rc -eq 0 ] && in01 "$last" && awk -v a="$last" 'BEGIN { exit !(a >= 0.7) }' && [ "$st" = ok ] &&
        ! grep -q diverged "$T/err"; then
        pass "mlp on Fashion-MNIST: training accuracy of batches 300-400 is $last (>= 0.7); status ok, not diverged"
    else
        fail "mlp on Fashion-MNIST, 1 epoch: expected exit 0, batches [300-400] at accuracy >= 0.7 and status ok;" \
            "saw exit $rc, accuracy '$last', status '$st'"
        show
    fi
else
    echo "skip: Fashion-MNIST accuracy check ($FASHION_DIR missing; apt-get install dataset-fashion-mnist)"
fi

# ---- 2. progress against the --steps asked for, not the synthetic epoch (128 batches of 32)
MXBENCH_PROGRESS_SECONDS=0 train --workload mlp --dataset synthetic --steps 18 --batch 32
n=$(grep -c '^  step [0-9]*/18  loss ' "$T/out")
if [ $rc -eq 0 ] && [ "$n" -eq 18 ] && grep -q '^  step 18/18 ' "$T/out" && ! grep -q '/128' "$T/out"; then
    pass "--steps 18: progress reads step k/18, up to 18/18"
else
    fail "--steps 18 with a progress line per step: expected 18 lines 'step k/18' and none '/128'; saw exit $rc, $n lines"
    show
fi

# ---- 3. aggregate throughput: samples of the timed steps over their summed time. 4096
# synthetic samples at batch 100 make 40 full batches and one of 96; 3 warmup steps of 100 are
# left out, in each of 2 repeats: 2 x (4096 - 300) = 7592 samples in 2 x 38 steps.
train --workload mlp --dataset synthetic --epochs 1 --batch 100 --warmup-steps 3 --repeat 2 --record "$T/agg.h5"
agg=$(attr "$T/agg.h5" throughput_agg)
med=$(attr "$T/agg.h5" throughput)
nst=$(series_len "$T/agg.h5" step_time)
sum=$(series_sum "$T/agg.h5" step_time)
printed=$(sed -n 's/.* samples\/s median ([^)]*), \([0-9.]*\) aggregate.*/\1/p' "$T/out")
if [ $rc -eq 0 ] && [ "$nst" = 76 ] &&
    awk -v a="$agg" -v s="$sum" 'BEGIN { d = a * s / 7592 - 1; exit !(a > 0 && d < 1e-9 && d > -1e-9) }' &&
    awk -v a="$agg" -v p="$printed" 'BEGIN { d = a - p; exit !(p != "" && d < 0.051 && d > -0.051) }'; then
    pass "throughput_agg $agg x summed step time $sum = 7592 timed samples; printed beside the median ($med)"
else
    fail "aggregate: expected 76 timed steps and throughput_agg x sum(step_time) = 7592 samples, printed in the" \
        "summary; saw exit $rc, $nst steps, throughput_agg '$agg', sum '$sum', printed '$printed'"
    show
fi

# ---- 4. divergence
# (a) a non-finite loss stops the run at that step: exit 1, message, record with status diverged
train --workload mlp --dataset synthetic --steps 20 --batch 32 --lr 1e6 --record "$T/nan.h5"
st=$(attr "$T/nan.h5" status)
reason=$(attr "$T/nan.h5" reason)
nl=$(series_len "$T/nan.h5" loss)
json=$("$MX" report "$T/nan.h5" --format json 2>&1)
if [ $rc -eq 1 ] && grep -q 'training diverged: .*not finite' "$T/err" && [ "$st" = diverged ] &&
    [[ $reason == *"at step $nl:"*"not finite"* ]] && [ "$nl" -ge 1 ] && [ "$nl" -lt 20 ] &&
    [[ $json == *'"status": "diverged"'* ]]; then
    pass "--lr 1e6: exit 1, 'training diverged' on stderr, recorded diverged after $nl of 20 steps ($reason)"
else
    fail "--lr 1e6: expected exit 1, 'training diverged ... not finite' on stderr, and a record with status" \
        "diverged that stops at the step its reason names; saw exit $rc, status '$st', $nl losses, reason '$reason'"
    show
    printf '%s\n' "$json" | tail -3
fi

# (b) a loss that grows far beyond its start (mlp at lr 2 reaches losses of 1e3 within 5 steps)
# is flagged when the rule first fires, the run goes on to the end, and is recorded diverged
train --workload mlp --dataset synthetic --steps 30 --batch 32 --lr 2 --record "$T/grow.h5"
st=$(attr "$T/grow.h5" status)
nl=$(series_len "$T/grow.h5" loss)
if [ $rc -eq 1 ] && grep -q 'warning: training diverged: .*mean loss of the last 5 steps.*goes on' "$T/err" &&
    [ "$st" = diverged ] && [ "$nl" = 30 ] && grep -q 'DIVERGED' "$T/out"; then
    pass "--lr 2: the growth rule warns, the run finishes its 30 steps, exit 1, recorded diverged"
else
    fail "--lr 2: expected a growth warning on stderr, 30 recorded losses, status diverged and exit 1; saw exit $rc," \
        "status '$st', $nl losses"
    show
fi

# (c) normal training at the default lr is never flagged: mlp on synthetic data has the
# noisiest start measured (its 5-step mean reaches 1.17 x the reference), lenet for contrast
for wl in mlp lenet; do
    train --workload "$wl" --dataset synthetic --steps 128 --batch 32 --record "$T/$wl.h5"
    st=$(attr "$T/$wl.h5" status)
    if [ $rc -eq 0 ] && [ "$st" = ok ] && ! grep -q diverged "$T/err"; then
        pass "$wl, 128 steps at the default lr: status ok, no divergence reported"
    else
        fail "$wl, 128 steps at the default lr: expected exit 0 and status ok, saw exit $rc, status '$st'"
        show
    fi
done

# (d) synthetic data has random labels: a loss that wanders up (resnet18 at the default lr
# reaches 1.7 x ln(10) by step 10) is a note, the speed run stays ok and exits 0
train --workload resnet18 --dataset synthetic --steps 10 --batch 32 --record "$T/r18.h5"
st=$(attr "$T/r18.h5" status)
if [ $rc -eq 0 ] && [ "$st" = ok ] && ! grep -q 'DIVERGED' "$T/out"; then
    pass "resnet18 on synthetic data, 10 steps at the default lr: exit 0, status ok$(grep -q 'note: the loss rose' "$T/err" && echo ' (the rising loss noted)')"
else
    fail "resnet18 on synthetic data at the default lr: expected exit 0 and status ok, saw exit $rc, status '$st'"
    show
fi

# (e) the hint after a divergence points to what works: 2bit under momentum to the recipe
# without momentum (test_compression checks that it trains)
train --workload lenet --gpus 2 --kvstore device --compression 2bit --steps 60 --batch 128
if [ $rc -eq 1 ] && grep -q 'try --lr 0.5 --momentum 0' "$T/err"; then
    pass "2bit with momentum diverges and the hint names --lr 0.5 --momentum 0"
else
    fail "2bit with momentum: expected exit 1 and a hint naming --lr 0.5 --momentum 0, saw exit $rc"
    show
fi

echo "test_trainer: $npass passed, $nfail failed"
[ $nfail -eq 0 ] || exit 1
exit 0
