#!/usr/bin/env bash
# `mxbench report` leads with the answer (results/answer.h), checked against the figures the
# file records:
# (a) a sweep of data and model on 1 and 2 devices with one micro-batch (a pipeline bubble of
#     about half the step by construction): the answer's winner on 2 devices is the fastest
#     ranked row of the csv, the model row's bubble share is the percentage the file records,
#     each strategy's efficiency is the file's; text and md print it first under "Answer";
# (b) a dist_allreduce job of 2 workers whose rank 1 is slowed (mxbench_hooked,
#     MXBENCH_TEST_SLOW_RANK): the answer names worker rank 1 (skipped without mpirun).
# A row on a busy host is left out of the ranking: such a sweep is run again (3 tries), then
# the check is skipped (77) rather than judged on a host that other programs kept busy.
# usage: test_answer.sh MXBENCH SOURCE_DIR BUILD_DIR
set -u
HOOKED=$(cd "${3:?usage: test_answer.sh MXBENCH SOURCE_DIR BUILD_DIR}" && pwd)/mxbench_hooked
. "${2:?usage: test_answer.sh MXBENCH SOURCE_DIR BUILD_DIR}/tests/e2e-lib.sh" test_answer "$1"

# col CSV NAME: one column of a report csv, quotes removed (the reason, last, is not read)
col() {
    awk -F, -v name="$2" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == name) c = i; next }
                          c { v = $c; gsub(/"/, "", v); print v }' "$1"
}
# ranked CSV: "id throughput strategy gpus bubble efficiency kvstore" of the rows the answer
# ranks (ok, not oversubscribed, not noisy); an empty figure is "-"
ranked() {
    paste -d'|' <(col "$1" id) <(col "$1" throughput) <(col "$1" strategy) <(col "$1" gpus) <(col "$1" bubble) \
        <(col "$1" efficiency) <(col "$1" kvstore) <(col "$1" status) <(col "$1" noisy) <(col "$1" oversubscribed) |
        awk -F'|' '{ for (i = 1; i <= 10; i++) if ($i == "") $i = "-" }
                   $8 == "ok" && $9 == 0 && $10 == 0 { print $1, $2, $3, $4, $5, $6, $7 }'
}
# para JSON WORDS: the answer's paragraph holding WORDS (one line of the json), unescaped enough
para() { grep -F "$2" "$1" | grep -v '"reason"' | head -1; }

# ---- (a)
section() { echo "---- $*"; }
section "(a) data and model on 1 and 2 devices, one micro-batch"
quiet=0
for try in 1 2 3; do
    run sweep "$MX" sweep --strategies data,model --gpus 1,2 --micro-batches 1 --workload mlp --dataset synthetic \
        --steps 30 --batch 32 --out "$T/a.h5" --force || break
    run csv "$MX" report "$T/a.h5" --format csv || break
    ranked "$T/csv.out" >"$T/ranked"
    if [ "$(awk '$4 == 2' "$T/ranked" | wc -l)" -eq 2 ]; then
        quiet=1
        break
    fi
    echo "note: try $try: a 2-device row ran on a busy host or failed: again"
done
if [ $quiet = 1 ]; then
    run json "$MX" report "$T/a.h5" --format json
    run text "$MX" report "$T/a.h5"
    run md "$MX" report "$T/a.h5" --format md
    want=$(awk '$4 == 2' "$T/ranked" | sort -k2,2gr | head -1 | cut -d' ' -f1)
    grep -q "\"gpus\": 2, \"winner\": \"$want\"" "$T/json.out" &&
        pass "json: the winner on 2 devices is $want, the fastest ranked row of the csv" ||
        fail "json: expected winner $want on 2 devices: $(grep '"gpus": 2' "$T/json.out")"
    p2=$(para "$T/json.out" "On 2 devices (mlp, cpu)")
    case $p2 in *"($want) is fastest"*) pass "the paragraph names $want the fastest" ;;
        *) fail "paragraph on 2 devices: expected '($want) is fastest': $p2" ;; esac
    model=$(awk '$3 == "model" && $4 == 2' "$T/ranked")
    read -r mid _ _ _ bubble meff <<<"$model"
    pct=$(awk -v b="$bubble" 'BEGIN { printf "%.0f", b * 100 }')
    if [ -n "$mid" ] && echo "$p2" | grep -Eq "\($mid\).* $pct% (of its step )?to (the )?pipeline bubble at 1 micro-batch"; then
        pass "the model row $mid loses $pct% of its step to the bubble, as the file's bubble $bubble says"
    else
        fail "expected the model row '$mid' with $pct% to the pipeline bubble (bubble $bubble): $p2"
    fi
    effs=$(awk '$4 == 2 && $6 != "-" { printf "%s %.2f\n", $3 == "data" ? "data/" $7 : $3, $6 }' "$T/ranked" | sort)
    seen=$(echo "$p2" | grep -oE 'Efficiency against one device:( (data/[a-z_]+|model|layer) [0-9]+\.[0-9]{2},?)+' | grep -oE '(data/[a-z_]+|model|layer) [0-9]+\.[0-9]{2}' | sort)
    [ -n "$effs" ] && [ "$effs" = "$seen" ] && pass "efficiencies as the file's: $(echo $seen)" ||
        fail "efficiencies: expected '$(echo $effs)', saw '$(echo $seen)' in: $p2"
    [ "$(head -1 "$T/text.out")" = Answer ] && tr '\n' ' ' <"$T/text.out" | grep -q "($want) is fastest" &&
        pass "text: the answer first, under 'Answer'" || fail "text: $(head -5 "$T/text.out")"
    [ "$(head -1 "$T/md.out")" = "### Answer" ] && grep -q "($want)\*\* is fastest" "$T/md.out" &&
        pass "md: the answer first, the winner in bold" || fail "md: $(head -5 "$T/md.out")"
    long=$(awk -v f="$T/a.h5:" 'index($0, f) == 1 { exit } length > 95' "$T/text.out")
    [ -z "$long" ] && pass "text: the answer wrapped at 95 columns" || fail "text: lines over 95 columns: $long"
