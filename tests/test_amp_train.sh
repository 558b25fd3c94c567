#!/usr/bin/env bash
# Mixed precision end to end through `mxbench train` and `sweep`:
#  1. the record of a short run (synthetic data, 2 devices): amp, amp_kernels (what `mxbench
#     info` says this CPU runs bf16 on; emulated for fp16; empty when off), the loss scale (fp16 starts
#     at 2^16, bf16 keeps 1), every step's scale in the loss_scale series (fp16 only),
#     skipped steps counted, saved activations about half of f32's (lenet), oneDNN's version and
#     role as `mxbench info` says it;
#  2. accuracy: lenet on Fashion-MNIST, 2 devices (device kvstore), 3 epochs: fp16 and bf16
#     within 0.5 points of f32;
#  3. refusals: amp with the model strategy or dist_async exits 2 naming the reason, and a
#     sweep records such a row as skipped with it.
# usage: test_amp_train.sh MXBENCH SOURCE_DIR BUILD_DIR
set -u

MX=${1:?usage: test_amp_train.sh MXBENCH SOURCE_DIR BUILD_DIR}
# shellcheck source=tests/e2e-lib.sh
. "${2:?usage: test_amp_train.sh MXBENCH SOURCE_DIR BUILD_DIR}/tests/e2e-lib.sh" test_amp_train "$MX"
FASHION_DIR=/usr/share/datasets/fashion-mnist
EPOCHS=3
POINTS=0.5

awk_ok() { awk "BEGIN { exit !($1) }"; }

# ---- 1. the record
# what this CPU runs bf16 on, as `mxbench info` says: the record must say the same
# the word after "--amp bf16: " is what the record's amp_kernels says (amx_bf16, avx512_bf16, emulated)
bf16_kernels=$("$MX" info | grep -m1 -- '--amp bf16: ' | sed 's/.*--amp bf16: \([a-z0-9_]*\).*/\1/')
for amp in off fp16 bf16; do
    run "rec-$amp" "$MX" train --workload lenet --dataset synthetic --steps 12 --gpus 2 --amp "$amp" \
        --record "$T/rec-$amp.h5" || continue
    eval "act_$amp=\$(attr \"$T/rec-$amp.h5\" mem_act)"
    kern=$(attr "$T/rec-$amp.h5" amp_kernels)
    case $amp in off) want='""' ;; fp16) want='"emulated"' ;; bf16) want="\"$bf16_kernels\"" ;; esac
    [ "$kern" = "$want" ] && pass "$amp: amp_kernels $kern" || fail "$amp: amp_kernels '$kern', expected $want"
    rec=$(attr "$T/rec-$amp.h5" amp) scale=$(attr "$T/rec-$amp.h5" loss_scale) skipped=$(attr "$T/rec-$amp.h5" skipped_steps)
    [ "$rec" = "\"$amp\"" ] && pass "$amp: recorded as $rec" || fail "$amp: amp attribute '$rec'"
    series=$(h5dump -d /runs/r0000/loss_scale "$T/rec-$amp.h5" 2>/dev/null | grep -c 'DATASPACE  SIMPLE { ( 12 )')
    case $amp in
        off) case $scale in [Nn]a[Nn]) pass "off: no loss scale" ;; *) fail "off: loss_scale '$scale'" ;; esac ;;
        fp16) [ "$scale" = 65536 ] && [ "$skipped" = 0 ] && [ "$series" = 1 ] &&
                  pass "fp16: scale $scale, $skipped skipped, a loss_scale series of 12 steps" ||
                  fail "fp16: loss_scale '$scale' (expected 65536), skipped '$skipped' (0), series rows ok: '$series'" ;;
        bf16) [ "$scale" = 1 ] && [ "$skipped" = 0 ] && [ "$series" = 0 ] &&
                  pass "bf16: scale 1, no series" || fail "bf16: loss_scale '$scale', skipped '$skipped', series '$series'" ;;
    esac
done
for amp in fp16 bf16; do
    eval "a=\${act_$amp:-}"
    awk_ok "\"$a\" != \"\" && \"${act_off:-}\" != \"\" && $a / ${act_off:-1} > 0.45 && $a / ${act_off:-1} < 0.56" &&
        pass "$amp: saved activations $a bytes, f32 ${act_off:-?} (lenet: 16-bit outputs, f32 logits)" ||
        fail "$amp: saved activations '$a' against f32 '${act_off:-}', expected about half"
