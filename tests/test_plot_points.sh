#!/usr/bin/env bash
# `mxbench plot` draws every ok run of a sweep in every figure it belongs to: a study of the
# three strategies on 1 and 2 devices, data parallelism with two kvstores and three
# compressors (fp16 and 2bit at their defaults among them) and an fp16 AMP row, then:
#  1. plot exits 0 on the file sweep wrote, and leaves no temporary file;
#  2. each figure's data file holds a point for each ok run it belongs to, found by its
#     device count and value (read from `mxbench report --format csv`): throughput, memory
#     and accuracy every ok run; speedup and efficiency every run with a speedup, and no
#     other; bytes moved every multi-device run; a bar (breakdown), a curve (loss) and a
#     bar of the compression figure per run; a run of more than one device in one series only.
# usage: test_plot_points.sh MXBENCH SOURCE_DIR BUILD_DIR
set -u

MX=${1:?usage: test_plot_points.sh MXBENCH SOURCE_DIR BUILD_DIR}
# shellcheck source=tests/e2e-lib.sh
. "${2:?usage: test_plot_points.sh MXBENCH SOURCE_DIR BUILD_DIR}/tests/e2e-lib.sh" test_plot_points "$MX"
command -v gnuplot >/dev/null 2>&1 || { echo "test_plot_points: skipped: gnuplot not found"; exit 77; }

common=(--workload mlp --dataset synthetic --epochs 1 --batch-mode global --batch 128)
# a sweep exits 1 when a row failed, which this test does not need: the figures are of ok rows
"$MX" sweep --strategies data,model,layer --gpus 1,2 --kvstore local,device --compression none,fp16,2bit \
      "${common[@]}" --out study.h5 >sweep1.out 2>&1
rc=$?
[ $rc -le 1 ] || { fail "sweep exit $rc"; tail -n 15 sweep1.out; exit 1; }
"$MX" sweep --strategies data --gpus 2 --kvstore device --amp fp16 "${common[@]}" --out study.h5 --resume \
      >sweep2.out 2>&1
rc=$?
[ $rc -le 1 ] || { fail "sweep --resume exit $rc"; tail -n 15 sweep2.out; exit 1; }
run report "$MX" report study.h5 --format csv || exit 1
cp "$T/report.out" runs.csv

if run plot "$MX" plot study.h5 --out plots; then pass "plot exits 0"; fi
left=$(find plots -name '.*tmp*' | wc -l)
[ "$left" -eq 0 ] && pass "no temporary figure left" || fail "$left temporary files left in plots/"