else
    echo "skip (a): every try had a 2-device row on a busy host (or a failure above)"
fi

# ---- (b)
section "(b) dist_allreduce, rank 1 slowed"
dist=skip
if ! command -v mpirun >/dev/null 2>&1; then
    echo "skip (b): mpirun not found"
elif [ ! -x "$HOOKED" ]; then
    fail "$HOOKED is not built (tests/CMakeLists.txt: mxbench_hooked)"
elif "$MX" sweep --kvstore dist_allreduce --gpus 2 --workload mlp --dataset synthetic --steps 10 --dry-run 2>&1 |
    grep -q "needs MPI"; then
    echo "skip (b): this build has no MPI"
else
    for try in 1 2 3; do
        MXBENCH_TEST_SLOW_RANK=1 run dist "$HOOKED" sweep --kvstore dist_allreduce --gpus 2 --workload mlp \
            --dataset synthetic --steps 30 --batch 32 --out "$T/b.h5" --force || break
        run bjson "$MX" report "$T/b.h5" --format json || break
        if grep -q '"gpus": 2, "winner": "r0000"' "$T/bjson.out"; then
            dist=ran
            break
        fi
        echo "note: try $try: the job was left out of the ranking: $(grep -o '"why": "[^"]*"' "$T/bjson.out")"
    done
    [ $dist = ran ] || echo "skip (b): every try ran on a busy host (left out of the ranking) or failed"
    if [ $dist = ran ]; then
        pb=$(para "$T/bjson.out" "On 2 devices (mlp, cpu)")
        case $pb in *"to stragglers (worker rank 1 works"*) pass "the answer names worker rank 1 the straggler" ;;
            *) fail "dist: expected the stragglers of worker rank 1: $pb"; indent "$T/bjson.out" | head -40 ;; esac
    fi
fi
echo "test_answer: $npass passed, $nfail failed"
[ $nfail -gt 0 ] && exit 1
[ $quiet = 0 ] && exit 77
exit 0