done
# oneDNN's version and role (3x3 convolutions under AMP bf16, or why unused) as `mxbench info` says
dnnl_info=$("$MX" info | sed -n 's/^  oneDNN *\(.*\); see docs.*/\1/p')
dnnl_rec=$(h5dump -a /onednn "$T/rec-bf16.h5" 2>/dev/null | sed -n 's/^ *(0): *//p' | head -1) # the file's
[ -n "$dnnl_info" ] && [ "$dnnl_rec" = "\"$dnnl_info\"" ] && pass "bf16: recorded oneDNN $dnnl_rec" ||
    fail "bf16: record's oneDNN '$dnnl_rec', mxbench info's '$dnnl_info'"
"$MX" report "$T/rec-fp16.h5" >"$T/report.txt" 2>&1 && grep -q "scale" "$T/report.txt" && grep -q "act MB" "$T/report.txt" &&
    pass "report shows the loss scale and activation columns" || fail "report: $(head -5 "$T/report.txt")"

# ---- 2. accuracy after three epochs of Fashion-MNIST
if [ ! -d "$FASHION_DIR" ]; then
    echo "skip: accuracy checks: Fashion-MNIST not installed in $FASHION_DIR (apt-get install dataset-fashion-mnist)"
else
    declare -A acc
    for amp in off fp16 bf16; do
        start=$(date +%s)
        run "acc-$amp" "$MX" train --workload lenet --epochs $EPOCHS --gpus 2 --amp $amp --record "$T/acc-$amp.h5" ||
            continue
        acc[$amp]=$(attr "$T/acc-$amp.h5" final_test_acc)
        echo "lenet, 2 devices, $EPOCHS epochs, amp $amp: test accuracy ${acc[$amp]} ($(($(date +%s) - start)) s," \
            "skipped $(attr "$T/acc-$amp.h5" skipped_steps), final scale $(attr "$T/acc-$amp.h5" loss_scale))"
    done
    for amp in fp16 bf16; do
        a=${acc[$amp]:-} b=${acc[off]:-}
        [ -n "$a" ] && [ -n "$b" ] && awk_ok "($a - $b) * 100 >= -$POINTS && ($a - $b) * 100 <= $POINTS" &&
            pass "$amp: accuracy $a within $POINTS points of f32 ($b)" ||
            fail "$amp: accuracy '${a:-?}' not within $POINTS points of f32 '${b:-?}'"
    done
fi

# ---- 3. refusals
"$MX" train --workload lenet --dataset synthetic --steps 2 --strategy model --gpus 2 --amp fp16 >"$T/r1.out" 2>&1
rc=$?
[ $rc -eq 2 ] && grep -q "strategy model" "$T/r1.out" && pass "amp with model: exit 2, $(grep -m1 amp "$T/r1.out")" ||
    fail "amp with model: exit $rc: $(head -3 "$T/r1.out")"
"$MX" train --workload lenet --dataset synthetic --steps 2 --amp fp32 >"$T/r2.out" 2>&1
rc=$?
[ $rc -eq 2 ] && grep -q "fp32" "$T/r2.out" && pass "amp fp32: exit 2 naming it" || fail "amp fp32: exit $rc: $(head -3 "$T/r2.out")"
run sweep "$MX" sweep --strategies data,model --gpus 2 --amp off,bf16 --workload lenet --dataset synthetic --steps 8 \
    --batch 32 --out "$T/sweep.h5" && {
    n=$("$MX" report "$T/sweep.h5" --format csv 2>/dev/null | grep -c ',"ok",')
    skip=$("$MX" report "$T/sweep.h5" --format csv 2>/dev/null | grep ',"skipped",' | grep -c 'model.*bf16\|bf16.*model')
    [ "$n" = 3 ] && [ "$skip" = 1 ] && pass "sweep: 3 rows ok, model with bf16 skipped" ||
        fail "sweep: $n rows ok (expected 3), $skip model+bf16 rows skipped (expected 1)"
}

echo "test_amp_train: $npass passed, $nfail failed"
[ "$nfail" -eq 0 ]
