#!/usr/bin/env bash
# The GPT workloads through the CLI, end to end: a sweep of gpt-mini over the data, model and
# layer strategies on 1 and 2 devices ends with every row ok, the same held-out loss on
# every row (the strategies train the same weights), plots, and the language model's
# figures in the record (val_loss per epoch, tokens/s = samples/s x context, perplexity =
# e^val loss, MFU in (0, 1], time to a target loss); AMP bf16 (on this CPU's bf16 kernels where it
# has them: the GEMMs and attention's products) reaches f32's held-out loss within 0.02 after an
# epoch (measured 6e-4 on an AMD EPYC); bad token files and targets are refused
# before anything runs (exit 2) with the value named.
# usage: test_gpt_train.sh MXBENCH SOURCE_DIR BUILD_DIR
set -u
. "$(dirname "$0")/e2e-lib.sh" test_gpt_train "${1:?usage: test_gpt_train.sh MXBENCH SOURCE_DIR BUILD_DIR}"

# 12 KB of English written here (no dependency on the fortunes package): 171 windows of 64
# tokens, the last 10% held out
for i in $(seq 1 60); do
    echo "Line $i: the quick brown fox jumps over the lazy dog while the scaling study runs on."
    echo "Every strategy of the sweep must reach the same held-out loss from the same start."
done >text.txt
near() { awk -v a="$1" -v b="$2" -v tol="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a != "" && d <= tol) }'; }

# ---- 1. the sweep: every strategy on 1 and 2 CPU workers, with plots
if run sweep "$MX" sweep --workload gpt-mini --strategies data,model,layer --gpus 1,2 --batch 8 --batch-mode global \
    --epochs 1 --optimizer adamw --lr 0.003 --data text.txt --target-loss 9 --out sweep.h5; then
    pass "sweep of gpt-mini over data, model and layer on 1 and 2 devices"
    "$MX" report sweep.h5 --format csv >report.csv 2>"$T/report.err" || fail "report --format csv"
    ok=$(awk -F, 'NR > 1 && $0 ~ /"ok"/' report.csv | wc -l)
    [ "$ok" -eq 6 ] && pass "6 rows ok" || { fail "$ok of 6 rows ok"; indent report.csv; }
    # every row: its held-out loss, tokens per sample, tokens/s against samples/s, perplexity, MFU
    # (the CSV prints 6 significant digits: ratios agree to 1e-4)
    col() { head -1 report.csv | tr ',' '\n' | grep -n -x "$1" | cut -d: -f1; }
    cv=$(col final_val_loss) ct=$(col tokens_per_s) cs=$(col throughput) cp=$(col perplexity) cm=$(col mfu)
    ck=$(col tokens_per_sample) cl=$(col time_to_loss)
    first=$(awk -F, -v c="$cv" 'NR == 2 { print $c }' report.csv)
    bad=$(awk -F, -v cv="$cv" -v ct="$ct" -v cs="$cs" -v cp="$cp" -v cm="$cm" -v ck="$ck" -v cl="$cl" -v f="$first" '
        NR > 1 {
            d = $cv - f; if (d < 0) d = -d
            r = $ct / ($cs * 64) - 1; if (r < 0) r = -r
            p = $cp / exp($cv) - 1; if (p < 0) p = -p
            if (d > 1e-3 || $ck != 64 || r > 1e-4 || p > 1e-4 || !($cm > 0 && $cm <= 1) || !($cl > 0)) print NR - 1
        }' report.csv)
    [ -z "$bad" ] && pass "every row: the same val loss ($first), tokens/s = samples/s x 64, perplexity, MFU, time to loss" \
        || { fail "rows $bad disagree"; indent report.csv; }
    r0=$(awk -F, 'NR == 2 { gsub(/"/, "", $1); print $1 }' report.csv)
    n=$(h5dump -H -d "/runs/$r0/val_loss" sweep.h5 | sed -n 's/.*DATASPACE  SIMPLE { ( \([0-9]*\) ).*/\1/p')
    [ "$n" = 1 ] && pass "val_loss holds one entry per epoch" || fail "val_loss has '$n' entries"
    "$MX" report sweep.h5 >table.txt 2>&1 && grep -q "tokens/s.*val loss.*ppl.*MFU" table.txt &&
        pass "report's table shows tokens/s, val loss, ppl and MFU" || { fail "report's table"; indent table.txt; }
    if run plot "$MX" plot sweep.h5 --out plots; then
        [ -s plots/throughput.png ] && [ -s plots/speedup.png ] && pass "plots drawn" || fail "plots missing"
    fi
fi

# ---- 2. train: the epoch line and the summary speak of tokens and the held-out loss
mx_expect train 0 "train gpt-mini for an epoch" train --workload gpt-mini --epochs 1 --batch 16 --data text.txt \
    --threads-per-device 1
grep -q "val loss [0-9.]* (perplexity [0-9.]*)  token acc [0-9.]*  [0-9]* tokens/s" "$T/train.out" &&
    grep -q "tokens/s, .*MFU [0-9.]*%" "$T/train.out" && pass "epoch line and summary in tokens" ||
    { fail "epoch line or summary"; indent "$T/train.out"; }

# ---- 2b. AMP bf16 trains as f32 does
for amp in off bf16; do
    mx_expect "amp-$amp" 0 "train gpt-mini for an epoch, --amp $amp" train --workload gpt-mini --epochs 1 --batch 16 \
        --data text.txt --optimizer adamw --lr 0.003 --threads-per-device 1 --amp "$amp"
done
l32=$(grep -o "val loss [0-9.]*" "$T/amp-off.out" | tail -1 | cut -d' ' -f3)
l16=$(grep -o "val loss [0-9.]*" "$T/amp-bf16.out" | tail -1 | cut -d' ' -f3)
near "$l16" "$l32" 0.02 && pass "bf16's held-out loss $l16 within 0.02 of f32's $l32" ||
    fail "bf16's held-out loss '$l16' against f32's '$l32' (tolerance 0.02)"

# ---- 3. refused before anything runs, with the value named
printf 'ab' >short.txt
mx_expect short 2 "a text shorter than one window" train --workload gpt-mini --steps 1 --data short.txt &&
    { grep -q "short.txt" "$T/short.err" && pass "  names the file" || { fail "  names the file"; indent "$T/short.err"; }; }
printf 'abc' >odd.bin
mx_expect odd 2 "a headerless .bin of odd length" sweep --workload gpt-mini --gpus 1 --steps 1 --data odd.bin \
    --out odd.h5 && { grep -q "odd.bin" "$T/odd.err" && pass "  names the file" || fail "  names the file"; }
mx_expect target 2 "--target-loss 0" train --workload gpt-mini --steps 1 --target-loss 0 --data text.txt &&
    { grep -q "target-loss 0" "$T/target.err" && pass "  names the value" || fail "  names the value"; }
mx_expect mixed 2 "--data with image and language models in one sweep" sweep --workload lenet,gpt-mini --gpus 1 \
    --steps 1 --data text.txt --out mixed.h5

echo "test_gpt_train: $npass passed, $nfail failed"
[ "$nfail" -eq 0 ]