# csv FIELD...: the ok runs' fields, tab-separated (the csv's strings are quoted, hold no commas)
csv() {
    awk -F, -v want="$*" '
        NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; n = split(want, w, " "); next }
        { gsub(/"/, "") }
        $col["status"] == "ok" { line = ""; for (k = 1; k <= n; k++) line = line (k > 1 ? "\t" : "") $col[w[k]]; print line }
    ' runs.csv
}
nok=$(csv id | wc -l)
[ "$nok" -ge 10 ] && pass "$nok ok runs" || fail "only $nok ok runs: the study is not what this test needs"

# points FILE XCOL YCOL X Y SCALE: rows of data/FILE (numbers only) whose column XCOL is X and
# column YCOL is Y*SCALE within 1e-4 relative (the csv has 6 significant digits)
points() {
    awk -v xc="$2" -v yc="$3" -v x="$4" -v y="$5" -v s="$6" '
        /^[0-9]/ { v = $yc; want = y * s; d = v - want; if (d < 0) d = -d
                   if ($xc == x && d <= 1e-4 * (want < 0 ? -want : want) + 1e-12) n++ }
        END { print n + 0 }' "plots/data/$1"
}

# every ok run with a value in FIELD must be in FILE: exactly once when it has more than one
# device (one series), at least once on one device (the first point of every series it starts)
check() { # check FIGURE FILE YCOL FIELD SCALE
    local figure=$1 file=$2 ycol=$3 field=$4 scale=$5 missing=0 twice=0 n=0
    while IFS=$'\t' read -r id gpus value; do
        [ -n "$value" ] || continue
        n=$((n + 1))
        local got
        got=$(points "$file" 1 "$ycol" "$gpus" "$value" "$scale")
        if [ "$got" -eq 0 ]; then
            missing=$((missing + 1))
            echo "    $figure: $id ($gpus devices, $field $value) has no point in $file"
        elif [ "$gpus" -gt 1 ] && [ "$got" -gt 1 ]; then
            twice=$((twice + 1))
            echo "    $figure: $id ($gpus devices) has $got points in $file"
        fi
    done < <(csv id gpus "$field")
    if [ $missing -eq 0 ] && [ $twice -eq 0 ] && [ $n -gt 0 ]; then
        pass "$figure: each of the $n ok runs with a $field has its point"
    else
        fail "$figure: $missing of $n runs missing, $twice drawn twice"
    fi
}
check throughput throughput.dat 2 throughput 1
check memory memory.dat 2 mem_peak 1e-6
check speedup scaling.dat 2 speedup 1
check efficiency scaling.dat 3 efficiency 1

# no point without a speedup: rows of more than one device in scaling.dat are the runs with one
want=$(csv gpus speedup | awk -F'\t' '$1 > 1 && $2 != "" { n++ } END { print n + 0 }')
got=$(awk '/^[0-9]/ && $1 > 1 { n++ } END { print n + 0 }' plots/data/scaling.dat)
[ "$got" -eq "$want" ] && pass "scaling.dat: $got multi-device points, one per run with a speedup" \
    || fail "scaling.dat: $got multi-device points, $want runs with a speedup"

# bytes moved: every ok run of more than one device moves some
want=$(csv gpus | awk '$1 > 1 { n++ } END { print n + 0 }')
got=$(awk '/^[0-9]/ && $1 > 1 { n++ } END { print n + 0 }' plots/data/moved.dat)
[ "$got" -eq "$want" ] && pass "moved.dat: $got points, one per multi-device run" \
    || fail "moved.dat: $got multi-device points for $want multi-device runs"

# accuracy: each run's test accuracy at its device count (the study's one global batch puts
# the figure against the device count), a run alone at its point
missing=0
while IFS=$'\t' read -r id gpus acc; do
    [ -n "$acc" ] || continue
    got=$(awk -v x="$gpus" -v a="$acc" '/^[0-9]/ && $1 == x && $5 == 1 { d = $2 - a; if (d < 0) d = -d; if (d < 6e-5) n++ }
                                         END { print n + 0 }' plots/data/accuracy.dat)
    [ "$got" -gt 0 ] || { missing=$((missing + 1)); echo "    accuracy: $id ($gpus devices, $acc) has no point"; }
done < <(csv id gpus test_acc)
[ $missing -eq 0 ] && pass "accuracy: every ok run has its point" || fail "accuracy: $missing runs missing"

# one bar, one curve per ok run
got=$(grep -c '^"' plots/data/breakdown.dat)
[ "$got" -eq "$nok" ] && pass "breakdown: $got bars" || fail "breakdown: $got bars for $nok ok runs"
got=$(grep -c '^"' plots/data/loss.dat)
[ "$got" -eq "$nok" ] && pass "loss: $got curves" || fail "loss: $got curves for $nok ok runs"
# the compression figure: a bar per ok data-parallel run with a kvstore on more than one device
want=$(csv strategy gpus | awk -F'\t' '$1 == "data" && $2 > 1 { n++ } END { print n + 0 }')
got=$(grep -c '^[0-9]* "' plots/data/compression.dat)
[ "$got" -eq "$want" ] && pass "compression: $got bars" || fail "compression: $got bars for $want runs"
for f in throughput speedup efficiency accuracy breakdown loss memory moved compression; do
    [ -s "plots/$f.png" ] || fail "plots/$f.png missing"
done

echo "test_plot_points: $npass passed, $nfail failed"
[ $nfail -eq 0 ]
